/**
 * @file mq_coder.h
 * @brief The MQ arithmetic coder of ISO/IEC 15444-1 Annex C (C.2 encoder,
 * C.3 decoder), the predictable termination of D.4.2, and the raw (bypass)
 * bit packing of D.6, written once for the CPU reference and CUDA kernels.
 *
 * Everything here is J2KC_HD and keeps its state in plain members, so a
 * kernel can hold an MqEncoder in registers. Context states are one byte:
 * (Table C.2 index << 1) | MPS, so the NLPS entry of the transition table can
 * fold in the SWITCH flag.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"

/** J2KC_HD, and always inlined on the host too: the coders are the inner loop
 *  of Tier-1 and must live in the caller's registers. */
#if !defined(__CUDACC__) && defined(__GNUC__)
#define J2KC_MQ_HD inline __attribute__((always_inline))
#else
#define J2KC_MQ_HD J2KC_HD
#endif

namespace j2kc {

/** One row of Table C.2: Qe, NMPS, NLPS, SWITCH. */
struct MqQeRow {
    uint16_t qe;
    uint8_t nmps;
    uint8_t nlps;
    uint8_t switch_mps;
};

/** Table C.2, the 47 probability states of the MQ coder. */
constexpr MqQeRow kMqQeTable[47] = {
    {0x5601, 1, 1, 1},   {0x3401, 2, 6, 0},   {0x1801, 3, 9, 0},   {0x0AC1, 4, 12, 0},  {0x0521, 5, 29, 0},
    {0x0221, 38, 33, 0}, {0x5601, 7, 6, 1},   {0x5401, 8, 14, 0},  {0x4801, 9, 14, 0},  {0x3801, 10, 14, 0},
    {0x3001, 11, 17, 0}, {0x2401, 12, 18, 0}, {0x1C01, 13, 20, 0}, {0x1601, 29, 21, 0}, {0x5601, 15, 14, 1},
    {0x5401, 16, 14, 0}, {0x5101, 17, 15, 0}, {0x4801, 18, 16, 0}, {0x3801, 19, 17, 0}, {0x3401, 20, 18, 0},
    {0x3001, 21, 19, 0}, {0x2801, 22, 19, 0}, {0x2401, 23, 20, 0}, {0x2201, 24, 21, 0}, {0x1C01, 25, 22, 0},
    {0x1801, 26, 23, 0}, {0x1601, 27, 24, 0}, {0x1401, 28, 25, 0}, {0x1201, 29, 26, 0}, {0x1101, 30, 27, 0},
    {0x0AC1, 31, 28, 0}, {0x09C1, 32, 29, 0}, {0x08A1, 33, 30, 0}, {0x0521, 34, 31, 0}, {0x0441, 35, 32, 0},
    {0x02A1, 36, 33, 0}, {0x0221, 37, 34, 0}, {0x0141, 38, 35, 0}, {0x0111, 39, 36, 0}, {0x0085, 40, 37, 0},
    {0x0049, 41, 38, 0}, {0x0025, 42, 39, 0}, {0x0015, 43, 40, 0}, {0x0009, 44, 41, 0}, {0x0005, 45, 42, 0},
    {0x0001, 45, 43, 0}, {0x5601, 46, 46, 0},
};

/**
 * Transition for a context byte s = (I << 1) | MPS: Qe(I), and the next
 * context byte after coding an MPS or an LPS (SWITCH already applied).
 */
struct MqTransition {
    uint16_t qe;
    uint8_t next_mps;
    uint8_t next_lps;
};

struct MqTransitionTable {
    MqTransition t[94];
};

J2KC_HD constexpr MqTransitionTable make_mq_transition_table()
{
    MqTransitionTable table{};
    for (int i = 0; i < 47; ++i) {
        for (int mps = 0; mps < 2; ++mps) {
            const MqQeRow &row = kMqQeTable[i];
            const int lps_mps = row.switch_mps ? 1 - mps : mps;
            table.t[2 * i + mps].qe = row.qe;
            table.t[2 * i + mps].next_mps = static_cast<uint8_t>(2 * row.nmps + mps);
            table.t[2 * i + mps].next_lps = static_cast<uint8_t>(2 * row.nlps + lps_mps);
        }
    }
    return table;
}

/** Host copy (and the initialiser of any device copy). */
constexpr MqTransitionTable kMqTransitions = make_mq_transition_table();

#if defined(__CUDACC__)
/** Device copy; constant memory suits warp-uniform contexts. A kernel whose
 *  threads code different contexts may prefer a shared-memory copy made from
 *  kMqTransitions. */
static J2KC_DEVICE_CONST MqTransitionTable kMqTransitionsDevice = make_mq_transition_table();
#endif

/** The transition entry for context byte s, on either side. */
J2KC_HD const MqTransition &mq_transition(uint32_t s)
{
#if defined(__CUDA_ARCH__)
    return kMqTransitionsDevice.t[s];
#else
    return kMqTransitions.t[s];
#endif
}

/** Context byte for Table C.2 index `index` and MPS `mps`. */
J2KC_HD constexpr uint8_t mq_context(uint32_t index, uint32_t mps) { return static_cast<uint8_t>((index << 1) | mps); }

/**
 * The interval step of ENCODE (C.2.2) on A and C: CODEMPS (C.2.4) when `mps`
 * (the decision is the context's MPS), else CODELPS (C.2.3), for a context of
 * probability `qe`. Returns whether RENORME (C.2.5) follows, which is also
 * when the context moves on (NMPS or NLPS). Written with selects, so GPU
 * lanes coding different blocks diverge on the return only. Every MQ encoder
 * (MqEncoder, and the two-phase kernel's register coder) takes this step.
 */
J2KC_MQ_HD bool mq_encode_interval(uint32_t &a, uint32_t &c, uint32_t qe, bool mps)
{
    a -= qe;
    const bool renorm = !mps || (a & 0x8000u) == 0;
    // CODEMPS: A < Qe -> A = Qe, else C += Qe (no renormalisation: C += Qe);
    // CODELPS: A < Qe -> C += Qe, else A = Qe.
    const bool set_a = renorm && (mps == (a < qe));
    c += set_a ? 0u : qe;
    a = set_a ? qe : a;
    return renorm;
}

/**
 * FLUSH (C.2.9) up to its last byte: SETBITS, then two byte-outs through the
 * coder's BYTEOUT (`byte_out`, which updates the same C and CT). The caller
 * then keeps the last byte unless it is 0xFF.
 */
template <typename ByteOut>
J2KC_MQ_HD void mq_flush_bits(uint32_t a, uint32_t &c, int32_t &ct, ByteOut &&byte_out)
{
    const uint32_t tempc = c + a;
    c |= 0xFFFF;
    if (c >= tempc) c -= 0x8000;
    c <<= ct;
    byte_out();
    c <<= ct;
    byte_out();
}

/**
 * Predictable termination (D.4.2, "ERTERM") up to its last byte: pushes out
 * just enough bits of C (at least 12 - CT beyond the current byte) through
 * `byte_out`, so a decoder can predict the padding it then reads. The caller
 * then emits one more byte unless B is 0xFF.
 */
template <typename ByteOut>
J2KC_MQ_HD void mq_flush_predictable_bits(uint32_t &c, int32_t &ct, ByteOut &&byte_out)
{
    int32_t k = 11 - ct + 1;
    while (k > 0) {
        c <<= ct;
        ct = 0;
        byte_out();
        k -= ct;
    }
}

/**
 * The encoder's state at the end of a pass that does not end its segment:
 * enough to find, once the segment is finished, how many of its bytes a
 * decoder needs to reproduce every decision up to that pass.
 */
struct MqPassSnapshot {
    uint32_t a;
    uint32_t c;
    int32_t ct;
    int32_t b_offset;  ///< position of B relative to the segment start (-1: the byte before)
    uint8_t b;         ///< B's value then (a later carry may still raise it)
};

/**
 * MQ encoder (C.2) with the byte B held in a register: every change of B is
 * stored at once, so the buffer holds what the "software conventions" form
 * of C.2 writes, but BYTEOUT never loads B back (on the GPU a load of a byte
 * just stored to global memory is a round trip to L2). Positions are offsets
 * into the block's buffer, which keeps the state in few registers.
 *
 * The caller owns the buffer: init(buf, seg_start) needs buf[seg_start - 1]
 * readable and writable (a dummy 0 before the first segment, or the previous
 * segment's last byte, which a carry can never change), and room for the
 * worst case of the symbols coded plus 3 bytes of termination.
 */
struct MqEncoder {
    uint32_t a;
    uint32_t c;
    int32_t ct;
    uint32_t b;     ///< the value of byte B (C.2.1), buf[pos]
    int32_t pos;    ///< offset of B; starts one before the segment
    int32_t start;  ///< offset of the segment's first byte (BPST)
    uint8_t *buf;

    /** INITENC (C.2.8) for a segment starting at buffer[seg_start]. */
    J2KC_MQ_HD void init(uint8_t *buffer, int32_t seg_start)
    {
        buf = buffer;
        a = 0x8000;
        c = 0;
        pos = seg_start - 1;
        start = seg_start;
        b = buf[pos];
        ct = b == 0xFF ? 13 : 12;
    }

    /**
     * BYTEOUT (C.2.6) with bit stuffing: after 0xFF only 7 bits go out, so
     * the stuffed zero absorbs a later carry and no marker can appear. The
     * four cases of C.2.6 as selects (GPU lanes coding different blocks then
     * diverge less): a carry into B happens only when B is not 0xFF;
     * dropping C's carry bit before taking the next byte is what an 8-bit
     * store of C >> 19 does; after a B of 0xFF (before or after the carry)
     * the next byte takes 7 bits.
     */
    J2KC_MQ_HD void byte_out()
    {
        const bool carry = b != 0xFFu && c >= 0x8000000u;
        if (carry) {
            ++b;
            buf[pos] = static_cast<uint8_t>(b);
            c &= 0x7FFFFFF;
        }
        const bool stuff = b == 0xFFu;
        ++pos;
        b = (stuff ? (c >> 20) : (c >> 19)) & 0xFFu;
        c &= stuff ? 0xFFFFFu : 0x7FFFFu;
        ct = stuff ? 7 : 8;
        buf[pos] = static_cast<uint8_t>(b);
    }

    /** RENORME (C.2.5). */
    J2KC_MQ_HD void renorm()
    {
        do {
            a <<= 1;
            c <<= 1;
            if (--ct == 0) byte_out();
        } while ((a & 0x8000) == 0);
    }

    /** ENCODE (C.2.2): codes `bit` in the context whose byte is `cx`. */
    J2KC_MQ_HD void encode(uint32_t bit, uint8_t &cx)
    {
        const MqTransition &t = mq_transition(cx);
        const bool mps = bit == (cx & 1u);
        if (mq_encode_interval(a, c, t.qe, mps)) {
            cx = mps ? t.next_mps : t.next_lps;
            renorm();
        }
    }

    /** Bytes of the buffer in use, B included. */
    J2KC_MQ_HD size_t used() const { return static_cast<size_t>(pos) + 1; }

    /**
     * FLUSH (C.2.9): SETBITS, two byte-outs, and the last byte kept unless it
     * is 0xFF (a decoder reads 0xFF past the end anyway). Returns the
     * segment length in bytes.
     */
    J2KC_MQ_HD uint32_t flush()
    {
        mq_flush_bits(a, c, ct, [this] { byte_out(); });
        if (b != 0xFF) ++pos;
        return static_cast<uint32_t>(pos - start);
    }

    /**
     * Predictable termination (D.4.2, mq_flush_predictable_bits). Writes one
     * byte beyond the returned length (scratch, overwritten by what follows).
     * Returns the length.
     */
    J2KC_MQ_HD uint32_t flush_predictable()
    {
        mq_flush_predictable_bits(c, ct, [this] { byte_out(); });
        if (b != 0xFF) byte_out();
        return static_cast<uint32_t>(pos - start);
    }

    /** The state a truncation point is later found from. */
    J2KC_MQ_HD MqPassSnapshot snapshot() const
    {
        return MqPassSnapshot{a, c, ct, pos - start, static_cast<uint8_t>(b)};
    }
};

/**
 * Shortest prefix of a finished segment (`seg`, `seg_length` bytes; seg[-1]
 * readable, as for MqEncoder::init) from which the decoder, reading 0xFF past
 * the end, reproduces every decision coded before `snap`.
 *
 * At the snapshot the interval is [C, C + A); the segment's value V as the
 * decoder sees it (bytes, then 1-bits) lies inside it. U, the bytes of C + A
 * emitted as BYTEOUT would, shares B's position and the stuffing with V up to
 * their first differing byte j, where V_j < U_j. Cut after byte j, V followed
 * by 1-bits stays below C + A (V_j + 1 <= U_j) and not below V; cut before
 * it, it would reach C + A. So j + 1 is exact. The result may still end in
 * 0xFF; dropping that byte is equivalent (the decoder's fill is 0xFF).
 */
J2KC_MQ_HD uint32_t mq_truncation_length(const MqPassSnapshot &snap, const uint8_t *seg, uint32_t seg_length)
{
    uint8_t u[8];
    u[0] = snap.b;
    MqEncoder tmp;
    tmp.a = snap.a;
    tmp.c = snap.c + snap.a;
    tmp.ct = snap.ct;
    tmp.b = snap.b;
    tmp.pos = 0;
    tmp.start = 1;
    tmp.buf = u;
    for (int k = 0; k < 6; ++k) {  // 6 byte-outs shift out all 28 bits of C
        tmp.c <<= tmp.ct;
        tmp.byte_out();
    }
    const int32_t emitted = tmp.pos + 1;
    for (int32_t k = 0; k < emitted; ++k) {
        const int32_t pos = snap.b_offset + k;
        const uint32_t actual = pos < static_cast<int32_t>(seg_length) ? seg[pos] : 0xFFu;
        if (actual != u[k]) return static_cast<uint32_t>(pos + 1);
    }
    return seg_length;  // not reached: V < C + A
}

/**
 * Truncation point of a pass inside a finished segment, from the bytes it
 * needs (mq_truncation_length, or RawEncoder::bytes_needed at the pass end):
 * clamped to the segment, less a trailing 0xFF (the decoder's fill stands in
 * for it, and a contribution ending in 0xFF could form a marker with what
 * follows). Tier-1 then makes the points of a block non-decreasing.
 */
J2KC_MQ_HD uint32_t segment_truncation_point(uint32_t needed, const uint8_t *seg, uint32_t seg_length)
{
    uint32_t end = needed < seg_length ? needed : seg_length;
    if (end > 0 && seg[end - 1] == 0xFF) --end;
    return end;
}

/**
 * Raw (bypass) bit packer of D.6: MSB first; after a 0xFF byte the next byte
 * carries 7 bits with a zero MSB, as the MQ coder's bit stuffing does.
 */
struct RawEncoder {
    uint32_t c;   ///< bits of the byte being filled
    int32_t ct;   ///< free bit positions left in it
    int32_t cap;  ///< 8, or 7 after a 0xFF
    uint8_t *bp;  ///< where the byte being filled goes
    uint8_t *start;

    /** The segment starts at dst; the previous byte is never 0xFF (both
     *  terminations drop or avoid a trailing 0xFF). */
    J2KC_MQ_HD void init(uint8_t *dst)
    {
        c = 0;
        ct = cap = 8;
        bp = start = dst;
    }

    J2KC_MQ_HD void put(uint32_t bit)
    {
        c |= bit << --ct;
        if (ct == 0) {
            *bp++ = static_cast<uint8_t>(c);
            cap = ct = (c == 0xFF) ? 7 : 8;
            c = 0;
        }
    }

    /** Bytes a decoder needs to read every bit put so far. */
    J2KC_MQ_HD uint32_t bytes_needed() const { return static_cast<uint32_t>(bp - start) + (ct != cap ? 1u : 0u); }

    /**
     * Terminates the raw segment: a partial byte is padded with 0, 1, 0, ...
     * (the padding predictable termination prescribes; harmless otherwise,
     * and it can never form 0xFF). A trailing 0xFF with nothing after it is
     * dropped unless `predictable`, in which case a 7-bit padding byte follows
     * it. Returns the segment length.
     */
    J2KC_MQ_HD uint32_t flush(bool predictable)
    {
        if (ct != cap || (cap == 7 && predictable)) {
            uint32_t pad = 0;
            while (ct > 0) {
                c |= pad << --ct;
                pad ^= 1;
            }
            *bp++ = static_cast<uint8_t>(c);
        } else if (cap == 7) {
            --bp;  // nothing after the 0xFF: the decoder's 0xFF fill stands in
        }
        c = 0;
        ct = cap = 8;
        return static_cast<uint32_t>(bp - start);
    }
};

/**
 * MQ decoder (C.3), the one definition the CPU decoder, the shared coder core
 * and the tests all use. Reads only [data, data + length): past the end it
 * sees 0xFF bytes, which after a 0xFF count as a marker, so 1-bits are fed
 * forever (the convention of C.3.4 for a terminated segment).
 *
 * Speed: a hot loop copies the struct into a local (so A, C, CT and the
 * pointers live in registers) and copies it back when it is done. BYTEIN
 * runs once per 8 bits; its common case (a byte that is not 0xFF with one
 * more byte after it) is one test, the end of data and 0xFF go to a cold
 * path, so no padding copy of the segment is needed.
 */
struct MqDecoder {
    uint32_t a;
    uint32_t c;
    int32_t ct;
    const uint8_t *bp;
    const uint8_t *end;

    /** BYTEIN (C.3.4), cold cases: at or past the last byte, or after 0xFF.
     *  BP never passes `end`: it only advances past a byte that exists. */
    J2KC_HD void byte_in_slow()
    {
        const int64_t left = end - bp;
        if (left <= 0 || *bp == 0xFF) {
            const uint32_t b1 = left > 1 ? bp[1] : 0xFFu;
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
            c += (left > 1 ? static_cast<uint32_t>(*bp) : 0xFFu) << 8;
            ct = 8;
        }
    }

    /** BYTEIN (C.3.4). */
    J2KC_MQ_HD void byte_in()
    {
        if (end - bp > 1 && *bp != 0xFF) {
            ++bp;
            c += static_cast<uint32_t>(*bp) << 8;
            ct = 8;
        } else {
            byte_in_slow();
        }
    }

    /** BYTEIN (C.3.4) as selects: the same bytes and registers as byte_in()
     *  on one code path, for a GPU thread whose neighbours in the warp read
     *  other code-blocks (no branch for them to diverge on). */
    J2KC_MQ_HD void byte_in_flat()
    {
        const int64_t left = end - bp;
        const uint32_t cur = left > 0 ? static_cast<uint32_t>(*bp) : 0xFFu;
        const uint32_t next = left > 1 ? static_cast<uint32_t>(bp[1]) : 0xFFu;
        const bool after_ff = cur == 0xFFu;  // or at the end, which reads as 0xFF
        const bool marker = after_ff && next > 0x8Fu;
        bp += marker ? 0 : 1;
        c += marker ? 0xFF00u : next << (after_ff ? 9 : 8);
        ct = after_ff && !marker ? 7 : 8;
    }

    /** INITDEC (C.3.5). */
    J2KC_MQ_HD void init(const uint8_t *data, uint32_t length)
    {
        bp = data;
        end = data + length;
        c = (length > 0 ? static_cast<uint32_t>(*bp) : 0xFFu) << 16;
        byte_in();
        c <<= 7;
        ct -= 7;
        a = 0x8000;
    }

    /** RENORMD (C.3.3) for a shift of n bits (0 allowed), all at once: the
     *  same as shifting one bit at a time and calling BYTEIN whenever CT
     *  reaches 0 before a shift. */
    template <bool kFlat = false>
    J2KC_MQ_HD void shift(int32_t n)
    {
        a <<= n;
        J2KC_DEVICE_NO_UNROLL
        while (n > ct) {
            c <<= ct;
            n -= ct;
            if constexpr (kFlat)
                byte_in_flat();
            else
                byte_in();
        }
        c <<= n;
        ct -= n;
    }

    /** Leading zeros of A in its 16 bits: the RENORMD shift. */
    J2KC_MQ_HD static int32_t renorm_bits(uint32_t a16)
    {
#if defined(__CUDA_ARCH__)
        return __clz(a16) - 16;
#else
        return __builtin_clz(a16) - 16;
#endif
    }

    /** RENORMD (C.3.3). */
    J2KC_MQ_HD void renorm() { shift(renorm_bits(a)); }

    /**
     * DECODE (C.3.2) with MPS_EXCHANGE and LPS_EXCHANGE. The common case, an
     * MPS without renormalisation (the context does not change then), takes
     * one well-predicted branch in skewed contexts (zero coding without
     * neighbours, run-length): the choice for those.
     */
    J2KC_MQ_HD uint32_t decode(uint8_t &cx)
    {
        const MqTransition &t = mq_transition(cx);
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
            renorm();
        } else {
            c -= qe << 16;
            if ((a & 0x8000) == 0) {
                if (a < qe) {
                    d ^= 1u;
                    cx = t.next_lps;
                } else {
                    cx = t.next_mps;
                }
                renorm();
            }
        }
        return d;
    }

    /**
     * The same decision as decode(), written as selects. In contexts that sit
     * near even odds (sign coding, magnitude refinement, zero coding with
     * significant neighbours) whether a decision is an MPS, an LPS or
     * renormalises is what a branch predictor cannot learn, so branches there
     * cost a misprediction about every other decision; this costs some twenty
     * instructions instead. Masks (all ones or zero) rather than ternaries,
     * which compilers turn back into branches. kFlat: BYTEIN as selects too
     * (byte_in_flat), for GPU threads.
     */
    template <bool kFlat = false>
    J2KC_MQ_HD uint32_t decode_even(uint8_t &cx)
    {
        const MqTransition &t = mq_transition(cx);
        const uint32_t qe = t.qe;
        const uint32_t mps = cx & 1u;
        a -= qe;
        const uint32_t lps_exchange = 0u - static_cast<uint32_t>((c >> 16) < qe);
        c -= (qe << 16) & ~lps_exchange;
        const uint32_t is_lps = (lps_exchange ^ (0u - static_cast<uint32_t>(a < qe))) & 1u;  // 0 unless renormalising
        const uint32_t renorm_mask = lps_exchange | (0u - static_cast<uint32_t>(a < 0x8000u));
        a = (qe & lps_exchange) | (a & ~lps_exchange);
        const uint32_t next = t.next_mps ^ ((t.next_mps ^ t.next_lps) & (0u - is_lps));
        cx = static_cast<uint8_t>(cx ^ ((cx ^ next) & renorm_mask));
        shift<kFlat>(renorm_bits(a));  // 0 when A >= 0x8000
        return mps ^ is_lps;
    }
};

/** Raw (bypass) bit reader of D.6, with the same end-of-data convention. */
struct RawDecoder {
    uint32_t c;  ///< current byte
    int32_t ct;  ///< bits of it left
    const uint8_t *bp;
    const uint8_t *end;

    J2KC_MQ_HD void init(const uint8_t *data, uint32_t length)
    {
        c = 0;
        ct = 0;
        bp = data;
        end = data + length;
    }

    J2KC_MQ_HD uint32_t get()
    {
        if (ct == 0) {
            const bool more = bp < end;
            const uint32_t next = more ? *bp : 0xFFu;
            if (c == 0xFF && next > 0x8F) {
                ct = 8;  // marker or end of data: 1-bits forever
            } else {
                ct = (c == 0xFF) ? 7 : 8;
                c = next;
                bp += more ? 1 : 0;
            }
        }
        return (c >> --ct) & 1u;
    }
};

}  // namespace j2kc
