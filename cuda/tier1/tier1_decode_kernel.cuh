/**
 * @file tier1_decode_kernel.cuh
 * @brief How the Part-1 decode kernel (tier1_decode.cu) hands out the jobs
 * of a batch of job tables (tier1_decode_cuda.h's T1DecodeBatch) to its
 * threads: only `lanes` lanes of each warp take jobs (tier1_decode_cuda.h
 * says why), numbered densely, each with its own scratch area that
 * tier1_decode_gpu_threads() sized; they step through the batch's positions,
 * each table's jobs in its order from its first_rank on, the tables round
 * robin (the HT kernel of ht_decode.cu takes the same positions, several a
 * warp).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/tier1_decode_cuda.h"
#include "tier1/tier1_decode_job.h"

namespace j2kc {
namespace t1gpu {

constexpr uint32_t kWarpSize = 32;

/**
 * Calls decode(table, j, job, scratch) for every job this thread takes. A
 * template over the block decoder, so that its call inlines into the kernel.
 * `batch` is the kernel's __grid_constant__ parameter: its tables are read
 * where they lie, not copied per thread.
 */
template <class Decode>
__device__ __forceinline__ void for_each_decode_job(const T1DecodeBatch &batch, uint32_t positions, uint32_t *scratch,
                                                    size_t scratch_words, uint32_t lanes, Decode decode)
{
    const uint32_t lane = threadIdx.x % kWarpSize;
    if (lane >= lanes) return;
    const uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) / kWarpSize;
    const uint32_t thread = warp * lanes + lane;  // the job-taking threads, numbered densely
    const uint32_t threads = gridDim.x * blockDim.x / kWarpSize * lanes;
    uint32_t *mine = scratch + size_t{thread} * scratch_words;
    for (uint32_t i = thread; i < positions; i += threads) {
        const T1DecodeTable &table = batch.tables[i % batch.num_tables];
        const uint32_t step = i / batch.num_tables;
        if (step >= table.num_jobs - table.first_rank) continue;  // a shorter table than the longest
        const uint32_t rank = step + table.first_rank;            // ranks before it are the host's
        const uint32_t j = table.order ? table.order[rank] : rank;
        if (j >= table.num_jobs) continue;
        const T1DecodeJob job = table.jobs[j];
        decode(table, j, job, mine);
    }
}

}  // namespace t1gpu
}  // namespace j2kc
