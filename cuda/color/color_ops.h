/**
 * @file color_ops.h
 * @brief ISO/IEC 15444-1 Annex G per-sample primitives shared by the CPU
 * reference and the CUDA kernels: reading/writing a sample of a
 * j2kc_component, the DC level shift (G.1), the RCT (G.2) and the ICT (G.3).
 *
 * Float order is fixed here (each product rounded, sums left to right, no
 * FMA: device intrinsics, host built with -ffp-contract=off):
 *   ICT inverse:  R = Y + 1.402 Cr
 *                 G = (Y - 0.34413 Cb) - 0.71414 Cr
 *                 B = Y + 1.772 Cb
 *   ICT forward:  Y  = (0.299001724 R + 0.58700031 G) + 0.113997981 B
 *                 Cb = (-0.16873686 R - 0.331264287 G) + 0.500001132 B
 *                 Cr = (0.499998778 R - 0.41868782 G) - 0.0813109726 B
 * The forward matrix is the inverse of the inverse one (its float
 * coefficients, inverted in double, rounded to float), not G.3's five-digit
 * forward coefficients: those two matrices are inverses only to 2.5e-5 (B
 * takes -2.5e-5 R), which every decoder's inverse turns into a bias of the
 * output proportional to the samples, a third of a sample unit at 16 bits
 * (docs/measurements.md, rate-distortion). The codestream carries no
 * forward matrix, so any forward transform is conforming.
 * Float samples become integers by round-half-to-even (as lrintf in
 * OpenJPEG) after clamping to the int32 range (NaN -> 0).
 */
#pragma once

#include <cmath>
#include <cstdint>

#include "common/host_device.h"
#include "j2kc.h"

namespace j2kc {

/** Codestream-side format of a plane: precision (Ssiz) and signedness. */
struct SampleFormat {
    uint8_t precision = 8;
    bool is_signed = false;
};

J2KC_HD float color_fadd(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
J2KC_HD float color_fsub(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
J2KC_HD float color_fmul(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

/** Address of sample (x, y) of a component (data is a host or device address). */
J2KC_HD uint8_t *component_sample(const j2kc_component &c, uint32_t x, uint32_t y)
{
    return reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(c.data)) + static_cast<ptrdiff_t>(y) * c.row_stride +
           static_cast<ptrdiff_t>(x) * static_cast<ptrdiff_t>(c.sample_stride);
}

/** Little-endian word of 1, 2 or 4 bytes, read bytewise (no alignment assumed). */
J2KC_HD uint32_t load_le(const uint8_t *p, uint32_t bytes)
{
    uint32_t v = p[0];
    if (bytes >= 2) v |= uint32_t{p[1]} << 8;
    if (bytes == 4) v |= (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
    return v;
}
J2KC_HD void store_le(uint8_t *p, uint32_t bytes, uint32_t v)
{
    p[0] = static_cast<uint8_t>(v);
    if (bytes >= 2) p[1] = static_cast<uint8_t>(v >> 8);
    if (bytes == 4) {
        p[2] = static_cast<uint8_t>(v >> 16);
        p[3] = static_cast<uint8_t>(v >> 24);
    }
}

J2KC_HD uint64_t precision_mask(uint32_t p) { return (uint64_t{1} << p) - 1; }

/**
 * Sample (x, y) as the DC-level-shifted integer of G.1.2: signed samples as
 * they are, unsigned ones minus 2^(P-1).
 */
J2KC_HD int32_t unpack_sample(const j2kc_component &c, uint32_t x, uint32_t y)
{
    const uint32_t raw = load_le(component_sample(c, x, y), c.bytes_per_sample);
    const uint64_t field = (uint64_t{raw} >> c.shift) & precision_mask(c.precision);
    const int64_t half = int64_t{1} << (c.precision - 1);
    // Both cases are "field - 2^(P-1)" read in offset binary; for signed data
    // the field is two's complement, so flip the sign bit first.
    const int64_t offset_binary =
        c.is_signed ? static_cast<int64_t>(field ^ static_cast<uint64_t>(half)) : static_cast<int64_t>(field);
    return static_cast<int32_t>(offset_binary - half);
}

/**
 * Inverse DC level shift, clip and pack of one value (G.1.2): v is the plane
 * value in the source format; v + 2^(P-1) is clipped to [0, 2^P - 1] (offset
 * binary, which is also the signed range for signed sources), rescaled to
 * the output precision by a left shift or a truncating right shift, turned
 * back into two's complement when the output is signed, shifted up by
 * out.shift and stored as a bytes_per_sample little-endian word.
 */
J2KC_HD void pack_sample(int32_t v, SampleFormat src, const j2kc_component &out, uint32_t x, uint32_t y)
{
    const int64_t half = int64_t{1} << (src.precision - 1);
    int64_t u = int64_t{v} + half;
    const int64_t top = static_cast<int64_t>(precision_mask(src.precision));
    u = u < 0 ? 0 : (u > top ? top : u);
    if (out.precision >= src.precision)
        u <<= (out.precision - src.precision);
    else
        u >>= (src.precision - out.precision);
    uint64_t field = static_cast<uint64_t>(u);
    if (out.is_signed) field ^= uint64_t{1} << (out.precision - 1);  // offset binary -> two's complement
    const uint32_t word = static_cast<uint32_t>((field & precision_mask(out.precision)) << out.shift);
    store_le(component_sample(out, x, y), out.bytes_per_sample, word);
}

/** Float plane value to integer: clamp to int32, NaN to 0, round half to even. */
J2KC_HD int32_t float_to_sample(float v)
{
    if (!(v == v)) return 0;
    if (v <= -2147483648.0f) return INT32_MIN;
    if (v >= 2147483520.0f) return 2147483520;  // largest float below 2^31
#if defined(__CUDA_ARCH__)
    return __float2int_rn(v);
#else
    return static_cast<int32_t>(std::nearbyint(v));
#endif
}

/* G.2: reversible component transform (>> is floor on int32). */
J2KC_HD void rct_forward_sample(int32_t r, int32_t g, int32_t b, int32_t &y, int32_t &u, int32_t &v)
{
    y = (r + 2 * g + b) >> 2;
    u = b - g;
    v = r - g;
}
J2KC_HD void rct_inverse_sample(int32_t y, int32_t u, int32_t v, int32_t &r, int32_t &g, int32_t &b)
{
    g = y - ((u + v) >> 2);
    r = v + g;
    b = u + g;
}

/* G.3: irreversible component transform, order as in the file comment. */
J2KC_HD void ict_forward_sample(float r, float g, float b, float &y, float &cb, float &cr)
{
    y = color_fadd(color_fadd(color_fmul(0.299001724f, r), color_fmul(0.58700031f, g)), color_fmul(0.113997981f, b));
    cb = color_fadd(color_fsub(color_fmul(-0.16873686f, r), color_fmul(0.331264287f, g)), color_fmul(0.500001132f, b));
    cr = color_fsub(color_fsub(color_fmul(0.499998778f, r), color_fmul(0.41868782f, g)), color_fmul(0.0813109726f, b));
}
J2KC_HD void ict_inverse_sample(float y, float cb, float cr, float &r, float &g, float &b)
{
    r = color_fadd(y, color_fmul(1.402f, cr));
    g = color_fsub(color_fsub(y, color_fmul(0.34413f, cb)), color_fmul(0.71414f, cr));
    b = color_fadd(y, color_fmul(1.772f, cb));
}

}  // namespace j2kc
