// CUDA Tier-1 encoder (tier1.cu) against the CPU reference encode_code_block
// (ISO/IEC 15444-1 Annex D): every output field of every job, over sizes,
// orientations, bit depths, densities, every style combination, and a
// realistic batch from a 5/3-transformed natural-looking image. Plus host
// tests of the shared J2KC_HD core (tier1_encoder_core.h): its buffer bounds,
// capacity check and status codes, which the GPU path relies on.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codestream/markers.h"
#include "common/status.h"
#include "tier1/tier1.h"
#include "tier1/tier1_cuda.h"
#include "tier1/tier1_encode_job.h"
#include "tier1/tier1_encoder_core.h"
#include "tier1/tier1_plane_floor.h"

namespace j2kc {
namespace {

const BandOrientation kOrients[4] = {kLL, kHL, kLH, kHH};

/** Random magnitudes of up to `depth` bits: kind 0 sparse, 1 dense, 2
 *  Laplacian-like (most small, few large), 3 a single non-zero sample. */
void fill_block(std::mt19937 &rng, int32_t *dst, size_t stride, uint32_t w, uint32_t h, int kind, int depth)
{
    const uint32_t mask = depth >= 32 ? 0xFFFFFFFFu : ((1u << depth) - 1u);
    const uint32_t lone = (w && h) ? rng() % (w * h) : 0;
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            uint32_t m = 0;
            switch (kind) {
            case 0: m = (rng() % 16 == 0) ? (rng() & mask) : 0; break;
            case 1: m = rng() & mask; break;
            case 2: m = (rng() & mask) >> (rng() % (depth + 1)); break;
            default: m = (y * w + x == lone) ? (mask ? mask : 0) : 0; break;
            }
            const int32_t v = static_cast<int32_t>(m & 0x7FFFFFFFu);
            dst[y * stride + x] = (rng() & 1) ? -v : v;
        }
}

int planes_of(const int32_t *c, size_t stride, uint32_t w, uint32_t h)
{
    uint32_t m = 0;
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            const int32_t v = c[y * stride + x];
            m |= v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v);
        }
    int n = 0;
    while (n < 32 && (m >> n) != 0) ++n;
    return n;
}

// ------------------------------------------------------------ host: the core

/** Runs the shared core on the host with caller-chosen capacity. */
struct CoreRun {
    std::vector<uint16_t> flags;
    std::vector<uint32_t> values;
    std::vector<MqPassSnapshot> snaps = std::vector<MqPassSnapshot>(t1core::kMaxPasses);
    std::vector<uint32_t> raw_ends = std::vector<uint32_t>(t1core::kMaxPasses);
    std::vector<uint8_t> buf;
    std::vector<uint32_t> pass_end = std::vector<uint32_t>(t1core::kMaxPasses);
    std::vector<uint64_t> pass_dist = std::vector<uint64_t>(t1core::kMaxPasses);
    std::vector<uint8_t> pass_term = std::vector<uint8_t>(t1core::kMaxPasses);
    t1core::T1EncodeOutput out{};
    uint32_t status = 0;

    void run(const int32_t *c, size_t stride, uint32_t w, uint32_t h, BandOrientation o, uint8_t style, uint32_t nbp,
             size_t capacity)
    {
        const size_t n = t1core::t1_state_size(w, h);
        flags.assign(n, 0xAAAA);
        values.assign(n, 0xDEADBEEF);
        buf.assign(capacity + 64, 0xA5);  // 64 guard bytes past the capacity
        out = t1core::T1EncodeOutput{};
        out.buf = buf.data();
        out.capacity = capacity;
        out.pass_end = pass_end.data();
        out.pass_distortion = pass_dist.data();
        out.pass_terminated = pass_term.data();
        const t1core::T1EncodeScratch ws{flags.data(), values.data(), snaps.data(), raw_ends.data()};
        status = t1core::t1_encode_block(c, stride, w, h, o, style, nbp, ws, out);
    }
    bool guard_intact(size_t capacity) const
    {
        for (size_t k = capacity; k < buf.size(); ++k)
            if (buf[k] != 0xA5) return false;
        return true;
    }
};

void expect_same_as_reference(const CoreRun &r, const EncodedCodeBlock &ref)
{
    ASSERT_EQ(r.status, t1core::kT1EncodeOk);
    ASSERT_EQ(r.out.zero_bitplanes, ref.zero_bitplanes);
    ASSERT_EQ(r.out.num_passes, ref.passes.size());
    ASSERT_EQ(r.out.bytes, ref.data.size());
    ASSERT_TRUE(std::equal(ref.data.begin(), ref.data.end(), r.buf.begin() + 1));
    for (size_t q = 0; q < ref.passes.size(); ++q) {
        ASSERT_EQ(r.pass_end[q], ref.passes[q].end) << "pass " << q;
        ASSERT_EQ(r.pass_dist[q], ref.passes[q].distortion) << "pass " << q;
        ASSERT_EQ(r.pass_term[q] != 0, ref.passes[q].terminated) << "pass " << q;
    }
}

TEST(Tier1Core, HostRunMatchesEncodeCodeBlockAtTheBound)
{
    std::mt19937 rng(101);
    const uint32_t sizes[][2] = {{1, 1}, {3, 5}, {17, 9}, {32, 32}, {64, 64}, {4, 1024}, {1024, 4}, {6, 2}};
    CoreRun r;
    for (auto &s : sizes)
        for (int style = 0; style < 64; style += 5)
            for (int kind = 0; kind < 4; ++kind) {
                const uint32_t w = s[0], h = s[1];
                const int depth = 1 + static_cast<int>(rng() % 18);
                const size_t stride = w + 7;
                std::vector<int32_t> c(stride * h, 0x7FFFFFFF);  // padding must be ignored
                fill_block(rng, c.data(), stride, w, h, kind, depth);
                const BandOrientation o = kOrients[rng() % 4];
                const uint8_t nbp = static_cast<uint8_t>(depth + rng() % 3);
                EncodedCodeBlock ref;
                encode_code_block(c.data(), stride, w, h, Tier1EncodeParams{o, uint8_t(style), nbp}, ref);
                const size_t cap = t1core::t1_encode_buffer_bound(w, h, nbp);
                r.run(c.data(), stride, w, h, o, uint8_t(style), nbp, cap);
                SCOPED_TRACE(std::to_string(w) + "x" + std::to_string(h) + " style " + std::to_string(style) +
                             " kind " + std::to_string(kind));
                expect_same_as_reference(r, ref);
                EXPECT_TRUE(r.guard_intact(cap));
            }
}

// Adversarial data for the byte bound: full-depth dense noise over every
// style (bypass and termall add terminations, segmentation symbols add
// decisions); the stream must stay within the documented bounds.
TEST(Tier1Core, StreamsStayWithinTheBounds)
{
    std::mt19937 rng(102);
    CoreRun r;
    const uint32_t sizes[][2] = {{64, 64}, {32, 32}, {1024, 4}, {4, 1024}, {5, 3}};
    for (auto &s : sizes)
        for (int style = 0; style < 64; style += 3) {
            const uint32_t w = s[0], h = s[1];
            const int depth = (style & 1) ? 30 : 12;
            std::vector<int32_t> c(size_t{w} * h);
            fill_block(rng, c.data(), w, w, h, 1, depth);
            const size_t cap = t1core::t1_encode_buffer_bound(w, h, depth);
            r.run(c.data(), w, w, h, kOrients[style % 4], uint8_t(style), depth, cap);
            ASSERT_EQ(r.status, t1core::kT1EncodeOk);
            EXPECT_LE(size_t{r.out.bytes} + 1, cap);
            EXPECT_TRUE(r.guard_intact(cap));
            // No pass (terminated segment included) adds more than the pass bound.
            uint32_t prev = 0;
            for (uint32_t q = 0; q < r.out.num_passes; ++q) {
                EXPECT_LE(r.pass_end[q] - prev, t1core::t1_pass_byte_bound(w, h));
                prev = r.pass_end[q];
            }
        }
}

// Below the bound the coder either succeeds with the reference's bytes or
// reports an overflow, and never writes past the capacity.
TEST(Tier1Core, SmallCapacityOverflowsCleanly)
{
    std::mt19937 rng(103);
    CoreRun r;
    for (int it = 0; it < 200; ++it) {
        const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
        const int depth = 1 + static_cast<int>(rng() % 16);
        const uint8_t style = static_cast<uint8_t>(rng() % 64);
        std::vector<int32_t> c(size_t{w} * h);
        fill_block(rng, c.data(), w, w, h, static_cast<int>(rng() % 3), depth);
        EncodedCodeBlock ref;
        encode_code_block(c.data(), w, w, h, Tier1EncodeParams{kHH, style, uint8_t(depth)}, ref);
        const size_t pass_bound = t1core::t1_pass_byte_bound(w, h);
        const size_t enough = 1 + ref.data.size() + pass_bound;  // the coder never asks for more
        const size_t caps[] = {0, 1, pass_bound, enough - 1 - rng() % (ref.data.size() + 1), enough, enough + 13};
        for (size_t cap : caps) {
            r.run(c.data(), w, w, h, kHH, style, depth, cap);
            EXPECT_TRUE(r.guard_intact(cap)) << "capacity " << cap;
            if (ref.passes.empty()) {
                EXPECT_EQ(r.status, t1core::kT1EncodeOk);
                EXPECT_EQ(r.out.num_passes, 0u);
                continue;
            }
            if (cap >= enough) {
                expect_same_as_reference(r, ref);
            } else if (r.status == t1core::kT1EncodeOk) {
                expect_same_as_reference(r, ref);  // lucky fit: still exact
            } else {
                EXPECT_EQ(r.status, t1core::kT1EncodeOverflow) << "capacity " << cap;
            }
            if (cap < 1 + pass_bound) {
                EXPECT_EQ(r.status, t1core::kT1EncodeOverflow);
            }
        }
    }
}

TEST(Tier1Core, StatusCodesMatchTheReferenceChecks)
{
    CoreRun r;
    std::vector<int32_t> c(4096, 0);
    r.run(c.data(), 2048, 2048, 2, kLL, 0, 8, 1 << 16);
    EXPECT_EQ(r.status, t1core::kT1EncodeBadGeometry);
    r.run(c.data(), 100, 100, 100, kLL, 0, 8, 1 << 16);
    EXPECT_EQ(r.status, t1core::kT1EncodeBadGeometry);
    r.run(c.data(), 8, 8, 8, kLL, 0, 31, 1 << 16);
    EXPECT_EQ(r.status, t1core::kT1EncodeBadBitplanes);
    r.run(c.data(), 8, 8, 8, kLL, cblk_style::kHighThroughput, 8, 1 << 16);
    EXPECT_EQ(r.status, t1core::kT1EncodeUnsupported);
    c[5] = -(1 << 9);
    r.run(c.data(), 8, 8, 8, kLL, 0, 9, 1 << 16);
    EXPECT_EQ(r.status, t1core::kT1EncodeDataTooDeep);
    EXPECT_EQ(r.out.data_bitplanes, 10);
    EncodedCodeBlock ref;
    EXPECT_THROW(encode_code_block(c.data(), 8, 8, 8, Tier1EncodeParams{kLL, 0, 9}, ref), Error);
    r.run(c.data(), 8, 8, 8, kLL, 0, 10, t1core::t1_encode_buffer_bound(8, 8, 10));
    EXPECT_EQ(r.status, t1core::kT1EncodeOk);
    EXPECT_EQ(r.out.zero_bitplanes, 0);
    // Empty and all-zero blocks: no passes, P = num_bitplanes, nothing written.
    std::fill(c.begin(), c.end(), 0);
    r.run(c.data(), 8, 8, 8, kLL, 0, 7, 0);
    EXPECT_EQ(r.status, t1core::kT1EncodeOk);
    EXPECT_EQ(r.out.num_passes, 0u);
    EXPECT_EQ(r.out.zero_bitplanes, 7);
    EXPECT_TRUE(r.guard_intact(0));
    r.run(c.data(), 8, 0, 8, kLL, 0, 7, 0);
    EXPECT_EQ(r.status, t1core::kT1EncodeOk);
    EXPECT_EQ(r.out.num_passes, 0u);
}

TEST(Tier1Core, GpuSizingHelpers)
{
    EXPECT_EQ(tier1_gpu_max_passes(0), 0u);
    EXPECT_EQ(tier1_gpu_max_passes(1), 1u);
    EXPECT_EQ(tier1_gpu_max_passes(30), 88u);
    const uint32_t sizes[][2] = {{1, 1}, {32, 32}, {64, 64}, {1024, 4}, {4, 1024}, {17, 9}};
    for (auto &s : sizes) {
        const size_t scratch = tier1_gpu_scratch_bound(s[0], s[1]);
        EXPECT_EQ(scratch % 16, 0u);
        const size_t state = t1core::t1_state_size(s[0], s[1]);
        EXPECT_GE(scratch, state * 6 + t1core::kMaxPasses * (sizeof(MqPassSnapshot) + 4));
        EXPECT_EQ(tier1_gpu_capacity_bound(s[0], s[1], 12), t1core::t1_encode_buffer_bound(s[0], s[1], 12));
        EXPECT_GT(tier1_gpu_capacity_bound(s[0], s[1], 13), tier1_gpu_capacity_bound(s[0], s[1], 12));
    }
}

// The two-phase kernel's ENCODE on context words (mq_encode_select, CLZ
// renormalisation) against MqEncoder::encode on context bytes (RENORME's
// loop), each driving its own MqEncoder: the same bytes, lengths and snapshots over
// long random decision streams whose skew makes carries, 0xFF bytes, long
// renormalisations (Qe = 1) and both terminations frequent.
TEST(Tier1TwoPhaseMq, WordContextEncodeMatchesByteContextEncode)
{
    std::mt19937 rng(401);
    for (int trial = 0; trial < 60; ++trial) {
        const size_t n = 1 + rng() % 60000;
        const bool predictable = trial % 2;
        std::vector<uint8_t> ref(2 * n + 64, 0), got(2 * n + 64, 0);
        uint8_t cx_ref[kT1NumContexts];
        uint32_t cx_got[kT1NumContexts];
        t1_reset_contexts(cx_ref);
        t1core::t1_reset_context_words(cx_got, 1);
        // Per context, the probability of a 1 (extremes drive the states to
        // Qe = 1 and then an LPS renormalises by 15 bits).
        uint32_t p1[kT1NumContexts];
        for (uint32_t &p : p1) p = (trial % 3 == 0) ? rng() % 65536 : (rng() % 2 ? rng() % 64 : 65535 - rng() % 64);
        const uint32_t ctxs = 1 + rng() % kT1NumContexts;
        MqEncoder e;
        e.init(ref.data(), 1);
        MqEncoder g{};
        g.init(got.data(), 1);
        for (size_t k = 0; k < n; ++k) {
            const uint32_t ctx = rng() % ctxs;
            const uint32_t bit = (rng() % 65536) < p1[ctx] ? 1u : 0u;
            e.encode(bit, cx_ref[ctx]);
            cx_got[ctx] = t1core::mq_encode_select(g, bit, cx_got[ctx], t1core::kMqWordTable.t[cx_got[ctx] & 0x7F]);
            ASSERT_EQ(cx_got[ctx] & 0x7Fu, cx_ref[ctx]) << "trial " << trial << " decision " << k;
            if (k % 997 == 0) {
                const MqPassSnapshot a = e.snapshot(), b = g.snapshot();
                ASSERT_EQ(a.a, b.a);
                ASSERT_EQ(a.c, b.c);
                ASSERT_EQ(a.ct, b.ct);
                ASSERT_EQ(a.b_offset, b.b_offset);
                ASSERT_EQ(a.b, b.b);
            }
        }
        const uint32_t len_ref = predictable ? e.flush_predictable() : e.flush();
        const uint32_t len_got = predictable ? g.flush_predictable() : g.flush();
        ASSERT_EQ(len_ref, len_got) << "trial " << trial;
        ASSERT_EQ(ref, got) << "trial " << trial;  // the scratch byte after the end too
    }
}

// The warp coder's column-mask flag words (T1WColumnMasks) against the
// neighbour-by-neighbour view (t1w_view) over random column neighbourhoods.
TEST(Tier1WarpFlags, ColumnMasksMatchTheNeighbourView)
{
    std::mt19937 rng(402);
    for (int it = 0; it < 200000; ++it) {
        t1core::T1WarpLaneIn in{};
        in.w = static_cast<uint16_t>(rng());
        in.lw = static_cast<uint16_t>(rng());
        in.rw = static_cast<uint16_t>(rng());
        in.a_sig = static_cast<uint8_t>(rng() & 7);
        in.a_sgn = static_cast<uint8_t>(rng() & 7);
        in.b_sig = static_cast<uint8_t>(rng() & 7);
        in.b_sgn = static_cast<uint8_t>(rng() & 7);
        in.valid = 1;
        const uint32_t own = rng() & 15, left = rng() & 15;
        const bool vc = rng() & 1;
        const t1core::T1WColumnMasks cm(in, left, vc);
        for (uint32_t r = 0; r < 4; ++r)
            ASSERT_EQ(cm.flags(own, r), t1core::t1w_view(in, own, left, static_cast<int>(r), vc).flags())
                << "iteration " << it << " row " << r;
    }
}

// The work a column needs in a pass (t1w_column_work), from its word alone,
// against the rows each pass codes, row by row, over every word and height.
TEST(Tier1WarpFlags, ColumnWorkFollowsTheRowsEachPassCodes)
{
    using namespace t1core;
    for (uint32_t w = 0; w < 0x10000; ++w)
        for (uint32_t rows = 1; rows <= 4; ++rows) {
            bool spp = false, mrp = false, first_refinement = false, cup = false;
            for (uint32_t r = 0; r < rows; ++r) {
                const bool sig = (w >> r) & 1u, refined = (w >> (8 + r)) & 1u, visited = (w >> (12 + r)) & 1u;
                spp |= !sig;
                mrp |= sig && !visited;
                first_refinement |= sig && !visited && !refined;
                cup |= !sig && !visited;
            }
            const uint32_t mrp_work = !mrp ? kT1WNothing : first_refinement ? kT1WModel : kT1WRefineOnly;
            ASSERT_EQ(t1w_column_work(w, rows, 0), spp ? kT1WModel : kT1WNothing) << std::hex << w << " rows " << rows;
            ASSERT_EQ(t1w_column_work(w, rows, 1), mrp_work) << std::hex << w << " rows " << rows;
            ASSERT_EQ(t1w_column_work(w, rows, 2), cup ? kT1WModel : kT1WNothing) << std::hex << w << " rows " << rows;
        }
}

// A chunk without significance-propagation candidates codes nothing in that
// pass, and one significant neighbour of an insignificant row makes one.
TEST(Tier1WarpFlags, ChunksWithoutCandidatesCodeNothing)
{
    using namespace t1core;
    std::mt19937 rng(403);
    uint32_t without = 0;
    for (int it = 0; it < 20000; ++it) {
        T1WarpShared sh{};
        const uint32_t rows = 1 + rng() % 4;
        const bool vc = rng() & 1;
        for (uint32_t l = 0; l < 32; ++l) {
            T1WarpLaneIn &in = sh.in[l];
            in.valid = (rng() % 16) != 0;
            // Sparse significance, so that some chunks have no candidate at all.
            const auto sparse = [&](uint32_t bits) { return (rng() % 64) == 0 ? rng() & bits : 0u; };
            in.w = static_cast<uint16_t>(sparse((1u << rows) - 1u) | (rng() & 0xF0u));
            in.a_sig = static_cast<uint8_t>(sparse(7));
            in.b_sig = static_cast<uint8_t>(rows == 4 ? sparse(7) : 0u);
            for (uint32_t r = 0; r < 4; ++r) in.mag[r] = r < rows ? rng() % 8 : 0u;
        }
        for (uint32_t l = 0; l < 32; ++l) {  // neighbours agree with the lanes beside them
            sh.in[l].lw = l > 0 && sh.in[l - 1].valid ? sh.in[l - 1].w : 0;
            sh.in[l].rw = l < 31 && sh.in[l + 1].valid ? sh.in[l + 1].w : 0;
        }
        if (t1w_spp_has_candidates(sh, rows, vc)) continue;
        ++without;
        for (uint32_t l = 0; l < 32; ++l) {
            uint32_t visited = 0;
            int64_t dist = 0;
            sh.nsym[l] = 0;
            const uint32_t p = rng() % 3;
            EXPECT_EQ(t1w_spp_column(sh, l, 0, static_cast<int>(p), rows, vc, false, static_cast<uint32_t>(kHH), true,
                                     &visited, dist),
                      0u);
            EXPECT_EQ(visited, 0u);
            EXPECT_EQ(sh.nsym[l], 0u);
        }
        // An insignificant row next to a significant sample is a candidate.
        for (uint32_t l = 0; l < 32; ++l)
            if (sh.in[l].valid && (sh.in[l].w & ((1u << rows) - 1u)) != (1u << rows) - 1u) {
                sh.in[l].a_sig = 2;
                EXPECT_TRUE(t1w_spp_has_candidates(sh, rows, vc));
                break;
            }
    }
    EXPECT_GT(without, 1000u);
}

// -------------------------------------------------------------- GPU harness

bool have_device(std::string &why)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        why = std::string("no CUDA device: ") + cudaGetErrorString(e);
        return false;
    }
    if (n == 0) {
        why = "no CUDA device";
        return false;
    }
    return true;
}

#define SKIP_WITHOUT_DEVICE()                         \
    do {                                              \
        std::string why_;                             \
        if (!have_device(why_)) GTEST_SKIP() << why_; \
    } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr << ": " << cudaGetErrorString(cudaGetLastError())

/** Device memory freed at scope end. */
struct DevMem {
    void *p = nullptr;
    DevMem() = default;
    explicit DevMem(size_t bytes) { alloc(bytes); }
    ~DevMem()
    {
        if (p) cudaFree(p);
    }
    DevMem(const DevMem &) = delete;
    DevMem &operator=(const DevMem &) = delete;
    /// Zeroed, so the tests' whole-buffer copies back read no uninitialised
    /// byte (initcheck); the checks look only at what the kernels report written.
    cudaError_t alloc(size_t bytes)
    {
        const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
        return e == cudaSuccess ? cudaMemset(p, 0, bytes ? bytes : 1) : e;
    }
    template <typename T>
    T *as() const
    {
        return static_cast<T *>(p);
    }
};

/** A block of the batch: a window of the host coefficient pool. */
struct BlockSpec {
    size_t offset;  ///< first coefficient in the pool
    size_t stride;
    uint32_t width, height;
    BandOrientation orientation;
    uint8_t style;
    uint8_t num_bitplanes;
    size_t capacity = 0;  ///< 0: tier1_gpu_capacity_bound
    uint8_t lowest_plane = 0;
};

struct Batch {
    std::vector<int32_t> pool;
    std::vector<BlockSpec> blocks;
};

/** Guard pattern written over the whole arena; a job may only write its own region. */
constexpr uint8_t kArenaFill = 0xC3;
constexpr size_t kGap = 16;  ///< bytes left between regions, must stay kArenaFill

struct GpuRun {
    std::vector<GpuCodeBlockJob> jobs;
    std::vector<GpuCodeBlockResult> results;
    std::vector<uint8_t> arena;
    std::vector<uint32_t> pass_end;
    std::vector<uint64_t> pass_dist;
    std::vector<uint8_t> pass_term;
};

/** Lays the batch out: jobs with offsets relative to the pool, scratch and
 *  arena bases (added by the runner); returns the sizes. */
struct Layout {
    size_t arena = kGap, scratch = 0;
    uint32_t passes = 0;
    std::vector<size_t> scratch_at;
};

Layout lay_out(const Batch &b, GpuRun &g)
{
    Layout l;
    const size_t n = b.blocks.size();
    g.jobs.assign(n, GpuCodeBlockJob{});
    l.scratch_at.resize(n);
    for (size_t k = 0; k < n; ++k) {
        const BlockSpec &s = b.blocks[k];
        GpuCodeBlockJob &j = g.jobs[k];
        j.coeffs = s.offset * sizeof(int32_t);  // relative until the runner adds the pool's address
        j.stride = static_cast<uint32_t>(s.stride);
        j.width = static_cast<uint16_t>(s.width);
        j.height = static_cast<uint16_t>(s.height);
        j.orientation = static_cast<uint8_t>(s.orientation);
        j.style = s.style;
        j.num_bitplanes = s.num_bitplanes;
        j.lowest_plane = s.lowest_plane;
        j.out_offset = l.arena;
        const size_t cap = s.capacity ? s.capacity : tier1_gpu_capacity_bound(s.width, s.height, s.num_bitplanes);
        j.out_capacity = static_cast<uint32_t>(cap);
        l.arena += cap + kGap;
        j.pass_offset = l.passes;
        l.passes += tier1_gpu_max_passes(s.num_bitplanes);
        l.scratch_at[k] = l.scratch;
        l.scratch += tier1_gpu_scratch_bound(std::min<uint32_t>(s.width, 1024), std::min<uint32_t>(s.height, 1024));
    }
    return l;
}

void size_outputs(GpuRun &g, const Layout &l)
{
    g.results.assign(g.jobs.size(), GpuCodeBlockResult{});
    g.arena.assign(l.arena, kArenaFill);
    g.pass_end.assign(l.passes, 0);
    g.pass_dist.assign(l.passes, 0);
    g.pass_term.assign(l.passes, 0);
}

/** The kernel's job logic (tier1_encode_job.h) run on the host over host memory:
 *  checks the layout, the offsets and the job body where no GPU is. */
void run_on_host(const Batch &b, GpuRun &g)
{
    const Layout l = lay_out(b, g);
    size_outputs(g, l);
    std::vector<uint64_t> scratch(l.scratch / 8 + 2);  // 8-byte aligned; the layout keeps 16-byte offsets
    for (size_t k = 0; k < g.jobs.size(); ++k) {
        GpuCodeBlockJob j = g.jobs[k];
        j.coeffs += reinterpret_cast<uint64_t>(b.pool.data());
        j.scratch = reinterpret_cast<uint64_t>(reinterpret_cast<uint8_t *>(scratch.data()) + l.scratch_at[k]);
        g.jobs[k].coeffs = j.coeffs;
        g.jobs[k].scratch = j.scratch;
        g.results[k] =
            t1core::t1_encode_job(j, g.arena.data(), g.pass_end.data(), g.pass_dist.data(), g.pass_term.data());
    }
}

/** The warp kernel's job logic (tier1_warp_coder.h) with the 32 lanes run one
 *  after another on the host, phase by phase. */
void run_on_host_warp(const Batch &b, GpuRun &g)
{
    const Layout l = lay_out(b, g);
    size_outputs(g, l);
    std::vector<uint64_t> scratch(l.scratch / 8 + 2);
    t1core::T1WarpShared sh;
    for (size_t k = 0; k < g.jobs.size(); ++k) {
        GpuCodeBlockJob j = g.jobs[k];
        j.coeffs += reinterpret_cast<uint64_t>(b.pool.data());
        j.scratch = reinterpret_cast<uint64_t>(reinterpret_cast<uint8_t *>(scratch.data()) + l.scratch_at[k]);
        g.jobs[k].coeffs = j.coeffs;
        g.jobs[k].scratch = j.scratch;
        std::memset(&sh, 0x5A, sizeof(sh));  // no state may leak between jobs
        g.results[k] = t1core::t1_warp_encode_job(sh, j, g.arena.data(), g.pass_end.data(), g.pass_dist.data(),
                                                  g.pass_term.data());
    }
}

/** The two-phase kernels' job logic (tier1_two_phase_coder.h) on the host: phase 1
 *  over every job (lanes one after another), then phase 2 over every job,
 *  with the contexts strided as the device's shared memory holds them. */
void run_on_host_two_phase(const Batch &b, GpuRun &g)
{
    const Layout l = lay_out(b, g);
    size_outputs(g, l);
    std::vector<uint64_t> scratch(l.scratch / 8 + 2);
    std::memset(scratch.data(), 0x77, scratch.size() * 8);  // stale scratch must not matter
    t1core::T1WarpShared sh;
    for (size_t k = 0; k < g.jobs.size(); ++k) {
        GpuCodeBlockJob &j = g.jobs[k];
        j.coeffs += reinterpret_cast<uint64_t>(b.pool.data());
        j.scratch = reinterpret_cast<uint64_t>(reinterpret_cast<uint8_t *>(scratch.data()) + l.scratch_at[k]);
        std::memset(&sh, 0x5A, sizeof(sh));
        g.results[k] = t1core::t1_model_job(sh, j, g.pass_dist.data(), g.pass_term.data());
    }
    constexpr uint32_t kStride = 3;  // a thread's contexts interleaved with others'
    std::vector<uint32_t> cx(kT1NumContexts * kStride, 0xDEADBEEFu);
    for (size_t k = 0; k < g.jobs.size(); ++k)
        t1core::t1_code_job(g.jobs[k], g.results[k], g.arena.data(), g.pass_end.data(), cx.data() + k % kStride,
                            kStride, t1core::kMqWordTable.t);
}

/** Uploads, encodes in one launch on a non-default stream, downloads. */
void run_on_gpu_with(const Batch &b, GpuRun &g, GpuTier1Kernel kernel)
{
    const Layout l = lay_out(b, g);
    const size_t n = b.blocks.size();
    DevMem d_pool;
    CUDA_OK(d_pool.alloc(b.pool.size() * sizeof(int32_t)));
    CUDA_OK(cudaMemcpy(d_pool.p, b.pool.data(), b.pool.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    DevMem d_jobs, d_results, d_arena, d_end, d_dist, d_term, d_scratch;
    CUDA_OK(d_scratch.alloc(l.scratch));
    for (size_t k = 0; k < n; ++k) {
        g.jobs[k].coeffs += reinterpret_cast<uint64_t>(d_pool.p);
        g.jobs[k].scratch = reinterpret_cast<uint64_t>(d_scratch.as<uint8_t>() + l.scratch_at[k]);
    }
    CUDA_OK(d_jobs.alloc(n * sizeof(GpuCodeBlockJob)));
    CUDA_OK(d_results.alloc(n * sizeof(GpuCodeBlockResult)));
    CUDA_OK(d_arena.alloc(l.arena));
    CUDA_OK(d_end.alloc(l.passes * sizeof(uint32_t)));
    CUDA_OK(d_dist.alloc(l.passes * sizeof(uint64_t)));
    CUDA_OK(d_term.alloc(l.passes));
    CUDA_OK(cudaMemset(d_arena.p, kArenaFill, l.arena));
    CUDA_OK(cudaMemset(d_results.p, 0xEE, n * sizeof(GpuCodeBlockResult)));
    CUDA_OK(cudaMemcpy(d_jobs.p, g.jobs.data(), n * sizeof(GpuCodeBlockJob), cudaMemcpyHostToDevice));

    cudaStream_t stream = nullptr;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    bool launched = true;
    try {
        tier1_encode_gpu(d_jobs.as<GpuCodeBlockJob>(), static_cast<uint32_t>(n), d_arena.as<uint8_t>(),
                         d_results.as<GpuCodeBlockResult>(), d_end.as<uint32_t>(), d_dist.as<uint64_t>(),
                         d_term.as<uint8_t>(), stream, kernel);
    } catch (const Error &e) {
        launched = false;
        ADD_FAILURE() << e.what();
    }
    const cudaError_t sync = cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
    ASSERT_TRUE(launched);
    CUDA_OK(sync);

    size_outputs(g, l);
    CUDA_OK(cudaMemcpy(g.results.data(), d_results.p, n * sizeof(GpuCodeBlockResult), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.arena.data(), d_arena.p, l.arena, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.pass_end.data(), d_end.p, l.passes * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.pass_dist.data(), d_dist.p, l.passes * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    CUDA_OK(cudaMemcpy(g.pass_term.data(), d_term.p, l.passes, cudaMemcpyDeviceToHost));
}

void run_on_gpu(const Batch &b, GpuRun &g) { run_on_gpu_with(b, g, GpuTier1Kernel::kWarpPerBlock); }
void run_on_gpu_thread(const Batch &b, GpuRun &g) { run_on_gpu_with(b, g, GpuTier1Kernel::kThreadPerBlock); }
void run_on_gpu_two_phase(const Batch &b, GpuRun &g) { run_on_gpu_with(b, g, GpuTier1Kernel::kTwoPhase); }

using Runner = void (*)(const Batch &, GpuRun &);

/** Compares every job with encode_code_block; returns the number of blocks that differ. */
size_t compare_with_cpu(const Batch &b, const GpuRun &g)
{
    size_t bad = 0;
    // The gaps between regions must be untouched.
    for (size_t k = 0; k < b.blocks.size(); ++k) {
        const GpuCodeBlockJob &j = g.jobs[k];
        for (size_t q = j.out_offset - kGap; q < j.out_offset; ++q)
            if (g.arena[q] != kArenaFill) {
                ADD_FAILURE() << "byte " << q << " before job " << k << " was written";
                ++bad;
                break;
            }
    }
    for (size_t q = g.arena.size() - kGap; q < g.arena.size(); ++q)
        if (g.arena[q] != kArenaFill) {
            ADD_FAILURE() << "byte after the last job was written";
            ++bad;
            break;
        }
    for (size_t k = 0; k < b.blocks.size(); ++k) {
        const BlockSpec &s = b.blocks[k];
        const GpuCodeBlockJob &j = g.jobs[k];
        const GpuCodeBlockResult &r = g.results[k];
        EncodedCodeBlock ref;
        bool ref_ok = true;
        try {
            encode_code_block(b.pool.data() + s.offset, s.stride, s.width, s.height,
                              Tier1EncodeParams{s.orientation, s.style, s.num_bitplanes, s.lowest_plane}, ref);
        } catch (const Error &) {
            ref_ok = false;
        }
        const std::string where = "job " + std::to_string(k) + " (" + std::to_string(s.width) + "x" +
                                  std::to_string(s.height) + ", orientation " + std::to_string(s.orientation) +
                                  ", style " + std::to_string(s.style) + ", planes " + std::to_string(s.num_bitplanes) +
                                  ")";
        if (!ref_ok) {
            if (r.status == kGpuTier1Ok) {
                ADD_FAILURE() << where << ": CPU rejects it, GPU status ok";
                ++bad;
            }
            continue;
        }
        bool same = r.status == kGpuTier1Ok && r.num_passes == ref.passes.size() && r.bytes == ref.data.size() &&
                    r.zero_bitplanes == ref.zero_bitplanes;
        if (same)
            same = std::equal(ref.data.begin(), ref.data.end(),
                              g.arena.begin() + static_cast<ptrdiff_t>(j.out_offset) + 1);
        for (size_t q = 0; same && q < ref.passes.size(); ++q) {
            const size_t e = j.pass_offset + q;
            same = g.pass_end[e] == ref.passes[q].end && g.pass_dist[e] == ref.passes[q].distortion &&
                   (g.pass_term[e] != 0) == ref.passes[q].terminated;
        }
        if (!same) {
            if (bad < 10)
                ADD_FAILURE() << where << ": status " << int(r.status) << " passes " << r.num_passes << "/"
                              << ref.passes.size() << " bytes " << r.bytes << "/" << ref.data.size() << " P "
                              << int(r.zero_bitplanes) << "/" << int(ref.zero_bitplanes);
            ++bad;
        }
    }
    return bad;
}

/** compare_with_cpu over the jobs whose status is not kGpuTier1Overflow (the
 *  gaps of every job are still checked). */
size_t compare_accepted_with_cpu(const Batch &b, const GpuRun &g)
{
    Batch kept;
    kept.pool = b.pool;
    GpuRun gk;
    for (size_t k = 0; k < b.blocks.size(); ++k) {
        if (g.results[k].status == kGpuTier1Overflow) continue;
        kept.blocks.push_back(b.blocks[k]);
        gk.jobs.push_back(g.jobs[k]);
        gk.results.push_back(g.results[k]);
    }
    gk.arena = g.arena;
    gk.pass_end = g.pass_end;
    gk.pass_dist = g.pass_dist;
    gk.pass_term = g.pass_term;
    return compare_with_cpu(kept, gk);
}

void add_random_block(Batch &b, std::mt19937 &rng, uint32_t w, uint32_t h, BandOrientation o, uint8_t style, int kind,
                      int depth, int extra_planes)
{
    BlockSpec s{};
    s.stride = w + (rng() % 3) * 5;  // sometimes padded rows
    s.offset = b.pool.size();
    s.width = w;
    s.height = h;
    s.orientation = o;
    s.style = style;
    s.num_bitplanes = static_cast<uint8_t>(depth + extra_planes);
    b.pool.resize(b.pool.size() + s.stride * h + 1, 0x12345678);  // padding must be ignored
    fill_block(rng, b.pool.data() + s.offset, s.stride, w, h, kind, depth);
    b.blocks.push_back(s);
}

// -------------------------------------------------------------- GPU tests

void check_EverySizeOrientationAndStyle(Runner run)
{
    std::mt19937 rng(201);
    Batch b;
    const uint32_t sizes[][2] = {{1, 1}, {3, 5}, {17, 9}, {32, 32}, {64, 64}, {4, 1024}, {1024, 4}};
    for (auto &s : sizes)
        for (int style = 0; style < 64; ++style)
            for (BandOrientation o : kOrients) {
                const int kind = static_cast<int>(rng() % 4);
                const int depth = 1 + static_cast<int>(rng() % 16);
                add_random_block(b, rng, s[0], s[1], o, uint8_t(style), kind, depth, static_cast<int>(rng() % 3));
            }
    GpuRun g;
    ASSERT_NO_FATAL_FAILURE(run(b, g));
    EXPECT_EQ(compare_with_cpu(b, g), 0u) << "of " << b.blocks.size() << " blocks";
}

void check_DeepBlocksSparseAndDense(Runner run)
{
    std::mt19937 rng(202);
    Batch b;
    for (int depth : {1, 2, 8, 12, 16, 20, 24, 30})
        for (int kind = 0; kind < 4; ++kind)
            for (int style : {0, 0x01, 0x04, 0x10, 0x3F & ~0x40, 0x21, 0x1B}) {
                const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
                add_random_block(b, rng, w, h, kOrients[rng() % 4], uint8_t(style), kind, depth,
                                 depth == 30 ? 0 : static_cast<int>(rng() % 2));
            }
    // Extremes of the 30-plane range, both signs.
    BlockSpec s{};
    s.offset = b.pool.size();
    s.stride = 8;
    s.width = 8;
    s.height = 8;
    s.orientation = kHH;
    s.num_bitplanes = 30;
    for (int k = 0; k < 64; ++k) b.pool.push_back((k % 3 == 0) ? -((1 << 30) - 1) : (k % 3 == 1 ? (1 << 30) - 1 : k));
    b.blocks.push_back(s);
    GpuRun g;
    ASSERT_NO_FATAL_FAILURE(run(b, g));
    EXPECT_EQ(compare_with_cpu(b, g), 0u) << "of " << b.blocks.size() << " blocks";
}

/** Blocks coded down to a lowest plane (tier1_plane_floor.h): above, at and
 *  under their data's top plane, in every style that changes segments. */
void check_LowestPlanes(Runner run)
{
    std::mt19937 rng(207);
    Batch b;
    for (int style : {0, 0x01, 0x04, 0x10, 0x21, 0x1B, 0x3F})
        for (int kind = 0; kind < 4; ++kind)
            for (int lowest : {1, 2, 5, 9, 13}) {
                const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
                add_random_block(b, rng, w, h, kOrients[rng() % 4], uint8_t(style), kind, 12,
                                 static_cast<int>(rng() % 2));
                b.blocks.back().lowest_plane = static_cast<uint8_t>(lowest);
            }
    GpuRun g;
    ASSERT_NO_FATAL_FAILURE(run(b, g));
    EXPECT_EQ(compare_with_cpu(b, g), 0u) << "of " << b.blocks.size() << " blocks";
}

void check_RejectedJobsReportAStatusAndWriteNothing(Runner run)
{
    std::mt19937 rng(203);
    Batch b;
    add_random_block(b, rng, 32, 32, kLL, 0, 1, 10, 0);                            // fine
    add_random_block(b, rng, 32, 32, kLL, cblk_style::kHighThroughput, 1, 10, 0);  // HT
    add_random_block(b, rng, 32, 32, kHL, 0, 1, 12, 0);
    b.blocks.back().num_bitplanes = 11;  // data too deep
    add_random_block(b, rng, 16, 16, kLH, 0, 1, 8, 0);
    b.blocks.back().num_bitplanes = 31;  // too many planes
    add_random_block(b, rng, 1, 1, kLH, 0, 1, 8, 0);
    b.blocks.back().width = 2048;  // geometry (reads nothing)
    b.blocks.back().capacity = 64;
    add_random_block(b, rng, 0 + 5, 3, kHH, 0, 3, 4, 0);
    b.blocks.back().width = 0;  // empty: ok, no passes
    add_random_block(b, rng, 32, 32, kHH, 0, 1, 10, 0);
    b.blocks.back().capacity = 100;                         // too small: overflow
    add_random_block(b, rng, 64, 64, kHH, 0x3F, 1, 14, 0);  // fine, every style bit but HT
    GpuRun g;
    ASSERT_NO_FATAL_FAILURE(run(b, g));
    EXPECT_EQ(g.results[0].status, kGpuTier1Ok);
    EXPECT_EQ(g.results[1].status, kGpuTier1Unsupported);
    EXPECT_EQ(g.results[2].status, kGpuTier1DataTooDeep);
    EXPECT_EQ(g.results[2].data_bitplanes, 12);
    EXPECT_EQ(g.results[3].status, kGpuTier1BadBitplanes);
    EXPECT_EQ(g.results[4].status, kGpuTier1BadGeometry);
    EXPECT_EQ(g.results[5].status, kGpuTier1Ok);
    EXPECT_EQ(g.results[5].num_passes, 0u);
    EXPECT_EQ(g.results[6].status, kGpuTier1Overflow);
    EXPECT_EQ(g.results[7].status, kGpuTier1Ok);
    // Rejected jobs leave their regions as they were (the geometry and
    // unsupported cases never reach the coder).
    for (size_t k : {size_t{1}, size_t{3}, size_t{4}})
        for (size_t q = 0; q < g.jobs[k].out_capacity; ++q)
            ASSERT_EQ(g.arena[g.jobs[k].out_offset + q], kArenaFill) << "job " << k;
    // No job wrote outside its region (the gaps), and the accepted ones match the CPU.
    EXPECT_EQ(compare_accepted_with_cpu(b, g), 0u);
}

void check_TightCapacitiesFitOrOverflow(Runner run)
{
    std::mt19937 rng(204);
    Batch b;
    std::vector<size_t> ref_bytes;
    for (int k = 0; k < 256; ++k) {
        const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
        const int depth = 1 + static_cast<int>(rng() % 14);
        add_random_block(b, rng, w, h, kOrients[k % 4], uint8_t(rng() % 64), static_cast<int>(rng() % 3), depth, 0);
        BlockSpec &s = b.blocks.back();
        EncodedCodeBlock ref;
        encode_code_block(b.pool.data() + s.offset, s.stride, w, h,
                          Tier1EncodeParams{s.orientation, s.style, s.num_bitplanes}, ref);
        const size_t enough = 1 + ref.data.size() + t1core::t1_pass_byte_bound(w, h);
        s.capacity = (k % 2) ? enough : std::max<size_t>(1, enough / 2);
        ref_bytes.push_back(ref.data.size());
    }
    GpuRun g;
    ASSERT_NO_FATAL_FAILURE(run(b, g));
    size_t fitted = 0;
    for (size_t k = 0; k < b.blocks.size(); ++k) {
        if (k % 2)
            EXPECT_EQ(g.results[k].status, kGpuTier1Ok) << "job " << k;
        else
            EXPECT_TRUE(g.results[k].status == kGpuTier1Ok || g.results[k].status == kGpuTier1Overflow);
        fitted += g.results[k].status == kGpuTier1Ok;
    }
    EXPECT_GT(fitted, b.blocks.size() / 2 - 1);
    EXPECT_EQ(compare_accepted_with_cpu(b, g), 0u);
}

// ---------------------------------------------------- realistic batch (DWT)

/** A natural-looking 12-bit image: smooth shading, a few edges, texture and noise. */
std::vector<int32_t> natural_image(std::mt19937 &rng, uint32_t w, uint32_t h, int comp)
{
    std::vector<int32_t> img(size_t{w} * h);
    std::normal_distribution<double> noise(0.0, 6.0);
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            double v = 1600 + 900 * std::sin(x * 0.004 + comp) * std::cos(y * 0.006);
            if ((x - 0.4 * w) * (x - 0.4 * w) + (y - 0.5 * h) * (y - 0.5 * h) < 0.04 * w * w) v += 700;  // disc
            if (x > 0.7 * w && y < 0.3 * h) v = 300 + 250 * (((x / 9) + (y / 7)) % 2);  // checker texture
            v += 120 * std::sin(x * 0.31 + y * 0.17) + noise(rng);
            img[size_t{y} * w + x] = std::clamp(static_cast<int32_t>(std::lround(v)), 0, 4095) - 2048;
        }
    return img;
}

/** One level of the reversible 5/3 lifting (Annex F) along a line, in place, Mallat order. */
void lift53(int32_t *line, size_t step, uint32_t n, std::vector<int32_t> &tmp)
{
    if (n < 2) return;
    tmp.resize(n);
    for (uint32_t k = 0; k < n; ++k) tmp[k] = line[k * step];
    auto at = [&](int64_t k) {  // symmetric extension
        while (k < 0 || k >= n) k = k < 0 ? -k : 2 * (int64_t{n} - 1) - k;
        return k;
    };
    std::vector<int32_t> x(tmp);
    for (uint32_t k = 1; k < n; k += 2) x[k] = tmp[k] - ((tmp[at(k - 1)] + tmp[at(k + 1)]) >> 1);
    auto xo = [&](int64_t k) { return x[at(k)]; };
    for (uint32_t k = 0; k < n; k += 2) x[k] = tmp[k] + ((xo(int64_t{k} - 1) + xo(k + 1) + 2) >> 2);
    const uint32_t lo = (n + 1) / 2;
    for (uint32_t k = 0; k < n; ++k) line[(k % 2 ? lo + k / 2 : k / 2) * step] = x[k];
}

/** Code-blocks of a 5-level 5/3-transformed natural-looking W x H image:
 *  component c quantised by 2^shift[c] (0: lossless indices), cut into
 *  cb[c]-sided blocks, coded with style[c]. */
Batch transformed_image_batch(std::mt19937 &rng, uint32_t W, uint32_t H, const std::vector<int> &shift,
                              const std::vector<uint32_t> &cbs, const std::vector<uint8_t> &styles)
{
    const int levels = 5;
    Batch b;
    std::vector<int32_t> tmp;
    for (size_t comp = 0; comp < shift.size(); ++comp) {
        std::vector<int32_t> img = natural_image(rng, W, H, static_cast<int>(comp));
        uint32_t w = W, h = H;
        struct Band {
            uint32_t x0, y0, w, h;
            BandOrientation o;
            int gain;
        };
        std::vector<Band> bands;
        for (int l = 0; l < levels; ++l) {
            for (uint32_t y = 0; y < h; ++y) lift53(img.data() + size_t{y} * W, 1, w, tmp);
            for (uint32_t x = 0; x < w; ++x) lift53(img.data() + x, W, h, tmp);
            const uint32_t lw = (w + 1) / 2, lh = (h + 1) / 2;
            bands.push_back({lw, 0, w - lw, lh, kHL, 1});
            bands.push_back({0, lh, lw, h - lh, kLH, 1});
            bands.push_back({lw, lh, w - lw, h - lh, kHH, 2});
            w = lw;
            h = lh;
        }
        bands.push_back({0, 0, w, h, kLL, 0});
        const size_t base = b.pool.size();
        b.pool.resize(base + img.size());
        for (size_t k = 0; k < img.size(); ++k) {
            const int32_t v = img[k];
            const int32_t m = (v < 0 ? -v : v) >> shift[comp];
            b.pool[base + k] = v < 0 ? -m : m;
        }
        const uint32_t cb = cbs[comp];
        for (const Band &band : bands) {
            const uint8_t nbp = static_cast<uint8_t>(12 + band.gain + 1 - shift[comp]);  // one guard bit
            for (uint32_t y = 0; y < band.h; y += cb)
                for (uint32_t x = 0; x < band.w; x += cb) {
                    BlockSpec s{};
                    s.offset = base + size_t{band.y0 + y} * W + band.x0 + x;
                    s.stride = W;
                    s.width = std::min(cb, band.w - x);
                    s.height = std::min(cb, band.h - y);
                    s.orientation = band.o;
                    s.style = styles[comp];
                    s.num_bitplanes = nbp;
                    b.blocks.push_back(s);
                }
        }
    }
    return b;
}

void check_RealisticBatchFromTransformedImage(Runner run)
{
    std::mt19937 rng(205);
    // Odd sizes give partial code-blocks at band edges. Component 0 lossless
    // indices, 1 and 2 coarser (lossy-like, sparser); 64x64 blocks in
    // component 2; vertically causal + predictable termination in component 1.
    const Batch b = transformed_image_batch(rng, 1917, 1079, {0, 1, 2}, {32, 32, 64}, {0, 0x18, 0});
    ASSERT_GT(b.blocks.size(), 4000u);
    // Sanity of the synthetic data: most blocks code something, not all planes.
    size_t coded = 0;
    for (const BlockSpec &s : b.blocks) {
        const int p = planes_of(b.pool.data() + s.offset, s.stride, s.width, s.height);
        ASSERT_LE(p, s.num_bitplanes);
        coded += p > 0;
    }
    EXPECT_GT(coded, b.blocks.size() / 2);
    GpuRun g;
    ASSERT_NO_FATAL_FAILURE(run(b, g));
    EXPECT_EQ(compare_with_cpu(b, g), 0u) << "of " << b.blocks.size() << " blocks";
}

// Every batch on the GPU with both kernels (skipped without a device), and
// through both kernels' job bodies on the host (always; the warp body with
// its lanes run one after another), so the harness, the job layout and the
// per-job logic are covered where no GPU is.
TEST(GpuTier1, EverySizeOrientationAndStyle)
{
    SKIP_WITHOUT_DEVICE();
    check_EverySizeOrientationAndStyle(run_on_gpu);
}
TEST(GpuTier1ThreadPerBlock, EverySizeOrientationAndStyle)
{
    SKIP_WITHOUT_DEVICE();
    check_EverySizeOrientationAndStyle(run_on_gpu_thread);
}
TEST(Tier1JobOnHost, EverySizeOrientationAndStyle) { check_EverySizeOrientationAndStyle(run_on_host); }
TEST(Tier1WarpJobOnHost, EverySizeOrientationAndStyle) { check_EverySizeOrientationAndStyle(run_on_host_warp); }
TEST(GpuTier1, DeepBlocksSparseAndDense)
{
    SKIP_WITHOUT_DEVICE();
    check_DeepBlocksSparseAndDense(run_on_gpu);
}
TEST(GpuTier1ThreadPerBlock, DeepBlocksSparseAndDense)
{
    SKIP_WITHOUT_DEVICE();
    check_DeepBlocksSparseAndDense(run_on_gpu_thread);
}
TEST(Tier1JobOnHost, DeepBlocksSparseAndDense) { check_DeepBlocksSparseAndDense(run_on_host); }
TEST(Tier1WarpJobOnHost, DeepBlocksSparseAndDense) { check_DeepBlocksSparseAndDense(run_on_host_warp); }
TEST(GpuTier1, LowestPlanes)
{
    SKIP_WITHOUT_DEVICE();
    check_LowestPlanes(run_on_gpu);
}
TEST(GpuTier1ThreadPerBlock, LowestPlanes)
{
    SKIP_WITHOUT_DEVICE();
    check_LowestPlanes(run_on_gpu_thread);
}
TEST(GpuTier1TwoPhase, LowestPlanes)
{
    SKIP_WITHOUT_DEVICE();
    check_LowestPlanes(run_on_gpu_two_phase);
}
TEST(Tier1JobOnHost, LowestPlanes) { check_LowestPlanes(run_on_host); }
TEST(Tier1WarpJobOnHost, LowestPlanes) { check_LowestPlanes(run_on_host_warp); }
TEST(Tier1TwoPhaseJobOnHost, LowestPlanes) { check_LowestPlanes(run_on_host_two_phase); }

/** The frame's cost model summed on the GPU (a warp a job) and the lowest
 *  plane it sets in every job: the host's integers, on blocks of odd sides
 *  (quads cut at the edges) and of many depths. */
TEST(GpuTier1PlanPlanes, ModelAndLowestPlaneMatchTheHost)
{
    SKIP_WITHOUT_DEVICE();
    std::mt19937 rng(208);
    Batch b;
    for (int k = 0; k < 300; ++k) {
        const uint32_t w = 1 + rng() % 64, h = 1 + rng() % 64;
        const int depth = 1 + static_cast<int>(rng() % 20);
        add_random_block(b, rng, w, h, kOrients[rng() % 4], 0, static_cast<int>(rng() % 4), depth, 0);
    }
    uint64_t host_model[htenc::kHtPlaneBins] = {};
    for (const BlockSpec &s : b.blocks)
        htenc::ht_add_cleanup_model(b.pool.data() + s.offset, s.stride, s.width, s.height, host_model);
    GpuRun g;
    const size_t n = b.blocks.size();
    lay_out(b, g);
    DevMem d_pool, d_jobs, d_model;
    CUDA_OK(d_pool.alloc(b.pool.size() * sizeof(int32_t)));
    CUDA_OK(cudaMemcpy(d_pool.p, b.pool.data(), b.pool.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    for (GpuCodeBlockJob &j : g.jobs) j.coeffs += reinterpret_cast<uint64_t>(d_pool.p);
    CUDA_OK(d_jobs.alloc(n * sizeof(GpuCodeBlockJob)));
    CUDA_OK(d_model.alloc(sizeof(host_model)));
    CUDA_OK(cudaMemset(d_model.p, 0xA5, sizeof(host_model)));  // the planner clears it
    for (const uint64_t budget : {uint64_t{1}, host_model[6] / 8, host_model[3] / 8 + 1, host_model[0]}) {
        SCOPED_TRACE(testing::Message() << "budget " << budget);
        CUDA_OK(cudaMemcpy(d_jobs.p, g.jobs.data(), n * sizeof(GpuCodeBlockJob), cudaMemcpyHostToDevice));
        tier1_plan_planes_gpu(d_jobs.as<GpuCodeBlockJob>(), static_cast<uint32_t>(n), budget, d_model.as<uint64_t>(),
                              nullptr);
        CUDA_OK(cudaDeviceSynchronize());
        uint64_t model[htenc::kHtPlaneBins];
        std::vector<GpuCodeBlockJob> jobs(n);
        CUDA_OK(cudaMemcpy(model, d_model.p, sizeof(model), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(jobs.data(), d_jobs.p, n * sizeof(GpuCodeBlockJob), cudaMemcpyDeviceToHost));
        for (uint32_t p = 0; p < htenc::kHtPlaneBins; ++p) EXPECT_EQ(model[p], host_model[p]) << "plane " << p;
        const uint32_t lowest = t1core::t1_lowest_plane(host_model, budget);
        for (size_t k = 0; k < n; ++k) ASSERT_EQ(jobs[k].lowest_plane, lowest) << "job " << k;
    }
}

TEST(GpuTier1, RejectedJobsReportAStatusAndWriteNothing)
{
    SKIP_WITHOUT_DEVICE();
    check_RejectedJobsReportAStatusAndWriteNothing(run_on_gpu);
}
TEST(GpuTier1ThreadPerBlock, RejectedJobsReportAStatusAndWriteNothing)
{
    SKIP_WITHOUT_DEVICE();
    check_RejectedJobsReportAStatusAndWriteNothing(run_on_gpu_thread);
}
TEST(Tier1JobOnHost, RejectedJobsReportAStatusAndWriteNothing)
{
    check_RejectedJobsReportAStatusAndWriteNothing(run_on_host);
}
TEST(Tier1WarpJobOnHost, RejectedJobsReportAStatusAndWriteNothing)
{
    check_RejectedJobsReportAStatusAndWriteNothing(run_on_host_warp);
}
TEST(GpuTier1, TightCapacitiesFitOrOverflow)
{
    SKIP_WITHOUT_DEVICE();
    check_TightCapacitiesFitOrOverflow(run_on_gpu);
}
TEST(GpuTier1ThreadPerBlock, TightCapacitiesFitOrOverflow)
{
    SKIP_WITHOUT_DEVICE();
    check_TightCapacitiesFitOrOverflow(run_on_gpu_thread);
}
TEST(Tier1JobOnHost, TightCapacitiesFitOrOverflow) { check_TightCapacitiesFitOrOverflow(run_on_host); }
TEST(Tier1WarpJobOnHost, TightCapacitiesFitOrOverflow) { check_TightCapacitiesFitOrOverflow(run_on_host_warp); }
TEST(GpuTier1, RealisticBatchFromTransformedImage)
{
    SKIP_WITHOUT_DEVICE();
    check_RealisticBatchFromTransformedImage(run_on_gpu);
}
TEST(GpuTier1ThreadPerBlock, RealisticBatchFromTransformedImage)
{
    SKIP_WITHOUT_DEVICE();
    check_RealisticBatchFromTransformedImage(run_on_gpu_thread);
}
TEST(Tier1JobOnHost, RealisticBatchFromTransformedImage) { check_RealisticBatchFromTransformedImage(run_on_host); }
TEST(Tier1WarpJobOnHost, RealisticBatchFromTransformedImage)
{
    check_RealisticBatchFromTransformedImage(run_on_host_warp);
}

// The two-phase kernel (the default): on the GPU, and its job bodies on the host.
TEST(GpuTier1TwoPhase, EverySizeOrientationAndStyle)
{
    SKIP_WITHOUT_DEVICE();
    check_EverySizeOrientationAndStyle(run_on_gpu_two_phase);
}
TEST(Tier1TwoPhaseJobOnHost, EverySizeOrientationAndStyle)
{
    check_EverySizeOrientationAndStyle(run_on_host_two_phase);
}
TEST(GpuTier1TwoPhase, DeepBlocksSparseAndDense)
{
    SKIP_WITHOUT_DEVICE();
    check_DeepBlocksSparseAndDense(run_on_gpu_two_phase);
}
TEST(Tier1TwoPhaseJobOnHost, DeepBlocksSparseAndDense) { check_DeepBlocksSparseAndDense(run_on_host_two_phase); }
TEST(GpuTier1TwoPhase, RejectedJobsReportAStatusAndWriteNothing)
{
    SKIP_WITHOUT_DEVICE();
    check_RejectedJobsReportAStatusAndWriteNothing(run_on_gpu_two_phase);
}
TEST(Tier1TwoPhaseJobOnHost, RejectedJobsReportAStatusAndWriteNothing)
{
    check_RejectedJobsReportAStatusAndWriteNothing(run_on_host_two_phase);
}
TEST(GpuTier1TwoPhase, TightCapacitiesFitOrOverflow)
{
    SKIP_WITHOUT_DEVICE();
    check_TightCapacitiesFitOrOverflow(run_on_gpu_two_phase);
}
TEST(Tier1TwoPhaseJobOnHost, TightCapacitiesFitOrOverflow)
{
    check_TightCapacitiesFitOrOverflow(run_on_host_two_phase);
}
TEST(GpuTier1TwoPhase, RealisticBatchFromTransformedImage)
{
    SKIP_WITHOUT_DEVICE();
    check_RealisticBatchFromTransformedImage(run_on_gpu_two_phase);
}
TEST(Tier1TwoPhaseJobOnHost, RealisticBatchFromTransformedImage)
{
    check_RealisticBatchFromTransformedImage(run_on_host_two_phase);
}

// Throughput on a DCI-4K-like frame: 3 x (4096 x 2160) 12-bit, 5 levels,
// 32x32 blocks (about 26 000), lossless and two coarser quantisations.
// Not a test (no assertion on time): run it on the device machine with
//   gpu_tier1_test --gtest_also_run_disabled_tests --gtest_filter='*Throughput*'
// It prints the best of 5 launches per kernel and checks a sample of blocks.
void throughput_4k_frame(const std::vector<int> &shifts, const char *label);

TEST(GpuTier1, DISABLED_Throughput4kFrame)
{
    SKIP_WITHOUT_DEVICE();
    throughput_4k_frame({0, 0, 0}, "lossless");
    throughput_4k_frame({2, 3, 3}, "quantised");
}

void throughput_4k_frame(const std::vector<int> &shifts, const char *label)
{
    std::mt19937 rng(301);
    const Batch b = transformed_image_batch(rng, 4096, 2160, shifts, {32, 32, 32}, {0, 0, 0});
    GpuRun g;
    const Layout l = lay_out(b, g);
    const size_t n = b.blocks.size();
    DevMem d_pool, d_jobs, d_results, d_arena, d_end, d_dist, d_term, d_scratch;
    CUDA_OK(d_pool.alloc(b.pool.size() * sizeof(int32_t)));
    CUDA_OK(cudaMemcpy(d_pool.p, b.pool.data(), b.pool.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
    CUDA_OK(d_scratch.alloc(l.scratch));
    for (size_t k = 0; k < n; ++k) {
        g.jobs[k].coeffs += reinterpret_cast<uint64_t>(d_pool.p);
        g.jobs[k].scratch = reinterpret_cast<uint64_t>(d_scratch.as<uint8_t>() + l.scratch_at[k]);
    }
    CUDA_OK(d_jobs.alloc(n * sizeof(GpuCodeBlockJob)));
    CUDA_OK(d_results.alloc(n * sizeof(GpuCodeBlockResult)));
    CUDA_OK(d_arena.alloc(l.arena));
    CUDA_OK(d_end.alloc(l.passes * sizeof(uint32_t)));
    CUDA_OK(d_dist.alloc(l.passes * sizeof(uint64_t)));
    CUDA_OK(d_term.alloc(l.passes));
    CUDA_OK(cudaMemcpy(d_jobs.p, g.jobs.data(), n * sizeof(GpuCodeBlockJob), cudaMemcpyHostToDevice));
    cudaEvent_t t0, t1;
    CUDA_OK(cudaEventCreate(&t0));
    CUDA_OK(cudaEventCreate(&t1));
    for (GpuTier1Kernel kernel :
         {GpuTier1Kernel::kTwoPhase, GpuTier1Kernel::kWarpPerBlock, GpuTier1Kernel::kThreadPerBlock}) {
        float best = 1e30f, best_phase[3] = {1e30f, 1e30f, 1e30f};
        for (int rep = 0; rep < 6; ++rep) {  // the first launch warms up
            CUDA_OK(cudaMemset(d_results.p, 0, n * sizeof(GpuCodeBlockResult)));
            CUDA_OK(cudaEventRecord(t0, nullptr));
            tier1_encode_gpu(d_jobs.as<GpuCodeBlockJob>(), static_cast<uint32_t>(n), d_arena.as<uint8_t>(),
                             d_results.as<GpuCodeBlockResult>(), d_end.as<uint32_t>(), d_dist.as<uint64_t>(),
                             d_term.as<uint8_t>(), nullptr, kernel);
            CUDA_OK(cudaEventRecord(t1, nullptr));
            CUDA_OK(cudaEventSynchronize(t1));
            float ms = 0;
            CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
            if (rep > 0) best = std::min(best, ms);
        }
        if (kernel == GpuTier1Kernel::kTwoPhase) {
            // Each phase alone (phase 2 again after phase 1: the same work).
            for (int rep = 0; rep < 6; ++rep)
                for (int phase : {1, 3, 2}) {  // phase 2 last: the results are checked below
                    CUDA_OK(cudaEventRecord(t0, nullptr));
                    tier1_encode_gpu_phase(phase, d_jobs.as<GpuCodeBlockJob>(), static_cast<uint32_t>(n),
                                           d_arena.as<uint8_t>(), d_results.as<GpuCodeBlockResult>(),
                                           d_end.as<uint32_t>(), d_dist.as<uint64_t>(), d_term.as<uint8_t>(), nullptr);
                    CUDA_OK(cudaEventRecord(t1, nullptr));
                    CUDA_OK(cudaEventSynchronize(t1));
                    float ms = 0;
                    CUDA_OK(cudaEventElapsedTime(&ms, t0, t1));
                    if (rep > 0) best_phase[phase - 1] = std::min(best_phase[phase - 1], ms);
                }
            std::printf("[ tier1 ] %s two-phase: modelling %.3f ms (%.3f ms at 24 warps/SM), MQ coding %.3f ms\n",
                        label, best_phase[0], best_phase[2], best_phase[1]);
        }
        // Check every 97th block against the CPU.
        g.results.resize(n);
        CUDA_OK(cudaMemcpy(g.results.data(), d_results.p, n * sizeof(GpuCodeBlockResult), cudaMemcpyDeviceToHost));
        size_t bytes = 0, passes = 0;
        for (const GpuCodeBlockResult &r : g.results) {
            bytes += r.bytes;
            passes += r.num_passes;
        }
        for (size_t k = 0; k < n; k += 97) {
            const BlockSpec &s = b.blocks[k];
            EncodedCodeBlock ref;
            encode_code_block(b.pool.data() + s.offset, s.stride, s.width, s.height,
                              Tier1EncodeParams{s.orientation, s.style, s.num_bitplanes, s.lowest_plane}, ref);
            ASSERT_EQ(g.results[k].status, kGpuTier1Ok);
            ASSERT_EQ(g.results[k].bytes, ref.data.size()) << "block " << k;
            std::vector<uint8_t> got(ref.data.size());
            CUDA_OK(cudaMemcpy(got.data(), d_arena.as<uint8_t>() + g.jobs[k].out_offset + 1, got.size(),
                               cudaMemcpyDeviceToHost));
            ASSERT_EQ(got, ref.data) << "block " << k;
        }
        std::printf("[ tier1 ] %s %s: %zu blocks, %zu passes, %.1f MB coded: %.3f ms per frame (best of 5)\n", label,
                    kernel == GpuTier1Kernel::kTwoPhase       ? "two-phase       "
                    : kernel == GpuTier1Kernel::kWarpPerBlock ? "warp per block  "
                                                              : "thread per block",
                    n, passes, bytes / 1e6, best);
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
}

}  // namespace
}  // namespace j2kc
