/**
 * @file tier1.cu
 * @brief CUDA Tier-1 encoder (ISO/IEC 15444-1 Annex D over the MQ coder of
 * Annex C): many code-blocks of a frame in one launch, byte-identical to
 * encode_code_block().
 *
 * Kernels, one path per GpuTier1Kernel, all over shared J2KC_HD code:
 * - kTwoPhase (default, tier1_two_phase_coder.h): tier1_model_kernel, a warp per
 *   code-block, forms every pass's decisions (the sample-parallel context
 *   modelling below) into a byte stream in the job's scratch; then
 *   tier1_code_kernel, a thread per code-block, MQ-codes them, so the
 *   serial arithmetic coding runs 32 blocks wide (register coder, CLZ
 *   renormalisation, contexts and transition table in shared memory).
 *   About twice as fast as the warp kernel (docs/measurements.md). The
 *   coding phase is latency-bound (the longest block's decision chain sets
 *   its time); the modelling phase is issue-bound.
 * - kWarpPerBlock, tier1_encode_warp_kernel: a warp per code-block,
 *   tier1_warp_coder.h. The 32 lanes form the decisions of 32 columns of a
 *   stripe at once (the sample-parallel context modelling of Matela et al.,
 *   with the significance pass's left-to-right dependency resolved by
 *   rounds of a monotone recurrence), lane 0 feeds them to the MQ coder.
 *   Block state is one 16-bit word per stripe column plus the magnitudes, in
 *   the job's scratch (coalesced across lanes); the lane exchange buffers
 *   are in shared memory (about 2.1 KiB a warp, 4 warps a CTA).
 * - kThreadPerBlock, tier1_encode_kernel: a thread per code-block running
 *   the CPU's serial coder (tier1_encoder_core.h) itself; the GPU twin of the
 *   reference, kept for comparison and as the fallback that is identical by
 *   construction.
 */
#include <cuda_runtime.h>

#include "common/cuda_util.cuh"
#include "tier1/tier1_cuda.h"
#include "tier1/tier1_encode_job.h"
#include "tier1/tier1_encoder_core.h"
#include "tier1/tier1_plane_floor.h"

namespace j2kc {
namespace {

constexpr uint32_t kThreadsPerCta = 64;
constexpr uint32_t kWarpsPerCta = 4;
/// Lets ptxas use up to 128 registers: without it, it picks 64 and spills;
/// with it, no spills and still 5 CTAs (20 warps) per SM.
constexpr uint32_t kMinCtasPerSm = 4;
/// Phase 1 of kTwoPhase keeps no coder state; asks for 8 CTAs (32 warps) per SM
/// (64 registers, a small spill), slightly faster than 6 (docs/measurements.md;
/// phase 3 of tier1_encode_gpu_phase is the probe).
constexpr uint32_t kModelMinCtasPerSm = 8;
/// Phase 2: a warp per CTA, so the few warps of a frame spread over all SMs.
constexpr uint32_t kCodeThreadsPerCta = 32;

/** One thread per job over the serial coder (tier1_encoder_core.h). */
__global__ void __launch_bounds__(kThreadsPerCta)
    tier1_encode_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, uint8_t *out_bytes,
                        GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end, uint64_t *pass_distortion,
                        uint8_t *pass_terminated)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    results[j] = t1core::t1_encode_job(job, out_bytes, pass_end, pass_distortion, pass_terminated);
}

/** One warp per job (tier1_warp_coder.h): lanes form a chunk's decisions,
 *  lane 0 codes them. A warp's lanes always share a job, so the early
 *  return leaves no lane waiting at a __syncwarp. */
__global__ void __launch_bounds__(kWarpsPerCta * 32, kMinCtasPerSm)
    tier1_encode_warp_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, uint8_t *out_bytes,
                             GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end, uint64_t *pass_distortion,
                             uint8_t *pass_terminated)
{
    __shared__ t1core::T1WarpShared shared[kWarpsPerCta];
    const uint32_t warp = threadIdx.x >> 5;
    const uint32_t j = blockIdx.x * kWarpsPerCta + warp;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    const GpuCodeBlockResult res =
        t1core::t1_warp_encode_job(shared[warp], job, out_bytes, pass_end, pass_distortion, pass_terminated);
    if ((threadIdx.x & 31u) == 0) results[j] = res;
}

/** Phase 1 of kTwoPhase: a warp per job forms its decisions (t1_model_job).
 *  No MQ state, so fewer registers than the warp kernel: more warps per SM. */
template <uint32_t kMinCtas>
__global__ void __launch_bounds__(kWarpsPerCta * 32, kMinCtas)
    tier1_model_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs,
                       GpuCodeBlockResult *__restrict__ results, uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    __shared__ t1core::T1WarpShared shared[kWarpsPerCta];
    const uint32_t warp = threadIdx.x >> 5;
    const uint32_t j = blockIdx.x * kWarpsPerCta + warp;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    const GpuCodeBlockResult res = t1core::t1_model_job(shared[warp], job, pass_distortion, pass_terminated);
    if ((threadIdx.x & 31u) == 0) results[j] = res;
}

/** Phase 2 of kTwoPhase: a thread per job MQ-codes its decisions
 *  (t1_code_job); contexts and the transition table in shared memory, the
 *  contexts one 32-bit word per (context, thread), so a warp's lanes hit
 *  32 different banks. */
__global__ void __launch_bounds__(kCodeThreadsPerCta)
    tier1_code_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, uint8_t *out_bytes,
                      GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end)
{
    __shared__ t1core::MqWordTransition table[94];
    __shared__ uint32_t cx[kT1NumContexts * kCodeThreadsPerCta];
    for (uint32_t i = threadIdx.x; i < 94; i += blockDim.x) table[i] = t1core::kMqWordTableDevice.t[i];
    __syncthreads();
    const uint32_t j = blockIdx.x * kCodeThreadsPerCta + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    GpuCodeBlockResult res = results[j];
    if (res.status != kGpuTier1Ok || res.num_passes == 0) return;
    t1core::t1_code_job(job, res, out_bytes, pass_end, cx + threadIdx.x, kCodeThreadsPerCta, table);
    results[j] = res;
}

__device__ uint32_t warp_sum(uint32_t v)
{
    for (uint32_t d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d);
    return v;
}

__device__ uint32_t warp_max(uint32_t v)
{
    for (uint32_t d = 16; d > 0; d >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, d));
    return v;
}

static_assert(htenc::kHtPlaneBins == 32, "a lane keeps one plane of the cost model");

/** A warp per job adds the job's modelled costs (ht_add_cleanup_model's
 *  integers: the lanes take 32 quads at a time, their costs at each plane
 *  summed across the warp) to the frame's; lane p keeps plane p. A block's
 *  sums fit 32 bits (at most 1024 quads of 135 bits a plane). */
__global__ void __launch_bounds__(kWarpsPerCta * 32)
    tier1_plane_model_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, unsigned long long *model)
{
    const uint32_t lane = threadIdx.x & 31u;
    const uint32_t j = blockIdx.x * kWarpsPerCta + (threadIdx.x >> 5);
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    const auto *coeffs = reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs));
    const uint32_t quads_wide = (job.width + 1u) / 2u, quads = quads_wide * ((job.height + 1u) / 2u);
    uint32_t plane_bits = 0, block_top = 0;
    for (uint32_t first = 0; first < quads; first += 32) {
        const uint32_t q = first + lane;
        uint32_t length[4] = {}, top = 0;
        if (q < quads)
            top = htenc::ht_quad_lengths(coeffs, job.stride, job.width, job.height, q % quads_wide * 2,
                                         q / quads_wide * 2, length);
        const uint32_t quads_top = warp_max(top);
        for (uint32_t p = 0; p < quads_top; ++p) {
            const uint32_t sum = warp_sum(p < top ? htenc::ht_quad_model_bits(length, top, p) : 0u);
            if (lane == p) plane_bits += sum;
        }
        block_top = max(block_top, quads_top);
    }
    if (lane < block_top) plane_bits += htenc::kHtBlockModelBits;
    if (plane_bits) atomicAdd(model + lane, static_cast<unsigned long long>(plane_bits));
}

/** Every job's lowest_plane from the frame's summed model. */
__global__ void tier1_lowest_plane_kernel(GpuCodeBlockJob *jobs, uint32_t num_jobs, const uint64_t *model,
                                          uint64_t budget)
{
    __shared__ uint32_t lowest;
    if (threadIdx.x == 0) lowest = t1core::t1_lowest_plane(model, budget);
    __syncthreads();
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j < num_jobs) jobs[j].lowest_plane = static_cast<uint8_t>(lowest);
}

}  // namespace

void tier1_plane_model_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t *model, void *stream)
{
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    check_cuda(cudaMemsetAsync(model, 0, htenc::kHtPlaneBins * sizeof(uint64_t), s), "plane cost model reset");
    if (num_jobs)
        tier1_plane_model_kernel<<<(num_jobs + kWarpsPerCta - 1) / kWarpsPerCta, kWarpsPerCta * 32, 0, s>>>(
            jobs, num_jobs, reinterpret_cast<unsigned long long *>(model));
    check_cuda(cudaGetLastError(), "plane cost model kernel launch");
}

void tier1_plan_planes_gpu(GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t budget, uint64_t *model, void *stream)
{
    if (num_jobs == 0) return;
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    tier1_plane_model_gpu(jobs, num_jobs, model, stream);
    constexpr uint32_t kThreads = 256;
    tier1_lowest_plane_kernel<<<(num_jobs + kThreads - 1) / kThreads, kThreads, 0, s>>>(jobs, num_jobs, model, budget);
    check_cuda(cudaGetLastError(), "tier1 lowest plane kernel launch");
}

void tier1_encode_gpu_phase(int phase, const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint8_t *out_bytes,
                            GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                            uint8_t *pass_terminated, void *stream)
{
    if (num_jobs == 0) return;
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (phase == 1) {
        const uint32_t ctas = (num_jobs + kWarpsPerCta - 1) / kWarpsPerCta;
        tier1_model_kernel<kModelMinCtasPerSm>
            <<<ctas, kWarpsPerCta * 32, 0, s>>>(jobs, num_jobs, results, pass_distortion, pass_terminated);
        check_cuda(cudaGetLastError(), "tier1 model kernel launch");
    } else if (phase == 3) {
        // Phase 1 with fewer CTAs per SM and more registers (a tuning probe).
        const uint32_t ctas = (num_jobs + kWarpsPerCta - 1) / kWarpsPerCta;
        tier1_model_kernel<6>
            <<<ctas, kWarpsPerCta * 32, 0, s>>>(jobs, num_jobs, results, pass_distortion, pass_terminated);
        check_cuda(cudaGetLastError(), "tier1 model kernel launch");
    } else {
        const uint32_t ctas = (num_jobs + kCodeThreadsPerCta - 1) / kCodeThreadsPerCta;
        tier1_code_kernel<<<ctas, kCodeThreadsPerCta, 0, s>>>(jobs, num_jobs, out_bytes, results, pass_end);
        check_cuda(cudaGetLastError(), "tier1 code kernel launch");
    }
}

void tier1_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint8_t *out_bytes, GpuCodeBlockResult *results,
                      uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated, void *stream,
                      GpuTier1Kernel kernel)
{
    if (num_jobs == 0) return;
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (kernel == GpuTier1Kernel::kTwoPhase) {
        tier1_encode_gpu_phase(1, jobs, num_jobs, out_bytes, results, pass_end, pass_distortion, pass_terminated,
                               stream);
        tier1_encode_gpu_phase(2, jobs, num_jobs, out_bytes, results, pass_end, pass_distortion, pass_terminated,
                               stream);
        return;
    }
    if (kernel == GpuTier1Kernel::kThreadPerBlock) {
        const uint32_t ctas = (num_jobs + kThreadsPerCta - 1) / kThreadsPerCta;
        tier1_encode_kernel<<<ctas, kThreadsPerCta, 0, s>>>(jobs, num_jobs, out_bytes, results, pass_end,
                                                            pass_distortion, pass_terminated);
    } else {
        const uint32_t ctas = (num_jobs + kWarpsPerCta - 1) / kWarpsPerCta;
        tier1_encode_warp_kernel<<<ctas, kWarpsPerCta * 32, 0, s>>>(jobs, num_jobs, out_bytes, results, pass_end,
                                                                    pass_distortion, pass_terminated);
    }
    check_cuda(cudaGetLastError(), "tier1 encode kernel launch");
}

size_t tier1_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes)
{
    return t1core::t1_encode_buffer_bound(width, height, num_bitplanes);
}

size_t tier1_gpu_scratch_bound(uint32_t width, uint32_t height)
{
    return t1core::t1_scratch_layout(width, height).total;
}

size_t tier1_gpu_scratch_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes)
{
    return t1core::t1_scratch_layout(width, height, num_bitplanes).total;
}

uint32_t tier1_gpu_max_passes(uint8_t num_bitplanes) { return num_bitplanes == 0 ? 0u : 3u * num_bitplanes - 2u; }

}  // namespace j2kc
