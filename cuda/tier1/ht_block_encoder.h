/**
 * @file ht_block_encoder.h
 * @brief Host interface of the HTJ2K block encoder (Rec. ITU-T T.814 |
 * ISO/IEC 15444-15): the CPU driver, and the CUDA launcher that codes many
 * blocks of a frame in one launch with the same bytes.
 *
 * Without `sets` a block is coded as one HT cleanup pass at bit-plane 0,
 * which carries every magnitude bit: lossless and fixed-quantisation coding
 * need no more. The block's EncodedCodeBlock then has one pass (terminated,
 * its distortion in tier1.h's units) and P = Mb - 1 zero bit-planes. With
 * `sets` (rate control with one layer) the block holds the HT coding sets of
 * ht_coding_sets.h back to back, their cleanup planes from `top_plane` down, its passes are their ranked truncation
 * points, and EncodedCodeBlock::ht_sets says which set and passes each
 * point means; Tier-2 writes the chosen set alone. An all-zero block has no
 * pass and P = Mb, as in Part 1.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/ht_coding_sets.h"
#include "tier1/tier1.h"
#include "tier1/tier1_cuda.h"

namespace j2kc {

/**
 * Codes one code-block's HT cleanup segment. `coeffs` are quantisation
 * indices in two's complement, |v| < 2^num_bitplanes (Mb, at most 30), row
 * r at coeffs + r * stride; the block is at most 1024 wide or high and 4096
 * samples. Thread-safe (scratch is thread-local). INVALID_ARG for a block
 * outside those limits.
 */
void encode_ht_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height, uint8_t num_bitplanes,
                          bool sets, uint32_t top_plane, EncodedCodeBlock &out);

/**
 * @brief Encodes every job on `stream` (a cudaStream_t, or nullptr) with the
 * HT block coder as encode_ht_code_block (one cleanup pass a warp a job,
 * coding sets a thread a job); asynchronous.
 * `sets` (device, a HtCodingSets per job) selects the coding sets for rate
 * control, from the plane at *top_plane (device; ht_plan_sets_gpu);
 * nullptr codes one cleanup pass. Jobs, results and pass arrays as
 * tier1_encode_gpu (tier1_cuda.h), except the sizes: each job's output
 * region needs ht_gpu_capacity_bound bytes, its scratch ht_gpu_scratch_bound
 * bytes, and ht_gpu_max_passes pass entries. Throws J2KC_ERR_CUDA if the
 * launch fails.
 */
void ht_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, htenc::HtCodingSets *sets, const uint32_t *top_plane,
                   uint8_t *out_bytes, GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                   uint8_t *pass_terminated, void *stream);

/**
 * @brief The coarsest set's plane of a frame under `budget` bytes
 * (ht_sets_top_plane) into *top_plane (device), from the cleanup cost model
 * of every job's indices, on `stream`; asynchronous. `model` is device scratch of
 * htenc::kHtPlaneBins 64-bit counts.
 */
void ht_plan_sets_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t budget, uint64_t *model,
                      uint32_t *top_plane, void *stream);

/**
 * @brief What Tier-2 reads of the chosen coding sets (device arrays, a block
 * each unless said otherwise): the passes table of the selection, where each
 * block's data starts, its pass entries (kHtSetPasses a block, from
 * pass_offset), their terminations, its pass count and zero bit-planes.
 */
struct HtChosenSetTables {
    uint16_t *passes;
    uint64_t *byte_offset;
    uint32_t *pass_offset;  ///< num_jobs + 1 entries
    uint32_t *pass_end;
    uint8_t *pass_terminated;
    uint32_t *num_passes;
    uint8_t *zero_bitplanes;
};

/**
 * @brief Turns a one-layer selection of truncation points (`points`, device,
 * a count per job as PcrdCuda::device_passes) into the chosen sets' tables
 * on `stream`; asynchronous. Byte offsets are those of the jobs' regions
 * past their dummy byte.
 */
void ht_choose_sets_gpu(const GpuCodeBlockJob *jobs, const htenc::HtCodingSets *sets, uint32_t num_jobs,
                        const uint16_t *points, const HtChosenSetTables &out, void *stream);

/** @brief Output region (with Part 1's leading dummy byte) that always holds a block's segments. */
size_t ht_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes, bool sets);

/** @brief Pass entries to reserve for a job: kHtMaxPoints with `sets`, else 1. */
uint32_t ht_gpu_max_passes(bool sets);

/** @brief Scratch bytes one job needs (a multiple of 16). */
size_t ht_gpu_scratch_bound(uint32_t width, uint32_t height);

}  // namespace j2kc
