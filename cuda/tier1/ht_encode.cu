/**
 * @file ht_encode.cu
 * @brief CUDA HTJ2K block encoder (ISO/IEC 15444-15 cleanup pass and coding
 * sets): a thread per code-block over the shared job of ht_encode_job.h,
 * byte-identical to encode_ht_code_block(), and the chosen sets' tables for
 * the GPU Tier-2 (ht_coding_sets.h). The HT coder has no arithmetic-coding chain, so a
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
    ht_encode_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, htenc::HtCodingSets *sets,
                     const uint32_t *top_plane, uint8_t *out_bytes, GpuCodeBlockResult *__restrict__ results,
                     uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    results[j] = htenc::ht_encode_job(job, sets ? sets + j : nullptr, sets ? *top_plane : 0, out_bytes, pass_end,
                                      pass_distortion, pass_terminated);
}

/** A job's modelled cleanup costs into the frame's (integer sums: any order gives the CPU's). */
__global__ void ht_cleanup_model_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs,
                                        unsigned long long *model)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    uint64_t local[htenc::kHtPlaneBins] = {};
    htenc::ht_add_cleanup_model(reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride,
                                job.width, job.height, local);
    for (uint32_t b = 0; b < htenc::kHtPlaneBins; ++b)
        if (local[b]) atomicAdd(model + b, static_cast<unsigned long long>(local[b]));
}

__global__ void ht_top_plane_kernel(const uint64_t *model, uint64_t budget, uint32_t *top_plane)
{
    *top_plane = htenc::ht_sets_top_plane(model, budget);
}

__global__ void ht_choose_sets_kernel(const GpuCodeBlockJob *__restrict__ jobs,
                                      const htenc::HtCodingSets *__restrict__ sets, uint32_t num_jobs,
                                      const uint16_t *__restrict__ points, HtChosenSetTables out)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > num_jobs) return;
    out.pass_offset[j] = j * htenc::kHtSetPasses;
    if (j == num_jobs) return;
    const htenc::HtChosenSet c = htenc::ht_chosen_set(sets[j], points[j], jobs[j].num_bitplanes);
    out.passes[j] = static_cast<uint16_t>(c.passes);
    out.num_passes[j] = c.passes;
    out.zero_bitplanes[j] = c.zero_bitplanes;
    out.byte_offset[j] = jobs[j].out_offset + 1 + c.start;
    for (uint32_t k = 0; k < htenc::kHtSetPasses; ++k) {
        out.pass_end[j * htenc::kHtSetPasses + k] = c.end[k];
        out.pass_terminated[j * htenc::kHtSetPasses + k] = htenc::ht_set_pass_terminated(k);
    }
}

}  // namespace

void ht_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, htenc::HtCodingSets *sets, const uint32_t *top_plane,
                   uint8_t *out_bytes, GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                   uint8_t *pass_terminated, void *stream)
{
    if (num_jobs == 0) return;
    const uint32_t ctas = (num_jobs + kThreadsPerCta - 1) / kThreadsPerCta;
    ht_encode_kernel<<<ctas, kThreadsPerCta, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs, num_jobs, sets, top_plane, out_bytes, results, pass_end, pass_distortion, pass_terminated);
    check_cuda(cudaGetLastError(), "HT encode kernel launch");
}

void ht_plan_sets_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t budget, uint64_t *model,
                      uint32_t *top_plane, void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    check_cuda(cudaMemsetAsync(model, 0, htenc::kHtPlaneBins * sizeof(uint64_t), s), "HT cost model reset");
    if (num_jobs)
        ht_cleanup_model_kernel<<<(num_jobs + kThreadsPerCta - 1) / kThreadsPerCta, kThreadsPerCta, 0, s>>>(
            jobs, num_jobs, reinterpret_cast<unsigned long long *>(model));
    ht_top_plane_kernel<<<1, 1, 0, s>>>(model, budget, top_plane);
    check_cuda(cudaGetLastError(), "HT set planning kernels launch");
}

void ht_choose_sets_gpu(const GpuCodeBlockJob *jobs, const htenc::HtCodingSets *sets, uint32_t num_jobs,
                        const uint16_t *points, const HtChosenSetTables &out, void *stream)
{
    constexpr uint32_t kThreads = 256;
    ht_choose_sets_kernel<<<(num_jobs + kThreads) / kThreads, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs, sets, num_jobs, points, out);
    check_cuda(cudaGetLastError(), "HT set choice kernel launch");
}

}  // namespace j2kc
