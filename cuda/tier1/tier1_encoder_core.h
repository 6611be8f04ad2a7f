/**
 * @file tier1_encoder_core.h
 * @brief EBCOT Tier-1 of ISO/IEC 15444-1 Annex D (coding passes D.3, run-length
 * and sign coding, the style bits of D.4 to D.7, termination D.4) written once
 * as J2KC_HD code: the CPU reference (tier1_cpu.cpp) and the CUDA encoder
 * (tier1.cu) run these very functions, so the GPU output is byte-identical by
 * construction, not by parallel maintenance.
 *
 * The traversal is templated on the direction (kEnc): the CPU decoder runs the
 * same code with kEnc = false, so the two directions cannot disagree about
 * which sample a pass visits or which context it uses.
 *
 * Per-sample state is a 16-bit flag word (tier1_contexts.h) in a layout where the
 * four samples of a stripe column are adjacent:
 *   flags[(stripe + 1) * ss + (x + 1) * 4 + row], ss = (width + 2) * 4.
 * A zero border of one stripe above and below and one column left and right
 * removes every bounds test, and one 64-bit load sees a whole column, which
 * gives the run-length test and the skip of idle columns for free. The caller
 * owns the memory (t1_state_size entries for flags and for values), so a
 * kernel can place it where it likes.
 *
 * Nothing here allocates, throws or prints: the encoder driver reports
 * problems through T1EncodeStatus and the host wrapper turns them into the
 * J2KC_CHECK_* errors of tier1.h.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "common/host_device.h"
#include "tier1/code_block_limits.h"
#include "tier1/mq_coder.h"
#include "tier1/tier1_contexts.h"

/** Always inlined on both sides: the pass bodies must keep the coder state
 *  of PassRunner in the caller's registers. */
#if defined(__CUDACC__)
#define J2KC_T1_HD __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define J2KC_T1_HD inline __attribute__((always_inline))
#else
#define J2KC_T1_HD inline
#endif

namespace j2kc {
namespace t1core {

/** Style bits (cblk_style in codestream/markers.h, repeated here so device
 *  code needs no host header; tier1_cpu.cpp checks they agree). */
constexpr uint8_t kStyleBypass = 0x01;
constexpr uint8_t kStyleReset = 0x02;
constexpr uint8_t kStyleTermAll = 0x04;
constexpr uint8_t kStyleVerticallyCausal = 0x08;
constexpr uint8_t kStylePredictable = 0x10;
constexpr uint8_t kStyleSegmentation = 0x20;
constexpr uint8_t kStyleHighThroughput = 0x40;

/** Geometry limits (code_block_limits.h). */
constexpr uint32_t kMaxSide = kCodeBlockMaxSide;
constexpr uint32_t kMaxSamples = kCodeBlockMaxSamples;
constexpr uint32_t kMaxBitplanes = kCodeBlockMaxBitplanes;
constexpr uint32_t kMaxPasses = 3 * kMaxBitplanes - 2;

J2KC_T1_HD constexpr uint64_t replicate4(uint16_t v) { return uint64_t{v} * 0x0001000100010001ull; }
constexpr uint64_t kColVisit = replicate4(t1_flag::kVisit);
constexpr uint64_t kColRunLength = replicate4(t1_flag::kSig | t1_flag::kNeighbours);  ///< all zero: run-length mode
constexpr uint64_t kColNeighbours = replicate4(t1_flag::kNeighbours);
constexpr uint64_t kColSig = replicate4(t1_flag::kSig);

/** The four flag words of a stripe column. The column's first index is a
 *  multiple of 4, so with an 8-byte aligned flag array the load is aligned. */
J2KC_T1_HD uint64_t load_column(const uint16_t *p)
{
#if defined(__CUDA_ARCH__)
    return *reinterpret_cast<const uint64_t *>(p);
#else
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
#endif
}
J2KC_T1_HD void store_column(uint16_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    *reinterpret_cast<uint64_t *>(p) = v;
#else
    std::memcpy(p, &v, sizeof(v));
#endif
}

J2KC_T1_HD constexpr uint32_t min_u32(uint32_t a, uint32_t b) { return a < b ? a : b; }

/** Stripes of a block of height h. */
J2KC_T1_HD constexpr uint32_t t1_stripes(uint32_t height) { return (height + 3) / 4; }
/** Flag words (and value words) a block's state needs, border included. */
J2KC_T1_HD constexpr size_t t1_state_size(uint32_t width, uint32_t height)
{
    return size_t{t1_stripes(height) + 2} * ((size_t{width} + 2) * 4);
}

/** State that lives across passes (and, in the encoder, segments). */
template <bool kEnc>
struct BlockState {
    using Mq = std::conditional_t<kEnc, MqEncoder, MqDecoder>;
    using Raw = std::conditional_t<kEnc, RawEncoder, RawDecoder>;

    uint16_t *flags;
    uint32_t *values;  ///< encoder: |q|; decoder: 2M + r (valid once significant)
    uint32_t width, height, stripes, ss;
    uint32_t orientation;
    bool vc;
    uint8_t cx[kT1NumContexts];
    Mq mq;
    Raw raw;
    uint64_t dist;  ///< encoder: this pass's distortion sum before the 2^p factor (two's complement)

    J2KC_T1_HD size_t first_index() const { return ss + 4; }
};

/**
 * The working copy one pass runs on. It is a local of the pass function and
 * never escapes, so the compiler keeps the coder registers and the pointers
 * in registers; the context bytes are a local array for the same reason.
 */
template <bool kEnc, bool kRaw>
struct PassRunner {
    using St = BlockState<kEnc>;
    uint16_t *f;
    uint32_t *v;
    uint32_t orientation;
    ptrdiff_t ss;
    bool vc;
    int p;
    typename St::Mq mq;
    typename St::Raw raw;
    uint64_t dist;
    uint8_t cx[kT1NumContexts];

    J2KC_T1_HD PassRunner(St &st, int plane)
        : f(st.flags), v(st.values), orientation(st.orientation), ss(st.ss), vc(st.vc), p(plane), mq(st.mq),
          raw(st.raw), dist(st.dist)
    {
        for (int k = 0; k < kT1NumContexts; ++k) cx[k] = st.cx[k];
    }
    J2KC_T1_HD void finish(St &st)
    {
        st.mq = mq;
        st.raw = raw;
        st.dist = dist;
        for (int k = 0; k < kT1NumContexts; ++k) st.cx[k] = cx[k];
    }

    J2KC_T1_HD uint32_t zc(uint32_t fl) const { return t1_zc_context(orientation, fl); }

    /** One decision in context `ctx` (encoder: `bit` is coded and returned). */
    J2KC_T1_HD uint32_t code(uint32_t bit, uint32_t ctx)
    {
        if constexpr (kEnc) {
            mq.encode(bit, cx[ctx]);
            return bit;
        } else {
            (void)bit;
            return mq.decode(cx[ctx]);
        }
    }
    J2KC_T1_HD uint32_t code_raw(uint32_t bit)
    {
        if constexpr (kEnc) {
            raw.put(bit);
            return bit;
        } else {
            (void)bit;
            return raw.get();
        }
    }
    J2KC_T1_HD uint32_t bit_of(size_t i) const
    {
        if constexpr (kEnc) return (v[i] >> p) & 1u;
        return 0;
    }

    /** Marks sample i (row R of its stripe) significant and tells its eight
     *  neighbours. With vertically causal contexts the stripe above never
     *  learns of row 0, which is all that mode asks (D.7). */
    template <int R>
    J2KC_T1_HD void set_significant(size_t i, uint32_t neg)
    {
        using namespace t1_flag;
        uint16_t *s = f + i;
        s[0] |= static_cast<uint16_t>(kSig | (neg << 15));
        s[-4] |= static_cast<uint16_t>(kSigE | (neg << 7));
        s[4] |= static_cast<uint16_t>(kSigW | (neg << 6));
        if (R != 0 || !vc) {
            uint16_t *u = s + (R == 0 ? 3 - ss : -1);
            u[0] |= static_cast<uint16_t>(kSigS | (neg << 5));
            u[-4] |= kSigSE;
            u[4] |= kSigSW;
        }
        uint16_t *d = s + (R == 3 ? ss - 3 : 1);
        d[0] |= static_cast<uint16_t>(kSigN | (neg << 4));
        d[-4] |= kSigNE;
        d[4] |= kSigNW;
    }

    /** Sign decision and significance for a sample whose bit p is 1. */
    template <int R>
    J2KC_T1_HD void becomes_significant(size_t i)
    {
        uint32_t neg;
        if constexpr (kRaw) {
            neg = code_raw(kEnc ? (f[i] >> 15) & 1u : 0);
        } else {
            const uint32_t e = t1_sc_lookup(f[i]);
            const uint32_t x = e >> 7;
            neg = code(kEnc ? ((f[i] >> 15) & 1u) ^ x : 0, e & 0x1Fu) ^ x;
        }
        if constexpr (kEnc) {
            dist += static_cast<uint64_t>(t1_dist_significance(v[i], p));
        } else {
            v[i] = 3u << p;
        }
        set_significant<R>(i, neg);
    }

    /** Significance propagation (D.3.1) for one sample. */
    template <int R>
    J2KC_T1_HD void spp_sample(size_t i)
    {
        using namespace t1_flag;
        const uint32_t fl = f[i];
        if ((fl & kSig) || !(fl & kNeighbours)) return;
        uint32_t bit;
        if constexpr (kRaw)
            bit = code_raw(bit_of(i));
        else
            bit = code(bit_of(i), zc(fl));
        f[i] = static_cast<uint16_t>(fl | kVisit);
        if (bit) becomes_significant<R>(i);
    }

    /** Magnitude refinement (D.3.3) for one sample. */
    J2KC_T1_HD void mrp_sample(size_t i)
    {
        using namespace t1_flag;
        const uint32_t fl = f[i];
        if ((fl & (kSig | kVisit)) != kSig) return;
        uint32_t bit;
        if constexpr (kRaw)
            bit = code_raw(bit_of(i));
        else
            bit = code(bit_of(i), t1_mr_context(fl));
        f[i] = static_cast<uint16_t>(fl | kRefined);
        if constexpr (kEnc) {
            dist += static_cast<uint64_t>(t1_dist_refinement(v[i], p));
        } else {
            v[i] = v[i] - (1u << p) + (bit << (p + 1));
        }
    }

    /** Cleanup (D.3.4) for one sample outside a run. */
    template <int R>
    J2KC_T1_HD void cup_sample(size_t i)
    {
        using namespace t1_flag;
        const uint32_t fl = f[i];
        if (fl & (kSig | kVisit)) return;
        if (code(bit_of(i), zc(fl))) becomes_significant<R>(i);
    }

    /** Rows `from`..3 of a column with cleanup, R a compile-time row. */
    J2KC_T1_HD void cup_rows_from(size_t i, int from)
    {
        switch (from) {
        case 0: cup_sample<0>(i); [[fallthrough]];
        case 1: cup_sample<1>(i + 1); [[fallthrough]];
        case 2: cup_sample<2>(i + 2); [[fallthrough]];
        case 3: cup_sample<3>(i + 3); [[fallthrough]];
        default: break;
        }
    }
};

/** Significance propagation pass (D.3.1) at plane p. */
template <bool kEnc, bool kRaw>
J2KC_T1_HD void pass_spp(BlockState<kEnc> &st, int p)
{
    PassRunner<kEnc, kRaw> r(st, p);
    const uint32_t w = st.width;
    for (uint32_t s = 0; s < st.stripes; ++s) {
        const uint32_t rows = min_u32(4, st.height - 4 * s);
        size_t i = st.first_index() + size_t{s} * st.ss;
        if (rows == 4) {
            for (uint32_t x = 0; x < w; ++x, i += 4) {
                if ((load_column(r.f + i) & kColNeighbours) == 0) continue;
                r.template spp_sample<0>(i);
                r.template spp_sample<1>(i + 1);
                r.template spp_sample<2>(i + 2);
                r.template spp_sample<3>(i + 3);
            }
        } else {
            for (uint32_t x = 0; x < w; ++x, i += 4) {
                r.template spp_sample<0>(i);
                if (rows > 1) r.template spp_sample<1>(i + 1);
                if (rows > 2) r.template spp_sample<2>(i + 2);
            }
        }
    }
    r.finish(st);
}

/** Magnitude refinement pass (D.3.3) at plane p. */
template <bool kEnc, bool kRaw>
J2KC_T1_HD void pass_mrp(BlockState<kEnc> &st, int p)
{
    PassRunner<kEnc, kRaw> r(st, p);
    const uint32_t w = st.width;
    for (uint32_t s = 0; s < st.stripes; ++s) {
        const uint32_t rows = min_u32(4, st.height - 4 * s);
        size_t i = st.first_index() + size_t{s} * st.ss;
        for (uint32_t x = 0; x < w; ++x, i += 4) {
            if ((load_column(r.f + i) & kColSig) == 0) continue;
            r.mrp_sample(i);
            if (rows > 1) r.mrp_sample(i + 1);
            if (rows > 2) r.mrp_sample(i + 2);
            if (rows > 3) r.mrp_sample(i + 3);
        }
    }
    r.finish(st);
}

/** Cleanup pass (D.3.4) at plane p, with the segmentation symbols of D.5. */
template <bool kEnc>
J2KC_T1_HD void pass_cup(BlockState<kEnc> &st, int p, bool segmentation_symbols)
{
    PassRunner<kEnc, false> r(st, p);
    const uint32_t w = st.width;
    for (uint32_t s = 0; s < st.stripes; ++s) {
        const uint32_t rows = min_u32(4, st.height - 4 * s);
        size_t i = st.first_index() + size_t{s} * st.ss;
        if (rows == 4) {
            for (uint32_t x = 0; x < w; ++x, i += 4) {
                const uint64_t col = load_column(r.f + i);
                if ((col & kColRunLength) == 0) {
                    // Run-length mode: four insignificant samples, all with
                    // zero context (so none was visited by the SPP).
                    int first = 4;
                    if constexpr (kEnc) {
                        for (int k = 3; k >= 0; --k)
                            if (r.bit_of(i + k)) first = k;
                    }
                    if (!r.code(first < 4, kT1CtxRl)) continue;
                    const uint32_t hi = r.code(static_cast<uint32_t>(first) >> 1, kT1CtxUni);
                    const uint32_t lo = r.code(static_cast<uint32_t>(first) & 1u, kT1CtxUni);
                    first = static_cast<int>(hi * 2 + lo);
                    switch (first) {
                    case 0: r.template becomes_significant<0>(i); break;
                    case 1: r.template becomes_significant<1>(i + 1); break;
                    case 2: r.template becomes_significant<2>(i + 2); break;
                    default: r.template becomes_significant<3>(i + 3); break;
                    }
                    r.cup_rows_from(i, first + 1);
                } else {
                    r.cup_rows_from(i, 0);
                    store_column(r.f + i, load_column(r.f + i) & ~kColVisit);
                }
            }
        } else {
            // No run-length coding in a stripe of fewer than four rows.
            for (uint32_t x = 0; x < w; ++x, i += 4) {
                r.template cup_sample<0>(i);
                if (rows > 1) r.template cup_sample<1>(i + 1);
                if (rows > 2) r.template cup_sample<2>(i + 2);
                store_column(r.f + i, load_column(r.f + i) & ~kColVisit);
            }
        }
    }
    if (segmentation_symbols) {  // D.5: 1010 in the uniform context
        r.code(1, kT1CtxUni);
        r.code(0, kT1CtxUni);
        r.code(1, kT1CtxUni);
        r.code(0, kT1CtxUni);
    }
    r.finish(st);
}

/** Runs coding pass `pass` of a block with `nbp` coded planes. */
template <bool kEnc>
J2KC_T1_HD void run_pass(BlockState<kEnc> &st, uint32_t pass, int nbp, uint8_t style)
{
    const int p = t1_pass_bitplane(pass, nbp);
    const bool raw = t1_pass_is_raw(pass, style);
    if ((style & kStyleReset) && pass > 0) t1_reset_contexts(st.cx);
    switch (t1_pass_type(pass)) {
    case 0:
        if (raw)
            pass_spp<kEnc, true>(st, p);
        else
            pass_spp<kEnc, false>(st, p);
        break;
    case 1:
        if (raw)
            pass_mrp<kEnc, true>(st, p);
        else
            pass_mrp<kEnc, false>(st, p);
        break;
    default: pass_cup<kEnc>(st, p, (style & kStyleSegmentation) != 0); break;
    }
}

/**
 * Points `st` at caller-owned state arrays of t1_state_size(width, height)
 * entries (flags 8-byte aligned) and clears the flags. Values are written by
 * the encoder's load (every sample) and by the decoder before use.
 */
template <bool kEnc>
J2KC_T1_HD void prepare_block(BlockState<kEnc> &st, uint16_t *flags, uint32_t *values, uint32_t width, uint32_t height,
                              uint32_t orientation, uint8_t style)
{
    st.width = width;
    st.height = height;
    st.stripes = t1_stripes(height);
    st.ss = (width + 2) * 4;
    const size_t size = t1_state_size(width, height);
#if defined(__CUDA_ARCH__)
    uint64_t *f64 = reinterpret_cast<uint64_t *>(flags);  // size is a multiple of 4
    for (size_t k = 0; k < size / 4; ++k) f64[k] = 0;
#else
    std::memset(flags, 0, size * sizeof(uint16_t));
#endif
    st.flags = flags;
    st.values = values;
    st.orientation = orientation & 3u;
    st.vc = (style & kStyleVerticallyCausal) != 0;
    t1_reset_contexts(st.cx);
    st.dist = 0;
}

// ------------------------------------------------------------------ encoder

/** Outcome of t1_encode_block. */
enum T1EncodeStatus : uint32_t {
    kT1EncodeOk = 0,
    kT1EncodeBadGeometry = 1,   ///< a side above 1024 or more than 4096 samples
    kT1EncodeBadBitplanes = 2,  ///< num_bitplanes above 30
    kT1EncodeUnsupported = 3,   ///< HT style bit
    kT1EncodeDataTooDeep = 4,   ///< a coefficient needs more than num_bitplanes planes
    kT1EncodeOverflow = 5,      ///< the output buffer could not be shown to suffice
};

/**
 * Upper bound on the bytes one coding pass adds to a block's stream,
 * termination included. A pass codes each sample's bit at most once and
 * each sign at most once; run-length coding adds at most 3 decisions per
 * column of 4 and segmentation symbols 4: at most 3N + 4 decisions. One MQ
 * decision renormalises by at most 15 bits (Qe >= 1), a raw one writes 1 bit,
 * and a byte leaves for every 7 bits at worst (bit stuffing); a termination
 * adds at most 5 bytes and may write one scratch byte beyond its end.
 */
J2KC_T1_HD constexpr size_t t1_pass_byte_bound(uint32_t width, uint32_t height)
{
    return (15 * (3 * size_t{width} * height + 4) + 6) / 7 + 8;
}

/**
 * Buffer size (the dummy byte before the stream included) that makes
 * t1_encode_block never report kT1EncodeOverflow for a block of these sides
 * and at most `num_bitplanes` planes. Over a whole bit-plane a sample's bit is
 * coded in exactly one pass or covered by a run-length decision (at most 6
 * decisions per column of 4 in cleanup), signs once per block: at most
 * nbp * (3N/2 + 4) + N decisions, 15 bits each, plus 6 bytes per segment.
 * The encoder checks, before each pass, that the bytes so far plus
 * t1_pass_byte_bound still fit; that holds under this bound.
 */
J2KC_T1_HD constexpr size_t t1_encode_buffer_bound(uint32_t width, uint32_t height, uint32_t num_bitplanes)
{
    const size_t n = size_t{width} * height;
    const size_t decisions = size_t{num_bitplanes} * ((3 * n + 1) / 2 + 4) + n;
    const size_t segments = num_bitplanes == 0 ? 0 : 3 * size_t{num_bitplanes} - 2;
    return 1 + (15 * decisions + 6) / 7 + 6 * segments + t1_pass_byte_bound(width, height);
}

/** Caller-owned scratch of one t1_encode_block call. */
struct T1EncodeScratch {
    uint16_t *flags;            ///< t1_state_size entries, 8-byte aligned
    uint32_t *values;           ///< t1_state_size entries
    MqPassSnapshot *snapshots;  ///< kMaxPasses entries (only up to the block's pass count are used)
    uint32_t *raw_ends;         ///< kMaxPasses entries
};

/** Where t1_encode_block puts its results. */
struct T1EncodeOutput {
    uint8_t *buf;               ///< buf[0]: dummy byte (set to 0); the stream starts at buf + 1
    size_t capacity;            ///< bytes of buf, the dummy included
    uint32_t *pass_end;         ///< per pass (3 * nbp - 2 entries): PassInfo::end
    uint64_t *pass_distortion;  ///< per pass: PassInfo::distortion
    uint8_t *pass_terminated;   ///< per pass: PassInfo::terminated (0/1)
    // results
    uint32_t num_passes;
    uint32_t bytes;  ///< stream length (from buf + 1)
    uint8_t zero_bitplanes;
    uint8_t data_bitplanes;  ///< planes the data needs (for kT1EncodeDataTooDeep)
};

/**
 * The checks every block encoder (serial, warp, two-phase) starts with, in
 * one order, after resetting the outputs it owns. kT1EncodeOk with *empty
 * set: a block without samples, nothing to code.
 */
J2KC_HD uint32_t t1_encode_check(uint32_t width, uint32_t height, uint8_t style, uint32_t num_bitplanes,
                                 T1EncodeOutput &out, bool *empty)
{
    out.num_passes = 0;
    out.bytes = 0;
    out.zero_bitplanes = static_cast<uint8_t>(num_bitplanes);
    out.data_bitplanes = 0;
    *empty = false;
    if (width > kMaxSide || height > kMaxSide || uint64_t{width} * height > kMaxSamples) return kT1EncodeBadGeometry;
    if (num_bitplanes > kMaxBitplanes) return kT1EncodeBadBitplanes;
    if (style & kStyleHighThroughput) return kT1EncodeUnsupported;
    *empty = width == 0 || height == 0;
    return kT1EncodeOk;
}

/** Bit-planes the largest magnitude needs, in *nbp and out.data_bitplanes;
 *  kT1EncodeDataTooDeep beyond num_bitplanes. */
J2KC_HD uint32_t t1_data_bitplanes(uint32_t max_mag, uint32_t num_bitplanes, T1EncodeOutput &out, int *nbp)
{
    int n = 0;
    while (n < 32 && (max_mag >> n) != 0) ++n;
    *nbp = n;
    out.data_bitplanes = static_cast<uint8_t>(n);
    return n > static_cast<int>(num_bitplanes) ? kT1EncodeDataTooDeep : kT1EncodeOk;
}

/**
 * Passes of a block whose data needs `nbp` planes when planes under
 * `lowest_plane` are left out (tier1_plane_floor.h): from the cleanup of
 * plane nbp - 1 to that of lowest_plane; none when the data lies below it.
 */
J2KC_HD uint32_t t1_num_passes(int nbp, uint32_t lowest_plane)
{
    const uint32_t planes = static_cast<uint32_t>(nbp);
    return planes > lowest_plane ? 3 * (planes - lowest_plane) - 2 : 0;
}

/**
 * After the block is loaded: the bit-planes its data needs (*nbp), the passes
 * they make down to `lowest_plane` (*num_passes), the zero bit-planes, and
 * the verdict that not even one pass fits the output. kT1EncodeOk with
 * *num_passes 0: an all-zero block, or one with nothing at or above
 * lowest_plane.
 */
J2KC_HD uint32_t t1_encode_plan(uint32_t max_mag, uint32_t width, uint32_t height, uint32_t num_bitplanes,
                                uint32_t lowest_plane, T1EncodeOutput &out, int *nbp, uint32_t *num_passes)
{
    *nbp = 0;
    *num_passes = 0;
    if (max_mag == 0) return kT1EncodeOk;
    if (const uint32_t deep = t1_data_bitplanes(max_mag, num_bitplanes, out, nbp)) return deep;
    out.zero_bitplanes = static_cast<uint8_t>(num_bitplanes - static_cast<uint32_t>(*nbp));
    if (out.capacity < 1 + t1_pass_byte_bound(width, height)) return kT1EncodeOverflow;
    *num_passes = t1_num_passes(*nbp, lowest_plane);
    return kT1EncodeOk;
}

/** Whether pass `pass` of `num_passes` ends its codeword segment (the last
 *  one always does). */
J2KC_HD bool t1_pass_ends_segment(uint32_t pass, uint32_t num_passes, uint8_t style)
{
    return pass + 1 == num_passes || t1_pass_is_terminated(pass, style);
}

/** A pass's distortion decrease (from its sum before the 2^p factor; `shift`
 *  the block's t1_distortion_shift) and whether it ends its codeword
 *  segment, into `out`. */
J2KC_HD void t1_record_pass(T1EncodeOutput &out, uint32_t pass, int nbp, int shift, int64_t dist_sum, bool terminated)
{
    out.pass_distortion[pass] = t1_pass_distortion(dist_sum, t1_pass_bitplane(pass, nbp), shift);
    out.pass_terminated[pass] = terminated ? 1 : 0;
}

/**
 * The codeword segments of one block (D.4 termination, D.6 bypass): when a
 * segment opens and with which coder, the room check before every pass, the
 * termination, the truncation point of every pass of a finished segment, and
 * the final lengths. Every block encoder (the serial one below, the warp
 * coder, the two-phase coder's second phase) drives its own MqEncoder and
 * RawEncoder through this one object at pass boundaries and codes the passes
 * its own way in between; so the bytes, the lengths and the truncation
 * points cannot differ between them.
 *
 * It holds only the segment's own state; what the block fixes (the output,
 * its style, the pass bound) comes with each call from the caller's
 * registers. The warp coder runs the bookkeeping in lane 0 alone, and every
 * value that only lane 0 sets or reads costs a register in every lane of
 * its kernel.
 */
struct T1SegmentDriver {
    uint32_t seg_start;   ///< buffer position of the current (or next) segment
    uint32_t first_pass;  ///< the open segment's first pass
    bool open;            ///< a segment is open
    bool raw;             ///< the open segment is a raw one

    /** Starts the block's stream in buf (writes the dummy byte before it). */
    J2KC_HD void begin(uint8_t *buf)
    {
        seg_start = 1;
        first_pass = 0;
        open = false;
        raw = false;
        buf[0] = 0;  // MqEncoder::init reads the byte before a segment
    }

    /**
     * Before pass `pass`: false if the bytes so far plus what one pass can
     * add (`pass_bound`, t1_pass_byte_bound) might not fit the `capacity`
     * bytes of `buf` (kT1EncodeOverflow); otherwise opens a segment, raw or
     * MQ as the pass is, when none is open.
     */
    J2KC_HD bool begin_pass(uint32_t pass, uint8_t style, size_t pass_bound, uint8_t *buf, size_t capacity,
                            MqEncoder &mq, RawEncoder &rawc)
    {
        const size_t used = open ? (raw ? static_cast<size_t>(rawc.bp - buf) + 1 : mq.used()) : seg_start;
        if (used + pass_bound > capacity) return false;
        if (!open) {
            raw = t1_pass_is_raw(pass, style);
            if (raw)
                rawc.init(buf + seg_start);
            else
                mq.init(buf, static_cast<int32_t>(seg_start));
            open = true;
            first_pass = pass;
        }
        return true;
    }

    /**
     * After pass `pass`: a pass that does not end its segment leaves what
     * its truncation point will be found from; one that does (`terminated`,
     * t1_pass_ends_segment) terminates the segment, whose bytes are then
     * final, and sets the truncation points of all its passes.
     */
    J2KC_HD void end_pass(uint32_t pass, bool terminated, uint8_t style, MqEncoder &mq, RawEncoder &rawc,
                          const T1EncodeScratch &scratch, T1EncodeOutput &out)
    {
        if (!terminated) {
            if (raw)
                scratch.raw_ends[pass] = rawc.bytes_needed();
            else
                scratch.snapshots[pass] = mq.snapshot();
            return;
        }
        const bool predictable = (style & kStylePredictable) != 0;
        const uint32_t length = raw ? rawc.flush(predictable) : (predictable ? mq.flush_predictable() : mq.flush());
        const uint8_t *seg = out.buf + seg_start;
        for (uint32_t q = first_pass; q < pass; ++q) {
            const uint32_t needed = raw ? scratch.raw_ends[q] : mq_truncation_length(scratch.snapshots[q], seg, length);
            out.pass_end[q] = seg_start - 1 + segment_truncation_point(needed, seg, length);
        }
        seg_start += length;
        out.pass_end[pass] = seg_start - 1;
        open = false;
    }

    /** After the last of `num_passes` passes: the block's pass count and
     *  length. Truncation points never decrease (a longer prefix is always
     *  safe). */
    J2KC_HD void finish(uint32_t num_passes, T1EncodeOutput &out) const
    {
        for (uint32_t q = 1; q < num_passes; ++q)
            if (out.pass_end[q] < out.pass_end[q - 1]) out.pass_end[q] = out.pass_end[q - 1];
        out.num_passes = num_passes;
        out.bytes = seg_start - 1;
    }
};

/**
 * Codes one code-block down to plane `lowest_plane`: the body of
 * encode_code_block (tier1.h gives the contract) for any memory the caller
 * chooses. On a status other than kT1EncodeOk the outputs are unspecified
 * except data_bitplanes.
 */
J2KC_HD uint32_t t1_encode_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                                 uint32_t orientation, uint8_t style, uint32_t num_bitplanes,
                                 const T1EncodeScratch &scratch, T1EncodeOutput &out, uint32_t lowest_plane = 0)
{
    bool empty = false;
    const uint32_t check = t1_encode_check(width, height, style, num_bitplanes, out, &empty);
    if (check != kT1EncodeOk || empty) return check;

    BlockState<true> st;
    prepare_block(st, scratch.flags, scratch.values, width, height, orientation, style);

    uint32_t max_mag = 0;
    for (uint32_t y = 0; y < height; ++y) {
        const int32_t *row = coeffs + y * stride;
        size_t i = st.first_index() + size_t{y >> 2} * st.ss + (y & 3);
        for (uint32_t x = 0; x < width; ++x, i += 4) {
            const int32_t q = row[x];
            const uint32_t mag = q < 0 ? 0u - static_cast<uint32_t>(q) : static_cast<uint32_t>(q);
            st.values[i] = mag;
            st.flags[i] = q < 0 ? t1_flag::kNeg : 0;
            max_mag |= mag;
        }
    }
    int nbp = 0;
    uint32_t num_passes = 0;
    const uint32_t plan = t1_encode_plan(max_mag, width, height, num_bitplanes, lowest_plane, out, &nbp, &num_passes);
    if (plan != kT1EncodeOk || num_passes == 0) return plan;

    const size_t pass_bound = t1_pass_byte_bound(width, height);
    const int shift = t1_distortion_shift(num_bitplanes);
    T1SegmentDriver seg;
    seg.begin(out.buf);
    for (uint32_t pass = 0; pass < num_passes; ++pass) {
        if (!seg.begin_pass(pass, style, pass_bound, out.buf, out.capacity, st.mq, st.raw)) return kT1EncodeOverflow;
        st.dist = 0;
        run_pass(st, pass, nbp, style);
        const bool terminated = t1_pass_ends_segment(pass, num_passes, style);
        t1_record_pass(out, pass, nbp, shift, static_cast<int64_t>(st.dist), terminated);
        seg.end_pass(pass, terminated, style, st.mq, st.raw, scratch, out);
    }
    seg.finish(num_passes, out);
    return kT1EncodeOk;
}

}  // namespace t1core
}  // namespace j2kc
