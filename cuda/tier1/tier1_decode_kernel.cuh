/**
 * @file tier1_decode_kernel.cuh
 * @brief How the decode kernels (Part 1's of tier1_decode.cu, HT's of
 * ht_decode.cu) hand out a job table's jobs to their threads: only `lanes`
 * lanes of each warp take jobs (tier1_decode_cuda.h says why), numbered
 * densely, each with its own scratch area, in `order` when one is given.
 * Both kernels take the same jobs on the same threads, so they share the
 * scratch that tier1_decode_gpu_threads() sized.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/tier1_decode_job.h"

namespace j2kc {
namespace t1gpu {

constexpr uint32_t kWarpSize = 32;

/**
 * Calls decode(j, job, scratch) for every job this thread takes. A template
 * over the block decoder, so that its call inlines into the kernel.
 */
template <class Decode>
__device__ __forceinline__ void for_each_decode_job(const T1DecodeJob *jobs, uint32_t num_jobs, uint32_t *scratch,
                                                    size_t scratch_words, uint32_t lanes, const uint32_t *order,
                                                    Decode decode)
{
    const uint32_t lane = threadIdx.x % kWarpSize;
    if (lane >= lanes) return;
    const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarpSize;
    const uint32_t thread = warp * lanes + lane;  // the job-taking threads, numbered densely
    const uint32_t threads = gridDim.x * blockDim.x / kWarpSize * lanes;
    uint32_t *mine = scratch + size_t{thread} * scratch_words;
    for (uint32_t i = thread; i < num_jobs; i += threads) {
        const uint32_t j = order ? order[i] : i;
        if (j >= num_jobs) continue;
        const T1DecodeJob job = jobs[j];
        decode(j, job, mine);
    }
}

}  // namespace t1gpu
}  // namespace j2kc
