/**
 * @file tier1_two_phase_coder.h
 * @brief Tier-1 encoding of ISO/IEC 15444-1 Annex D in two phases, for the
 * GPU: (1) context modelling by a warp per code-block (the sample-parallel
 * pass logic of tier1_warp_coder.h, after Matela et al.) writes the block's
 * decisions, one byte each, in coding order; (2) MQ coding (Annex C) by a
 * thread per code-block reads them back, so 32 blocks are arithmetic-coded
 * at once by a warp instead of one block by lane 0 while 31 lanes wait.
 * Output is byte-identical to t1_encode_block (the tests compare every field).
 *
 * The phase-2 coder follows the MQ-coder advice of P. Holub's lecture on
 * JPEG 2000 on GPUs (Masaryk University, PV197, 2011): the whole coder state
 * in registers (MqEncoder, which every block coder shares, keeps B there
 * too), renormalisation in one step by counting leading zeros (C.2.5's
 * loop shifts one bit at a time), and the context of a decision as one word
 * holding Qe and the state, so the common path (an MPS with no
 * renormalisation) needs one load. Contexts and the transition table live in
 * shared memory on the device: the lanes of a warp code different blocks, so
 * their contexts differ and constant memory would serialise them.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/host_device.h"
#include "tier1/mq_coder.h"
#include "tier1/tier1_contexts.h"
#include "tier1/tier1_encoder_core.h"
#include "tier1/tier1_warp_coder.h"

namespace j2kc {
namespace t1core {

// ------------------------------------------------------------ phase 1

/**
 * Decisions a block of these sides with at most `planes` coded planes can
 * produce: per bit-plane every sample's bit is coded once or covered by a
 * run-length decision (at most 6 decisions per column of 4), plus 4
 * segmentation symbols; every sign once per block (see
 * t1_encode_buffer_bound, the same count).
 */
J2KC_HD constexpr size_t t1_decision_bound(uint32_t width, uint32_t height, uint32_t planes)
{
    const size_t n = size_t{width} * height;
    return size_t{planes} * ((3 * n + 1) / 2 + 4) + n;
}

/**
 * Phase 1 for one block, by a warp (every lane calls it with the same
 * arguments): the checks of t1_encode_block, then every pass's decisions
 * into `dec` (capacity `dec_cap`), the end of each pass's decisions in
 * `pass_dec_end`, and per pass the distortion and the termination flag in
 * `out`. Sets out.num_passes, zero_bitplanes, data_bitplanes; out.bytes is
 * phase 2's. Writes nothing in out.buf.
 */
J2KC_HD uint32_t t1w_model_block(T1WarpShared &sh, const int32_t *coeffs, size_t stride, uint32_t width,
                                 uint32_t height, uint32_t orientation, uint8_t style, uint32_t num_bitplanes,
                                 uint32_t lowest_plane, uint16_t *words, uint32_t *mags, uint8_t *dec, uint32_t dec_cap,
                                 uint32_t *pass_dec_end, T1EncodeOutput &out)
{
    // The steps of t1w_begin_block and t1_encode_plan written out, with the
    // zero bit-planes set last: through those helpers this kernel, held to
    // 64 registers for 8 CTAs an SM, spills more (docs/measurements.md).
    bool empty = false;
    const uint32_t check = t1_encode_check(width, height, style, num_bitplanes, out, &empty);
    if (check != kT1EncodeOk || empty) return check;
    const uint32_t max_mag = t1w_load_block(sh, coeffs, stride, width, height, words, mags);
    if (max_mag == 0) return kT1EncodeOk;
    int nbp = 0;
    if (const uint32_t deep = t1_data_bitplanes(max_mag, num_bitplanes, out, &nbp)) return deep;
    const uint32_t num_passes = t1_num_passes(nbp, lowest_plane);
    if (out.capacity < 1 + t1_pass_byte_bound(width, height)) return kT1EncodeOverflow;
    T1WEmit em{dec, 0, dec_cap, false};
    // Phase 1 codes nothing: t1w_pass<true> leaves these alone.
    MqEncoder mq_unused{};
    RawEncoder raw_unused{};
    uint8_t cx_unused[1] = {0};
    for (uint32_t pass = 0; pass < num_passes; ++pass) {
        t1w_pass<true>(sh, words, mags, width, height, orientation, style, pass, nbp, mq_unused, raw_unused, cx_unused,
                       em);
        const bool terminated = t1_pass_ends_segment(pass, num_passes, style);
        T1W_SERIAL
        {
            int64_t sum = 0;
            for (uint32_t k = 0; k < 32; ++k) sum += sh.dist[k];
            t1_record_pass(out, pass, nbp, t1_distortion_shift(num_bitplanes), sum, terminated);
            pass_dec_end[pass] = em.pos;
        }
        // Lane 0 has read every lane's sh.dist before the next pass zeroes
        // them (lanes of a warp need not run in step: racecheck).
        T1W_SYNC();
    }
    // Phase 2 reads the stream a 4-byte word at a time: zero the last word's
    // tail so no byte it loads is uninitialised (compute-sanitizer initcheck).
    T1W_SERIAL
    {
        for (uint32_t p = em.pos; (p & 3u) != 0 && p < dec_cap; ++p) dec[p] = 0;
    }
    T1W_SYNC();
    if (em.overflow) return kT1EncodeOverflow;
    out.num_passes = num_passes;
    out.zero_bitplanes = static_cast<uint8_t>(num_bitplanes - static_cast<uint32_t>(nbp));
    return kT1EncodeOk;
}

// ------------------------------------------------------------ phase 2

/** Transition of a context word w = (Qe << 8) | s, s = (Table C.2 index << 1) | MPS:
 *  the context word after an MPS that renormalises, and after an LPS. */
struct MqWordTransition {
    uint32_t mps;
    uint32_t lps;
};

struct MqWordTable {
    MqWordTransition t[94];
};

J2KC_HD constexpr uint32_t mq_word_of(uint32_t s) { return (uint32_t{kMqTransitions.t[s].qe} << 8) | s; }

J2KC_HD constexpr MqWordTable make_mq_word_table()
{
    MqWordTable table{};
    for (uint32_t s = 0; s < 94; ++s) {
        table.t[s].mps = mq_word_of(kMqTransitions.t[s].next_mps);
        table.t[s].lps = mq_word_of(kMqTransitions.t[s].next_lps);
    }
    return table;
}

constexpr MqWordTable kMqWordTable = make_mq_word_table();
#if defined(__CUDACC__)
/** Device copy; kernels copy it into shared memory (lanes index it apart). */
static J2KC_DEVICE_CONST MqWordTable kMqWordTableDevice = make_mq_word_table();
#endif

/** Table D.7's initial context words (t1_reset_contexts, as words). */
J2KC_HD void t1_reset_context_words(uint32_t *cx, uint32_t cx_stride)
{
    // Folded at compile time (no host table is read on the device).
    constexpr uint32_t kZero = mq_word_of(0);
    constexpr uint32_t kZc = mq_word_of(mq_context(4, 0));
    constexpr uint32_t kRl = mq_word_of(mq_context(3, 0));
    constexpr uint32_t kUni = mq_word_of(mq_context(46, 0));
    for (int k = 0; k < kT1NumContexts; ++k) cx[k * cx_stride] = kZero;
    cx[kT1CtxZc * cx_stride] = kZc;
    cx[kT1CtxRl * cx_stride] = kRl;
    cx[kT1CtxUni * cx_stride] = kUni;
}

J2KC_HD uint32_t mq_clz32(uint32_t v)
{
#if defined(__CUDA_ARCH__)
    return static_cast<uint32_t>(__clz(v));
#else
    return static_cast<uint32_t>(__builtin_clz(v));
#endif
}

/** Four decision bytes from a 4-aligned address of the stream. */
J2KC_HD uint32_t t1_load_decisions4(const uint8_t *p)
{
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint32_t *>(p);
#else
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;  // little-endian hosts only (as every target of this project)
#endif
}

/**
 * ENCODE (C.2.2) of `bit` in context word `w` with few branches, for lanes
 * that code different blocks: the three cases of CODEMPS/CODELPS become
 * selects, so a warp diverges only when a byte leaves (renormalisation
 * reaching CT). `t` is table[w & 0x7F], loaded by the caller as soon as w is
 * known. Returns the context's new word.
 */
J2KC_HD uint32_t mq_encode_select(MqEncoder &e, uint32_t bit, uint32_t w, const MqWordTransition &t)
{
    const bool mps = bit == (w & 1u);
    const bool renorm = mq_encode_interval(e.a, e.c, w >> 8, mps);
    const uint32_t next = mps ? t.mps : t.lps;
    // Renormalise (n = 0 when A kept bit 15). The first byte-out is done
    // with selects (some lane of a warp nearly always needs one); a second
    // or third (n up to 15 against CT of 7) takes the loop.
    int32_t n = static_cast<int32_t>(mq_clz32(e.a)) - 16;
    e.a <<= n;
    if (n >= e.ct) {
        e.c <<= e.ct;
        n -= e.ct;
        e.byte_out();
        while (n >= e.ct) {
            e.c <<= e.ct;
            n -= e.ct;
            e.byte_out();
        }
    }
    e.c <<= n;
    e.ct -= n;
    return renorm ? next : w;
}

/**
 * Phase 2 for one block, by one thread: codes the decisions of phase 1
 * (`dec`, 4-byte aligned; pass q's end in pass_dec_end[q]) through the
 * blocks' one T1SegmentDriver, into out.buf.
 * `cx` holds the 19 context words, entry k at cx[k * cx_stride]. out must
 * hold phase 1's num_passes; sets out.bytes and every pass_end.
 *
 * One flat loop over the block's decisions, pass boundaries handled inside
 * it: the lanes of a warp code different blocks, and nested per-pass loops
 * would make every lane wait at each pass boundary for the lane with the
 * longest pass. The context word of the next decision is loaded before the
 * current one is stored (and forwarded when both use the same context), so
 * the shared-memory latency overlaps the arithmetic.
 */
J2KC_HD uint32_t t1_code_block_decisions(const uint8_t *dec, const uint32_t *pass_dec_end, uint32_t width,
                                         uint32_t height, uint8_t style, const T1EncodeScratch &scratch,
                                         T1EncodeOutput &out, uint32_t *cx, uint32_t cx_stride,
                                         const MqWordTransition *table)
{
    const uint32_t num_passes = out.num_passes;
    out.bytes = 0;
    if (num_passes == 0) return kT1EncodeOk;
    const uint32_t total = pass_dec_end[num_passes - 1];
    t1_reset_context_words(cx, cx_stride);
    MqEncoder mq{};
    RawEncoder rawc{};
    const size_t pass_bound = t1_pass_byte_bound(width, height);
    T1SegmentDriver seg;
    seg.begin(out.buf);
    bool raw = false;
    uint32_t pass = 0;      // passes begun
    uint32_t pass_end = 0;  // end of the current pass's decisions
    // Decision bytes: `cur` holds the word with decision k's byte at bits
    // 0-7 (shifted as k advances), `ahead` the next aligned word.
    uint32_t cur = total > 0 ? t1_load_decisions4(dec) : 0u;
    uint32_t ahead = total > 4 ? t1_load_decisions4(dec + 4) : 0u;
    uint32_t d = cur & 0xFFu;
    uint32_t w = 0;
    for (uint32_t k = 0;; ++k) {
        if (k == pass_end) {
            // Ends every pass that ends here (passes may hold no decisions),
            // begins the next.
            bool reset = false;
            do {
                if (pass > 0)
                    seg.end_pass(pass - 1, t1_pass_ends_segment(pass - 1, num_passes, style), style, mq, rawc, scratch,
                                 out);
                if (pass == num_passes) break;
                raw = t1_pass_is_raw(pass, style);
                if (!seg.begin_pass(pass, style, pass_bound, out.buf, out.capacity, mq, rawc)) return kT1EncodeOverflow;
                if ((style & kStyleReset) && pass > 0) {
                    t1_reset_context_words(cx, cx_stride);
                    reset = true;
                }
                pass_end = pass_dec_end[pass];
                ++pass;
            } while (k == pass_end);
            if (k == total) break;
            if (k == 0 || reset) w = cx[(d & 0x1Fu) * cx_stride];
        }
        // The next decision's byte and context word, ahead of this one's store.
        if (((k + 1) & 3u) == 0) {
            cur = ahead;
            ahead = k + 5 < total ? t1_load_decisions4(dec + k + 5) : 0u;
        } else {
            cur >>= 8;
        }
        const uint32_t dn = k + 1 < total ? (cur & 0xFFu) : 0u;
        const uint32_t w_next = cx[(dn & 0x1Fu) * cx_stride];
        const uint32_t bit = (d >> 7) & 1u;
        if (raw) {
            rawc.put(bit);
            w = w_next;
        } else {
            const uint32_t ctx = d & 0x1Fu;
            const uint32_t nw = mq_encode_select(mq, bit, w, table[w & 0x7Fu]);
            cx[ctx * cx_stride] = nw;
            w = (dn & 0x1Fu) == ctx ? nw : w_next;
        }
        d = dn;
    }
    seg.finish(num_passes, out);
    return kT1EncodeOk;
}

}  // namespace t1core
}  // namespace j2kc
