/**
 * @file ht_decode_cuda.h
 * @brief Host interface of the CUDA HT block decoder (ISO/IEC 15444-15): the
 * HT jobs (style 0x40) of a Tier-1 job table (tier1_decode_job.h) decoded in one
 * launch, a warp per code-block, each exactly as Tier1Decoder::decode
 * decodes it (ht_decode_job.h). The Part-1 kernel (tier1_decode_gpu) reports
 * HT jobs as unsupported and zeroes them; where a table has Part-1 jobs too,
 * run this one after it on the same stream (it skips the Part-1 jobs). Same
 * tables as tier1_decode_gpu (tier1_decode_cuda.h), every pointer device
 * memory, the stream a cudaStream_t passed as void *; no scratch (a warp
 * keeps its block in shared memory).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/codeword_segment.h"
#include "tier1/tier1_decode_cuda.h"
#include "tier1/tier1_decode_job.h"

namespace j2kc {

/**
 * @brief Decodes the HT jobs of jobs[0, num_jobs) on `stream` (asynchronous),
 * in `order` when given: status[j] of each HT job j gets its
 * T1DecodeJobStatus; other jobs and their statuses are not touched. Throws
 * J2KC_ERR_CUDA if the launch fails.
 */
void ht_decode_gpu(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes, const CodewordSegment *segments,
                   int32_t *out, uint8_t *status, void *stream, const uint32_t *order = nullptr);

/**
 * @brief The HT jobs of every table of a batch in one launch (asynchronous),
 * in the batch's order. `max_quads`: the quads (2 x 2 samples) of its
 * largest HT block, where known (0: not known); a warp takes as many
 * positions as blocks of that size fit its shared memory, up to six: six
 * 32 x 32 blocks, three 64 x 64.
 */
void ht_decode_gpu_batch(const T1DecodeBatch &batch, void *stream, uint32_t max_quads = 0);

}  // namespace j2kc
