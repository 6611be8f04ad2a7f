/**
 * @file analysis.cu
 * @brief The CUDA encoder's forward 9/7 DWT (Annex F) with the scalar
 * quantisation of Annex E fused into its stores: each level of
 * dwt_forward.cuh quantises its three high-pass sub-bands, and the last
 * level its LL band too, with quant_ops.h's rule as it stores them, straight
 * into the index plane. The CPU (encoder_cpu.cpp) transforms the plane first
 * and quantises it after, which applies the same operations to each sample
 * in the same order, so the indices are the same; the coefficients are never
 * written out and read back by a quantisation pass of their own.
 */
#include <cuda_runtime.h>

#include "common/status.h"
#include "dwt/dwt_forward.cuh"
#include "dwt/dwt_layout.h"
#include "pipeline/analysis.h"
#include "quant/quant_ops.h"

namespace j2kc {
namespace {

/**
 * A level's sub-bands for dwt_forward.cuh: the high-pass ones quantised into
 * the index plane, the LL band to `ll` for the next level, or at the last
 * level quantised like the others.
 */
struct QuantizingSink {
    int32_t *indices;
    size_t stride;
    float *ll;  ///< nullptr at the last level
    size_t ll_stride;
    float inv_step[4];  ///< the level's LL (band 0: last level only), HL, LH, HH
    int32_t max_magnitude[4];

    /** The band's entry selected rather than indexed, so that the table stays in registers. */
    template <class V>
    __device__ static V select(const V (&v)[4], bool high_x, bool high_y)
    {
        return high_y ? (high_x ? v[3] : v[2]) : (high_x ? v[1] : v[0]);
    }

    __device__ void store(uint32_t px, uint32_t py, bool high_x, bool high_y, float v) const
    {
        if (ll && !high_x && !high_y) {
            ll[size_t{py} * ll_stride + px] = v;
            return;
        }
        indices[size_t{py} * stride + px] =
            quantize_97(v, select(inv_step, high_x, high_y), select(max_magnitude, high_x, high_y));
    }
};

}  // namespace

size_t analysis_gpu_scratch_bytes(const Rect &rect)
{
    return static_cast<size_t>(dwt_forward::ll_scratch_elements(rect) * sizeof(float));
}

void analyse_component_gpu(float *plane, size_t stride, int32_t *indices, size_t indices_stride, const Rect &rect,
                           int levels, const QuantizeParams &q, void *scratch, void *stream)
{
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "analysis: %d levels (0..32)", levels);
    J2KC_CHECK_ARG(rect.x1 >= rect.x0 && rect.y1 >= rect.y0, "analysis: inverted rect");
    if (rect.area() == 0) return;
    J2KC_CHECK_ARG(plane && indices && stride >= rect.width() && indices_stride >= rect.width(),
                   "analysis: bad planes");
    const auto st = static_cast<cudaStream_t>(stream);
    if (levels == 0) {
        quantize_gpu(plane, stride, indices, indices_stride, q, st);
        return;
    }
    J2KC_CHECK_ARG(scratch, "analysis: no scratch");
    const auto sink = [&](int r, float *ll, size_t ll_stride) {
        QuantizingSink s{indices, indices_stride, ll, ll_stride, {}, {}};
        for (int o = 0; o < 4; ++o) {
            const int b = o == 0 ? 0 : 3 * (r - 1) + o;
            s.inv_step[o] = q.inv_step[b];
            s.max_magnitude[o] = q.max_magnitude[b];
        }
        return s;
    };
    dwt_forward::forward_levels<float>(plane, stride, static_cast<float *>(scratch), rect, levels, sink, st);
}

}  // namespace j2kc
