/**
 * @file reconstruct_test.cpp
 * @brief The CUDA decoder's fused dequantisation and inverse DWT of one
 * tile-component (pipeline/reconstruct.cu) against the CPU's two stages,
 * bit for bit: both filters, odd origins and sizes, reduced resolutions, ROI
 * shifts and several tiles of the GPU kernel each way.
 */
#include "pipeline/reconstruct.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "dwt/dwt.h"
#include "quant/quant.h"
#include "test_images.h"
#include "test_regions.h"

namespace j2kc {
namespace {

using j2kc_test::have_gpu;

/** A tile-component plane as Tier-1 leaves it: values sign * (2M + r), the
 * stride wider than the plane. */
ComponentPlane make_plane(const Rect &tc, int levels, int skip, Wavelet wavelet, int roi_shift)
{
    ComponentPlane p;
    p.tc_rect = tc;
    p.levels = static_cast<uint8_t>(levels);
    p.levels_to_skip = static_cast<uint8_t>(skip);
    p.wavelet = wavelet;
    p.out_rect = dwt_resolution_rect(tc, levels, levels - skip);
    p.stride = p.out_rect.width() + 3;
    const int precision = 12;
    const Quantization q = wavelet == Wavelet::kReversible53
                               ? make_reversible_quantization(levels, precision, 2)
                               : make_irreversible_quantization(levels, precision, 2, 1.0 / 64);
    p.dequant = make_dequantize_params(q, wavelet, precision, tc, levels, skip, roi_shift);
    p.precision = precision;
    return p;
}

/** The CPU's order (reconstruct_cpu.cpp): dequantise the whole plane, then the
 * inverse DWT. */
template <class T>
std::vector<T> cpu_samples(const ComponentPlane &p, const std::vector<int32_t> &tier1)
{
    std::vector<T> v(tier1.size());
    dequantize_ref(tier1.data(), p.stride, v.data(), p.stride, p.dequant);
    if constexpr (std::is_same_v<T, int32_t>)
        dwt53_inverse(v.data(), p.stride, p.tc_rect, p.levels, p.levels_to_skip);
    else
        dwt97_inverse(v.data(), p.stride, p.tc_rect, p.levels, p.levels_to_skip);
    return v;
}

template <class T>
void compare(const Rect &tc, int levels, int skip, int roi_shift, uint32_t seed)
{
    const Wavelet wavelet = std::is_same_v<T, int32_t> ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    const ComponentPlane p = make_plane(tc, levels, skip, wavelet, roi_shift);
    std::vector<int32_t> tier1(p.samples());
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> dist(-9000, 9000);
    for (int32_t &v : tier1) v = dist(rng);
    const std::vector<T> want = cpu_samples<T>(p, tier1);

    int32_t *plane = nullptr;
    void *out = nullptr, *scratch = nullptr;
    const size_t bytes = tier1.size() * 4 + 4;
    ASSERT_EQ(cudaMalloc(&plane, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, bytes), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&scratch, reconstruct_gpu_scratch_bytes(p) + 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(plane, tier1.data(), tier1.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
    reconstruct_component_gpu(p, plane, out, scratch, nullptr);
    const bool in_place = reconstructs_in_place(p);
    const size_t stride = in_place ? p.stride : p.out_rect.width();
    std::vector<T> got(stride * p.out_rect.height());
    ASSERT_EQ(cudaMemcpy(got.data(), in_place ? static_cast<void *>(plane) : out, got.size() * sizeof(T),
                         cudaMemcpyDeviceToHost),
              cudaSuccess);
    cudaFree(plane);
    cudaFree(out);
    cudaFree(scratch);
    for (uint32_t y = 0; y < p.out_rect.height(); ++y)
        for (uint32_t x = 0; x < p.out_rect.width(); ++x)
            ASSERT_EQ(std::memcmp(&got[y * stride + x], &want[y * p.stride + x], sizeof(T)), 0)
                << tc.width() << "x" << tc.height() << " at (" << tc.x0 << "," << tc.y0 << ") L=" << levels
                << " skip=" << skip << " roi=" << roi_shift << " sample (" << x << "," << y << ")";
}

TEST(GpuReconstruct, FusedDequantisationMatchesCpuBitForBit)
{
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    uint32_t seed = 7;
    for (const Rect &tc : j2kc_test::odd_regions())
        for (int levels : {0, 1, 3, 5})
            for (int skip = 0; skip <= std::min(levels, 2); skip += 2)
                for (int roi : {0, 3}) {
                    compare<int32_t>(tc, levels, skip, roi, seed++);
                    compare<float>(tc, levels, skip, roi, seed++);
                }
    // Levels of hundreds and of over a thousand tiles, which take blocks of other shapes.
    compare<float>(Rect{1, 3, 1 + 1030, 3 + 1030}, 4, 0, 0, seed++);
    compare<int32_t>(Rect{1, 3, 1 + 1030, 3 + 1030}, 4, 1, 3, seed++);
    compare<float>(Rect{2, 0, 2 + 2100, 2100}, 5, 0, 3, seed++);
    compare<int32_t>(Rect{2, 0, 2 + 2100, 2100}, 5, 0, 0, seed++);
    // A last tile whose whole span ends at the run's end (196 = 2 * 64 + 68).
    compare<float>(Rect{1, 0, 1 + 196, 196}, 2, 0, 0, seed++);
    compare<int32_t>(Rect{0, 1, 196, 1 + 196}, 2, 0, 3, seed++);
}

}  // namespace
}  // namespace j2kc
