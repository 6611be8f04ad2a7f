/**
 * @file ht_decode_cpu.cpp
 * @brief Tier1Decoder's HT path (ISO/IEC 15444-15): the host side of the
 * shared HT block decoder (ht_block_decoder_core.h, which the CUDA kernel
 * runs too), with the checks that throw and the decoder's reusable scratch.
 */
#include <cstring>
#include <vector>

#include "codestream/markers.h"
#include "common/status.h"
#include "tier1/ht_block_decoder_core.h"
#include "tier1/tier1.h"

namespace j2kc {

void Tier1Decoder::decode_ht(const uint8_t *data, const CodewordSegment *segments, size_t num_segments, uint32_t width,
                             uint32_t height, const Tier1DecodeParams &params, int32_t *out, size_t out_stride)
{
    if (width == 0 || height == 0) return;
    const uint32_t planes = uint32_t{params.num_bitplanes} + params.roi_shift;
    uint64_t total_passes = 0;
    for (size_t k = 0; k < num_segments; ++k) total_passes += segments[k].passes;
    if (total_passes == 0) {
        for (uint32_t y = 0; y < height; ++y) std::memset(out + y * out_stride, 0, width * sizeof(int32_t));
        return;
    }
    J2KC_CHECK_SUPPORTED(planes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", planes, kTier1MaxBitplanes);

    const size_t words = ht::ht_scratch_words(width);
    if (flags_.size() < words) flags_.resize(words);
    const size_t samples = size_t{width} * height;
    if (values_.size() < samples) values_.resize(samples);
    const uint32_t status =
        ht::ht_decode_block(data, segments, num_segments, width, height, planes, params.zero_bitplanes,
                            (params.style & cblk_style::kVerticallyCausal) != 0, values_.data(), width, flags_.data());
    J2KC_CHECK_DATA(status == ht::kHtOk, "HT code-block: %s", ht::ht_status_text(status));
    for (uint32_t y = 0; y < height; ++y) {
        int32_t *row = out + y * out_stride;
        const uint32_t *v = values_.data() + size_t{y} * width;
        for (uint32_t x = 0; x < width; ++x) {
            const uint32_t u = v[x];
            const int32_t mag = static_cast<int32_t>(u & 0x7FFFFFFFu);
            row[x] = (u >> 31) ? -mag : mag;
        }
    }
}

}  // namespace j2kc
