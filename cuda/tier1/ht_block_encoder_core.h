/**
 * @file ht_block_encoder_core.h
 * @brief The HT cleanup and refinement passes of Rec. ITU-T T.814 | ISO/IEC
 * 15444-15 (the HTJ2K block coder) as encoder, written once as J2KC_HD code: the
 * CPU driver (ht_encode_cpu.cpp) and the CUDA kernel (ht_encode.cu) run
 * these very functions, so both backends write the same bytes.
 *
 * A cleanup segment at bit-plane p codes every quantisation index by its
 * magnitude above p, mu = |q| >> p, in 2x2 quads visited in pairs along each
 * line pair:
 * - the VLC stream (written backward from the end of the segment) carries
 *   one CxtVLC codeword per quad (significance pattern rho and the EMB
 *   pattern of the exponents, ht_vlc_table.h) and the U-VLC codes of the
 *   unsigned residuals u_q = U_q - kappa_q of each quad pair;
 * - the MEL stream (forward, after MagSgn) codes, with an adaptive run-length
 *   coder, whether a quad in the all-zero context is significant, and in the
 *   first line pair whether both residuals of a pair exceed 2;
 * - the MagSgn stream (forward, from the start) carries the low bits of
 *   v = 2 (mu - 1) + sign of every significant sample, m = U_q - i_k bits.
 * The last two bytes hold Scup, the MEL plus VLC length, in 12 bits.
 *
 * The refinement segment that may follow refines a cleanup at plane p by
 * plane p - 1: the SigProp pass (forward from its start) codes, stripe of
 * four rows by stripe and four columns at a time, whether each insignificant
 * neighbour of a significant sample becomes significant, then the signs of
 * those that do; the MagRef pass (backward from the segment's end) codes
 * bit p - 1 of every sample the cleanup pass found significant.
 *
 * Exponents: E(mu) = bit length of 2 mu - 1 (1 for mu = 1), so that v < 2^E.
 * The bound U_q = max(E_max of the quad, kappa_q) with kappa_q = 1 in the first
 * line pair, and in later ones max(1, E_max of the samples above - 1) when
 * two or more samples of the quad are significant.
 *
 * Nothing here allocates, throws or prints; every buffer is bounded by the
 * capacities the caller gives, and a segment that would not fit reports a
 * status instead of writing past them.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/ht_block_coder_core.h"
#include "tier1/ht_vlc_table.h"
#include "tier1/tier1_contexts.h"

namespace j2kc {
namespace htenc {

/** Largest Scup (MEL + VLC bytes) the 12-bit field of the segment holds. */
constexpr uint32_t kMaxScup = 4079;

enum HtEncodeStatus : uint32_t {
    kHtEncodeOk = 0,
    kHtEncodeBadGeometry = 1,   ///< a side above 1024 or more than 4096 samples
    kHtEncodeBadBitplanes = 2,  ///< more than 30 planes, or a cleanup plane not below them
    kHtEncodeDataTooDeep = 3,   ///< an index needs more planes than the band has
    kHtEncodeOverflow = 4,      ///< the output or a scratch stream is too small
    kHtEncodeScupTooLarge = 5,  ///< MEL + VLC exceed the 12-bit Scup field
};

// ---------------------------------------------------------------------------
// Encoder lookup of the CxtVLC tables

/**
 * Encoder view of one CxtVLC table, indexed by (c_q << 8) | (rho << 4) | emb,
 * emb the samples whose exponent equals U_q (0 when u_q = 0). Entry:
 * codeword << 8 | length << 4 | e_k, length 0 where no codeword exists (the
 * all-zero context with rho = 0, coded by MEL alone).
 */
struct HtVlcEncodeTable {
    uint16_t entry[2][8 * 16 * 16];  ///< [0] first line pair, [1] other line pairs
};

/**
 * For a quad with u_q > 0 any row whose (e_k, e_1) agrees with emb codes it;
 * the one with most known exponents (set bits of e_k) saves most MagSgn
 * bits. With u_q = 0 the row without EMB information is the only choice.
 */
J2KC_HD constexpr void ht_add_vlc_rows(uint16_t *table, const HtVlcRow *rows, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        const HtVlcRow &r = rows[i];
        const uint16_t code = static_cast<uint16_t>((r.codeword << 8) | (r.length << 4) | r.e_k);
        const uint32_t base = (uint32_t{r.context} << 8) | (uint32_t{r.rho} << 4);
        if (!r.u_off) {
            if ((table[base] & 0xF0u) == 0) table[base] = code;
            continue;
        }
        for (uint32_t emb = 1; emb < 16; ++emb) {
            if ((emb & r.rho) != emb || (emb & r.e_k) != r.e_1) continue;
            const uint16_t old = table[base | emb];
            if ((old & 0xF0u) == 0 || ht::popcount4(r.e_k) > ht::popcount4(old & 0xFu)) table[base | emb] = code;
        }
    }
}

J2KC_HD constexpr HtVlcEncodeTable make_ht_vlc_encode_table()
{
    HtVlcEncodeTable t{};
    ht_add_vlc_rows(t.entry[0], kHtVlcFirstRow, kHtVlcFirstRowCount);
    ht_add_vlc_rows(t.entry[1], kHtVlcOtherRows, kHtVlcOtherRowsCount);
    return t;
}

/** Host copy. */
constexpr HtVlcEncodeTable kHtVlcEncodeTable = make_ht_vlc_encode_table();

#if defined(__CUDACC__)
static J2KC_DEVICE_CONST HtVlcEncodeTable kHtVlcEncodeTableDevice = make_ht_vlc_encode_table();
#endif

J2KC_HD uint32_t ht_vlc_lookup(uint32_t table, uint32_t context, uint32_t rho, uint32_t emb)
{
    const uint32_t index = (context << 8) | (rho << 4) | emb;
#if defined(__CUDA_ARCH__)
    return kHtVlcEncodeTableDevice.entry[table][index];
#else
    return kHtVlcEncodeTable.entry[table][index];
#endif
}

// ---------------------------------------------------------------------------
// The three byte streams

/** The low n bits of v, n up to 32. */
J2KC_HD uint32_t ht_low_bits(uint32_t v, uint32_t n) { return n >= 32 ? v : v & ((1u << n) - 1u); }

/**
 * Where a stream's bytes go: a bounded buffer that, once full, drops the rest
 * and remembers it did (the caller then reports kHtEncodeOverflow).
 */
struct HtByteSink {
    uint8_t *buf;
    uint32_t capacity;
    uint32_t pos;
    bool overflow;

    J2KC_HD void open(uint8_t *b, uint32_t cap)
    {
        buf = b;
        capacity = cap;
        pos = 0;
        overflow = false;
    }
    J2KC_HD void append(uint32_t byte)
    {
        if (pos < capacity)
            buf[pos++] = static_cast<uint8_t>(byte);
        else
            overflow = true;
    }
};

/**
 * MagSgn packer: bits fill each byte from its least significant bit; a byte
 * after 0xFF carries 7 bits (its top bit stays 0), so no 0xFF is followed by
 * a byte above 0x8F.
 */
struct HtMagSgnWriter : HtByteSink {
    uint64_t tmp;       ///< bits not yet in a byte, the next first
    uint32_t used;      ///< how many (below max_bits between calls)
    uint32_t max_bits;  ///< bits the next byte takes

    J2KC_HD void init(uint8_t *b, uint32_t cap)
    {
        open(b, cap);
        tmp = 0;
        used = 0;
        max_bits = 8;
    }

    J2KC_HD void store(uint32_t byte)
    {
        append(byte);
        max_bits = byte == 0xFFu ? 7u : 8u;
    }

    /** Writes the partial byte as it is (zero-padded). */
    J2KC_HD void emit_byte()
    {
        store(static_cast<uint32_t>(tmp));
        tmp = 0;
        used = 0;
    }

    /** Appends the low n bits of `bits`, n up to 32. */
    J2KC_HD void put(uint32_t bits, uint32_t n)
    {
        tmp |= uint64_t{ht_low_bits(bits, n)} << used;
        used += n;
        while (used >= max_bits) {
            const uint32_t width = max_bits;
            store(static_cast<uint32_t>(tmp) & ((1u << width) - 1u));
            tmp >>= width;
            used -= width;
        }
    }

    /** Ends a SigProp stream: the last byte zero-padded (decoders read zeros
     *  past its end), and a 0 byte after a last 0xFF, so that neither the
     *  MagRef bytes nor the next code-block's make a marker with it; never
     *  empty, since decoders take an empty refinement segment as malformed. */
    J2KC_HD void terminate_sigprop()
    {
        if (used > 0) emit_byte();
        if (pos == 0 || buf[pos - 1] == 0xFFu) append(0);
    }

    /** Pads the last byte with 1s, which a decoder reads past the end anyway,
     *  so a last byte that would be 0xFF is left out; a trailing 0xFF goes too. */
    J2KC_HD void terminate()
    {
        if (used > 0) {
            tmp |= uint64_t{(1u << (max_bits - used)) - 1u} << used;
            if (tmp != 0xFFu) append(static_cast<uint32_t>(tmp));
        } else if (max_bits == 7 && pos > 0) {
            --pos;
        }
    }
};

/**
 * MEL coder: a run of 2^E[k] "no event" symbols is one 1 bit (k rises); an
 * event is a 0 bit and the E[k]-bit length of the shorter run before it, most
 * significant bit first (k falls). Bits fill bytes from the top, and a byte
 * after 0xFF carries 7.
 */
struct HtMelEncoder : HtByteSink {
    uint32_t tmp;
    uint32_t remaining;
    uint32_t run;
    uint32_t k;

    J2KC_HD void init(uint8_t *b, uint32_t cap)
    {
        open(b, cap);
        tmp = 0;
        remaining = 8;
        run = 0;
        k = 0;
    }

    J2KC_HD void emit_bit(uint32_t bit)
    {
        tmp = (tmp << 1) | bit;
        if (--remaining == 0) {
            append(tmp);
            remaining = tmp == 0xFFu ? 7u : 8u;
            tmp = 0;
        }
    }

    /** As n calls of encode(false): only the runs it completes cost a step. */
    J2KC_HD void encode_idle(uint32_t n)
    {
        for (;;) {
            const uint32_t need = (1u << ht::mel_exponent(k)) - run;
            if (n < need) {
                run += n;
                return;
            }
            n -= need;
            emit_bit(1);
            run = 0;
            if (k < 12) ++k;
        }
    }

    J2KC_HD void encode(bool event)
    {
        if (!event) {
            if (++run >= (1u << ht::mel_exponent(k))) {
                emit_bit(1);
                run = 0;
                if (k < 12) ++k;
            }
            return;
        }
        emit_bit(0);
        for (uint32_t t = ht::mel_exponent(k); t > 0; --t) emit_bit((run >> (t - 1)) & 1u);
        run = 0;
        if (k > 0) --k;
    }
};

/**
 * VLC writer, backward from the end of the segment: bits fill each byte from
 * its least significant bit, and byte k is the k-th from the end. A byte that
 * follows (in writing order) one above 0x8F gives up its top bit when its
 * other seven are all ones, so the decoder, reading backward, never sees a
 * marker-like pair. Byte 0 is where Scup goes: its low nibble is reserved
 * (taken as 0xF) and the last byte of the segment (the high Scup bits) counts
 * as one above 0x8F.
 */
struct HtVlcWriter : HtByteSink {
    uint64_t tmp;        ///< bits not yet in a byte, the next first
    uint32_t used;       ///< how many (below 8 between calls)
    bool last_above_8f;  ///< the byte written last is above 0x8F

    J2KC_HD void init(uint8_t *b, uint32_t cap)
    {
        buf = b;
        capacity = cap;
        overflow = cap == 0;
        if (!overflow) buf[0] = 0xFF;
        pos = 1;
        tmp = 0xF;
        used = 4;
        last_above_8f = true;
    }

    /** The MagRef stream: the same backward packing, from the segment's very
     *  end, as if a byte above 0x8F followed it. */
    J2KC_HD void init_magref(uint8_t *b, uint32_t cap)
    {
        open(b, cap);
        tmp = 0;
        used = 0;
        last_above_8f = true;
    }

    /** Writes the partial last byte of a MagRef stream, zero-padded. */
    J2KC_HD void flush()
    {
        if (used == 0) return;
        append(static_cast<uint32_t>(tmp));
        tmp = 0;
        used = 0;
    }

    J2KC_HD void store(uint32_t byte)
    {
        append(byte);
        last_above_8f = byte > 0x8Fu;
    }

    /** Appends the low n bits of `bits`, n up to 24. */
    J2KC_HD void put(uint32_t bits, uint32_t n)
    {
        tmp |= uint64_t{bits & ((1u << n) - 1u)} << used;
        used += n;
        for (;;) {
            if (last_above_8f && used >= 7 && (tmp & 0x7Fu) == 0x7Fu) {
                store(0x7Fu);  // seven ones after a byte above 0x8F: the top bit is stuffed
                tmp >>= 7;
                used -= 7;
                continue;
            }
            if (used < 8) return;
            store(static_cast<uint32_t>(tmp) & 0xFFu);
            tmp >>= 8;
            used -= 8;
        }
    }
};

/**
 * Ends MEL and VLC where they meet: a pending MEL run is closed with a 1
 * (the decoder stops before it uses it), and the two partial last bytes share
 * one byte when their bits do not collide and it is not 0xFF.
 */
J2KC_HD void ht_terminate_mel_vlc(HtMelEncoder &mel, HtVlcWriter &vlc)
{
    if (mel.run > 0) mel.emit_bit(1);
    const uint32_t mel_byte = (mel.tmp << mel.remaining) & 0xFFu;
    const uint32_t mel_mask = (0xFFu << mel.remaining) & 0xFFu;
    const uint32_t vlc_mask = 0xFFu >> (8u - vlc.used);
    if ((mel_mask | vlc_mask) == 0) return;
    const uint32_t vlc_byte = static_cast<uint32_t>(vlc.tmp);
    const uint32_t fused = mel_byte | vlc_byte;
    const bool shareable =
        ((fused ^ mel_byte) & mel_mask) == 0 && ((fused ^ vlc_byte) & vlc_mask) == 0 && fused != 0xFFu && vlc.pos > 1;
    mel.append(shareable ? fused : mel_byte);
    if (shareable) return;
    vlc.append(vlc_byte);
}

/** U-VLC code of u: prefix, suffix and extension, each LSB first. */
struct HtUvlcCode {
    uint32_t prefix, prefix_len, suffix, suffix_len, ext, ext_len;
};

J2KC_HD HtUvlcCode ht_uvlc_code(uint32_t u)
{
    if (u == 0) return {0, 0, 0, 0, 0, 0};
    if (u == 1) return {1, 1, 0, 0, 0, 0};
    if (u == 2) return {2, 2, 0, 0, 0, 0};
    if (u <= 4) return {4, 3, u - 3, 1, 0, 0};
    if (u <= 32) return {0, 3, u - 5, 5, 0, 0};
    return {0, 3, 28 + (u - 33) % 4, 5, (u - 33) / 4, 4};
}

// ---------------------------------------------------------------------------
// The cleanup pass

/** One quad: significance pattern, exponents and MagSgn values of its samples
 *  (sample i: column x + (i >> 1), row y + (i & 1)). */
struct HtQuad {
    uint32_t rho;
    uint32_t e_max;
    uint32_t e[4];
    uint32_t v[4];
};

/** Scratch a block needs beside its output: MEL and VLC streams, and the
 *  exponents and significance of the line above (two rows of width / 2 + 2). */
struct HtEncodeScratch {
    uint8_t *mel;
    uint32_t mel_capacity;
    uint8_t *vlc;
    uint32_t vlc_capacity;
    uint8_t *lines;  ///< ht_line_scratch_bytes(width)
};

struct HtEncodeResult {
    uint32_t bytes = 0;           ///< cleanup segment length (0: no significant sample at p)
    uint64_t distortion = 0;      ///< decrease of squared error, 1/4 index^2 units (tier1.h)
    uint32_t data_bitplanes = 0;  ///< planes the largest magnitude needs
};

J2KC_HD uint32_t ht_quads_across(uint32_t width) { return (width + 1) / 2; }
J2KC_HD uint32_t ht_line_scratch_bytes(uint32_t width) { return 4 * (ht_quads_across(width) + 2); }

/** Bytes MEL can take: at most 6 bits for each quad and quad pair, 7 in a byte. */
J2KC_HD uint32_t ht_mel_bound(uint32_t width, uint32_t height)
{
    const uint32_t quads = ht_quads_across(width) * ((height + 1) / 2);
    return (quads * 9 + 6) / 7 + 2;
}

/** Bytes VLC can take: a 7-bit codeword and 12 U-VLC bits a quad, 7 in a byte. */
J2KC_HD uint32_t ht_vlc_bound(uint32_t width, uint32_t height)
{
    const uint32_t quads = ht_quads_across(width) * ((height + 1) / 2);
    return (quads * 20 + 4 + 6) / 7 + 2;
}

/** Bytes the whole segment can take for magnitudes below 2^planes. */
J2KC_HD uint32_t ht_segment_bound(uint32_t width, uint32_t height, uint32_t planes)
{
    const uint32_t magsgn = (width * height * (planes + 1) + 6) / 7 + 1;
    return magsgn + ht_mel_bound(width, height) + ht_vlc_bound(width, height);
}

/** Reads the quad at (x, y): samples outside the block are insignificant.
 *  Adds the gains of its samples, shifted right by `shift`
 *  (t1_distortion_shift), to `distortion`. */
J2KC_HD void ht_load_quad(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height, uint32_t x, uint32_t y,
                          uint32_t p, int shift, HtQuad &q, uint64_t &distortion, uint32_t &or_magnitude)
{
    q.rho = 0;
    q.e_max = 0;
    for (uint32_t i = 0; i < 4; ++i) {
        q.e[i] = 0;
        q.v[i] = 0;
        const uint32_t sx = x + (i >> 1), sy = y + (i & 1);
        if (sx >= width || sy >= height) continue;
        const int32_t c = coeffs[size_t{sy} * stride + sx];
        const uint32_t magnitude = c < 0 ? 0u - static_cast<uint32_t>(c) : static_cast<uint32_t>(c);
        or_magnitude |= magnitude;
        const uint32_t mu = magnitude >> p;
        if (mu == 0) continue;
        const uint32_t e = ht::bit_length(2 * mu - 1);
        q.rho |= 1u << i;
        q.e[i] = e;
        q.v[i] = 2 * (mu - 1) + (c < 0 ? 1u : 0u);
        if (e > q.e_max) q.e_max = e;
        // Mid-point reconstruction of the bits above p: error (2 l - 2^p) / 2.
        const uint64_t low = magnitude & ((1u << p) - 1u);
        const uint64_t before = 4 * uint64_t{magnitude} * magnitude;
        const uint64_t half =
            (uint64_t{1} << p) > 2 * low ? (uint64_t{1} << p) - 2 * low : 2 * low - (uint64_t{1} << p);
        const uint64_t gain = (before - half * half) >> shift;
        distortion = distortion > ~uint64_t{0} - gain ? ~uint64_t{0} : distortion + gain;
    }
}

/** Context of a quad of the first line pair from the pattern of the quad on its left. */
J2KC_HD uint32_t ht_first_line_context(uint32_t left_rho) { return (left_rho >> 1) | (left_rho & 1u); }

/** Context of a quad of a later line pair: significance above it on its left
 *  and right halves (sig_above at its two positions) and of the quad on its left. */
J2KC_HD uint32_t ht_later_line_context(uint32_t sig_above_left, uint32_t left, uint32_t sig_above_right)
{
    return sig_above_left | (left << 1) | (sig_above_right << 2);
}

/** Whether the right column of a quad holds a significant sample. */
J2KC_HD uint32_t ht_right_column_significant(uint32_t rho) { return ((rho >> 2) | (rho >> 3)) & 1u; }

/** kappa_q of a quad of a later line pair, above_e the largest exponent above it. */
J2KC_HD uint32_t ht_later_line_kappa(uint32_t rho, uint32_t above_e)
{
    return (rho & (rho - 1)) && above_e > 2 ? above_e - 1 : 1;
}

/** What a quad's CxtVLC codeword fixes: the bound U_q, u_q and the table entry. */
struct HtQuadCode {
    uint32_t u_bound, u, entry;
};

/** A quad's MagSgn bits: m = U_q - i_k of each significant sample, in sample order. */
template <class MagSgn>
J2KC_HD void ht_put_magsgn(const HtQuad &q, const HtQuadCode &code, MagSgn &ms)
{
    for (uint32_t i = 0; i < 4; ++i) {
        if (!(q.rho & (1u << i))) continue;
        const uint32_t m = code.u_bound - ((code.entry >> i) & 1u);
        ms.put(ht_low_bits(q.v[i], m), m);
    }
}

/** Codes one quad's CxtVLC codeword, its MEL symbol and its MagSgn bits
 *  (writers or anything with their put / encode). */
template <class Vlc, class Mel, class MagSgn>
J2KC_HD HtQuadCode ht_code_quad(const HtQuad &q, uint32_t table, uint32_t context, uint32_t kappa, Vlc &vlc, Mel &mel,
                                MagSgn &ms)
{
    const uint32_t u_bound = q.e_max > kappa ? q.e_max : kappa;
    const uint32_t u = u_bound - kappa;
    uint32_t emb = 0;
    // The test and the shift are two statements: GCC 12 with both UBSan's
    // bounds and shift checks miscompiles them as one expression (wrong
    // codewords, and a false out-of-bounds report).
    if (u > 0)
        for (uint32_t i = 0; i < 4; ++i) {
            const uint32_t at_bound = q.e[i] == u_bound ? 1u : 0u;
            emb |= at_bound << i;
        }
    const HtQuadCode code{u_bound, u, ht_vlc_lookup(table, context, q.rho, emb)};
    vlc.put(code.entry >> 8, (code.entry >> 4) & 0x7u);
    if (context == 0) mel.encode(q.rho != 0);
    ht_put_magsgn(q, code, ms);
    return code;
}

/** What the line pair below needs of a coded quad j: exponents and
 *  significance of its bottom samples, at positions j (left) and j + 1. */
J2KC_HD void ht_note_bottom(const HtQuad &q, uint32_t j, uint8_t *e_line, uint8_t *sig_line)
{
    if (q.e[1] > e_line[j]) e_line[j] = static_cast<uint8_t>(q.e[1]);
    e_line[j + 1] = static_cast<uint8_t>(q.e[3]);
    sig_line[j] |= static_cast<uint8_t>((q.rho >> 1) & 1u);
    sig_line[j + 1] = static_cast<uint8_t>((q.rho >> 3) & 1u);
}

/** U-VLC codes of a quad pair: both prefixes, both suffixes, both extensions. */
template <class Vlc>
J2KC_HD void ht_code_pair_uvlc(uint32_t u0, uint32_t u1, Vlc &vlc)
{
    const HtUvlcCode a = ht_uvlc_code(u0), b = ht_uvlc_code(u1);
    vlc.put(a.prefix, a.prefix_len);
    vlc.put(b.prefix, b.prefix_len);
    vlc.put(a.suffix, a.suffix_len);
    vlc.put(b.suffix, b.suffix_len);
    vlc.put(a.ext, a.ext_len);
    vlc.put(b.ext, b.ext_len);
}

/** U-VLC codes of a quad pair in the first line pair, where MEL has said
 *  whether both residuals exceed 2 (then both are sent less 2). */
template <class Vlc>
J2KC_HD void ht_code_first_pair_uvlc(uint32_t u0, uint32_t u1, Vlc &vlc)
{
    if (u0 > 2 && u1 > 2) {
        ht_code_pair_uvlc(u0 - 2, u1 - 2, vlc);
    } else if (u0 > 2 && u1 > 0) {
        // u1 is 1 or 2: one bit after u0's prefix says which.
        const HtUvlcCode a = ht_uvlc_code(u0);
        vlc.put(a.prefix, a.prefix_len);
        vlc.put(u1 - 1, 1);
        vlc.put(a.suffix, a.suffix_len);
        vlc.put(a.ext, a.ext_len);
    } else {
        ht_code_pair_uvlc(u0, u1, vlc);
    }
}

/**
 * Codes the HT cleanup segment of a code-block at bit-plane p into out
 * (capacity bytes): MagSgn, MEL, VLC, Scup. coeffs are quantisation indices
 * in two's complement, |q| < 2^num_bitplanes, row r at coeffs + r * stride.
 * A block without a significant sample at p writes nothing (bytes = 0).
 */
J2KC_HD uint32_t ht_encode_cleanup(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                                   uint32_t num_bitplanes, uint32_t p, uint8_t *out, uint32_t capacity,
                                   const HtEncodeScratch &scratch, HtEncodeResult &result)
{
    result = HtEncodeResult{};
    if (width > ht::kMaxSide || height > ht::kMaxSide || width * height > ht::kMaxSamples) return kHtEncodeBadGeometry;
    if (num_bitplanes > ht::kMaxBitplanes || (num_bitplanes > 0 && p >= num_bitplanes)) return kHtEncodeBadBitplanes;
    if (width == 0 || height == 0) return kHtEncodeOk;

    HtMagSgnWriter ms;
    ms.init(out, capacity);
    HtMelEncoder mel;
    mel.init(scratch.mel, scratch.mel_capacity);
    HtVlcWriter vlc;
    vlc.init(scratch.vlc, scratch.vlc_capacity);

    const uint32_t quads = ht_quads_across(width);
    uint8_t *e_above = scratch.lines;
    uint8_t *sig_above = e_above + (quads + 2);
    uint8_t *e_line = sig_above + (quads + 2);
    uint8_t *sig_line = e_line + (quads + 2);
    for (uint32_t j = 0; j < quads + 2; ++j) e_line[j] = sig_line[j] = 0;

    const int shift = t1_distortion_shift(num_bitplanes);
    uint64_t distortion = 0;
    uint32_t or_magnitude = 0;
    bool any = false;

    // First line pair: contexts from the quad on the left only, kappa = 1.
    uint32_t left_rho = 0;
    for (uint32_t j = 0; j < quads; j += 2) {
        HtQuad q0, q1;
        ht_load_quad(coeffs, stride, width, height, 2 * j, 0, p, shift, q0, distortion, or_magnitude);
        const uint32_t c0 = j == 0 ? 0u : ht_first_line_context(left_rho);
        const uint32_t u0 = ht_code_quad(q0, 0, c0, 1, vlc, mel, ms).u;
        ht_note_bottom(q0, j, e_line, sig_line);
        any |= q0.rho != 0;
        uint32_t u1 = 0;
        left_rho = q0.rho;
        if (j + 1 < quads) {
            ht_load_quad(coeffs, stride, width, height, 2 * j + 2, 0, p, shift, q1, distortion, or_magnitude);
            u1 = ht_code_quad(q1, 0, ht_first_line_context(q0.rho), 1, vlc, mel, ms).u;
            ht_note_bottom(q1, j + 1, e_line, sig_line);
            any |= q1.rho != 0;
            left_rho = q1.rho;
        }
        if (u0 > 0 && u1 > 0) mel.encode((u0 < u1 ? u0 : u1) > 2);
        ht_code_first_pair_uvlc(u0, u1, vlc);
    }

    // Later line pairs: contexts from the line above and the quad on the left.
    for (uint32_t y = 2; y < height; y += 2) {
        uint8_t *t = e_above;
        e_above = e_line;
        e_line = t;
        t = sig_above;
        sig_above = sig_line;
        sig_line = t;
        for (uint32_t j = 0; j < quads + 2; ++j) e_line[j] = sig_line[j] = 0;

        uint32_t left = 0;  // significance of the right column of the quad on the left
        for (uint32_t j = 0; j < quads; j += 2) {
            uint32_t u[2] = {0, 0};
            for (uint32_t k = 0; k < 2 && j + k < quads; ++k) {
                const uint32_t jj = j + k;
                HtQuad q;
                ht_load_quad(coeffs, stride, width, height, 2 * jj, y, p, shift, q, distortion, or_magnitude);
                const uint32_t context = ht_later_line_context(sig_above[jj], left, sig_above[jj + 1]);
                const uint32_t above_e = e_above[jj] > e_above[jj + 1] ? e_above[jj] : e_above[jj + 1];
                u[k] = ht_code_quad(q, 1, context, ht_later_line_kappa(q.rho, above_e), vlc, mel, ms).u;
                ht_note_bottom(q, jj, e_line, sig_line);
                any |= q.rho != 0;
                left = ht_right_column_significant(q.rho);
            }
            ht_code_pair_uvlc(u[0], u[1], vlc);
        }
    }

    const uint32_t planes = ht::bit_length(or_magnitude);
    result.data_bitplanes = planes;
    if (planes > num_bitplanes) return kHtEncodeDataTooDeep;
    if (!any) return kHtEncodeOk;

    ht_terminate_mel_vlc(mel, vlc);
    ms.terminate();
    if (ms.overflow || mel.overflow || vlc.overflow) return kHtEncodeOverflow;
    const uint32_t scup = mel.pos + vlc.pos;
    if (scup > kMaxScup) return kHtEncodeScupTooLarge;
    const uint32_t length = ms.pos + scup;
    if (length > capacity) return kHtEncodeOverflow;
    for (uint32_t i = 0; i < mel.pos; ++i) out[ms.pos + i] = mel.buf[i];
    for (uint32_t i = 0; i < vlc.pos; ++i) out[length - 1 - i] = vlc.buf[i];
    out[length - 1] = static_cast<uint8_t>(scup >> 4);
    out[length - 2] = static_cast<uint8_t>((out[length - 2] & 0xF0u) | (scup & 0xFu));
    result.bytes = length;
    result.distortion = distortion;
    return kHtEncodeOk;
}

// ---------------------------------------------------------------------------
// The refinement passes

/** Bytes SigProp can take: a significance and a sign bit a sample, 7 in a byte. */
J2KC_HD uint32_t ht_sigprop_bound(uint32_t width, uint32_t height) { return (width * height * 2 + 6) / 7 + 2; }
/** Bytes MagRef can take: a bit a sample, 7 in a byte. */
J2KC_HD uint32_t ht_magref_bound(uint32_t width, uint32_t height) { return (width * height + 6) / 7 + 2; }

struct HtRefinementResult {
    uint32_t sigprop_bytes = 0;
    uint32_t magref_bytes = 0;
    uint64_t sigprop_distortion = 0;  ///< tier1.h units
    uint64_t magref_distortion = 0;
};

J2KC_HD uint32_t ht_magnitude(const int32_t *coeffs, size_t stride, uint32_t x, uint32_t y)
{
    const int32_t c = coeffs[size_t{y} * stride + x];
    return c < 0 ? 0u - static_cast<uint32_t>(c) : static_cast<uint32_t>(c);
}

/** Words of a row of the significance map: a bit a sample, column x at bit x % 32 of word x / 32, the
 *  bits past the block's width zero. Bit rows let a stripe group read its neighbourhood in a few words. */
J2KC_HD uint32_t ht_sig_words(uint32_t width) { return (width + 31) / 32; }

/** Bytes of a width x height block's significance map. */
J2KC_HD size_t ht_sig_map_bytes(uint32_t width, uint32_t height) { return size_t{4} * ht_sig_words(width) * height; }

/** Whether the cleanup at plane p finds the sample at (x, y) significant. */
J2KC_HD bool ht_significant(const int32_t *coeffs, size_t stride, uint32_t x, uint32_t y, uint32_t p)
{
    return (ht_magnitude(coeffs, stride, x, y) >> p) != 0;
}

/** Word w of row y of the significance map after a cleanup at plane p (columns 32 w to 32 w + 31). */
J2KC_HD uint32_t ht_significance_word(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t w, uint32_t y,
                                      uint32_t p)
{
    const uint32_t x0 = 32 * w, n = width - x0 < 32 ? width - x0 : 32u;
    uint32_t word = 0;
    for (uint32_t i = 0; i < n; ++i) word |= uint32_t{ht_significant(coeffs, stride, x0 + i, y, p)} << i;
    return word;
}

/** Columns x0 - 1 to x0 + 4 of row y of the map (x0 a multiple of 4), bit i: column x0 - 1 + i, zero
 *  outside the block. */
J2KC_HD uint32_t ht_sig_window(const uint32_t *sig, uint32_t words, uint32_t x0, uint32_t y)
{
    const uint32_t *row = sig + size_t{y} * words;
    const uint32_t w = x0 >> 5, s = x0 & 31u;
    uint64_t pair = row[w];
    if (s > 27 && w + 1 < words) pair |= uint64_t{row[w + 1]} << 32;
    const uint32_t left = s > 0 ? (row[w] >> (s - 1)) & 1u : w > 0 ? row[w - 1] >> 31 : 0u;
    return left | static_cast<uint32_t>((pair >> s) & 0x1Fu) << 1;
}

/**
 * The SigProp members of the stripe group at (x0, y0) (cols x rows samples)
 * when it starts, bit c * 4 + r: insignificant samples with a neighbour that
 * is significant as the decoder knows it then, which is what `sig` holds at
 * that moment. Samples of earlier groups carry their SigProp outcome there;
 * the others (this group, the groups after it, the stripes below) SigProp
 * has not reached, so they still carry the cleanup's significance, as the
 * decoder sees them. The group and its border, 6 x 6 samples, are read as
 * six row windows of the map and the 3 x 3 neighbourhoods taken by shifts.
 */
J2KC_HD uint32_t ht_sigprop_members(uint32_t width, uint32_t height, uint32_t x0, uint32_t y0, uint32_t cols,
                                    uint32_t rows, const uint32_t *sig)
{
    const uint32_t words = ht_sig_words(width);
    uint32_t row[6];  // bit i: column x0 - 1 + i of row y0 - 1 + k
    for (uint32_t k = 0; k < 6; ++k) {
        const uint32_t y = y0 + k - 1;  // wraps above the block: fails the bound
        row[k] = y < height ? ht_sig_window(sig, words, x0, y) : 0u;
    }
    uint32_t members = 0;
    for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t around = row[r] | row[r + 1] | row[r + 2];
        const uint32_t near = (around | around >> 1 | around >> 2) & ~(row[r + 1] >> 1);
        for (uint32_t c = 0; c < cols; ++c)
            if ((near >> c) & 1u) members |= 1u << (c * 4 + r);
    }
    return members;
}

/** The index of the lowest set bit of v != 0. */
J2KC_HD uint32_t ht_lowest_bit(uint32_t v) { return ht::bit_length(v & (0u - v)) - 1; }

/** The samples of a cols x rows stripe group that join SigProp when sample i (bit c * 4 + r) becomes
 *  significant and are coded after it: the one below, and the next column's three. */
J2KC_HD uint32_t ht_sigprop_later_neighbours(uint32_t i, uint32_t cols, uint32_t rows)
{
    const uint32_t c = i >> 2, r = i & 3u;
    uint32_t near = r + 1 < rows ? 1u << (i + 1) : 0u;
    if (c + 1 < cols) near |= (((0x7u << r) >> 1) & ((1u << rows) - 1u)) << (4 * (c + 1));
    return near;
}

/** What SigProp at plane p - 1 needs of a stripe group's samples, bit c * 4 + r each. */
struct HtGroupSamples {
    uint32_t significant = 0;  ///< significant after the cleanup at plane p
    uint32_t one = 0;          ///< bit p - 1 set
    uint32_t negative = 0;
};

/** The cols x rows group at (x0, y0) read at once, so that coding it waits on no load. */
J2KC_HD HtGroupSamples ht_group_samples(const int32_t *coeffs, size_t stride, uint32_t x0, uint32_t y0, uint32_t cols,
                                        uint32_t rows, uint32_t p)
{
    HtGroupSamples g;
    for (uint32_t i = 0; i < 16; ++i) {
        const uint32_t c = i >> 2, r = i & 3u;
        if (c >= cols || r >= rows) continue;
        const int32_t v = coeffs[size_t{y0 + r} * stride + x0 + c];
        const uint32_t mag = v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v);
        g.significant |= uint32_t{(mag >> p) != 0} << i;
        g.one |= ((mag >> (p - 1)) & 1u) << i;
        g.negative |= uint32_t{v < 0} << i;
    }
    return g;
}

/** The samples of the stripe group at (x0, y0) of a width x height block: up to 4 x 4. */
J2KC_HD uint32_t ht_group_cols(uint32_t width, uint32_t x0) { return width - x0 < 4 ? width - x0 : 4u; }
J2KC_HD uint32_t ht_group_rows(uint32_t height, uint32_t y0) { return height - y0 < 4 ? height - y0 : 4u; }

/**
 * The bits of one stripe group of the SigProp pass (ht_sigprop_group) from
 * its samples `g`, read beforehand: every member's bit, then the signs of
 * those that became significant, from the least significant bit of `bits`,
 * their number returned (at most 32). Marks the group's new significant
 * samples in `sig` and returns them in `fresh` (bit c * 4 + r).
 */
J2KC_HD uint32_t ht_sigprop_group_bits(const HtGroupSamples &g, uint32_t width, uint32_t height, uint32_t x0,
                                       uint32_t y0, uint32_t *sig, uint32_t &bits, uint32_t &fresh)
{
    const uint32_t rows = ht_group_rows(height, y0), cols = ht_group_cols(width, x0);
    uint32_t member = ht_sigprop_members(width, height, x0, y0, cols, rows, sig);  // bit c * 4 + r
    uint32_t n = 0;
    bits = 0;
    fresh = 0;
    // Members in coding order (bit c * 4 + r ascending); a new one is always a later sample.
    for (uint32_t rest = member; rest;) {
        const uint32_t i = ht_lowest_bit(rest);
        const uint32_t bit = (g.one >> i) & 1u;
        bits |= bit << n++;
        if (bit) {
            fresh |= 1u << i;
            // The later samples next to it join unless the cleanup found them significant
            // (SigProp has not reached them, so that is what the decoder knows of them).
            member |= ht_sigprop_later_neighbours(i, cols, rows) & ~g.significant;
        }
        rest = member & ~((2u << i) - 1u);
    }
    for (uint32_t rest = fresh; rest; rest &= rest - 1) bits |= ((g.negative >> ht_lowest_bit(rest)) & 1u) << n++;
    const uint32_t words = ht_sig_words(width);
    for (uint32_t r = 0; r < rows; ++r) {
        uint32_t row = 0;
        for (uint32_t c = 0; c < cols; ++c) row |= ((fresh >> (c * 4 + r)) & 1u) << c;
        if (row) sig[size_t{y0 + r} * words + (x0 >> 5)] |= row << (x0 & 31u);
    }
    return n;
}

/** The distortion terms of the samples `fresh` (bit c * 4 + r) of the stripe group at (x0, y0) that
 *  SigProp at plane q made significant. */
J2KC_HD int64_t ht_sigprop_fresh_distortion(const int32_t *coeffs, size_t stride, uint32_t x0, uint32_t y0, uint32_t q,
                                            uint32_t fresh)
{
    int64_t sum = 0;
    for (uint32_t rest = fresh; rest; rest &= rest - 1) {
        const uint32_t i = ht_lowest_bit(rest);
        sum += t1_dist_significance(ht_magnitude(coeffs, stride, x0 + (i >> 2), y0 + (i & 3u)), static_cast<int>(q));
    }
    return sum;
}

/**
 * One stripe group of the SigProp pass at plane p - 1 after a cleanup at
 * plane p >= 1, the group of up to 4 x 4 samples at (x0, y0), with `sig`
 * as the decoder knows it when the group starts (ht_sigprop_members): its
 * bits and their number as ht_sigprop_group_bits gives them. Marks the
 * group's new significant samples in `sig` and adds their distortion terms
 * to `sum`.
 */
J2KC_HD uint32_t ht_sigprop_group(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height, uint32_t x0,
                                  uint32_t y0, uint32_t p, uint32_t *sig, uint32_t &bits, int64_t &sum)
{
    const HtGroupSamples g =
        ht_group_samples(coeffs, stride, x0, y0, ht_group_cols(width, x0), ht_group_rows(height, y0), p);
    uint32_t fresh;
    const uint32_t n = ht_sigprop_group_bits(g, width, height, x0, y0, sig, bits, fresh);
    sum += ht_sigprop_fresh_distortion(coeffs, stride, x0, y0, p - 1, fresh);
    return n;
}

/** Ends the SigProp stream `sp` (its distortion terms summed in `sum`) into `result`. */
J2KC_HD uint32_t ht_finish_sigprop(HtMagSgnWriter &sp, int64_t sum, uint32_t num_bitplanes, uint32_t p,
                                   HtRefinementResult &result)
{
    sp.terminate_sigprop();
    if (sp.overflow) return kHtEncodeOverflow;
    result.sigprop_bytes = sp.pos;
    result.sigprop_distortion = t1_pass_distortion(sum, static_cast<int>(p - 1), t1_distortion_shift(num_bitplanes));
    return kHtEncodeOk;
}

/**
 * The SigProp pass at plane p - 1 after a cleanup at plane p >= 1: bytes
 * forward into `out`, `sig` the cleanup's significance map (ht_significance_word),
 * which it updates with the pass's outcomes. Returns its byte count and
 * distortion decrease, or kHtEncodeOverflow.
 */
J2KC_HD uint32_t ht_encode_sigprop(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                                   uint32_t num_bitplanes, uint32_t p, uint8_t *out, uint32_t capacity, uint32_t *sig,
                                   HtRefinementResult &result)
{
    HtMagSgnWriter sp;
    sp.init(out, capacity);
    int64_t sum = 0;
    for (uint32_t y0 = 0; y0 < height; y0 += 4)
        for (uint32_t x0 = 0; x0 < width; x0 += 4) {
            uint32_t bits;
            const uint32_t n = ht_sigprop_group(coeffs, stride, width, height, x0, y0, p, sig, bits, sum);
            sp.put(bits, n);
        }
    return ht_finish_sigprop(sp, sum, num_bitplanes, p, result);
}

/** MagRef's view of the sample at (x, y) after a cleanup at plane p >= 1:
 *  whether it refines it (significant there), its bit at p - 1 in `bit` and
 *  its distortion term (t1_dist_refinement) added to `sum`. */
J2KC_HD bool ht_magref_sample(const int32_t *coeffs, size_t stride, uint32_t x, uint32_t y, uint32_t p, uint32_t &bit,
                              int64_t &sum)
{
    const uint32_t mag = ht_magnitude(coeffs, stride, x, y);
    if ((mag >> p) == 0) return false;
    bit = (mag >> (p - 1)) & 1u;
    sum += t1_dist_refinement(mag, static_cast<int>(p - 1));
    return true;
}

/** Ends the MagRef stream `mr` (HtVlcWriter::init_magref; its distortion terms summed in `sum`) into `result`. */
J2KC_HD uint32_t ht_finish_magref(HtVlcWriter &mr, int64_t sum, uint32_t num_bitplanes, uint32_t p,
                                  HtRefinementResult &result)
{
    mr.flush();
    if (mr.overflow) return kHtEncodeOverflow;
    result.magref_bytes = mr.pos;
    result.magref_distortion = t1_pass_distortion(sum, static_cast<int>(p - 1), t1_distortion_shift(num_bitplanes));
    return kHtEncodeOk;
}

/**
 * Codes the SigProp and MagRef passes at plane p - 1 after a cleanup at
 * plane p >= 1: SigProp bytes forward into `out`, MagRef bytes into
 * `magref` (k-th from the end), `sig` a ht_sig_map_bytes map of
 * significance. The refinement segment is out[0, sigprop_bytes) followed by
 * the MagRef bytes in reverse; the caller copies them.
 */
J2KC_HD uint32_t ht_encode_refinement(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                                      uint32_t num_bitplanes, uint32_t p, uint8_t *out, uint32_t capacity,
                                      uint8_t *magref, uint32_t magref_capacity, uint32_t *sig,
                                      HtRefinementResult &result)
{
    result = HtRefinementResult{};
    const uint32_t words = ht_sig_words(width);
    for (uint32_t y = 0; y < height; ++y)
        for (uint32_t w = 0; w < words; ++w)
            sig[size_t{y} * words + w] = ht_significance_word(coeffs, stride, width, w, y, p);
    const uint32_t status =
        ht_encode_sigprop(coeffs, stride, width, height, num_bitplanes, p, out, capacity, sig, result);
    if (status != kHtEncodeOk) return status;

    HtVlcWriter mr;
    mr.init_magref(magref, magref_capacity);
    int64_t mr_sum = 0;
    for (uint32_t y0 = 0; y0 < height; y0 += 4) {
        const uint32_t rows = height - y0 < 4 ? height - y0 : 4;
        for (uint32_t x = 0; x < width; ++x)
            for (uint32_t r = 0; r < rows; ++r) {
                uint32_t bit;
                if (ht_magref_sample(coeffs, stride, x, y0 + r, p, bit, mr_sum)) mr.put(bit, 1);
            }
    }
    return ht_finish_magref(mr, mr_sum, num_bitplanes, p, result);
}

}  // namespace htenc
}  // namespace j2kc
