// ISO/IEC 15444-1 Annex F: DWT round trips, an independent per-definition
// oracle (explicit periodic symmetric extension, F-9 formulas for 5/3 and the
// 9/7 analysis filter taps by convolution) for the Mallat layout and parity
// rules, and GPU-vs-CPU bit-exactness.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <type_traits>
#include <map>
#include <random>
#include <vector>

#include "dwt/dwt.h"
#include "geometry/partition.h"
#include "test_images.h"

namespace j2kc {
namespace {

struct Size {
    uint32_t w, h;
};
const Size kSizes[] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {17, 9}, {33, 65}, {64, 64}, {129, 3}};
const uint32_t kOrigins[] = {0, 1, 3};
const int kLevels[] = {0, 1, 2, 5};

std::vector<int32_t> random_ints(size_t n, uint32_t seed, int lo = -512, int hi = 511)
{
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> d(lo, hi);
    std::vector<int32_t> v(n);
    for (auto &x : v) x = d(rng);
    return v;
}

/* ---------------- oracle: the standard's procedures written out ---------- */

int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

/** PSE (F-4): index i mapped into [i0, i1). */
int64_t pse(int64_t i, int64_t i0, int64_t i1)
{
    const int64_t n = i1 - i0;
    if (n == 1) return i0;
    const int64_t period = 2 * (n - 1);
    int64_t k = (i - i0) % period;
    if (k < 0) k += period;
    return i0 + (k < n ? k : period - k);
}

/** 1D_SD on X indexed by absolute coordinate [i0, i1) -> Y (same coordinates). */
std::map<int64_t, double> oracle_1d(const std::map<int64_t, double> &X, int64_t i0, int64_t i1, bool rev)
{
    std::map<int64_t, double> Y;
    if (i1 <= i0) return Y;
    if (i1 - i0 == 1) {
        Y[i0] = (i0 % 2 == 0) ? X.at(i0) : 2 * X.at(i0);
        return Y;
    }
    auto x = [&](int64_t i) { return X.at(pse(i, i0, i1)); };
    if (rev) {
        std::map<int64_t, int64_t> Yi;
        for (int64_t i = i0 - 3; i < i1 + 3; ++i)
            if (i % 2 != 0)  // F-9 first: Y(2n+1)
                Yi[i] = static_cast<int64_t>(x(i)) -
                        floor_div(static_cast<int64_t>(x(i - 1)) + static_cast<int64_t>(x(i + 1)), 2);
        for (int64_t i = i0; i < i1; ++i) {
            if (i % 2 == 0)
                Y[i] = static_cast<double>(static_cast<int64_t>(x(i)) + floor_div(Yi.at(i - 1) + Yi.at(i + 1) + 2, 4));
            else
                Y[i] = static_cast<double>(Yi.at(i));
        }
        return Y;
    }
    // 9/7 analysis filters (Table F.? taps), low-pass DC gain 1, high-pass Nyquist gain 2.
    static const double h0[] = {0.6029490182363579, 0.2668641184428723, -0.07822326652898785, -0.01686411844287495,
                                0.02674875741080976};
    static const double h1[] = {1.115087052456994, -0.5912717631142470, -0.05754352622849957, 0.09127176311424948};
    for (int64_t i = i0; i < i1; ++i) {
        const bool even = (i % 2 == 0);
        const double *h = even ? h0 : h1;
        const int taps = even ? 5 : 4;
        double s = h[0] * x(i);
        for (int k = 1; k < taps; ++k) s += h[k] * (x(i - k) + x(i + k));
        Y[i] = s;
    }
    return Y;
}

/**
 * 2D_SD per F.4.2 on absolute coordinates, then placement of each band at its
 * Mallat position computed from tier2's band_rect sizes (B-15).
 */
std::vector<double> oracle_forward(const std::vector<double> &in, const Rect &tc, int levels, bool rev)
{
    const uint32_t w = tc.width(), h = tc.height();
    std::vector<double> out(in.size(), NAN);
    // a: current LL on absolute coordinates of resolution.
    std::map<std::pair<int64_t, int64_t>, double> a;
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) a[{tc.x0 + x, tc.y0 + y}] = in[y * w + x];
    Rect cur = tc;
    for (int nb = 1; nb <= levels; ++nb) {
        std::map<std::pair<int64_t, int64_t>, double> v;
        for (int64_t u = cur.x0; u < cur.x1; ++u) {  // VER_SD on each column
            std::map<int64_t, double> X;
            for (int64_t t = cur.y0; t < cur.y1; ++t) X[t] = a.at({u, t});
            auto Y = oracle_1d(X, cur.y0, cur.y1, rev);
            for (auto &kv : Y) v[{u, kv.first}] = kv.second;
        }
        std::map<std::pair<int64_t, int64_t>, double> hz;
        for (int64_t t = cur.y0; t < cur.y1; ++t) {  // HOR_SD on each row
            std::map<int64_t, double> X;
            for (int64_t u = cur.x0; u < cur.x1; ++u) X[u] = v.at({u, t});
            auto Y = oracle_1d(X, cur.x0, cur.x1, rev);
            for (auto &kv : Y) hz[{kv.first, t}] = kv.second;
        }
        // 2D_DEINTERLEAVE (F.4.5) and placement.
        const Rect ll = band_rect(tc, kLL, nb);
        std::map<std::pair<int64_t, int64_t>, double> next;
        for (auto &kv : hz) {
            const int64_t u = kv.first.first, t = kv.first.second;
            const int ox = static_cast<int>(u & 1), oy = static_cast<int>(t & 1);
            const int64_t bu = (u - ox) / 2, bt = (t - oy) / 2;  // band coordinate
            if (!ox && !oy) {
                next[{bu, bt}] = kv.second;
                continue;
            }
            const BandOrientation o = static_cast<BandOrientation>(ox + 2 * oy);
            const Rect br = band_rect(tc, o, nb);
            const int64_t px = (ox ? ll.width() : 0) + (bu - br.x0);
            const int64_t py = (oy ? ll.height() : 0) + (bt - br.y0);
            out[py * w + px] = kv.second;
        }
        a = std::move(next);
        cur = ll;
    }
    for (auto &kv : a) out[(kv.first.second - cur.y0) * w + (kv.first.first - cur.x0)] = kv.second;
    return out;
}

struct Case {
    uint32_t w, h, x0, y0;
    int levels;
};
std::vector<Case> oracle_cases()
{
    std::vector<Case> c;
    for (Size s : {Size{1, 1}, Size{1, 7}, Size{7, 1}, Size{2, 3}, Size{5, 6}, Size{17, 9}})
        for (uint32_t x0 : {0u, 1u, 3u})
            for (uint32_t y0 : {0u, 1u, 2u})
                for (int l : {1, 2, 3}) c.push_back({s.w, s.h, x0, y0, l});
    return c;
}

TEST(Dwt53, ForwardMatchesStandardProcedure)
{
    uint32_t seed = 1;
    for (const Case &c : oracle_cases()) {
        const Rect tc{c.x0, c.y0, c.x0 + c.w, c.y0 + c.h};
        auto data = random_ints(size_t{c.w} * c.h, seed++);
        std::vector<double> in(data.begin(), data.end());
        const auto expect = oracle_forward(in, tc, c.levels, true);
        dwt53_forward(data.data(), c.w, tc, c.levels);
        for (size_t i = 0; i < data.size(); ++i)
            ASSERT_EQ(static_cast<double>(data[i]), expect[i])
                << c.w << "x" << c.h << " at (" << c.x0 << "," << c.y0 << ") L=" << c.levels << " i=" << i;
    }
}

TEST(Dwt97, ForwardMatchesConvolutionOracle)
{
    uint32_t seed = 100;
    for (const Case &c : oracle_cases()) {
        const Rect tc{c.x0, c.y0, c.x0 + c.w, c.y0 + c.h};
        auto ints = random_ints(size_t{c.w} * c.h, seed++, -128, 127);
        std::vector<float> data(ints.begin(), ints.end());
        std::vector<double> in(ints.begin(), ints.end());
        const auto expect = oracle_forward(in, tc, c.levels, false);
        dwt97_forward(data.data(), c.w, tc, c.levels);
        for (size_t i = 0; i < data.size(); ++i)
            ASSERT_NEAR(data[i], expect[i], 2e-3 * (1 + std::fabs(expect[i])))
                << c.w << "x" << c.h << " at (" << c.x0 << "," << c.y0 << ") L=" << c.levels << " i=" << i;
    }
}

TEST(Dwt53, SingleOddSampleIsDoubled)
{
    // A 1x1 tile-component at (1, 0): one high-pass column sample -> HL, times 2.
    int32_t v = -37;
    dwt53_forward(&v, 1, Rect{1, 0, 2, 1}, 1);
    EXPECT_EQ(v, -74);
    dwt53_inverse(&v, 1, Rect{1, 0, 2, 1}, 1);
    EXPECT_EQ(v, -37);
    int32_t u = 11;  // (1, 1): HH, doubled by both passes
    dwt53_forward(&u, 1, Rect{1, 1, 2, 2}, 3);
    EXPECT_EQ(u, 44);
    int32_t e = 9;  // (2, 2): stays LL at level 1, odd at level 2 (ceil(2/2) = 1)
    dwt53_forward(&e, 1, Rect{2, 2, 3, 3}, 2);
    EXPECT_EQ(e, 36);
}

TEST(Dwt53, RoundTripExact)
{
    uint32_t seed = 7;
    for (Size s : kSizes)
        for (uint32_t o : kOrigins)
            for (int l : kLevels) {
                const uint32_t y0 = (2 * o) % 5;  // 0, 2, 1: every parity pairing
                const Rect tc{o, y0, o + s.w, y0 + s.h};
                const size_t stride = s.w + 3;
                auto data = random_ints(stride * s.h, seed++, -(1 << 15), (1 << 15) - 1);
                auto orig = data;
                dwt53_forward(data.data(), stride, tc, l);
                if (l > 0 && s.w * s.h > 4) {
                    bool changed = false;
                    for (size_t i = 0; i < data.size(); ++i) changed |= data[i] != orig[i];
                    EXPECT_TRUE(changed);
                }
                dwt53_inverse(data.data(), stride, tc, l);
                ASSERT_EQ(data, orig) << s.w << "x" << s.h << " origin " << o << " L=" << l;
            }
}

TEST(Dwt53, ManyLevelsOnTinyPlanes)
{
    uint32_t seed = 77;
    for (int l : {6, 17, 32})
        for (uint32_t x0 : {0u, 5u, 0x7FFFFFFFu})
            for (Size s : {Size{1, 1}, Size{3, 2}, Size{9, 4}}) {
                const Rect tc{x0, 3, x0 + s.w, 3 + s.h};
                auto data = random_ints(size_t{s.w} * s.h, seed++);
                auto orig = data;
                dwt53_forward(data.data(), s.w, tc, l);
                dwt53_inverse(data.data(), s.w, tc, l);
                ASSERT_EQ(data, orig);
            }
}

TEST(Dwt53, ReducedInverseEqualsForwardLowPass)
{
    // Inverting all but `skip` levels gives resolution L - skip, which is the
    // LL band after `skip` forward levels.
    uint32_t seed = 11;
    for (uint32_t o : kOrigins)
        for (int skip : {1, 2, 3}) {
            const int L = 4;
            const Rect tc{o, o + 2, o + 45, o + 2 + 31};
            auto img = random_ints(tc.area(), seed++);
            auto full = img, part = img;
            dwt53_forward(full.data(), tc.width(), tc, L);
            dwt53_inverse(full.data(), tc.width(), tc, L, skip);
            dwt53_forward(part.data(), tc.width(), tc, skip);
            const Rect rr = dwt_resolution_rect(tc, L, L - skip);
            for (uint32_t y = 0; y < rr.height(); ++y)
                for (uint32_t x = 0; x < rr.width(); ++x) ASSERT_EQ(full[y * tc.width() + x], part[y * tc.width() + x]);
        }
}

TEST(Dwt53, LayoutSizesMatchPartition)
{
    for (uint32_t o : kOrigins) {
        const Rect tc{o, o + 1, o + 37, o + 1 + 22};
        const int L = 3;
        const DwtLayout lay = dwt_layout(tc, L);
        for (int r = 1; r <= L; ++r) {
            const Rect hl = band_rect(tc, kHL, static_cast<uint32_t>(L - r + 1));
            const Rect lh = band_rect(tc, kLH, static_cast<uint32_t>(L - r + 1));
            EXPECT_EQ(lay.width[r] - lay.width[r - 1], hl.width());
            EXPECT_EQ(lay.height[r] - lay.height[r - 1], lh.height());
        }
        EXPECT_EQ(lay.width[0], band_rect(tc, kLL, L).width());
    }
}

TEST(Dwt97, RoundTripWithinTolerance)
{
    uint32_t seed = 3;
    for (Size s : kSizes)
        for (uint32_t o : kOrigins)
            for (int l : kLevels) {
                const Rect tc{o, 2 * o, o + s.w, 2 * o + s.h};
                auto ints = random_ints(size_t{s.w} * s.h, seed++, -2048, 2047);
                std::vector<float> data(ints.begin(), ints.end());
                dwt97_forward(data.data(), s.w, tc, l);
                dwt97_inverse(data.data(), s.w, tc, l);
                for (size_t i = 0; i < data.size(); ++i)
                    ASSERT_NEAR(data[i], static_cast<float>(ints[i]), 0.02f)
                        << s.w << "x" << s.h << " origin " << o << " L=" << l;
            }
}

TEST(Dwt, RejectsBadArguments)
{
    int32_t v = 0;
    EXPECT_THROW(dwt53_forward(&v, 1, Rect{0, 0, 1, 1}, 33), Error);
    EXPECT_THROW(dwt53_inverse(&v, 1, Rect{0, 0, 1, 1}, 2, 3), Error);
    EXPECT_THROW(dwt53_forward(&v, 0, Rect{0, 0, 1, 1}, 1), Error);
}

/* ---------------- GPU == CPU ---------------- */

using j2kc_test::have_gpu;

template <class T>
void gpu_compare(const Rect &tc, int levels, int skip, uint32_t seed)
{
    const size_t stride = tc.width() + 5;
    auto ints = random_ints(stride * tc.height(), seed, -4096, 4095);
    std::vector<T> host(ints.begin(), ints.end());
    T *d = nullptr;
    void *scratch = nullptr;
    ASSERT_EQ(cudaMalloc(&d, host.size() * sizeof(T) + 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&scratch, dwt_gpu_inverse_scratch_bytes(tc) + 4), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    auto cpu = host;
    if constexpr (std::is_same_v<T, int32_t>) {
        dwt53_forward(cpu.data(), stride, tc, levels);
        dwt53_forward_gpu(d, stride, tc, levels, scratch, nullptr);
    } else {
        dwt97_forward(cpu.data(), stride, tc, levels);
        dwt97_forward_gpu(d, stride, tc, levels, scratch, nullptr);
    }
    std::vector<T> got(host.size());
    ASSERT_EQ(cudaMemcpy(got.data(), d, got.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(std::memcmp(&got[i], &cpu[i], sizeof(T)), 0)
            << "forward " << tc.width() << "x" << tc.height() << " L=" << levels << " i=" << i;
    if constexpr (std::is_same_v<T, int32_t>) {
        dwt53_inverse(cpu.data(), stride, tc, levels, skip);
        dwt53_inverse_gpu(d, stride, tc, levels, skip, scratch, nullptr);
    } else {
        dwt97_inverse(cpu.data(), stride, tc, levels, skip);
        dwt97_inverse_gpu(d, stride, tc, levels, skip, scratch, nullptr);
    }
    ASSERT_EQ(cudaMemcpy(got.data(), d, got.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(std::memcmp(&got[i], &cpu[i], sizeof(T)), 0)
            << "inverse " << tc.width() << "x" << tc.height() << " L=" << levels << " skip=" << skip << " i=" << i;
    cudaFree(d);
    cudaFree(scratch);
}

TEST(GpuDwt, MatchesCpuBitForBit)
{
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    uint32_t seed = 1000;
    for (Size s : kSizes)
        for (uint32_t o : kOrigins)
            for (int l : kLevels) {
                const Rect tc{o, o ^ 1, o + s.w, (o ^ 1) + s.h};
                gpu_compare<int32_t>(tc, l, l > 1 ? 1 : 0, seed++);
                gpu_compare<float>(tc, l, l > 1 ? 1 : 0, seed++);
            }
    // Large and odd: a 4K-ish row, and a row too long for shared memory.
    gpu_compare<float>(Rect{1, 3, 1 + 4097, 3 + 37}, 5, 0, seed++);
    gpu_compare<int32_t>(Rect{1, 3, 1 + 4097, 3 + 37}, 5, 2, seed++);
    gpu_compare<float>(Rect{3, 0, 3 + 70001, 3}, 3, 0, seed++);
    gpu_compare<int32_t>(Rect{3, 0, 3 + 70001, 3}, 3, 0, seed++);
    gpu_compare<float>(Rect{0, 1, 2, 1 + 20001}, 32, 0, seed++);
    // Several tiles each way at the first levels, with odd and even origins.
    gpu_compare<float>(Rect{5, 2, 5 + 331, 2 + 203}, 3, 0, seed++);
    gpu_compare<int32_t>(Rect{5, 2, 5 + 331, 2 + 203}, 3, 1, seed++);
    gpu_compare<float>(Rect{0, 7, 260, 7 + 258}, 6, 0, seed++);
    // 196 = 2 * 64 + 68: the last tile loads its whole span up to the run's
    // end, whose last sample the inverse leaves as at a cut (lift_whole_span).
    gpu_compare<float>(Rect{0, 1, 196, 1 + 196}, 1, 0, seed++);
    gpu_compare<int32_t>(Rect{3, 0, 3 + 196, 196}, 1, 0, seed++);
}

}  // namespace
}  // namespace j2kc
