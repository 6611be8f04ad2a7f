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
                     uint8_t *out_bytes, GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end, uint64_t *pass_distortion,
                     uint8_t *pass_terminated)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    results[j] = htenc::ht_encode_job(job, sets ? sets + j : nullptr, out_bytes, pass_end, pass_distortion,
                                      pass_terminated);
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

void ht_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, htenc::HtCodingSets *sets, uint8_t *out_bytes,
                   GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                   uint8_t *pass_terminated, void *stream)
{
    if (num_jobs == 0) return;
    const uint32_t ctas = (num_jobs + kThreadsPerCta - 1) / kThreadsPerCta;
    ht_encode_kernel<<<ctas, kThreadsPerCta, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs, num_jobs, sets, out_bytes, results, pass_end, pass_distortion, pass_terminated);
    check_cuda(cudaGetLastError(), "HT encode kernel launch");
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
