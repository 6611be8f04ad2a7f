/**
 * @file ht_block_encoder.h
 * @brief Host interface of the HTJ2K block encoder (Rec. ITU-T T.814 |
 * ISO/IEC 15444-15): the CPU driver, and the CUDA launcher that codes many
 * blocks of a frame in one launch with the same bytes.
 *
 * Without `refine` a block is coded as one HT cleanup pass at bit-plane 0,
 * which carries every magnitude bit: lossless and fixed-quantisation coding
 * need no more. The block's EncodedCodeBlock then has one pass (terminated,
 * its distortion in tier1.h's units) and P = Mb - 1 zero bit-planes. With
 * `refine` (for rate control) a block with a magnitude above 1 in a band of
 * two or more planes is coded as cleanup at plane 1, SigProp and MagRef at
 * plane 0: three passes, P = Mb - 2, the first and the last terminated (the
 * cleanup and the refinement segment), each end a truncation point. An
 * all-zero block has no pass and P = Mb, as in Part 1.
 */
#pragma once

#include <cstddef>
#include <cstdint>

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
void encode_ht_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                          uint8_t num_bitplanes, bool refine, EncodedCodeBlock &out);

/**
 * @brief Encodes every job on `stream` (a cudaStream_t, or nullptr) with the
 * HT block coder, a thread per job, as encode_ht_code_block with `refine`;
 * asynchronous. Jobs, results and pass arrays as tier1_encode_gpu
 * (tier1_cuda.h), except the sizes: each job's output region needs
 * ht_gpu_capacity_bound bytes, its scratch ht_gpu_scratch_bound bytes, and
 * ht_gpu_max_passes pass entries. Throws J2KC_ERR_CUDA if the launch fails.
 */
void ht_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, bool refine, uint8_t *out_bytes,
                   GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                   uint8_t *pass_terminated, void *stream);

/** @brief Output region (with Part 1's leading dummy byte) that always holds a block's segments. */
size_t ht_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes, bool refine);

/** @brief Pass entries to reserve for a job: 3 with `refine`, else 1. */
uint32_t ht_gpu_max_passes(bool refine);

/** @brief Scratch bytes one job needs (a multiple of 16). */
size_t ht_gpu_scratch_bound(uint32_t width, uint32_t height);

}  // namespace j2kc
