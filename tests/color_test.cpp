// ISO/IEC 15444-1 Annex G: sample unpack/pack for planar and packed layouts,
// DC level shift, RCT/ICT round trips, and GPU-vs-CPU bit-exactness.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "color/color.h"
#include "common/status.h"
#include "test_images.h"

namespace j2kc {
namespace {

/** An image buffer with n components interleaved (packed) or planar. */
struct Layout {
    const char *name;
    uint32_t components;
    uint8_t bytes, precision, shift, is_signed;
    bool packed;
};
const Layout kLayouts[] = {
    {"gray8", 1, 1, 8, 0, 0, false},     {"yuv10le", 3, 2, 10, 0, 0, false}, {"gray12le", 1, 2, 12, 0, 0, false},
    {"gray16le", 1, 2, 16, 0, 0, false}, {"rgb24", 3, 1, 8, 0, 0, true},     {"rgb48le", 3, 2, 16, 0, 0, true},
    {"xyz12le", 3, 2, 12, 4, 0, true},   {"s8", 1, 1, 8, 0, 1, false},       {"s12in16", 3, 2, 12, 2, 1, true},
    {"u1", 1, 1, 1, 7, 0, false},        {"u20in32", 3, 4, 20, 3, 0, true},  {"s32", 1, 4, 32, 0, 1, false},
};

struct Image {
    std::vector<uint8_t> bytes;
    std::vector<j2kc_component> comps;
};

Image make_image(const Layout &l, uint32_t w, uint32_t h, uint32_t seed, uint32_t pad = 3)
{
    Image im;
    const uint32_t pixel = l.packed ? l.bytes * l.components : l.bytes;
    const size_t row = size_t{w} * pixel + pad;
    const size_t plane = row * h;
    im.bytes.assign(l.packed ? plane : plane * l.components, 0);
    std::mt19937 rng(seed);
    for (uint32_t c = 0; c < l.components; ++c) {
        j2kc_component k{};
        k.data = reinterpret_cast<uintptr_t>(im.bytes.data()) + (l.packed ? c * l.bytes : c * plane);
        k.row_stride = static_cast<ptrdiff_t>(row);
        k.sample_stride = pixel;
        k.bytes_per_sample = l.bytes;
        k.shift = l.shift;
        k.precision = l.precision;
        k.is_signed = l.is_signed;
        k.dx = k.dy = 1;
        k.width = w;
        k.height = h;
        im.comps.push_back(k);
        for (uint32_t y = 0; y < h; ++y)
            for (uint32_t x = 0; x < w; ++x) {
                const uint64_t field = rng() & ((uint64_t{1} << l.precision) - 1);
                store_le(component_sample(k, x, y), l.bytes, static_cast<uint32_t>(field << l.shift));
            }
    }
    return im;
}

/** Rebinds an image's component pointers to another buffer of the same shape. */
std::vector<j2kc_component> rebase(const Image &im, uint64_t base)
{
    auto c = im.comps;
    for (auto &k : c) k.data = k.data - reinterpret_cast<uintptr_t>(im.bytes.data()) + base;
    return c;
}

/** Independent reading of a sample: field, then two's complement or minus 2^(P-1). */
int64_t expected_shifted(const Layout &l, const j2kc_component &k, uint32_t x, uint32_t y)
{
    const uint8_t *p = reinterpret_cast<const uint8_t *>(k.data) + y * k.row_stride + x * k.sample_stride;
    uint64_t word = 0;
    for (int b = 0; b < l.bytes; ++b) word |= uint64_t{p[b]} << (8 * b);
    const int64_t field = static_cast<int64_t>((word >> l.shift) & ((uint64_t{1} << l.precision) - 1));
    if (l.is_signed) return field >= (int64_t{1} << (l.precision - 1)) ? field - (int64_t{1} << l.precision) : field;
    return field - (int64_t{1} << (l.precision - 1));
}

TEST(Color, UnpackAndPackEveryLayout)
{
    uint32_t seed = 1;
    for (const Layout &l : kLayouts) {
        const uint32_t w = 13, h = 5;
        Image src = make_image(l, w, h, seed++);
        Image dst = make_image(l, w, h, seed++);
        std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
        for (uint32_t c = 0; c < l.components; ++c) {
            std::vector<int32_t> plane(size_t{w + 2} * h);
            unpack_component(src.comps[c], plane.data(), w + 2);
            for (uint32_t y = 0; y < h; ++y)
                for (uint32_t x = 0; x < w; ++x)
                    ASSERT_EQ(plane[y * (w + 2) + x], expected_shifted(l, src.comps[c], x, y)) << l.name;
            pack_component(plane.data(), w + 2, SampleFormat{l.precision, l.is_signed != 0}, dst.comps[c]);
        }
        EXPECT_EQ(src.bytes, dst.bytes) << l.name;
        if (l.precision <= 24) {  // float planes are exact up to 24 bits
            std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
            for (uint32_t c = 0; c < l.components; ++c) {
                std::vector<float> plane(size_t{w} * h);
                unpack_component(src.comps[c], plane.data(), w);
                pack_component(plane.data(), w, SampleFormat{l.precision, l.is_signed != 0}, dst.comps[c]);
            }
            EXPECT_EQ(src.bytes, dst.bytes) << l.name << " (float)";
        }
    }
}

TEST(Color, KnownSampleValues)
{
    // xyz12le: 12-bit 0xABC stored as 0xABC0 little-endian, level shift 2048.
    uint8_t px[6] = {0xC0, 0xAB, 0, 0, 0, 0};
    j2kc_component k{reinterpret_cast<uintptr_t>(px), 6, 6, 2, 4, 12, 0, 1, 1, 1, 1};
    EXPECT_EQ(unpack_sample(k, 0, 0), 0xABC - 2048);
    // signed 8-bit 0x80 is -128; no shift for signed data.
    uint8_t s = 0x80;
    j2kc_component ks{reinterpret_cast<uintptr_t>(&s), 1, 1, 1, 0, 8, 1, 1, 1, 1, 1};
    EXPECT_EQ(unpack_sample(ks, 0, 0), -128);
}

TEST(Color, PackClipsAndRescales)
{
    uint16_t out = 0xFFFF;
    j2kc_component k{reinterpret_cast<uintptr_t>(&out), 2, 2, 2, 4, 12, 0, 1, 1, 1, 1};
    const SampleFormat s12{12, false};
    int32_t v = 5000;  // above 2047: clips to 4095
    pack_component(&v, 1, s12, k);
    EXPECT_EQ(out, 4095u << 4);
    v = -3000;  // below -2048: clips to 0
    pack_component(&v, 1, s12, k);
    EXPECT_EQ(out, 0u);
    // 12-bit into 16-bit full range: scaled by 16.
    k.shift = 0;
    k.precision = 16;
    v = 100;
    pack_component(&v, 1, s12, k);
    EXPECT_EQ(out, (2048u + 100u) << 4);
    // 16-bit into 8-bit: truncating shift.
    uint8_t o8 = 0;
    j2kc_component k8{reinterpret_cast<uintptr_t>(&o8), 1, 1, 1, 0, 8, 0, 1, 1, 1, 1};
    v = 0x1234 - 0x8000;
    pack_component(&v, 1, SampleFormat{16, false}, k8);
    EXPECT_EQ(o8, 0x12);
    // signed output: 12-bit unsigned value 0 -> -2048 in two's complement.
    int16_t os = 0;
    j2kc_component ks{reinterpret_cast<uintptr_t>(&os), 2, 2, 2, 0, 12, 1, 1, 1, 1, 1};
    v = -2048;
    pack_component(&v, 1, s12, ks);
    EXPECT_EQ(os & 0xFFF, 0x800);
    // float rounding is half to even, as lrintf.
    float f = 2.5f;
    pack_component(&f, 1, SampleFormat{8, true}, k8);
    EXPECT_EQ(o8, 128 + 2);
}

TEST(Color, RejectsBadLayouts)
{
    uint8_t b[4];
    j2kc_component k{reinterpret_cast<uintptr_t>(b), 4, 1, 3, 0, 8, 0, 1, 1, 1, 1};
    EXPECT_THROW(check_component_layout(k), Error);
    k.bytes_per_sample = 1;
    k.shift = 1;
    EXPECT_THROW(check_component_layout(k), Error);
    k.shift = 0;
    k.precision = 0;
    EXPECT_THROW(check_component_layout(k), Error);
}

TEST(Color, RctRoundTripExact)
{
    std::mt19937 rng(5);
    const uint32_t w = 31, h = 7;
    std::vector<int32_t> p[3];
    for (auto &v : p) {
        v.resize(w * h);
        for (auto &x : v) x = static_cast<int32_t>(rng() % 65536) - 32768;
    }
    auto orig = p[0], orig1 = p[1], orig2 = p[2];
    int32_t *planes[3] = {p[0].data(), p[1].data(), p[2].data()};
    rct_forward(planes, w, w, h);
    // G-6: Y = floor((R + 2G + B) / 4), U = B - G, V = R - G.
    EXPECT_EQ(p[1][3], orig2[3] - orig1[3]);
    EXPECT_EQ(p[0][3], static_cast<int32_t>(std::floor((orig[3] + 2.0 * orig1[3] + orig2[3]) / 4)));
    rct_inverse(planes, w, w, h);
    EXPECT_EQ(p[0], orig);
    EXPECT_EQ(p[1], orig1);
    EXPECT_EQ(p[2], orig2);
}

using IctPlanes = std::array<std::vector<float>, 3>;

/** Three planes of n integer samples drawn uniformly from [-half, half). */
IctPlanes random_ict_planes(uint32_t seed, size_t n, int half)
{
    std::mt19937 rng(seed);
    IctPlanes p;
    for (auto &plane : p) {
        plane.resize(n);
        for (auto &x : plane) x = static_cast<float>(static_cast<int>(rng() % (2u * half)) - half);
    }
    return p;
}

/** Forward ICT, then inverse, in place on w x h planes. */
void ict_round_trip(IctPlanes &p, uint32_t w, uint32_t h, const std::function<void(const IctPlanes &)> &between)
{
    float *planes[3] = {p[0].data(), p[1].data(), p[2].data()};
    ict_forward(planes, w, w, h);
    between(p);
    ict_inverse(planes, w, w, h);
}

/** The largest |a - b| over three planes. */
double max_difference(const IctPlanes &a, const IctPlanes &b)
{
    double worst = 0;
    for (int c = 0; c < 3; ++c)
        for (size_t i = 0; i < a[c].size(); ++i) worst = std::max(worst, std::fabs(double(a[c][i]) - b[c][i]));
    return worst;
}

TEST(Color, IctRoundTripWithinTolerance)
{
    const uint32_t w = 64, h = 9;
    const IctPlanes o = random_ict_planes(6, w * h, 2048);
    IctPlanes p = o;
    ict_round_trip(p, w, h, [&](const IctPlanes &t) {
        EXPECT_NEAR(t[0][0], 0.299 * o[0][0] + 0.587 * o[1][0] + 0.114 * o[2][0], 1e-2);
    });
    EXPECT_LE(max_difference(p, o), 0.25);
}

/**
 * Decoders undo the ICT with G.3's inverse (1.402, 0.34413, 0.71414,
 * 1.772): the forward transform must invert exactly that, or the output
 * drifts in proportion to the samples. Over the 16-bit range (DC-shifted,
 * +-2^15) every sample must come back within float rounding, 1/100 of a
 * sample unit; G.3's five-digit forward coefficients miss by more than one.
 */
TEST(Color, IctForwardInvertsTheDecodersInverseAtSixteenBits)
{
    const uint32_t w = 256, h = 4;
    IctPlanes o = random_ict_planes(16, w * h, 32768);
    // The corners of the cube, where the drift is largest.
    for (int c = 0; c < 3; ++c)
        for (uint32_t k = 0; k < 8; ++k) o[c][k] = (k >> c) & 1u ? 32767.0f : -32768.0f;
    IctPlanes p = o;
    ict_round_trip(p, w, h, [](const IctPlanes &) {});
    EXPECT_LT(max_difference(p, o), 0.01);
}

TEST(Color, FusedPathsRoundTripBytes)
{
    uint32_t seed = 40;
    for (const Layout &l : kLayouts) {
        if (l.components != 3 || l.precision > 16) continue;
        const uint32_t w = 21, h = 6;
        Image src = make_image(l, w, h, seed++);
        const SampleFormat f{l.precision, l.is_signed != 0};
        const SampleFormat fmt[3] = {f, f, f};
        const size_t strides[3] = {w, w + 1, w};
        // Reversible: RCT exact.
        std::vector<int32_t> ip[3];
        for (int c = 0; c < 3; ++c) ip[c].resize(strides[c] * h);
        int32_t *iptr[3] = {ip[0].data(), ip[1].data(), ip[2].data()};
        color_forward_ref(src.comps.data(), 3, true, iptr, strides);
        std::vector<uint8_t> out(src.bytes.size(), 0);
        auto oc = rebase(src, reinterpret_cast<uintptr_t>(out.data()));
        const int32_t *ciptr[3] = {ip[0].data(), ip[1].data(), ip[2].data()};
        color_inverse_ref(ciptr, strides, fmt, 3, true, oc.data());
        EXPECT_EQ(out, src.bytes) << l.name << " RCT";
        // Irreversible: ICT in float then rounding recovers the samples (the
        // standard's 5-digit ICT matrices invert each other to ~2.5e-5, which
        // is below half an LSB up to 12 bits but not at 16).
        if (l.precision > 12) continue;
        std::vector<float> fp[3];
        for (int c = 0; c < 3; ++c) fp[c].resize(strides[c] * h);
        float *fptr[3] = {fp[0].data(), fp[1].data(), fp[2].data()};
        color_forward_ref(src.comps.data(), 3, true, fptr, strides);
        std::fill(out.begin(), out.end(), 0);
        const float *cfptr[3] = {fp[0].data(), fp[1].data(), fp[2].data()};
        color_inverse_ref(cfptr, strides, fmt, 3, true, oc.data());
        EXPECT_EQ(out, src.bytes) << l.name << " ICT";
    }
}

/* ---------------- GPU == CPU ---------------- */

using j2kc_test::have_gpu;

template <class T>
void gpu_compare(const Layout &l, bool mct, uint32_t w, uint32_t h, uint32_t seed)
{
    Image src = make_image(l, w, h, seed);
    const uint32_t n = l.components;
    uint8_t *dsrc = nullptr, *ddst = nullptr;
    ASSERT_EQ(cudaMalloc(&dsrc, src.bytes.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&ddst, src.bytes.size()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(dsrc, src.bytes.data(), src.bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(ddst, 0, src.bytes.size()), cudaSuccess);
    auto dcomps = rebase(src, reinterpret_cast<uintptr_t>(dsrc));
    std::vector<size_t> strides(n, w + 3);
    std::vector<std::vector<T>> hp(n, std::vector<T>(strides[0] * h));
    std::vector<T *> hptr(n), dptr(n);
    for (uint32_t c = 0; c < n; ++c) {
        hptr[c] = hp[c].data();
        ASSERT_EQ(cudaMalloc(&dptr[c], hp[c].size() * sizeof(T)), cudaSuccess);
        ASSERT_EQ(cudaMemset(dptr[c], 0, hp[c].size() * sizeof(T)), cudaSuccess);
    }
    color_forward_ref(src.comps.data(), n, mct, hptr.data(), strides.data());
    color_forward_gpu(dcomps.data(), n, mct, dptr.data(), strides.data(), nullptr);
    for (uint32_t c = 0; c < n; ++c) {
        std::vector<T> got(hp[c].size());
        ASSERT_EQ(cudaMemcpy(got.data(), dptr[c], got.size() * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
        for (uint32_t y = 0; y < h; ++y)
            ASSERT_EQ(std::memcmp(&got[y * strides[c]], &hp[c][y * strides[c]], w * sizeof(T)), 0) << l.name;
    }
    // Perturb the planes a little (as a codec would) and go back.
    std::mt19937 rng(seed);
    for (uint32_t c = 0; c < n; ++c) {
        for (auto &v : hp[c]) v = static_cast<T>(v + static_cast<T>(static_cast<int>(rng() % 7) - 3) / T(2));
        ASSERT_EQ(cudaMemcpy(dptr[c], hp[c].data(), hp[c].size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
    const SampleFormat f{l.precision, l.is_signed != 0};
    std::vector<SampleFormat> fmt(n, f);
    std::vector<uint8_t> host_out(src.bytes.size(), 0);
    auto hoc = rebase(src, reinterpret_cast<uintptr_t>(host_out.data()));
    auto doc = rebase(src, reinterpret_cast<uintptr_t>(ddst));
    std::vector<const T *> chp(hptr.begin(), hptr.end()), cdp(dptr.begin(), dptr.end());
    color_inverse_ref(chp.data(), strides.data(), fmt.data(), n, mct, hoc.data());
    color_inverse_gpu(cdp.data(), strides.data(), fmt.data(), n, mct, doc.data(), nullptr);
    std::vector<uint8_t> got(src.bytes.size());
    ASSERT_EQ(cudaMemcpy(got.data(), ddst, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(got, host_out) << l.name << (mct ? " mct" : "");
    for (auto p : dptr) cudaFree(p);
    cudaFree(dsrc);
    cudaFree(ddst);
}

TEST(GpuColor, MatchesCpuBitForBit)
{
    if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
    uint32_t seed = 500;
    for (const Layout &l : kLayouts) {
        for (bool mct : {false, true}) {
            if (mct && l.components < 3) continue;
            gpu_compare<int32_t>(l, mct, 67, 13, seed++);
            if (l.precision <= 24) gpu_compare<float>(l, mct, 67, 13, seed++);
        }
    }
    gpu_compare<float>(kLayouts[6], true, 2048, 31, seed++);  // xyz12 2K rows
}

}  // namespace
}  // namespace j2kc
