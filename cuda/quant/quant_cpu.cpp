/**
 * @file quant_cpu.cpp
 * @brief ISO/IEC 15444-1 Annex E step sizes and their encoding, synthesis
 * energy gains of the Annex F filters, and the CPU reference of the quantise
 * and dequantise (+ Annex H ROI) passes.
 */
#include "quant/quant.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "common/status.h"

namespace j2kc {
namespace {

/** One-level 1-D synthesis response to a unit low (high) coefficient, by inverse lifting in double. */
std::vector<double> synthesis_taps(Wavelet w, bool high)
{
    const int n = 32;
    std::vector<double> x(n, 0.0);
    x[16 + (high ? 1 : 0)] = 1.0;
    auto L = [&](int k) { return x[k == 0 ? 1 : k - 1]; };
    auto R = [&](int k) { return x[k + 1 >= n ? n - 2 : k + 1]; };
    auto step = [&](int first, double c) {
        for (int k = first; k < n; k += 2) x[k] -= c * (L(k) + R(k));
    };
    if (w == Wavelet::kIrreversible97) {
        const double K = 1.230174104914001;
        for (int k = 0; k < n; ++k) x[k] *= (k % 2 == 0) ? K : 1.0 / K;
        step(0, 0.443506852043971);   // delta
        step(1, 0.882911075530934);   // gamma
        step(0, -0.052980118572961);  // beta
        step(1, -1.586134342059924);  // alpha
    } else {
        step(0, 0.25);  // F-5 without its rounding
        step(1, -0.5);
    }
    auto first = std::find_if(x.begin(), x.end(), [](double v) { return v != 0.0; });
    auto last = std::find_if(x.rbegin(), x.rend(), [](double v) { return v != 0.0; }).base();
    return std::vector<double>(first, last);
}

constexpr int kExplicitLevels = 16;

/** 1-D basis energies for levels 1..kExplicitLevels: [0] low, [1] high. */
std::array<std::array<double, kExplicitLevels + 1>, 2> basis_energies(Wavelet w)
{
    const std::vector<double> g0 = synthesis_taps(w, false), g1 = synthesis_taps(w, true);
    std::array<std::array<double, kExplicitLevels + 1>, 2> e{};
    for (int h = 0; h < 2; ++h) {
        std::vector<double> b = h ? g1 : g0;
        for (int lev = 1; lev <= kExplicitLevels; ++lev) {
            if (lev > 1) {  // b <- g0 * upsample2(b)
                std::vector<double> nb(2 * b.size() - 1 + g0.size() - 1, 0.0);
                for (size_t i = 0; i < b.size(); ++i)
                    for (size_t j = 0; j < g0.size(); ++j) nb[2 * i + j] += b[i] * g0[j];
                b.swap(nb);
            }
            double s = 0;
            for (double v : b) s += v * v;
            e[h][lev] = s;
        }
    }
    return e;
}

/** The energies of a filter, computed once: a constant table, not state. */
const std::array<std::array<double, kExplicitLevels + 1>, 2> &cached_energies(Wavelet w)
{
    static const auto e97 = basis_energies(Wavelet::kIrreversible97);
    static const auto e53 = basis_energies(Wavelet::kReversible53);
    return w == Wavelet::kIrreversible97 ? e97 : e53;
}

double energy_1d(const std::array<std::array<double, kExplicitLevels + 1>, 2> &e, bool high, int n)
{
    if (n <= kExplicitLevels) return e[high][n];
    const double ratio = e[high][kExplicitLevels] / e[high][kExplicitLevels - 1];
    return e[high][kExplicitLevels] * std::pow(ratio, n - kExplicitLevels);
}

double energy_2d(const std::array<std::array<double, kExplicitLevels + 1>, 2> &e, BandOrientation o, int nb)
{
    if (nb == 0) return 1.0;
    const double lo = energy_1d(e, false, nb), hi = energy_1d(e, true, nb);
    switch (o) {
    case kLL: return lo * lo;
    case kHH: return hi * hi;
    default: return lo * hi;
    }
}

void check_common(int levels, int precision, int guard_bits)
{
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "quantisation: %d levels", levels);
    J2KC_CHECK_ARG(precision >= 1 && precision <= 38, "quantisation: precision %d", precision);
    J2KC_CHECK_ARG(guard_bits >= 0 && guard_bits <= 7, "quantisation: %d guard bits", guard_bits);
}

}  // namespace

BandOrientation band_orientation(int band)
{
    return band == 0 ? kLL : static_cast<BandOrientation>((band - 1) % 3 + 1);
}

int band_decomposition(int band, int levels) { return band == 0 ? levels : levels - (band - 1) / 3; }

int band_range_bits(int precision, int band) { return precision + band_log2_gain(band_orientation(band)); }

double step_size(QuantStep s, int range_bits)
{
    return std::ldexp(1.0 + s.mantissa / 2048.0, range_bits - int{s.exponent});
}

QuantStep encode_step(double delta, int range_bits)
{
    J2KC_CHECK_ARG(delta > 0 && std::isfinite(delta), "quantisation step %g", delta);
    int ex = 0;
    const double f = std::frexp(delta, &ex);  // delta = f 2^ex, f in [0.5, 1)
    int eps = range_bits - (ex - 1);
    long mu = std::lround((2.0 * f - 1.0) * 2048.0);
    if (mu == 2048) {
        mu = 0;
        --eps;
    }
    if (eps < 0) return QuantStep{0, 2047};
    if (eps > 31) return QuantStep{31, 0};
    return QuantStep{static_cast<uint8_t>(eps), static_cast<uint16_t>(mu)};
}

double synthesis_energy(Wavelet wavelet, BandOrientation orientation, int nb)
{
    J2KC_CHECK_ARG(nb >= 0 && nb <= kMaxLevels, "decomposition level %d", nb);
    J2KC_CHECK_ARG(nb > 0 || orientation == kLL, "only LL exists at level 0");
    return energy_2d(cached_energies(wavelet), orientation, nb);
}

Quantization make_reversible_quantization(int levels, int precision, int guard_bits)
{
    check_common(levels, precision, guard_bits);
    Quantization q;
    q.style = Quantization::kNone;
    q.guard_bits = static_cast<uint8_t>(guard_bits);
    for (int b = 0; b < num_bands(levels); ++b) {
        const int r = band_range_bits(precision, b);
        J2KC_CHECK_ARG(r <= 31, "reversible exponent %d does not fit 5 bits", r);
        q.steps.push_back(QuantStep{static_cast<uint8_t>(r), 0});
    }
    return q;
}

QuantStep fit_step(QuantStep step, uint64_t xy, uint64_t yy)
{
    if (yy == 0) return step;
    const double mantissa = ((2048.0 + step.mantissa) * (double(xy) / double(yy)) - 2048.0);
    step.mantissa = static_cast<uint16_t>(std::min(2047.0, std::max(0.0, std::round(mantissa))));
    return step;
}

Quantization make_irreversible_quantization(int levels, int precision, int guard_bits, double base_step)
{
    check_common(levels, precision, guard_bits);
    J2KC_CHECK_ARG(base_step > 0 && std::isfinite(base_step), "base step %g", base_step);
    const auto &e = cached_energies(Wavelet::kIrreversible97);
    Quantization q;
    q.style = Quantization::kScalarExpounded;
    q.guard_bits = static_cast<uint8_t>(guard_bits);
    for (int b = 0; b < num_bands(levels); ++b) {
        const double g = energy_2d(e, band_orientation(b), band_decomposition(b, levels));
        q.steps.push_back(encode_step(base_step / std::sqrt(g), band_range_bits(precision, b)));
    }
    return q;
}

double band_mse_weight(const Quantization &q, Wavelet wavelet, int precision, int band, int levels)
{
    const double g = synthesis_energy(wavelet, band_orientation(band), band_decomposition(band, levels));
    if (wavelet == Wavelet::kReversible53) return g;
    const double d = step_size(q.step(band, levels), band_range_bits(precision, band));
    return d * d * g;
}

QuantizeParams make_quantize_params(const Quantization &q, Wavelet wavelet, int precision, const Rect &tc, int levels)
{
    QuantizeParams p{};
    p.layout = dwt_layout(tc, levels);
    for (int b = 0; b < num_bands(levels); ++b) {
        const QuantStep s = q.step(b, levels);
        const double d = step_size(s, band_range_bits(precision, b));
        p.inv_step[b] = wavelet == Wavelet::kReversible53 ? 1.0f : static_cast<float>(1.0 / d);
        const int mb = num_bitplanes(q.guard_bits, s.exponent);
        p.max_magnitude[b] = mb >= 31 ? INT32_MAX : (mb <= 0 ? 0 : static_cast<int32_t>((1u << mb) - 1));
    }
    return p;
}

DequantizeParams make_dequantize_params(const Quantization &q, Wavelet wavelet, int precision, const Rect &tc,
                                        int levels, int reduce, int roi_shift)
{
    J2KC_CHECK_ARG(reduce >= 0 && reduce <= levels, "reduce %d of %d levels", reduce, levels);
    J2KC_CHECK_DATA(roi_shift >= 0 && roi_shift <= 255, "ROI shift %d", roi_shift);
    DequantizeParams p{};
    p.layout = dwt_layout(tc, levels);
    p.top = static_cast<uint32_t>(levels - reduce);
    p.roi_shift = static_cast<uint32_t>(roi_shift);
    for (int b = 0; b < num_bands(levels); ++b) {
        const double d = step_size(q.step(b, levels), band_range_bits(precision, b));
        p.half_step[b] = wavelet == Wavelet::kReversible53 ? 0.5f : static_cast<float>(d / 2);
    }
    return p;
}

void quantize_ref(const float *in, size_t is, int32_t *out, size_t os, const QuantizeParams &p)
{
    const uint32_t top = p.layout.levels, w = p.layout.width[top], h = p.layout.height[top];
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            const int b = band_index_at(p.layout, top, x, y);
            const float v = in[y * is + x];
            out[y * os + x] = quantize_97(v, p.inv_step[b], p.max_magnitude[b]);
        }
}

void quantize_ref(const int32_t *in, size_t is, int32_t *out, size_t os, const QuantizeParams &p)
{
    const uint32_t top = p.layout.levels, w = p.layout.width[top], h = p.layout.height[top];
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            const int b = band_index_at(p.layout, top, x, y);
            out[y * os + x] = quantize_53(in[y * is + x], p.max_magnitude[b]);
        }
}

void dequantize_ref(const int32_t *in, size_t is, float *out, size_t os, const DequantizeParams &p)
{
    const uint32_t w = p.layout.width[p.top], h = p.layout.height[p.top];
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            const int b = band_index_at(p.layout, p.top, x, y);
            const int32_t v = in[y * is + x];
            out[y * os + x] = dequantize_97(v, p.half_step[b], p.roi_shift);
        }
}

void dequantize_ref(const int32_t *in, size_t is, int32_t *out, size_t os, const DequantizeParams &p)
{
    const uint32_t w = p.layout.width[p.top], h = p.layout.height[p.top];
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) out[y * os + x] = dequantize_53(in[y * is + x], p.roi_shift);
}

}  // namespace j2kc
