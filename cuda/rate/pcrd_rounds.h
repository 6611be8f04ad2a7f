/**
 * @file pcrd_rounds.h
 * @brief Internal to rate/: the host-side driver both PCRD-opt backends share
 * (parameter checks, per-round budgets, the exact-size correction loop), so
 * the CPU and CUDA selections go through identical rounds.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "rate/pcrd.h"
#include "rate/pcrd_core.h"

namespace j2kc {
namespace detail {

constexpr uint64_t kPcrdNoLimit = ~uint64_t{0};

/** Budgets of one search round; kPcrdNoLimit = no limit. */
struct PcrdRoundBudgets {
    uint64_t frame = kPcrdNoLimit;
    std::vector<uint64_t> group;  ///< per group
    std::vector<uint64_t> layer;  ///< per layer: cumulative frame budget
};

/** What one search round reports (the passes stay in the backend). */
struct PcrdRoundOutcome {
    std::vector<uint32_t> layer_thresholds;  ///< [layer]
    std::vector<uint32_t> group_thresholds;  ///< [layer * groups + g]
    std::vector<uint64_t> group_body;        ///< bytes of each group, all layers
    std::vector<uint64_t> group_bits;        ///< estimated header bits, all layers
    bool all_included = false;
};

/** Checked parameters. */
struct PcrdPlan {
    uint32_t groups = 1;
    bool any_cap = false;
};

/** @brief Checks params against the block count; throws INVALID_ARG / UNSUPPORTED. */
PcrdPlan pcrd_plan(const PcrdParams &params, uint32_t num_blocks, uint32_t num_passes);

/** @brief Group of a component (components are groups unless there are too many). */
inline uint32_t pcrd_group_of(uint32_t component, uint32_t groups) { return groups == 1 ? 0u : component; }

/** @brief Round budgets for a frame budget and group caps (kPcrdNoLimit = none). */
PcrdRoundBudgets pcrd_round_budgets(const PcrdParams &params, const PcrdPlan &plan, uint64_t frame,
                                    const std::vector<uint64_t> &group);

using PcrdSearchFn = std::function<PcrdRoundOutcome(const PcrdRoundBudgets &)>;
using PcrdPassesFn = std::function<const uint16_t *()>;

/** Candidates never take more body bytes than limit[group] (one limit per group). */
using PcrdCandidatesFn = std::function<std::vector<PcrdCandidate>(const std::vector<uint64_t> &limit)>;
/** Sets the last layer's passes of each listed block to its `to` (or, if undo, its `from`). */
using PcrdApplyFn = std::function<void(const std::vector<PcrdCandidate> &list, bool undo)>;

/** Backend operations of the slack-filling step (both may be empty: no filling). */
struct PcrdFillFns {
    PcrdCandidatesFn candidates;
    PcrdApplyFn apply;
};

/**
 * @brief Runs search rounds until the selection fits (see pcrd_select_ref()).
 * Fills everything in the result but passes.
 */
PcrdResult pcrd_run_rounds(const PcrdParams &params, const PcrdPlan &plan, uint32_t num_blocks,
                           const PcrdSearchFn &search, const PcrdPassesFn &passes, const PcrdExactSizeFn &exact,
                           const PcrdFillFns &fill = {});

}  // namespace detail
}  // namespace j2kc
