/**
 * @file pcrd_cpu.cpp
 * @brief CPU reference of PCRD-opt (ISO/IEC 15444-1 Annex J.14; the search
 * of rate/pcrd.h): the same two-level parallel search as pcrd.cu, written as
 * plain loops. For each layer: per-component windows for the component caps,
 * then one frame window whose thresholds are floored by the component ones;
 * each iteration probes 32 thresholds and narrows the window.
 */
#include <algorithm>
#include <array>

#include "common/status.h"
#include "rate/pcrd.h"
#include "rate/pcrd_core.h"
#include "rate/pcrd_rounds.h"

namespace j2kc {

namespace {

using detail::kPcrdNoLimit;

void check_blocks(const PcrdBlocks &blocks)
{
    J2KC_CHECK_ARG(blocks.pass_offset != nullptr && (blocks.num_blocks == 0 || blocks.weight),
                   "pcrd: missing block arrays");
    J2KC_CHECK_ARG(blocks.num_passes == 0 || (blocks.pass_end != nullptr && blocks.pass_distortion != nullptr),
                   "pcrd: missing pass arrays");
    J2KC_CHECK_ARG(blocks.pass_offset[0] == 0 && blocks.pass_offset[blocks.num_blocks] == blocks.num_passes,
                   "pcrd: pass offsets do not span the %u passes", blocks.num_passes);
    for (uint32_t b = 0; b < blocks.num_blocks; ++b) {
        const uint32_t first = blocks.pass_offset[b], last = blocks.pass_offset[b + 1];
        J2KC_CHECK_ARG(first <= last && last - first <= 65535, "pcrd: block %u has bad pass range", b);
        for (uint32_t p = first + 1; p < last; ++p)
            J2KC_CHECK_ARG(blocks.pass_end[p] >= blocks.pass_end[p - 1], "pcrd: block %u pass lengths decrease", b);
    }
}

void check_iterations(int it)
{
    if (it >= kPcrdMaxIterations) fail(J2KC_ERR_INTERNAL, "pcrd: search window did not converge");
}

/** The reference search: state kept between rounds (hull, passes table). */
class RefSearch {
public:
    RefSearch(const PcrdBlocks &blocks, const PcrdParams &params, const detail::PcrdPlan &plan)
        : blocks_(blocks), params_(params), plan_(plan)
    {
        hull_pass_.resize(blocks.num_passes);
        hull_key_.resize(blocks.num_passes);
        hull_count_.resize(blocks.num_blocks);
        pcrd_hull_ref(blocks, hull_pass_.data(), hull_key_.data(), hull_count_.data());
        group_.resize(blocks.num_blocks);
        for (uint32_t b = 0; b < blocks.num_blocks; ++b) {
            const uint32_t c = blocks.component ? blocks.component[b] : 0;
            J2KC_CHECK_ARG(c < params.num_components, "pcrd: block %u has component %u", b, c);
            group_[b] = detail::pcrd_group_of(c, plan.groups);
            ++group_blocks_[group_[b]];
        }
        passes_.assign(size_t{blocks.num_blocks} * params.num_layers, 0);
    }

    const uint16_t *passes() const { return passes_.data(); }

    /** Slack filling: every block's next hull segment that fits its group's limit. */
    std::vector<PcrdCandidate> candidates(const std::vector<uint64_t> &limit) const
    {
        const uint32_t L = params_.num_layers;
        std::vector<PcrdCandidate> out;
        for (uint32_t b = 0; b < blocks_.num_blocks; ++b) {
            const uint32_t off = blocks_.pass_offset[b];
            const size_t row = size_t{b} * L;
            PcrdCandidate c;
            if (pcrd_next_segment(blocks_.pass_end + off, hull_pass_.data() + off, hull_key_.data() + off,
                                  hull_count_[b], passes_[row + L - 1], L > 1 ? passes_[row + L - 2] : 0u,
                                  params_.header, b, group_[b], c) &&
                c.bytes <= limit[group_[b]])
                out.push_back(c);
        }
        return out;
    }

    void apply(const std::vector<PcrdCandidate> &list, bool undo)
    {
        const uint32_t L = params_.num_layers;
        for (const PcrdCandidate &c : list) passes_[size_t{c.block} * L + L - 1] = undo ? c.from : c.to;
    }

    detail::PcrdRoundOutcome run(const detail::PcrdRoundBudgets &budgets)
    {
        const uint32_t G = plan_.groups, L = params_.num_layers;
        detail::PcrdRoundOutcome out;
        out.layer_thresholds.assign(L, 0);
        out.group_thresholds.assign(size_t{L} * G, 0);
        out.group_body.assign(G, 0);
        base_bits_.assign(G, 0);
        for (uint32_t l = 0; l < L; ++l) {
            std::array<uint64_t, kPcrdMaxGroups> base{};
            for (uint32_t g = 0; g < G; ++g)
                base[g] = base_bits_[g] + pcrd_reserve_bits(params_.header, group_blocks_[g], L - 1 - l);
            // Phase 1: each capped component alone.
            std::array<PcrdWindow, kPcrdMaxGroups> win{};
            for (uint32_t g = 0; g < G; ++g) win[g] = pcrd_window_start(budgets.group[g] != kPcrdNoLimit);
            for (int it = 0;; ++it) {
                bool open = false;
                for (uint32_t g = 0; g < G; ++g) open |= !pcrd_window_converged(win[g]);
                if (!open) break;
                check_iterations(it);
                for (uint32_t g = 0; g < G; ++g)
                    for (uint32_t i = 0; i < kPcrdProbes; ++i) thresholds_[g][i] = pcrd_window_probe(win[g], i);
                evaluate(l);
                for (uint32_t g = 0; g < G; ++g) {
                    uint32_t mask = 0;
                    for (uint32_t i = 0; i < kPcrdProbes; ++i)
                        if (pcrd_group_size(body_[g][i], bits_[g][i] + base[g]) <= budgets.group[g]) mask |= 1u << i;
                    pcrd_window_update(win[g], mask);
                }
            }
            // Phase 2: the frame, each component at least at its own threshold.
            PcrdWindow frame = pcrd_window_start(budgets.layer[l] != kPcrdNoLimit);
            for (int it = 0; !pcrd_window_converged(frame); ++it) {
                check_iterations(it);
                for (uint32_t g = 0; g < G; ++g)
                    for (uint32_t i = 0; i < kPcrdProbes; ++i)
                        thresholds_[g][i] = std::max(pcrd_window_probe(frame, i), win[g].hi);
                evaluate(l);
                uint32_t mask = 0;
                for (uint32_t i = 0; i < kPcrdProbes; ++i) {
                    uint64_t total = 0;
                    for (uint32_t g = 0; g < G; ++g) total += pcrd_group_size(body_[g][i], bits_[g][i] + base[g]);
                    if (total <= budgets.layer[l]) mask |= 1u << i;
                }
                pcrd_window_update(frame, mask);
            }
            out.layer_thresholds[l] = frame.hi;
            for (uint32_t g = 0; g < G; ++g) out.group_thresholds[size_t{l} * G + g] = std::max(frame.hi, win[g].hi);
            commit(l, out.group_thresholds.data() + size_t{l} * G, out);
        }
        out.group_bits.assign(base_bits_.begin(), base_bits_.begin() + G);
        return out;
    }

private:
    PcrdPick pick(uint32_t b, uint32_t l, uint32_t t) const
    {
        const uint32_t off = blocks_.pass_offset[b];
        const uint32_t n = blocks_.pass_offset[b + 1] - off;
        const uint32_t prev = l ? passes_[size_t{b} * params_.num_layers + l - 1] : 0;
        return pcrd_pick(blocks_.pass_end + off, hull_pass_.data() + off, hull_key_.data() + off, hull_count_[b], n,
                         prev, t, params_.header);
    }

    // Level-1 and level-2 sums of the search (pcrd.h) collapse into one loop here. A
    // block's choice repeats over neighbouring probes: computed once per change.
    void evaluate(uint32_t l)
    {
        for (auto &row : body_) row.fill(0);
        for (auto &row : bits_) row.fill(0);
        const uint32_t L = params_.num_layers;
        for (uint32_t b = 0; b < blocks_.num_blocks; ++b) {
            const uint32_t g = group_[b];
            const uint32_t off = blocks_.pass_offset[b];
            const uint32_t n = blocks_.pass_offset[b + 1] - off;
            const uint32_t prev = l ? passes_[size_t{b} * L + l - 1] : 0;
            const uint32_t *end = blocks_.pass_end + off;
            PcrdPick k{};
            uint32_t last_t = 0, last_p = ~0u;
            for (uint32_t i = 0; i < kPcrdProbes; ++i) {
                const uint32_t t = thresholds_[g][i];
                if (i == 0 || t != last_t) {
                    uint32_t p =
                        pcrd_select_passes(hull_pass_.data() + off, hull_key_.data() + off, hull_count_[b], n, t);
                    p = std::max(p, prev);
                    if (p != last_p) k = pcrd_pick_at(end, p, prev, params_.header);
                    last_p = p;
                    last_t = t;
                }
                body_[g][i] += k.bytes;
                bits_[g][i] += k.bits;
            }
        }
    }

    void commit(uint32_t l, const uint32_t *group_t, detail::PcrdRoundOutcome &out)
    {
        const uint32_t L = params_.num_layers;
        const bool last = l + 1 == L;
        bool all = true;
        for (uint32_t b = 0; b < blocks_.num_blocks; ++b) {
            const uint32_t g = group_[b];
            const PcrdPick k = pick(b, l, group_t[g]);
            passes_[size_t{b} * L + l] = static_cast<uint16_t>(k.passes);
            base_bits_[g] += k.bits;
            if (last) {
                out.group_body[g] += k.bytes;
                all &= k.passes == blocks_.pass_offset[b + 1] - blocks_.pass_offset[b];
            }
        }
        if (last) out.all_included = all;
    }

    const PcrdBlocks &blocks_;
    const PcrdParams &params_;
    const detail::PcrdPlan plan_;
    std::vector<uint16_t> hull_pass_;
    std::vector<uint32_t> hull_key_;
    std::vector<uint32_t> hull_count_;
    std::vector<uint32_t> group_;
    std::array<uint32_t, kPcrdMaxGroups> group_blocks_{};
    std::vector<uint16_t> passes_;
    std::vector<uint64_t> base_bits_;
    std::array<std::array<uint32_t, kPcrdProbes>, kPcrdMaxGroups> thresholds_{};
    std::array<std::array<uint64_t, kPcrdProbes>, kPcrdMaxGroups> body_{};
    std::array<std::array<uint64_t, kPcrdProbes>, kPcrdMaxGroups> bits_{};
};

}  // namespace

void pcrd_hull_ref(const PcrdBlocks &blocks, uint16_t *hull_pass, uint32_t *hull_key, uint32_t *hull_count)
{
    check_blocks(blocks);
    std::vector<uint64_t> hull_dist(blocks.num_passes);
    for (uint32_t b = 0; b < blocks.num_blocks; ++b) {
        const uint32_t off = blocks.pass_offset[b];
        hull_count[b] =
            pcrd_build_hull(blocks.pass_end + off, blocks.pass_distortion + off, blocks.pass_offset[b + 1] - off,
                            blocks.weight[b], hull_pass + off, hull_key + off, hull_dist.data() + off);
    }
}

PcrdResult pcrd_select_ref(const PcrdBlocks &blocks, const PcrdParams &params, const PcrdExactSizeFn &exact_size_fn)
{
    const detail::PcrdPlan plan = detail::pcrd_plan(params, blocks.num_blocks, blocks.num_passes);
    RefSearch search(blocks, params, plan);
    PcrdResult result = detail::pcrd_run_rounds(
        params, plan, blocks.num_blocks, [&](const detail::PcrdRoundBudgets &b) { return search.run(b); },
        [&]() { return search.passes(); }, exact_size_fn,
        detail::PcrdFillFns{[&](const std::vector<uint64_t> &limit) { return search.candidates(limit); },
                            [&](const std::vector<PcrdCandidate> &list, bool undo) { search.apply(list, undo); }});
    result.passes.assign(search.passes(), search.passes() + size_t{blocks.num_blocks} * params.num_layers);
    return result;
}

}  // namespace j2kc
