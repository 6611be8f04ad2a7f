/**
 * @file pcrd_rounds.cpp
 * @brief PCRD-opt driver shared by both backends (rate/pcrd.h; ISO/IEC
 * 15444-1 Annex J.14): checks, per-layer budgets, and the loop that meets the
 * budget against Tier-2's exact size, where the search itself only had an
 * estimate of the packet headers.
 */
#include "rate/pcrd_rounds.h"

#include <algorithm>

#include "common/status.h"

namespace j2kc {
namespace detail {

namespace {

/** The search never runs more rounds than this (budgets reach 0 well before). */
constexpr uint32_t kMaxRounds = 16;

uint64_t limit_of(uint64_t budget) { return budget == kPcrdUnlimited ? kPcrdNoLimit : budget; }

/** Slack filling: at most this many rounds of candidates ... */
constexpr uint32_t kFillRounds = 4;
/** ... of at most this many (the steepest) candidates each ... */
constexpr size_t kFillCandidates = 16384;
/** ... and this many trims of an overshooting round before it is undone. */
constexpr uint32_t kFillTrims = 3;

uint64_t bytes_of(uint64_t body, uint64_t bits) { return body + (bits + 7) / 8; }

/** Estimated bytes a candidate costs when taken back (at least 1, so trims progress). */
uint64_t trim_cost(const PcrdCandidate &c) { return c.bytes + (uint64_t{c.bits} + 7) / 8 + 1; }

/** How far an exact size lies over the frame budget and over each group's cap (0 = fits). */
struct Overshoot {
    uint64_t frame = 0;
    std::vector<uint64_t> group;
    bool any() const
    {
        return frame || std::any_of(group.begin(), group.end(), [](uint64_t g) { return g > 0; });
    }
};

Overshoot overshoot(const PcrdSizes &s, uint64_t budget, const std::vector<uint64_t> &caps, bool any_cap)
{
    Overshoot o;
    o.frame = (budget != kPcrdNoLimit && s.total > budget) ? s.total - budget : 0;
    o.group.assign(caps.size(), 0);
    for (size_t g = 0; any_cap && g < caps.size(); ++g)
        if (caps[g] != kPcrdNoLimit && s.component[g] > caps[g]) o.group[g] = s.component[g] - caps[g];
    return o;
}

/**
 * The threshold search stops at the smallest fitting threshold, and the next
 * hull segment below it (one code-block's) may be larger than what is left,
 * most of all under small budgets. The slack left after the search is filled
 * by hull segments in decreasing slope order (ties: lower block first), each
 * taken when its estimated cost still fits and skipped otherwise; the exact
 * size then decides. A round that overshoots is trimmed from its flattest end
 * (a few times) or undone, so the result always fits; a trim takes back the
 * segments of the groups over their caps (of every group while the frame is
 * over), since taking back another group's frees nothing under a cap.
 * Everything here runs on the host over candidates both backends compute
 * with the same J2KC_HD code, and the exact sizes are byte-identical, so
 * both take the same segments.
 */
void slack_fill(const PcrdPlan &plan, uint64_t budget, const std::vector<uint64_t> &caps, const PcrdFillFns &fns,
                const PcrdPassesFn &passes, const PcrdExactSizeFn &exact, PcrdResult &result)
{
    const uint32_t G = plan.groups;
    auto before = [](const PcrdCandidate &a, const PcrdCandidate &b) { return pcrd_candidate_before(a, b); };
    for (uint32_t round = 0; round < kFillRounds; ++round) {
        const PcrdSizes &now = result.exact;
        const uint64_t frame_slack = budget == kPcrdNoLimit ? kPcrdNoLimit : budget - now.total;
        std::vector<uint64_t> group_slack(G, kPcrdNoLimit), limit(G);
        bool any_room = false;
        for (uint32_t g = 0; g < G; ++g) {
            if (plan.any_cap && caps[g] != kPcrdNoLimit) group_slack[g] = caps[g] - now.component[g];
            limit[g] = std::min(frame_slack, group_slack[g]);
            any_room |= limit[g] > 0;
        }
        if (!any_room) return;
        std::vector<PcrdCandidate> cand = fns.candidates(limit);
        if (cand.size() > kFillCandidates) {
            std::nth_element(cand.begin(), cand.begin() + kFillCandidates, cand.end(), before);
            cand.resize(kFillCandidates);
        }
        std::sort(cand.begin(), cand.end(), before);

        std::vector<PcrdCandidate> taken;
        uint64_t body = 0, bits = 0;
        std::vector<uint64_t> gbody(G, 0), gbits(G, 0);
        for (const PcrdCandidate &c : cand) {
            if (bytes_of(body + c.bytes, bits + c.bits) > frame_slack) continue;
            if (group_slack[c.group] != kPcrdNoLimit &&
                bytes_of(gbody[c.group] + c.bytes, gbits[c.group] + c.bits) > group_slack[c.group])
                continue;
            body += c.bytes;
            bits += c.bits;
            gbody[c.group] += c.bytes;
            gbits[c.group] += c.bits;
            taken.push_back(c);
        }
        if (taken.empty()) return;
        fns.apply(taken, false);
        PcrdSizes s = exact(passes());
        ++result.fill_measures;
        bool trimmed = false;
        for (uint32_t trim = 0; trim <= kFillTrims; ++trim) {
            const Overshoot over = overshoot(s, budget, caps, plan.any_cap);
            if (!over.any()) break;
            trimmed = true;
            // Take back, flattest first, at least each overshoot (the frame's
            // from any group, a cap's from its group), doubling with every
            // try; the last try takes back the whole round.
            std::vector<PcrdCandidate> back, kept;
            uint64_t frame_removed = 0;
            std::vector<uint64_t> group_removed(G, 0);
            for (size_t i = taken.size(); i-- > 0;) {
                const PcrdCandidate &c = taken[i];
                if (trim == kFillTrims || frame_removed < (over.frame << trim) ||
                    group_removed[c.group] < (over.group[c.group] << trim)) {
                    frame_removed += trim_cost(c);
                    group_removed[c.group] += trim_cost(c);
                    back.push_back(c);
                } else {
                    kept.push_back(c);
                }
            }
            taken.assign(kept.rbegin(), kept.rend());
            fns.apply(back, true);
            s = exact(passes());  // the empty list is the search's selection: it fits
            ++result.fill_measures;
        }
        for (const PcrdCandidate &c : taken) {
            result.body_bytes += c.bytes;
            result.group_estimated_bytes[c.group] += c.bytes + (uint64_t{c.bits} + 7) / 8;
            result.estimated_bytes += c.bytes + (uint64_t{c.bits} + 7) / 8;
        }
        result.fill_segments += static_cast<uint32_t>(taken.size());
        result.exact = s;
        if (trimmed) return;  // the estimates ran short here: stop rather than overshoot again
    }
}

}  // namespace

PcrdPlan pcrd_plan(const PcrdParams &params, uint32_t num_blocks, uint32_t num_passes)
{
    (void)num_blocks;
    (void)num_passes;
    J2KC_CHECK_ARG(params.num_components >= 1 && params.num_components <= 16384, "pcrd: %u components",
                   params.num_components);
    J2KC_CHECK_ARG(params.num_layers >= 1 && params.num_layers <= 65535, "pcrd: %u layers", params.num_layers);
    J2KC_CHECK_ARG(params.component_budgets.empty() || params.component_budgets.size() == params.num_components,
                   "pcrd: %zu component budgets for %u components", params.component_budgets.size(),
                   params.num_components);
    J2KC_CHECK_ARG(params.layer_budgets.empty() || params.layer_budgets.size() == params.num_layers,
                   "pcrd: %zu layer budgets for %u layers", params.layer_budgets.size(), params.num_layers);
    const PcrdHeaderModel &m = params.header;
    J2KC_CHECK_ARG(m.first_bits <= 4096 && m.later_bits <= 4096 && m.pass_bits <= 4096 && m.empty_bits <= 4096 &&
                       m.pass_code <= 1 && m.length_bits <= 1,
                   "pcrd: header model out of range");
    // The cheapest contribution (one pass, up to 7 bytes) must cost no less than none.
    J2KC_CHECK_ARG(
        uint64_t{std::min(m.first_bits, m.later_bits)} + m.pass_bits + m.pass_code + 3 * m.length_bits >= m.empty_bits,
        "pcrd: header model would shrink when passes are added");
    PcrdPlan plan;
    for (uint64_t cap : params.component_budgets) plan.any_cap |= cap != kPcrdUnlimited;
    if (params.num_components <= kPcrdMaxGroups) {
        plan.groups = params.num_components;
    } else {
        J2KC_CHECK_SUPPORTED(!plan.any_cap, "pcrd: per-component caps with %u > %u components", params.num_components,
                             kPcrdMaxGroups);
        plan.groups = 1;
    }
    return plan;
}

PcrdRoundBudgets pcrd_round_budgets(const PcrdParams &params, const PcrdPlan &plan, uint64_t frame,
                                    const std::vector<uint64_t> &group)
{
    PcrdRoundBudgets b;
    b.frame = frame;
    b.group = group;
    b.group.resize(plan.groups, kPcrdNoLimit);
    const uint32_t L = params.num_layers;
    b.layer.assign(L, kPcrdNoLimit);
    for (uint32_t l = 0; l < L; ++l) {
        if (!params.layer_budgets.empty()) {
            b.layer[l] = std::min(limit_of(params.layer_budgets[l]), frame);
        } else if (frame != kPcrdNoLimit) {
            // Geometric rates: each layer doubles the one below it.
            const uint32_t shift = L - 1 - l;
            b.layer[l] = shift >= 64 ? 0 : frame >> shift;
        }
    }
    return b;
}

PcrdResult pcrd_run_rounds(const PcrdParams &params, const PcrdPlan &plan, uint32_t num_blocks,
                           const PcrdSearchFn &search, const PcrdPassesFn &passes, const PcrdExactSizeFn &exact,
                           const PcrdFillFns &fill_fns)
{
    const uint32_t G = plan.groups;
    const uint64_t budget = limit_of(params.budget);
    std::vector<uint64_t> caps(G, kPcrdNoLimit);
    if (plan.any_cap)
        for (uint32_t g = 0; g < G; ++g) caps[g] = limit_of(params.component_budgets[g]);

    PcrdResult result;
    result.num_blocks = num_blocks;
    result.num_layers = params.num_layers;
    result.groups = G;

    auto fill = [&](const PcrdRoundOutcome &o, uint64_t frame) {
        result.layer_thresholds = o.layer_thresholds;
        result.group_thresholds = o.group_thresholds;
        result.group_estimated_bytes.assign(G, 0);
        result.body_bytes = 0;
        result.estimated_bytes = 0;
        for (uint32_t g = 0; g < G; ++g) {
            const uint64_t size = o.group_body[g] + (o.group_bits[g] + 7) / 8;
            result.group_estimated_bytes[g] = size;
            result.body_bytes += o.group_body[g];
            result.estimated_bytes += size;
        }
        result.all_included = o.all_included;
        result.search_budget = frame == kPcrdNoLimit ? 0 : frame;
    };

    if (!exact) {
        const PcrdRoundOutcome o = search(pcrd_round_budgets(params, plan, budget, caps));
        fill(o, budget);
        result.rounds = 1;
        J2KC_CHECK_LIMIT(budget == kPcrdNoLimit || result.estimated_bytes <= budget,
                         "pcrd: %llu bytes of headers alone exceed the budget of %llu",
                         (unsigned long long)result.estimated_bytes, (unsigned long long)budget);
        for (uint32_t g = 0; g < G; ++g)
            J2KC_CHECK_LIMIT(result.group_estimated_bytes[g] <= caps[g],
                             "pcrd: component %u cannot meet its cap of %llu bytes", g, (unsigned long long)caps[g]);
        return result;
    }

    struct Round {
        uint64_t frame;
        std::vector<uint64_t> caps;
        PcrdRoundOutcome outcome;
        PcrdSizes sizes;
        uint32_t index;
    };
    bool have_best = false;
    Round best{};
    uint64_t frame = budget;
    std::vector<uint64_t> cur_caps = caps;
    // Once something fits: the largest search budget known to fit, the
    // smallest known to overshoot; the frame budget is bisected between them.
    uint64_t fit_frame = 0, over_frame = 0;
    bool have_over = false;
    uint32_t round = 0;
    for (;; ++round) {
        PcrdRoundOutcome o = search(pcrd_round_budgets(params, plan, frame, cur_caps));
        PcrdSizes s = exact(passes());
        J2KC_CHECK_ARG(!plan.any_cap || s.component.size() == params.num_components,
                       "pcrd: exact size gave %zu component sizes, caps need %u", s.component.size(),
                       params.num_components);
        const uint64_t over = (budget != kPcrdNoLimit && s.total > budget) ? s.total - budget : 0;
        std::vector<uint64_t> over_g(G, 0);
        bool fits = over == 0;
        for (uint32_t g = 0; g < G && plan.any_cap; ++g) {
            if (caps[g] != kPcrdNoLimit && s.component[g] > caps[g]) {
                over_g[g] = s.component[g] - caps[g];
                fits = false;
            }
        }
        const bool last_round = round + 1 >= kMaxRounds;
        if (fits) {
            const bool all = o.all_included;
            const uint64_t total = s.total;
            // Does the frame budget decide anything? Not if every group sits at its cap.
            const uint32_t L = params.num_layers;
            bool frame_binds = false;
            for (uint32_t g = 0; g < G; ++g)
                frame_binds |= o.group_thresholds[size_t{L - 1} * G + g] == o.layer_thresholds[L - 1];
            const bool gained = !have_best || total > best.sizes.total;
            if (gained) {
                best = Round{frame, cur_caps, std::move(o), std::move(s), round};
            }
            fit_frame = std::max(fit_frame, frame);
            const bool close = budget == kPcrdNoLimit || total >= budget - budget / 50;
            // No gain from a larger frame budget: other limits (caps) bind.
            if (all || close || last_round || !frame_binds || (have_best && !gained)) break;
            have_best = true;
            // The header estimate was pessimistic: give the slack back, or bisect.
            frame = have_over ? fit_frame + (over_frame - fit_frame) / 2 : frame + (budget - total);
        } else if (have_best) {
            over_frame = have_over ? std::min(over_frame, frame) : frame;
            have_over = true;
            frame = fit_frame + (over_frame - fit_frame) / 2;
            if (last_round) break;
        } else {
            J2KC_CHECK_LIMIT(!last_round, "pcrd: no selection met the exact size in %u rounds", kMaxRounds);
            // Lower what overshot: by the overshoot and a margin that grows
            // geometrically (0.2% of the budget, then 0.8%, 3%, ..., all of it
            // by round 5), so the loop ends.
            const uint32_t shift = round >= 4 ? 0 : 9 - 2 * round;
            auto lower = [&](uint64_t &b, uint64_t by) {
                J2KC_CHECK_LIMIT(b > 0, "pcrd: headers alone exceed the budget (%llu bytes over)",
                                 (unsigned long long)by);
                b -= std::min(b, by + (b >> shift));
            };
            if (over) lower(frame, over);
            for (uint32_t g = 0; g < G; ++g)
                if (over_g[g]) lower(cur_caps[g], over_g[g]);
        }
        if (have_over && over_frame - fit_frame <= 1) break;
    }
    result.rounds = round + 1;
    if (best.index != round) {
        // Leave the backend (and the caller's Tier-2 state) on the chosen selection.
        best.outcome = search(pcrd_round_budgets(params, plan, best.frame, best.caps));
        best.sizes = exact(passes());
        ++result.rounds;
    }
    fill(best.outcome, best.frame);
    result.exact = best.sizes;
    if (fill_fns.candidates && fill_fns.apply && !result.all_included && (budget != kPcrdNoLimit || plan.any_cap))
        slack_fill(plan, budget, caps, fill_fns, passes, exact, result);
    return result;
}

}  // namespace detail
}  // namespace j2kc
