/**
 * @file tier1_contexts.h
 * @brief Context modelling of ISO/IEC 15444-1 Annex D: the 19 contexts and
 * their initial states (Table D.7), zero coding (Table D.1), sign coding
 * (Tables D.2, D.3) and magnitude refinement (Table D.4), plus the per-sample
 * flag word the CPU reference and the CUDA coder both use.
 *
 * Context numbers: 0..8 zero coding (the Table D.1 labels), 9..13 sign coding
 * (labels 9..13 of Table D.3), 14..16 magnitude refinement, 17 run-length,
 * 18 uniform. The numbering is internal: only the state each label starts in
 * and which label a decision uses shape the bits.
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"
#include "tier1/mq_coder.h"

namespace j2kc {

constexpr int kT1CtxZc = 0;   ///< 0..8
constexpr int kT1CtxSc = 9;   ///< 9..13
constexpr int kT1CtxMr = 14;  ///< 14..16
constexpr int kT1CtxRl = 17;
constexpr int kT1CtxUni = 18;
constexpr int kT1NumContexts = 19;

/** Table D.7: UNIFORM in state 46, RUN-LENGTH in 3, the all-zero-neighbour
 *  zero-coding context in 4, all others in 0; MPS 0 everywhere. */
J2KC_HD void t1_reset_contexts(uint8_t *cx)
{
    for (int i = 0; i < kT1NumContexts; ++i) cx[i] = 0;
    cx[kT1CtxZc] = mq_context(4, 0);
    cx[kT1CtxRl] = mq_context(3, 0);
    cx[kT1CtxUni] = mq_context(46, 0);
}

/**
 * Per-sample flag word. Bits 0..7 are the sign-coding view of the four
 * horizontal/vertical neighbours (significance, then sign), bits 8..11 the
 * diagonal significances; they are set by the neighbour when it becomes
 * significant, so a context is one lookup.
 */
namespace t1_flag {
constexpr uint16_t kSigN = 1u << 0;
constexpr uint16_t kSigS = 1u << 1;
constexpr uint16_t kSigW = 1u << 2;
constexpr uint16_t kSigE = 1u << 3;
constexpr uint16_t kNegN = 1u << 4;  ///< north neighbour negative (with kSigN)
constexpr uint16_t kNegS = 1u << 5;
constexpr uint16_t kNegW = 1u << 6;
constexpr uint16_t kNegE = 1u << 7;
constexpr uint16_t kSigNW = 1u << 8;
constexpr uint16_t kSigNE = 1u << 9;
constexpr uint16_t kSigSW = 1u << 10;
constexpr uint16_t kSigSE = 1u << 11;
constexpr uint16_t kSig = 1u << 12;       ///< the sample itself is significant
constexpr uint16_t kVisit = 1u << 13;     ///< coded in this bit-plane's significance pass
constexpr uint16_t kRefined = 1u << 14;   ///< magnitude refinement coded before
constexpr uint16_t kNeg = 1u << 15;       ///< the sample's own sign
constexpr uint16_t kNeighbours = 0x0F0F;  ///< all eight neighbour significances
}  // namespace t1_flag

/** Table D.1 from the neighbour counts: h (0..2), v (0..2), d (0..4). */
J2KC_HD constexpr uint8_t t1_zc_label(uint32_t orientation, uint32_t h, uint32_t v, uint32_t d)
{
    if (orientation == 1) {  // HL: horizontally high-pass, the roles of h and v swap
        const uint32_t t = h;
        h = v;
        v = t;
    }
    if (orientation == 3) {  // HH
        const uint32_t hv = h + v;
        if (d >= 3) return 8;
        if (d == 2) return hv >= 1 ? 7 : 6;
        if (d == 1) return hv >= 2 ? 5 : (hv == 1 ? 4 : 3);
        return hv >= 2 ? 2 : (hv == 1 ? 1 : 0);
    }
    // LL and LH (vertically high-pass)
    if (h == 2) return 8;
    if (h == 1) return v >= 1 ? 7 : (d >= 1 ? 6 : 5);
    if (v == 2) return 4;
    if (v == 1) return 3;
    return d >= 2 ? 2 : (d == 1 ? 1 : 0);
}

/** 8-bit zero-coding index of a flag word: N, S, W, E, NW, NE, SW, SE. */
J2KC_HD constexpr uint32_t t1_zc_index(uint32_t flags) { return (flags & 0x0Fu) | ((flags >> 4) & 0xF0u); }

struct T1ZcTable {
    uint8_t t[4][256];
};

J2KC_HD constexpr T1ZcTable make_t1_zc_table()
{
    T1ZcTable table{};
    for (uint32_t o = 0; o < 4; ++o) {
        for (uint32_t i = 0; i < 256; ++i) {
            const uint32_t v = (i & 1) + ((i >> 1) & 1);
            const uint32_t h = ((i >> 2) & 1) + ((i >> 3) & 1);
            const uint32_t d = ((i >> 4) & 1) + ((i >> 5) & 1) + ((i >> 6) & 1) + ((i >> 7) & 1);
            table.t[o][i] = t1_zc_label(o, h, v, d);
        }
    }
    return table;
}

/**
 * Tables D.2/D.3 from the low byte of a flag word: the context (9..13) in
 * bits 0..4 and the XOR bit in bit 7. The decoded sign is the coded bit XOR
 * that bit; sign 1 means negative.
 */
J2KC_HD constexpr uint8_t t1_sc_entry(uint32_t low_byte)
{
    // Contribution of a pair: +1 if any significant positive (and not offset
    // by a negative one), -1 if negative, clamped to -1..1 (Table D.2).
    int h = 0, v = 0;
    if (low_byte & t1_flag::kSigW) h += (low_byte & t1_flag::kNegW) ? -1 : 1;
    if (low_byte & t1_flag::kSigE) h += (low_byte & t1_flag::kNegE) ? -1 : 1;
    if (low_byte & t1_flag::kSigN) v += (low_byte & t1_flag::kNegN) ? -1 : 1;
    if (low_byte & t1_flag::kSigS) v += (low_byte & t1_flag::kNegS) ? -1 : 1;
    h = h < -1 ? -1 : (h > 1 ? 1 : h);
    v = v < -1 ? -1 : (v > 1 ? 1 : v);
    int xor_bit = 0;
    if (h < 0 || (h == 0 && v < 0)) {  // Table D.3 is symmetric under negation
        h = -h;
        v = -v;
        xor_bit = 1;
    }
    // h = 1: v = 1, 0, -1 -> 13, 12, 11; h = 0: v = 1, 0 -> 10, 9
    const int label = h == 1 ? 12 + v : 9 + v;
    return static_cast<uint8_t>(label | (xor_bit << 7));
}

struct T1ScTable {
    uint8_t t[256];
};

J2KC_HD constexpr T1ScTable make_t1_sc_table()
{
    T1ScTable table{};
    for (uint32_t i = 0; i < 256; ++i) table.t[i] = t1_sc_entry(i);
    return table;
}

constexpr T1ZcTable kT1ZcTable = make_t1_zc_table();
constexpr T1ScTable kT1ScTable = make_t1_sc_table();

#if defined(__CUDACC__)
static J2KC_DEVICE_CONST T1ZcTable kT1ZcTableDevice = make_t1_zc_table();
static J2KC_DEVICE_CONST T1ScTable kT1ScTableDevice = make_t1_sc_table();
#endif

/** Zero-coding context (0..8) of a flag word in a band of `orientation`. */
J2KC_HD uint32_t t1_zc_context(uint32_t orientation, uint32_t flags)
{
#if defined(__CUDA_ARCH__)
    return kT1ZcTableDevice.t[orientation][t1_zc_index(flags)];
#else
    return kT1ZcTable.t[orientation][t1_zc_index(flags)];
#endif
}

/** Sign-coding entry (context | xor << 7) of a flag word. */
J2KC_HD uint32_t t1_sc_lookup(uint32_t flags)
{
#if defined(__CUDA_ARCH__)
    return kT1ScTableDevice.t[flags & 0xFFu];
#else
    return kT1ScTable.t[flags & 0xFFu];
#endif
}

/** Magnitude-refinement context (Table D.4): 16 after the first refinement,
 *  else 15 with any significant neighbour, else 14. */
J2KC_HD uint32_t t1_mr_context(uint32_t flags)
{
    if (flags & t1_flag::kRefined) return kT1CtxMr + 2;
    return (flags & t1_flag::kNeighbours) ? kT1CtxMr + 1 : kT1CtxMr;
}

/**
 * Distortion terms (tier1.h gives the units): the contribution of one
 * coefficient with magnitude index `mag` at plane p, divided by 2^p. A pass
 * sums them (two's complement, any order) and t1_pass_distortion scales.
 */
J2KC_HD int64_t t1_dist_significance(uint32_t mag, int p)
{
    const int64_t l = mag & ((1u << p) - 1u);
    return 3 * ((int64_t{1} << p) + 4 * l);
}
J2KC_HD int64_t t1_dist_refinement(uint32_t mag, int p)
{
    const int64_t l = mag & ((1u << p) - 1u);
    const int64_t one = int64_t{1} << p;
    return ((mag >> p) & 1u) ? 4 * l - one : 3 * one - 4 * l;
}
/**
 * Right shift of the distortion values of a block whose band has Mb =
 * `num_bitplanes` magnitude bit-planes (tier1.h gives the units). The
 * block's squared error before coding, 4 v^2 over at most 2^12 indices
 * under 2^Mb, is under 2^(2 Mb + 14), and the passes that raise the error
 * (reported as 0) add less than a quarter of that to the sum of the
 * others, so with this shift a block's pass values sum to under 2^63 for
 * any Mb: rate control sees every pass's gain, where unshifted values of
 * the deepest blocks reached 2^64 in their first passes and left every
 * later pass without gain. No shift up to 24 planes.
 */
J2KC_HD constexpr int t1_distortion_shift(uint32_t num_bitplanes)
{
    return num_bitplanes > 24 ? 2 * static_cast<int>(num_bitplanes) - 48 : 0;
}

/** 0 for a sum <= 0, else sum * 2^(p - shift), rounded up (a pass that
 *  lowers the error keeps a gain), saturated at UINT64_MAX. */
J2KC_HD uint64_t t1_pass_distortion(int64_t sum, int p, int shift)
{
    if (sum <= 0) return 0;
    const uint64_t s = static_cast<uint64_t>(sum);
    if (p < shift) {
        const int r = shift - p;
        return (s >> r) + ((s & ((uint64_t{1} << r) - 1u)) != 0);
    }
    const int l = p - shift;
    return s > (~uint64_t{0} >> l) ? ~uint64_t{0} : s << l;
}

/** Coding pass of pass index i (0 = the first cleanup): 0 significance
 *  propagation, 1 magnitude refinement, 2 cleanup. */
J2KC_HD constexpr uint32_t t1_pass_type(uint32_t pass) { return (pass + 2) % 3; }

/** Bit-plane of pass i, counted down from the block's top plane nbp - 1. */
J2KC_HD constexpr int t1_pass_bitplane(uint32_t pass, int nbp) { return nbp - 1 - static_cast<int>((pass + 2) / 3); }

/** Whether pass i is coded raw (selective bypass, D.6 / Table D.9): the
 *  significance and refinement passes after the four most significant
 *  bit-planes, i.e. from pass 10 on. */
J2KC_HD constexpr bool t1_pass_is_raw(uint32_t pass, uint8_t style)
{
    return (style & 0x01) && pass >= 10 && t1_pass_type(pass) != 2;
}

/**
 * Whether the codeword segment ends after pass i (D.4, Table D.9), not
 * counting the last pass of the block, which always ends one: every pass with
 * termall (0x04); with bypass (0x01), pass 9 (the last all-arithmetic one),
 * then each raw refinement pass and each cleanup pass.
 */
J2KC_HD constexpr bool t1_pass_is_terminated(uint32_t pass, uint8_t style)
{
    if (style & 0x04) return true;
    if (style & 0x01) return pass == 9 || (pass >= 10 && t1_pass_type(pass) != 0);
    return false;
}

}  // namespace j2kc
