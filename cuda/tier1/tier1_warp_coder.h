/**
 * @file tier1_warp_coder.h
 * @brief Warp-cooperative Tier-1 encoder of one code-block (ISO/IEC 15444-1
 * Annex D), after the sample-parallel context modelling of Matela, Rusňák
 * and Holub, "GPU-Based Sample-Parallel Context Modeling for EBCOT in
 * JPEG2000": 32 lanes form the decisions of a stripe chunk of 32 columns at
 * once, lane 0 codes them with the MQ coder of Annex C (serial by nature).
 * Output is byte-identical to t1_encode_block.
 *
 * Why the decisions of a chunk can be formed in parallel, pass by pass (a
 * sample's neighbours are in its own column, the columns left and right,
 * and the stripes above and below; "visit time" is when D.3's scan order
 * reaches it):
 * - Magnitude refinement changes no significance: every context is the
 *   state after the significance pass. Fully parallel.
 * - Cleanup: the samples that become significant are exactly the
 *   insignificant, unvisited ones whose bit is 1, whatever their context.
 *   So every column knows its left neighbour's final state at once, and the
 *   contexts and run-length mode (both need the left column's final state,
 *   the right column's and the lower stripe's state at pass start, the upper
 *   stripe's final state) follow in parallel.
 * - Significance propagation: whether a sample is coded depends on
 *   neighbours that became significant earlier in the same pass: a
 *   recurrence N_x = F_x(N_{x-1}) over columns (N: the 4-bit mask of new
 *   significance; within a column rows are done in order). Starting from
 *   N = 0 and applying every F_x at once gives a non-decreasing sequence
 *   bounded by the true masks, exact for one more column per round; when a
 *   round changes nothing it is the (unique) solution. Chains are short in
 *   practice; at most 33 rounds.
 *
 * State per column of a stripe is one 16-bit word: significance (bits 0-3,
 * row r at bit r), the coefficient's sign (4-7, set at load for every
 * sample, used only where significant), refined (8-11), visited by this
 * plane's significance pass (12-15). The contexts are then built as the
 * flag words of tier1_contexts.h and looked up with the same J2KC_HD tables.
 *
 * Execution model: the code is written in phases. T1W_LANES(l) runs its body
 * once per lane l; T1W_SERIAL runs on lane 0 only; T1W_SYNC() separates
 * phases. A phase only reads shared data written in earlier phases and
 * writes only its own lane's slots (or, serially, lane 0's), so running
 * the lanes one after another on the host (the tests do) computes exactly
 * what the warp computes on the device.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/mq_coder.h"
#include "tier1/tier1_contexts.h"
#include "tier1/tier1_encoder_core.h"

#if defined(__CUDA_ARCH__)
#define T1W_LANE_ID() (threadIdx.x & 31u)
#define T1W_LANES(l) for (uint32_t l = T1W_LANE_ID(), t1w_once_ = 1; t1w_once_ != 0; t1w_once_ = 0)
#define T1W_SERIAL if (T1W_LANE_ID() == 0)
#define T1W_SYNC() __syncwarp()
#else
#define T1W_LANES(l) for (uint32_t l = 0; l < 32; ++l)
#define T1W_SERIAL if (true)
#define T1W_SYNC() ((void)0)
#endif

namespace j2kc {
namespace t1core {

/** What one lane knows about its column of the current chunk. */
struct T1WarpLaneIn {
    uint32_t mag[4];       ///< magnitudes of rows 0..3 (0 beyond the block)
    uint16_t w;            ///< own column word at phase start
    uint16_t lw, rw;       ///< left and right column words (0 outside the block)
    uint8_t a_sig, a_sgn;  ///< row 3 of the stripe above, columns x-1, x, x+1 (bits 0, 1, 2)
    uint8_t b_sig, b_sgn;  ///< row 0 of the stripe below, same columns
    uint8_t valid;         ///< column inside the block
};

/** Per-warp shared workspace (shared memory on the device). */
struct T1WarpShared {
    T1WarpLaneIn in[32];
    uint8_t nb[2][32];  ///< significance-pass rounds (double buffer)
    uint8_t changed[32];
    uint8_t cup_new[32];
    uint8_t nsym[32];
    uint8_t sym[32][12];     ///< decisions: context (bits 0-4) | bit << 7
    int64_t dist[32];        ///< per-lane distortion sums of the pass (before the 2^p factor)
    int64_t round_dist[32];  ///< the current significance-pass round's distortion per lane
    uint8_t vis[32];         ///< the current round's visited rows per lane
    uint8_t work[32];        ///< the chunk's pass work per lane (T1WColumnWork)
    uint32_t max_mag[32];
};

/** Whether any lane's flag is set (a phase's per-lane results, each lane
 *  reading only its own slot on the device: a ballot instead of a loop). */
J2KC_HD bool t1w_any(const uint8_t *flag)
{
#if defined(__CUDA_ARCH__)
    return __any_sync(0xFFFFFFFFu, flag[T1W_LANE_ID()] != 0) != 0;
#else
    uint32_t any = 0;
    for (uint32_t k = 0; k < 32; ++k) any |= flag[k];
    return any != 0;
#endif
}

/**
 * What a column of a chunk needs in a pass, known from its own word before
 * anything else is loaded. Under the fine quantisation steps of a byte
 * budget most planes of a code-block are sparse (above its samples'
 * significance: nothing to refine) or dense (under it: every sample
 * significant or visited, most refined before), and there a pass codes
 * nothing, or refinements whose context needs no neighbour.
 */
enum T1WColumnWork : uint8_t {
    kT1WNothing = 0,     ///< no decision; the word stays (the cleanup still clears its visited bits)
    kT1WRefineOnly = 1,  ///< refinements of samples refined before: context 16 (t1_mr_context) alone
    kT1WModel = 2,       ///< the whole context modelling
};

/**
 * A column's work in a pass of type `type` (0 significance propagation, 1
 * magnitude refinement, 2 cleanup) from its word `w` (the layout of the file
 * comment) and its rows: significance propagation codes only insignificant
 * rows; refinement codes the rows significant before this plane; cleanup
 * codes only rows neither significant nor visited (a row visited by the
 * significance pass had a significant neighbour then, and still has, so no
 * run-length decision either).
 */
J2KC_HD uint32_t t1w_column_work(uint32_t w, uint32_t rows, uint32_t type)
{
    const uint32_t all = (1u << rows) - 1u, sig = w & all;
    if (type == 0) return sig == all ? kT1WNothing : kT1WModel;
    if (type == 1) {
        const uint32_t coded = sig & ~(w >> 12);
        if (coded == 0) return kT1WNothing;
        return (coded & ~(w >> 8)) == 0 ? kT1WRefineOnly : kT1WModel;
    }
    return ((w | (w >> 12)) & all) == all ? kT1WNothing : kT1WModel;
}

/** The most work any lane's column needs (each lane reads its own slot on the device). */
J2KC_HD uint32_t t1w_chunk_work(const uint8_t *work)
{
#if defined(__CUDA_ARCH__)
    const uint32_t own = work[T1W_LANE_ID()];
    if (__any_sync(0xFFFFFFFFu, own == kT1WModel)) return kT1WModel;
    return __any_sync(0xFFFFFFFFu, own != kT1WNothing) ? kT1WRefineOnly : kT1WNothing;
#else
    uint32_t most = kT1WNothing;
    for (uint32_t k = 0; k < 32; ++k) most = work[k] > most ? work[k] : most;
    return most;
#endif
}

/** Exclusive prefix sum of sh.nsym over the lanes below `lane`, and the
 *  chunk's total: a shuffle scan on the device, a loop on the host. */
J2KC_HD uint32_t t1w_nsym_prefix(const uint8_t *nsym, uint32_t lane, uint32_t &total)
{
#if defined(__CUDA_ARCH__)
    const uint32_t own = nsym[lane];
    uint32_t x = own;
    for (uint32_t o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(0xFFFFFFFFu, x, o);
        if (lane >= o) x += y;
    }
    total = __shfl_sync(0xFFFFFFFFu, x, 31);
    return x - own;
#else
    uint32_t before = 0, sum = 0;
    for (uint32_t k = 0; k < 32; ++k) {
        if (k == lane) before = sum;
        sum += nsym[k];
    }
    total = sum;
    return before;
#endif
}

/**
 * Where the decisions go when context modelling is decoupled from MQ coding
 * (tier1_two_phase_coder.h): the block's decision stream, one byte per decision
 * (context in bits 0-4, the bit in bit 7; raw passes use context 0). Every
 * lane holds the same copy.
 */
struct T1WEmit {
    uint8_t *dec;   ///< the block's decision stream
    uint32_t pos;   ///< decisions so far
    uint32_t cap;   ///< bytes of dec
    bool overflow;  ///< a write was refused (cannot happen within t1_decision_bound)
};

/** Flag word (tier1_contexts.h layout) of row r from neighbour masks. */
struct T1NeighbourView {
    uint32_t n, s, w, e, nw, ne, sw, se;  ///< significance
    uint32_t n_neg, s_neg, w_neg, e_neg;  ///< sign where significant
    J2KC_HD uint32_t flags() const
    {
        using namespace t1_flag;
        return (n ? kSigN : 0) | (s ? kSigS : 0) | (w ? kSigW : 0) | (e ? kSigE : 0) | (n_neg ? kNegN : 0) |
               (s_neg ? kNegS : 0) | (w_neg ? kNegW : 0) | (e_neg ? kNegE : 0) | (nw ? kSigNW : 0) | (ne ? kSigNE : 0) |
               (sw ? kSigSW : 0) | (se ? kSigSE : 0);
    }
};

/**
 * Neighbourhood of row r at its visit time. `own_sig`: the column's
 * significance with rows above r as they are when r is visited and rows
 * below as at pass start; `left_sig`: the left column's significance at that
 * time (final for the pass); the right column and the stripe below are at
 * pass start, the stripe above final. Vertically causal mode hides the
 * stripe below.
 */
J2KC_HD T1NeighbourView t1w_view(const T1WarpLaneIn &in, uint32_t own_sig, uint32_t left_sig, int r, bool vc)
{
    const uint32_t own_sgn = (in.w >> 4) & 0xFu;
    const uint32_t l_sgn = (in.lw >> 4) & 0xFu;
    const uint32_t r_sig = in.rw & 0xFu, r_sgn = (in.rw >> 4) & 0xFu;
    const uint32_t b_sig = vc ? 0u : in.b_sig, b_sgn = vc ? 0u : in.b_sgn;
    T1NeighbourView v{};
    if (r > 0) {
        v.n = (own_sig >> (r - 1)) & 1u;
        v.n_neg = v.n & (own_sgn >> (r - 1));
        v.nw = (left_sig >> (r - 1)) & 1u;
        v.ne = (r_sig >> (r - 1)) & 1u;
    } else {
        v.n = (in.a_sig >> 1) & 1u;
        v.n_neg = v.n & (in.a_sgn >> 1);
        v.nw = in.a_sig & 1u;
        v.ne = (in.a_sig >> 2) & 1u;
    }
    if (r < 3) {
        v.s = (own_sig >> (r + 1)) & 1u;
        v.s_neg = v.s & (own_sgn >> (r + 1));
        v.sw = (left_sig >> (r + 1)) & 1u;
        v.se = (r_sig >> (r + 1)) & 1u;
    } else {
        v.s = (b_sig >> 1) & 1u;
        v.s_neg = v.s & (b_sgn >> 1);
        v.sw = b_sig & 1u;
        v.se = (b_sig >> 2) & 1u;
    }
    v.w = (left_sig >> r) & 1u;
    v.w_neg = v.w & (l_sgn >> r);
    v.e = (r_sig >> r) & 1u;
    v.e_neg = v.e & (r_sgn >> r);
    v.n_neg &= 1u;
    v.s_neg &= 1u;
    v.w_neg &= 1u;
    v.e_neg &= 1u;
    return v;
}

/**
 * The flag words of a column's rows as t1w_view(...).flags() gives them,
 * from 6-row masks (bit 0: the row above the stripe, bits 1-4: rows 0-3,
 * bit 5: the row below) of the left, own and right columns: the left and
 * right masks are fixed for a column's call, the own one is rebuilt per row
 * as its rows become significant, and each row's flags are a few shifts of
 * them instead of twelve separate neighbour tests.
 */
struct T1WColumnMasks {
    uint32_t l, r;    ///< left/right significance (left at visit time, right at pass start)
    uint32_t ln, rn;  ///< their signs where significant (rows 0-3 only: W/E use nothing else)
    uint32_t m_edge;  ///< own column's rows -1 and 4 (bits 0 and 5)
    uint32_t m_sgn;   ///< own column's signs, rows -1..4 (masked by significance per row)

    J2KC_HD T1WColumnMasks(const T1WarpLaneIn &in, uint32_t left_sig, bool vc)
    {
        const uint32_t b_sig = vc ? 0u : in.b_sig, b_sgn = vc ? 0u : in.b_sgn;
        l = (in.a_sig & 1u) | ((left_sig & 0xFu) << 1) | ((b_sig & 1u) << 5);
        r = ((in.a_sig >> 2) & 1u) | ((in.rw & 0xFu) << 1) | (((b_sig >> 2) & 1u) << 5);
        ln = l & (((in.lw >> 4) & 0xFu) << 1);
        rn = r & (((in.rw >> 4) & 0xFu) << 1);
        m_edge = ((in.a_sig >> 1) & 1u) | (((b_sig >> 1) & 1u) << 5);
        m_sgn = ((in.a_sgn >> 1) & 1u) | (((in.w >> 4) & 0xFu) << 1) | (((b_sgn >> 1) & 1u) << 5);
    }

    /** Flag word of row r with the own column's rows 0-3 significant as `own_sig`. */
    J2KC_HD uint32_t flags(uint32_t own_sig, uint32_t r) const
    {
        const uint32_t m_all = m_edge | ((own_sig & 0xFu) << 1);
        const uint32_t m = m_all >> r, mn = (m_all & m_sgn) >> r;
        const uint32_t lw = l >> r, rw = this->r >> r, lnw = ln >> r, rnw = rn >> r;
        return (m & 1u) | ((m >> 1) & 2u) | ((lw & 2u) << 1) | ((rw & 2u) << 2) | ((mn & 1u) << 4) | ((mn & 4u) << 3) |
               ((lnw & 2u) << 5) | ((rnw & 2u) << 6) | ((lw & 1u) << 8) | ((rw & 1u) << 9) | ((lw & 4u) << 8) |
               ((rw & 4u) << 9);
    }
};

/** Appends decision (ctx, bit) to a lane's list. */
J2KC_HD void t1w_push(T1WarpShared &sh, uint32_t lane, uint32_t ctx, uint32_t bit)
{
    sh.sym[lane][sh.nsym[lane]++] = static_cast<uint8_t>(ctx | (bit << 7));
}

/** Sign decision of row r becoming significant (context and XOR of D.3.2). */
J2KC_HD void t1w_sign(T1WarpShared &sh, uint32_t lane, uint32_t flags, uint32_t neg, bool raw)
{
    if (raw) {
        t1w_push(sh, lane, 0, neg);
        return;
    }
    const uint32_t e = t1_sc_lookup(flags);
    t1w_push(sh, lane, e & 0x1Fu, neg ^ (e >> 7));
}

/**
 * A chunk whose columns need at most kT1WRefineOnly: each lane pushes its
 * column's refinements (context 16, or raw bits) and their distortion, from
 * its own word and magnitudes alone. The words keep their refined bits.
 */
J2KC_HD void t1w_refine_only(T1WarpShared &sh, uint32_t lane, const uint16_t *words, const uint32_t *mags,
                             size_t column, uint32_t rows, int p, bool raw)
{
    sh.nsym[lane] = 0;
    if (sh.work[lane] != kT1WRefineOnly) return;
    const uint32_t w = words[column];
    const uint32_t coded = w & ~(w >> 12) & ((1u << rows) - 1u);
    for (uint32_t r = 0; r < rows; ++r) {
        if (!((coded >> r) & 1u)) continue;
        const uint32_t mag = mags[column * 4 + r];
        t1w_push(sh, lane, raw ? 0u : kT1CtxMr + 2, (mag >> p) & 1u);
        sh.dist[lane] += t1_dist_refinement(mag, p);
    }
}

/**
 * Whether any column of a loaded chunk may code in a significance
 * propagation pass: an insignificant row next to a significant sample (its
 * own column, the columns left and right, the stripes above and below). The
 * left column's new significance needs one such row itself, so a chunk
 * without any codes nothing (the top planes of most code-blocks).
 */
J2KC_HD bool t1w_spp_has_candidates(T1WarpShared &sh, uint32_t rows, bool vc)
{
    T1W_LANES(l)
    {
        const T1WarpLaneIn &in = sh.in[l];
        const uint32_t sig = in.w & 0xFu;
        const uint32_t near = sig | (in.lw & 0xFu) | (in.rw & 0xFu) | in.a_sig | (vc ? 0u : in.b_sig);
        sh.changed[l] = in.valid && sig != (1u << rows) - 1u && near != 0;
    }
    return t1w_any(sh.changed);
}

/**
 * Significance propagation over one column: returns the rows that become
 * significant given the left column's new significance `left_new`; with
 * `emit`, also records decisions, distortion and the visited rows.
 */
J2KC_HD uint32_t t1w_spp_column(T1WarpShared &sh, uint32_t lane, uint32_t left_new, int p, uint32_t rows, bool vc,
                                bool raw, uint32_t orientation, bool emit, uint32_t *visited, int64_t &dist)
{
    const T1WarpLaneIn &in = sh.in[lane];
    if (visited) *visited = 0;
    if (!in.valid) return 0;
    const uint32_t sig0 = in.w & 0xFu;
    const uint32_t left_sig = (in.lw & 0xFu) | left_new;
    const T1WColumnMasks cm(in, left_sig, vc);
    uint32_t n = 0, vis = 0;
    for (uint32_t r = 0; r < rows; ++r) {
        if ((sig0 >> r) & 1u) continue;
        const uint32_t fl = cm.flags(sig0 | n, r);
        if ((fl & t1_flag::kNeighbours) == 0) continue;
        vis |= 1u << r;
        const uint32_t bit = (in.mag[r] >> p) & 1u;
        if (emit) t1w_push(sh, lane, raw ? 0u : t1_zc_context(orientation, fl), bit);
        if (bit) {
            if (emit) {
                t1w_sign(sh, lane, fl, (in.w >> (4 + r)) & 1u, raw);
                dist += t1_dist_significance(in.mag[r], p);
            }
            n |= 1u << r;
        }
    }
    if (visited) *visited = vis;
    return n;
}

/** Loads the chunk's lane inputs from the column words (one phase). */
J2KC_HD void t1w_load(T1WarpShared &sh, uint32_t lane, const uint16_t *words, const uint32_t *mags, uint32_t width,
                      uint32_t stripes, uint32_t s, uint32_t x0)
{
    T1WarpLaneIn &in = sh.in[lane];
    const uint32_t x = x0 + lane;
    in = T1WarpLaneIn{};
    if (x >= width) return;
    in.valid = 1;
    const size_t row = size_t{s} * width;
    in.w = words[row + x];
    in.lw = x > 0 ? words[row + x - 1] : 0;
    in.rw = x + 1 < width ? words[row + x + 1] : 0;
    for (int d = -1; d <= 1; ++d) {
        const int64_t xx = int64_t{x} + d;
        if (xx < 0 || xx >= width) continue;
        if (s > 0) {
            const uint32_t wa = words[row - width + static_cast<size_t>(xx)];
            in.a_sig |= static_cast<uint8_t>(((wa >> 3) & 1u) << (d + 1));
            in.a_sgn |= static_cast<uint8_t>(((wa >> 7) & 1u) << (d + 1));
        }
        if (s + 1 < stripes) {
            const uint32_t wb = words[row + width + static_cast<size_t>(xx)];
            in.b_sig |= static_cast<uint8_t>((wb & 1u) << (d + 1));
            in.b_sgn |= static_cast<uint8_t>(((wb >> 4) & 1u) << (d + 1));
        }
    }
    const uint32_t *m = mags + (row + x) * 4;
    for (int r = 0; r < 4; ++r) in.mag[r] = m[r];
}

/** Lane 0: codes the chunk's decisions in scan order. */
J2KC_HD void t1w_code_chunk(const T1WarpShared &sh, bool raw, MqEncoder &mq, RawEncoder &rawc, uint8_t *cx)
{
    for (uint32_t l = 0; l < 32; ++l)
        for (uint32_t k = 0; k < sh.nsym[l]; ++k) {
            const uint32_t d = sh.sym[l][k];
            if (raw)
                rawc.put(d >> 7);
            else
                mq.encode(d >> 7, cx[d & 0x1Fu]);
        }
}

/** One coding pass, all lanes. kEmit false: lane 0 owns mq/rawc/cx and codes
 *  each chunk; true: the chunk's decisions are appended to `em` in scan
 *  order (lane order within a chunk) and mq/rawc/cx are unused. The per-lane
 *  distortion sums are in sh.dist. */
template <bool kEmit>
J2KC_HD void t1w_pass(T1WarpShared &sh, uint16_t *words, const uint32_t *mags, uint32_t width, uint32_t height,
                      uint32_t orientation, uint8_t style, uint32_t pass, int nbp, MqEncoder &mq, RawEncoder &rawc,
                      uint8_t *cx, T1WEmit &em)
{
    orientation &= 3u;  // the sub-band's two bits, whatever the caller passes
    const int p = t1_pass_bitplane(pass, nbp);
    const bool raw = t1_pass_is_raw(pass, style);
    const bool vc = (style & kStyleVerticallyCausal) != 0;
    const uint32_t type = t1_pass_type(pass);
    const uint32_t stripes = t1_stripes(height);
    if (!kEmit) {
        T1W_SERIAL
        {
            if ((style & kStyleReset) && pass > 0) t1_reset_contexts(cx);
        }
    }
    T1W_LANES(l) { sh.dist[l] = 0; }
    T1W_SYNC();
    for (uint32_t s = 0; s < stripes; ++s) {
        const uint32_t rows = min_u32(4, height - 4 * s);
        for (uint32_t x0 = 0; x0 < width; x0 += 32) {
            T1W_LANES(l)
            {
                const uint32_t x = x0 + l;
                sh.work[l] = static_cast<uint8_t>(x < width ? t1w_column_work(words[size_t{s} * width + x], rows, type)
                                                            : uint32_t{kT1WNothing});
            }
            const uint32_t work = t1w_chunk_work(sh.work);
            if (work == kT1WNothing) {
                // Nothing to code or measure; the cleanup still ends the
                // plane's visits. The sync orders that write before the next
                // chunk's loads.
                if (type == 2) T1W_LANES(l)
                    {
                        const size_t c = size_t{s} * width + x0 + l;
                        if (x0 + l < width && (words[c] >> 12) != 0)
                            words[c] = static_cast<uint16_t>(words[c] & 0x0FFFu);
                    }
                T1W_SYNC();
                continue;
            }
            if (work == kT1WModel) {
                T1W_LANES(l)
                {
                    t1w_load(sh, l, words, mags, width, stripes, s, x0);
                    sh.nsym[l] = 0;
                    sh.nb[0][l] = 0;
                }
                T1W_SYNC();
            }
            if (work == kT1WRefineOnly) {
                T1W_LANES(l) { t1w_refine_only(sh, l, words, mags, size_t{s} * width + x0 + l, rows, p, raw); }
            } else if (type == 0 && !t1w_spp_has_candidates(sh, rows, vc)) {
                // Nothing to code: the words stay, no round is needed.
            } else if (type == 0) {
                // Rounds of the recurrence until nothing changes (see the file
                // comment). Every round records its decisions: the round that
                // changes nothing ran on the fixed point, so its decisions,
                // visited rows and distortion are the pass's.
                uint32_t cur = 0;
                for (int round = 0; round < 34; ++round) {
                    T1W_LANES(l)
                    {
                        const uint32_t left = l > 0 ? sh.nb[cur][l - 1] : 0u;
                        sh.nsym[l] = 0;
                        uint32_t vis = 0;
                        int64_t dd = 0;
                        const uint32_t n = t1w_spp_column(sh, l, left, p, rows, vc, raw, orientation, true, &vis, dd);
                        sh.nb[cur ^ 1][l] = static_cast<uint8_t>(n);
                        sh.changed[l] = n != sh.nb[cur][l];
                        sh.vis[l] = static_cast<uint8_t>(vis);
                        sh.round_dist[l] = dd;
                    }
                    T1W_SYNC();
                    cur ^= 1;
                    // The ballot also orders this round's reads of nb before
                    // the next round's writes; each lane reads its own flag.
                    if (!t1w_any(sh.changed)) break;
                }
                T1W_LANES(l)
                {
                    if (sh.in[l].valid)
                        words[size_t{s} * width + x0 + l] =
                            static_cast<uint16_t>(sh.in[l].w | sh.nb[cur][l] | (uint32_t{sh.vis[l]} << 12));
                    sh.dist[l] += sh.round_dist[l];
                }
            } else if (type == 1) {
                T1W_LANES(l)
                {
                    const T1WarpLaneIn &in = sh.in[l];
                    if (in.valid) {
                        const uint32_t sig = in.w & 0xFu;
                        const uint32_t coded = sig & ~(in.w >> 12) & ((1u << rows) - 1u);
                        const T1WColumnMasks cm(in, in.lw & 0xFu, vc);
                        for (uint32_t r = 0; r < rows; ++r) {
                            if (!((coded >> r) & 1u)) continue;
                            const uint32_t fl = cm.flags(sig, r) | (((in.w >> (8 + r)) & 1u) ? t1_flag::kRefined : 0u);
                            const uint32_t bit = (in.mag[r] >> p) & 1u;
                            t1w_push(sh, l, raw ? 0u : t1_mr_context(fl), bit);
                            sh.dist[l] += t1_dist_refinement(in.mag[r], p);
                        }
                        words[size_t{s} * width + x0 + l] = static_cast<uint16_t>(in.w | (coded << 8));
                    }
                }
            } else {
                T1W_LANES(l)
                {
                    const T1WarpLaneIn &in = sh.in[l];
                    uint32_t bits = 0;
                    for (uint32_t r = 0; r < rows; ++r) bits |= ((in.mag[r] >> p) & 1u) << r;
                    sh.cup_new[l] = static_cast<uint8_t>(bits & ~in.w & ~(in.w >> 12) & 0xFu);
                }
                T1W_SYNC();
                T1W_LANES(l)
                {
                    const T1WarpLaneIn &in = sh.in[l];
                    if (in.valid) {
                        const uint32_t sig0 = in.w & 0xFu;
                        const uint32_t left_sig = (in.lw & 0xFu) | (l > 0 ? sh.cup_new[l - 1] : 0u);
                        const T1WColumnMasks cm(in, left_sig, vc);
                        const uint32_t skip = (sig0 | (in.w >> 12)) & 0xFu;
                        uint32_t n = 0;
                        uint32_t from = 0;
                        const bool run = rows == 4 && sig0 == 0 && in.a_sig == 0 && left_sig == 0 &&
                                         (in.rw & 0xFu) == 0 && (vc || in.b_sig == 0);
                        if (run) {
                            const uint32_t bits = sh.cup_new[l];
                            t1w_push(sh, l, kT1CtxRl, bits != 0);
                            if (bits == 0) {
                                from = 4;
                            } else {
                                uint32_t first = 0;
                                while (!((bits >> first) & 1u)) ++first;
                                t1w_push(sh, l, kT1CtxUni, first >> 1);
                                t1w_push(sh, l, kT1CtxUni, first & 1u);
                                t1w_sign(sh, l, cm.flags(0, first), (in.w >> (4 + first)) & 1u, false);
                                sh.dist[l] += t1_dist_significance(in.mag[first], p);
                                n |= 1u << first;
                                from = first + 1;
                            }
                        }
                        for (uint32_t r = from; r < rows; ++r) {
                            if ((skip >> r) & 1u) continue;
                            const uint32_t fl = cm.flags(sig0 | n, r);
                            const uint32_t bit = (in.mag[r] >> p) & 1u;
                            t1w_push(sh, l, t1_zc_context(orientation, fl), bit);
                            if (bit) {
                                t1w_sign(sh, l, fl, (in.w >> (4 + r)) & 1u, false);
                                sh.dist[l] += t1_dist_significance(in.mag[r], p);
                                n |= 1u << r;
                            }
                        }
                        words[size_t{s} * width + x0 + l] = static_cast<uint16_t>((in.w | n) & 0x0FFFu);
                    }
                }
            }
            if (kEmit) {
                // Each lane reads only its own nsym/sym here on the device
                // (the prefix is a shuffle scan), so no sync before it; the
                // sync after it orders this chunk's column-word writes
                // before the next chunk's loads.
                uint32_t chunk_total = 0;
                T1W_LANES(l)
                {
                    uint32_t total = 0;
                    const uint32_t off = em.pos + t1w_nsym_prefix(sh.nsym, l, total);
                    chunk_total = total;
                    const uint32_t n = sh.nsym[l];
                    if (off + n <= em.cap)
                        for (uint32_t k = 0; k < n; ++k) em.dec[off + k] = sh.sym[l][k];
                }
                if (chunk_total > em.cap - em.pos) em.overflow = true;
                em.pos += chunk_total;
                T1W_SYNC();
            } else {
                T1W_SYNC();
                T1W_SERIAL { t1w_code_chunk(sh, raw, mq, rawc, cx); }
                T1W_SYNC();
            }
        }
    }
    if (type == 2 && (style & kStyleSegmentation)) {
        if (kEmit) {
            if (em.cap - em.pos >= 4) {
                T1W_SERIAL
                {
                    const uint8_t one = static_cast<uint8_t>(kT1CtxUni | 0x80), zero = kT1CtxUni;
                    em.dec[em.pos] = one;
                    em.dec[em.pos + 1] = zero;
                    em.dec[em.pos + 2] = one;
                    em.dec[em.pos + 3] = zero;
                }
                em.pos += 4;
            } else {
                em.overflow = true;
            }
        } else {
            T1W_SERIAL
            {
                mq.encode(1, cx[kT1CtxUni]);
                mq.encode(0, cx[kT1CtxUni]);
                mq.encode(1, cx[kT1CtxUni]);
                mq.encode(0, cx[kT1CtxUni]);
            }
        }
    }
    T1W_SYNC();
}

/**
 * Loads a block: the column words (signs) and magnitudes, lanes striding over
 * stripe columns (consecutive lanes, consecutive x). Returns the OR of all
 * magnitudes, in every lane.
 */
J2KC_HD uint32_t t1w_load_block(T1WarpShared &sh, const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                                uint16_t *words, uint32_t *mags)
{
    const uint32_t stripes = t1_stripes(height);
    const uint32_t columns = stripes * width;
    T1W_LANES(l)
    {
        uint32_t m = 0;
        for (uint32_t c = l; c < columns; c += 32) {
            const uint32_t s = c / width, x = c - s * width;
            uint32_t w = 0;
            for (uint32_t r = 0; r < 4; ++r) {
                const uint32_t y = 4 * s + r;
                uint32_t mag = 0;
                if (y < height) {
                    const int32_t q = coeffs[size_t{y} * stride + x];
                    mag = q < 0 ? 0u - static_cast<uint32_t>(q) : static_cast<uint32_t>(q);
                    w |= (q < 0 ? 1u : 0u) << (4 + r);
                }
                mags[size_t{c} * 4 + r] = mag;
                m |= mag;
            }
            words[c] = static_cast<uint16_t>(w);
        }
        sh.max_mag[l] = m;
    }
    T1W_SYNC();
#if defined(__CUDA_ARCH__)
    return warp_or(sh.max_mag[T1W_LANE_ID()]);
#else
    uint32_t max_mag = 0;
    for (uint32_t k = 0; k < 32; ++k) max_mag |= sh.max_mag[k];
    return max_mag;
#endif
}

/** How the warp block encoder starts: a status, and the planes and passes
 *  to code (none with kT1EncodeOk: nothing to code). */
struct T1WBlockStart {
    uint32_t status;
    int nbp;
    uint32_t num_passes;
};

/**
 * How the warp block encoder starts: the checks of t1_encode_block, the
 * load, the planes and passes (t1_encode_plan). Every lane calls it.
 */
J2KC_HD T1WBlockStart t1w_begin_block(T1WarpShared &sh, const int32_t *coeffs, size_t stride, uint32_t width,
                                      uint32_t height, uint8_t style, uint32_t num_bitplanes, uint32_t lowest_plane,
                                      uint16_t *words, uint32_t *mags, T1EncodeOutput &out)
{
    T1WBlockStart start{kT1EncodeOk, 0, 0};
    bool empty = false;
    start.status = t1_encode_check(width, height, style, num_bitplanes, out, &empty);
    if (start.status != kT1EncodeOk || empty) return start;
    const uint32_t max_mag = t1w_load_block(sh, coeffs, stride, width, height, words, mags);
    start.status =
        t1_encode_plan(max_mag, width, height, num_bitplanes, lowest_plane, out, &start.nbp, &start.num_passes);
    return start;
}

/**
 * Codes one block with a warp: the contract of t1_encode_block, the same
 * outputs. `words` needs t1_stripes(h) * w entries, `mags` 4 * that, both
 * from the caller's scratch; `sh` is the warp's shared workspace. Every lane
 * calls it with the same arguments; the returned status is valid in all
 * lanes, the outputs are written by lane 0.
 */
J2KC_HD uint32_t t1_warp_encode_block(T1WarpShared &sh, const int32_t *coeffs, size_t stride, uint32_t width,
                                      uint32_t height, uint32_t orientation, uint8_t style, uint32_t num_bitplanes,
                                      uint32_t lowest_plane, uint16_t *words, uint32_t *mags,
                                      const T1EncodeScratch &scratch, T1EncodeOutput &out)
{
    const T1WBlockStart start =
        t1w_begin_block(sh, coeffs, stride, width, height, style, num_bitplanes, lowest_plane, words, mags, out);
    if (start.status != kT1EncodeOk || start.num_passes == 0) return start.status;
    const int nbp = start.nbp;
    const uint32_t num_passes = start.num_passes;

    // Lane 0 codes and keeps the segments. Every lane begins the driver (the
    // same zero goes to buf[0]), reads the output's pointer and works out
    // whether a pass ends its segment: values that lane 0's branch alone
    // sets cost registers in every lane, enough to lose a CTA an SM
    // (docs/measurements.md).
    const size_t pass_bound = t1_pass_byte_bound(width, height);
    MqEncoder mq{};
    RawEncoder rawc{};
    uint8_t cx[kT1NumContexts];
    T1WEmit em{};
    uint8_t *const buf = out.buf;
    T1SegmentDriver seg;
    seg.begin(buf);
    T1W_SERIAL { t1_reset_contexts(cx); }
    for (uint32_t pass = 0; pass < num_passes; ++pass) {
        // Lane 0's room check; the verdict goes to all lanes.
        T1W_SERIAL { sh.changed[0] = !seg.begin_pass(pass, style, pass_bound, buf, out.capacity, mq, rawc); }
        T1W_SYNC();
        const bool overflow = sh.changed[0] != 0;
        T1W_SYNC();
        if (overflow) return kT1EncodeOverflow;
        t1w_pass<false>(sh, words, mags, width, height, orientation, style, pass, nbp, mq, rawc, cx, em);
        const bool terminated = t1_pass_ends_segment(pass, num_passes, style);
        T1W_SERIAL
        {
            int64_t sum = 0;
            for (uint32_t k = 0; k < 32; ++k) sum += sh.dist[k];
            t1_record_pass(out, pass, nbp, t1_distortion_shift(num_bitplanes), sum, terminated);
            seg.end_pass(pass, terminated, style, mq, rawc, scratch, out);
        }
        T1W_SYNC();
    }
    T1W_SERIAL { seg.finish(num_passes, out); }
    T1W_SYNC();
    return kT1EncodeOk;
}

}  // namespace t1core
}  // namespace j2kc
