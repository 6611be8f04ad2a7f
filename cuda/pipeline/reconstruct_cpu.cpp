/**
 * @file reconstruct_cpu.cpp
 * @brief CPU reference of the decoder's sample stages for one tile:
 * dequantise (Annex E, H), inverse DWT (Annex F), inverse MCT, level shift,
 * clip and pack (Annex G).
 */
#include <algorithm>
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
    J2KC_CHECK_DATA(
        k[0].wavelet == k[1].wavelet && k[0].wavelet == k[2].wavelet &&
            k[0].out_rect.width() == k[1].out_rect.width() && k[0].out_rect.width() == k[2].out_rect.width() &&
            k[0].out_rect.height() == k[1].out_rect.height() && k[0].out_rect.height() == k[2].out_rect.height(),
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

void reconstruct_tile_cpu(TileCoefficients &tile, const OutputPlacement &placement, ThreadPool &pool)
{
    const j2kc_image &image = *placement.image;
    const uint32_t n = image.num_components;
    // Reversible planes are dequantised in place; irreversible ones into
    // floats. Each component only touches its own plane, so they run side by
    // side (the same arithmetic, so the same samples, in any order).
    std::vector<std::vector<float>> floats(n);
    pool.parallel_for(n, [&](size_t c, unsigned) {
        ComponentPlane &p = tile.components[c];
        if (p.out_rect.empty()) return;
        if (p.wavelet == Wavelet::kReversible53) {
            dequantize_ref(p.data, p.stride, p.data, p.stride, p.dequant);
            inverse_dwt(p, p.data);
        } else {
            floats[c].assign(p.samples(), 0.0f);
            dequantize_ref(p.data, p.stride, floats[c].data(), p.stride, p.dequant);
            inverse_dwt(p, floats[c].data());
        }
    });

    // Packing in bands of rows: the MCT group (components 0..2 share a filter
    // and size) as one, every other component alone. A band reads its own
    // plane rows and writes its own output rows, so the bands run in parallel.
    const bool mct = tile_uses_mct(tile, n);
    struct Band {
        uint32_t first, count;
        bool with_mct;
        uint32_t y0, y1;  ///< rows of out_rect
    };
    constexpr uint32_t kBandRows = 64;
    std::vector<Band> bands;
    auto add = [&](uint32_t first, uint32_t count, bool with_mct) {
        const Rect &r = tile.components[first].out_rect;
        if (r.empty()) return;
        for (uint32_t y = 0; y < r.height(); y += kBandRows)
            bands.push_back({first, count, with_mct, y, std::min(r.height(), y + kBandRows)});
    };
    uint32_t c0 = 0;
    if (mct) {
        add(0, 3, true);
        c0 = 3;
    }
    for (uint32_t c = c0; c < n; ++c) add(c, 1, false);

    pool.parallel_for(bands.size(), [&](size_t k, unsigned) {
        const Band &b = bands[k];
        j2kc_component outs[3];
        size_t strides[3];
        SampleFormat formats[3];
        const int32_t *ints[3];
        const float *reals[3];
        for (uint32_t i = 0; i < b.count; ++i) {
            const uint32_t c = b.first + i;
            const ComponentPlane &p = tile.components[c];
            outs[i] = tile_view(image.components[c], p.out_rect, placement.origin_x[c], placement.origin_y[c]);
            outs[i].data += static_cast<uint64_t>(int64_t{b.y0} * outs[i].row_stride);
            outs[i].height = b.y1 - b.y0;
            strides[i] = p.stride;
            formats[i] = {p.precision, p.is_signed};
            const size_t offset = size_t{b.y0} * p.stride;
            const bool reversible = p.wavelet == Wavelet::kReversible53;
            ints[i] = reversible ? p.data + offset : nullptr;
            reals[i] = reversible ? nullptr : floats[c].data() + offset;
        }
        if (tile.components[b.first].wavelet == Wavelet::kReversible53)
            color_inverse_ref(ints, strides, formats, b.count, b.with_mct, outs);
        else
            color_inverse_ref(reals, strides, formats, b.count, b.with_mct, outs);
    });
}

}  // namespace j2kc
