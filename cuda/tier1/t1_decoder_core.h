/**
 * @file t1_decoder_core.h
 * @brief The production CPU decoder of EBCOT Tier-1 (ISO/IEC 15444-1 Annex D:
 * coding passes D.3, run-length and sign coding, the style bits of D.4 to
 * D.7) over the MQ decoder of Annex C.3, laid out for speed.
 *
 * State: one 32-bit word per stripe column (four rows of one column), with
 * the significance of the 6 x 3 neighbourhood (rows -1..4 of the column and
 * of its left and right neighbours), so the zero-coding context of row r is
 * one shift and a 512-entry table, and one test finds a column with nothing
 * to do. Bit 3 * (q + 1) + c holds the significance of row q (-1..4),
 * column c (0 = west, 1 = the column, 2 = east): the bit a sample sets in its
 * own word is at once its own flag, its northern neighbour's "south" and its
 * southern neighbour's "north". Then the signs of rows -1..4 of the column
 * (bits 18..23; the west and east signs are read from the neighbour words
 * when a sign is decoded), "refined before" of rows 0..3 (24..27) and
 * "visited in this plane's significance pass" of rows 0..3 (28..31).
 *
 * Each pass keeps the MQ registers (A, C, CT, the byte pointer), the
 * contexts and the current column word in locals. The segment bytes are
 * copied behind the scenes with two 0xFF bytes appended, which reproduces
 * exactly what C.3 prescribes past the end of a segment (a marker, then
 * 1-bits forever) without testing for the end on each byte.
 *
 * Values: the magnitude 2M + 2^p with the sign in bit 31, in raster order
 * inside the block; the output is written once when the block is done, by a
 * loop the compiler vectorises.
 *
 * Host only; the CUDA decoder, if there is one, has its own layout.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tier1/mq_coder.h"
#include "tier1/t1_contexts.h"

#if defined(__GNUC__)
#define J2KC_T1D_INLINE inline __attribute__((always_inline))
#else
#define J2KC_T1D_INLINE inline
#endif

namespace j2kc {
namespace t1dec {

constexpr uint32_t kSigmaMask = 0x3FFFFu;  ///< all 18 significance bits
constexpr uint32_t kCentres = (1u << 4) | (1u << 7) | (1u << 10) | (1u << 13);
constexpr uint32_t kPiAll = 0xF0000000u;

constexpr uint32_t sig_bit(int r) { return 1u << (3 * r + 4); }
constexpr uint32_t mu_bit(int r) { return 1u << (24 + r); }
constexpr uint32_t pi_bit(int r) { return 1u << (28 + r); }
constexpr int chi_shift(int r) { return 19 + r; }  ///< r in -1..4

/** Zero-coding labels (Table D.1) by orientation and 9-bit neighbourhood
 *  (bit 0 NW, 1 N, 2 NE, 3 W, 4 the sample, 5 E, 6 SW, 7 S, 8 SE). */
struct ZcTable9 {
    uint8_t t[4][512];
};
constexpr ZcTable9 make_zc_table9()
{
    ZcTable9 z{};
    for (uint32_t o = 0; o < 4; ++o)
        for (uint32_t i = 0; i < 512; ++i) {
            const uint32_t h = ((i >> 3) & 1) + ((i >> 5) & 1);
            const uint32_t v = ((i >> 1) & 1) + ((i >> 7) & 1);
            const uint32_t d = (i & 1) + ((i >> 2) & 1) + ((i >> 6) & 1) + ((i >> 8) & 1);
            z.t[o][i] = t1_zc_label(o, h, v, d);
        }
    return z;
}
inline constexpr ZcTable9 kZc9 = make_zc_table9();

/** MQ decoder registers; a local of each pass so they stay in registers. The
 *  byte pointer runs over a copy of the segment followed by 0xFF 0xFF. */
struct MqRegs {
    uint32_t a, c;
    int32_t ct;
    const uint8_t *bp;

    /** BYTEIN (C.3.4). With the two 0xFF bytes after the data this is the
     *  end-checked version exactly: BP stops on the first of them. */
    J2KC_T1D_INLINE void byte_in()
    {
        if (*bp == 0xFF) {
            const uint32_t b1 = bp[1];
            if (b1 > 0x8F) {
                c += 0xFF00;
                ct = 8;
            } else {
                ++bp;
                c += b1 << 9;
                ct = 7;
            }
        } else {
            ++bp;
            c += static_cast<uint32_t>(*bp) << 8;
            ct = 8;
        }
    }

    /** INITDEC (C.3.5). */
    J2KC_T1D_INLINE void init(const uint8_t *padded)
    {
        bp = padded;
        c = static_cast<uint32_t>(*bp) << 16;
        byte_in();
        c <<= 7;
        ct -= 7;
        a = 0x8000;
    }

    /** RENORMD (C.3.3) for a shift of n bits (0 allowed), all at once: the
     *  same as shifting a bit at a time and calling BYTEIN whenever CT
     *  reaches 0 before a shift. */
    J2KC_T1D_INLINE void shift(int32_t n)
    {
        a <<= n;
        if (__builtin_expect(n > ct, 0)) {
            do {
                c <<= ct;
                n -= ct;
                byte_in();
            } while (n > ct);
        }
        c <<= n;
        ct -= n;
    }

    /**
     * DECODE (C.3.2). The common case, an MPS without renormalisation (the
     * context state does not change then), takes one well-predicted branch
     * in skewed contexts (zero coding, run-length): the choice for those.
     */
    J2KC_T1D_INLINE uint32_t decode(uint8_t &cx)
    {
        const MqTransition &t = kMqTransitions.t[cx];
        const uint32_t qe = t.qe;
        uint32_t d = cx & 1u;
        a -= qe;
        if ((c >> 16) < qe) {
            if (a < qe) {
                cx = t.next_mps;
            } else {
                d ^= 1u;
                cx = t.next_lps;
            }
            a = qe;
            shift(__builtin_clz(a) - 16);
        } else {
            c -= qe << 16;
            if ((a & 0x8000) == 0) {
                if (a < qe) {
                    d ^= 1u;
                    cx = t.next_lps;
                } else {
                    cx = t.next_mps;
                }
                shift(__builtin_clz(a) - 16);
            }
        }
        return d;
    }

    /**
     * The same decision as decode(), written as selects. In contexts that sit
     * near even odds (sign coding, magnitude refinement, zero coding in the
     * significance pass, where every sample has a significant neighbour;
     * measured with cachegrind's branch simulation) whether a decision
     * is an MPS, an LPS or renormalises is exactly what a branch predictor
     * cannot learn, so branches there cost a misprediction about every
     * other decision; this costs some twenty instructions instead. Masks
     * (all ones or zero) rather than ternaries, which compilers turn back
     * into branches.
     */
    J2KC_T1D_INLINE uint32_t decode_even(uint8_t &cx)
    {
        const MqTransition &t = kMqTransitions.t[cx];
        const uint32_t qe = t.qe;
        const uint32_t mps = cx & 1u;
        a -= qe;
        const uint32_t lps_exchange = 0u - static_cast<uint32_t>((c >> 16) < qe);
        c -= (qe << 16) & ~lps_exchange;
        const uint32_t is_lps = (lps_exchange ^ (0u - static_cast<uint32_t>(a < qe))) & 1u;  // 0 unless renormalising
        const uint32_t renorm = lps_exchange | (0u - static_cast<uint32_t>(a < 0x8000u));
        a = (qe & lps_exchange) | (a & ~lps_exchange);
        const uint32_t next = t.next_mps ^ ((t.next_mps ^ t.next_lps) & (0u - is_lps));
        cx = static_cast<uint8_t>(cx ^ ((cx ^ next) & renorm));
        shift(__builtin_clz(a) - 16);  // 0 when A >= 0x8000
        return mps ^ is_lps;
    }
};

constexpr uint32_t min4(uint32_t rows) { return rows < 4 ? rows : 4; }

/** Block state between passes. */
struct BlockDec {
    uint32_t *flags;   ///< (stripes + 2) * fs words, zero border around
    uint32_t *values;  ///< stripes * 4 * width, raster order
    uint32_t width, height, stripes, fs;
    uint32_t orientation;
    bool vc;
    uint8_t cx[kT1NumContexts];
    MqRegs mq;
    RawDecoder raw;

    uint32_t *stripe_flags(uint32_t s) const { return flags + size_t{s + 1} * fs + 1; }
    uint32_t *stripe_values(uint32_t s) const { return values + size_t{s} * width * 4; }
    /** Converts the values of rows [0, height) into out (sign and magnitude
     *  to two's complement). */
    void write_output(int32_t *out, size_t out_stride) const
    {
        for (uint32_t y = 0; y < height; ++y) {
            int32_t *row = out + y * out_stride;
            const uint32_t *v = values + size_t{y} * width;
            for (uint32_t x = 0; x < width; ++x) {
                const uint32_t u = v[x];
                const int32_t mag = static_cast<int32_t>(u & 0x7FFFFFFFu);
                const int32_t neg = -static_cast<int32_t>(u >> 31);
                row[x] = (mag ^ neg) - neg;
            }
        }
    }
};

/**
 * One pass over a block: decisions come from the MQ registers (kRaw false)
 * or the raw reader, and the current column word lives in `w0`.
 */
template <bool kRaw>
struct PassDec {
    MqRegs mq;
    RawDecoder raw;
    uint8_t cx[kT1NumContexts];
    const uint8_t *zc;
    ptrdiff_t fs;
    size_t vs;  ///< value row stride (the block width)
    bool vc;
    int p;

    J2KC_T1D_INLINE explicit PassDec(BlockDec &b, int plane)
        : mq(b.mq), raw(b.raw), zc(kZc9.t[b.orientation]), fs(b.fs), vs(b.width), vc(b.vc), p(plane)
    {
        std::memcpy(cx, b.cx, sizeof cx);
    }
    J2KC_T1D_INLINE void finish(BlockDec &b)
    {
        b.mq = mq;
        b.raw = raw;
        std::memcpy(b.cx, cx, sizeof cx);
    }

    J2KC_T1D_INLINE uint32_t bit(uint32_t ctx)
    {
        if constexpr (kRaw) {
            (void)ctx;
            return raw.get();
        } else {
            return mq.decode(cx[ctx]);
        }
    }

    /** Sign (D.3.2) of row R of the column at f (own word w0), then the
     *  significance bits for the sample and its neighbours. */
    template <int R>
    J2KC_T1D_INLINE void becomes_significant(uint32_t *f, uint32_t &w0, uint32_t *v)
    {
        uint32_t neg;
        if constexpr (kRaw) {
            neg = raw.get();
        } else {
            const uint32_t we = f[-1], ea = f[1];
            const uint32_t idx = ((w0 >> (3 * R + 1)) & 1u) | (((w0 >> (3 * R + 7)) & 1u) << 1) |
                                 (((w0 >> (3 * R + 3)) & 1u) << 2) | (((w0 >> (3 * R + 5)) & 1u) << 3) |
                                 (((w0 >> chi_shift(R - 1)) & 1u) << 4) |
                                 (((w0 >> chi_shift(R + 1)) & 1u) << 5) |
                                 (((we >> chi_shift(R)) & 1u) << 6) | (((ea >> chi_shift(R)) & 1u) << 7);
            const uint32_t e = kT1ScTable.t[idx];
            neg = mq.decode_even(cx[e & 0x1Fu]) ^ (e >> 7);
        }
        w0 |= sig_bit(R) | (neg << chi_shift(R));
        f[-1] |= 1u << (3 * R + 5);
        f[1] |= 1u << (3 * R + 3);
        if (R == 0 && !vc) {
            uint32_t *u = f - fs;
            u[-1] |= 1u << 17;
            u[0] |= (1u << 16) | (neg << chi_shift(4));
            u[1] |= 1u << 15;
        }
        if (R == 3) {
            uint32_t *d = f + fs;
            d[-1] |= 1u << 2;
            d[0] |= (1u << 1) | (neg << chi_shift(-1));
            d[1] |= 1u;
        }
        v[R * vs] = (neg << 31) | (3u << p);
    }

    template <int R>
    J2KC_T1D_INLINE void spp_row(uint32_t *f, uint32_t &w0, uint32_t *v)
    {
        if ((w0 & sig_bit(R)) || !((w0 >> (3 * R)) & 0x1EFu)) return;
        // Contexts with significant neighbours are far from skewed.
        uint32_t b;
        if constexpr (kRaw) b = raw.get();
        else b = mq.decode_even(cx[zc[(w0 >> (3 * R)) & 0x1FFu]]);
        w0 |= pi_bit(R);
        if (b) becomes_significant<R>(f, w0, v);
    }

    template <int R>
    J2KC_T1D_INLINE void mrp_row(uint32_t &w0, uint32_t *v)
    {
        if ((w0 & (sig_bit(R) | pi_bit(R))) != sig_bit(R)) return;
        const uint32_t ctx = (w0 & mu_bit(R)) ? kT1CtxMr + 2
                                               : (((w0 >> (3 * R)) & 0x1EFu) ? kT1CtxMr + 1 : kT1CtxMr);
        uint32_t b;
        if constexpr (kRaw) b = raw.get();
        else b = mq.decode_even(cx[ctx]);
        w0 |= mu_bit(R);
        v[R * vs] += (b << (p + 1)) - (1u << p);
    }

    template <int R>
    J2KC_T1D_INLINE void cup_row(uint32_t *f, uint32_t &w0, uint32_t *v)
    {
        if (w0 & (sig_bit(R) | pi_bit(R))) return;
        if (mq.decode(cx[zc[(w0 >> (3 * R)) & 0x1FFu]])) becomes_significant<R>(f, w0, v);
    }
};

/** Significance propagation (D.3.1) at plane p. */
template <bool kRaw>
inline void pass_spp(BlockDec &b, int p)
{
    PassDec<kRaw> r(b, p);
    const uint32_t w = b.width;
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *f = b.stripe_flags(s);
        uint32_t *v = b.stripe_values(s);
        const uint32_t rows = min4(b.height - 4 * s);
        if (rows == 4) {
            for (uint32_t x = 0; x < w; ++x, ++f, ++v) {
                uint32_t w0 = *f;
                // Nothing significant around, or all four significant already.
                if ((w0 & kSigmaMask) == 0 || (w0 & kCentres) == kCentres) continue;
                r.template spp_row<0>(f, w0, v);
                r.template spp_row<1>(f, w0, v);
                r.template spp_row<2>(f, w0, v);
                r.template spp_row<3>(f, w0, v);
                *f = w0;
            }
        } else {
            for (uint32_t x = 0; x < w; ++x, ++f, ++v) {
                uint32_t w0 = *f;
                if ((w0 & kSigmaMask) == 0) continue;
                r.template spp_row<0>(f, w0, v);
                if (rows > 1) r.template spp_row<1>(f, w0, v);
                if (rows > 2) r.template spp_row<2>(f, w0, v);
                *f = w0;
            }
        }
    }
    r.finish(b);
}

/** Magnitude refinement (D.3.3) at plane p. */
template <bool kRaw>
inline void pass_mrp(BlockDec &b, int p)
{
    PassDec<kRaw> r(b, p);
    const uint32_t w = b.width;
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *f = b.stripe_flags(s);
        uint32_t *v = b.stripe_values(s);
        for (uint32_t x = 0; x < w; ++x, ++f, ++v) {
            uint32_t w0 = *f;
            if ((w0 & kCentres) == 0) continue;
            // Rows past the block's height are never significant.
            r.template mrp_row<0>(w0, v);
            r.template mrp_row<1>(w0, v);
            r.template mrp_row<2>(w0, v);
            r.template mrp_row<3>(w0, v);
            *f = w0;
        }
    }
    r.finish(b);
}

/** Cleanup (D.3.4) at plane p, with the segmentation symbols of D.5. */
inline void pass_cup(BlockDec &b, int p, bool segmentation_symbols)
{
    PassDec<false> r(b, p);
    const uint32_t w = b.width;
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *f = b.stripe_flags(s);
        uint32_t *v = b.stripe_values(s);
        const uint32_t rows = min4(b.height - 4 * s);
        if (rows == 4) {
            for (uint32_t x = 0; x < w; ++x, ++f, ++v) {
                uint32_t w0 = *f;
                if ((w0 & kSigmaMask) == 0) {
                    // Run-length mode: four insignificant samples with no
                    // significant neighbour (hence none visited).
                    if (!r.mq.decode(r.cx[kT1CtxRl])) continue;
                    uint32_t first = r.mq.decode(r.cx[kT1CtxUni]) << 1;
                    first |= r.mq.decode(r.cx[kT1CtxUni]);
                    switch (first) {
                    case 0:
                        r.template becomes_significant<0>(f, w0, v);
                        r.template cup_row<1>(f, w0, v);
                        r.template cup_row<2>(f, w0, v);
                        r.template cup_row<3>(f, w0, v);
                        break;
                    case 1:
                        r.template becomes_significant<1>(f, w0, v);
                        r.template cup_row<2>(f, w0, v);
                        r.template cup_row<3>(f, w0, v);
                        break;
                    case 2:
                        r.template becomes_significant<2>(f, w0, v);
                        r.template cup_row<3>(f, w0, v);
                        break;
                    default: r.template becomes_significant<3>(f, w0, v); break;
                    }
                    *f = w0;
                } else {
                    r.template cup_row<0>(f, w0, v);
                    r.template cup_row<1>(f, w0, v);
                    r.template cup_row<2>(f, w0, v);
                    r.template cup_row<3>(f, w0, v);
                    *f = w0 & ~kPiAll;
                }
            }
        } else {
            // No run-length coding in a stripe of fewer than four rows.
            for (uint32_t x = 0; x < w; ++x, ++f, ++v) {
                uint32_t w0 = *f;
                r.template cup_row<0>(f, w0, v);
                if (rows > 1) r.template cup_row<1>(f, w0, v);
                if (rows > 2) r.template cup_row<2>(f, w0, v);
                *f = w0 & ~kPiAll;
            }
        }
    }
    if (segmentation_symbols) {  // D.5: four decisions in the uniform context
        for (int k = 0; k < 4; ++k) r.mq.decode(r.cx[kT1CtxUni]);
    }
    r.finish(b);
}

}  // namespace t1dec
}  // namespace j2kc
