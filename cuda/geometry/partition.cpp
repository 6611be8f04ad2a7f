/**
 * @file partition.cpp
 * @brief ISO/IEC 15444-1 Annex B: tile, tile-component, resolution, sub-band,
 * precinct and code-block rectangles (equations B-7 to B-20).
 */
#include "geometry/partition.h"

#include <algorithm>

#include "common/int_math.h"
#include "common/status.h"

namespace j2kc {
namespace {

/** ceil(v / 2^s) for a possibly negative v (B-15 subtracts before dividing). */
int64_t ceil_shift(int64_t v, uint32_t s)
{
    const int64_t d = int64_t{1} << s;
    return v >= 0 ? (v + d - 1) / d : -((-v) / d);
}

Rect resolution_rect(const Rect &tc, uint32_t levels_above)
{
    return {ceil_div_pow2(tc.x0, levels_above), ceil_div_pow2(tc.y0, levels_above), ceil_div_pow2(tc.x1, levels_above),
            ceil_div_pow2(tc.y1, levels_above)};
}

/** Number of cells of a 2^s grid anchored at 0 that [a, b) touches. */
uint32_t grid_cells(uint32_t a, uint32_t b, uint32_t s)
{
    if (b <= a) return 0;
    return ceil_div_pow2(b, s) - floor_div_pow2(a, s);
}

Rect intersect(const Rect &a, const Rect &b)
{
    Rect r{std::max(a.x0, b.x0), std::max(a.y0, b.y0), std::min(a.x1, b.x1), std::min(a.y1, b.y1)};
    if (r.x1 < r.x0) r.x1 = r.x0;
    if (r.y1 < r.y0) r.y1 = r.y0;
    return r;
}

/** Cell (i, j) of a 2^sx x 2^sy grid anchored at 0, in 64-bit to survive s = 31. */
Rect grid_cell(uint32_t i, uint32_t j, uint32_t sx, uint32_t sy)
{
    auto clamp32 = [](uint64_t v) { return static_cast<uint32_t>(std::min<uint64_t>(v, UINT32_MAX)); };
    return {clamp32(uint64_t{i} << sx), clamp32(uint64_t{j} << sy), clamp32(uint64_t{i + 1} << sx),
            clamp32(uint64_t{j + 1} << sy)};
}

void check_coding(const ComponentCoding &c, uint16_t component)
{
    J2KC_CHECK_DATA(c.levels <= kMaxLevels, "component %u: %u decomposition levels (max 32)", component, c.levels);
    J2KC_CHECK_DATA(c.cblk_width_log2 >= 2 && c.cblk_height_log2 >= 2 && c.cblk_width_log2 + c.cblk_height_log2 <= 12,
                    "component %u: bad code-block size 2^%u x 2^%u", component, c.cblk_width_log2, c.cblk_height_log2);
    for (int r = 0; r <= c.levels; ++r) {
        J2KC_CHECK_DATA(c.precinct_width_log2[r] <= 15 && c.precinct_height_log2[r] <= 15,
                        "component %u: bad precinct size at resolution %d", component, r);
        J2KC_CHECK_DATA(r == 0 || (c.precinct_width_log2[r] >= 1 && c.precinct_height_log2[r] >= 1),
                        "component %u: precinct exponent 0 above resolution 0", component);
    }
}

void build_resolution(TileComponent &tc, const ComponentCoding &coding, uint16_t component, uint8_t r,
                      std::vector<CodeBlock> &cblks)
{
    Resolution &res = tc.resolutions[r];
    const uint32_t levels = tc.levels;
    res.level = r;
    res.rect = resolution_rect(tc.rect, levels - r);
    res.precinct_width_log2 = coding.precinct_width_log2[r];
    res.precinct_height_log2 = coding.precinct_height_log2[r];
    const uint32_t ppx = res.precinct_width_log2, ppy = res.precinct_height_log2;
    // Code-blocks never straddle precincts (B-17): in the sub-bands of r > 0
    // precincts are half as large as in the resolution.
    const uint32_t band_ppx = r == 0 ? ppx : ppx - 1;
    const uint32_t band_ppy = r == 0 ? ppy : ppy - 1;
    res.cblk_width_log2 = static_cast<uint8_t>(std::min<uint32_t>(coding.cblk_width_log2, band_ppx));
    res.cblk_height_log2 = static_cast<uint8_t>(std::min<uint32_t>(coding.cblk_height_log2, band_ppy));
    res.precincts_x = grid_cells(res.rect.x0, res.rect.x1, ppx);
    res.precincts_y = grid_cells(res.rect.y0, res.rect.y1, ppy);
    if (res.precincts_x == 0 || res.precincts_y == 0) res.precincts_x = res.precincts_y = 0;
    res.precinct_x_start = floor_div_pow2(res.rect.x0, ppx);
    res.precinct_y_start = floor_div_pow2(res.rect.y0, ppy);

    if (r == 0) {
        Band ll;
        ll.orientation = kLL;
        ll.rect = band_rect(tc.rect, kLL, levels);
        ll.quant_index = 0;
        ll.decomposition = static_cast<uint8_t>(levels);
        res.bands.push_back(ll);
    } else {
        for (uint8_t o = kHL; o <= kHH; ++o) {
            Band b;
            b.orientation = static_cast<BandOrientation>(o);
            b.decomposition = static_cast<uint8_t>(levels - r + 1);
            b.rect = band_rect(tc.rect, b.orientation, b.decomposition);
            b.quant_index = static_cast<uint8_t>(3 * (r - 1) + o);
            res.bands.push_back(b);
        }
    }

    res.precincts.resize(res.num_precincts());
    for (uint32_t py = 0; py < res.precincts_y; ++py) {
        for (uint32_t px = 0; px < res.precincts_x; ++px) {
            const uint32_t p = py * res.precincts_x + px;
            Precinct &prec = res.precincts[p];
            const uint32_t gx = res.precinct_x_start + px, gy = res.precinct_y_start + py;
            prec.rect = intersect(grid_cell(gx, gy, ppx, ppy), res.rect);
            prec.bands.resize(res.bands.size());
            for (uint8_t b = 0; b < res.bands.size(); ++b) {
                PrecinctBand &pb = prec.bands[b];
                pb.rect = intersect(grid_cell(gx, gy, band_ppx, band_ppy), res.bands[b].rect);
                pb.first_cblk = static_cast<uint32_t>(cblks.size());
                if (pb.rect.empty()) continue;
                const uint32_t cx0 = floor_div_pow2(pb.rect.x0, res.cblk_width_log2);
                const uint32_t cy0 = floor_div_pow2(pb.rect.y0, res.cblk_height_log2);
                pb.cblks_x = grid_cells(pb.rect.x0, pb.rect.x1, res.cblk_width_log2);
                pb.cblks_y = grid_cells(pb.rect.y0, pb.rect.y1, res.cblk_height_log2);
                for (uint32_t j = 0; j < pb.cblks_y; ++j) {
                    for (uint32_t i = 0; i < pb.cblks_x; ++i) {
                        CodeBlock cb;
                        cb.rect =
                            intersect(grid_cell(cx0 + i, cy0 + j, res.cblk_width_log2, res.cblk_height_log2), pb.rect);
                        cb.component = component;
                        cb.resolution = r;
                        cb.band = b;
                        cb.precinct = p;
                        cblks.push_back(cb);
                    }
                }
            }
        }
    }
}

template <typename CodingOf>
TileLayout build(const ImageSize &siz, uint32_t tile_index, CodingOf coding_of)
{
    TileLayout layout;
    layout.index = tile_index;
    layout.rect = tile_rect(siz, tile_index);
    layout.components.resize(siz.components.size());
    for (uint16_t c = 0; c < siz.components.size(); ++c) {
        const ComponentCoding &coding = coding_of(c);
        check_coding(coding, c);
        TileComponent &tc = layout.components[c];
        tc.rect = tile_component_rect(layout.rect, siz.components[c]);
        tc.dx = siz.components[c].dx;
        tc.dy = siz.components[c].dy;
        tc.levels = coding.levels;
        tc.resolutions.resize(tc.levels + 1u);
        for (uint8_t r = 0; r <= tc.levels; ++r) build_resolution(tc, coding, c, r, layout.code_blocks);
    }
    return layout;
}

}  // namespace

Rect tile_rect(const ImageSize &siz, uint32_t index)
{
    const uint32_t p = index % siz.tiles_x(), q = index / siz.tiles_x();
    const uint64_t tx0 = uint64_t{siz.tile_x0} + uint64_t{p} * siz.tile_width;
    const uint64_t ty0 = uint64_t{siz.tile_y0} + uint64_t{q} * siz.tile_height;
    Rect r;
    r.x0 = static_cast<uint32_t>(std::max<uint64_t>(tx0, siz.x0));
    r.y0 = static_cast<uint32_t>(std::max<uint64_t>(ty0, siz.y0));
    r.x1 = static_cast<uint32_t>(std::min<uint64_t>(tx0 + siz.tile_width, siz.width));
    r.y1 = static_cast<uint32_t>(std::min<uint64_t>(ty0 + siz.tile_height, siz.height));
    return r;
}

Rect tile_component_rect(const Rect &tile, const ComponentSize &c)
{
    return {ceil_div(tile.x0, c.dx), ceil_div(tile.y0, c.dy), ceil_div(tile.x1, c.dx), ceil_div(tile.y1, c.dy)};
}

Rect band_rect(const Rect &tc, BandOrientation orientation, uint32_t nb)
{
    if (nb == 0) return tc;  // NL = 0: the LL band is the tile-component
    const int64_t xo = (orientation == kHL || orientation == kHH) ? 1 : 0;
    const int64_t yo = (orientation == kLH || orientation == kHH) ? 1 : 0;
    const int64_t half = int64_t{1} << (nb - 1);
    auto edge = [&](uint32_t v, int64_t o) {
        return static_cast<uint32_t>(std::max<int64_t>(0, ceil_shift(int64_t{v} - half * o, nb)));
    };
    return {edge(tc.x0, xo), edge(tc.y0, yo), edge(tc.x1, xo), edge(tc.y1, yo)};
}

PartitionCount count_partition(const ImageSize &siz, const Codestream &cs, const Tile &tile)
{
    PartitionCount count;
    const Rect tr = tile_rect(siz, tile.index);
    for (uint16_t c = 0; c < siz.components.size(); ++c) {
        const ComponentCoding &coding = cs.component_coding(tile, c);
        check_coding(coding, c);
        const Rect tc = tile_component_rect(tr, siz.components[c]);
        count.samples += tc.area();
        for (uint32_t r = 0; r <= coding.levels; ++r) {
            const Rect rr = resolution_rect(tc, coding.levels - r);
            const uint32_t ppx = coding.precinct_width_log2[r], ppy = coding.precinct_height_log2[r];
            const uint64_t precincts = uint64_t{grid_cells(rr.x0, rr.x1, ppx)} * grid_cells(rr.y0, rr.y1, ppy);
            count.precincts += precincts;
            const uint32_t bpx = r == 0 ? ppx : ppx - 1, bpy = r == 0 ? ppy : ppy - 1;
            const uint32_t xcb = std::min<uint32_t>(coding.cblk_width_log2, bpx);
            const uint32_t ycb = std::min<uint32_t>(coding.cblk_height_log2, bpy);
            const uint32_t nb = r == 0 ? coding.levels : coding.levels - r + 1;
            for (uint8_t o = r == 0 ? kLL : kHL; o <= (r == 0 ? kLL : kHH); ++o) {
                const Rect b = band_rect(tc, static_cast<BandOrientation>(o), nb);
                // Code-blocks never straddle precincts, so at most one extra
                // row/column of partial blocks per precinct boundary.
                count.code_blocks +=
                    uint64_t{grid_cells(b.x0, b.x1, xcb)} * grid_cells(b.y0, b.y1, ycb) + (b.empty() ? 0 : precincts);
            }
        }
    }
    return count;
}

TileLayout build_partition(const ImageSize &siz, const Codestream &cs, const Tile &tile)
{
    return build(siz, tile.index, [&](uint16_t c) -> const ComponentCoding & { return cs.component_coding(tile, c); });
}

namespace {

/** What a tile's partition depends on: two tiles with equal keys have equal layouts. */
struct PartitionKey {
    struct Component {
        uint8_t dx, dy;
        ComponentCoding coding;
    };
    uint32_t tile = 0;
    Rect rect;
    std::vector<Component> components;

    PartitionKey(const ImageSize &siz, const Codestream &cs, const Tile &tile_ref)
        : tile(tile_ref.index), rect(tile_rect(siz, tile_ref.index))
    {
        components.reserve(siz.components.size());
        for (uint16_t c = 0; c < siz.components.size(); ++c)
            components.push_back({siz.components[c].dx, siz.components[c].dy, cs.component_coding(tile_ref, c)});
    }

    bool operator==(const PartitionKey &o) const
    {
        if (tile != o.tile || rect.x0 != o.rect.x0 || rect.y0 != o.rect.y0 || rect.x1 != o.rect.x1 ||
            rect.y1 != o.rect.y1 || components.size() != o.components.size())
            return false;
        for (size_t c = 0; c < components.size(); ++c) {
            const Component &a = components[c], &b = o.components[c];
            if (a.dx != b.dx || a.dy != b.dy || a.coding.levels != b.coding.levels ||
                a.coding.cblk_width_log2 != b.coding.cblk_width_log2 ||
                a.coding.cblk_height_log2 != b.coding.cblk_height_log2 ||
                a.coding.precinct_width_log2 != b.coding.precinct_width_log2 ||
                a.coding.precinct_height_log2 != b.coding.precinct_height_log2)
                return false;
        }
        return true;
    }
};

/** Partitions kept per thread: enough for the tiles of a small grid, most recent first. */
constexpr size_t kKeptPartitions = 8;

}  // namespace

std::shared_ptr<const TileLayout> shared_partition(const ImageSize &siz, const Codestream &cs, const Tile &tile)
{
    thread_local std::vector<std::pair<PartitionKey, std::shared_ptr<const TileLayout>>> kept;
    PartitionKey key(siz, cs, tile);
    for (size_t i = 0; i < kept.size(); ++i) {
        if (kept[i].first == key) {
            std::rotate(kept.begin(), kept.begin() + i, kept.begin() + i + 1);
            return kept.front().second;
        }
    }
    auto layout = std::make_shared<const TileLayout>(build_partition(siz, cs, tile));
    if (kept.size() == kKeptPartitions) kept.pop_back();
    kept.emplace(kept.begin(), std::move(key), layout);
    return layout;
}

TileLayout build_partition(const ImageSize &siz, uint32_t tile_index, const std::vector<ComponentCoding> &coding)
{
    J2KC_CHECK_ARG(coding.size() == siz.components.size(), "coding for %zu of %zu components", coding.size(),
                   siz.components.size());
    return build(siz, tile_index, [&](uint16_t c) -> const ComponentCoding & { return coding[c]; });
}

}  // namespace j2kc
