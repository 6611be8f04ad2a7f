/**
 * @file pcrd.h
 * @brief Post-compression rate-distortion optimisation (PCRD-opt, Taubman's
 * EBCOT; ISO/IEC 15444-1 Annex J.14, informative) run as the parallel
 * slope-threshold search of Bruns, Martínez-del-Amor and Sparenberg,
 * "Evaluation of GPU/CPU Co-Processing Models for JPEG 2000 Packetization"
 * (Fraunhofer IIS), section VI: convex hull and slopes per code-block,
 * 32 thresholds probed at once, two-level reduction of the sizes, window
 * narrowed until it holds a single threshold.
 *
 * Host interface only (no CUDA types). The CPU reference (pcrd_cpu.cpp) and
 * the CUDA backend (pcrd.cu) run the very same search, so that they pick the
 * same truncation points: same hull, same slope keys, same probe thresholds,
 * same iteration count, same tie rules (see pcrd_core.h).
 *
 * Slopes. For hull point k after hull point j of one code-block,
 *   slope = (double)(D_k - D_j) * weight / (double)(R_k - R_j)
 * (two correctly rounded IEEE double operations, identical on host and
 * device), then rounded to float and taken as the float's bit pattern: the
 * "slope key", an unsigned integer in [1, kPcrdKeyMax] whose order is the
 * order of the slopes. All comparisons (hull construction, selection) are on
 * keys, i.e. exact integer comparisons. Keys of one hull strictly decrease.
 *
 * Thresholds are keys too: for threshold t >= 1 a code-block takes its last
 * hull point with key >= t; t = kPcrdKeyAll (0) takes every pass of every
 * code-block (hull or not); t = kPcrdKeyNone takes nothing.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace j2kc {

/** Threshold key meaning "every pass of every code-block". */
constexpr uint32_t kPcrdKeyAll = 0;
/** Largest slope key (bits of FLT_MAX); zero-rate passes and overflows get it. */
constexpr uint32_t kPcrdKeyMax = 0x7F7FFFFFu;
/** Threshold key meaning "nothing" (above every slope key). */
constexpr uint32_t kPcrdKeyNone = 0x7F800000u;
/** Thresholds probed at once: one per warp lane (Bruns et al., section VI). */
constexpr uint32_t kPcrdProbes = 32;
/** At most this many size groups (components with their own sums). */
constexpr uint32_t kPcrdMaxGroups = 16;
/** A budget of 0 means "no limit". */
constexpr uint64_t kPcrdUnlimited = 0;

/**
 * @brief The coding passes of every code-block of a frame (all tiles and
 * components), as flat arrays. Host pointers for pcrd_select_ref(), device
 * pointers for PcrdCuda::select().
 */
struct PcrdBlocks {
    uint32_t num_blocks = 0;
    uint32_t num_passes = 0;  ///< == pass_offset[num_blocks]
    /** num_blocks + 1 entries: block b owns passes [pass_offset[b], pass_offset[b+1]). */
    const uint32_t *pass_offset = nullptr;
    /** Per pass: cumulative code-block bytes after the pass (non-decreasing in a block). */
    const uint32_t *pass_end = nullptr;
    /** Per pass: distortion reduction of that pass alone (Tier-1 fixed point). */
    const uint64_t *pass_distortion = nullptr;
    /** Per block: weight * distortion = image-domain MSE (Delta_b^2 x synthesis gain). */
    const double *weight = nullptr;
    /** Per block: component index (< num_components); nullptr = all component 0. */
    const uint16_t *component = nullptr;
};

/**
 * @brief Packet-header size estimate used while searching (Tier-2's exact size
 * comes later through PcrdExactSizeFn). Per code-block and layer, with p new
 * passes of n new bytes:
 *   p == 0:  empty_bits
 *   else:    (first contribution ? first_bits : later_bits) + pass_bits * p
 *            + (pass_code ? length of the Table B.4 codeword for p : 0)
 *            + (length_bits ? max(3, bit_width(n)) + floor(log2 p) : 0)
 * (the last term is the segment length field of B.10.7 with Lblock grown
 * just enough). Header bytes of a component = ceil(sum of its bits / 8).
 * Every term grows with p and n, so sizes never grow with the threshold.
 */
struct PcrdHeaderModel {
    uint32_t empty_bits = 1;   ///< inclusion information of an absent block
    uint32_t first_bits = 6;   ///< first inclusion: tag-tree shares (inclusion, zero bit-planes), Lblock
    uint32_t later_bits = 1;   ///< inclusion bit of an already included block
    uint32_t pass_bits = 0;    ///< extra bits per new pass
    uint32_t pass_code = 1;    ///< 1: add the number-of-passes codeword (1..16 bits)
    uint32_t length_bits = 1;  ///< 1: add the segment length field
};

/** @brief What to select. */
struct PcrdParams {
    uint32_t num_components = 1;
    uint32_t num_layers = 1;
    /** Frame budget: code-block bytes + packet headers (markers already taken off). 0 = no limit. */
    uint64_t budget = kPcrdUnlimited;
    /**
     * Empty, or num_components caps on each component's bodies + packet headers
     * (its tile-part headers already taken off; 0 = no cap). A component that
     * alone exceeds its cap gets its own, higher threshold.
     */
    std::vector<uint64_t> component_budgets;
    /**
     * Empty, or num_layers cumulative budgets (layers 0..l together; 0 = no
     * limit); each is clamped to budget. Empty with a budget: geometric,
     * layer l gets budget >> (num_layers - 1 - l). Empty without a budget:
     * every layer holds every pass.
     */
    std::vector<uint64_t> layer_budgets;
    PcrdHeaderModel header;
};

/** @brief Exact sizes from Tier-2 for a selection. */
struct PcrdSizes {
    uint64_t total = 0;               ///< compared with PcrdParams::budget
    std::vector<uint64_t> component;  ///< empty, or num_components sizes compared with the caps
};

/**
 * @brief Exact size of a selection: gets the passes table
 * ([block * num_layers + layer], host memory for the reference backend,
 * device memory for the CUDA one; valid during the call).
 */
using PcrdExactSizeFn = std::function<PcrdSizes(const uint16_t *passes)>;

/** @brief The selection. */
struct PcrdResult {
    uint32_t num_blocks = 0;
    uint32_t num_layers = 0;
    uint32_t groups = 1;  ///< num_components, or 1 when > kPcrdMaxGroups without caps
    /** [block * num_layers + layer]: passes included up to that layer, non-decreasing in layer. */
    std::vector<uint16_t> passes;
    std::vector<uint32_t> layer_thresholds;       ///< [layer]: frame threshold key
    std::vector<uint32_t> group_thresholds;       ///< [layer * groups + g]: key each group used
    uint64_t body_bytes = 0;                      ///< code-block bytes of all layers
    uint64_t estimated_bytes = 0;                 ///< body_bytes + estimated headers
    std::vector<uint64_t> group_estimated_bytes;  ///< per group, the same
    bool all_included = false;                    ///< every pass of every block is in
    PcrdSizes exact;                              ///< last exact sizes (when an exact function was given)
    uint32_t rounds = 0;                          ///< searches run (1 without exact function)
    uint64_t search_budget = 0;                   ///< frame budget of the chosen search (after corrections)
    /**
     * Hull segments added below the thresholds by slack filling (last layer
     * only): the layer thresholds then no longer describe the last layer alone.
     */
    uint32_t fill_segments = 0;
    uint32_t fill_measures = 0;  ///< exact sizings the filling asked for (beyond rounds)
};

/**
 * @brief Convex hull of every code-block (reference): hull points are written
 * at the block's pass_offset; hull_pass = passes included at the point
 * (1-based), hull_key = its slope key (strictly decreasing), hull_count[b] =
 * number of hull points. Throws INVALID_ARG on malformed blocks.
 */
void pcrd_hull_ref(const PcrdBlocks &blocks, uint16_t *hull_pass, uint32_t *hull_key, uint32_t *hull_count);

/**
 * @brief PCRD-opt on the CPU. Without exact_size_fn: one search against the
 * estimated sizes; throws LIMIT if even the empty selection's estimate does
 * not fit. With it: searches, asks for the exact size, and while that exceeds
 * a budget (frame or component) searches again with that budget lowered by
 * the overshoot plus a margin growing 4x per round (0.2% of the budget first,
 * all of it by the fifth round, so it ends: LIMIT if even the empty selection
 * overshoots). Once a selection fits but is more than 2% below the frame
 * budget (and the frame budget, not the caps, decided it) the search budget
 * is raised by the slack, then bisected between fitting and overshooting
 * search budgets; at most 16 rounds. Then the bytes still left are filled
 * with further hull segments in decreasing slope order (ties: lower block
 * index first), each taken while its estimated cost fits, checked by the exact
 * size (trimmed or undone on an overshoot). The returned selection always fits its
 * exact size, and the last call of exact_size_fn was on the returned selection.
 */
PcrdResult pcrd_select_ref(const PcrdBlocks &blocks, const PcrdParams &params,
                           const PcrdExactSizeFn &exact_size_fn = nullptr);

/** @brief True when the CUDA runtime sees at least one device. */
bool pcrd_cuda_available();

/**
 * @brief PCRD-opt on the GPU: the same search as pcrd_select_ref() with
 * device-resident inputs and outputs. Workspace is kept between calls (grown
 * by reserve() or on demand). Each search round runs entirely on the device
 * (fixed number of kernel launches, no host round trip) and ends with one
 * small read-back of the sums; exact_size_fn gets the device passes table.
 */
class PcrdCuda {
public:
    PcrdCuda();
    ~PcrdCuda();
    PcrdCuda(const PcrdCuda &) = delete;
    PcrdCuda &operator=(const PcrdCuda &) = delete;

    /** @brief Allocates workspace for up to these sizes (no allocation later within them). */
    void reserve(uint32_t max_blocks, uint32_t max_passes, uint32_t max_layers);

    /**
     * @brief Selects on `stream` (a cudaStream_t, nullptr = default stream).
     * blocks holds device pointers. The result's passes vector is filled only
     * if copy_passes; the device table stays at device_passes() until the
     * next call.
     */
    PcrdResult select(const PcrdBlocks &blocks, const PcrdParams &params,
                      const PcrdExactSizeFn &exact_size_fn = nullptr, void *stream = nullptr, bool copy_passes = true);

    /** @brief Device passes table [block * num_layers + layer] of the last select(). */
    const uint16_t *device_passes() const;

    /** @brief Hull on the device, copied back (for tests), same layout as pcrd_hull_ref();
     *  the entries past each block's hull points are zero. */
    void hull(const PcrdBlocks &blocks, std::vector<uint16_t> &hull_pass, std::vector<uint32_t> &hull_key,
              std::vector<uint32_t> &hull_count, void *stream = nullptr);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace j2kc
