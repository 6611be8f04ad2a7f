/**
 * @file ht_encode.cu
 * @brief CUDA HTJ2K block encoder (ISO/IEC 15444-15 cleanup pass): a thread
 * per code-block over the shared job of ht_encode_job.h, byte-identical to
 * encode_ht_code_block(). The HT coder has no arithmetic-coding chain, so a
 * block's work is a single sweep over its quads; a warp codes 32 neighbouring
 * blocks of a band side by side.
 */
#include <cuda_runtime.h>

#include "common/cuda_util.cuh"
#include "tier1/ht_block_encoder.h"
#include "tier1/ht_encode_job.h"

namespace j2kc {
namespace {

constexpr uint32_t kThreadsPerCta = 64;

__global__ void __launch_bounds__(kThreadsPerCta)
    ht_encode_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, bool refine, uint8_t *out_bytes,
                     GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end, uint64_t *pass_distortion,
                     uint8_t *pass_terminated)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    results[j] = htenc::ht_encode_job(job, refine, out_bytes, pass_end, pass_distortion, pass_terminated);
}

}  // namespace

void ht_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, bool refine, uint8_t *out_bytes,
                   GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                   uint8_t *pass_terminated, void *stream)
{
    if (num_jobs == 0) return;
    const uint32_t ctas = (num_jobs + kThreadsPerCta - 1) / kThreadsPerCta;
    ht_encode_kernel<<<ctas, kThreadsPerCta, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs, num_jobs, refine, out_bytes, results, pass_end, pass_distortion, pass_terminated);
    check_cuda(cudaGetLastError(), "HT encode kernel launch");
}

}  // namespace j2kc
