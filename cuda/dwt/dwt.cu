/**
 * @file dwt.cu
 * @brief CUDA 2-D DWT of ISO/IEC 15444-1 Annex F (5/3 and 9/7, forward and
 * inverse), bit-identical to dwt_cpu.cpp because both run the lifting
 * primitives of dwt_lifting.h in the same order.
 *
 * Forward, per level, following the row/column split of Lee et al.,
 * "GPU-based JPEG2000 Decoding Scheme for Digital Cinema" (ETRI), but
 * without its explicit transposes:
 *  - columns: one kernel per lifting step over the whole region, a thread per
 *    column sample, so every warp reads and writes 32 consecutive samples of a
 *    row (coalesced); then one kernel that de-interleaves rows and applies
 *    the K scaling, writing to scratch;
 *  - rows: one block per row held in shared memory, all lifting steps there,
 *    loads and stores coalesced (the de-interleave is folded into the index
 *    mapping). Rows too long for shared memory fall back to the global
 *    per-step kernels along x.
 *
 * Inverse, per level, one tiled kernel (dwt_inverse.cuh). The level's
 * output goes to scratch, where the next level reads its LL band from; the
 * last level's is copied back into the plane.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "common/status.h"
#include "dwt/dwt.h"
#include "dwt/dwt_inverse.cuh"
#include "dwt/dwt_lifting.h"

namespace j2kc {
namespace {

enum StepKind : int { kPredictFwd53 = 0, kUpdateFwd53 = 1, kFwd97 = 2 };

template <int Kind>
__device__ __forceinline__ int32_t apply_step(int32_t x, int32_t l, int32_t r, float)
{
    return Kind == kPredictFwd53 ? lift53_predict_fwd(x, l, r) : lift53_update_fwd(x, l, r);
}
template <int Kind>
__device__ __forceinline__ float apply_step(float x, float l, float r, float c)
{
    return lift97_fwd(x, l, r, c);
}

/* Scaling / single-sample rule applied at the (de)interleave. */
__device__ __forceinline__ int32_t scale_fwd(int32_t v, const DwtRun &r, bool) { return dwt53_single_fwd(r, v); }
__device__ __forceinline__ float scale_fwd(float v, const DwtRun &r, bool high)
{
    return dwt_fmul(v, dwt97_scale_fwd(r, high));
}

/** One lifting step along columns: rows y = first + 2j of a w x h region. */
template <class T, int Kind>
__global__ void dwt_lift_columns_kernel(T *data, size_t stride, uint32_t w, uint32_t h, uint32_t first, float c)
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    for (uint32_t j = blockIdx.y * blockDim.y + threadIdx.y;; j += gridDim.y * blockDim.y) {
        const uint32_t y = first + 2 * j;
        if (y >= h || y < first) break;
        T *p = data + x;
        p[size_t{y} * stride] = apply_step<Kind>(p[size_t{y} * stride], p[size_t{dwt_left(y)} * stride],
                                                 p[size_t{dwt_right(y, h)} * stride], c);
    }
}

/** One lifting step along rows (fallback for rows longer than shared memory). */
template <class T, int Kind>
__global__ void dwt_lift_rows_kernel(T *data, size_t stride, uint32_t w, uint32_t h, uint32_t first, float c)
{
    const uint64_t j = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x;
    const uint64_t x = first + 2 * j;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y; y < h; y += gridDim.y) {
        T *row = data + size_t{y} * stride;
        const uint32_t k = static_cast<uint32_t>(x);
        row[k] = apply_step<Kind>(row[k], row[dwt_left(k)], row[dwt_right(k, w)], c);
    }
}

/**
 * Copies a w x h region src -> dst de-interleaving along `axis` (0: x, 1: y):
 * interleaved -> low|high, then the scaling. Threads walk destination
 * elements so stores are coalesced; along y the loads are too.
 */
template <class T>
__global__ void dwt_split_kernel(const T *src, size_t src_stride, T *dst, size_t dst_stride, uint32_t w, uint32_t h,
                                 int axis, uint32_t i0)
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    const DwtRun r = dwt_run(i0, axis == 0 ? w : h);
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        const uint32_t d = axis == 0 ? x : y;  // destination index along the axis
        const uint32_t s = dwt_merge_offset(r, d);
        const uint32_t sx = axis == 0 ? s : x, sy = axis == 0 ? y : s;
        dst[size_t{y} * dst_stride + x] = scale_fwd(src[size_t{sy} * src_stride + sx], r, d >= r.nl);
    }
}

template <class T>
struct ForwardRowSteps;

template <>
struct ForwardRowSteps<int32_t> {
    __device__ static void run(int32_t *s, const DwtRun &r)
    {
        const uint32_t n = r.n, odd = 1 - r.parity, even = r.parity;
        for (uint32_t k = odd + 2 * threadIdx.x; k < n; k += 2 * blockDim.x)
            s[k] = lift53_predict_fwd(s[k], s[dwt_left(k)], s[dwt_right(k, n)]);
        __syncthreads();
        for (uint32_t k = even + 2 * threadIdx.x; k < n; k += 2 * blockDim.x)
            s[k] = lift53_update_fwd(s[k], s[dwt_left(k)], s[dwt_right(k, n)]);
        __syncthreads();
    }
};
__device__ void row_step97(float *s, uint32_t n, uint32_t first, float c)
{
    for (uint32_t k = first + 2 * threadIdx.x; k < n; k += 2 * blockDim.x)
        s[k] = lift97_fwd(s[k], s[dwt_left(k)], s[dwt_right(k, n)], c);
    __syncthreads();
}
template <>
struct ForwardRowSteps<float> {
    __device__ static void run(float *s, const DwtRun &r)
    {
        const uint32_t odd = 1 - r.parity, even = r.parity;
        row_step97(s, r.n, odd, kDwtAlpha);
        row_step97(s, r.n, even, kDwtBeta);
        row_step97(s, r.n, odd, kDwtGamma);
        row_step97(s, r.n, even, kDwtDelta);
    }
};
/**
 * A whole forward 1-D row transform in shared memory, one block per row:
 * src rows interleaved -> dst rows low|high.
 */
template <class T>
__global__ void dwt_rows_kernel(const T *src, size_t src_stride, T *dst, size_t dst_stride, uint32_t w, uint32_t h,
                                uint32_t x0)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *s = reinterpret_cast<T *>(smem_raw);
    const DwtRun r = dwt_run(x0, w);
    for (uint32_t y = blockIdx.x; y < h; y += gridDim.x) {
        const T *in = src + size_t{y} * src_stride;
        T *out = dst + size_t{y} * dst_stride;
        for (uint32_t k = threadIdx.x; k < w; k += blockDim.x) s[k] = in[k];
        __syncthreads();
        if (w > 1) ForwardRowSteps<T>::run(s, r);
        for (uint32_t p = threadIdx.x; p < w; p += blockDim.x)
            out[p] = scale_fwd(s[dwt_merge_offset(r, p)], r, p >= r.nl);
        __syncthreads();  // s is reused by the next row
    }
}

constexpr uint32_t kRowThreads = 256;
using dwt_inverse::kMaxGridY;

dim3 grid2d(uint32_t w, uint32_t h, dim3 block)
{
    return dim3((w + block.x - 1) / block.x, std::min<uint32_t>((h + block.y - 1) / block.y, kMaxGridY));
}

template <class T, int Kind>
void lift_columns(T *data, size_t stride, uint32_t w, uint32_t h, uint32_t first, float c, cudaStream_t st)
{
    const uint32_t count = first == 0 ? (h + 1) / 2 : h / 2;
    if (count == 0) return;
    const dim3 block(32, 8);
    dwt_lift_columns_kernel<T, Kind><<<grid2d(w, count, block), block, 0, st>>>(data, stride, w, h, first, c);
}

template <class T, int Kind>
void lift_rows(T *data, size_t stride, uint32_t w, uint32_t h, uint32_t first, float c, cudaStream_t st)
{
    const uint32_t count = first == 0 ? (w + 1) / 2 : w / 2;
    if (count == 0) return;
    const dim3 grid((count + 255) / 256, std::min<uint32_t>(h, kMaxGridY));
    dwt_lift_rows_kernel<T, Kind><<<grid, 256, 0, st>>>(data, stride, w, h, first, c);
}

template <class T, int Kind>
void lift_axis(T *data, size_t stride, uint32_t w, uint32_t h, int axis, uint32_t first, float c, cudaStream_t st)
{
    if (axis == 1)
        lift_columns<T, Kind>(data, stride, w, h, first, c, st);
    else
        lift_rows<T, Kind>(data, stride, w, h, first, c, st);
}

/** All forward lifting steps along one axis, as separate global passes. */
void lift_all(int32_t *d, size_t s, uint32_t w, uint32_t h, int axis, uint32_t parity, cudaStream_t st)
{
    lift_axis<int32_t, kPredictFwd53>(d, s, w, h, axis, 1 - parity, 0.f, st);
    lift_axis<int32_t, kUpdateFwd53>(d, s, w, h, axis, parity, 0.f, st);
}
void lift_all(float *d, size_t s, uint32_t w, uint32_t h, int axis, uint32_t parity, cudaStream_t st)
{
    lift_axis<float, kFwd97>(d, s, w, h, axis, 1 - parity, kDwtAlpha, st);
    lift_axis<float, kFwd97>(d, s, w, h, axis, parity, kDwtBeta, st);
    lift_axis<float, kFwd97>(d, s, w, h, axis, 1 - parity, kDwtGamma, st);
    lift_axis<float, kFwd97>(d, s, w, h, axis, parity, kDwtDelta, st);
}

template <class T>
void split(const T *src, size_t ss, T *dst, size_t ds, uint32_t w, uint32_t h, int axis, uint32_t i0, cudaStream_t st)
{
    const dim3 block(32, 8);
    dwt_split_kernel<T><<<grid2d(w, h, block), block, 0, st>>>(src, ss, dst, ds, w, h, axis, i0);
}

/** Runs a shared-memory forward row transform when the row fits; false otherwise. */
template <class T>
bool rows_in_shared(const T *src, size_t ss, T *dst, size_t ds, uint32_t w, uint32_t h, uint32_t x0, cudaStream_t st)
{
    int device = 0, optin = 0;
    check_cuda(cudaGetDevice(&device), "DWT: cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
               "DWT: cudaDeviceGetAttribute");
    const uint64_t bytes = uint64_t{w} * sizeof(T);
    if (bytes > static_cast<uint64_t>(optin)) return false;
    if (bytes > 48 * 1024)
        check_cuda(cudaFuncSetAttribute(dwt_rows_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)),
                   "DWT: cudaFuncSetAttribute");
    const uint32_t blocks = std::min<uint32_t>(h, 1u << 20);
    dwt_rows_kernel<T><<<blocks, kRowThreads, static_cast<size_t>(bytes), st>>>(src, ss, dst, ds, w, h, x0);
    return true;
}

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
    T *scratch = static_cast<T *>(scratch_ptr);
    for (int lev = 1; lev <= levels; ++lev) {
        const Rect rr = dwt_resolution_rect(rect, levels, levels - lev + 1);
        const uint32_t w = rr.width(), h = rr.height();
        if (w == 0 || h == 0) break;
        // Columns: lift in place, then split rows into scratch (stride w).
        if (h > 1) lift_all(data, stride, w, h, 1, rr.y0 & 1u, st);
        split(data, stride, scratch, w, w, h, 1, rr.y0, st);
        // Rows: scratch -> data.
        if (!rows_in_shared(scratch, w, data, stride, w, h, rr.x0, st)) {
            if (w > 1) lift_all(scratch, w, w, h, 0, rr.x0 & 1u, st);
            split(scratch, w, data, stride, w, h, 0, rr.x0, st);
        }
        check_cuda(cudaGetLastError(), "DWT: forward kernels");
    }
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

size_t dwt_gpu_scratch_bytes(const Rect &rect) { return static_cast<size_t>(rect.area()) * 4; }

size_t dwt_gpu_inverse_scratch_bytes(const Rect &rect)
{
    // Two areas: the whole rect, and the level below it.
    const uint64_t quarter = uint64_t{rect.width() / 2 + 1} * (rect.height() / 2 + 1);
    return static_cast<size_t>((rect.area() + quarter) * 4);
}

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
