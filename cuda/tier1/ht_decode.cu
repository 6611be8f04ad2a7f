/**
 * @file ht_decode.cu
 * @brief CUDA HT block decoder (ISO/IEC 15444-15): a thread per HT
 * code-block running t1_decode_job_ht() (ht_decode_job.h), whose block
 * decoder (ht_block_decoder_core.h) is the very code the CPU's
 * Tier1Decoder runs, so the coefficients are the CPU's bit for bit.
 *
 * A kernel of its own, beside the Part-1 one (tier1_decode.cu): that kernel's
 * registers and code stay as they are, and this one runs only when a table
 * has HT jobs. Threads take jobs as the Part-1 kernel's do (the same lanes,
 * order and scratch areas) and skip the Part-1 ones. A block's loops are
 * bounded by its size and its segments, so a hostile stream cannot hang it.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "tier1/ht_decode_cuda.h"
#include "tier1/ht_decode_job.h"
#include "tier1/tier1_decode_cuda.h"
#include "tier1/tier1_decode_kernel.cuh"

namespace j2kc {
namespace {

constexpr uint32_t kThreadsPerCta = 32;

__global__ void ht_decode_kernel(const __grid_constant__ T1DecodeBatch batch, uint32_t positions, uint32_t *scratch,
                                 size_t scratch_words, uint32_t lanes)
{
    t1gpu::for_each_decode_job(batch, positions, scratch, scratch_words, lanes,
                               [&](const T1DecodeTable &t, uint32_t j, const T1DecodeJob &job, uint32_t *mine) {
                                   if (job.style & kT1JobStyleHt)
                                       t.status[j] = t1_decode_job_ht(job, t.bytes, t.segments, t.out, mine,
                                                                      scratch_words);
                               });
}

}  // namespace

void ht_decode_gpu_batch(const T1DecodeBatch &batch, uint32_t *scratch, size_t scratch_words, void *stream,
                         uint32_t lanes)
{
    const uint32_t positions = tier1_decode_batch_positions(batch);
    if (positions == 0) return;
    lanes = tier1_decode_gpu_lanes(lanes);
    // As many job-taking threads as tier1_decode_gpu_batch sized the scratch for.
    const uint32_t threads = tier1_decode_gpu_threads(positions, lanes);
    const uint32_t warps = (threads + lanes - 1) / lanes;
    ht_decode_kernel<<<warps, kThreadsPerCta, 0, static_cast<cudaStream_t>(stream)>>>(batch, positions, scratch,
                                                                                        scratch_words, lanes);
    check_cuda(cudaGetLastError(), "HT decode kernel launch");
}

void ht_decode_gpu(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes, const CodewordSegment *segments,
                   int32_t *out, uint32_t *scratch, size_t scratch_words, uint8_t *status, void *stream,
                   uint32_t lanes, const uint32_t *order)
{
    ht_decode_gpu_batch(tier1_decode_single(jobs, num_jobs, bytes, segments, out, status, order), scratch,
                        scratch_words, stream, lanes);
}

}  // namespace j2kc
