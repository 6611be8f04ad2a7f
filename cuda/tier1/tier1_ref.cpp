/**
 * @file tier1_ref.cpp
 * @brief EBCOT Tier-1 of ISO/IEC 15444-1 Annex D on the CPU: the encoder
 * (reference for the CUDA coder) and the production decoder.
 *
 * Both directions share one traversal (D.3 scan order: stripes of four rows,
 * columns left to right, rows top to bottom), so they cannot disagree about
 * which sample a pass visits. Per-sample state is a 16-bit flag word
 * (t1_contexts.h) in a layout where the four samples of a stripe column are
 * adjacent: flags[(stripe + 1) * ss + (x + 1) * 4 + row], ss = (width + 2) * 4.
 * A zero border of one stripe above and below and one column left and right
 * removes every bounds test, and one 64-bit load sees a whole column, which
 * gives the run-length test and the skip of idle columns for free.
 */
#include "tier1/tier1.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "codestream/markers.h"
#include "common/int_math.h"
#include "common/status.h"
#include "tier1/mq_coder.h"
#include "tier1/t1_contexts.h"

#if defined(__GNUC__)
#define J2KC_T1_INLINE inline __attribute__((always_inline))
#else
#define J2KC_T1_INLINE inline
#endif

namespace j2kc {
namespace {

using namespace t1_flag;

constexpr uint64_t replicate4(uint16_t v)
{
    return uint64_t{v} * 0x0001000100010001ull;
}
constexpr uint64_t kColVisit = replicate4(kVisit);
constexpr uint64_t kColRunLength = replicate4(kSig | kNeighbours);  ///< all zero: run-length mode
constexpr uint64_t kColNeighbours = replicate4(kNeighbours);
constexpr uint64_t kColSig = replicate4(kSig);

J2KC_T1_INLINE uint64_t load_column(const uint16_t *p)
{
    uint64_t v;
    std::memcpy(&v, p, sizeof(v));
    return v;
}
J2KC_T1_INLINE void store_column(uint16_t *p, uint64_t v) { std::memcpy(p, &v, sizeof(v)); }

/** State that lives across passes (and, in the encoder, segments). */
template <bool kEnc>
struct BlockState {
    using Mq = std::conditional_t<kEnc, MqEncoder, MqDecoder>;
    using Raw = std::conditional_t<kEnc, RawEncoder, RawDecoder>;

    uint16_t *flags = nullptr;
    uint32_t *values = nullptr;  ///< encoder: |q|; decoder: 2M + r (valid once significant)
    uint32_t width = 0, height = 0, stripes = 0, ss = 0;
    const uint8_t *zc = nullptr;
    bool vc = false;
    uint8_t cx[kT1NumContexts];
    Mq mq{};
    Raw raw{};
    uint64_t dist = 0;  ///< encoder: this pass's distortion sum before the 2^p factor (two's complement)

    size_t first_index() const { return ss + 4; }
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
    const uint8_t *zc;
    ptrdiff_t ss;
    bool vc;
    int p;
    typename St::Mq mq;
    typename St::Raw raw;
    uint64_t dist;
    uint8_t cx[kT1NumContexts];

    J2KC_T1_INLINE PassRunner(St &st, int plane)
        : f(st.flags), v(st.values), zc(st.zc), ss(st.ss), vc(st.vc), p(plane), mq(st.mq),
          raw(st.raw), dist(st.dist)
    {
        std::memcpy(cx, st.cx, sizeof(cx));
    }
    J2KC_T1_INLINE void finish(St &st)
    {
        st.mq = mq;
        st.raw = raw;
        st.dist = dist;
        std::memcpy(st.cx, cx, sizeof(cx));
    }

    /** One decision in context `ctx` (encoder: `bit` is coded and returned). */
    J2KC_T1_INLINE uint32_t code(uint32_t bit, uint32_t ctx)
    {
        if constexpr (kEnc) {
            mq.encode(bit, cx[ctx]);
            return bit;
        } else {
            (void)bit;
            return mq.decode(cx[ctx]);
        }
    }
    J2KC_T1_INLINE uint32_t code_raw(uint32_t bit)
    {
        if constexpr (kEnc) {
            raw.put(bit);
            return bit;
        } else {
            (void)bit;
            return raw.get();
        }
    }
    J2KC_T1_INLINE uint32_t bit_of(size_t i) const
    {
        if constexpr (kEnc) return (v[i] >> p) & 1u;
        return 0;
    }

    /** Marks sample i (row R of its stripe) significant and tells its eight
     *  neighbours. With vertically causal contexts the stripe above never
     *  learns of row 0, which is all that mode asks (D.7). */
    template <int R>
    J2KC_T1_INLINE void set_significant(size_t i, uint32_t neg)
    {
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
    J2KC_T1_INLINE void becomes_significant(size_t i)
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
    J2KC_T1_INLINE void spp_sample(size_t i)
    {
        const uint32_t fl = f[i];
        if ((fl & kSig) || !(fl & kNeighbours)) return;
        uint32_t bit;
        if constexpr (kRaw) bit = code_raw(bit_of(i));
        else bit = code(bit_of(i), zc[t1_zc_index(fl)]);
        f[i] = static_cast<uint16_t>(fl | kVisit);
        if (bit) becomes_significant<R>(i);
    }

    /** Magnitude refinement (D.3.3) for one sample. */
    J2KC_T1_INLINE void mrp_sample(size_t i)
    {
        const uint32_t fl = f[i];
        if ((fl & (kSig | kVisit)) != kSig) return;
        uint32_t bit;
        if constexpr (kRaw) bit = code_raw(bit_of(i));
        else bit = code(bit_of(i), t1_mr_context(fl));
        f[i] = static_cast<uint16_t>(fl | kRefined);
        if constexpr (kEnc) {
            dist += static_cast<uint64_t>(t1_dist_refinement(v[i], p));
        } else {
            v[i] = v[i] - (1u << p) + (bit << (p + 1));
        }
    }

    /** Cleanup (D.3.4) for one sample outside a run. */
    template <int R>
    J2KC_T1_INLINE void cup_sample(size_t i)
    {
        const uint32_t fl = f[i];
        if (fl & (kSig | kVisit)) return;
        if (code(bit_of(i), zc[t1_zc_index(fl)])) becomes_significant<R>(i);
    }

    /** Rows `from`..rows-1 of a column with cleanup, R a compile-time row. */
    J2KC_T1_INLINE void cup_rows_from(size_t i, int from)
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

/** Row r (0..2) of a partial stripe through the compile-time row variants. */
template <typename Fn>
J2KC_T1_INLINE void for_partial_rows(uint32_t rows, Fn &&fn)
{
    fn(std::integral_constant<int, 0>{});
    if (rows > 1) fn(std::integral_constant<int, 1>{});
    if (rows > 2) fn(std::integral_constant<int, 2>{});
}

template <bool kEnc, bool kRaw>
void pass_spp(BlockState<kEnc> &st, int p)
{
    PassRunner<kEnc, kRaw> r(st, p);
    const uint32_t w = st.width;
    for (uint32_t s = 0; s < st.stripes; ++s) {
        const uint32_t rows = std::min<uint32_t>(4, st.height - 4 * s);
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
                for_partial_rows(rows, [&](auto row) {
                    r.template spp_sample<decltype(row)::value>(i + decltype(row)::value);
                });
            }
        }
    }
    r.finish(st);
}

template <bool kEnc, bool kRaw>
void pass_mrp(BlockState<kEnc> &st, int p)
{
    PassRunner<kEnc, kRaw> r(st, p);
    const uint32_t w = st.width;
    for (uint32_t s = 0; s < st.stripes; ++s) {
        const uint32_t rows = std::min<uint32_t>(4, st.height - 4 * s);
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

template <bool kEnc>
void pass_cup(BlockState<kEnc> &st, int p, bool segmentation_symbols)
{
    PassRunner<kEnc, false> r(st, p);
    const uint32_t w = st.width;
    for (uint32_t s = 0; s < st.stripes; ++s) {
        const uint32_t rows = std::min<uint32_t>(4, st.height - 4 * s);
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
                for_partial_rows(rows, [&](auto row) {
                    r.template cup_sample<decltype(row)::value>(i + decltype(row)::value);
                });
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
void run_pass(BlockState<kEnc> &st, uint32_t pass, int nbp, uint8_t style)
{
    const int p = t1_pass_bitplane(pass, nbp);
    const bool raw = t1_pass_is_raw(pass, style);
    if ((style & cblk_style::kReset) && pass > 0) t1_reset_contexts(st.cx);
    switch (t1_pass_type(pass)) {
    case 0:
        if (raw) pass_spp<kEnc, true>(st, p); else pass_spp<kEnc, false>(st, p);
        break;
    case 1:
        if (raw) pass_mrp<kEnc, true>(st, p); else pass_mrp<kEnc, false>(st, p);
        break;
    default:
        pass_cup<kEnc>(st, p, (style & cblk_style::kSegmentationSymbols) != 0);
        break;
    }
}

/** Sizes (without shrinking) and clears the flag array for a block. */
template <bool kEnc>
void prepare_block(BlockState<kEnc> &st, std::vector<uint16_t> &flags, std::vector<uint32_t> &values,
                   uint32_t width, uint32_t height, BandOrientation orientation, uint8_t style)
{
    st.width = width;
    st.height = height;
    st.stripes = ceil_div(height, 4);
    st.ss = (width + 2) * 4;
    const size_t size = size_t{st.stripes + 2} * st.ss;
    if (flags.size() < size) flags.resize(size);
    if (values.size() < size) values.resize(size);
    std::memset(flags.data(), 0, size * sizeof(uint16_t));
    st.flags = flags.data();
    st.values = values.data();
    st.zc = kT1ZcTable.t[orientation & 3];
    st.vc = (style & cblk_style::kVerticallyCausal) != 0;
    t1_reset_contexts(st.cx);
}

void check_geometry(uint32_t width, uint32_t height)
{
    J2KC_CHECK_ARG(width <= kTier1MaxSide && height <= kTier1MaxSide &&
                       uint64_t{width} * height <= kTier1MaxSamples,
                   "code-block %ux%u exceeds 1024 per side or 4096 samples", width, height);
}

struct EncoderScratch {
    std::vector<uint16_t> flags;
    std::vector<uint32_t> values;
    std::vector<uint8_t> buf;
    std::vector<MqPassSnapshot> snapshots;  ///< per pass (valid for non-terminated MQ passes)
    std::vector<uint32_t> raw_ends;         ///< per pass: raw bytes needed, from the segment start
};

}  // namespace

void encode_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                       const Tier1EncodeParams &params, EncodedCodeBlock &out)
{
    check_geometry(width, height);
    J2KC_CHECK_ARG(params.num_bitplanes <= kTier1MaxBitplanes, "%u bit-planes exceed %u",
                   params.num_bitplanes, kTier1MaxBitplanes);
    J2KC_CHECK_SUPPORTED(!(params.style & cblk_style::kHighThroughput),
                         "HT code-blocks are not supported");
    out.data.clear();
    out.passes.clear();
    out.zero_bitplanes = params.num_bitplanes;
    if (width == 0 || height == 0) return;

    thread_local EncoderScratch scratch;
    BlockState<true> st;
    prepare_block(st, scratch.flags, scratch.values, width, height, params.orientation, params.style);

    uint32_t max_mag = 0;
    for (uint32_t y = 0; y < height; ++y) {
        const int32_t *row = coeffs + y * stride;
        size_t i = st.first_index() + size_t{y >> 2} * st.ss + (y & 3);
        for (uint32_t x = 0; x < width; ++x, i += 4) {
            const int32_t q = row[x];
            const uint32_t mag = q < 0 ? 0u - static_cast<uint32_t>(q) : static_cast<uint32_t>(q);
            st.values[i] = mag;
            st.flags[i] = q < 0 ? kNeg : 0;
            max_mag |= mag;
        }
    }
    if (max_mag == 0) return;
    const int nbp = floor_log2(max_mag) + 1;
    J2KC_CHECK_ARG(nbp <= params.num_bitplanes, "coefficient needs %d bit-planes, band has %u", nbp,
                   params.num_bitplanes);
    out.zero_bitplanes = static_cast<uint8_t>(params.num_bitplanes - nbp);
    const uint32_t num_passes = 3 * static_cast<uint32_t>(nbp) - 2;
    out.passes.resize(num_passes);

    const uint8_t style = params.style;
    const bool predictable = (style & cblk_style::kPredictableTermination) != 0;
    // Worst case of one pass: every sample codes significance and sign, with
    // run-length decisions, at up to 15 renormalisation shifts a decision.
    const size_t pass_bound = size_t{width} * height * 8 + 64;
    std::vector<uint8_t> &buf = scratch.buf;  // buf[0] is the dummy byte before the stream
    if (buf.size() < 1 + pass_bound) buf.resize(1 + pass_bound);
    buf[0] = 0;
    scratch.snapshots.resize(num_passes);
    scratch.raw_ends.resize(num_passes);

    size_t seg_start = 1;  // buffer position of the current segment
    bool segment_open = false;
    bool segment_raw = false;
    uint32_t seg_first_pass = 0;
    for (uint32_t pass = 0; pass < num_passes; ++pass) {
        const bool raw = t1_pass_is_raw(pass, style);
        // Keep room for this pass; the coder's pointers follow the buffer.
        const size_t used = segment_open ? static_cast<size_t>((segment_raw ? st.raw.bp : st.mq.bp) -
                                                               buf.data()) + 1
                                         : seg_start;
        if (buf.size() < used + pass_bound) {
            const uint8_t *old = buf.data();
            buf.resize(std::max(buf.size() * 2, used + pass_bound));
            const ptrdiff_t delta = buf.data() - old;
            st.mq.bp += delta;
            st.mq.start += delta;
            st.raw.bp += delta;
            st.raw.start += delta;
        }
        if (!segment_open) {
            if (raw) st.raw.init(buf.data() + seg_start);
            else st.mq.init(buf.data() + seg_start);
            segment_open = true;
            segment_raw = raw;
            seg_first_pass = pass;
        }
        st.dist = 0;
        run_pass(st, pass, nbp, style);

        PassInfo &info = out.passes[pass];
        const int p = t1_pass_bitplane(pass, nbp);
        info.distortion = t1_pass_distortion(static_cast<int64_t>(st.dist), p);
        const bool last = pass + 1 == num_passes;
        info.terminated = last || t1_pass_is_terminated(pass, style);
        if (!info.terminated) {
            if (segment_raw) {
                scratch.raw_ends[pass] = st.raw.bytes_needed();
            } else {
                scratch.snapshots[pass] = mq_snapshot(st.mq);
            }
            continue;
        }
        const uint32_t length = segment_raw ? st.raw.flush(predictable)
                                            : (predictable ? st.mq.flush_predictable() : st.mq.flush());
        const size_t seg_end = seg_start + length;
        // Truncation points of the segment's earlier passes, now its bytes are final.
        for (uint32_t q = seg_first_pass; q < pass; ++q) {
            const uint32_t needed = segment_raw
                                        ? scratch.raw_ends[q]
                                        : mq_truncation_length(scratch.snapshots[q], buf.data() + seg_start,
                                                               length);
            const size_t end = seg_start + segment_truncation_point(needed, buf.data() + seg_start, length);
            out.passes[q].end = static_cast<uint32_t>(end - 1);
        }
        info.end = static_cast<uint32_t>(seg_end - 1);
        seg_start = seg_end;
        segment_open = false;
    }
    // Truncation points never decrease (a longer prefix is always safe).
    for (uint32_t q = 1; q < num_passes; ++q)
        out.passes[q].end = std::max(out.passes[q].end, out.passes[q - 1].end);
    out.data.assign(buf.begin() + 1, buf.begin() + static_cast<ptrdiff_t>(seg_start));
}

void Tier1Decoder::decode(const uint8_t *data, const CodewordSegment *segments, size_t num_segments,
                          uint32_t width, uint32_t height, const Tier1DecodeParams &params,
                          int32_t *out, size_t out_stride)
{
    check_geometry(width, height);
    J2KC_CHECK_SUPPORTED(!(params.style & cblk_style::kHighThroughput),
                         "HT code-blocks are not supported");
    if (width == 0 || height == 0) return;
    const uint32_t planes = uint32_t{params.num_bitplanes} + params.roi_shift;
    uint64_t total_passes = 0;
    for (size_t k = 0; k < num_segments; ++k) total_passes += segments[k].passes;
    if (total_passes > 0) {
        J2KC_CHECK_SUPPORTED(planes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", planes,
                             kTier1MaxBitplanes);
        J2KC_CHECK_DATA(params.zero_bitplanes < planes, "%u missing bit-planes of %u",
                        params.zero_bitplanes, planes);
        const uint64_t max_passes = 3ull * (planes - params.zero_bitplanes) - 2;
        J2KC_CHECK_DATA(total_passes <= max_passes, "%llu coding passes, at most %llu",
                        static_cast<unsigned long long>(total_passes),
                        static_cast<unsigned long long>(max_passes));
    }

    BlockState<false> st;
    prepare_block(st, flags_, values_, width, height, params.orientation, params.style);
    const int nbp = static_cast<int>(planes) - params.zero_bitplanes;
    const uint8_t style = params.style;

    uint32_t pass = 0;
    const uint8_t *seg = data;
    for (size_t k = 0; k < num_segments; ++k) {
        const CodewordSegment &segment = segments[k];
        if (segment.passes > 0) {
            const bool raw = t1_pass_is_raw(pass, style);
            if (raw) st.raw.init(seg, segment.length);
            else st.mq.init(seg, segment.length);
            for (uint32_t n = 0; n < segment.passes; ++n, ++pass) {
                J2KC_CHECK_DATA(t1_pass_is_raw(pass, style) == raw,
                                "codeword segment mixes raw and arithmetic passes (pass %u)", pass);
                J2KC_CHECK_DATA(n + 1 == segment.passes || !t1_pass_is_terminated(pass, style),
                                "codeword segment runs past terminated pass %u", pass);
                run_pass(st, pass, nbp, style);
            }
        }
        seg += segment.length;
    }

    for (uint32_t y = 0; y < height; ++y) {
        int32_t *row = out + y * out_stride;
        size_t i = st.first_index() + size_t{y >> 2} * st.ss + (y & 3);
        for (uint32_t x = 0; x < width; ++x, i += 4) {
            const uint32_t fl = st.flags[i];
            const int32_t mag = (fl & kSig) ? static_cast<int32_t>(st.values[i]) : 0;
            row[x] = (fl & kNeg) ? -mag : mag;
        }
    }
}

}  // namespace j2kc
