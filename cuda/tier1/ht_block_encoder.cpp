/**
 * @file ht_block_encoder.cpp
 * @brief The HTJ2K block encoder on the CPU: argument checks that throw,
 * reusable scratch, and the call into the J2KC_HD job of ht_gpu_job.h that
 * the CUDA kernel runs too, so both backends write the same bytes.
 */
#include "tier1/ht_block_encoder.h"

#include <vector>

#include "common/status.h"
#include "tier1/ht_gpu_job.h"

namespace j2kc {

void encode_ht_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                          uint8_t num_bitplanes, EncodedCodeBlock &out)
{
    J2KC_CHECK_ARG(width <= kTier1MaxSide && height <= kTier1MaxSide && uint64_t{width} * height <= kTier1MaxSamples,
                   "code-block %ux%u exceeds 1024 per side or 4096 samples", width, height);
    J2KC_CHECK_ARG(num_bitplanes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", num_bitplanes,
                   kTier1MaxBitplanes);
    out.data.clear();
    out.passes.clear();
    out.zero_bitplanes = num_bitplanes;
    if (width == 0 || height == 0) return;

    thread_local std::vector<uint8_t> bytes, scratch;
    const size_t capacity = htenc::ht_job_capacity_bound(width, height, num_bitplanes);
    if (bytes.size() < capacity) bytes.resize(capacity);
    const size_t scratch_bytes = htenc::ht_scratch_layout(width, height).total;
    if (scratch.size() < scratch_bytes) scratch.resize(scratch_bytes);

    GpuCodeBlockJob job{};
    job.coeffs = reinterpret_cast<uint64_t>(coeffs);
    job.scratch = reinterpret_cast<uint64_t>(scratch.data());
    job.out_offset = 0;
    job.out_capacity = static_cast<uint32_t>(capacity);
    job.pass_offset = 0;
    job.stride = static_cast<uint32_t>(stride);
    job.width = static_cast<uint16_t>(width);
    job.height = static_cast<uint16_t>(height);
    job.num_bitplanes = num_bitplanes;
    uint32_t end = 0;
    uint64_t distortion = 0;
    uint8_t terminated = 0;
    const GpuCodeBlockResult r = htenc::ht_encode_job(job, bytes.data(), &end, &distortion, &terminated);
    J2KC_CHECK_ARG(r.status != kGpuTier1DataTooDeep, "coefficient needs %u bit-planes, band has %u",
                   r.data_bitplanes, num_bitplanes);
    J2KC_CHECK_ARG(r.status == kGpuTier1Ok, "HT block encoder status %u", r.status);
    out.zero_bitplanes = r.zero_bitplanes;
    if (r.num_passes == 0) return;
    out.passes.resize(1);
    out.passes[0].end = end;
    out.passes[0].distortion = distortion;
    out.passes[0].terminated = terminated != 0;
    out.data.assign(bytes.data() + 1, bytes.data() + 1 + r.bytes);
}

size_t ht_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes)
{
    return htenc::ht_job_capacity_bound(width, height, num_bitplanes);
}

size_t ht_gpu_scratch_bound(uint32_t width, uint32_t height)
{
    return htenc::ht_scratch_layout(width, height).total;
}

}  // namespace j2kc
