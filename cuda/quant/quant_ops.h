/**
 * @file quant_ops.h
 * @brief ISO/IEC 15444-1 Annex E (scalar dead-zone quantisation) and Annex H
 * (ROI max-shift) per-coefficient primitives, shared by quant_cpu.cpp and
 * quant.cu, plus the plane-wide parameter blocks both take by value.
 *
 * Exact arithmetic:
 *   quantise (9/7):  m = |x| * inv_step   (one float multiply, inv_step =
 *                    (float)(1 / Delta_b) rounded once on the host);
 *                    q = min(trunc(m), max_magnitude), NaN -> 0; sign of x.
 *   quantise (5/3):  q = x clamped to +-max_magnitude (no quantisation).
 *   Tier-1 output convention (decoder): v = sign * (2M + r), one fractional
 *   bit (r = 1 when a mid-point half is added for undecoded bit-planes).
 *   ROI (H.2/H.3, max-shift s): in index units a coefficient whose magnitude
 *   floor(|v| / 2) is >= 2^s belongs to the ROI and was scaled up by 2^s:
 *   its half-unit magnitude is shifted down, |v| >> s; others (background)
 *   are unchanged. s = 0 or s >= 31 is a no-op.
 *   dequantise (5/3): v / 2 with C truncation toward zero.
 *   dequantise (9/7): (float)v * half_step, half_step = (float)(Delta_b / 2).
 */
#pragma once

#include <cstdint>

#include "codestream/markers.h"
#include "common/host_device.h"
#include "dwt/dwt_layout.h"

namespace j2kc {

constexpr int kMaxBands = 3 * kMaxLevels + 1;

/**
 * QCD band index (0 = LL, 3(r-1) + orientation above) of coefficient (x, y)
 * of a Mallat-layout plane whose top resolution is `top`.
 */
J2KC_HD int band_index_at(const DwtLayout &l, uint32_t top, uint32_t x, uint32_t y)
{
    uint32_t r = 0;
    while (r < top && (x >= l.width[r] || y >= l.height[r])) ++r;
    if (r == 0) return 0;
    const int o = (x >= l.width[r - 1] ? 1 : 0) + (y >= l.height[r - 1] ? 2 : 0);
    return static_cast<int>(3 * (r - 1)) + o;
}

/** Encoder parameters for one tile-component plane in Mallat layout. */
struct QuantizeParams {
    DwtLayout layout;                  ///< plane = [0, width[levels]) x [0, height[levels])
    float inv_step[kMaxBands];         ///< (float)(1 / Delta_b); unused for 5/3
    int32_t max_magnitude[kMaxBands];  ///< 2^Mb - 1 (INT32_MAX when Mb >= 31)
};

/** Decoder parameters for one tile-component plane. */
struct DequantizeParams {
    DwtLayout layout;
    uint32_t top = 0;            ///< highest resolution present (levels - reduce)
    float half_step[kMaxBands];  ///< (float)(Delta_b / 2); unused for 5/3
    uint32_t roi_shift = 0;      ///< RGN SPrgn, 0 = none
};

J2KC_HD float quant_fmul(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

J2KC_HD int32_t quantize_97(float x, float inv_step, int32_t max_magnitude)
{
    const float m = quant_fmul(x < 0.0f ? -x : x, inv_step);
    int32_t q;
    if (m < static_cast<float>(max_magnitude))
        q = static_cast<int32_t>(m);  // m >= 0: truncation = floor
    else
        q = (m == m) ? max_magnitude : 0;
    return x < 0.0f ? -q : q;
}

J2KC_HD int32_t quantize_53(int32_t x, int32_t max_magnitude)
{
    return x > max_magnitude ? max_magnitude : (x < -max_magnitude ? -max_magnitude : x);
}

J2KC_HD int32_t roi_descale(int32_t v, uint32_t s)
{
    if (s == 0 || s >= 31) return v;
    uint32_t mag = v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v);
    if ((mag >> 1) >= (1u << s)) mag >>= s;
    if (mag > 0x7FFFFFFFu) mag = 0x7FFFFFFFu;  // only INT32_MIN itself
    return v < 0 ? -static_cast<int32_t>(mag) : static_cast<int32_t>(mag);
}

J2KC_HD int32_t dequantize_53(int32_t v, uint32_t roi_shift) { return roi_descale(v, roi_shift) / 2; }

J2KC_HD float dequantize_97(int32_t v, float half_step, uint32_t roi_shift)
{
    return quant_fmul(static_cast<float>(roi_descale(v, roi_shift)), half_step);
}

}  // namespace j2kc
