/**
 * @file tier1_decode.cu
 * @brief CUDA Tier-1 decoder (ISO/IEC 15444-1 Annex D over the MQ decoder of
 * Annex C.3): a thread per code-block running t1_decode_job(), whose block
 * decoder (tier1_decoder_simt.h) shares every bit-defining piece with the CPU's
 * Tier1Decoder, so the coefficients are the CPU's bit for bit.
 *
 * Why a thread per block: the MQ decoder is one serial chain per block, and
 * a frame has thousands of blocks (a natural DCI 4K frame about 8 000 with
 * data), as many as the GPU keeps resident at once. Flags live in a
 * per-thread scratch in global memory (cached), values are built in place
 * in the coefficient plane.
 *
 * Lanes per warp: the threads of a warp decode different blocks, whose
 * control flow diverges almost at once, so a warp's time tends to the sum of
 * its lanes' blocks rather than the longest. Only `lanes` lanes of each warp
 * take jobs (tier1_bench --gpu sweeps 1..32): one lane gives the shortest
 * single frame, two the most frames a second for a launch of about a frame
 * (registers, not warps, bound the blocks resident on an SM), and a launch
 * of several frames more with four or eight, whose extra chains in flight
 * then outweigh the divergence (tier1_decode_gpu_lanes picks by the
 * launch's jobs an SM; docs/measurements.md). An
 * optional order (the pipeline passes the jobs by
 * decreasing bytes) puts blocks of like work in a warp and starts the
 * longest first, so the tail is short blocks. Several frames' tables go in
 * one launch (T1DecodeBatch, tier1_decode_gpu_batch), their longest blocks
 * first, so that a launch waits once for its slowest block rather than each
 * frame for its own. Since a launch still lasts as long as its largest
 * block, the pipeline leaves the few largest Part-1 blocks of a frame whose
 * batch runs alone to its CPU workers (tier1_decode_host_ranks;
 * T1DecodeTable::first_rank keeps the kernels off them), whose values
 * tier1_place_host_blocks_gpu then copies into the plane. A block's loops
 * are bounded by its pass count (at most 88) and its size, so a hostile
 * stream cannot hang the kernel.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "common/cuda_util.cuh"
#include "common/status.h"
#include "tier1/tier1_decode_cuda.h"
#include "tier1/tier1_decode_job.h"
#include "tier1/tier1_decode_kernel.cuh"

namespace j2kc {
namespace {

/// Small CTAs spread the few thousand threads of a frame over every SM.
constexpr uint32_t kThreadsPerCta = 32;
using t1gpu::kWarpSize;
/// Enough threads to fill the largest GPUs several times over; bounds the scratch.
constexpr uint32_t kMaxThreads = 1u << 16;

// The host's share of a frame (tier1_decode_host_ranks). A block whose bytes
// exceed the frame's bytes over kHostTailDivisor takes one GPU thread longer
// than the whole frame takes a filled GPU, so it alone would set the launch's
// length; the host takes such blocks, never more than the frame's bytes over
// kHostShareDivisor, which the idle CPU workers decode in about the time the
// GPU decodes the rest, and none under kHostMinBytes, which end early in any
// launch (docs/measurements.md, "Decoder Tier-1 batches").
constexpr uint64_t kHostTailDivisor = 2048;
constexpr uint64_t kHostShareDivisor = 16;
constexpr uint32_t kHostMinBytes = 256;
/// Jobs an SM from which a launch takes four, then eight job-taking lanes a
/// warp (about two and four DCI 4K frames' blocks on a 132-SM GPU).
constexpr uint32_t kFourLanesJobsPerSm = 300;
constexpr uint32_t kEightLanesJobsPerSm = 600;
/// Threads a CTA of tier1_place_host_blocks_kernel: a 32x32 block's rows in a few steps.
constexpr uint32_t kPlaceThreads = 256;

__global__ void tier1_decode_kernel(const __grid_constant__ T1DecodeBatch batch, uint32_t positions, uint32_t *scratch,
                                    size_t scratch_words, uint32_t lanes)
{
    t1gpu::for_each_decode_job(batch, positions, scratch, scratch_words, lanes,
                               [&](const T1DecodeTable &t, uint32_t j, const T1DecodeJob &job, uint32_t *mine) {
                                   t.status[j] = t1_decode_job(job, t.bytes, t.segments, t.out, mine, scratch_words);
                               });
}

__global__ void tier1_place_host_blocks_kernel(const T1HostBlock *blocks, const int32_t *values, int32_t *out)
{
    const T1HostBlock b = blocks[blockIdx.x];
    const uint32_t samples = uint32_t{b.width} * b.height;
    for (uint32_t i = threadIdx.x; i < samples; i += blockDim.x) {
        const uint32_t y = i / b.width, x = i % b.width;
        out[b.out_offset + size_t{y} * b.out_stride + x] = values[b.values_offset + i];
    }
}

}  // namespace

uint32_t tier1_decode_host_ranks(const T1DecodeJob *jobs, const uint32_t *order, uint32_t num_jobs)
{
    uint64_t frame_bytes = 0;
    for (uint32_t j = 0; j < num_jobs; ++j) frame_bytes += jobs[j].data_length;
    const uint64_t least = std::max<uint64_t>(kHostMinBytes, frame_bytes / kHostTailDivisor);
    const uint64_t share = frame_bytes / kHostShareDivisor;
    uint64_t taken = 0;
    uint32_t ranks = 0;
    for (; ranks < num_jobs; ++ranks) {
        const T1DecodeJob &job = jobs[order[ranks]];
        const bool ht = (job.style & kT1JobStyleHt) != 0;
        if (job.data_length < least || ht || taken + job.data_length > share) break;
        taken += job.data_length;
    }
    return ranks;
}

void tier1_place_host_blocks_gpu(const T1HostBlock *blocks, uint32_t num_blocks, const int32_t *values, int32_t *out,
                                 void *stream)
{
    if (num_blocks == 0) return;
    tier1_place_host_blocks_kernel<<<num_blocks, kPlaceThreads, 0, static_cast<cudaStream_t>(stream)>>>(blocks, values,
                                                                                                        out);
    check_cuda(cudaGetLastError(), "tier1 host block placement launch");
}

void tier1_decode_order(const T1DecodeJob *jobs, uint32_t num_jobs, uint32_t *order)
{
    // Decreasing length, ties in job order: a stable LSD radix sort of
    // (complemented length, job) pairs a byte of the length at a time, which
    // for a frame's tens of thousands of jobs costs a fraction of a comparison
    // sort; the four bytes' counts come from one pass over the jobs, and a
    // byte equal in every job needs no pass. The arrays stay with the thread,
    // which orders a frame after another.
    thread_local std::vector<uint64_t> keys, spare;
    keys.resize(num_jobs);
    spare.resize(num_jobs);
    size_t start[4][257] = {};
    for (uint32_t j = 0; j < num_jobs; ++j) {
        const uint32_t length = ~jobs[j].data_length;
        keys[j] = uint64_t{length} << 32 | j;
        for (uint32_t d = 0; d < 4; ++d) ++start[d][(length >> 8 * d & 0xFF) + 1];
    }
    for (uint32_t d = 0; d < 4; ++d) {
        size_t *digit = start[d];
        if (std::find(digit, digit + 257, size_t{num_jobs}) != digit + 257) continue;
        for (uint32_t v = 1; v < 257; ++v) digit[v] += digit[v - 1];
        const uint32_t shift = 32 + 8 * d;
        for (const uint64_t k : keys) spare[digit[k >> shift & 0xFF]++] = k;
        keys.swap(spare);
    }
    for (uint32_t i = 0; i < num_jobs; ++i) order[i] = static_cast<uint32_t>(keys[i]);
}

uint32_t tier1_decode_gpu_lanes(uint32_t lanes, uint32_t positions)
{
    if (lanes != 0) return std::min(lanes, kWarpSize);
    const uint32_t per_sm = positions / multiprocessor_count();
    return per_sm >= kEightLanesJobsPerSm ? 8 : per_sm >= kFourLanesJobsPerSm ? 4 : kT1DecodeDefaultLanes;
}

/** Warps of `lanes` job-taking threads: enough for one job each, up to kMaxThreads. */
uint32_t decode_warps(uint32_t num_jobs, uint32_t lanes)
{
    const uint32_t n = std::min(std::max(num_jobs, 1u), kMaxThreads);
    return (n + lanes - 1) / lanes;
}

uint32_t tier1_decode_gpu_threads(uint32_t num_jobs, uint32_t lanes)
{
    lanes = tier1_decode_gpu_lanes(lanes, num_jobs);
    return std::min(decode_warps(num_jobs, lanes) * lanes, std::max(num_jobs, 1u));
}

T1DecodeBatch tier1_decode_single(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes,
                                  const CodewordSegment *segments, int32_t *out, uint8_t *status, const uint32_t *order)
{
    T1DecodeBatch batch;
    batch.tables[0] = {jobs, bytes, segments, order, out, status, num_jobs};
    batch.num_tables = 1;
    return batch;
}

uint32_t tier1_decode_batch_positions(const T1DecodeBatch &batch)
{
    J2KC_CHECK_ARG(batch.num_tables <= kT1DecodeMaxTables, "%u job tables in a batch", batch.num_tables);
    uint64_t longest = 0;
    for (uint32_t t = 0; t < batch.num_tables; ++t) {
        const T1DecodeTable &table = batch.tables[t];
        J2KC_CHECK_ARG(table.first_rank <= table.num_jobs && (table.first_rank == 0 || table.order),
                       "first rank %u of %u jobs", table.first_rank, table.num_jobs);
        longest = std::max<uint64_t>(longest, table.num_jobs - table.first_rank);
    }
    const uint64_t positions = longest * batch.num_tables;
    J2KC_CHECK_LIMIT(positions <= UINT32_MAX, "%llu Tier-1 jobs in a batch",
                     static_cast<unsigned long long>(positions));
    return static_cast<uint32_t>(positions);
}

void tier1_decode_gpu_batch(const T1DecodeBatch &batch, uint32_t *scratch, size_t scratch_words, void *stream,
                            uint32_t lanes)
{
    const uint32_t positions = tier1_decode_batch_positions(batch);
    if (positions == 0) return;
    lanes = tier1_decode_gpu_lanes(lanes, positions);
    const uint32_t warps = decode_warps(positions, lanes);
    static_assert(kThreadsPerCta == kWarpSize, "a CTA is one warp");
    tier1_decode_kernel<<<warps, kThreadsPerCta, 0, static_cast<cudaStream_t>(stream)>>>(batch, positions, scratch,
                                                                                         scratch_words, lanes);
    check_cuda(cudaGetLastError(), "tier1 decode kernel launch");
}

void tier1_decode_gpu(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes, const CodewordSegment *segments,
                      int32_t *out, uint32_t *scratch, size_t scratch_words, uint8_t *status, void *stream,
                      uint32_t lanes, const uint32_t *order)
{
    tier1_decode_gpu_batch(tier1_decode_single(jobs, num_jobs, bytes, segments, out, status, order), scratch,
                           scratch_words, stream, lanes);
}

}  // namespace j2kc
