/**
 * @file tier1_decoder_core.h
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
 * Each pass keeps the MQ decoder (mq_coder.h's MqDecoder, copied into a
 * local), the contexts and the current column word in locals.
 *
 * Values: the magnitude 2M + 2^p with the sign in bit 31, in raster order
 * inside the block (a contiguous scratch: rows of the caller's plane are
 * often 16 KiB apart and would fight over a few L1 sets); the output is
 * written once when the block is done, by a loop the compiler vectorises.
 *
 * The state, the tables (with __device__ copies), the column tests and the
 * segment schedule (t1_decode_segments) are __host__ __device__ under nvcc
 * (J2KC_T1D_FN / J2KC_T1D_INLINE): the CUDA kernel of tier1_decode.cu runs them
 * in the pass loops of tier1_decoder_simt.h, laid out for a GPU thread, so both
 * produce the same values. t1_decode_block() is this file's block driver,
 * without exceptions or allocation (status codes instead), for
 * Tier1Decoder::decode (tier1_cpu.cpp). `values` may have a row stride other
 * than the width (BlockDec::vstride): the kernel decodes straight into the
 * coefficient plane.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "tier1/mq_coder.h"
#include "tier1/tier1_contexts.h"

#include "common/host_device.h"
#include "tier1/codeword_segment.h"

/** SSE2 column masks: host compilers only (nvcc's device pass sees the
 *  host's macros too and rejects vector types; its host pass runs no hot
 *  Tier-1 loop, so it takes the scalar masks as well). */
#if defined(__SSE2__) && !defined(__CUDACC__)
#include <emmintrin.h>
#define J2KC_T1D_SSE2 1
#else
#define J2KC_T1D_SSE2 0
#endif

#if defined(__CUDACC__)
#define J2KC_T1D_INLINE __host__ __device__ __forceinline__
#define J2KC_T1D_FN __host__ __device__ inline
#elif defined(__GNUC__)
#define J2KC_T1D_INLINE inline __attribute__((always_inline))
#define J2KC_T1D_FN inline
#else
#define J2KC_T1D_INLINE inline
#define J2KC_T1D_FN inline
#endif

namespace j2kc {
namespace t1dec {

constexpr uint32_t kSigmaMask = 0x3FFFFu;  ///< all 18 significance bits
constexpr uint32_t kCentres = (1u << 4) | (1u << 7) | (1u << 10) | (1u << 13);
constexpr uint32_t kPiAll = 0xF0000000u;

J2KC_HD constexpr uint32_t sig_bit(int r) { return 1u << (3 * r + 4); }
J2KC_HD constexpr uint32_t mu_bit(int r) { return 1u << (24 + r); }
J2KC_HD constexpr uint32_t pi_bit(int r) { return 1u << (28 + r); }
J2KC_HD constexpr int chi_shift(int r) { return 19 + r; }  ///< r in -1..4

/** Zero-coding labels (Table D.1) by orientation and 9-bit neighbourhood
 *  (bit 0 NW, 1 N, 2 NE, 3 W, 4 the sample, 5 E, 6 SW, 7 S, 8 SE). */
struct ZcTable9 {
    uint8_t t[4][512];
};
J2KC_HD constexpr ZcTable9 make_zc_table9()
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
#if defined(__CUDACC__)
// Global (not __constant__) memory: the threads of a warp decode different
// blocks and look up different entries, which the constant cache serialises.
static __device__ const ZcTable9 kZc9Device = make_zc_table9();
static __device__ const T1ScTable kScDevice = make_t1_sc_table();
#endif

/** The zero-coding row of an orientation, from the table of the side running. */
J2KC_T1D_INLINE const uint8_t *zc_table(uint32_t orientation)
{
#if defined(__CUDA_ARCH__)
    return kZc9Device.t[orientation];
#else
    return kZc9.t[orientation];
#endif
}
/** Sign-coding entry (Tables D.2, D.3) of an 8-bit neighbourhood index. */
J2KC_T1D_INLINE uint32_t sc_entry(uint32_t idx)
{
#if defined(__CUDA_ARCH__)
    return kScDevice.t[idx];
#else
    return kT1ScTable.t[idx];
#endif
}

J2KC_HD constexpr uint32_t min4(uint32_t rows) { return rows < 4 ? rows : 4; }

/** Block state between passes. */
struct BlockDec {
    uint32_t *flags;   ///< (stripes + 2) * fs words, zero border around
    uint32_t *values;  ///< stripes * 4 rows of width, raster order, rows vstride apart
    uint32_t width, height, stripes, fs;
    size_t vstride;  ///< elements between rows of `values` (the width on the host)
    uint32_t orientation;
    bool vc;
    uint8_t cx[kT1NumContexts];
    MqDecoder mq;
    RawDecoder raw;

    J2KC_T1D_INLINE uint32_t *stripe_flags(uint32_t s) const { return flags + size_t{s + 1} * fs + 1; }
    J2KC_T1D_INLINE uint32_t *stripe_values(uint32_t s) const { return values + size_t{s} * vstride * 4; }
    /** Converts the values of rows [0, height) into out (sign and magnitude
     *  to two's complement). */
    J2KC_T1D_FN void write_output(int32_t *out, size_t out_stride) const
    {
        for (uint32_t y = 0; y < height; ++y) {
            int32_t *row = out + y * out_stride;
            const uint32_t *v = values + size_t{y} * vstride;
            for (uint32_t x = 0; x < width; ++x) {
                const uint32_t u = v[x];
                const int32_t mag = static_cast<int32_t>(u & 0x7FFFFFFFu);
                const int32_t neg = -static_cast<int32_t>(u >> 31);
                row[x] = (mag ^ neg) - neg;
            }
        }
    }
};

/** Bits 0..3: which of the rows 0..3 of a column word are significant. */
J2KC_T1D_INLINE uint32_t sig_rows(uint32_t w)
{
    return ((w >> 4) & 1u) | ((w >> 6) & 2u) | ((w >> 8) & 4u) | ((w >> 10) & 8u);
}
/** Bits 0..3: which rows were visited by this plane's significance pass. */
J2KC_T1D_INLINE uint32_t pi_rows(uint32_t w) { return w >> 28; }

/** Bits 0..3: the rows the significance pass codes (D.3.1): not significant,
 *  with at least one significant neighbour. */
J2KC_T1D_INLINE uint32_t spp_rows(uint32_t w)
{
    const uint32_t n =
        static_cast<uint32_t>((w & 0x1EFu) != 0) | (static_cast<uint32_t>(((w >> 3) & 0x1EFu) != 0) << 1) |
        (static_cast<uint32_t>(((w >> 6) & 0x1EFu) != 0) << 2) | (static_cast<uint32_t>(((w >> 9) & 0x1EFu) != 0) << 3);
    return n & ~sig_rows(w);
}

/** A column the significance pass may have to visit: something significant
 *  around, and not all four rows significant already. */
J2KC_T1D_INLINE uint32_t spp_candidate(uint32_t w)
{
    return static_cast<uint32_t>((w & kSigmaMask) != 0) & static_cast<uint32_t>((w & kCentres) != kCentres);
}

#if defined(__CUDA_ARCH__)
J2KC_T1D_INLINE uint32_t ctz32(uint32_t x) { return static_cast<uint32_t>(__ffs(static_cast<int>(x)) - 1); }
J2KC_T1D_INLINE uint32_t ctz64(uint64_t x) { return static_cast<uint32_t>(__ffsll(static_cast<long long>(x)) - 1); }
#else
J2KC_T1D_INLINE uint32_t ctz32(uint32_t x) { return static_cast<uint32_t>(__builtin_ctz(x)); }
J2KC_T1D_INLINE uint32_t ctz64(uint64_t x) { return static_cast<uint32_t>(__builtin_ctzll(x)); }
#endif

/** Columns are visited in chunks of up to 64, each with a bit mask of the
 *  columns a pass has work in, so runs of idle columns cost no branch each. */
constexpr uint32_t kChunk = 64;

/**
 * Bit i (i < n <= 64) set where Op selects column word f[i]. Op has
 * `scalar(word)` (0 or 1) and, with SSE2, `vec(4 words)` (lanes all ones
 * where selected). The vector form reads up to 3 words past f[n - 1]: the
 * flag array's east border and the border stripe below keep that inside it.
 */
template <typename Op>
J2KC_T1D_INLINE uint64_t column_mask(const uint32_t *f, uint32_t n)
{
    uint64_t m = 0;
#if J2KC_T1D_SSE2
    for (uint32_t i = 0; i < n; i += 4) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i *>(f + i));
        m |= uint64_t(static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(Op::vec(x))))) << i;
    }
    return n < 64 ? m & ((uint64_t{1} << n) - 1) : m;
#else
    for (uint32_t i = 0; i < n; ++i) m |= uint64_t{Op::scalar(f[i])} << i;
    return m;
#endif
}

#if J2KC_T1D_SSE2
J2KC_T1D_INLINE __m128i lanes_eq(__m128i x, uint32_t and_mask, uint32_t value)
{
    return _mm_cmpeq_epi32(_mm_and_si128(x, _mm_set1_epi32(static_cast<int>(and_mask))),
                           _mm_set1_epi32(static_cast<int>(value)));
}
#endif

/** Significance pass candidates: spp_candidate. */
struct SppOp {
    J2KC_T1D_INLINE static uint32_t scalar(uint32_t w) { return spp_candidate(w); }
#if J2KC_T1D_SSE2
    static __m128i vec(__m128i x)
    {
        const __m128i idle = _mm_or_si128(lanes_eq(x, kSigmaMask, 0), lanes_eq(x, kCentres, kCentres));
        return _mm_andnot_si128(idle, _mm_set1_epi32(-1));
    }
#endif
};
/** Refinement candidates: some row significant (rows past the block's
 *  height never are); whether one was not just visited is checked after. */
struct MrpOp {
    J2KC_T1D_INLINE static uint32_t scalar(uint32_t w) { return (w & kCentres) != 0; }
#if J2KC_T1D_SSE2
    static __m128i vec(__m128i x) { return _mm_andnot_si128(lanes_eq(x, kCentres, 0), _mm_set1_epi32(-1)); }
#endif
};
/** Cleanup run-length columns: nothing significant in the neighbourhood. */
struct RlOp {
    J2KC_T1D_INLINE static uint32_t scalar(uint32_t w) { return (w & kSigmaMask) == 0; }
#if J2KC_T1D_SSE2
    static __m128i vec(__m128i x) { return lanes_eq(x, kSigmaMask, 0); }
#endif
};
/** Cleanup columns with a row (of the first `Rows`) neither significant nor
 *  visited by the significance pass. */
template <uint32_t Rows>
struct CupOp {
    J2KC_T1D_INLINE static uint32_t scalar(uint32_t w)
    {
        return (~(sig_rows(w) | pi_rows(w)) & ((1u << Rows) - 1u)) != 0;
    }
#if J2KC_T1D_SSE2
    static __m128i vec(__m128i x)
    {
        __m128i any = lanes_eq(x, sig_bit(0) | pi_bit(0), 0);
        if (Rows > 1) any = _mm_or_si128(any, lanes_eq(x, sig_bit(1) | pi_bit(1), 0));
        if (Rows > 2) any = _mm_or_si128(any, lanes_eq(x, sig_bit(2) | pi_bit(2), 0));
        if (Rows > 3) any = _mm_or_si128(any, lanes_eq(x, sig_bit(3) | pi_bit(3), 0));
        return any;
    }
#endif
};

/**
 * One pass over a block: decisions come from the MQ decoder (kRaw false)
 * or the raw reader, and the current column word lives in `w0`. Rows are
 * template arguments so every shift and neighbour offset is a constant.
 */
template <bool kRaw>
struct PassDec {
    MqDecoder mq;
    RawDecoder raw;
    uint8_t cx[kT1NumContexts];
    const uint8_t *zc;
    ptrdiff_t fs;
    size_t vs;  ///< value row stride (the block width)
    bool vc;
    int p;

    J2KC_T1D_INLINE explicit PassDec(BlockDec &b, int plane)
        : mq(b.mq), raw(b.raw), zc(zc_table(b.orientation)), fs(b.fs), vs(b.vstride), vc(b.vc), p(plane)
    {
        for (int i = 0; i < kT1NumContexts; ++i) cx[i] = b.cx[i];
    }
    J2KC_T1D_INLINE void finish(BlockDec &b)
    {
        b.mq = mq;
        b.raw = raw;
        for (int i = 0; i < kT1NumContexts; ++i) b.cx[i] = cx[i];
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
                                 (((w0 >> chi_shift(R - 1)) & 1u) << 4) | (((w0 >> chi_shift(R + 1)) & 1u) << 5) |
                                 (((we >> chi_shift(R)) & 1u) << 6) | (((ea >> chi_shift(R)) & 1u) << 7);
            const uint32_t e = sc_entry(idx);
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
        if constexpr (kRaw)
            b = raw.get();
        else
            b = mq.decode_even(cx[zc[(w0 >> (3 * R)) & 0x1FFu]]);
        w0 |= pi_bit(R);
        if (b) becomes_significant<R>(f, w0, v);
    }

    /** Refines row R, which the caller found significant and not visited. */
    template <int R>
    J2KC_T1D_INLINE void mrp_row(uint32_t &w0, uint32_t *v)
    {
        // Table D.4 without a branch (which half of the samples would
        // mispredict): 16 after a first refinement, else 15 with a
        // significant neighbour, else 14.
        const uint32_t mu = (w0 >> (24 + R)) & 1u;
        const uint32_t nb = static_cast<uint32_t>(((w0 >> (3 * R)) & 0x1EFu) != 0);
        const uint32_t ctx = kT1CtxMr + ((mu << 1) | (nb & ~mu));
        uint32_t b;
        if constexpr (kRaw)
            b = raw.get();
        else
            b = mq.decode_even(cx[ctx]);
        w0 |= mu_bit(R);
        v[R * vs] += (b << (p + 1)) - (1u << p);  // +-2^p, the mid-point kept
    }

    /** Refines the rows in the 4-bit mask M (one jump per column instead
     *  of a data-dependent branch per row). */
    template <uint32_t M>
    J2KC_T1D_INLINE void mrp_rows(uint32_t &w0, uint32_t *v)
    {
        if (M & 1u) mrp_row<0>(w0, v);
        if (M & 2u) mrp_row<1>(w0, v);
        if (M & 4u) mrp_row<2>(w0, v);
        if (M & 8u) mrp_row<3>(w0, v);
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
J2KC_T1D_FN void pass_spp(BlockDec &b, int p)
{
    PassDec<kRaw> r(b, p);
    const uint32_t w = b.width;
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *const fstripe = b.stripe_flags(s);
        uint32_t *const vstripe = b.stripe_values(s);
        const uint32_t rows = min4(b.height - 4 * s);
        for (uint32_t x0 = 0; x0 < w; x0 += kChunk) {
            uint32_t *const f0 = fstripe + x0;
            uint32_t *const v0 = vstripe + x0;
            const uint32_t n = w - x0 < kChunk ? w - x0 : kChunk;
            uint64_t m = column_mask<SppOp>(f0, n);
            while (m) {
                const uint32_t i = ctz64(m);
                m &= m - 1;
                uint32_t *const f = f0 + i;
                uint32_t *const v = v0 + i;
                uint32_t w0 = *f;
                const uint32_t before = w0;
                r.template spp_row<0>(f, w0, v);
                if (rows > 1) r.template spp_row<1>(f, w0, v);
                if (rows > 2) r.template spp_row<2>(f, w0, v);
                if (rows > 3) r.template spp_row<3>(f, w0, v);
                *f = w0;
                // A new significance can make the east column a candidate.
                if (((w0 ^ before) & kCentres) && i + 1 < n) m |= uint64_t{spp_candidate(f[1])} << (i + 1);
            }
        }
    }
    r.finish(b);
}

/** Magnitude refinement (D.3.3) at plane p. */
template <bool kRaw>
J2KC_T1D_FN void pass_mrp(BlockDec &b, int p)
{
    PassDec<kRaw> r(b, p);
    const uint32_t w = b.width;
    for (uint32_t s = 0; s < b.stripes; ++s) {
        uint32_t *const fstripe = b.stripe_flags(s);
        uint32_t *const vstripe = b.stripe_values(s);
        for (uint32_t x0 = 0; x0 < w; x0 += kChunk) {
            uint32_t *const f0 = fstripe + x0;
            uint32_t *const v0 = vstripe + x0;
            const uint32_t n = w - x0 < kChunk ? w - x0 : kChunk;
            uint64_t m = column_mask<MrpOp>(f0, n);
            while (m) {
                const uint32_t i = ctz64(m);
                m &= m - 1;
                uint32_t w0 = f0[i];
                // Rows past the block's height are never significant.
                uint32_t *const v = v0 + i;
                switch (sig_rows(w0) & ~pi_rows(w0)) {
                case 0x0: continue;
                case 0x1: r.template mrp_rows<0x1>(w0, v); break;
                case 0x2: r.template mrp_rows<0x2>(w0, v); break;
                case 0x3: r.template mrp_rows<0x3>(w0, v); break;
                case 0x4: r.template mrp_rows<0x4>(w0, v); break;
                case 0x5: r.template mrp_rows<0x5>(w0, v); break;
                case 0x6: r.template mrp_rows<0x6>(w0, v); break;
                case 0x7: r.template mrp_rows<0x7>(w0, v); break;
                case 0x8: r.template mrp_rows<0x8>(w0, v); break;
                case 0x9: r.template mrp_rows<0x9>(w0, v); break;
                case 0xA: r.template mrp_rows<0xA>(w0, v); break;
                case 0xB: r.template mrp_rows<0xB>(w0, v); break;
                case 0xC: r.template mrp_rows<0xC>(w0, v); break;
                case 0xD: r.template mrp_rows<0xD>(w0, v); break;
                case 0xE: r.template mrp_rows<0xE>(w0, v); break;
                default: r.template mrp_rows<0xF>(w0, v); break;
                }
                f0[i] = w0;
            }
        }
    }
    r.finish(b);
}

/** Cleanup (D.3.4) at plane p, with the segmentation symbols of D.5. */
J2KC_T1D_FN void pass_cup(BlockDec &b, int p, bool segmentation_symbols)
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

/** Words of flag state t1_decode_block needs for a width x height block:
 *  the stripe-column words with a zero border all round. */
J2KC_HD constexpr size_t flag_words(uint32_t width, uint32_t height)
{
    return size_t{(height + 3) / 4 + 2} * (width + 2);
}

/** What t1_decode_block found wrong with a block's codewords (tier1.h's
 *  INVALID_DATA cases; the block's values are then meaningless). */
enum DecodeStatus : uint32_t {
    kDecodeOk = 0,
    kDecodeMixedSegment = 1,    ///< a segment mixes raw and arithmetic passes
    kDecodePastTermination = 2  ///< a segment runs past a terminating pass
};

/**
 * The codeword segments of a block (bytes back to back from `data`) pass by
 * pass: each segment starts the MQ decoder or the raw reader (D.6), contexts
 * are reset where the style says (D.4), and `decode_pass(type, p, raw)` runs
 * pass type t1_pass_type (0 significance, 1 refinement, 2 cleanup) at plane
 * p. Passes after the 3 * nbp - 2 that the coded planes hold are skipped:
 * they have no plane to refine, and OpenJPEG and Grok skip them as well
 * (encoders have written such blocks for 1-bit components).
 * Returns kDecodeOk or the problem, with the pass at which it was found in
 * `bad_pass`. Reads only [data, data + sum of lengths); every loop is
 * bounded by the pass count and the block's size.
 */
template <typename PassFn>
J2KC_T1D_FN uint32_t t1_decode_segments(BlockDec &b, const uint8_t *data, const CodewordSegment *segments,
                                        size_t num_segments, uint8_t style, int nbp, uint32_t &bad_pass,
                                        PassFn &&decode_pass)
{
    const bool reset = (style & 0x02) != 0;  // cblk_style::kReset
    const uint32_t last_pass = 3u * static_cast<uint32_t>(nbp) - 2u;
    uint32_t pass = 0;
    const uint8_t *seg = data;
    for (size_t k = 0; k < num_segments; ++k) {
        const CodewordSegment segment = segments[k];
        if (segment.passes > 0) {
            const bool raw = t1_pass_is_raw(pass, style);
            if (raw) {
                b.raw.init(seg, segment.length);
            } else {
                b.mq.init(seg, segment.length);
            }
            for (uint32_t n = 0; n < segment.passes; ++n, ++pass) {
                if (pass == last_pass) return kDecodeOk;
                if (t1_pass_is_raw(pass, style) != raw) {
                    bad_pass = pass;
                    return kDecodeMixedSegment;
                }
                if (n + 1 != segment.passes && t1_pass_is_terminated(pass, style)) {
                    bad_pass = pass;
                    return kDecodePastTermination;
                }
                if (reset && pass > 0) t1_reset_contexts(b.cx);
                decode_pass(t1_pass_type(pass), t1_pass_bitplane(pass, nbp), raw);
            }
        }
        seg += segment.length;
    }
    return kDecodeOk;
}

/**
 * Decodes the passes of `segments` into a prepared block: flags zeroed
 * (flag_words), values zeroed over rows [0, height), contexts reset,
 * width/height/stripes/fs/vstride/orientation/vc set. nbp is the count of
 * coded planes (Mb + s - P >= 1). As t1_decode_segments.
 */
J2KC_T1D_FN uint32_t t1_decode_block(BlockDec &b, const uint8_t *data, const CodewordSegment *segments,
                                     size_t num_segments, uint8_t style, int nbp, uint32_t &bad_pass)
{
    const bool segmentation = (style & 0x20) != 0;  // cblk_style::kSegmentationSymbols
    return t1_decode_segments(b, data, segments, num_segments, style, nbp, bad_pass,
                              [&](uint32_t type, int p, bool raw) {
                                  switch (type) {
                                  case 0:
                                      if (raw)
                                          pass_spp<true>(b, p);
                                      else
                                          pass_spp<false>(b, p);
                                      break;
                                  case 1:
                                      if (raw)
                                          pass_mrp<true>(b, p);
                                      else
                                          pass_mrp<false>(b, p);
                                      break;
                                  default: pass_cup(b, p, segmentation); break;
                                  }
                              });
}

}  // namespace t1dec
}  // namespace j2kc
