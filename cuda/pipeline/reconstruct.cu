/**
 * @file reconstruct.cu
 * @brief The CUDA decoder's sample stages of one tile-component:
 * dequantisation (Annex E, with Annex H's ROI de-scaling) fused into the
 * loads of the inverse DWT (Annex F). Each level of dwt_inverse.cuh reads
 * its three high-pass sub-bands, and the first level its LL band too,
 * straight from the Tier-1 plane and dequantises each sample with
 * quant_ops.h's rule as it loads it; the CPU (reconstruct_cpu.cpp)
 * dequantises the plane first and transforms it after, which applies the
 * same operations to each sample in the same order, so the samples are the
 * same. The plane is read once, where a dequantisation pass of its own would
 * read and write it once more, and the top level writes where the caller
 * says, so that nothing is copied back into the plane.
 */
#include <cuda_runtime.h>

#include <type_traits>

#include "common/status.h"
#include "dwt/dwt_inverse.cuh"
#include "dwt/dwt_layout.h"
#include "pipeline/reconstruct.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

/**
 * A level's sub-bands for dwt_inverse.cuh: the LL band from where the level
 * below wrote it (`ll`), or at the first level from the plane like the other
 * bands, which are dequantised as they are read.
 */
template <class T>
struct DequantizingSource {
    const int32_t *plane;
    size_t stride;
    const T *ll;  ///< nullptr at the first level
    size_t ll_stride;
    float half_step[4];  ///< the level's LL (band 0: first level only), HL, LH, HH (9/7)
    uint32_t roi_shift;

    __device__ T load(uint32_t px, uint32_t py, bool high_x, bool high_y) const
    {
        if (ll && !high_x && !high_y) return ll[size_t{py} * ll_stride + px];
        const int32_t v = plane[size_t{py} * stride + px];
        if constexpr (std::is_same_v<T, int32_t>)
            return dequantize_53(v, roi_shift);
        else
            return dequantize_97(v, half_step[(high_x ? 1 : 0) + (high_y ? 2 : 0)], roi_shift);
    }
};

/** Samples of resolution r of p's tile-component. */
uint64_t resolution_area(const ComponentPlane &p, int r)
{
    return r < 0 ? 0 : dwt_resolution_rect(p.tc_rect, p.levels, r).area();
}

void check_plane(const ComponentPlane &p, const void *plane, const void *out, const void *scratch)
{
    J2KC_CHECK_ARG(p.levels <= kMaxLevels && p.levels_to_skip <= p.levels, "reconstruct: %d of %d levels",
                   int{p.levels_to_skip}, int{p.levels});
    J2KC_CHECK_ARG(p.tc_rect.x1 >= p.tc_rect.x0 && p.tc_rect.y1 >= p.tc_rect.y0, "reconstruct: inverted rect");
    J2KC_CHECK_ARG(p.out_rect.area() == 0 || (plane && p.stride >= p.out_rect.width()), "reconstruct: bad plane");
    J2KC_CHECK_ARG(p.out_rect.area() == 0 || reconstructs_in_place(p) || (out && scratch),
                   "reconstruct: no output or scratch");
}

template <class T>
void reconstruct(const ComponentPlane &p, int32_t *plane, T *out, void *scratch, cudaStream_t st)
{
    const int levels = p.levels, skip = p.levels_to_skip;
    // The levels below the top write alternately to two areas: the one just
    // below it (and every second one under) to the first, the next to the
    // second, so that a level's LL band is never where it writes.
    const int top = levels - skip;
    T *const areas[2] = {static_cast<T *>(scratch), static_cast<T *>(scratch) + resolution_area(p, top - 1)};
    dwt_inverse::LevelOutput<T> dst{};
    DequantizingSource<T> src{plane, p.stride, nullptr, 0, {p.dequant.half_step[0]}, p.dequant.roi_shift};
    for (int r = 1; r <= top; ++r) {
        const Rect rr = dwt_resolution_rect(p.tc_rect, levels, r);
        for (int o = 1; o < 4; ++o) src.half_step[o] = p.dequant.half_step[3 * (r - 1) + o];
        dst = {r == top ? out : areas[(top - r - 1) & 1], rr.width()};
        dwt_inverse::inverse_level<T>(src, dst, rr, st);
        src.ll = dst.data;
        src.ll_stride = dst.stride;
    }
}

}  // namespace

size_t reconstruct_gpu_scratch_bytes(const ComponentPlane &p)
{
    const int top = p.levels - p.levels_to_skip;
    if (top <= 0) return 0;
    return static_cast<size_t>((resolution_area(p, top - 1) + resolution_area(p, top - 2)) * 4);
}

void reconstruct_component_gpu(const ComponentPlane &p, int32_t *plane, void *out, void *scratch, void *stream)
{
    check_plane(p, plane, out, scratch);
    if (p.out_rect.area() == 0) return;
    const auto st = static_cast<cudaStream_t>(stream);
    if (reconstructs_in_place(p)) {
        if (p.wavelet == Wavelet::kReversible53)
            dequantize_gpu(plane, p.stride, plane, p.stride, p.dequant, st);
        else
            dequantize_gpu(plane, p.stride, reinterpret_cast<float *>(plane), p.stride, p.dequant, st);
        return;
    }
    if (p.wavelet == Wavelet::kReversible53)
        reconstruct<int32_t>(p, plane, static_cast<int32_t *>(out), scratch, st);
    else
        reconstruct<float>(p, plane, static_cast<float *>(out), scratch, st);
}

}  // namespace j2kc
