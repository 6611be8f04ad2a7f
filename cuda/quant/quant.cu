/**
 * @file quant.cu
 * @brief CUDA quantise / dequantise passes of ISO/IEC 15444-1 Annex E (and
 * Annex H ROI de-scaling) over a whole tile-component plane in Mallat layout:
 * one launch per plane, each thread finds its sub-band from the resolution
 * sizes (the per-band table travels by value as a kernel parameter), and
 * applies the primitives of quant_ops.h, so results equal quant_cpu.cpp.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "common/status.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

const dim3 kBlock(64, 4);

dim3 grid_for(uint32_t w, uint32_t h)
{
    return dim3((w + kBlock.x - 1) / kBlock.x, std::min<uint32_t>((h + kBlock.y - 1) / kBlock.y, 65535u));
}

__global__ void quant_quantize97_kernel(const float *in, size_t is, int32_t *out, size_t os, const QuantizeParams p)
{
    const uint32_t top = p.layout.levels, w = p.layout.width[top], h = p.layout.height[top];
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        const int b = band_index_at(p.layout, top, x, y);
        const float v = in[size_t{y} * is + x];
        out[size_t{y} * os + x] = quantize_97(v, p.inv_step[b], p.max_magnitude[b]);
    }
}

__global__ void quant_quantize53_kernel(const int32_t *in, size_t is, int32_t *out, size_t os, const QuantizeParams p)
{
    const uint32_t top = p.layout.levels, w = p.layout.width[top], h = p.layout.height[top];
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        const int b = band_index_at(p.layout, top, x, y);
        out[size_t{y} * os + x] = quantize_53(in[size_t{y} * is + x], p.max_magnitude[b]);
    }
}

__global__ void quant_dequantize97_kernel(const int32_t *in, size_t is, float *out, size_t os, const DequantizeParams p)
{
    const uint32_t w = p.layout.width[p.top], h = p.layout.height[p.top];
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y) {
        const int b = band_index_at(p.layout, p.top, x, y);
        const int32_t v = in[size_t{y} * is + x];
        out[size_t{y} * os + x] = dequantize_97(v, p.half_step[b], p.roi_shift);
    }
}

__global__ void quant_dequantize53_kernel(const int32_t *in, size_t is, int32_t *out, size_t os, uint32_t w, uint32_t h,
                                          uint32_t roi_shift)
{
    const uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= w) return;
    for (uint32_t y = blockIdx.y * blockDim.y + threadIdx.y; y < h; y += gridDim.y * blockDim.y)
        out[size_t{y} * os + x] = dequantize_53(in[size_t{y} * is + x], roi_shift);
}

}  // namespace

void quantize_gpu(const float *in, size_t is, int32_t *out, size_t os, const QuantizeParams &p, void *stream)
{
    const uint32_t w = p.layout.width[p.layout.levels], h = p.layout.height[p.layout.levels];
    if (uint64_t{w} * h == 0) return;
    quant_quantize97_kernel<<<grid_for(w, h), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(in, is, out, os, p);
    check_cuda(cudaGetLastError(), "quant: quantize kernel");
}

void quantize_gpu(const int32_t *in, size_t is, int32_t *out, size_t os, const QuantizeParams &p, void *stream)
{
    const uint32_t w = p.layout.width[p.layout.levels], h = p.layout.height[p.layout.levels];
    if (uint64_t{w} * h == 0) return;
    quant_quantize53_kernel<<<grid_for(w, h), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(in, is, out, os, p);
    check_cuda(cudaGetLastError(), "quant: quantize kernel");
}

void dequantize_gpu(const int32_t *in, size_t is, float *out, size_t os, const DequantizeParams &p, void *stream)
{
    const uint32_t w = p.layout.width[p.top], h = p.layout.height[p.top];
    if (uint64_t{w} * h == 0) return;
    quant_dequantize97_kernel<<<grid_for(w, h), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(in, is, out, os, p);
    check_cuda(cudaGetLastError(), "quant: dequantize kernel");
}

void dequantize_gpu(const int32_t *in, size_t is, int32_t *out, size_t os, const DequantizeParams &p, void *stream)
{
    const uint32_t w = p.layout.width[p.top], h = p.layout.height[p.top];
    if (uint64_t{w} * h == 0) return;
    quant_dequantize53_kernel<<<grid_for(w, h), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(in, is, out, os, w, h,
                                                                                                p.roi_shift);
    check_cuda(cudaGetLastError(), "quant: dequantize kernel");
}

}  // namespace j2kc
