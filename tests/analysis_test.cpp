/**
 * @file analysis_test.cpp
 * @brief The CUDA encoder's forward 9/7 DWT with quantisation in its stores
 * (pipeline/analysis.cu) against the CPU's two stages, bit for bit: odd
 * origins and sizes, one-sample-wide regions, 0 to 32 levels and levels of
 * several tiles of the GPU kernel each way.
 */
#include "pipeline/analysis.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "dwt/dwt.h"
#include "quant/quant.h"
#include "test_images.h"
#include "test_regions.h"

namespace j2kc {
namespace {

using j2kc_test::have_gpu;

void compare(const Rect &tc, int levels, double base_step, uint32_t seed)
{
    const int precision = 12;
    const Quantization q = make_irreversible_quantization(levels, precision, 2, base_step);
    const QuantizeParams params = make_quantize_params(q, Wavelet::kIrreversible97, precision, tc, levels);
    // Samples as the colour transform leaves them: DC-shifted, with fractions.
    const size_t stride = tc.width() + 3, samples = stride * tc.height();
    std::vector<float> plane(samples);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-2048.0f, 2047.0f);
    for (float &v : plane) v = dist(rng);

    // The CPU's order (encoder_cpu.cpp): the whole transform, then quantisation.
    std::vector<float> coefficients = plane;
    dwt97_forward(coefficients.data(), stride, tc, levels);
    std::vector<int32_t> want(samples);
    quantize_ref(coefficients.data(), stride, want.data(), stride, params);

    float *d_plane = nullptr;
    int32_t *d_indices = nullptr;
    void *scratch = nullptr;
    ASSERT_EQ(cudaMalloc(&d_plane, samples * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d_indices, samples * 4 + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&scratch, analysis_gpu_scratch_bytes(tc) + 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d_plane, plane.data(), samples * 4, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(d_indices, 0x5a, samples * 4), cudaSuccess);
    analyse_component_gpu(d_plane, stride, d_indices, stride, tc, levels, params, scratch, nullptr);
    std::vector<int32_t> got(samples);
    ASSERT_EQ(cudaMemcpy(got.data(), d_indices, samples * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d_plane);
    cudaFree(d_indices);
    cudaFree(scratch);
    for (uint32_t y = 0; y < tc.height(); ++y)
        for (uint32_t x = 0; x < tc.width(); ++x)
            ASSERT_EQ(got[y * stride + x], want[y * stride + x])
                << tc.width() << "x" << tc.height() << " at (" << tc.x0 << "," << tc.y0 << ") L=" << levels << " step "
                << base_step << " index (" << x << "," << y << ")";
}

TEST(GpuAnalysis, FusedQuantisationMatchesCpuBitForBit)
{
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    uint32_t seed = 11;
    for (const Rect &tc : j2kc_test::odd_regions())
        for (int levels : {0, 1, 3, 5, 32})
            for (double step : {1.0 / 64, 4.0}) compare(tc, levels, step, seed++);
    // Levels of hundreds and of over a thousand tiles, which take blocks of other shapes.
    compare(Rect{1, 3, 1 + 1030, 3 + 1030}, 4, 1.0 / 16, seed++);
    compare(Rect{2, 0, 2 + 2100, 2100}, 5, 1.0 / 16, seed++);
    // 116 = 56 + 60: the second tile loads its whole span up to the run's
    // end, whose last sample the steps leave as at a cut (lift_whole_span).
    compare(Rect{0, 1, 116, 1 + 116}, 1, 1.0 / 16, seed++);
    compare(Rect{3, 0, 3 + 116, 116}, 2, 4.0, seed++);
}

}  // namespace
}  // namespace j2kc
