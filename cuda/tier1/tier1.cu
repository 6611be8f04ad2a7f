/**
 * @file tier1.cu
 * @brief CUDA Tier-1 encoder (ISO/IEC 15444-1 Annex D over the MQ coder of
 * Annex C): many code-blocks of a frame in one launch.
 *
 * Design (first version): one thread codes one code-block, running the
 * J2KC_HD coder of t1_encoder_core.h, the very code the CPU reference runs,
 * so its output is identical by construction (the Gpu tests check it). The
 * coder's state (the PassRunner: MQ registers A, C, CT, the byte pointer and
 * the 19 context bytes) lives in registers for a whole pass; the flag words
 * and magnitudes live in the job's scratch area in global memory, which
 * stays in L1/L2 while the block is coded (about 8 KiB for a 32x32 block).
 * Thousands of blocks (a 4K frame has about 26 000) keep every SM busy with
 * independent serial coders; jobs sorted by size keep a warp's threads
 * finishing together.
 *
 * What this does not do yet (the next step, issue 3): the sample-parallel
 * context modelling of papers 001/003 (a warp per block computing the
 * significance, refinement and cleanup decisions of a stripe at once from
 * the rho/tau states) feeding one serial MQ coder per block as in 004. The
 * per-sample work here is the same as the CPU's, so the expected speed is
 * that of the CPU coder per thread (a few cycles per sample-plane on the
 * CPU, far more per GPU thread, latency-bound), spread over ~26k threads.
 */
#include <cuda_runtime.h>

#include "common/cuda_util.cuh"
#include "tier1/t1_encoder_core.h"
#include "tier1/t1_gpu_job.h"
#include "tier1/tier1_gpu.h"

namespace j2kc {
namespace {

constexpr uint32_t kThreadsPerCta = 64;

__global__ void __launch_bounds__(kThreadsPerCta)
    tier1_encode_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, uint8_t *out_bytes,
                        GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end,
                        uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    results[j] = t1core::t1_encode_job(job, out_bytes, pass_end, pass_distortion, pass_terminated);
}

}  // namespace

void tier1_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint8_t *out_bytes,
                      GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                      uint8_t *pass_terminated, void *stream)
{
    if (num_jobs == 0) return;
    const uint32_t ctas = (num_jobs + kThreadsPerCta - 1) / kThreadsPerCta;
    tier1_encode_kernel<<<ctas, kThreadsPerCta, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs, num_jobs, out_bytes, results, pass_end, pass_distortion, pass_terminated);
    check_cuda(cudaGetLastError(), "tier1_encode_kernel launch");
}

size_t tier1_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes)
{
    return t1core::t1_encode_buffer_bound(width, height, num_bitplanes);
}

size_t tier1_gpu_scratch_bound(uint32_t width, uint32_t height)
{
    return t1core::t1_scratch_layout(width, height).total;
}

uint32_t tier1_gpu_max_passes(uint8_t num_bitplanes)
{
    return num_bitplanes == 0 ? 0u : 3u * num_bitplanes - 2u;
}

}  // namespace j2kc
