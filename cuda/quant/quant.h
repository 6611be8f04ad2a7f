/**
 * @file quant.h
 * @brief ISO/IEC 15444-1 Annex E: choice and encoding of quantisation steps
 * (E.1.1, Table E.1, E-2, E-3), sub-band synthesis energy gains for step
 * scaling and rate-control weights, and the quantise (encoder) / dequantise
 * (decoder, with Annex H ROI max-shift) passes over a tile-component plane in
 * the DWT's Mallat layout (dwt/dwt.h), on the CPU (quant_cpu.cpp) and the GPU
 * (quant.cu, bit-identical). Exact per-coefficient rules: quant_ops.h.
 *
 * Band indices are QCD order: 0 = LL (decomposition level NL), then for
 * resolution r = 1..NL the bands HL, LH, HH at index 3(r-1)+1.. (nb = NL-r+1),
 * as geometry/partition.h's Band::quant_index.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "codestream/markers.h"
#include "geometry/partition.h"
#include "quant/quant_ops.h"

namespace j2kc {

/** @brief log2 of the nominal range gain of a band (Table E.1): LL 0, HL/LH 1, HH 2. */
constexpr int band_log2_gain(BandOrientation o) { return o == kLL ? 0 : (o == kHH ? 2 : 1); }

/** @brief 3 * levels + 1. */
constexpr int num_bands(int levels) { return 3 * levels + 1; }
/** @brief Orientation of QCD band index b. */
BandOrientation band_orientation(int band);
/** @brief Decomposition level nb of QCD band index b (LL: levels). */
int band_decomposition(int band, int levels);

/** @brief R_b = precision + log2 gain_b (E.1.1.1), the band's nominal range in bits. */
int band_range_bits(int precision, int band);

/** @brief Delta_b = 2^(R_b - eps_b) * (1 + mu_b / 2^11) (E-3), in sample units. */
double step_size(QuantStep step, int range_bits);

/**
 * @brief The (exponent, mantissa) whose E-3 value is nearest to `delta`
 * (mantissa rounded to nearest, carried into the exponent at 2^11); clamped
 * to the codable range eps 0..31, mu 0..2047.
 */
QuantStep encode_step(double delta, int range_bits);

/**
 * @brief The step s * Delta_b with s = xy / yy, the least-squares scale of a
 * band's reconstruction (quant/step_fit_core.h's sums): mu_b rounded and
 * clamped to 0..2047, eps_b kept (it sets M_b, from which the packet headers
 * count the zero bit-planes). `step` itself when yy is 0.
 */
QuantStep fit_step(QuantStep step, uint64_t xy, uint64_t yy);

/** @brief M_b = G + eps_b - 1 (E-2): magnitude bit-planes of the band. */
constexpr int num_bitplanes(int guard_bits, int exponent) { return guard_bits + exponent - 1; }

/**
 * @brief Energy (sum of squares) of the 2-D synthesis basis function of a
 * band at decomposition level nb (1..32; nb = levels for LL, and LL at nb = 0
 * is 1), for the standard's normalisation of the filter (Annex F: low-pass
 * DC gain 1, high-pass Nyquist gain 2 on analysis). Computed from the filter
 * taps: one-level synthesis responses obtained by running the inverse lifting
 * on impulses, then iterated upsample-and-filter, squared and summed; from
 * nb = 16 on the per-level ratio (2 per dimension) is applied.
 */
double synthesis_energy(Wavelet wavelet, BandOrientation orientation, int nb);

/**
 * @brief QCD/QCC for the reversible path: style kNone, eps_b = R_b, mu = 0.
 * Pass precision + 1 for components that went through the RCT's chroma
 * outputs if you want their extra bit covered by the exponent rather than
 * by guard bits.
 */
Quantization make_reversible_quantization(int levels, int precision, int guard_bits);

/**
 * @brief QCD/QCC for the irreversible path: style kScalarExpounded, with
 * Delta_b = base_step / sqrt(synthesis_energy(b)) (so each band's unit index
 * error costs the same image-domain MSE), encoded by encode_step.
 * base_step is in sample units (e.g. 1.0 / quality scale).
 */
Quantization make_irreversible_quantization(int levels, int precision, int guard_bits, double base_step);

/**
 * @brief Rate-control weight of band b: image-domain MSE (squared sample units,
 * i.e. units of the DC-shifted input samples) caused by an error of one
 * quantisation index = Delta_b^2 * synthesis_energy (Delta_b = 1 for 5/3).
 */
double band_mse_weight(const Quantization &q, Wavelet wavelet, int precision, int band, int levels);

/** @brief Per-band encoder table for a tile-component (rect, levels) coded with q. */
QuantizeParams make_quantize_params(const Quantization &q, Wavelet wavelet, int precision, const Rect &tile_component,
                                    int levels);

/**
 * @brief Per-band decoder table; `reduce` top levels are not present (the
 * plane holds resolutions 0..levels-reduce); roi_shift from RGN.
 */
DequantizeParams make_dequantize_params(const Quantization &q, Wavelet wavelet, int precision,
                                        const Rect &tile_component, int levels, int reduce, int roi_shift);

/* ---- CPU reference. in and out may be the same memory (in place). ---- */

/** @brief 9/7: float coefficients -> int32 indices over [0, width[levels]) x [0, height[levels]). */
void quantize_ref(const float *in, size_t in_stride, int32_t *out, size_t out_stride, const QuantizeParams &p);
/** @brief 5/3: passthrough, clamped to +-max_magnitude. */
void quantize_ref(const int32_t *in, size_t in_stride, int32_t *out, size_t out_stride, const QuantizeParams &p);
/** @brief 9/7: Tier-1 values (2M + r convention) -> float coefficients, over resolutions 0..top. */
void dequantize_ref(const int32_t *in, size_t in_stride, float *out, size_t out_stride, const DequantizeParams &p);
/** @brief 5/3: Tier-1 values -> int32 coefficients (v / 2). */
void dequantize_ref(const int32_t *in, size_t in_stride, int32_t *out, size_t out_stride, const DequantizeParams &p);

/* ---- CUDA (quant.cu): device pointers, asynchronous on stream (cudaStream_t or nullptr). ---- */
/* Dequantisation may run in place (in == out, same stride): each sample is read, then written, by one thread. */

void quantize_gpu(const float *in, size_t in_stride, int32_t *out, size_t out_stride, const QuantizeParams &p,
                  void *stream);
void quantize_gpu(const int32_t *in, size_t in_stride, int32_t *out, size_t out_stride, const QuantizeParams &p,
                  void *stream);
void dequantize_gpu(const int32_t *in, size_t in_stride, float *out, size_t out_stride, const DequantizeParams &p,
                    void *stream);
void dequantize_gpu(const int32_t *in, size_t in_stride, int32_t *out, size_t out_stride, const DequantizeParams &p,
                    void *stream);

}  // namespace j2kc
