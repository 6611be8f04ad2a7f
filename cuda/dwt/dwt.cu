/**
 * @file dwt.cu
 * @brief CUDA 2-D DWT of ISO/IEC 15444-1 Annex F (5/3 and 9/7, forward and
 * inverse), bit-identical to dwt_cpu.cpp because both run the lifting
 * primitives of dwt_lifting.h in the same order.
 *
 * Forward and inverse, per level, one tiled kernel (dwt_forward.cuh,
 * dwt_inverse.cuh), each a level's whole 2-D transform in shared memory. A
 * level cannot write where other tiles still read, so the forward copies
 * the tile-component to scratch first and reads it from there, and the
 * inverse writes each level's output to scratch, where the next level reads
 * its LL band from; the last level's is copied back into the plane.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "common/status.h"
#include "dwt/dwt.h"
#include "dwt/dwt_forward.cuh"
#include "dwt/dwt_inverse.cuh"
#include "dwt/dwt_lifting.h"

namespace j2kc {
namespace {

/** The sub-bands into the plane's Mallat layout, a level's LL band to `ll` (the plane at the last level). */
template <class T>
struct PlainSink {
    T *bands;
    size_t band_stride;
    T *ll;
    size_t ll_stride;
    __device__ void store(uint32_t px, uint32_t py, bool high_x, bool high_y, T v) const
    {
        T *at = high_x || high_y ? bands + size_t{py} * band_stride + px : ll + size_t{py} * ll_stride + px;
        *at = v;
    }
};

void check_args(const void *data, size_t stride, const Rect &rect, int levels, int skip, const void *scratch)
{
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "DWT: %d levels (0..32)", levels);
    J2KC_CHECK_ARG(skip >= 0 && skip <= levels, "DWT: cannot skip %d of %d levels", skip, levels);
    J2KC_CHECK_ARG(rect.x1 >= rect.x0 && rect.y1 >= rect.y0, "DWT: inverted rect");
    // A reduced inverse touches only the kept resolution, so the plane may be that narrow.
    const Rect kept = dwt_resolution_rect(rect, levels, levels - skip);
    J2KC_CHECK_ARG(rect.area() == 0 || (data && stride >= kept.width()), "DWT: bad plane");
    J2KC_CHECK_ARG(rect.area() == 0 || levels == skip || scratch, "DWT: no scratch");
}

template <class T>
void forward_gpu(T *data, size_t stride, const Rect &rect, int levels, void *scratch_ptr, void *stream)
{
    check_args(data, stride, rect, levels, 0, scratch_ptr);
    if (rect.area() == 0 || levels == 0) return;
    const auto st = static_cast<cudaStream_t>(stream);
    // The first level reads a copy of the samples, the rect's width apart;
    // the LL bands go to the area after it and back into the copy.
    T *const in = static_cast<T *>(scratch_ptr);
    const uint32_t w = rect.width();
    check_cuda(cudaMemcpy2DAsync(in, size_t{w} * sizeof(T), data, stride * sizeof(T), size_t{w} * sizeof(T),
                                 rect.height(), cudaMemcpyDeviceToDevice, st),
               "DWT: forward copy");
    const auto sink = [&](int, T *ll, size_t ll_stride) {
        return ll ? PlainSink<T>{data, stride, ll, ll_stride} : PlainSink<T>{data, stride, data, stride};
    };
    dwt_forward::forward_levels<T>(in, w, in + rect.area(), rect, levels, sink, st);
}

template <class T>
void inverse_gpu(T *data, size_t stride, const Rect &rect, int levels, int skip, void *scratch_ptr, void *stream)
{
    check_args(data, stride, rect, levels, skip, scratch_ptr);
    if (rect.area() == 0 || levels == skip) return;
    const auto st = static_cast<cudaStream_t>(stream);
    // A level reads its LL band where the level before wrote it, so the
    // outputs alternate between two areas of scratch, each level's rows its
    // width apart: the last level's (the largest) in the first, the one
    // before it (at most a quarter of that, rounded up) in the second.
    T *const areas[2] = {static_cast<T *>(scratch_ptr), static_cast<T *>(scratch_ptr) + rect.area()};
    dwt_inverse::PlainSource<T> src{data, stride, data, stride};
    uint32_t w = 0, h = 0;
    for (int lev = levels; lev > skip; --lev) {
        const Rect rr = dwt_resolution_rect(rect, levels, levels - lev + 1);
        w = rr.width();
        h = rr.height();
        T *out = areas[(lev - skip + 1) & 1];
        dwt_inverse::inverse_level<T>(src, {out, w}, rr, st);
        src.ll = out;
        src.ll_stride = w;
    }
    if (w && h)
        check_cuda(cudaMemcpy2DAsync(data, stride * sizeof(T), areas[0], size_t{w} * sizeof(T), size_t{w} * sizeof(T),
                                     h, cudaMemcpyDeviceToDevice, st),
                   "DWT: inverse copy-back");
}

}  // namespace

size_t dwt_gpu_scratch_bytes(const Rect &rect)
{
    // Two areas: the whole rect, and the level below it.
    return static_cast<size_t>((rect.area() + dwt_forward::ll_scratch_elements(rect)) * 4);
}

size_t dwt_gpu_inverse_scratch_bytes(const Rect &rect) { return dwt_gpu_scratch_bytes(rect); }

void dwt53_forward_gpu(int32_t *data, size_t stride, const Rect &rect, int levels, void *scratch, void *stream)
{
    forward_gpu<int32_t>(data, stride, rect, levels, scratch, stream);
}
void dwt53_inverse_gpu(int32_t *data, size_t stride, const Rect &rect, int levels, int levels_to_skip, void *scratch,
                       void *stream)
{
    inverse_gpu<int32_t>(data, stride, rect, levels, levels_to_skip, scratch, stream);
}
void dwt97_forward_gpu(float *data, size_t stride, const Rect &rect, int levels, void *scratch, void *stream)
{
    forward_gpu<float>(data, stride, rect, levels, scratch, stream);
}
void dwt97_inverse_gpu(float *data, size_t stride, const Rect &rect, int levels, int levels_to_skip, void *scratch,
                       void *stream)
{
    inverse_gpu<float>(data, stride, rect, levels, levels_to_skip, scratch, stream);
}

}  // namespace j2kc
