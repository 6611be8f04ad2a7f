/**
 * @file reconstruct_ref.cpp
 * @brief CPU reference of the decoder's sample stages for one tile:
 * dequantise (Annex E, H), inverse DWT (Annex F), inverse MCT, level shift,
 * clip and pack (Annex G).
 */
#include <vector>

#include "color/color.h"
#include "common/status.h"
#include "dwt/dwt.h"
#include "pipeline/reconstruct.h"
#include "quant/quant.h"

namespace j2kc {

j2kc_component tile_view(const j2kc_component &out, const Rect &rect, uint32_t origin_x, uint32_t origin_y)
{
    j2kc_component v = out;
    v.data = out.data + static_cast<uint64_t>(static_cast<int64_t>(rect.y0 - origin_y) * out.row_stride +
                                              int64_t{rect.x0 - origin_x} * out.sample_stride);
    v.width = rect.width();
    v.height = rect.height();
    return v;
}

bool tile_uses_mct(const TileCoefficients &tile, uint32_t n)
{
    if (!tile.mct || n < 3) return false;
    const auto &k = tile.components;
    J2KC_CHECK_DATA(k[0].wavelet == k[1].wavelet && k[0].wavelet == k[2].wavelet &&
                        k[0].out_rect.width() == k[1].out_rect.width() &&
                        k[0].out_rect.width() == k[2].out_rect.width() &&
                        k[0].out_rect.height() == k[1].out_rect.height() &&
                        k[0].out_rect.height() == k[2].out_rect.height(),
                    "MCT over components of different filters or sizes");
    return true;
}

namespace {

/** Runs the inverse DWT of one plane, leaving its samples at out_rect's size. */
template <typename T>
void inverse_dwt(ComponentPlane &p, T *data)
{
    if (p.wavelet == Wavelet::kReversible53)
        dwt53_inverse(reinterpret_cast<int32_t *>(data), p.stride, p.tc_rect, p.levels, p.levels_to_skip);
    else
        dwt97_inverse(reinterpret_cast<float *>(data), p.stride, p.tc_rect, p.levels, p.levels_to_skip);
}

}  // namespace

void reconstruct_tile_cpu(TileCoefficients &tile, const OutputPlacement &placement)
{
    const j2kc_image &image = *placement.image;
    const uint32_t n = image.num_components;
    // Reversible planes are dequantised in place; irreversible ones into floats.
    std::vector<std::vector<float>> floats(n);
    for (uint32_t c = 0; c < n; ++c) {
        ComponentPlane &p = tile.components[c];
        if (p.out_rect.empty()) continue;
        if (p.wavelet == Wavelet::kReversible53) {
            dequantize_ref(p.data, p.stride, p.data, p.stride, p.dequant);
            inverse_dwt(p, p.data);
        } else {
            floats[c].assign(p.samples(), 0.0f);
            dequantize_ref(p.data, p.stride, floats[c].data(), p.stride, p.dequant);
            inverse_dwt(p, floats[c].data());
        }
    }

    // The MCT group first (components 0..2 share a filter and size), then each other component alone.
    const bool mct = tile_uses_mct(tile, n);
    auto emit = [&](uint32_t first, uint32_t count, bool with_mct) {
        const ComponentPlane &p0 = tile.components[first];
        if (p0.out_rect.empty()) return;
        std::vector<j2kc_component> outs;
        std::vector<size_t> strides;
        std::vector<SampleFormat> formats;
        for (uint32_t c = first; c < first + count; ++c) {
            const ComponentPlane &p = tile.components[c];
            outs.push_back(tile_view(image.components[c], p.out_rect, placement.origin_x[c], placement.origin_y[c]));
            strides.push_back(p.stride);
            formats.push_back({p.precision, p.is_signed});
        }
        if (p0.wavelet == Wavelet::kReversible53) {
            std::vector<const int32_t *> planes;
            for (uint32_t c = first; c < first + count; ++c) planes.push_back(tile.components[c].data);
            color_inverse_ref(planes.data(), strides.data(), formats.data(), count, with_mct, outs.data());
        } else {
            std::vector<const float *> planes;
            for (uint32_t c = first; c < first + count; ++c) planes.push_back(floats[c].data());
            color_inverse_ref(planes.data(), strides.data(), formats.data(), count, with_mct, outs.data());
        }
    };
    uint32_t c = 0;
    if (mct) {
        emit(0, 3, true);
        c = 3;
    }
    for (; c < n; ++c) emit(c, 1, false);
}

}  // namespace j2kc
