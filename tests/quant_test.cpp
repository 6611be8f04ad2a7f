// ISO/IEC 15444-1 Annex E/H: step choice and (exponent, mantissa) coding,
// synthesis energy gains, quantise/dequantise rules, ROI max-shift, band
// lookup in the Mallat layout, and GPU-vs-CPU bit-exactness.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/status.h"
#include "dwt/dwt.h"
#include "geometry/partition.h"
#include "quant/quant.h"
#include "quant/step_fit_core.h"
#include "test_images.h"

namespace j2kc {
namespace {

TEST(Quant, RangeBitsFollowTableE1)
{
    EXPECT_EQ(band_range_bits(8, 0), 8);   // LL
    EXPECT_EQ(band_range_bits(8, 1), 9);   // HL
    EXPECT_EQ(band_range_bits(8, 2), 9);   // LH
    EXPECT_EQ(band_range_bits(8, 3), 10);  // HH
    EXPECT_EQ(band_range_bits(12, 6), 14);
    EXPECT_EQ(band_orientation(4), kHL);
    EXPECT_EQ(band_decomposition(0, 5), 5);
    EXPECT_EQ(band_decomposition(1, 5), 5);
    EXPECT_EQ(band_decomposition(15, 5), 1);
    EXPECT_EQ(num_bitplanes(2, 9), 10);
}

TEST(Quant, StepEncodingRoundTrips)
{
    // Every codable step decodes and re-encodes to itself.
    for (int eps = 0; eps < 32; eps += 3)
        for (int mu = 0; mu < 2048; mu += 97) {
            const QuantStep s{static_cast<uint8_t>(eps), static_cast<uint16_t>(mu)};
            const QuantStep t = encode_step(step_size(s, 10), 10);
            EXPECT_EQ(t.exponent, s.exponent);
            EXPECT_EQ(t.mantissa, s.mantissa);
        }
    EXPECT_DOUBLE_EQ(step_size(QuantStep{8, 1024}, 10), 4.0 * 1.5);
    // Arbitrary steps come back within half a mantissa unit.
    std::mt19937 rng(3);
    for (int i = 0; i < 1000; ++i) {
        const double d = std::ldexp(1.0 + (rng() % 100000) / 100000.0, static_cast<int>(rng() % 20) - 10);
        const double e = step_size(encode_step(d, 12), 12);
        EXPECT_LE(std::fabs(e - d) / d, 1.0 / 4096 + 1e-12);
    }
    // Out of range: clamped to the largest / smallest codable step.
    EXPECT_EQ(encode_step(1e9, 8).exponent, 0);
    EXPECT_EQ(encode_step(1e9, 8).mantissa, 2047);
    EXPECT_EQ(encode_step(1e-12, 8).exponent, 31);
    EXPECT_THROW(encode_step(0.0, 8), Error);
}

TEST(Quant, ReversibleQuantization)
{
    const Quantization q = make_reversible_quantization(5, 10, 2);
    EXPECT_EQ(q.style, Quantization::kNone);
    EXPECT_EQ(q.guard_bits, 2);
    ASSERT_EQ(q.steps.size(), 16u);
    for (int b = 0; b < 16; ++b) {
        EXPECT_EQ(q.steps[b].exponent, band_range_bits(10, b));
        EXPECT_EQ(q.steps[b].mantissa, 0);
    }
}

double taps_energy(const std::vector<double> &t)
{
    double s = 0;
    for (double v : t) s += v * v;
    return s;
}

TEST(Quant, SynthesisEnergiesFromKnownTaps)
{
    // Synthesis filters of the standard's normalisation (F.3 tables, written
    // out independently): 9/7 low-pass, 5/3 low- and high-pass.
    const std::vector<double> g0_97 = {-0.0912717631142495, -0.0575435262284996, 0.5912717631142470, 1.1150870524569940,
                                       0.5912717631142470,  -0.0575435262284996, -0.0912717631142495};
    const std::vector<double> g0_53 = {0.5, 1.0, 0.5}, g1_53 = {-0.125, -0.25, 0.75, -0.25, -0.125};
    const double e0 = taps_energy(g0_97);
    EXPECT_NEAR(synthesis_energy(Wavelet::kIrreversible97, kLL, 1), e0 * e0, 1e-9);
    EXPECT_NEAR(synthesis_energy(Wavelet::kReversible53, kLL, 1), 1.5 * 1.5, 1e-12);
    EXPECT_NEAR(synthesis_energy(Wavelet::kReversible53, kHH, 1), taps_energy(g1_53) * taps_energy(g1_53), 1e-12);
    EXPECT_NEAR(synthesis_energy(Wavelet::kReversible53, kHL, 1), taps_energy(g1_53) * 1.5, 1e-12);
    // 5/3 two levels of low-pass: g0 * up2(g0) = [.25 .5 .75 1 .75 .5 .25]
    EXPECT_NEAR(synthesis_energy(Wavelet::kReversible53, kLL, 2), std::pow(2 * (0.0625 + 0.25 + 0.5625) + 1, 2), 1e-12);
    // Grows by ~4 per level in 2-D, continuing smoothly past the explicit range.
    double prev = 1e9;
    for (int nb = 2; nb <= 32; ++nb) {
        const double r = synthesis_energy(Wavelet::kIrreversible97, kHL, nb) /
                         synthesis_energy(Wavelet::kIrreversible97, kHL, nb - 1);
        if (nb >= 4) {
            EXPECT_LE(std::fabs(r - 4.0), prev + 1e-9) << nb;
        }
        if (nb >= 8) {
            EXPECT_NEAR(r, 4.0, 0.01) << nb;
        }
        prev = std::fabs(r - 4.0);
    }
}

TEST(Quant, SynthesisEnergyMatchesInverseDwtOfAnImpulse)
{
    // Measure with the real 9/7 inverse: a unit coefficient in the middle of a
    // band, synthesised, squared and summed.
    const int L = 3;
    const Rect tc{0, 0, 256, 256};
    const DwtLayout lay = dwt_layout(tc, L);
    for (int b = 0; b < num_bands(L); ++b) {
        std::vector<float> plane(tc.area(), 0.0f);
        const int r = b == 0 ? 0 : (b - 1) / 3 + 1;
        const BandOrientation o = band_orientation(b);
        const uint32_t x0 = (o == kHL || o == kHH) ? lay.width[r - 1] : 0;
        const uint32_t y0 = (o == kLH || o == kHH) ? lay.height[r - 1] : 0;
        const uint32_t bw = r == 0 ? lay.width[0] : lay.width[r - 1], bh = r == 0 ? lay.height[0] : lay.height[r - 1];
        plane[(y0 + bh / 2) * 256 + x0 + bw / 2] = 1.0f;
        dwt97_inverse(plane.data(), 256, tc, L);
        double s = 0;
        for (float v : plane) s += double{v} * v;
        EXPECT_NEAR(s, synthesis_energy(Wavelet::kIrreversible97, o, band_decomposition(b, L)), 1e-4 * s) << b;
    }
}

TEST(Quant, IrreversibleStepsEqualiseBandDistortion)
{
    const int L = 5, P = 12;
    const Quantization q = make_irreversible_quantization(L, P, 2, 0.5);
    EXPECT_EQ(q.style, Quantization::kScalarExpounded);
    ASSERT_EQ(q.steps.size(), static_cast<size_t>(num_bands(L)));
    for (int b = 0; b < num_bands(L); ++b) {
        const double w = band_mse_weight(q, Wavelet::kIrreversible97, P, b, L);
        EXPECT_NEAR(w, 0.25, 0.25 / 1000) << b;  // base^2 within the mantissa's precision
    }
}

// Passes of a block with Mb = 10 and P = 2: pass 0 is the cleanup pass of
// plane 7, passes 1-3 significance, refinement and cleanup of plane 6.
TEST(StepFit, CutIsThePlaneOfTheLastCleanupKept)
{
    EXPECT_EQ(j2kc::step_fit_cut_plane(10, 2, 0), -1);
    EXPECT_EQ(j2kc::step_fit_cut_plane(10, 2, 1), 7);
    EXPECT_EQ(j2kc::step_fit_cut_plane(10, 2, 2), 7);  // plane 6 half decoded
    EXPECT_EQ(j2kc::step_fit_cut_plane(10, 2, 3), 7);
    EXPECT_EQ(j2kc::step_fit_cut_plane(10, 2, 4), 6);
    EXPECT_EQ(j2kc::step_fit_cut_plane(10, 2, 3 * 8 - 2), 0);  // every plane
}

TEST(StepFit, TermsAreDoubledMidPoints)
{
    uint64_t xy = 0, yy = 0;
    // |v| = 5 cut at plane 1: the decoder keeps 4 and adds the half plane, 5;
    // the coefficient is taken as 5.5. Doubled: 11 * 10 and 10 * 10.
    j2kc::step_fit_add(-5, 1, 0, xy, yy);
    EXPECT_EQ(xy, 110u);
    EXPECT_EQ(yy, 100u);
    j2kc::step_fit_add(1, 1, 0, xy, yy);  // insignificant at the cut: no term
    j2kc::step_fit_add(0, 0, 0, xy, yy);
    j2kc::step_fit_add(3, -1, 0, xy, yy);  // no pass kept
    EXPECT_EQ(xy, 110u);
    EXPECT_EQ(yy, 100u);
    j2kc::step_fit_add(5, 0, 0, xy, yy);  // every plane: x = xh
    EXPECT_EQ(xy - 110u, yy - 100u);
    EXPECT_EQ(j2kc::step_fit_shift(18, 25), 0);
    EXPECT_EQ(j2kc::step_fit_shift(30, 25), 23);
    uint64_t big_xy = 0, big_yy = 0;  // 2^25 of the largest terms of 30 planes add up in 64 bits
    j2kc::step_fit_add((1 << 30) - 1, 29, j2kc::step_fit_shift(30, 25), big_xy, big_yy);
    EXPECT_LT(big_xy, uint64_t{1} << 39);
    EXPECT_LT(big_yy, uint64_t{1} << 39);
}

TEST(StepFit, StepScalesByTheFitKeepingTheExponent)
{
    const j2kc::QuantStep step{12, 1024};  // 1.5 * 2^(R - 12)
    const j2kc::QuantStep same = j2kc::fit_step(step, 7, 7);
    EXPECT_EQ(same.exponent, 12);
    EXPECT_EQ(same.mantissa, 1024);
    const j2kc::QuantStep shrunk = j2kc::fit_step(step, 9, 10);  // 3072 * 0.9 - 2048 = 716.8
    EXPECT_EQ(shrunk.exponent, 12);
    EXPECT_EQ(shrunk.mantissa, 717);
    EXPECT_EQ(j2kc::fit_step(step, 1, 2).mantissa, 0);     // 1.5 / 2 is under the exponent's range
    EXPECT_EQ(j2kc::fit_step(step, 2, 1).mantissa, 2047);  // 3 is above it
    EXPECT_EQ(j2kc::fit_step(step, 5, 0).mantissa, 1024);  // nothing decoded in the band
}

TEST(Quant, QuantiseIsDeadZoneFloor)
{
    const Rect tc{0, 0, 40, 30};
    const Quantization q = make_irreversible_quantization(2, 8, 2, 1.0);
    const QuantizeParams p = make_quantize_params(q, Wavelet::kIrreversible97, 8, tc, 2);
    const DequantizeParams d = make_dequantize_params(q, Wavelet::kIrreversible97, 8, tc, 2, 0, 0);
    std::mt19937 rng(9);
    std::uniform_real_distribution<float> dist(-300.f, 300.f);
    std::vector<float> x(tc.area());
    for (auto &v : x) v = dist(rng);
    x[5] = 0.0f;
    x[6] = -0.0f;
    std::vector<int32_t> idx(x.size());
    quantize_ref(x.data(), 40, idx.data(), 40, p);
    std::vector<int32_t> mid(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        const int b = band_index_at(p.layout, 2, i % 40, static_cast<uint32_t>(i / 40));
        const double delta = step_size(q.steps[b], band_range_bits(8, b));
        const double ratio = std::fabs(x[i]) / delta;
        EXPECT_NEAR(std::floor(ratio), std::abs(idx[i]),
                    (ratio - std::floor(ratio) > 1e-4 && std::ceil(ratio) - ratio > 1e-4) ? 0 : 1);
        EXPECT_TRUE(idx[i] == 0 || (idx[i] < 0) == (x[i] < 0));
        mid[i] = idx[i] == 0 ? 0 : (idx[i] < 0 ? -(2 * -idx[i] + 1) : 2 * idx[i] + 1);
    }
    EXPECT_EQ(idx[5], 0);
    EXPECT_EQ(idx[6], 0);
    // Mid-point reconstruction lands inside the index's interval.
    std::vector<float> rec(x.size());
    dequantize_ref(mid.data(), 40, rec.data(), 40, d);
    for (size_t i = 0; i < x.size(); ++i) {
        const int b = band_index_at(p.layout, 2, i % 40, static_cast<uint32_t>(i / 40));
        const double delta = step_size(q.steps[b], band_range_bits(8, b));
        if (idx[i] != 0)
            EXPECT_LE(std::fabs(rec[i] - x[i]), delta / 2 * 1.001 + 1e-4);
        else
            EXPECT_LT(std::fabs(x[i]), delta * 1.001);
    }
}

TEST(Quant, QuantiseClampsToBitplanes)
{
    const Rect tc{0, 0, 4, 1};
    Quantization q = make_reversible_quantization(0, 8, 1);  // Mb = 1 + 8 - 1 = 8
    const QuantizeParams p = make_quantize_params(q, Wavelet::kReversible53, 8, tc, 0);
    EXPECT_EQ(p.max_magnitude[0], 255);
    int32_t v[4] = {300, -300, 17, -255}, o[4];
    quantize_ref(v, 4, o, 4, p);
    EXPECT_EQ(o[0], 255);
    EXPECT_EQ(o[1], -255);
    EXPECT_EQ(o[2], 17);
    EXPECT_EQ(o[3], -255);
    float f[4] = {NAN, INFINITY, -INFINITY, 1e30f};
    QuantizeParams pf = p;
    pf.inv_step[0] = 1.0f;
    quantize_ref(f, 4, o, 4, pf);
    EXPECT_EQ(o[0], 0);
    EXPECT_EQ(o[1], 255);
    EXPECT_EQ(o[2], -255);
    EXPECT_EQ(o[3], 255);
}

TEST(Quant, Dequantise53AndRoiMaxShift)
{
    const Rect tc{0, 0, 8, 1};
    const Quantization q = make_reversible_quantization(0, 8, 2);
    DequantizeParams p = make_dequantize_params(q, Wavelet::kReversible53, 8, tc, 0, 0, 0);
    int32_t v[8] = {7, -7, 10, -1, 0, 1, 80, -81}, o[8];
    dequantize_ref(v, 8, o, 8, p);
    const int32_t plain[8] = {3, -3, 5, 0, 0, 0, 40, -40};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], plain[i]) << i;
    // s = 3: index magnitudes >= 8 are ROI (scaled by 8), others background.
    p = make_dequantize_params(q, Wavelet::kReversible53, 8, tc, 0, 0, 3);
    int32_t r[8] = {2 * 40, -2 * 40, 2 * 7 + 1, -2 * 7, 2 * 8, 2 * 8 * 37 + 1, 0, 2 * 9};
    dequantize_ref(r, 8, o, 8, p);
    const int32_t roi[8] = {5, -5, 7, -7, 1, 37, 0, 1};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(o[i], roi[i]) << i;
}

TEST(Quant, BandLookupMatchesPartitionRects)
{
    for (uint32_t o : {0u, 1u, 3u}) {
        const Rect tc{o, o + 2, o + 37, o + 2 + 23};
        for (int L : {0, 1, 3, 6}) {
            const DwtLayout lay = dwt_layout(tc, L);
            std::vector<uint64_t> count(num_bands(L), 0);
            for (uint32_t y = 0; y < tc.height(); ++y)
                for (uint32_t x = 0; x < tc.width(); ++x) ++count[band_index_at(lay, L, x, y)];
            EXPECT_EQ(count[0], band_rect(tc, kLL, L).area());
            for (int b = 1; b < num_bands(L); ++b)
                EXPECT_EQ(count[b], band_rect(tc, band_orientation(b), band_decomposition(b, L)).area())
                    << "L=" << L << " b=" << b;
        }
    }
}

/* ---------------- GPU == CPU ---------------- */

using j2kc_test::have_gpu;

template <class T>
T *to_device(const std::vector<T> &v)
{
    T *d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, v.size() * sizeof(T) + 4), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    return d;
}
template <class T>
std::vector<T> to_host(const T *d, size_t n)
{
    std::vector<T> v(n);
    EXPECT_EQ(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
}

TEST(GpuQuant, MatchesCpuBitForBit)
{
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    std::mt19937 rng(21);
    for (uint32_t o : {0u, 1u}) {
        const Rect tc{o, 3, o + 301, 3 + 77};
        const size_t stride = 305;
        const int L = 5;
        const Quantization q97 = make_irreversible_quantization(L, 10, 2, 0.37);
        const Quantization q53 = make_reversible_quantization(L, 10, 1);
        std::vector<float> f(stride * tc.height());
        std::vector<int32_t> iv(f.size());
        std::uniform_real_distribution<float> dist(-5000.f, 5000.f);
        for (size_t i = 0; i < f.size(); ++i) {
            f[i] = dist(rng);
            iv[i] = static_cast<int32_t>(rng() % 8000) - 4000;
        }
        // quantise 9/7 and 5/3
        {
            const QuantizeParams p = make_quantize_params(q97, Wavelet::kIrreversible97, 10, tc, L);
            // In place on the GPU: the stride padding keeps the input's bits, so start from them.
            std::vector<int32_t> cpu(f.size());
            std::memcpy(cpu.data(), f.data(), f.size() * sizeof(float));
            quantize_ref(f.data(), stride, cpu.data(), stride, p);
            float *df = to_device(f);
            quantize_gpu(df, stride, reinterpret_cast<int32_t *>(df), stride, p, nullptr);  // in place
            EXPECT_EQ(to_host(reinterpret_cast<int32_t *>(df), f.size()), cpu);
            cudaFree(df);
        }
        {
            const QuantizeParams p = make_quantize_params(q53, Wavelet::kReversible53, 10, tc, L);
            std::vector<int32_t> cpu(iv.size(), 0), zero(iv.size(), 0);
            quantize_ref(iv.data(), stride, cpu.data(), stride, p);
            int32_t *di = to_device(iv), *dout = to_device(zero);
            quantize_gpu(di, stride, dout, stride, p, nullptr);
            EXPECT_EQ(to_host(dout, iv.size()), cpu);
            cudaFree(di);
            cudaFree(dout);
        }
        // dequantise 9/7 and 5/3, with ROI and reduce
        for (int roi : {0, 4})
            for (int reduce : {0, 2}) {
                const DequantizeParams p =
                    make_dequantize_params(q97, Wavelet::kIrreversible97, 10, tc, L, reduce, roi);
                std::vector<float> cpu(iv.size(), 0.f);
                dequantize_ref(iv.data(), stride, cpu.data(), stride, p);
                int32_t *di = to_device(iv);
                dequantize_gpu(di, stride, reinterpret_cast<float *>(di), stride, p, nullptr);
                auto got = to_host(reinterpret_cast<float *>(di), iv.size());
                const uint32_t w = p.layout.width[p.top], h = p.layout.height[p.top];
                for (uint32_t y = 0; y < h; ++y)
                    ASSERT_EQ(std::memcmp(&got[y * stride], &cpu[y * stride], w * 4), 0) << y;
                cudaFree(di);
                const DequantizeParams p53 =
                    make_dequantize_params(q53, Wavelet::kReversible53, 10, tc, L, reduce, roi);
                std::vector<int32_t> c53(iv.size(), 0), zero(iv.size(), 0);
                dequantize_ref(iv.data(), stride, c53.data(), stride, p53);
                int32_t *d2 = to_device(iv), *o2 = to_device(zero);
                dequantize_gpu(d2, stride, o2, stride, p53, nullptr);
                EXPECT_EQ(to_host(o2, iv.size()), c53);
                cudaFree(d2);
                cudaFree(o2);
            }
    }
}

}  // namespace
}  // namespace j2kc
