/**
 * @file color.cu
 * @brief CUDA kernels for ISO/IEC 15444-1 Annex G, fused as in Lee et al.,
 * "GPU-based JPEG2000 Decoding Scheme for Digital Cinema" (ETRI): the encoder
 * reads the caller's samples in their own layout, level shifts and applies
 * the RCT/ICT in one pass; the decoder applies the inverse transform, level
 * shift, clip and pack in one pass. One thread per pixel, consecutive threads
 * on consecutive samples of a row. Arithmetic comes from color_ops.h, so
 * results equal color_cpu.cpp.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "color/color.h"
#include "common/cuda_util.cuh"
#include "common/status.h"

namespace j2kc {
namespace {

template <class T>
struct ForwardArgs {
    j2kc_component comp[3];
    T *plane[3];
    size_t stride[3];
};
template <class T>
struct InverseArgs {
    const T *plane[3];
    size_t stride[3];
    SampleFormat source[3];
    j2kc_component out[3];
};

__device__ __forceinline__ void mct_fwd(int32_t *v) { rct_forward_sample(v[0], v[1], v[2], v[0], v[1], v[2]); }
__device__ __forceinline__ void mct_fwd(float *v) { ict_forward_sample(v[0], v[1], v[2], v[0], v[1], v[2]); }
__device__ __forceinline__ void mct_inv(int32_t *v) { rct_inverse_sample(v[0], v[1], v[2], v[0], v[1], v[2]); }
__device__ __forceinline__ void mct_inv(float *v) { ict_inverse_sample(v[0], v[1], v[2], v[0], v[1], v[2]); }
__device__ __forceinline__ int32_t to_int(int32_t v) { return v; }
__device__ __forceinline__ int32_t to_int(float v) { return float_to_sample(v); }

/** Encoder: Count components (1, or 3 with MCT) of one size -> planes. */
template <class T, int Count>
__global__ void color_forward_kernel(ForwardArgs<T> a)
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t w = a.comp[0].width, h = a.comp[0].height;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        T v[3];
        for (int c = 0; c < Count; ++c) v[c] = static_cast<T>(unpack_sample(a.comp[c], x, y));
        if (Count == 3) mct_fwd(v);
        for (int c = 0; c < Count; ++c) a.plane[c][size_t{y} * a.stride[c] + x] = v[c];
    }
}

/** Decoder: planes -> inverse MCT (Count 3) -> level shift, clip, pack. */
template <class T, int Count>
__global__ void color_inverse_kernel(InverseArgs<T> a)
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t w = a.out[0].width, h = a.out[0].height;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        T v[3];
        for (int c = 0; c < Count; ++c) v[c] = a.plane[c][size_t{y} * a.stride[c] + x];
        if (Count == 3) mct_inv(v);
        for (int c = 0; c < Count; ++c) pack_sample(to_int(v[c]), a.source[c], a.out[c], x, y);
    }
}

const dim3 kBlock(64, 4);

dim3 grid_for(uint32_t w, uint32_t h)
{
    return dim3((w + kBlock.x - 1) / kBlock.x, std::min<uint32_t>((h + kBlock.y - 1) / kBlock.y, 65535u));
}

template <class T>
void forward_gpu(const j2kc_component *comps, uint32_t count, bool mct, T *const *planes, const size_t *strides,
                 void *stream)
{
    const auto st = static_cast<cudaStream_t>(stream);
    for (uint32_t i = 0; i < count; ++i) check_component_layout(comps[i]);
    uint32_t first = 0;
    if (mct) {
        check_mct(comps, count);
        ForwardArgs<T> a{};
        for (int c = 0; c < 3; ++c) {
            a.comp[c] = comps[c];
            a.plane[c] = planes[c];
            a.stride[c] = strides[c];
        }
        if (uint64_t{comps[0].width} * comps[0].height)
            color_forward_kernel<T, 3><<<grid_for(comps[0].width, comps[0].height), kBlock, 0, st>>>(a);
        first = 3;
    }
    for (uint32_t i = first; i < count; ++i) {
        if (uint64_t{comps[i].width} * comps[i].height == 0) continue;
        ForwardArgs<T> a{};
        a.comp[0] = comps[i];
        a.plane[0] = planes[i];
        a.stride[0] = strides[i];
        color_forward_kernel<T, 1><<<grid_for(comps[i].width, comps[i].height), kBlock, 0, st>>>(a);
    }
    check_cuda(cudaGetLastError(), "color: forward kernel");
}

template <class T>
void inverse_gpu(const T *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count, bool mct,
                 const j2kc_component *out, void *stream)
{
    const auto st = static_cast<cudaStream_t>(stream);
    for (uint32_t i = 0; i < count; ++i) {
        check_component_layout(out[i]);
        J2KC_CHECK_ARG(source[i].precision >= 1 && source[i].precision <= 32, "plane precision %u (1..32)",
                       source[i].precision);
    }
    uint32_t first = 0;
    if (mct) {
        check_mct(out, count);
        InverseArgs<T> a{};
        for (int c = 0; c < 3; ++c) {
            a.plane[c] = planes[c];
            a.stride[c] = strides[c];
            a.source[c] = source[c];
            a.out[c] = out[c];
        }
        if (uint64_t{out[0].width} * out[0].height)
            color_inverse_kernel<T, 3><<<grid_for(out[0].width, out[0].height), kBlock, 0, st>>>(a);
        first = 3;
    }
    for (uint32_t i = first; i < count; ++i) {
        if (uint64_t{out[i].width} * out[i].height == 0) continue;
        InverseArgs<T> a{};
        a.plane[0] = planes[i];
        a.stride[0] = strides[i];
        a.source[0] = source[i];
        a.out[0] = out[i];
        color_inverse_kernel<T, 1><<<grid_for(out[i].width, out[i].height), kBlock, 0, st>>>(a);
    }
    check_cuda(cudaGetLastError(), "color: inverse kernel");
}

}  // namespace

void color_forward_gpu(const j2kc_component *c, uint32_t count, bool mct, int32_t *const *planes, const size_t *strides,
                       void *stream)
{
    forward_gpu(c, count, mct, planes, strides, stream);
}
void color_forward_gpu(const j2kc_component *c, uint32_t count, bool mct, float *const *planes, const size_t *strides,
                       void *stream)
{
    forward_gpu(c, count, mct, planes, strides, stream);
}
void color_inverse_gpu(const int32_t *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out, void *stream)
{
    inverse_gpu(planes, strides, source, count, mct, out, stream);
}
void color_inverse_gpu(const float *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out, void *stream)
{
    inverse_gpu(planes, strides, source, count, mct, out, stream);
}

}  // namespace j2kc
