/**
 * @file progression.cpp
 * @brief ISO/IEC 15444-1 B.12.1 (the five progression orders) and B.12.2 /
 * A.6.6 (progression order changes).
 *
 * The position-driven orders (B.12.1.3-5) loop over every reference-grid
 * point (x, y) of the tile and emit a precinct of (component i, resolution r)
 * at the points where
 *   y is divisible by YRsiz(i) * 2^(PPy(r,i) + NL(i) - r), or y = ty0 and
 *   try0 * 2^(NL(i) - r) is not divisible by 2^(PPy(r,i) + NL(i) - r)
 * (the same for x). Only those points matter, so instead of stepping one
 * sample at a time we visit, in increasing order, the union of the candidate
 * points of the (component, resolution) pairs in the loop: ty0 and the
 * multiples of each pair's divisor inside the tile. That is exact for any
 * subsampling; stepping by the smallest divisor alone (what OpenJPEG does) is
 * the same whenever every divisor is a multiple of the smallest one.
 */
#include "tier2/progression.h"

#include <algorithm>

#include "common/status.h"

namespace j2kc {

PrecinctTable::PrecinctTable(const TileLayout &layout)
{
    component_base_.reserve(layout.components.size());
    for (const TileComponent &tc : layout.components) {
        component_base_.push_back(static_cast<uint32_t>(base_.size()));
        for (const Resolution &res : tc.resolutions) {
            base_.push_back(total_);
            total_ += res.num_precincts();
        }
    }
}

uint64_t packet_count(const TileLayout &layout, uint16_t layers)
{
    uint64_t precincts = 0;
    for (const TileComponent &tc : layout.components)
        for (const Resolution &res : tc.resolutions) precincts += res.num_precincts();
    return precincts * layers;
}

namespace {

/** One run of the packet loops: a POC entry, or the whole tile in the COD order. */
struct Run {
    uint8_t progression;
    uint16_t layer_end;
    uint8_t res_start, res_end;
    uint16_t comp_start, comp_end;
};

class Walker {
public:
    Walker(const TileLayout &layout, const std::function<bool(const PacketId &)> &visit)
        : layout_(layout), table_(layout), next_layer_(table_.size(), 0), visit_(visit)
    {}

    /** Runs one entry; false once the visitor asked to stop. */
    bool run(const Run &run)
    {
        switch (run.progression) {
        case kLRCP:
            for (uint16_t l = 0; l < run.layer_end; ++l)
                for (uint8_t r = run.res_start; r < run.res_end; ++r)
                    for (uint16_t c = run.comp_start; c < run.comp_end; ++c)
                        if (!all_precincts(l, r, c)) return false;
            return true;
        case kRLCP:
            for (uint8_t r = run.res_start; r < run.res_end; ++r)
                for (uint16_t l = 0; l < run.layer_end; ++l)
                    for (uint16_t c = run.comp_start; c < run.comp_end; ++c)
                        if (!all_precincts(l, r, c)) return false;
            return true;
        case kRPCL:
            for (uint8_t r = run.res_start; r < run.res_end; ++r) {
                positions(run.comp_start, run.comp_end, r, r + 1);
                for (uint64_t y : ys_)
                    for (uint64_t x : xs_)
                        for (uint16_t c = run.comp_start; c < run.comp_end; ++c)
                            if (!at_position(run.layer_end, r, c, x, y)) return false;
            }
            return true;
        case kPCRL:
            positions(run.comp_start, run.comp_end, run.res_start, run.res_end);
            for (uint64_t y : ys_)
                for (uint64_t x : xs_)
                    for (uint16_t c = run.comp_start; c < run.comp_end; ++c)
                        for (uint8_t r = run.res_start; r < run.res_end; ++r)
                            if (!at_position(run.layer_end, r, c, x, y)) return false;
            return true;
        case kCPRL:
            for (uint16_t c = run.comp_start; c < run.comp_end; ++c) {
                positions(c, c + 1, run.res_start, run.res_end);
                for (uint64_t y : ys_)
                    for (uint64_t x : xs_)
                        for (uint8_t r = run.res_start; r < run.res_end; ++r)
                            if (!at_position(run.layer_end, r, c, x, y)) return false;
            }
            return true;
        default: J2KC_CHECK_DATA(false, "progression order %u does not exist", run.progression);
        }
        return false;
    }

    uint64_t visited() const { return visited_; }

private:
    bool emit(uint16_t l, uint8_t r, uint16_t c, uint32_t p)
    {
        uint16_t &next = next_layer_[table_.index(c, r, p)];
        // Each run visits a precinct's layers upwards from 0, so what was
        // emitted for it is always the prefix [0, next).
        if (l < next) return true;
        next = static_cast<uint16_t>(l + 1);
        ++visited_;
        return visit_(PacketId{l, r, c, p});
    }

    bool all_precincts(uint16_t l, uint8_t r, uint16_t c)
    {
        const TileComponent &tc = layout_.components[c];
        if (r > tc.levels) return true;
        const uint32_t n = tc.resolutions[r].num_precincts();
        for (uint32_t p = 0; p < n; ++p)
            if (!emit(l, r, c, p)) return false;
        return true;
    }

    /** The candidate x and y points of components [c0, c1) and resolutions [r0, r1). */
    void positions(uint16_t c0, uint16_t c1, uint8_t r0, uint8_t r1)
    {
        xs_.clear();
        ys_.clear();
        const Rect &t = layout_.rect;
        if (t.empty()) return;
        xs_.push_back(t.x0);
        ys_.push_back(t.y0);
        for (uint16_t c = c0; c < c1; ++c) {
            const TileComponent &tc = layout_.components[c];
            for (uint32_t r = r0; r < r1 && r <= tc.levels; ++r) {
                const Resolution &res = tc.resolutions[r];
                if (res.num_precincts() == 0) continue;
                const uint32_t shift = tc.levels - r;
                add_multiples(xs_, t.x0, t.x1, (uint64_t{tc.dx} << shift) << res.precinct_width_log2);
                add_multiples(ys_, t.y0, t.y1, (uint64_t{tc.dy} << shift) << res.precinct_height_log2);
            }
        }
        std::sort(xs_.begin(), xs_.end());
        xs_.erase(std::unique(xs_.begin(), xs_.end()), xs_.end());
        std::sort(ys_.begin(), ys_.end());
        ys_.erase(std::unique(ys_.begin(), ys_.end()), ys_.end());
    }

    static void add_multiples(std::vector<uint64_t> &v, uint64_t lo, uint64_t hi, uint64_t d)
    {
        for (uint64_t m = (lo + d - 1) / d * d; m < hi; m += d) v.push_back(m);
    }

    /** The packets of (r, c) whose precinct starts at reference point (x, y), if any. */
    bool at_position(uint16_t layer_end, uint8_t r, uint16_t c, uint64_t x, uint64_t y)
    {
        const TileComponent &tc = layout_.components[c];
        if (r > tc.levels) return true;
        const Resolution &res = tc.resolutions[r];
        if (res.num_precincts() == 0) return true;
        const uint32_t shift = tc.levels - r;
        const uint64_t sx = uint64_t{tc.dx} << shift, sy = uint64_t{tc.dy} << shift;
        const uint32_t ppx = res.precinct_width_log2, ppy = res.precinct_height_log2;
        const uint64_t px_mask = (uint64_t{1} << ppx) - 1, py_mask = (uint64_t{1} << ppy) - 1;
        const bool y_ok = y % (sy << ppy) == 0 || (y == layout_.rect.y0 && (res.rect.y0 & py_mask) != 0);
        if (!y_ok) return true;
        const bool x_ok = x % (sx << ppx) == 0 || (x == layout_.rect.x0 && (res.rect.x0 & px_mask) != 0);
        if (!x_ok) return true;
        // The precinct holding resolution sample (ceil(x / sx), ceil(y / sy)).
        const uint64_t col = ((x + sx - 1) / sx >> ppx) - res.precinct_x_start;
        const uint64_t row = ((y + sy - 1) / sy >> ppy) - res.precinct_y_start;
        if (col >= res.precincts_x || row >= res.precincts_y) return true;  // cannot happen inside the tile
        const uint32_t p = static_cast<uint32_t>(row * res.precincts_x + col);
        for (uint16_t l = 0; l < layer_end; ++l)
            if (!emit(l, r, c, p)) return false;
        return true;
    }

    const TileLayout &layout_;
    PrecinctTable table_;
    std::vector<uint16_t> next_layer_;
    const std::function<bool(const PacketId &)> &visit_;
    std::vector<uint64_t> xs_, ys_;
    uint64_t visited_ = 0;
};

}  // namespace

uint64_t for_each_packet(const TileLayout &layout, uint16_t layers, uint8_t progression,
                         const std::vector<ProgressionChange> &changes,
                         const std::function<bool(const PacketId &)> &visit)
{
    const uint16_t num_components = static_cast<uint16_t>(layout.components.size());
    uint8_t max_res = 0;
    for (const TileComponent &tc : layout.components)
        max_res = std::max<uint8_t>(max_res, static_cast<uint8_t>(tc.levels + 1));

    Walker walker(layout, visit);
    if (changes.empty()) {
        walker.run(Run{progression, layers, 0, max_res, 0, num_components});
        return walker.visited();
    }
    for (const ProgressionChange &poc : changes) {
        Run run;
        run.progression = poc.progression;
        run.layer_end = std::min(poc.layer_end, layers);
        run.res_start = poc.resolution_start;
        run.res_end = std::min(poc.resolution_end, max_res);
        run.comp_start = poc.component_start;
        run.comp_end = std::min(poc.component_end, num_components);
        if (run.progression > kCPRL) J2KC_CHECK_DATA(false, "POC progression order %u does not exist", run.progression);
        if (run.res_start >= run.res_end || run.comp_start >= run.comp_end || run.layer_end == 0) continue;
        if (!walker.run(run)) break;
    }
    return walker.visited();
}

std::vector<PacketId> packet_order(const TileLayout &layout, uint16_t layers, uint8_t progression,
                                   const std::vector<ProgressionChange> &changes)
{
    std::vector<PacketId> order;
    for_each_packet(layout, layers, progression, changes, [&](const PacketId &id) {
        order.push_back(id);
        return true;
    });
    return order;
}

}  // namespace j2kc
