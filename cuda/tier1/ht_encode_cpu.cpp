/**
 * @file ht_encode_cpu.cpp
 * @brief The HTJ2K block encoder on the CPU: argument checks that throw,
 * reusable scratch, and the call into the J2KC_HD job of ht_encode_job.h that
 * the CUDA kernel runs too, so both backends write the same bytes.
 */
#include "tier1/ht_block_encoder.h"

#include <vector>

#include "common/status.h"
#include "tier1/ht_encode_job.h"

namespace j2kc {

void encode_ht_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height, uint8_t num_bitplanes,
                          bool sets, uint32_t top_plane, EncodedCodeBlock &out)
{
    J2KC_CHECK_ARG(width <= kTier1MaxSide && height <= kTier1MaxSide && uint64_t{width} * height <= kTier1MaxSamples,
                   "code-block %ux%u exceeds 1024 per side or 4096 samples", width, height);
    J2KC_CHECK_ARG(num_bitplanes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", num_bitplanes, kTier1MaxBitplanes);
    out.data.clear();
    out.passes.clear();
    out.zero_bitplanes = num_bitplanes;
    out.ht_sets = htenc::HtCodingSets{};
    if (width == 0 || height == 0) return;

    thread_local std::vector<uint8_t> bytes, scratch;
    const size_t capacity = htenc::ht_job_capacity_bound(width, height, num_bitplanes, sets);
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
    uint32_t end[htenc::kHtMaxPoints] = {};
    uint64_t distortion[htenc::kHtMaxPoints] = {};
    uint8_t terminated[htenc::kHtMaxPoints] = {};
    const GpuCodeBlockResult r =
        htenc::ht_encode_job(job, sets ? &out.ht_sets : nullptr, top_plane, bytes.data(), end, distortion, terminated);
    J2KC_CHECK_ARG(r.status != kGpuTier1DataTooDeep, "coefficient needs %u bit-planes, band has %u", r.data_bitplanes,
                   num_bitplanes);
    J2KC_CHECK_ARG(r.status == kGpuTier1Ok, "HT block encoder status %u", r.status);
    out.zero_bitplanes = r.zero_bitplanes;
    out.passes.resize(r.num_passes);
    for (uint32_t k = 0; k < r.num_passes; ++k) {
        out.passes[k].end = end[k];
        out.passes[k].distortion = distortion[k];
        out.passes[k].terminated = terminated[k] != 0;
    }
    out.data.assign(bytes.data() + 1, bytes.data() + 1 + r.bytes);
}

size_t ht_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes, bool sets)
{
    return htenc::ht_job_capacity_bound(width, height, num_bitplanes, sets);
}

uint32_t ht_gpu_max_passes(bool sets) { return htenc::ht_job_max_passes(sets); }

size_t ht_gpu_scratch_bound(uint32_t width, uint32_t height) { return htenc::ht_scratch_layout(width, height).total; }

}  // namespace j2kc
