/**
 * @file tier1_decoder_simt.h
 * @brief EBCOT Tier-1 block decoder (ISO/IEC 15444-1 Annex D: coding passes
 * D.3, run-length and sign coding, the style bits of D.4 to D.7, over the MQ
 * decoder of Annex C.3) laid out for a GPU thread: the code the CUDA kernel
 * of tier1_decode.cu runs, one thread a code-block, and that the host runs too
 * (tests), so both give Tier1Decoder's values.
 *
 * Why a second layout of the same passes: tier1_decoder_core.h is shaped for a
 * CPU core (rows unrolled as template arguments, a jump table of 16 refinement
 * row sets, SSE2 column masks): on the GPU that unrolling is 250 KB of
 * machine code, and a warp whose lanes decode different blocks spends most of
 * its cycles waiting for instructions (most stalls were instruction fetch;
 * docs/measurements.md). Here every pass is one loop with the row as
 * a run-time value, each kind of decision has one site, and the MQ decoder is
 * the branch-free one (decode_even), so the whole kernel stays a few
 * kilobytes and lanes rejoin at one place.
 *
 * Shared with tier1_decoder_core.h, bit for bit: the column-word state (bit
 * layout, sig_bit/chi_shift/spp_candidate ...), the zero-coding and
 * sign-coding tables, MqDecoder and RawDecoder, tier1_contexts.h's pass
 * schedule. The flag array differs only in its padding: each stripe's row
 * of words starts 16-byte aligned at column 0, so a thread reads four
 * column words with one load to find the columns a pass has work in.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/tier1_decoder_core.h"

namespace j2kc {
namespace t1simt {

using t1dec::BlockDec;

/** Words between stripe rows: west border at column -1, 16-byte aligned
 *  column 0, east border, all a multiple of four. */
J2KC_HD constexpr uint32_t flag_stride(uint32_t width) { return 4 + ((width + 1 + 3) & ~3u); }

/** Words of flag state t1_decode_block_simt needs, with room to align. */
J2KC_HD constexpr size_t flag_words(uint32_t width, uint32_t height)
{
    return size_t{(height + 3) / 4 + 2} * flag_stride(width) + 4;
}

/** Four column words from a 16-byte aligned address. */
J2KC_T1D_INLINE void load4(const uint32_t *p, uint32_t &a, uint32_t &b, uint32_t &c, uint32_t &d)
{
#if defined(__CUDA_ARCH__)
    const uint4 q = *reinterpret_cast<const uint4 *>(p);
    a = q.x;
    b = q.y;
    c = q.z;
    d = q.w;
#else
    a = p[0];
    b = p[1];
    c = p[2];
    d = p[3];
#endif
}

/** A pass's decision sources and constants, in registers for its loop. */
struct Pass {
    MqDecoder mq;
    RawDecoder raw;
    uint8_t *cx;
    const uint8_t *zc;
    ptrdiff_t fs;
    size_t vs;
    bool vc, bypass;
    int p;

    J2KC_T1D_INLINE Pass(BlockDec &b, int plane, bool is_raw)
        : mq(b.mq), raw(b.raw), cx(b.cx), zc(t1dec::zc_table(b.orientation)), fs(b.fs), vs(b.vstride), vc(b.vc),
          bypass(is_raw), p(plane)
    {}
    J2KC_T1D_INLINE void finish(BlockDec &b)
    {
        b.mq = mq;
        b.raw = raw;
    }

    /** One decision in context `ctx`, or a raw bit in a bypassed pass. */
    /** A decision as selects: faster than MqDecoder::decode's branches,
     *  whose paths the lanes of a warp take apart (docs/measurements.md). */
    J2KC_T1D_INLINE uint32_t decide(uint8_t &state) { return mq.decode_even<true>(state); }
    J2KC_T1D_INLINE uint32_t bit(uint32_t ctx) { return bypass ? raw.get() : decide(cx[ctx]); }

    /** D.3.2: the sign of row r of the column at f (word w0), by its
     *  neighbours' significance and signs, or raw in a bypassed pass. */
    J2KC_T1D_INLINE uint32_t sign(const uint32_t *f, uint32_t w0, int r)
    {
        if (bypass) return raw.get();
        const int n = 3 * r;
        const uint32_t idx = ((w0 >> (n + 1)) & 1u) | (((w0 >> (n + 7)) & 1u) << 1) | (((w0 >> (n + 3)) & 1u) << 2) |
                             (((w0 >> (n + 5)) & 1u) << 3) | (((w0 >> (t1dec::chi_shift(r) - 1)) & 1u) << 4) |
                             (((w0 >> (t1dec::chi_shift(r) + 1)) & 1u) << 5) |
                             (((f[-1] >> t1dec::chi_shift(r)) & 1u) << 6) | (((f[1] >> t1dec::chi_shift(r)) & 1u) << 7);
        const uint32_t e = t1dec::sc_entry(idx);
        return decide(cx[e & 0x1Fu]) ^ (e >> 7);
    }

    /** Row r becomes significant with sign `neg`: its own bits, its
     *  neighbours' (the stripe above unless vertically causal, D.7), and its
     *  value 1.5 x 2^p. */
    J2KC_T1D_INLINE void significant(uint32_t *f, uint32_t &w0, uint32_t *v, int r, uint32_t neg)
    {
        w0 |= t1dec::sig_bit(r) | (neg << t1dec::chi_shift(r));
        f[-1] |= 1u << (3 * r + 5);
        f[1] |= 1u << (3 * r + 3);
        if (r == 0 && !vc) {
            uint32_t *u = f - fs;
            u[-1] |= 1u << 17;
            u[0] |= (1u << 16) | (neg << t1dec::chi_shift(4));
            u[1] |= 1u << 15;
        } else if (r == 3) {
            uint32_t *d = f + fs;
            d[-1] |= 1u << 2;
            d[0] |= (1u << 1) | (neg << t1dec::chi_shift(-1));
            d[1] |= 1u;
        }
        v[r * vs] = (neg << 31) | (3u << p);
    }
};

/** Bits 0..3 of the columns among f[0..3] that Select picks. */
template <typename Select>
J2KC_T1D_INLINE uint32_t columns4(const uint32_t *f)
{
    uint32_t a, b, c, d;
    load4(f, a, b, c, d);
    return Select::scalar(a) | (Select::scalar(b) << 1) | (Select::scalar(c) << 2) | (Select::scalar(d) << 3);
}

/** Significance propagation (D.3.1) at plane p. */
J2KC_T1D_FN void significance_pass(BlockDec &b, int p, bool raw)
{
    Pass r(b, p, raw);
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *const fs0 = b.stripe_flags(s);
        uint32_t *const vs0 = b.stripe_values(s);
        const int rows = static_cast<int>(t1dec::min4(b.height - 4 * s));
        for (uint32_t x0 = 0; x0 < b.width; x0 += 4) {
            uint32_t m = columns4<t1dec::SppOp>(fs0 + x0);
            while (m) {
                const uint32_t i = t1dec::ctz32(m);
                m &= m - 1;
                const uint32_t x = x0 + i;
                if (x >= b.width) break;
                uint32_t *const f = fs0 + x;
                uint32_t *const v = vs0 + x;
                uint32_t w0 = *f;
                const uint32_t before = w0;
                for (int row = 0; row < rows; ++row) {
                    const uint32_t nb = w0 >> (3 * row);
                    if ((w0 & t1dec::sig_bit(row)) || !(nb & 0x1EFu)) continue;
                    const uint32_t hit = r.bit(r.zc[nb & 0x1FFu]);
                    w0 |= t1dec::pi_bit(row);
                    if (hit) r.significant(f, w0, v, row, r.sign(f, w0, row));
                }
                *f = w0;
                // A new significance can make the east column a candidate.
                if (((w0 ^ before) & t1dec::kCentres) && i < 3) m |= t1dec::spp_candidate(f[1]) << (i + 1);
            }
        }
    }
    r.finish(b);
}

/** Magnitude refinement (D.3.3) at plane p: significant rows not just
 *  visited, with Table D.4's contexts. */
J2KC_T1D_FN void refinement_pass(BlockDec &b, int p, bool raw)
{
    Pass r(b, p, raw);
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *const fs0 = b.stripe_flags(s);
        uint32_t *const vs0 = b.stripe_values(s);
        for (uint32_t x0 = 0; x0 < b.width; x0 += 4) {
            uint32_t m = columns4<t1dec::MrpOp>(fs0 + x0);
            while (m) {
                const uint32_t i = t1dec::ctz32(m);
                m &= m - 1;
                uint32_t *const f = fs0 + x0 + i;
                uint32_t *const v = vs0 + x0 + i;
                uint32_t w0 = *f;
                uint32_t rows = t1dec::sig_rows(w0) & ~t1dec::pi_rows(w0);  // never past the block's height
                while (rows) {
                    const int row = static_cast<int>(t1dec::ctz32(rows));
                    rows &= rows - 1;
                    const uint32_t mu = (w0 >> (24 + row)) & 1u;
                    const uint32_t nb = static_cast<uint32_t>(((w0 >> (3 * row)) & 0x1EFu) != 0);
                    const uint32_t bit = r.bit(kT1CtxMr + ((mu << 1) | (nb & ~mu)));
                    w0 |= t1dec::mu_bit(row);
                    v[row * r.vs] += (bit << (p + 1)) - (1u << p);  // +-2^p, the mid-point kept
                }
                *f = w0;
            }
        }
    }
    r.finish(b);
}

/** Cleanup (D.3.4) at plane p, with run-length mode and the segmentation
 *  symbols of D.5. */
J2KC_T1D_FN void cleanup_pass(BlockDec &b, int p, bool segmentation_symbols)
{
    Pass r(b, p, false);
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *f = b.stripe_flags(s);
        uint32_t *v = b.stripe_values(s);
        const int rows = static_cast<int>(t1dec::min4(b.height - 4 * s));
        for (uint32_t x = 0; x < b.width; ++x, ++f, ++v) {
            uint32_t w0 = *f;
            int row = 0;
            bool known = false;  // row is significant: its sign comes next
            if (rows == 4 && (w0 & t1dec::kSigmaMask) == 0) {
                // Run-length mode: four insignificant samples with no
                // significant neighbour (hence none visited).
                if (!r.bit(kT1CtxRl)) continue;
                J2KC_DEVICE_NO_UNROLL
                for (int k = 0; k < 2; ++k) row = (row << 1) | static_cast<int>(r.bit(kT1CtxUni));
                known = true;
            }
            for (; row < rows; ++row) {
                if (!known) {
                    if (w0 & (t1dec::sig_bit(row) | t1dec::pi_bit(row))) continue;
                    if (!r.bit(r.zc[(w0 >> (3 * row)) & 0x1FFu])) continue;
                }
                known = false;
                r.significant(f, w0, v, row, r.sign(f, w0, row));
            }
            *f = w0 & ~t1dec::kPiAll;
        }
    }
    if (segmentation_symbols) {  // D.5: four decisions in the uniform context
        J2KC_DEVICE_NO_UNROLL
        for (int k = 0; k < 4; ++k) r.bit(kT1CtxUni);
    }
    r.finish(b);
}

/**
 * t1dec::t1_decode_block over this layout: decodes the passes of `segments`
 * into a block prepared by prepare_flags() (and the values and contexts as
 * there). Returns kDecodeOk or the problem, with the pass at which it was
 * found in `bad_pass`.
 */
J2KC_T1D_FN uint32_t decode_block(BlockDec &b, const uint8_t *data, const CodewordSegment *segments,
                                  size_t num_segments, uint8_t style, int nbp, uint32_t &bad_pass)
{
    const bool segmentation = (style & 0x20) != 0;  // cblk_style::kSegmentationSymbols
    return t1dec::t1_decode_segments(b, data, segments, num_segments, style, nbp, bad_pass,
                                     [&](uint32_t type, int p, bool raw) {
                                         if (type == 0)
                                             significance_pass(b, p, raw);
                                         else if (type == 1)
                                             refinement_pass(b, p, raw);
                                         else
                                             cleanup_pass(b, p, segmentation);
                                     });
}

/** Zeroes the flags of a width x height block in `scratch` (flag_words) and
 *  points b at them: b.flags, b.fs, b.stripes, b.width, b.height. */
J2KC_T1D_FN void prepare_flags(BlockDec &b, uint32_t *scratch, uint32_t width, uint32_t height)
{
    // Column 0 of every stripe row at a 16-byte boundary: stripe_flags(s)
    // is flags + (s + 1) * fs + 1, so flags sits 3 words past one.
    const uintptr_t at = reinterpret_cast<uintptr_t>(scratch);
    uint32_t *aligned = reinterpret_cast<uint32_t *>((at + 15) & ~uintptr_t{15});
    b.width = width;
    b.height = height;
    b.stripes = (height + 3) / 4;
    b.fs = flag_stride(width);
    b.flags = aligned + 3;
    const size_t words = size_t{b.stripes + 2} * b.fs;
    for (size_t i = 0; i < words; ++i) aligned[i] = 0;
}

}  // namespace t1simt
}  // namespace j2kc
