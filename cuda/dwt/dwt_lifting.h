/**
 * @file dwt_lifting.h
 * @brief ISO/IEC 15444-1 Annex F lifting primitives shared by the CPU
 * reference and the CUDA kernels: the 5/3 integer steps (F-5/F-6 and F-9/F-10
 * rounding), the 9/7 constants and steps (F-7, F-8) and the geometry of one
 * 1-D run (which samples are low-pass, where they go in the de-interleaved
 * order). Every float operation is spelt out with round-to-nearest intrinsics
 * on the device and plain operators on the host (built with
 * -ffp-contract=off), so both sides round identically: no FMA anywhere.
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace j2kc {

/* 9/7 lifting constants of Table F.4 (forward/inverse use the same values). */
constexpr float kDwtAlpha = -1.586134342059924f;
constexpr float kDwtBeta = -0.052980118572961f;
constexpr float kDwtGamma = 0.882911075530934f;
constexpr float kDwtDelta = 0.443506852043971f;
constexpr float kDwtK = 1.230174104914001f;
/** 1/K rounded once to float (the standard multiplies by 1/K, it never divides). */
constexpr float kDwtInvK = static_cast<float>(1.0 / 1.230174104914001);

J2KC_HD float dwt_fadd(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}
J2KC_HD float dwt_fsub(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fsub_rn(a, b);
#else
    return a - b;
#endif
}
J2KC_HD float dwt_fmul(float a, float b)
{
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

/** 9/7 forward step: x + c * (left + right), evaluated as written. */
J2KC_HD float lift97_fwd(float x, float left, float right, float c)
{
    return dwt_fadd(x, dwt_fmul(c, dwt_fadd(left, right)));
}
/** 9/7 inverse step: x - c * (left + right), the exact mirror of lift97_fwd's order. */
J2KC_HD float lift97_inv(float x, float left, float right, float c)
{
    return dwt_fsub(x, dwt_fmul(c, dwt_fadd(left, right)));
}

/* 5/3 reversible steps; >> on int32 is an arithmetic shift (floor) on every
 * compiler we build with, which is the floor of F-5 and F-6. */
/** F-6 first step: odd sample minus floor of half its even neighbours. */
J2KC_HD int32_t lift53_predict_fwd(int32_t x, int32_t left, int32_t right) { return x - ((left + right) >> 1); }
/** F-6 second step: even sample plus floor((left + right + 2) / 4). */
J2KC_HD int32_t lift53_update_fwd(int32_t x, int32_t left, int32_t right) { return x + ((left + right + 2) >> 2); }
/** F-5 first step (inverse of the update). */
J2KC_HD int32_t lift53_update_inv(int32_t x, int32_t left, int32_t right) { return x - ((left + right + 2) >> 2); }
/** F-5 second step (inverse of the predict). */
J2KC_HD int32_t lift53_predict_inv(int32_t x, int32_t left, int32_t right) { return x + ((left + right) >> 1); }

/**
 * One 1-D run of n samples whose first sample has coordinate i0 (F.3.1):
 * even coordinates are low-pass, odd ones high-pass.
 */
struct DwtRun {
    uint32_t n;       ///< samples in the run
    uint32_t parity;  ///< i0 & 1: 1 when the run starts with a high-pass sample
    uint32_t nl;      ///< low-pass count: ceil(i1/2) - ceil(i0/2)
};

J2KC_HD DwtRun dwt_run(uint32_t i0, uint32_t n)
{
    DwtRun r;
    r.n = n;
    r.parity = i0 & 1u;
    // ceil((i0+n)/2) - ceil(i0/2) depends only on the parity of i0 and n.
    r.nl = r.parity ? n / 2 : (n + 1) / 2;
    return r;
}

/** Whether offset k of the run is a high-pass sample (odd coordinate). */
J2KC_HD bool dwt_is_high(const DwtRun &r, uint32_t k) { return ((k + r.parity) & 1u) != 0; }

/** Periodic symmetric extension (F.3.7) for the +-1 neighbours lifting needs; n >= 2. */
J2KC_HD uint32_t dwt_left(uint32_t k) { return k == 0 ? 1u : k - 1; }
J2KC_HD uint32_t dwt_right(uint32_t k, uint32_t n) { return k + 1 >= n ? n - 2 : k + 1; }

/** De-interleaved position of offset k: low-pass samples first, then high-pass. */
J2KC_HD uint32_t dwt_split_pos(const DwtRun &r, uint32_t k) { return dwt_is_high(r, k) ? r.nl + (k >> 1) : (k >> 1); }
/** The inverse of dwt_split_pos: interleaved offset of de-interleaved position p. */
J2KC_HD uint32_t dwt_merge_offset(const DwtRun &r, uint32_t p)
{
    return p < r.nl ? 2 * p + r.parity : 2 * (p - r.nl) + 1 - r.parity;
}

/*
 * Scalings applied after forward lifting / before inverse lifting. A run of a
 * single sample is not filtered at all (F.3.7, F.4.8): an odd-coordinate
 * sample is doubled forward and halved inverse; an even one is copied.
 */
J2KC_HD float dwt97_scale_fwd(const DwtRun &r, bool high)
{
    if (r.n == 1) return r.parity ? 2.0f : 1.0f;
    return high ? kDwtK : kDwtInvK;
}
J2KC_HD float dwt97_scale_inv(const DwtRun &r, bool high)
{
    if (r.n == 1) return r.parity ? 0.5f : 1.0f;
    return high ? kDwtInvK : kDwtK;
}
/** 5/3 single-sample rule: 2X forward; Y/2 inverse (C division, exact on valid data). */
J2KC_HD int32_t dwt53_single_fwd(const DwtRun &r, int32_t v) { return (r.n == 1 && r.parity) ? v * 2 : v; }
J2KC_HD int32_t dwt53_single_inv(const DwtRun &r, int32_t v) { return (r.n == 1 && r.parity) ? v / 2 : v; }

}  // namespace j2kc
