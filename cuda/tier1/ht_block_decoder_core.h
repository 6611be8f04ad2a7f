/**
 * @file ht_block_decoder_core.h
 * @brief The HTJ2K block decoder (Rec. ITU-T T.814 | ISO/IEC 15444-15,
 * clause 7): the HT cleanup pass (MagSgn, MEL and VLC byte streams, CxtVLC
 * codewords, U-VLC residuals, exponent predictors), the HT SigProp and
 * MagRef refinement passes, and the choice of the HT set to decode from the
 * passes Tier-2 delivered (placeholder passes, several HT sets). One
 * implementation, J2KC_HD, for the host (Tier1Decoder::decode) and the CUDA
 * kernel (ht_decode.cu, a warp per code-block): no allocation, no
 * exceptions, every read bounded by the block's segments.
 *
 * Output: the representation Tier1Decoder gives for Part-1 blocks (tier1.h),
 * in sign and magnitude (bit 31 the sign): 0 while insignificant, else
 * 2 * M + 2^p with M the magnitude decoded (quantisation-index units) and p
 * the lowest plane decoded for that coefficient. A cleanup pass at plane
 * p_c gives (2 mu + 1) 2^p_c for its significant samples (mu the cleanup's
 * magnitude); SigProp at p_c - 1 gives 3 * 2^(p_c - 1) to the samples it
 * makes significant; MagRef at p_c - 1 adds +-2^(p_c - 1) to the samples the
 * cleanup found, as Part-1's refinement does. So quant/ sees no difference.
 *
 * Planes: with Mb + s planes (s the ROI shift), P zero bit-planes from the
 * packet header and Z passes signalled, the last HT set begins with the
 * cleanup pass number 3 * P0 (P0 = floor((Z - 1) / 3): the 3 * P0 passes
 * before it are placeholders or earlier HT sets), which codes plane
 * p_c = Mb + s - 1 - P - P0; Z - 3 * P0 - 1 refinement passes (0..2) follow it.
 *
 * State between the passes lives in the output values themselves: a sample
 * is significant when its value is non-zero, and one that SigProp made
 * significant is told from a cleanup one by bit p_c - 1 of its magnitude
 * (a cleanup magnitude is a multiple of 2^p_c). The cleanup keeps two rows
 * of quad records in a small scratch (ht_scratch_words).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/codeword_segment.h"
#include "tier1/ht_block_coder_core.h"
#include "tier1/ht_vlc_table.h"

namespace j2kc {
namespace ht {

// ------------------------------------------------------------------ tables

/**
 * Decoder lookup of the CxtVLC tables: t[table][(context << 7) | next 7 bits
 * of the VLC stream] = u_off (bit 0), codeword length (bits 1..3), rho
 * (bits 4..7), e_k (bits 8..11), e_1 (bits 12..15). Table 0 is for the first
 * row of quads, 1 for the others. Each table is a complete prefix code per
 * context (ht_vlc_table.h), so every entry is filled.
 */
struct VlcLookup {
    uint16_t t[2][1024];
};

J2KC_HD constexpr VlcLookup make_vlc_lookup()
{
    VlcLookup v{};
    for (int table = 0; table < 2; ++table) {
        const HtVlcRow *rows = table == 0 ? kHtVlcFirstRow : kHtVlcOtherRows;
        const size_t n = table == 0 ? kHtVlcFirstRowCount : kHtVlcOtherRowsCount;
        for (size_t r = 0; r < n; ++r) {
            const HtVlcRow row = rows[r];
            const uint16_t entry = static_cast<uint16_t>(row.u_off | (row.length << 1) | (row.rho << 4) |
                                                         (row.e_k << 8) | (row.e_1 << 12));
            // Every 7-bit look-ahead whose first `length` bits are the codeword.
            for (uint32_t rest = 0; rest < (1u << (7 - row.length)); ++rest)
                v.t[table][(uint32_t{row.context} << 7) | (rest << row.length) | row.codeword] = entry;
        }
    }
    return v;
}
inline constexpr VlcLookup kVlcLookup = make_vlc_lookup();
#if defined(__CUDACC__)
static __device__ const VlcLookup kVlcLookupDevice = make_vlc_lookup();
#endif

J2KC_HT_INLINE uint32_t vlc_entry(uint32_t table, uint32_t index)
{
#if defined(__CUDA_ARCH__)
    return kVlcLookupDevice.t[table][index];
#else
    return kVlcLookup.t[table][index];
#endif
}

// ------------------------------------------------------------------ byte streams

/**
 * The bit accumulator of the streams read least-significant bit first: up to
 * 64 bits, the next one in bit 0, topped up by the stream's own refill()
 * (Stream, which derives from it: the reads inline, no indirection).
 */
template <class Stream>
struct LsbAccumulator {
    uint64_t acc;
    uint32_t bits;
    uint32_t last;  ///< the byte read last, which decides the next byte's stuffing

    /** Appends the low n bits of byte b (n = 7 when its top bit is stuffed). */
    J2KC_HT_INLINE void push(uint32_t b, uint32_t n)
    {
        acc |= uint64_t{b & ((1u << n) - 1u)} << bits;
        bits += n;
        last = b;
    }

    /** The next n <= 32 bits, left unread. */
    J2KC_HT_INLINE uint32_t peek(uint32_t n)
    {
        if (bits < n) static_cast<Stream *>(this)->refill();
        return static_cast<uint32_t>(acc & ((uint64_t{1} << n) - 1u));
    }
    J2KC_HT_INLINE void skip(uint32_t n)
    {
        if (bits < n) static_cast<Stream *>(this)->refill();
        acc >>= n;
        bits -= n;
    }
    /** n <= 32 bits, first bit read in bit 0. */
    J2KC_HT_INLINE uint32_t get(uint32_t n)
    {
        if (n == 0) return 0;
        if (bits < n) static_cast<Stream *>(this)->refill();
        const uint32_t v = static_cast<uint32_t>(acc & ((uint64_t{1} << n) - 1u));
        acc >>= n;
        bits -= n;
        return v;
    }
};

/** Bits a forward stream (MagSgn, SigProp) takes from a byte read after `last`: 7 after 0xFF (a stuffed 0). */
J2KC_HT_INLINE uint32_t forward_byte_bits(uint32_t last) { return last == 0xFF ? 7u : 8u; }

/**
 * Bits a backward stream (VLC, MagRef) takes from byte b read after `last`:
 * 7 when b's low seven bits are all ones and `last` is above 0x8F (b's most
 * significant bit is stuffed).
 */
J2KC_HT_INLINE uint32_t backward_byte_bits(uint32_t last, uint32_t b)
{
    return last > 0x8F && (b & 0x7F) == 0x7F ? 7u : 8u;
}

/**
 * A forward stream read least-significant bit first (MagSgn, SigProp): after
 * a 0xFF byte the next byte's most significant bit is a stuffed 0 and is
 * skipped. Past the end it reads `fill` bytes (0xFF for MagSgn, 0 for SigProp).
 */
struct ForwardLsb : LsbAccumulator<ForwardLsb> {
    const uint8_t *data;
    uint32_t size, pos;
    uint32_t fill;

    J2KC_HT_INLINE void init(const uint8_t *d, uint32_t n, uint32_t fill_byte)
    {
        data = d;
        size = n;
        pos = 0;
        acc = 0;
        bits = 0;
        last = 0;
        fill = fill_byte;
    }
    J2KC_HT_INLINE void refill()
    {
        while (bits <= 56) {
            const uint32_t b = pos < size ? data[pos++] : fill;
            push(b, forward_byte_bits(last));
        }
    }
};

/**
 * A backward stream read least-significant bit first (VLC, MagRef): bytes
 * from `pos` down to `lo`; a byte whose low seven bits are all ones, read
 * right after (that is, before in memory) a byte above 0x8F, carries seven
 * bits (its most significant bit is stuffed). Past the start it reads zeros.
 */
struct BackwardLsb : LsbAccumulator<BackwardLsb> {
    const uint8_t *data;
    int64_t pos, lo;

    J2KC_HT_INLINE void refill()
    {
        while (bits <= 56) {
            if (bits <= 32 && pos >= lo + 3 && push_word()) continue;
            const uint32_t b = pos >= lo ? data[pos] : 0u;
            --pos;
            push(b, backward_byte_bits(last, b));
        }
    }
    /**
     * The four bytes from `pos` down in one step when none of them can carry
     * a stuffed bit (none has its low seven bits all ones): most refills,
     * without a test a byte. False, and nothing read, otherwise.
     */
    J2KC_HT_INLINE bool push_word()
    {
        const uint32_t w = data[pos] | (uint32_t{data[pos - 1]} << 8) | (uint32_t{data[pos - 2]} << 16) |
                           (uint32_t{data[pos - 3]} << 24);
        if (has_byte_ff(w | 0x80808080u)) return false;
        acc |= uint64_t{w} << bits;
        bits += 32;
        last = w >> 24;
        pos -= 4;
        return true;
    }
    /** Whether one of the four bytes of v is 0xFF. */
    static J2KC_HT_INLINE bool has_byte_ff(uint32_t v)
    {
        const uint32_t z = ~v;
        return ((z - 0x01010101u) & ~z & 0x80808080u) != 0;
    }
    J2KC_HT_INLINE uint32_t peek7()
    {
        if (bits < 7) refill();
        return static_cast<uint32_t>(acc & 0x7F);
    }
    /** Drops n bits already peeked. */
    J2KC_HT_INLINE void drop(uint32_t n)
    {
        acc >>= n;
        bits -= n;
    }
};

/**
 * The MEL stream: forward from Pcup, most significant bit first, a stuffed
 * bit after 0xFF; the last two bytes of the cleanup segment read as if the
 * Scup nibble and byte were all ones (the standard's modDcup), and 0xFF past Lcup.
 */
struct MelDecoder {
    const uint8_t *data;  ///< the cleanup segment
    uint32_t pos, end;    ///< next byte, Lcup
    uint32_t tmp, bits;
    uint32_t k, run;
    bool one;

    J2KC_HT_INLINE void init(const uint8_t *d, uint32_t pcup, uint32_t lcup)
    {
        data = d;
        pos = pcup;
        end = lcup;
        tmp = 0;
        bits = 0;
        k = 0;
        run = 0;
        one = false;
    }
    J2KC_HT_INLINE uint32_t byte_at(uint32_t i) const
    {
        if (i >= end || i + 1 == end) return 0xFF;
        return i + 2 == end ? (data[i] | 0x0Fu) : data[i];
    }
    J2KC_HT_INLINE uint32_t bit()
    {
        if (bits == 0) {
            bits = tmp == 0xFF ? 7u : 8u;
            tmp = byte_at(pos);
            if (pos < end) ++pos;
        }
        --bits;
        return (tmp >> bits) & 1u;
    }
    /** decodeMELSym: 0 or 1. */
    J2KC_HT_INLINE uint32_t symbol()
    {
        if (run == 0 && !one) {
            uint32_t e = mel_exponent(k);
            if (bit()) {
                run = 1u << e;
                k = k + 1 < 12 ? k + 1 : 12;
            } else {
                run = 0;
                while (e > 0) {
                    run = 2 * run + bit();
                    --e;
                }
                k = k > 0 ? k - 1 : 0;
                one = true;
            }
        }
        if (run > 0) {
            --run;
            return 0;
        }
        one = false;
        return 1;
    }
};

// ------------------------------------------------------------------ U-VLC

/*
 * The U-VLC codes read from a window of the VLC stream (its next bits, the
 * first in bit 0) instead of a bit at a time, so that a quad pair's residuals
 * take one peek, a few shifts and one drop, and the lanes of a warp that
 * decode different blocks take the same path.
 */

/** decodeUPrefix from the window w: the prefix (1, 2, 3 or 5) in bits 0..3, its length in bits 4..7. */
J2KC_HT_INLINE uint32_t u_prefix_code(uint32_t w)
{
    // Indexed by the next three bits: "1" 1, "01" 2, "001" 3, "000" 5.
    return static_cast<uint32_t>(0x1122113311221135ull >> (8 * (w & 7u))) & 0xFFu;
}
/** The U-VLC field of `length` bits at bit *at of the window w; *at moves past it. */
J2KC_HT_INLINE uint32_t u_field(uint32_t w, uint32_t &at, uint32_t length)
{
    const uint32_t v = (w >> at) & ((1u << length) - 1u);
    at += length;
    return v;
}
/** decodeUPrefix at bit *at of w for a quad with a residual (`on`); 0, reading nothing, for one without. */
J2KC_HT_INLINE uint32_t u_prefix_at(uint32_t w, uint32_t &at, bool on)
{
    const uint32_t code = on ? u_prefix_code(w >> at) : 0u;
    at += code >> 4;
    return code & 0xFu;
}
/** decodeUSuffix: 5 bits after prefix 5, 1 after prefix 3, none after 1 or 2 (or none read). */
J2KC_HT_INLINE uint32_t u_suffix_at(uint32_t w, uint32_t &at, uint32_t prefix)
{
    return u_field(w, at, (0x501000u >> (4 * prefix)) & 0xFu);
}
/** decodeUExtension: 4 bits after a suffix of 28 or more. */
J2KC_HT_INLINE uint32_t u_extension_at(uint32_t w, uint32_t &at, uint32_t suffix)
{
    return u_field(w, at, suffix >= 28 ? 4u : 0u);
}

/**
 * The U-VLC residuals of a quad pair whose quads a and b have them when
 * on_a and on_b (7.3.6): the prefixes, then the suffixes, then the
 * extensions, of those that have them, in at most 24 bits. In the first row,
 * when both do, MEL says whether both exceed 2: if so both get 2 more;
 * if not, a prefix of a above 2 is followed by one bit that gives ub (1 or
 * 2) instead of b's prefix.
 */
J2KC_HT_INLINE void u_residuals(BackwardLsb &vlc, MelDecoder &mel, bool first_row, bool on_a, bool on_b, uint32_t &ua,
                                uint32_t &ub)
{
    const bool mel_pair = first_row && on_a && on_b && mel.symbol() != 0;
    const uint32_t w = vlc.peek(24);
    uint32_t at = 0;
    const uint32_t pa = u_prefix_at(w, at, on_a);
    if (first_row && on_a && on_b && !mel_pair && pa > 2) {
        ub = u_field(w, at, 1) + 1;
        const uint32_t sa = u_suffix_at(w, at, pa);
        ua = pa + sa + 4 * u_extension_at(w, at, sa);
    } else {
        const uint32_t pb = u_prefix_at(w, at, on_b);
        const uint32_t sa = u_suffix_at(w, at, pa), sb = u_suffix_at(w, at, pb);
        const uint32_t xa = u_extension_at(w, at, sa), xb = u_extension_at(w, at, sb);
        const uint32_t bonus = mel_pair ? 2u : 0u;
        ua = pa + sa + 4 * xa + bonus;
        ub = pb + sb + 4 * xb + bonus;
    }
    vlc.drop(at);
}

// ------------------------------------------------------------------ block

/** What ht_decode_block found wrong (the values are then meaningless). */
enum HtStatus : uint32_t {
    kHtOk = 0,
    kHtBadSegments = 1,   ///< the passes' segments do not form an HT set (cleanup not ending a segment, ...)
    kHtNoPlane = 2,       ///< P + P0 leaves no plane for the cleanup pass (Kmax exceeded)
    kHtShortCleanup = 3,  ///< cleanup segment shorter than 2 bytes
    kHtBadScup = 4,       ///< Scup outside 2..min(Lcup, 4079)
    kHtBadExponent = 5,   ///< an exponent bound U_q or a magnitude beyond the block's planes
};

J2KC_HT_INLINE const char *ht_status_text(uint32_t s)
{
    switch (s) {
    case kHtOk: return "ok";
    case kHtBadSegments: return "codeword segments do not form an HT set";
    case kHtNoPlane: return "zero bit-planes and placeholder passes leave no plane for the cleanup pass";
    case kHtShortCleanup: return "HT cleanup segment shorter than 2 bytes";
    case kHtBadScup: return "HT cleanup segment: Scup (MEL + VLC length) out of range";
    default: return "HT cleanup pass: exponent bound beyond the block's bit-planes";
    }
}

/** Scratch words ht_decode_block needs for a block `width` samples wide: two rows of quad records. */
J2KC_HD constexpr size_t ht_scratch_words(uint32_t width) { return 2 * (size_t{(width + 1) / 2} + 2); }

/** Quad record: rho (bits 0..3), E of its bottom-left sample (8..13), of its bottom-right (16..21). */
J2KC_HT_INLINE uint32_t quad_rho(uint32_t r) { return r & 0xFu; }
J2KC_HT_INLINE uint32_t quad_e_bl(uint32_t r) { return (r >> 8) & 0x3Fu; }
J2KC_HT_INLINE uint32_t quad_e_br(uint32_t r) { return (r >> 16) & 0x3Fu; }

/**
 * The exponent bound U_q = kappa_q + u_q of a quad below the first row:
 * kappa_q = max(1, Emax - 1) when more than one of its samples is
 * significant (1 otherwise), Emax over the bottom exponents of the quad
 * records above-left, above and above-right.
 */
J2KC_HT_INLINE uint32_t exponent_bound(uint32_t rho, uint32_t u, uint32_t above_left, uint32_t above,
                                       uint32_t above_right)
{
    uint32_t emax = quad_e_br(above_left);
    const uint32_t e1 = quad_e_bl(above), e2 = quad_e_br(above), e3 = quad_e_bl(above_right);
    emax = emax > e1 ? emax : e1;
    emax = emax > e2 ? emax : e2;
    emax = emax > e3 ? emax : e3;
    const uint32_t kappa = popcount4(rho) > 1 && emax > 2 ? emax - 1 : 1;
    return kappa + u;
}

/** What the VLC (and MEL) give for one quad. */
struct QuadSig {
    uint32_t rho, u_off, e_k, e_1;
};

/** Significance and EMB pattern of a quad in context c (7.3.5): MEL in context 0, then CxtVLC. */
J2KC_HT_INLINE QuadSig decode_quad_sig(BackwardLsb &vlc, MelDecoder &mel, uint32_t table, uint32_t c)
{
    QuadSig q{0, 0, 0, 0};
    if (c == 0 && mel.symbol() == 0) return q;
    const uint32_t e = vlc_entry(table, (c << 7) | vlc.peek7());
    vlc.drop((e >> 1) & 7u);
    q.u_off = e & 1u;
    q.rho = (e >> 4) & 0xFu;
    q.e_k = (e >> 8) & 0xFu;
    q.e_1 = (e >> 12) & 0xFu;
    return q;
}

/** Block-wide constants of the cleanup pass. */
struct CleanupFrame {
    uint32_t *values;
    size_t vstride;
    uint32_t width, height;
    uint32_t p;       ///< p_c, the cleanup's plane
    uint32_t u_max;   ///< largest U_q allowed: planes - p_c + 1
    uint32_t mu_lim;  ///< mu must stay below 2^(planes - p_c) (magnitude < 2^planes)
};

/**
 * One significant sample's MagSgn value (7.3.8): `v` holds its m MagSgn
 * bits with the implicit top bit e_1 << m added. Its value in sign and
 * magnitude at the cleanup's plane, and its exponent E (bit length of v | 1);
 * false when the magnitude does not fit the block's planes.
 */
J2KC_HT_INLINE bool magsgn_sample(const CleanupFrame &f, uint32_t v, uint32_t &value, uint32_t &e)
{
    const uint32_t mu = (v >> 1) + 1;
    e = bit_length(v | 1u);
    value = ((v & 1u) << 31) | ((2 * mu + 1) << f.p);
    return mu < f.mu_lim;
}

/** The MagSgn bits m of sample i of a quad with exponent bound U: U less its known-exponent bit (U >= 1). */
J2KC_HT_INLINE uint32_t magsgn_bits(const QuadSig &q, uint32_t U, uint32_t i) { return U - ((q.e_k >> i) & 1u); }

/** The quad record (rho and the exponents of its bottom samples) that the row below reads. */
J2KC_HT_INLINE uint32_t quad_record(uint32_t rho, uint32_t e_bl, uint32_t e_br)
{
    return rho | (e_bl << 8) | (e_br << 16);
}

/**
 * MagSgn of one quad (7.3.8): values of its samples inside the block, and its
 * record (rho and the exponents of its bottom samples). Returns false when a
 * magnitude does not fit the block's planes.
 */
J2KC_HT_INLINE bool decode_quad_magsgn(const CleanupFrame &f, ForwardLsb &ms, const QuadSig &q, uint32_t U, uint32_t qx,
                                       uint32_t qy, uint32_t &record)
{
    uint32_t e_bl = 0, e_br = 0;
    const uint32_t x0 = 2 * qx, y0 = 2 * qy;
    for (uint32_t i = 0; i < 4; ++i) {
        uint32_t value = 0, e = 0;
        if ((q.rho >> i) & 1u) {
            const uint32_t m = magsgn_bits(q, U, i);
            if (!magsgn_sample(f, ms.get(m) | (((q.e_1 >> i) & 1u) << m), value, e)) return false;
        }
        if (i == 1) e_bl = e;
        if (i == 3) e_br = e;
        const uint32_t x = x0 + (i >> 1), y = y0 + (i & 1u);
        if (x < f.width && y < f.height) f.values[size_t{y} * f.vstride + x] = value;
    }
    record = quad_record(q.rho, e_bl, e_br);
    return true;
}

/** The context of the first row's next quad from the quad before it (7.3.5, eq. 1). */
J2KC_HT_INLINE uint32_t first_row_context(uint32_t rho)
{
    return ((rho | (rho >> 1)) & 1u) | (((rho >> 2) & 1u) << 1) | (((rho >> 3) & 1u) << 2);
}

/**
 * A quad pair of the first row (7.3.5, 7.3.6): significance of quads a and b
 * (b only when has_b) in the running context c, then their U-VLC residuals
 * ua and ub (with the pair rule that MEL decides when both have u_off).
 */
J2KC_HT_INLINE void decode_pair_first_row(BackwardLsb &vlc, MelDecoder &mel, bool has_b, uint32_t &c, QuadSig &a,
                                          QuadSig &b, uint32_t &ua, uint32_t &ub)
{
    b = QuadSig{0, 0, 0, 0};
    ua = ub = 0;
    a = decode_quad_sig(vlc, mel, 0, c);
    c = first_row_context(a.rho);
    if (has_b) {
        b = decode_quad_sig(vlc, mel, 0, c);
        c = first_row_context(b.rho);
    }
    if (a.u_off || b.u_off) u_residuals(vlc, mel, true, a.u_off, b.u_off, ua, ub);
}

/**
 * A quad pair below the first row: significance of a and b in their
 * contexts (7.3.5, eq. 2: nw|n, w|sw, ne|nf) from the significance rho of
 * the quads above-left (nw), above (n), above-right (nf) and the one after
 * (nf2), and of the quad left of a; then their U-VLC residuals.
 */
J2KC_HT_INLINE void decode_pair_other_row(BackwardLsb &vlc, MelDecoder &mel, bool has_b, uint32_t nw, uint32_t n,
                                          uint32_t nf, uint32_t nf2, uint32_t left, QuadSig &a, QuadSig &b,
                                          uint32_t &ua, uint32_t &ub)
{
    b = QuadSig{0, 0, 0, 0};
    ua = ub = 0;
    uint32_t ca = ((quad_rho(nw) >> 3) | (quad_rho(n) >> 1)) & 1u;
    ca |= ((quad_rho(left) >> 2) | (quad_rho(left) >> 3)) & 1u ? 2u : 0u;
    ca |= ((quad_rho(n) >> 3) | (quad_rho(nf) >> 1)) & 1u ? 4u : 0u;
    a = decode_quad_sig(vlc, mel, 1, ca);
    if (has_b) {
        uint32_t cb = ((quad_rho(n) >> 3) | (quad_rho(nf) >> 1)) & 1u;
        cb |= ((a.rho >> 2) | (a.rho >> 3)) & 1u ? 2u : 0u;
        cb |= ((quad_rho(nf) >> 3) | (quad_rho(nf2) >> 1)) & 1u ? 4u : 0u;
        b = decode_quad_sig(vlc, mel, 1, cb);
    }
    if (a.u_off || b.u_off) u_residuals(vlc, mel, false, a.u_off, b.u_off, ua, ub);
}

/**
 * The cleanup segment's layout (7.1): Scup from its last two bytes, checked
 * against Lcup; Pcup = Lcup - Scup, where MEL starts. kHtOk or why not.
 */
J2KC_HT_INLINE uint32_t cleanup_split(const uint8_t *d, uint32_t lcup, uint32_t &pcup)
{
    pcup = 0;
    if (lcup < 2) return kHtShortCleanup;
    const uint32_t scup = (uint32_t{d[lcup - 1]} << 4) | (d[lcup - 2] & 0x0Fu);
    if (scup < 2 || scup > lcup || scup > 4079) return kHtBadScup;
    pcup = lcup - scup;
    return kHtOk;
}

/** The MEL and VLC streams of a cleanup segment d[0, lcup) whose MEL starts at pcup. */
J2KC_HT_INLINE void cleanup_streams(const uint8_t *d, uint32_t lcup, uint32_t pcup, MelDecoder &mel, BackwardLsb &vlc)
{
    mel.init(d, pcup, lcup);
    // VLC: backward from byte Lcup - 2, of which only the upper nibble (read
    // as if the Scup nibble were all ones) belongs to it.
    vlc.data = d;
    vlc.lo = pcup;
    vlc.pos = static_cast<int64_t>(lcup) - 3;
    const uint32_t first = d[lcup - 2] | 0x0Fu;
    const uint32_t nibble = first >> 4;
    const uint32_t n = (nibble & 7u) == 7u ? 3u : 4u;  // previous byte (Scup's) reads as 0xFF
    vlc.acc = nibble & ((1u << n) - 1u);
    vlc.bits = n;
    vlc.last = first;
}

/**
 * The HT cleanup pass (7.3) over the cleanup segment d[0, lcup) at plane
 * f.p. `scratch` holds ht_scratch_words(width) words. Writes every sample of
 * the block.
 */
J2KC_HT_FN uint32_t decode_cleanup(const CleanupFrame &f, const uint8_t *d, uint32_t lcup, uint32_t *scratch)
{
    uint32_t pcup = 0;
    const uint32_t split = cleanup_split(d, lcup, pcup);
    if (split != kHtOk) return split;
    ForwardLsb ms;
    ms.init(d, pcup, 0xFF);
    MelDecoder mel;
    BackwardLsb vlc;
    cleanup_streams(d, lcup, pcup, mel, vlc);

    const uint32_t qw = (f.width + 1) / 2, qh = (f.height + 1) / 2;
    // Two rows of quad records with a zero guard on each side: above[1 + qx].
    uint32_t *above = scratch, *cur = scratch + (qw + 2);
    for (uint32_t i = 0; i < qw + 2; ++i) above[i] = cur[i] = 0;

    for (uint32_t qy = 0; qy < qh; ++qy) {
        cur[0] = cur[qw + 1] = 0;
        uint32_t c = 0;  // context of the next quad (first row)
        for (uint32_t qx = 0; qx < qw; qx += 2) {
            const bool has_b = qx + 1 < qw;
            QuadSig a, b;
            uint32_t ua, ub, Ua, Ub;
            if (qy == 0) {
                decode_pair_first_row(vlc, mel, has_b, c, a, b, ua, ub);
                // kappa is 1 in the first row.
                Ua = 1 + ua;
                Ub = 1 + ub;
            } else {
                decode_pair_other_row(vlc, mel, has_b, above[qx], above[1 + qx], above[2 + qx],
                                      has_b ? above[3 + qx] : 0u, cur[qx], a, b, ua, ub);
                // Exponent predictors over the quads above: nw, n, nf for a; n, nf and the one after for b.
                Ua = exponent_bound(a.rho, ua, above[qx], above[1 + qx], above[2 + qx]);
                Ub = has_b ? exponent_bound(b.rho, ub, above[1 + qx], above[2 + qx], above[3 + qx]) : 1u;
            }
            if (Ua > f.u_max || Ub > f.u_max) return kHtBadExponent;
            if (!decode_quad_magsgn(f, ms, a, Ua, qx, qy, cur[1 + qx])) return kHtBadExponent;
            if (has_b && !decode_quad_magsgn(f, ms, b, Ub, qx + 1, qy, cur[2 + qx])) return kHtBadExponent;
        }
        uint32_t *t = above;
        above = cur;
        cur = t;
    }
    return kHtOk;
}

/**
 * A column of a SigProp stripe (7.4) as six bits from its samples: bit 0
 * the sample above the stripe, bits 1..4 the stripe's rows, bit 5 the
 * sample below it; a bit is set when that sample is significant (not zero,
 * in sign and magnitude or in two's complement alike: a significant
 * sample's magnitude is never zero). Samples outside the block, and below
 * in vertically causal mode, are passed as zero.
 */
J2KC_HT_INLINE uint32_t stripe_column_bits(uint32_t above, const uint32_t (&stripe)[4], uint32_t below)
{
    // Row by row rather than a loop: clang 14 at -O1 (the sanitizer build)
    // built the loop, inlined into the host's SigProp scan, as if every row
    // were row 0.
    uint32_t c = above != 0 ? 1u : 0u;
    c |= stripe[0] != 0 ? 1u << 1 : 0u;
    c |= stripe[1] != 0 ? 1u << 2 : 0u;
    c |= stripe[2] != 0 ? 1u << 3 : 0u;
    c |= stripe[3] != 0 ? 1u << 4 : 0u;
    return c | (below != 0 ? 1u << 5 : 0u);
}

/**
 * stripe_column_bits of column x of the stripe from row y0, read from the
 * values as they stand. Outside the block the column is 0.
 */
J2KC_HT_INLINE uint32_t stripe_column(const uint32_t *values, size_t vstride, uint32_t width, uint32_t height,
                                      uint32_t x, uint32_t y0, bool causal)
{
    if (x >= width) return 0;
    const uint32_t *col = values + x;
    const uint32_t above = y0 > 0 ? col[size_t{y0 - 1} * vstride] : 0u;
    uint32_t stripe[4] = {0, 0, 0, 0};
    const uint32_t rows = height - y0 < 4 ? height - y0 : 4;
    for (uint32_t r = 0; r < rows; ++r) stripe[r] = col[size_t{y0 + r} * vstride];
    const uint32_t below = !causal && y0 + 4 < height ? col[size_t{y0 + 4} * vstride] : 0u;
    return stripe_column_bits(above, stripe, below);
}

/**
 * The SigProp members of a stripe column (7.4): bit r set when row r (below
 * `rows`) is insignificant and one of its eight neighbours is significant as
 * the scan reaches it. `left` is the stripe_column to the left with its
 * significance final (it comes earlier in the scan), `own` and `right` the
 * column's and the next one's as the cleanup left them (their rows come
 * later, only the row above is final), `fresh` the rows of this column
 * SigProp has made significant so far: those count for the rows below them.
 */
J2KC_HT_INLINE uint32_t sigprop_members(uint32_t left, uint32_t own, uint32_t fresh, uint32_t right, uint32_t rows)
{
    const uint32_t sides = left | (left >> 1) | (left >> 2) | right | (right >> 1) | (right >> 2);
    const uint32_t up = own | (fresh << 1), down = own >> 2;
    const uint32_t insignificant = ~(own >> 1) & ((1u << rows) - 1u);
    return (sides | up | down) & insignificant & 0xFu;
}

/**
 * The scan of a SigProp stripe column (7.4): its members row by row
 * (sigprop_members: a row made significant makes the row below a member),
 * each taking the next of `bits`, the first in bit 0. Returns the rows made
 * significant; `members` gets the rows that took a bit.
 */
J2KC_HT_INLINE uint32_t sigprop_column(uint32_t left, uint32_t own, uint32_t right, uint32_t rows, uint32_t bits,
                                       uint32_t &members)
{
    uint32_t col = 0;
    members = 0;
    for (uint32_t r = 0; r < 4; ++r)
        if ((sigprop_members(left, own, col, right, rows) >> r) & 1u) {
            members |= 1u << r;
            col |= (bits & 1u) << r;
            bits >>= 1;
        }
    return col;
}

/** A sample SigProp makes significant at plane p: 3 * 2^p (the middle of its interval), and its sign. */
J2KC_HT_INLINE uint32_t sigprop_value(uint32_t sign, uint32_t p) { return (sign << 31) | (3u << p); }

/**
 * HT SigProp (7.4) at plane p over the refinement segment (forward, zeros
 * past its end): stripes of four rows, in groups of four columns; in a group
 * the significance bits of the members (sigprop_members) column by column,
 * then the signs of those that became significant.
 */
J2KC_HT_FN void decode_sigprop(uint32_t *values, size_t vstride, uint32_t width, uint32_t height, uint32_t p,
                               bool causal, const uint8_t *dref, uint32_t lref)
{
    ForwardLsb sp;
    sp.init(dref, lref, 0);
    for (uint32_t y0 = 0; y0 < height; y0 += 4) {
        const uint32_t rows = height - y0 < 4 ? height - y0 : 4;
        uint32_t left = 0, own = stripe_column(values, vstride, width, height, 0, y0, causal);
        for (uint32_t x0 = 0; x0 < width; x0 += 4) {
            const uint32_t cols = width - x0 < 4 ? width - x0 : 4;
            uint32_t fresh = 0;  // bit 4 * col + row: became significant in this group
            for (uint32_t cx = 0; cx < cols; ++cx) {
                const uint32_t x = x0 + cx;
                const uint32_t right = stripe_column(values, vstride, width, height, x + 1, y0, causal);
                uint32_t col = 0;  // rows made significant
                if (sigprop_members(left, own, 0, right, rows) != 0) {
                    uint32_t members = 0;
                    col = sigprop_column(left, own, right, rows, sp.peek(4), members);
                    sp.skip(popcount4(members));
                }
                for (uint32_t r = 0; r < rows; ++r)
                    if ((col >> r) & 1u) values[size_t(y0 + r) * vstride + x] = sigprop_value(0, p);
                fresh |= col << (4 * cx);
                left = own | (col << 1);
                own = right;
            }
            while (fresh) {
#if defined(__CUDA_ARCH__)
                const uint32_t i = static_cast<uint32_t>(__ffs(static_cast<int>(fresh)) - 1);
#else
                const uint32_t i = static_cast<uint32_t>(__builtin_ctz(fresh));
#endif
                fresh &= fresh - 1;
                values[size_t(y0 + (i & 3u)) * vstride + x0 + (i >> 2)] |= sp.get(1) << 31;
            }
        }
    }
}

/**
 * Whether MagRef (7.5) refines a sample at plane p: significant in the
 * cleanup (its magnitude a multiple of 2^(p + 1); SigProp's have bit p).
 */
J2KC_HT_INLINE bool magref_refines(uint32_t v, uint32_t p) { return v != 0 && ((v >> p) & 1u) == 0; }

/** A refined sample: the middle of the upper (bit 1) or lower half of its interval. */
J2KC_HT_INLINE uint32_t magref_value(uint32_t v, uint32_t bit, uint32_t p) { return v + (bit << (p + 1)) - (1u << p); }

/**
 * HT MagRef (7.5) at plane p over the refinement segment, read backward from
 * its end (zeros before its start): one bit per sample the cleanup found
 * significant, stripes of four rows, column by column.
 */
J2KC_HT_FN void decode_magref(uint32_t *values, size_t vstride, uint32_t width, uint32_t height, uint32_t p,
                              const uint8_t *dref, uint32_t lref)
{
    BackwardLsb mr;
    mr.data = dref;
    mr.lo = 0;
    mr.pos = static_cast<int64_t>(lref) - 1;
    mr.acc = 0;
    mr.bits = 0;
    mr.last = 0xFF;
    for (uint32_t y0 = 0; y0 < height; y0 += 4) {
        const uint32_t rows = height - y0 < 4 ? height - y0 : 4;
        for (uint32_t x = 0; x < width; ++x) {
            for (uint32_t r = 0; r < rows; ++r) {
                uint32_t &v = values[size_t(y0 + r) * vstride + x];
                if (magref_refines(v, p)) v = magref_value(v, mr.get(1), p);
            }
        }
    }
}

/** Passes of a block's codeword segments, all together. */
J2KC_HT_FN uint64_t ht_total_passes(const CodewordSegment *segments, size_t num_segments)
{
    uint64_t total = 0;
    J2KC_DEVICE_NO_UNROLL
    for (size_t k = 0; k < num_segments; ++k) total += segments[k].passes;
    return total;
}

/** Where the last HT set of a block lies among its bytes, and the plane of its cleanup pass. */
struct HtSet {
    uint64_t cleanup_offset;  ///< bytes of the segments before the cleanup's
    uint32_t lcup;            ///< the cleanup segment's length
    uint32_t lref;            ///< the refinement segment's length (0 without one)
    uint32_t pc;              ///< p_c, the cleanup's plane
    uint32_t z;               ///< passes of the set: 1 (cleanup), 2 (SigProp), 3 (and MagRef)
};

/**
 * The last HT set of a block with `total` > 0 passes (file comment: the
 * cleanup is pass 3 * P0): its segments and plane, or why they do not form
 * one (kHtNoPlane, kHtBadSegments).
 */
J2KC_HT_FN uint32_t locate_ht_set(const CodewordSegment *segments, size_t num_segments, uint64_t total, uint32_t planes,
                                  uint32_t zero_bitplanes, HtSet &set)
{
    const uint64_t cleanup = 3 * ((total - 1) / 3);
    set.z = static_cast<uint32_t>(total - cleanup);  // 1..3
    const uint64_t p0 = cleanup / 3;
    if (uint64_t{zero_bitplanes} + p0 + 1 > planes) return kHtNoPlane;
    set.pc = planes - 1 - zero_bitplanes - static_cast<uint32_t>(p0);

    // Find the segment that ends with the cleanup pass, and the one after it.
    uint64_t pass = 0, offset = 0;
    size_t k = 0;
    J2KC_DEVICE_NO_UNROLL
    for (; k < num_segments; ++k) {
        const uint64_t end = pass + segments[k].passes;
        if (end > cleanup) break;
        pass = end;
        offset += segments[k].length;
    }
    if (k == num_segments || pass + segments[k].passes != cleanup + 1) return kHtBadSegments;
    set.cleanup_offset = offset;
    set.lcup = segments[k].length;
    set.lref = 0;
    if (set.z > 1) {
        // One segment after the cleanup's holds the z - 1 refinement passes.
        size_t after = 0;
        J2KC_DEVICE_NO_UNROLL
        for (size_t j = k + 1; j < num_segments; ++j, ++after) set.lref += segments[j].length;
        if (after != 1) return kHtBadSegments;
    }
    return kHtOk;
}

/** The cleanup's constants for a block of `planes` planes whose cleanup codes plane pc. */
J2KC_HT_INLINE CleanupFrame cleanup_frame(uint32_t *values, size_t vstride, uint32_t width, uint32_t height,
                                          uint32_t planes, uint32_t pc)
{
    CleanupFrame f;
    f.values = values;
    f.vstride = vstride;
    f.width = width;
    f.height = height;
    f.p = pc;
    f.u_max = planes - pc + 1;
    f.mu_lim = planes - pc >= 31 ? 0xFFFFFFFFu : (1u << (planes - pc));
    return f;
}

/**
 * Refinement passes a set decodes after its cleanup, at the plane below the
 * cleanup's: 0, 1 (SigProp) or 2 (SigProp and MagRef); none at plane 0, as
 * Part-1 skips passes beyond the last plane.
 */
J2KC_HT_INLINE uint32_t refinement_passes(const HtSet &set) { return set.pc == 0 ? 0u : set.z - 1; }

/** The refinement passes (refinement_passes) of a set whose cleanup is decoded. */
J2KC_HT_FN void decode_refinement(const HtSet &set, uint32_t *values, size_t vstride, uint32_t width, uint32_t height,
                                  bool causal, const uint8_t *dref)
{
    const uint32_t passes = refinement_passes(set);
    if (passes > 0) decode_sigprop(values, vstride, width, height, set.pc - 1, causal, dref, set.lref);
    if (passes > 1) decode_magref(values, vstride, width, height, set.pc - 1, dref, set.lref);
}

/**
 * Decodes an HT code-block from its codeword segments (bytes back to back
 * from `data`, as Tier-2 delivers them: each HT cleanup pass ends a segment,
 * possibly with the placeholder passes before it; each set's SigProp and
 * MagRef share the next segment). planes = Mb + s (at most 30), P the zero
 * bit-planes. Writes every sample of the width x height block into
 * values[y * vstride + x] in sign and magnitude (file comment); `scratch`
 * holds ht_scratch_words(width) words. Only the last HT set is decoded.
 * Returns kHtOk or why the block is corrupt.
 */
J2KC_HT_BLOCK_FN uint32_t ht_decode_block(const uint8_t *data, const CodewordSegment *segments, size_t num_segments,
                                          uint32_t width, uint32_t height, uint32_t planes, uint32_t zero_bitplanes,
                                          bool causal, uint32_t *values, size_t vstride, uint32_t *scratch)
{
    const uint64_t total = ht_total_passes(segments, num_segments);
    if (total == 0 || width == 0 || height == 0) {
        for (uint32_t y = 0; y < height; ++y)
            for (uint32_t x = 0; x < width; ++x) values[size_t{y} * vstride + x] = 0;
        return kHtOk;
    }
    HtSet set;
    const uint32_t located = locate_ht_set(segments, num_segments, total, planes, zero_bitplanes, set);
    if (located != kHtOk) return located;
    const uint8_t *dcup = data + set.cleanup_offset;
    const CleanupFrame f = cleanup_frame(values, vstride, width, height, planes, set.pc);
    const uint32_t status = decode_cleanup(f, dcup, set.lcup, scratch);
    if (status != kHtOk) return status;
    decode_refinement(set, values, vstride, width, height, causal, dcup + set.lcup);
    return kHtOk;
}

}  // namespace ht
}  // namespace j2kc
