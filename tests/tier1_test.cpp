// Tier-1 (ISO/IEC 15444-1 Annexes C and D): MQ coder, raw packing, code-block
// round trips over every style combination, truncation points, distortion,
// and hostile input to the decoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "codestream/markers.h"
#include "common/status.h"
#include "tier1/mq_coder.h"
#include "tier1/tier1.h"
#include "tier1/tier1_contexts.h"
#include "tier1/tier1_plane_floor.h"
#include "tier1_decoder_oracle.h"

namespace j2kc {
namespace {

// ---------------------------------------------------------------- MQ coder

struct MqRun {
    std::vector<uint8_t> bytes;
};

std::vector<uint8_t> mq_encode(const std::vector<uint32_t> &bits, const std::vector<uint8_t> &ctxs, int num_ctx,
                               bool predictable)
{
    std::vector<uint8_t> buf(bits.size() * 2 + 64, 0);
    std::vector<uint8_t> states(num_ctx, 0);
    MqEncoder enc;
    enc.init(buf.data(), 1);
    for (size_t i = 0; i < bits.size(); ++i) enc.encode(bits[i], states[ctxs[i]]);
    const uint32_t len = predictable ? enc.flush_predictable() : enc.flush();
    return std::vector<uint8_t>(buf.begin() + 1, buf.begin() + 1 + len);
}

std::vector<uint32_t> mq_decode(const std::vector<uint8_t> &data, const std::vector<uint8_t> &ctxs, int num_ctx)
{
    // Copy to an exactly sized heap block so ASan sees any read past the end.
    std::vector<uint8_t> exact(data);
    std::vector<uint8_t> states(num_ctx, 0);
    MqDecoder dec;
    dec.init(exact.empty() ? nullptr : exact.data(), static_cast<uint32_t>(exact.size()));
    std::vector<uint32_t> out(ctxs.size());
    for (size_t i = 0; i < ctxs.size(); ++i) out[i] = dec.decode(states[ctxs[i]]);
    return out;
}

TEST(MqCoder, TransitionTableFollowsTableC2)
{
    for (int i = 0; i < 47; ++i) {
        for (int mps = 0; mps < 2; ++mps) {
            const MqTransition &t = kMqTransitions.t[2 * i + mps];
            EXPECT_EQ(t.qe, kMqQeTable[i].qe);
            EXPECT_EQ(t.next_mps, 2 * kMqQeTable[i].nmps + mps);
            const int lps_mps = kMqQeTable[i].switch_mps ? 1 - mps : mps;
            EXPECT_EQ(t.next_lps, 2 * kMqQeTable[i].nlps + lps_mps);
        }
    }
    // Spot values of Table C.2.
    EXPECT_EQ(kMqQeTable[0].qe, 0x5601);
    EXPECT_EQ(kMqQeTable[45].qe, 0x0001);
    EXPECT_EQ(kMqQeTable[46].nlps, 46);
    EXPECT_EQ(kMqQeTable[5].nmps, 38);
}

// The test sequence of ITU-T T.88 Annex H.2, which uses the same coder: 256
// decisions in one context starting at state 0, MPS 0. T.88's encoded stream
// ends in the marker FF AC; JPEG 2000's FLUSH drops the final 0xFF instead.
const uint8_t kH2Decisions[32] = {0x00, 0x02, 0x00, 0x51, 0x00, 0x00, 0x00, 0xC0, 0x03, 0x52, 0x87,
                                  0x2A, 0xAA, 0xAA, 0xAA, 0xAA, 0x82, 0xC0, 0x20, 0x00, 0xFC, 0xD7,
                                  0x9E, 0xF6, 0xBF, 0x7F, 0xED, 0x90, 0x4F, 0x46, 0xA3, 0xBF};
const uint8_t kH2Coded[30] = {0x84, 0xC7, 0x3B, 0xFC, 0xE1, 0xA1, 0x43, 0x04, 0x02, 0x20, 0x00, 0x00, 0x41, 0x0D, 0xBB,
                              0x86, 0xF4, 0x31, 0x7F, 0xFF, 0x88, 0xFF, 0x37, 0x47, 0x1A, 0xDB, 0x6A, 0xDF, 0xFF, 0xAC};

TEST(MqCoder, StandardTestSequence)
{
    std::vector<uint32_t> bits;
    for (uint8_t b : kH2Decisions)
        for (int k = 7; k >= 0; --k) bits.push_back((b >> k) & 1);
    const std::vector<uint8_t> ctxs(bits.size(), 0);
    const std::vector<uint8_t> coded = mq_encode(bits, ctxs, 1, false);
    ASSERT_EQ(coded.size(), 28u);
    EXPECT_TRUE(std::equal(coded.begin(), coded.end(), kH2Coded));
    EXPECT_EQ(mq_decode(coded, ctxs, 1), bits);
    EXPECT_EQ(mq_decode(std::vector<uint8_t>(kH2Coded, kH2Coded + 30), ctxs, 1), bits);
}

TEST(MqCoder, RandomRoundTrips)
{
    std::mt19937 rng(1234);
    for (int trial = 0; trial < 300; ++trial) {
        const int num_ctx = 1 + trial % 19;
        const size_t n = 1 + rng() % (trial < 100 ? 64 : 20000);
        std::vector<uint32_t> bits(n);
        std::vector<uint8_t> ctxs(n);
        // Per-context skew, plus long runs of one value in some trials.
        std::vector<double> p1(num_ctx);
        for (double &p : p1) p = std::uniform_real_distribution<double>(0, 1)(rng);
        const int mode = trial % 4;
        for (size_t i = 0; i < n; ++i) {
            ctxs[i] = static_cast<uint8_t>(rng() % num_ctx);
            if (mode == 0)
                bits[i] = std::bernoulli_distribution(p1[ctxs[i]])(rng);
            else if (mode == 1)
                bits[i] = (i / 1000) & 1;  // long runs
            else if (mode == 2)
                bits[i] = 1;
            else
                bits[i] = std::bernoulli_distribution(0.5)(rng);
        }
        for (bool predictable : {false, true}) {
            const std::vector<uint8_t> coded = mq_encode(bits, ctxs, num_ctx, predictable);
            ASSERT_EQ(mq_decode(coded, ctxs, num_ctx), bits) << "trial " << trial;
            if (!coded.empty()) {
                EXPECT_NE(coded.back(), 0xFF);
            }
            for (size_t k = 0; k + 1 < coded.size(); ++k)
                ASSERT_FALSE(coded[k] == 0xFF && coded[k + 1] > 0x8F) << "marker in MQ output";
        }
    }
}

TEST(MqCoder, InitialStateAndContextsOfTableD7)
{
    uint8_t cx[kT1NumContexts];
    t1_reset_contexts(cx);
    EXPECT_EQ(cx[kT1CtxUni], mq_context(46, 0));
    EXPECT_EQ(cx[kT1CtxRl], mq_context(3, 0));
    EXPECT_EQ(cx[kT1CtxZc], mq_context(4, 0));
    for (int i = 1; i < kT1NumContexts; ++i) {
        if (i != kT1CtxRl && i != kT1CtxUni) {
            EXPECT_EQ(cx[i], 0);
        }
    }
}

TEST(RawCoder, RoundTripsWithStuffing)
{
    std::mt19937 rng(99);
    for (int trial = 0; trial < 400; ++trial) {
        const size_t n = rng() % 300;
        std::vector<uint32_t> bits(n);
        const int mode = trial % 3;
        for (size_t i = 0; i < n; ++i) bits[i] = mode == 0 ? rng() & 1 : (mode == 1 ? 1 : (rng() % 8 != 0));
        for (bool predictable : {false, true}) {
            std::vector<uint8_t> buf(n / 7 + 8, 0);
            RawEncoder enc;
            enc.init(buf.data());
            for (uint32_t b : bits) enc.put(b);
            const uint32_t len = enc.flush(predictable);
            std::vector<uint8_t> exact(buf.begin(), buf.begin() + len);
            if (!exact.empty()) {
                EXPECT_NE(exact.back(), 0xFF);
            }
            for (size_t k = 0; k + 1 < exact.size(); ++k) ASSERT_FALSE(exact[k] == 0xFF && exact[k + 1] > 0x7F);
            RawDecoder dec;
            dec.init(exact.data(), len);
            for (size_t i = 0; i < n; ++i) ASSERT_EQ(dec.get(), bits[i]) << "trial " << trial << " bit " << i;
        }
    }
}

TEST(T1Contexts, TablesD1ToD3)
{
    using namespace t1_flag;
    // LL: two horizontal neighbours -> 8; one vertical only -> 3; one diagonal -> 1.
    EXPECT_EQ(t1_zc_context(kLL, kSigW | kSigE), 8u);
    EXPECT_EQ(t1_zc_context(kLL, kSigN), 3u);
    EXPECT_EQ(t1_zc_context(kLL, kSigNE), 1u);
    EXPECT_EQ(t1_zc_context(kLH, kSigW | kSigSE), 6u);
    // HL swaps the roles: two vertical -> 8.
    EXPECT_EQ(t1_zc_context(kHL, kSigN | kSigS), 8u);
    EXPECT_EQ(t1_zc_context(kHL, kSigW), 3u);
    // HH: three diagonals -> 8; one diagonal and two h/v -> 5.
    EXPECT_EQ(t1_zc_context(kHH, kSigNW | kSigNE | kSigSW), 8u);
    EXPECT_EQ(t1_zc_context(kHH, kSigNW | kSigN | kSigW), 5u);
    EXPECT_EQ(t1_zc_context(kHH, 0), 0u);
    // Sign coding: H = 1, V = 1 -> 13 xor 0; H = -1, V = 0 -> 12 xor 1; H = 0, V = -1 -> 10 xor 1.
    EXPECT_EQ(t1_sc_lookup(kSigW | kSigN), 13u);
    EXPECT_EQ(t1_sc_lookup(kSigW | kNegW), 12u | 0x80u);
    EXPECT_EQ(t1_sc_lookup(kSigS | kNegS), 10u | 0x80u);
    EXPECT_EQ(t1_sc_lookup(kSigW | kSigE | kNegE), 9u);  // cancelling pair
    EXPECT_EQ(t1_sc_lookup(kSigW | kSigN | kNegN), 11u);
    EXPECT_EQ(t1_mr_context(kSig), 14u);
    EXPECT_EQ(t1_mr_context(kSig | kSigSW), 15u);
    EXPECT_EQ(t1_mr_context(kSig | kRefined), 16u);
}

// ------------------------------------------------------ code-block model

/**
 * Independent model of which coefficients each pass visits (D.3), written
 * plainly on a 2-D array: after each pass it gives the reconstruction the
 * decoder must output and the squared error in 1/4 units.
 */
struct PassModel {
    uint32_t w, h;
    bool vc;
    std::vector<uint32_t> mag;
    std::vector<int> neg;
    std::vector<int> sig, lowest, visited;

    PassModel(const std::vector<int32_t> &q, uint32_t w_, uint32_t h_, bool vc_)
        : w(w_), h(h_), vc(vc_), mag(q.size()), neg(q.size()), sig(q.size(), 0), lowest(q.size(), 0),
          visited(q.size(), 0)
    {
        for (size_t i = 0; i < q.size(); ++i) {
            mag[i] = q[i] < 0 ? 0u - static_cast<uint32_t>(q[i]) : static_cast<uint32_t>(q[i]);
            neg[i] = q[i] < 0;
        }
    }

    bool has_sig_neighbour(uint32_t x, uint32_t y) const
    {
        for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
                if (!dx && !dy) continue;
                const int xx = static_cast<int>(x) + dx, yy = static_cast<int>(y) + dy;
                if (xx < 0 || yy < 0 || xx >= static_cast<int>(w) || yy >= static_cast<int>(h)) continue;
                if (vc && dy == 1 && (y % 4) == 3) continue;  // next stripe counts as insignificant
                if (sig[yy * w + xx]) return true;
            }
        }
        return false;
    }

    template <typename Fn>
    void scan(Fn fn)
    {
        for (uint32_t y0 = 0; y0 < h; y0 += 4)
            for (uint32_t x = 0; x < w; ++x)
                for (uint32_t y = y0; y < std::min(h, y0 + 4); ++y) fn(x, y, y * w + x);
    }

    void run(int type, int p)
    {
        if (type == 0) {
            std::fill(visited.begin(), visited.end(), 0);
            scan([&](uint32_t x, uint32_t y, size_t i) {
                if (sig[i] || !has_sig_neighbour(x, y)) return;
                visited[i] = 1;
                lowest[i] = p;
                if ((mag[i] >> p) & 1) sig[i] = 1;
            });
        } else if (type == 1) {
            scan([&](uint32_t, uint32_t, size_t i) {
                if (sig[i] && !visited[i]) lowest[i] = p;
            });
        } else {
            scan([&](uint32_t, uint32_t, size_t i) {
                if (sig[i] || visited[i]) return;
                lowest[i] = p;
                if ((mag[i] >> p) & 1) sig[i] = 1;
            });
            std::fill(visited.begin(), visited.end(), 0);
        }
    }

    int32_t expected(size_t i) const
    {
        if (!sig[i]) return 0;
        const uint32_t m = (mag[i] >> lowest[i]) << lowest[i];
        const int32_t v = static_cast<int32_t>(2 * m + (1u << lowest[i]));
        return neg[i] ? -v : v;
    }

    /** Squared error of the expected reconstruction, 1/4 units. */
    __int128 error4() const
    {
        __int128 sum = 0;
        for (size_t i = 0; i < mag.size(); ++i) {
            const int64_t r = std::abs(static_cast<int64_t>(expected(i)));
            const int64_t e = 2 * static_cast<int64_t>(mag[i]) - r;
            sum += static_cast<__int128>(e) * e;
        }
        return sum;
    }
};

std::vector<int32_t> make_block(std::mt19937 &rng, uint32_t w, uint32_t h, int kind, int depth)
{
    std::vector<int32_t> q(size_t{w} * h, 0);
    const int32_t lim = (int32_t{1} << depth) - 1;
    std::uniform_int_distribution<int32_t> any(-lim, lim);
    for (size_t i = 0; i < q.size(); ++i) {
        switch (kind) {
        case 0: q[i] = any(rng); break;                          // dense
        case 1: q[i] = (rng() % 23 == 0) ? any(rng) : 0; break;  // sparse
        case 2: {                                                // Laplacian-like
            const int bits = static_cast<int>(rng() % (depth + 1));
            const int32_t m = bits ? static_cast<int32_t>(rng() & ((1u << bits) - 1)) : 0;
            q[i] = (rng() & 1) ? -m : m;
            break;
        }
        default: q[i] = (i % 97 == 5) ? lim : ((i / 13) % 3 == 0 ? -1 : 0); break;  // runs
        }
    }
    return q;
}

/** Segments a decoder gets for the prefix ending after pass k. */
std::vector<CodewordSegment> segments_up_to(const EncodedCodeBlock &enc, size_t k)
{
    std::vector<CodewordSegment> segs;
    uint32_t start = 0, passes = 0;
    for (size_t q = 0; q <= k; ++q) {
        ++passes;
        if (enc.passes[q].terminated || q == k) {
            segs.push_back({enc.passes[q].end - start, passes});
            start = enc.passes[q].end;
            passes = 0;
        }
    }
    return segs;
}

struct BlockCase {
    uint32_t w, h;
    BandOrientation orient;
    uint8_t style;
    int kind, depth, extra_planes;
};

std::string describe(const BlockCase &c)
{
    return std::to_string(c.w) + "x" + std::to_string(c.h) + " orient " + std::to_string(c.orient) + " style " +
           std::to_string(c.style) + " kind " + std::to_string(c.kind) + " depth " + std::to_string(c.depth);
}

/** Encodes, checks structure, then decodes after every pass against the model. */
void check_block(std::mt19937 &rng, const BlockCase &c, Tier1Decoder &dec, bool every_pass)
{
    const std::vector<int32_t> q = make_block(rng, c.w, c.h, c.kind, c.depth);
    Tier1EncodeParams ep;
    ep.orientation = c.orient;
    ep.style = c.style;
    ep.num_bitplanes = static_cast<uint8_t>(c.depth + c.extra_planes);
    EncodedCodeBlock enc;
    // Encode from a strided buffer to exercise the stride.
    const size_t stride = c.w + 3;
    std::vector<int32_t> in(stride * c.h, 0x55555555);
    for (uint32_t y = 0; y < c.h; ++y)
        std::copy(q.begin() + y * c.w, q.begin() + (y + 1) * c.w, in.begin() + y * stride);
    encode_code_block(in.data(), stride, c.w, c.h, ep, enc);
    SCOPED_TRACE(describe(c));

    uint32_t max_mag = 0;
    for (int32_t v : q) max_mag = std::max<uint32_t>(max_mag, static_cast<uint32_t>(std::abs(v)));
    int nbp = 0;
    while ((max_mag >> nbp) != 0) ++nbp;
    if (max_mag == 0) {
        EXPECT_TRUE(enc.passes.empty());
        EXPECT_TRUE(enc.data.empty());
        return;
    }
    ASSERT_EQ(enc.zero_bitplanes, ep.num_bitplanes - nbp);
    ASSERT_EQ(enc.passes.size(), size_t(3 * nbp - 2));
    ASSERT_TRUE(enc.passes.back().terminated);
    ASSERT_EQ(enc.passes.back().end, enc.data.size());
    for (size_t k = 0; k < enc.passes.size(); ++k) {
        const bool want_term = k + 1 == enc.passes.size() || t1_pass_is_terminated(uint32_t(k), c.style);
        ASSERT_EQ(enc.passes[k].terminated, want_term) << "pass " << k;
        if (k) {
            ASSERT_GE(enc.passes[k].end, enc.passes[k - 1].end);
        }
        if (enc.passes[k].end > 0) {
            ASSERT_NE(enc.data[enc.passes[k].end - 1], 0xFF) << "pass " << k;
        }
    }

    PassModel model(q, c.w, c.h, (c.style & cblk_style::kVerticallyCausal) != 0);
    __int128 err = model.error4();
    const size_t out_stride = c.w + 2;
    std::vector<int32_t> out(out_stride * c.h);
    Tier1DecodeParams dp;
    dp.orientation = c.orient;
    dp.style = c.style;
    dp.num_bitplanes = ep.num_bitplanes;
    dp.zero_bitplanes = enc.zero_bitplanes;
    for (size_t k = 0; k < enc.passes.size(); ++k) {
        model.run(static_cast<int>(t1_pass_type(uint32_t(k))), t1_pass_bitplane(uint32_t(k), nbp));
        const __int128 err_after = model.error4();
        const __int128 delta = err - err_after;
        err = err_after;
        // Past 24 planes the unit is 2^s quarters (s = 2 Mb - 48), the value rounded up.
        const int s = ep.num_bitplanes > 24 ? 2 * ep.num_bitplanes - 48 : 0;
        const __int128 unit = static_cast<__int128>(1) << s;
        const uint64_t want_dist = static_cast<uint64_t>(delta <= 0 ? 0 : (delta + unit - 1) / unit);
        ASSERT_EQ(enc.passes[k].distortion, want_dist) << "pass " << k;
        const bool last = k + 1 == enc.passes.size();
        if (!every_pass && !enc.passes[k].terminated && !last) continue;
        // The truncated stream, in an exactly sized buffer (ASan checks reads).
        const std::vector<CodewordSegment> segs = segments_up_to(enc, k);
        std::vector<uint8_t> data(enc.data.begin(), enc.data.begin() + enc.passes[k].end);
        std::fill(out.begin(), out.end(), 0x7777);
        dec.decode(data.data(), segs.data(), segs.size(), c.w, c.h, dp, out.data(), out_stride);
        for (uint32_t y = 0; y < c.h; ++y)
            for (uint32_t x = 0; x < c.w; ++x)
                ASSERT_EQ(out[y * out_stride + x], model.expected(y * c.w + x))
                    << "pass " << k << " of " << enc.passes.size() << " at " << x << "," << y;
    }
    // Every plane decoded: exactly 2|q| + 1 or 0.
    for (uint32_t y = 0; y < c.h; ++y)
        for (uint32_t x = 0; x < c.w; ++x) {
            const int32_t v = q[y * c.w + x];
            const int32_t want = v == 0 ? 0 : (v < 0 ? 2 * v - 1 : 2 * v + 1);
            ASSERT_EQ(out[y * out_stride + x], want);
        }
}

const BandOrientation kOrients[4] = {kLL, kHL, kLH, kHH};

TEST(Tier1, RoundTripEverySizeAndOrientation)
{
    std::mt19937 rng(7);
    Tier1Decoder dec;
    const uint32_t sizes[][2] = {{1, 1},   {3, 5},    {4, 4},    {17, 9}, {32, 32},
                                 {64, 64}, {1024, 4}, {4, 1024}, {5, 3},  {2, 7}};
    for (auto &s : sizes)
        for (BandOrientation o : kOrients)
            for (int kind = 0; kind < 4; ++kind) {
                const int depth = 1 + static_cast<int>(rng() % 12);
                check_block(rng, BlockCase{s[0], s[1], o, 0, kind, depth, int(rng() % 3)}, dec, true);
                if (HasFatalFailure()) return;
            }
}

TEST(Tier1, EveryStyleCombination)
{
    std::mt19937 rng(11);
    Tier1Decoder dec;
    const uint32_t sizes[][2] = {{17, 9}, {32, 32}, {3, 5}, {64, 64}, {4, 1024}};
    for (int style = 0; style < 64; ++style)
        for (auto &s : sizes)
            for (int kind = 0; kind < 4; ++kind) {
                const BandOrientation o = kOrients[rng() % 4];
                // Deep enough for bypass to reach its raw passes.
                const int depth = 2 + static_cast<int>(rng() % 11);
                const bool big = s[0] * s[1] > 1500;
                check_block(rng, BlockCase{s[0], s[1], o, uint8_t(style), kind, depth, int(rng() % 2)}, dec, !big);
                if (HasFatalFailure()) return;
            }
}

TEST(Tier1, DeepBlocksAndFullRange)
{
    std::mt19937 rng(5);
    Tier1Decoder dec;
    for (int style : {0, 0x01, 0x3F, 0x15, 0x28})
        for (int depth : {20, 25, 30})
            check_block(rng, BlockCase{19, 13, kHH, uint8_t(style), 0, depth, 0}, dec, depth == 20);
}

/**
 * A dense block at the deepest planes: the gains of its passes, in the
 * block's distortion units, must add up without reaching 2^64, so that rate
 * control sees the gain of every pass that lowers the error (unshifted,
 * the first passes of such a block reached 2^64 and every later one read as
 * no gain).
 */
TEST(Tier1, DeepDenseBlockPassGainsStayBelowTwoTo64)
{
    for (const int depth : {24, 25, 29, 30}) {
        SCOPED_TRACE(testing::Message() << depth << " planes");
        std::mt19937 rng(depth);
        std::vector<int32_t> q(64 * 64);
        const uint32_t top = (1u << (depth - 1)) - 1;
        for (int32_t &v : q) v = static_cast<int32_t>(top + rng() % (top + 1)) * (rng() % 2 ? 1 : -1);
        EncodedCodeBlock enc;
        encode_code_block(q.data(), 64, 64, 64, Tier1EncodeParams{kLL, 0, uint8_t(depth)}, enc);
        ASSERT_EQ(enc.passes.size(), size_t(3 * depth - 2));
        unsigned __int128 sum = 0;
        for (const PassInfo &p : enc.passes) sum += p.distortion;
        EXPECT_LT(sum, static_cast<unsigned __int128>(1) << 63);
        EXPECT_GT(enc.passes.front().distortion, 0u);
        EXPECT_GT(enc.passes[enc.passes.size() - 2].distortion, 0u) << "the refinement of plane 0 lowers the error";
        // The shift is the unit's: values at depth 24 are exact, deeper ones scaled by 2^t1_distortion_shift.
        EXPECT_EQ(t1_distortion_shift(uint32_t(depth)), depth > 24 ? 2 * depth - 48 : 0);
    }
}

TEST(Tier1, TruncationPointsAreTight)
{
    // Without termination every pass but the last ends inside the one
    // segment: its truncation point must track the coder, within the few
    // bytes still held in the C register, not jump to the segment's end.
    std::mt19937 rng(21);
    const std::vector<int32_t> q = make_block(rng, 64, 64, 2, 10);
    EncodedCodeBlock enc;
    encode_code_block(q.data(), 64, 64, 64, Tier1EncodeParams{kHH, 0, 10}, enc);
    ASSERT_GT(enc.passes.size(), 20u);
    const size_t n = enc.passes.size();
    EXPECT_LT(enc.passes[n / 2].end, enc.data.size() * 3 / 4);
    // Dense data: the significance passes carry most of the information, so
    // their points must all advance (cleanup passes may add almost nothing).
    size_t advancing = 0, spp = 0;
    for (size_t k = 1; k < n; ++k) {
        if (t1_pass_type(uint32_t(k)) != 0) continue;
        ++spp;
        advancing += enc.passes[k].end > enc.passes[k - 1].end;
    }
    EXPECT_EQ(advancing, spp);
}

/**
 * A block coded down to a lowest plane L: the passes of the planes from its
 * top down to L, with the distortions of the block coded whole, the last
 * one terminated; decoded whole it gives what the whole block gives after
 * as many passes. Data wholly under L codes no pass.
 */
TEST(Tier1, LowestPlaneStopsThePassesThere)
{
    std::mt19937 rng(41);
    Tier1Decoder dec;
    for (const uint8_t style : {uint8_t{0}, uint8_t{0x01}, uint8_t{0x04}, uint8_t{0x10}, uint8_t{0x21}, uint8_t{0x3F}})
        for (int kind = 0; kind < 4; ++kind) {
            const uint32_t w = 1 + rng() % 40, h = 1 + rng() % 40;
            const std::vector<int32_t> q = make_block(rng, w, h, kind, 10);
            Tier1EncodeParams ep;
            ep.orientation = kOrients[rng() % 4];
            ep.style = style;
            ep.num_bitplanes = 11;
            EncodedCodeBlock whole;
            encode_code_block(q.data(), w, w, h, ep, whole);
            const uint32_t nbp = (static_cast<uint32_t>(whole.passes.size()) + 2) / 3;
            for (uint8_t lowest = 1; lowest <= 11; ++lowest) {
                SCOPED_TRACE(testing::Message() << w << "x" << h << " kind " << kind << " style " << int(style)
                                                << " lowest plane " << int(lowest));
                ep.lowest_plane = lowest;
                EncodedCodeBlock cut;
                encode_code_block(q.data(), w, w, h, ep, cut);
                EXPECT_EQ(cut.zero_bitplanes, whole.zero_bitplanes);
                const size_t n = nbp > lowest ? 3 * (nbp - lowest) - 2 : 0;
                ASSERT_EQ(cut.passes.size(), n);
                if (n == 0) {
                    EXPECT_TRUE(cut.data.empty());
                    continue;
                }
                for (size_t k = 0; k < n; ++k) {
                    EXPECT_EQ(cut.passes[k].distortion, whole.passes[k].distortion) << "pass " << k;
                    EXPECT_EQ(cut.passes[k].terminated, k + 1 == n || t1_pass_is_terminated(uint32_t(k), style));
                }
                ASSERT_EQ(cut.passes.back().end, cut.data.size());
                Tier1DecodeParams dp;
                dp.orientation = ep.orientation;
                dp.style = style;
                dp.num_bitplanes = ep.num_bitplanes;
                dp.zero_bitplanes = whole.zero_bitplanes;
                std::vector<int32_t> got(size_t{w} * h), want(size_t{w} * h);
                const std::vector<CodewordSegment> cut_segs = segments_up_to(cut, n - 1);
                dec.decode(cut.data.data(), cut_segs.data(), cut_segs.size(), w, h, dp, got.data(), w);
                const std::vector<CodewordSegment> whole_segs = segments_up_to(whole, n - 1);
                dec.decode(whole.data.data(), whole_segs.data(), whole_segs.size(), w, h, dp, want.data(), w);
                EXPECT_EQ(got, want);
            }
        }
}

/** The plane t1_lowest_plane keeps, with `fit` the lowest plane whose modelled bytes fit. */
void expect_lowest_plane_bounds(const uint64_t (&model)[htenc::kHtPlaneBins], uint64_t budget, uint32_t lowest)
{
    uint32_t fit = 0;
    while (fit + 1 < htenc::kHtPlaneBins && model[fit] / 8 > budget) ++fit;
    const uint32_t margin = t1core::kT1FloorMarginPlanes;
    const uint64_t reach = t1core::kT1FloorBudgets * budget;
    SCOPED_TRACE(testing::Message() << "budget " << budget << ", fits at plane " << fit << ", lowest " << lowest);
    EXPECT_LE(lowest + margin, std::max(fit, margin));
    if (lowest > 0) {
        EXPECT_GE(model[lowest] / 8, reach);
    }
    if (lowest + margin < fit) {
        EXPECT_LT(model[lowest + 1] / 8, reach);
    }
}

/**
 * The plane a budget's cost model lets Part 1 stop at: kT1FloorMarginPlanes
 * under the lowest plane whose modelled bytes fit the budget, or lower where
 * the planes under it cost less than kT1FloorBudgets budgets; lower as the
 * budget grows, plane 0 once everything fits.
 */
TEST(Tier1PlaneFloor, LowestPlaneFollowsTheBudget)
{
    std::mt19937 rng(43);
    uint64_t model[htenc::kHtPlaneBins] = {};
    for (int block = 0; block < 64; ++block) {
        const std::vector<int32_t> q = make_block(rng, 32, 32, block % 3, 4 + block % 12);
        htenc::ht_add_cleanup_model(q.data(), 32, 32, 32, model);
    }
    uint32_t last = htenc::kHtPlaneBins;
    for (uint64_t budget = 8; budget < model[0]; budget += budget / 4) {
        const uint32_t lowest = t1core::t1_lowest_plane(model, budget);
        expect_lowest_plane_bounds(model, budget, lowest);
        EXPECT_LE(lowest, last);
        last = lowest;
    }
    EXPECT_EQ(last, 0u);
    EXPECT_EQ(t1core::t1_lowest_plane(model, model[0] / 8), 0u);
}

/** Costs that double with each plane down stop three planes under the fit;
 *  costs that grow by a fifth a plane (noise) reach further down. */
TEST(Tier1PlaneFloor, FlatCostsReachFurtherDown)
{
    for (const double growth : {2.0, 1.2}) {
        SCOPED_TRACE(testing::Message() << "growth " << growth);
        uint64_t model[htenc::kHtPlaneBins] = {};
        for (uint32_t p = 0; p < 20; ++p) model[p] = static_cast<uint64_t>(8e6 * std::pow(growth, 20.0 - p));
        const uint64_t budget = model[10] / 8;  // fits at plane 10
        const uint32_t lowest = t1core::t1_lowest_plane(model, budget);
        expect_lowest_plane_bounds(model, budget, lowest);
        EXPECT_EQ(lowest, growth == 2.0 ? 10 - t1core::kT1FloorMarginPlanes : 6u);  // 1.2^4 > 2 > 1.2^3
    }
}

TEST(Tier1, RoiShiftDecodesOverMorePlanes)
{
    std::mt19937 rng(8);
    Tier1Decoder dec;
    const std::vector<int32_t> q = make_block(rng, 16, 16, 0, 9);
    Tier1EncodeParams ep{kLH, 0, 9};
    EncodedCodeBlock enc;
    encode_code_block(q.data(), 16, 16, 16, ep, enc);
    CodewordSegment seg{static_cast<uint32_t>(enc.data.size()), static_cast<uint32_t>(enc.passes.size())};
    Tier1DecodeParams dp{kLH, 0, 6, enc.zero_bitplanes, 3};
    std::vector<int32_t> out(256);
    dec.decode(enc.data.data(), &seg, 1, 16, 16, dp, out.data(), 16);
    for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(out[i], q[i] == 0 ? 0 : (q[i] < 0 ? 2 * q[i] - 1 : 2 * q[i] + 1));
}

TEST(Tier1, RejectsBadParameters)
{
    Tier1Decoder dec;
    std::vector<int32_t> out(16);
    const uint8_t data[4] = {1, 2, 3, 4};
    CodewordSegment seg{4, 1};
    Tier1DecodeParams dp{kLL, 0, 31, 0, 0};
    EXPECT_THROW(dec.decode(data, &seg, 1, 4, 4, dp, out.data(), 4), Error);
    dp.num_bitplanes = 4;
    dp.zero_bitplanes = 4;  // no plane left to code
    EXPECT_THROW(dec.decode(data, &seg, 1, 4, 4, dp, out.data(), 4), Error);
    dp = Tier1DecodeParams{kLL, cblk_style::kTermAll, 8, 0, 0};
    seg.passes = 2;  // termall: one pass a segment
    EXPECT_THROW(dec.decode(data, &seg, 1, 4, 4, dp, out.data(), 4), Error);
    std::vector<int32_t> in(16, 100);
    EncodedCodeBlock enc;
    EXPECT_THROW(encode_code_block(in.data(), 4, 4, 4, Tier1EncodeParams{kLL, 0, 6}, enc), Error);
    EXPECT_THROW(encode_code_block(in.data(), 4, 4, 2000, Tier1EncodeParams{kLL, 0, 8}, enc), Error);
}

TEST(Tier1, PassesBeyondTheLastPlaneAreIgnored)
{
    // Some encoders signal more passes than Mb allows (OpenJPEG did for 1-bit
    // components); mature decoders stop at the last plane's cleanup pass.
    std::mt19937 rng(982);
    Tier1Decoder dec;
    for (const uint8_t style : {uint8_t{0}, uint8_t{cblk_style::kTermAll}, uint8_t{cblk_style::kBypass}}) {
        const uint32_t w = 19, h = 13;
        const std::vector<int32_t> q = make_block(rng, w, h, 1, 5);
        EncodedCodeBlock enc;
        encode_code_block(q.data(), w, w, h, Tier1EncodeParams{kHL, style, 5}, enc);
        Tier1DecodeParams dp{kHL, style, 5, enc.zero_bitplanes, 0};
        std::vector<CodewordSegment> segs = segments_up_to(enc, enc.passes.size() - 1);
        std::vector<int32_t> want(w * h), got(w * h, 0x7777);
        dec.decode(enc.data.data(), segs.data(), segs.size(), w, h, dp, want.data(), w);
        // Seven more passes: in the last segment, or as segments of their own.
        if (style & (cblk_style::kTermAll | cblk_style::kBypass)) {
            for (int k = 0; k < 7; ++k) segs.push_back({0, 1});
        } else {
            segs.back().passes += 7;
        }
        dec.decode(enc.data.data(), segs.data(), segs.size(), w, h, dp, got.data(), w);
        EXPECT_EQ(got, want) << "style " << int(style);
    }
}

TEST(Tier1, GarbageAndTruncatedInputNeverCrash)
{
    std::mt19937 rng(77);
    Tier1Decoder dec;
    std::vector<int32_t> out(64 * 64);
    for (int trial = 0; trial < 1500; ++trial) {
        const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
        Tier1DecodeParams dp;
        dp.orientation = kOrients[rng() % 4];
        dp.style = static_cast<uint8_t>(rng() % 64);
        dp.num_bitplanes = static_cast<uint8_t>(1 + rng() % 30);
        dp.zero_bitplanes = static_cast<uint8_t>(rng() % (dp.num_bitplanes + 1));
        std::vector<uint8_t> bytes;
        std::vector<CodewordSegment> segs;
        if (trial % 2) {
            // A real stream, cut at a random byte, with random pass counts.
            const std::vector<int32_t> q = make_block(rng, w, h, trial % 4, 1 + rng() % 14);
            EncodedCodeBlock enc;
            encode_code_block(q.data(), w, w, h, Tier1EncodeParams{dp.orientation, dp.style, 16}, enc);
            dp.num_bitplanes = 16;
            dp.zero_bitplanes = enc.zero_bitplanes;
            bytes = enc.data;
            if (!bytes.empty()) bytes.resize(rng() % bytes.size());
            for (size_t k = 0; k < enc.passes.size(); ++k)
                if (rng() % 4 == 0) bytes[rng() % std::max<size_t>(1, bytes.size())] ^= 1u << (rng() % 8);
            uint32_t left = static_cast<uint32_t>(bytes.size());
            for (size_t k = 0; k < enc.passes.size() && (rng() % 8); ++k) {
                const uint32_t len = left ? rng() % (left + 1) : 0;
                segs.push_back({len, 1});
                left -= len;
            }
        } else {
            bytes.resize(rng() % 200);
            for (uint8_t &b : bytes) b = (rng() % 3) ? static_cast<uint8_t>(rng()) : 0xFF;
            uint32_t left = static_cast<uint32_t>(bytes.size());
            while (rng() % 5) {
                const uint32_t len = left ? rng() % (left + 1) : 0;
                segs.push_back({len, static_cast<uint32_t>(rng() % 4)});
                left -= len;
            }
        }
        std::vector<uint8_t> exact(bytes);
        try {
            dec.decode(exact.empty() ? nullptr : exact.data(), segs.data(), segs.size(), w, h, dp, out.data(), w);
        } catch (const Error &e) {
            EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA) << e.what();
        }
    }
}

// ------------------------------------------------- differential (oracle)

/** Decodes with Tier1Decoder and with the frozen straightforward decoder of
 *  tier1_decoder_oracle.h; both must agree on every output value, or both
 *  must reject the input. */
void expect_same_as_oracle(Tier1Decoder &dec, t1oracle::OracleDecoder &oracle, const std::vector<uint8_t> &bytes,
                           const std::vector<CodewordSegment> &segs, uint32_t w, uint32_t h,
                           const Tier1DecodeParams &dp, const std::string &what)
{
    const size_t stride = w + 5;
    std::vector<int32_t> a(stride * h, 0x1234567), b(stride * h, 0x1234567);
    // Exactly sized copy so ASan builds catch reads past the end.
    std::vector<uint8_t> exact(bytes);
    const uint8_t *data = exact.empty() ? nullptr : exact.data();
    bool threw_new = false, threw_old = false;
    try {
        dec.decode(data, segs.data(), segs.size(), w, h, dp, a.data(), stride);
    } catch (const Error &e) {
        threw_new = true;
        EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA) << what << ": " << e.what();
    }
    try {
        oracle.decode(data, segs.data(), segs.size(), w, h, dp.orientation, dp.style, dp.num_bitplanes,
                      dp.zero_bitplanes, dp.roi_shift, b.data(), stride);
    } catch (const std::runtime_error &) {
        threw_old = true;
    }
    ASSERT_EQ(threw_new, threw_old) << what;
    if (threw_new) return;
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < stride; ++x)
            ASSERT_EQ(a[y * stride + x], b[y * stride + x]) << what << " at " << x << "," << y;
}

TEST(Tier1Differential, RandomBlocksStylesAndTruncationsMatchTheOracle)
{
    std::mt19937 rng(2024);
    Tier1Decoder dec;
    t1oracle::OracleDecoder oracle;
    const uint32_t sides[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 32, 33, 64};
    int decoded = 0;
    for (int trial = 0; trial < 3000; ++trial) {
        uint32_t w, h;
        if (trial % 3 == 0) {  // the production shapes
            w = h = (rng() % 2) ? 32 : 64;
        } else {
            w = sides[rng() % 13];
            h = sides[rng() % 13];
            if (size_t{w} * h > 4096) h = 4096 / w;
        }
        if (trial % 97 == 0) {
            w = 1024;
            h = 4;
        }
        if (trial % 89 == 0) {
            w = 4;
            h = 1024;
        }
        const uint8_t style = (trial % 4 == 0) ? 0 : static_cast<uint8_t>(rng() % 64);
        const BandOrientation orient = kOrients[rng() % 4];
        const int depth = 1 + static_cast<int>(rng() % 16);
        const std::vector<int32_t> q = make_block(rng, w, h, static_cast<int>(rng() % 4), depth);
        const int extra = static_cast<int>(rng() % 3);
        EncodedCodeBlock enc;
        encode_code_block(q.data(), w, w, h, Tier1EncodeParams{orient, style, uint8_t(depth + extra)}, enc);
        if (enc.passes.empty()) continue;
        Tier1DecodeParams dp{orient, style, uint8_t(depth + extra), enc.zero_bitplanes, 0};
        const std::string what = "trial " + std::to_string(trial) + " " + std::to_string(w) + "x" + std::to_string(h) +
                                 " style " + std::to_string(style);
        // A few prefixes at truncation points, always the whole stream.
        for (int cut = 0; cut < 3; ++cut) {
            const size_t k = cut == 0 ? enc.passes.size() - 1 : rng() % enc.passes.size();
            const std::vector<CodewordSegment> segs = segments_up_to(enc, k);
            const std::vector<uint8_t> bytes(enc.data.begin(), enc.data.begin() + enc.passes[k].end);
            expect_same_as_oracle(dec, oracle, bytes, segs, w, h, dp, what + " pass " + std::to_string(k));
            if (HasFatalFailure()) return;
            ++decoded;
        }
        // Cut inside a segment (reads the 0xFF fill) and flipped bits.
        {
            std::vector<CodewordSegment> segs = segments_up_to(enc, enc.passes.size() - 1);
            std::vector<uint8_t> bytes = enc.data;
            if (!bytes.empty() && rng() % 2) {
                const uint32_t drop = static_cast<uint32_t>(rng() % (bytes.size() + 1));
                bytes.resize(bytes.size() - drop);
                uint32_t left = static_cast<uint32_t>(bytes.size());
                for (CodewordSegment &sg : segs) {
                    sg.length = std::min(sg.length, left);
                    left -= sg.length;
                }
            }
            for (int f = 0; f < 3 && !bytes.empty(); ++f) bytes[rng() % bytes.size()] ^= uint8_t(1u << (rng() % 8));
            expect_same_as_oracle(dec, oracle, bytes, segs, w, h, dp, what + " damaged");
            if (HasFatalFailure()) return;
            ++decoded;
        }
        // ROI: the same bits read as a band with fewer planes plus a shift.
        if (trial % 5 == 0 && depth + extra > 2) {
            Tier1DecodeParams roi = dp;
            roi.roi_shift = static_cast<uint8_t>(1 + rng() % 2);
            roi.num_bitplanes = static_cast<uint8_t>(depth + extra - roi.roi_shift);
            const std::vector<CodewordSegment> segs = segments_up_to(enc, enc.passes.size() - 1);
            expect_same_as_oracle(dec, oracle, enc.data, segs, w, h, roi, what + " roi");
            if (HasFatalFailure()) return;
            ++decoded;
        }
    }
    EXPECT_GT(decoded, 8000);
}

/** The fast decoder's column masks work on chunks of 64 columns and fix up
 *  the east neighbour when a column gains a significant sample: shapes
 *  around and across chunk edges, short and partial stripes, every style,
 *  with coefficients clustered on the chunk edges. */
TEST(Tier1Differential, ChunkEdgesShortStripesAndEveryStyleMatchTheOracle)
{
    std::mt19937 rng(4242);
    Tier1Decoder dec;
    t1oracle::OracleDecoder oracle;
    const uint32_t shapes[][2] = {{64, 64},  {63, 65},  {65, 63},  {128, 32}, {127, 32}, {129, 31},
                                  {1024, 4}, {1024, 3}, {1024, 2}, {1024, 1}, {4, 1024}, {1, 1024},
                                  {2, 1024}, {200, 7},  {66, 6},   {192, 21}, {5, 5},    {4, 4}};
    int decoded = 0;
    for (const auto &shape : shapes) {
        const uint32_t w = shape[0], h = shape[1];
        for (uint32_t style = 0; style < 64; ++style) {
            const int depth = 1 + static_cast<int>(rng() % 12);
            const int kind = static_cast<int>(rng() % 5);
            std::vector<int32_t> q;
            if (kind < 4) {
                q = make_block(rng, w, h, kind, depth);
            } else {  // sparse, on the columns next to chunk edges (multiples of 64)
                q.assign(size_t{w} * h, 0);
                const int32_t lim = (int32_t{1} << depth) - 1;
                for (uint32_t y = 0; y < h; ++y)
                    for (uint32_t x = 0; x < w; ++x) {
                        const uint32_t m = x % 64;
                        if ((m == 0 || m >= 62) && rng() % 3 == 0)
                            q[size_t{y} * w + x] = static_cast<int32_t>(rng() % (lim + 1)) * ((rng() & 1) ? -1 : 1);
                    }
            }
            const BandOrientation orient = kOrients[rng() % 4];
            EncodedCodeBlock enc;
            encode_code_block(q.data(), w, w, h, Tier1EncodeParams{orient, uint8_t(style), uint8_t(depth)}, enc);
            if (enc.passes.empty()) continue;
            const Tier1DecodeParams dp{orient, uint8_t(style), uint8_t(depth), enc.zero_bitplanes, 0};
            const std::string what = std::to_string(w) + "x" + std::to_string(h) + " style " + std::to_string(style) +
                                     " kind " + std::to_string(kind);
            for (int cut = 0; cut < 2; ++cut) {
                const size_t k = cut == 0 ? enc.passes.size() - 1 : rng() % enc.passes.size();
                const std::vector<CodewordSegment> segs = segments_up_to(enc, k);
                const std::vector<uint8_t> bytes(enc.data.begin(), enc.data.begin() + enc.passes[k].end);
                expect_same_as_oracle(dec, oracle, bytes, segs, w, h, dp, what + " pass " + std::to_string(k));
                if (HasFatalFailure()) return;
                ++decoded;
            }
        }
    }
    EXPECT_GT(decoded, 2000);
}

TEST(Tier1Differential, GarbageMatchesTheOracle)
{
    std::mt19937 rng(99);
    Tier1Decoder dec;
    t1oracle::OracleDecoder oracle;
    for (int trial = 0; trial < 3000; ++trial) {
        const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
        Tier1DecodeParams dp;
        dp.orientation = kOrients[rng() % 4];
        dp.style = static_cast<uint8_t>(rng() % 64);
        dp.num_bitplanes = static_cast<uint8_t>(1 + rng() % 30);
        dp.zero_bitplanes = static_cast<uint8_t>(rng() % (dp.num_bitplanes + 1));
        std::vector<uint8_t> bytes(rng() % 300);
        for (uint8_t &b : bytes) b = (rng() % 4) ? static_cast<uint8_t>(rng()) : 0xFF;
        std::vector<CodewordSegment> segs;
        uint32_t left = static_cast<uint32_t>(bytes.size());
        while (rng() % 6) {
            const uint32_t len = left ? rng() % (left + 1) : 0;
            segs.push_back({len, static_cast<uint32_t>(rng() % 5)});
            left -= len;
        }
        expect_same_as_oracle(dec, oracle, bytes, segs, w, h, dp, "garbage trial " + std::to_string(trial));
        if (HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace j2kc
