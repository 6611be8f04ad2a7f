/**
 * @file tier1_plane_floor.h
 * @brief The lowest bit-plane a Part 1 frame under a byte budget codes
 * (ISO/IEC 15444-1 Annex D passes, chosen before Tier-1 for PCRD-opt, J.14.1).
 *
 * The budget's quantisation steps lie a few planes under the distortion the
 * budget reaches (encoder_plan.cpp), so that PCRD-opt can truncate each
 * block where its slope says. Passes far below that point cost most of
 * Tier-1's time (most samples are significant there) and rate control drops
 * them all. The steps follow the bands' synthesis gains, so one plane in
 * index units stands for the same slope in every band: a frame-level model
 * of the bytes of coding every plane down to p (HT's cleanup model,
 * ht_add_cleanup_model, summed over the frame's code-blocks) finds the plane
 * whose bytes fit the budget, and Tier-1 codes a few planes below it and no
 * further (t1_lowest_plane). Blocks whose slopes lie far from the frame's
 * still have those planes to be truncated in.
 *
 * Both backends sum the model in integers and pick the plane here, so they
 * code the same passes.
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"
#include "tier1/ht_coding_sets.h"

namespace j2kc {
namespace t1core {

/** Planes coded under the one whose modelled bytes fit the budget. */
constexpr uint32_t kT1FloorMarginPlanes = 3;
/** ... and at least down to the highest plane whose modelled bytes reach
 *  this many budgets. */
constexpr uint64_t kT1FloorBudgets = 2;

/**
 * The lowest plane to code for a frame whose modelled costs are `bits`
 * (htenc::kHtPlaneBins entries, ht_add_cleanup_model: bits of coding every
 * plane down to p) under `budget` bytes: kT1FloorMarginPlanes under the
 * lowest plane whose cost fits, or lower, to the highest plane that costs
 * kT1FloorBudgets budgets. The second bound matters where each plane costs
 * little more than the one above (noise), and the blocks whose slopes are
 * steepest keep passes far under the frame's plane (docs/measurements.md).
 */
J2KC_HD uint32_t t1_lowest_plane(const uint64_t *bits, uint64_t budget)
{
    uint32_t fit = 0;
    while (fit + 1 < htenc::kHtPlaneBins && bits[fit] / 8 > budget) ++fit;
    uint32_t lowest = fit > kT1FloorMarginPlanes ? fit - kT1FloorMarginPlanes : 0;
    while (lowest > 0 && bits[lowest] / 8 < kT1FloorBudgets * budget) --lowest;
    return lowest;
}

}  // namespace t1core
}  // namespace j2kc
