// Tier-1 decoding on the GPU (ISO/IEC 15444-1 Annex D over Annex C.3): the
// job table of tier1_decode_job.h against Tier1Decoder, on the host (the same
// J2KC_HD function run in a loop, so the logic is checked without a device)
// and in the CUDA kernel; the pipeline's job gathering (append_tier1_jobs)
// against decode_code_block; and the CUDA decoder with Tier-1 on the GPU
// pixel for pixel against the CPU backend over a matrix of streams (lossy,
// lossless, 8 to 16 bits, 1 to 4 components, subsampling, every code-block
// style bit, ROI, layers, reduce, odd sizes, small and non-square blocks,
// corrupt blocks).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "codestream/markers.h"
#include "codestream/reader.h"
#include "common/status.h"
#include "j2kc.h"
#include "pipeline/tile_decoder.h"
#include "test_streams.h"
#include "tier1/tier1.h"
#include "tier1/tier1_decode_cuda.h"
#include "tier1/tier1_decode_job.h"
#include "tier1_job_table_check.h"

namespace j2kc {
namespace {

using j2kc_test::have_gpu;

constexpr int32_t kSentinel = 0x1234567;
const BandOrientation kOrients[4] = {kLL, kHL, kLH, kHH};

// ------------------------------------------------------------ job tables

/** A table of jobs with the values Tier1Decoder gives them. */
struct Table {
    std::vector<uint8_t> bytes;
    std::vector<CodewordSegment> segments;
    std::vector<T1DecodeJob> jobs;
    size_t out_elements = 0;
    size_t scratch_words = 1;
    std::vector<int32_t> expected;  ///< the whole output buffer, sentinel between blocks
    std::vector<uint8_t> expected_status;
};

std::vector<int32_t> random_block(std::mt19937 &rng, uint32_t w, uint32_t h, int depth)
{
    std::vector<int32_t> q(size_t{w} * h, 0);
    const int32_t lim = (int32_t{1} << depth) - 1;
    const int kind = int(rng() % 3);
    for (auto &v : q) {
        const int bits = kind == 0 ? depth : int(rng() % (depth + 1));
        const int32_t m = bits ? int32_t(rng() & ((1u << bits) - 1)) & lim : 0;
        v = (kind == 1 && rng() % 7) ? 0 : ((rng() & 1) ? -m : m);
    }
    return q;
}

/** Segments up to and including pass k (terminated passes end segments). */
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

Table make_table(uint32_t seed, size_t count)
{
    static const uint32_t kShapes[][2] = {{64, 64},  {32, 32},  {1, 1},   {3, 7}, {17, 64}, {64, 17}, {1024, 4},
                                          {4, 1024}, {128, 32}, {61, 63}, {5, 1}, {1, 9},   {16, 16}, {8, 64}};
    std::mt19937 rng(seed);
    Table t;
    Tier1Decoder dec;
    for (size_t i = 0; i < count; ++i) {
        uint32_t w, h;
        if (rng() % 3) {
            const auto &s = kShapes[rng() % (sizeof kShapes / sizeof kShapes[0])];
            w = s[0];
            h = s[1];
        } else {
            w = 1 + rng() % 64;
            h = 1 + rng() % 64;
        }
        T1DecodeJob job{};
        job.width = uint16_t(w);
        job.height = uint16_t(h);
        job.out_stride = w + rng() % 5;
        job.out_offset = t.out_elements + rng() % 3;
        t.out_elements = job.out_offset + size_t{job.out_stride} * h + 2;
        job.orientation = uint8_t(kOrients[rng() % 4]);
        job.style = uint8_t(rng() % 64);
        const int depth = 1 + int(rng() % 14);
        const uint8_t roi = (rng() % 4 == 0) ? uint8_t(1 + rng() % 10) : 0;
        job.num_bitplanes = uint8_t(depth + rng() % 3);
        job.roi_shift = roi;
        std::vector<uint8_t> data;
        std::vector<CodewordSegment> segs;
        const int kind = int(rng() % 10);
        if (kind < 7) {  // a real stream, whole or truncated after a random pass
            std::vector<int32_t> q = random_block(rng, w, h, depth);
            if (roi)  // ROI blocks carry the scaled magnitudes of some samples
                for (auto &v : q)
                    if (rng() % 2) v = v * (1 << roi);
            EncodedCodeBlock enc;
            encode_code_block(
                q.data(), w, w, h,
                Tier1EncodeParams{BandOrientation(job.orientation), job.style, uint8_t(job.num_bitplanes + roi)}, enc);
            job.zero_bitplanes = enc.zero_bitplanes;
            if (!enc.passes.empty()) {
                const size_t k = (kind < 4) ? enc.passes.size() - 1 : rng() % enc.passes.size();
                segs = segments_up_to(enc, k);
                uint32_t bytes = 0;
                for (const auto &s : segs) bytes += s.length;
                data.assign(enc.data.begin(), enc.data.begin() + bytes);
                if (kind == 6 && !data.empty())  // a corrupt block: flipped bits
                    for (int f = 0; f < 4; ++f) data[rng() % data.size()] ^= uint8_t(1u << (rng() % 8));
            }
        } else if (kind < 9) {  // garbage, random segments and pass counts (often invalid)
            data.resize(rng() % 300);
            for (auto &b : data) b = (rng() % 3) ? uint8_t(rng()) : 0xFF;
            uint32_t left = uint32_t(data.size());
            while (rng() % 5) {
                const uint32_t len = left ? rng() % (left + 1) : 0;
                segs.push_back({len, uint32_t(rng() % 5)});
                left -= len;
            }
            if (left && !segs.empty()) segs.back().length += left;
            job.zero_bitplanes = uint8_t(rng() % (job.num_bitplanes + roi + 2));
        }  // else: no segments, an all-zero block
        job.data_offset = t.bytes.size();
        job.data_length = uint32_t(data.size());
        job.segment_offset = uint32_t(t.segments.size());
        job.num_segments = uint32_t(segs.size());
        t.bytes.insert(t.bytes.end(), data.begin(), data.end());
        t.segments.insert(t.segments.end(), segs.begin(), segs.end());
        t.scratch_words = std::max(t.scratch_words, t1_decode_job_scratch_words(w, h));
        t.jobs.push_back(job);
    }
    // Tier1Decoder's values (or zeros where it rejects the codewords).
    t.expected.assign(t.out_elements, kSentinel);
    for (const T1DecodeJob &job : t.jobs) {
        Tier1DecodeParams p;
        p.orientation = BandOrientation(job.orientation);
        p.style = job.style;
        p.num_bitplanes = job.num_bitplanes;
        p.zero_bitplanes = job.zero_bitplanes;
        p.roi_shift = job.roi_shift;
        // An exactly sized copy, so that sanitizer builds catch reads past the end.
        std::vector<uint8_t> exact(t.bytes.begin() + ptrdiff_t(job.data_offset),
                                   t.bytes.begin() + ptrdiff_t(job.data_offset + job.data_length));
        int32_t *out = t.expected.data() + job.out_offset;
        uint8_t status = kT1JobOk;
        try {
            dec.decode(exact.empty() ? nullptr : exact.data(), t.segments.data() + job.segment_offset, job.num_segments,
                       job.width, job.height, p, out, job.out_stride);
        } catch (const Error &e) {
            EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA) << e.what();
            status = kT1JobCorrupt;
            for (uint32_t y = 0; y < job.height; ++y) std::fill_n(out + size_t{y} * job.out_stride, job.width, 0);
        }
        t.expected_status.push_back(status);
    }
    return t;
}

void expect_table_output(const Table &t, const std::vector<int32_t> &got, const std::vector<uint8_t> &status,
                         const char *what)
{
    ASSERT_EQ(status.size(), t.jobs.size());
    size_t corrupt = 0;
    for (size_t j = 0; j < t.jobs.size(); ++j) {
        EXPECT_EQ(int(status[j]), int(t.expected_status[j])) << what << " job " << j;
        corrupt += t.expected_status[j] != kT1JobOk;
    }
    ASSERT_EQ(got.size(), t.expected.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], t.expected[i]) << what << " element " << i;
    // The table must exercise both outcomes, or it tests too little.
    EXPECT_GT(corrupt, 0u);
    EXPECT_LT(corrupt, t.jobs.size() / 2);
}

TEST(Tier1JobTable, HostLoopMatchesTier1Decoder)
{
    for (uint32_t seed : {1u, 2u, 3u}) {
        const Table t = make_table(seed, 400);
        std::vector<int32_t> out(t.out_elements, kSentinel);
        std::vector<uint32_t> scratch(t.scratch_words, 0xDEADBEEF);
        std::vector<uint8_t> status;
        for (const T1DecodeJob &job : t.jobs)
            status.push_back(
                t1_decode_job(job, t.bytes.data(), t.segments.data(), out.data(), scratch.data(), scratch.size()));
        expect_table_output(t, out, status, "host job loop");
    }
}

/** The CPU's block decoder over the job table (what the CUDA decoder's
 *  workers run on a frame's host ranks): t1_decode_job's values and statuses. */
TEST(Tier1JobTable, HostBlockDecoderMatchesTier1Decoder)
{
    for (uint32_t seed : {5u, 6u}) {
        const Table t = make_table(seed, 400);
        std::vector<int32_t> out(t.out_elements, kSentinel);
        Tier1Decoder decoder;
        std::vector<uint8_t> status;
        for (const T1DecodeJob &job : t.jobs)
            status.push_back(t1_decode_job_cpu(job, t.bytes.data(), t.segments.data(), out.data(), decoder));
        expect_table_output(t, out, status, "t1_decode_job_cpu");
    }
}

/** Jobs of the given byte counts (Part-1 unless `ht` names one) and their order by decreasing bytes. */
uint32_t host_ranks_of(const std::vector<uint32_t> &lengths, int ht = -1)
{
    std::vector<T1DecodeJob> jobs(lengths.size(), T1DecodeJob{});
    for (size_t j = 0; j < jobs.size(); ++j) {
        jobs[j].width = jobs[j].height = 32;
        jobs[j].data_length = lengths[j];
        if (int(j) == ht) jobs[j].style = 0x40;
    }
    const uint32_t n = uint32_t(jobs.size());
    std::vector<uint32_t> order(n);
    tier1_decode_order(jobs.data(), n, order.data());
    return tier1_decode_host_ranks(jobs.data(), order.data(), n);
}

TEST(Tier1DecodeHostRanks, TheLargestPart1BlocksWithinTheFramesShare)
{
    EXPECT_EQ(host_ranks_of({}), 0u);
    // 400,000 bytes of small blocks and ten of 2,000: all ten, the small ones
    // being under the least bytes a host block has.
    std::vector<uint32_t> v(4000, 100);
    v.insert(v.end(), 10, 2000);
    EXPECT_EQ(host_ranks_of(v), 10u);
    // Twenty large ones: the share (a sixteenth of 440,000 bytes) takes 13.
    v.insert(v.end(), 10, 2000);
    EXPECT_EQ(host_ranks_of(v), 13u);
    // An HT block first in the order ends the count at once.
    std::vector<uint32_t> h(4000, 100);
    h.push_back(3000);
    h.insert(h.end(), 5, 2000);
    EXPECT_EQ(host_ranks_of(h, 4000), 0u);
    EXPECT_EQ(host_ranks_of(h), 6u);
    // A small frame: no block is large enough to matter.
    EXPECT_EQ(host_ranks_of(std::vector<uint32_t>(100, 255)), 0u);
    // A large frame raises the least bytes: 1,000-byte blocks stay on the GPU.
    std::vector<uint32_t> big(4000, 1000);
    big.insert(big.end(), 5, 2500);
    EXPECT_EQ(host_ranks_of(big), 5u);
}

TEST(Tier1JobTable, OrderIsAPermutationByDecreasingBytes)
{
    const Table t = make_table(4, 300);
    const uint32_t n = uint32_t(t.jobs.size());
    std::vector<uint32_t> order(n, ~0u);
    tier1_decode_order(t.jobs.data(), n, order.data());
    std::vector<bool> seen(n, false);
    for (uint32_t j = 0; j < n; ++j) {
        ASSERT_LT(order[j], n);
        EXPECT_FALSE(seen[order[j]]);
        seen[order[j]] = true;
        if (j) {
            const uint32_t a = t.jobs[order[j - 1]].data_length, b = t.jobs[order[j]].data_length;
            EXPECT_GE(a, b);
            if (a == b) {
                EXPECT_LT(order[j - 1], order[j]);  // ties keep table order
            }
        }
    }
}

TEST(Tier1JobTable, OrderSortsByEveryByteOfTheLengths)
{
    // Lengths that differ in each of their four bytes, with ties: the same
    // order as a stable sort by decreasing length.
    std::mt19937 rng(3);
    std::vector<T1DecodeJob> jobs(5000, T1DecodeJob{});
    const uint32_t masks[] = {0xFFu, 0xFF00u, 0xFF0000u, 0xFF000000u, 0xFFFFFFFFu};
    for (T1DecodeJob &job : jobs) job.data_length = static_cast<uint32_t>(rng()) & masks[rng() % 5] & ~0x0F0Fu;
    const uint32_t n = uint32_t(jobs.size());
    std::vector<uint32_t> order(n), expected(n);
    tier1_decode_order(jobs.data(), n, order.data());
    for (uint32_t j = 0; j < n; ++j) expected[j] = j;
    std::stable_sort(expected.begin(), expected.end(),
                     [&](uint32_t a, uint32_t b) { return jobs[a].data_length > jobs[b].data_length; });
    EXPECT_EQ(order, expected);
}

TEST(Tier1JobTable, TooLittleScratchIsReportedNotOverrun)
{
    const Table t = make_table(9, 50);
    std::vector<int32_t> out(t.out_elements, kSentinel);
    std::vector<uint32_t> scratch(8);
    for (const T1DecodeJob &job : t.jobs) {
        const bool fits = t1_decode_job_scratch_words(job.width, job.height) <= scratch.size();
        const uint8_t st = t1_decode_job(job, t.bytes.data(), t.segments.data(), out.data(), scratch.data(), 8);
        if (!fits && job.width && job.height) {
            EXPECT_EQ(st, kT1JobUnsupported);
        }
    }
}

template <typename T>
T *to_device(const std::vector<T> &v)
{
    void *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(v.size() * sizeof(T), 1)), cudaSuccess);
    if (!v.empty()) {
        EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
    return static_cast<T *>(p);
}

TEST(GpuTier1Decode, KernelMatchesTier1Decoder)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (uint32_t seed : {11u, 12u}) {
        const Table t = make_table(seed, seed == 11 ? 500 : 3000);
        const std::vector<int32_t> init(t.out_elements, kSentinel);
        T1DecodeJob *jobs = to_device(t.jobs);
        uint8_t *bytes = to_device(t.bytes);
        CodewordSegment *segs = to_device(t.segments);
        int32_t *out = to_device(init);
        uint32_t *scratch = nullptr;
        uint8_t *status = nullptr;
        const uint32_t n = uint32_t(t.jobs.size());
        ASSERT_EQ(cudaMalloc(&scratch, size_t{tier1_decode_gpu_threads(n, 1)} * t.scratch_words * 4), cudaSuccess);
        ASSERT_EQ(cudaMalloc(&status, n), cudaSuccess);
        // Lanes per warp: the default, then others (later runs find scratch and output written before).
        // With and without an order (by decreasing bytes, as the pipeline passes; or reversed).
        std::vector<uint32_t> by_bytes(n), reversed(n);
        tier1_decode_order(t.jobs.data(), n, by_bytes.data());
        for (uint32_t j = 1; j < n; ++j)
            ASSERT_GE(t.jobs[by_bytes[j - 1]].data_length, t.jobs[by_bytes[j]].data_length);
        for (uint32_t j = 0; j < n; ++j) reversed[j] = n - 1 - j;
        uint32_t *order_bytes = to_device(by_bytes), *order_reversed = to_device(reversed);
        const uint32_t *orders[] = {order_bytes, nullptr, order_reversed, nullptr, order_bytes, order_bytes, nullptr};
        int run = 0;
        for (uint32_t lanes : {0u, 1u, 7u, 32u, 2u, 4u, 8u}) {
            ASSERT_LE(tier1_decode_gpu_threads(n, lanes), tier1_decode_gpu_threads(n, 1));
            tier1_decode_gpu(jobs, n, bytes, segs, out, scratch, t.scratch_words, status, nullptr, lanes,
                             orders[run++]);
            ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
            std::vector<int32_t> got(t.out_elements);
            std::vector<uint8_t> st(n);
            ASSERT_EQ(cudaMemcpy(got.data(), out, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
            ASSERT_EQ(cudaMemcpy(st.data(), status, n, cudaMemcpyDeviceToHost), cudaSuccess);
            expect_table_output(t, got, st, ("CUDA kernel, lanes " + std::to_string(lanes)).c_str());
        }
        cudaFree(jobs);
        cudaFree(bytes);
        cudaFree(segs);
        cudaFree(out);
        cudaFree(scratch);
        cudaFree(status);
        cudaFree(order_bytes);
        cudaFree(order_reversed);
    }
}

TEST(GpuTier1Decode, LanesGrowWithTheLaunchUnlessGiven)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    EXPECT_EQ(tier1_decode_gpu_lanes(3, 1u << 30), 3u);
    EXPECT_EQ(tier1_decode_gpu_lanes(40, 1), 32u);
    EXPECT_EQ(tier1_decode_gpu_lanes(0, 1), kT1DecodeDefaultLanes);
    EXPECT_EQ(tier1_decode_gpu_lanes(0, 1u << 30), 8u);
    uint32_t last = 0;
    for (uint32_t positions = 1; positions < (1u << 24); positions *= 2) {
        const uint32_t lanes = tier1_decode_gpu_lanes(0, positions);
        EXPECT_GE(lanes, last) << positions;
        // More lanes a warp never asks for more scratch than one lane does.
        EXPECT_LE(tier1_decode_gpu_threads(positions), tier1_decode_gpu_threads(positions, 1)) << positions;
        last = lanes;
    }
}

TEST(Tier1DecodeBatch, PositionsAreTheTablesTimesTheLongest)
{
    T1DecodeBatch batch;
    EXPECT_EQ(tier1_decode_batch_positions(batch), 0u);
    batch.num_tables = 3;
    batch.tables[0].num_jobs = 7;
    batch.tables[1].num_jobs = 20;
    batch.tables[2].num_jobs = 0;
    EXPECT_EQ(tier1_decode_batch_positions(batch), 60u);
    batch.tables[1].num_jobs = UINT32_MAX / 2;  // three times that is past a 32-bit position
    EXPECT_THROW(tier1_decode_batch_positions(batch), Error);
    batch.num_tables = kT1DecodeMaxTables + 1;
    EXPECT_THROW(tier1_decode_batch_positions(batch), Error);
}

// Tables of different lengths, with and without an order, in one launch:
// each gets exactly what it gets alone, in its own output and statuses.
TEST(GpuTier1Decode, BatchOfTablesMatchesEachAlone)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const uint32_t sizes[] = {700, 60, 2500};
    std::vector<Table> tables;
    for (uint32_t k = 0; k < 3; ++k) tables.push_back(make_table(21 + k, sizes[k]));
    T1DecodeBatch batch;
    std::vector<void *> allocations;
    size_t scratch_words = 1;
    for (uint32_t k = 0; k < 3; ++k) {
        const Table &t = tables[k];
        const uint32_t n = uint32_t(t.jobs.size());
        std::vector<uint32_t> order(n);
        tier1_decode_order(t.jobs.data(), n, order.data());
        T1DecodeTable &d = batch.tables[k];
        d.jobs = to_device(t.jobs);
        d.bytes = to_device(t.bytes);
        d.segments = to_device(t.segments);
        d.order = k == 1 ? nullptr : to_device(order);
        d.out = to_device(std::vector<int32_t>(t.out_elements, kSentinel));
        d.status = to_device(std::vector<uint8_t>(n, 0xEE));
        d.num_jobs = n;
        allocations.insert(allocations.end(), {(void *)d.jobs, (void *)d.bytes, (void *)d.segments, (void *)d.order,
                                               (void *)d.out, (void *)d.status});
        scratch_words = std::max(scratch_words, t.scratch_words);
    }
    batch.num_tables = 3;
    uint32_t *scratch = nullptr;
    ASSERT_EQ(
        cudaMalloc(&scratch, size_t{tier1_decode_gpu_threads(tier1_decode_batch_positions(batch))} * scratch_words * 4),
        cudaSuccess);
    tier1_decode_gpu_batch(batch, scratch, scratch_words, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    for (uint32_t k = 0; k < 3; ++k) {
        const Table &t = tables[k];
        std::vector<int32_t> got(t.out_elements);
        std::vector<uint8_t> st(t.jobs.size());
        ASSERT_EQ(cudaMemcpy(got.data(), batch.tables[k].out, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(st.data(), batch.tables[k].status, st.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        expect_table_output(t, got, st, ("batched table " + std::to_string(k)).c_str());
    }
    cudaFree(scratch);
    for (void *p : allocations) cudaFree(p);
}

/** The first ranks of a table left to the host (T1DecodeTable::first_rank):
 *  the kernels leave their blocks and statuses alone, and the host's values,
 *  placed by tier1_place_host_blocks_gpu, complete the table's output. */
TEST(GpuTier1Decode, HostRanksAreLeftToTheHostAndPlaced)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const Table t = make_table(31, 900);
    const uint32_t n = uint32_t(t.jobs.size()), host = 57;
    std::vector<uint32_t> order(n);
    tier1_decode_order(t.jobs.data(), n, order.data());
    T1DecodeBatch batch = tier1_decode_single(to_device(t.jobs), n, to_device(t.bytes), to_device(t.segments),
                                              to_device(std::vector<int32_t>(t.out_elements, kSentinel)),
                                              to_device(std::vector<uint8_t>(n, 0xEE)), to_device(order));
    T1DecodeTable &d = batch.tables[0];
    d.first_rank = host;
    EXPECT_EQ(tier1_decode_batch_positions(batch), n - host);
    uint32_t *scratch = nullptr;
    ASSERT_EQ(cudaMalloc(&scratch, size_t{tier1_decode_gpu_threads(n - host)} * t.scratch_words * 4), cudaSuccess);
    tier1_decode_gpu_batch(batch, scratch, t.scratch_words, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<int32_t> got(t.out_elements);
    std::vector<uint8_t> st(n);
    ASSERT_EQ(cudaMemcpy(got.data(), d.out, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(st.data(), d.status, n, cudaMemcpyDeviceToHost), cudaSuccess);
    // The host ranks' blocks and statuses as they were; then the host decodes them.
    std::vector<T1HostBlock> blocks;
    std::vector<int32_t> values;
    Tier1Decoder decoder;
    for (uint32_t r = 0; r < host; ++r) {
        T1DecodeJob job = t.jobs[order[r]];
        EXPECT_EQ(st[order[r]], 0xEE) << "rank " << r;
        for (uint32_t y = 0; y < job.height; ++y)
            for (uint32_t x = 0; x < job.width; ++x)
                ASSERT_EQ(got[job.out_offset + size_t{y} * job.out_stride + x], kSentinel) << "rank " << r;
        blocks.push_back({values.size(), job.out_offset, job.out_stride, job.width, job.height});
        job.out_offset = values.size();
        job.out_stride = job.width;
        values.resize(values.size() + size_t{job.width} * job.height, kSentinel);
        st[order[r]] = t1_decode_job_cpu(job, t.bytes.data(), t.segments.data(), values.data(), decoder);
    }
    T1HostBlock *dev_blocks = to_device(blocks);
    int32_t *dev_values = to_device(values);
    tier1_place_host_blocks_gpu(dev_blocks, host, dev_values, d.out, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got.data(), d.out, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    expect_table_output(t, got, st, "GPU ranks with host ranks placed");
    for (void *p : {(void *)d.jobs, (void *)d.bytes, (void *)d.segments, (void *)d.order, (void *)d.out,
                    (void *)d.status, (void *)scratch, (void *)dev_blocks, (void *)dev_values})
        cudaFree(p);
}

// ------------------------------------------------------------ streams

/// Where quiet() keeps the decoders' warnings (the corrupt-block counts), when set.
std::vector<std::string> *g_warnings = nullptr;

void quiet(void *, int level, const char *msg)
{
    if (level == J2KC_LOG_WARNING && g_warnings) g_warnings->push_back(msg);
    if (level <= J2KC_LOG_ERROR && std::getenv("J2KC_TEST_VERBOSE")) std::fprintf(stderr, "j2kc: %s\n", msg);
}

struct Source {
    uint32_t w, h, n;
    uint8_t prec;
    bool lossless;
    uint32_t tile;
    uint64_t budget;
    int cbw, cbh;  // log2
    int layers;
    uint32_t seed;
};

std::vector<uint8_t> encode(const Source &s)
{
    const j2kc_test::Planes16 frame = j2kc_test::synthetic_frame(s.w, s.h, s.n, s.prec, s.seed, 0.06);
    j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
    cfg.lossless = s.lossless;
    cfg.tile_width = cfg.tile_height = s.tile;
    cfg.frame_bytes = s.budget;
    cfg.cblk_width_log2 = s.cbw;
    cfg.cblk_height_log2 = s.cbh;
    cfg.layers = s.layers;
    return j2kc_test::encode_stream(frame.image, cfg);
}

std::vector<uint8_t> read_file(const std::string &name)
{
    const char *dir = std::getenv("J2KC_TEST_DATA");
    std::ifstream f(std::string(dir ? dir : "tests/data") + "/" + name, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

/** Flips bits in the packet bodies (after the first SOD) so that some code-blocks turn corrupt. */
std::vector<uint8_t> corrupt(std::vector<uint8_t> cs, uint32_t seed)
{
    size_t sod = 0;
    for (size_t i = 0; i + 1 < cs.size(); ++i)
        if (cs[i] == 0xFF && cs[i + 1] == 0x93) {
            sod = i + 2;
            break;
        }
    std::mt19937 rng(seed);
    if (sod == 0 || cs.size() < sod + 64) return cs;
    for (int k = 0; k < 12; ++k) {
        const size_t at = sod + 32 + rng() % (cs.size() - sod - 34);
        if (cs[at] == 0xFF || cs[at - 1] == 0xFF) continue;
        const uint8_t v = uint8_t(cs[at] ^ (1u << (rng() % 7)));
        if (v != 0xFF) cs[at] = v;
    }
    return cs;
}

/** Lowers every exponent of the main header's QCD to 1, so that Mb falls
 *  under the zero bit-planes the packet headers signal and those blocks are
 *  rejected (bit flips alone seldom make a block that Tier-1 can tell is
 *  corrupt: passes beyond the last plane are ignored, not refused). */
std::vector<uint8_t> lower_exponents(std::vector<uint8_t> cs)
{
    for (size_t i = 2; i + 5 < cs.size(); ++i) {
        if (cs[i] != 0xFF || cs[i + 1] != 0x5C) continue;
        const size_t len = size_t{cs[i + 2]} << 8 | cs[i + 3];
        const bool reversible = (cs[i + 4] & 0x1F) == 0;
        const size_t step = reversible ? 1 : 2;
        for (size_t at = i + 5; at + step <= i + 2 + len && at + step <= cs.size(); at += step)
            cs[at] = uint8_t(reversible ? 1u << 3 : (1u << 3) | (cs[at] & 0x07));
        break;
    }
    return cs;
}

/** Every stream of the matrix: our encoder's shapes, opj_compress streams
 *  with code-block styles and ROI (tests/data/t1gpu), the shared samples,
 *  corrupted copies and copies whose QCD lies. */
std::vector<std::vector<uint8_t>> stream_matrix()
{
    static const std::vector<std::vector<uint8_t>> streams = [] {
        const Source sources[] = {
            {97, 61, 3, 8, false, 0, 0, 6, 6, 1, 1},    {97, 61, 3, 8, true, 0, 0, 5, 5, 1, 2},
            {130, 77, 3, 12, false, 64, 0, 4, 6, 3, 3}, {45, 130, 1, 10, true, 32, 0, 2, 2, 1, 4},
            {97, 61, 3, 8, false, 0, 300, 6, 4, 2, 5},  {200, 150, 4, 8, false, 0, 0, 3, 5, 1, 6},
            {33, 17, 3, 16, true, 0, 0, 6, 6, 1, 7},    {257, 131, 3, 12, false, 0, 0, 6, 6, 4, 8},
            {71, 300, 1, 16, false, 0, 0, 2, 8, 1, 9},  {64, 64, 2, 9, true, 0, 0, 6, 6, 2, 10},
        };
        std::vector<std::vector<uint8_t>> v;
        for (const Source &s : sources) v.push_back(encode(s));
        for (const char *name :
             {"t1gpu/m1_lossless.j2k", "t1gpu/m21_16bit.j2k", "t1gpu/m34_sub.j2k", "t1gpu/m48_roi_lossless.j2k",
              "t1gpu/m63_layers.j2k", "t1gpu/m6_nonsq.j2k", "t1gpu/m8_roi.j2k", "cs_gray.jp2", "cs_gray12_poc.j2k",
              "cs_gray_sop_eph_prec.j2k", "cs_rgb.jp2", "cs_rgb_tiles_tpr.j2k"}) {
            v.push_back(read_file(name));
            EXPECT_FALSE(v.back().empty()) << name;
        }
        const size_t clean = v.size();
        for (size_t i = 0; i < clean; i += 2) v.push_back(corrupt(v[i], uint32_t(100 + i)));
        for (size_t i = 1; i < clean; i += 4) v.push_back(lower_exponents(v[i]));
        return v;
    }();
    return streams;
}

/** The pipeline's job gathering, run on the host: append_tier1_jobs and
 *  t1_decode_job give the planes and corrupt counts decode_code_block does. */
TEST(Tier1JobTable, GatheredJobsMatchDecodeCodeBlock)
{
    size_t streams_checked = 0, corrupt_seen = 0;
    for (const auto &file : stream_matrix()) {
        if (file.empty()) continue;
        // Raw codestreams only here (the API tests below take the JP2 ones).
        if (file.size() < 4 || file[0] != 0xFF || file[1] != 0x4F) continue;
        Codestream cs;
        try {
            cs = parse_codestream(file.data(), file.size());
        } catch (const Error &) {
            continue;
        }
        for (uint32_t reduce : {0u, 1u}) {
            for (const Tile &tile : cs.tiles) {
                const TileDecodeOptions options{reduce, reduce ? 1u : 0u};
                JobTableRun run;
                if (!decode_tile_both_ways(cs, tile, options, t1_decode_job, run)) continue;
                EXPECT_EQ(run.corrupt_jobs, run.corrupt_cpu);
                ASSERT_TRUE(run.cpu == run.jobs)
                    << "stream " << streams_checked << " tile " << tile.index << " reduce " << reduce;
                EXPECT_EQ(run.cpu.back(), JobTableRun::kSentinel);
                corrupt_seen += run.corrupt_cpu;
            }
        }
        ++streams_checked;
    }
    EXPECT_GE(streams_checked, 15u);
    EXPECT_GT(corrupt_seen, 0u);
}

// ------------------------------------------------------------ the decoder

struct Decoded {
    int status = J2KC_OK;
    std::vector<uint8_t> bytes;
};

/** Decodes with a fresh decoder into planar 16-bit planes. */
Decoded decode(const std::vector<uint8_t> &cs, j2kc_backend backend, int tier1_on_gpu, int reduce, int layers)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.log = quiet;
    cfg.threads = 2;
    cfg.reduce = reduce;
    cfg.layers = layers;
    cfg.tier1_on_gpu = tier1_on_gpu;
    Decoded d;
    j2kc_decoder *dec = nullptr;
    d.status = j2kc_decoder_create(&dec, &cfg);
    if (d.status != J2KC_OK) return d;
    std::vector<j2kc_component_info> ci(16);
    j2kc_stream_info info{};
    info.struct_size = sizeof(info);
    info.components = ci.data();
    info.components_capacity = 16;
    d.status = j2kc_decoder_parse(dec, cs.data(), cs.size(), &info);
    if (d.status == J2KC_OK) {
        std::vector<j2kc_component> comps(info.num_components);
        size_t total = 0;
        std::vector<size_t> at;
        for (uint32_t c = 0; c < info.num_components; ++c) {
            at.push_back(total);
            total += size_t{ci[c].width} * ci[c].height * 2;
        }
        d.bytes.assign(total + 1, 0x5A);
        for (uint32_t c = 0; c < info.num_components; ++c)
            comps[c] =
                j2kc_test::component16(reinterpret_cast<uint64_t>(d.bytes.data() + at[c]), ci[c].width, ci[c].height,
                                       ci[c].precision, ptrdiff_t(ci[c].width) * 2, 2, ci[c].dx, ci[c].dy);
        j2kc_image image = j2kc_test::image_view(comps, info.width, info.height);
        d.status = j2kc_decode(dec, cs.data(), cs.size(), &image);
        // Tier-1 on the GPU reports GPU time in the tier1 stage.
        j2kc_stage_times t{};
        EXPECT_EQ(j2kc_decoder_stage_times(dec, &t), J2KC_OK);
        EXPECT_GE(t.tier1, 0.0);
    }
    j2kc_decoder_free(&dec);
    return d;
}

TEST(Tier1OnGpuConfig, DefaultsAreAutoAndZeroInitIsCpu)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    EXPECT_EQ(cfg.tier1_on_gpu, -1);
    j2kc_decoder_config zero{};
    EXPECT_EQ(zero.tier1_on_gpu, 0);
    // The CPU backend ignores the field.
    const auto &streams = stream_matrix();
    const Decoded a = decode(streams[0], J2KC_BACKEND_CPU, 1, 0, 0);
    const Decoded b = decode(streams[0], J2KC_BACKEND_CPU, 0, 0, 0);
    EXPECT_EQ(a.status, J2KC_OK);
    EXPECT_TRUE(a.bytes == b.bytes);
}

void check_matrix(int tier1_on_gpu)
{
    const auto &streams = stream_matrix();
    size_t compared = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
        for (int reduce : {0, 1, 2}) {
            for (int layers : {0, 1}) {
                if (reduce == 2 && layers) continue;
                const Decoded cpu = decode(streams[i], J2KC_BACKEND_CPU, 0, reduce, layers);
                const Decoded gpu = decode(streams[i], J2KC_BACKEND_CUDA, tier1_on_gpu, reduce, layers);
                ASSERT_EQ(gpu.status, cpu.status) << "stream " << i << " reduce " << reduce << " layers " << layers;
                if (cpu.status != J2KC_OK) continue;
                ASSERT_EQ(gpu.bytes.size(), cpu.bytes.size());
                EXPECT_TRUE(gpu.bytes == cpu.bytes) << "stream " << i << " reduce " << reduce << " layers " << layers;
                ++compared;
            }
        }
    }
    EXPECT_GE(compared, 60u);
}

TEST(GpuTier1DecodePipeline, GpuTier1MatchesCpuBackendPixelForPixel)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_matrix(1);
}

TEST(GpuTier1DecodePipeline, CpuTier1OnCudaBackendMatchesCpuBackend)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_matrix(0);
}

/** The host ranks tier1_decode_host_ranks gives the job table of a stream's first tile. */
uint32_t first_tile_host_ranks(const std::vector<uint8_t> &file)
{
    const Codestream cs = parse_codestream(file.data(), file.size());
    const Tile &tile = cs.tiles.at(0);
    const TileDecodeOptions options{0, 0};
    TileBlocks blocks;
    TileCoefficients planes;
    prepare_tile(cs, tile, options, blocks, planes);
    std::vector<size_t> offset;
    size_t total = 0;
    for (const ComponentPlane &p : planes.components) {
        offset.push_back(total);
        total += p.samples();
    }
    Tier1JobTable table;
    append_tier1_jobs(cs, tile, options, blocks, planes, offset.data(), table);
    const uint32_t n = uint32_t(table.jobs.size());
    std::vector<uint32_t> order(n);
    tier1_decode_order(table.jobs.data(), n, order.data());
    return tier1_decode_host_ranks(table.jobs.data(), order.data(), n);
}

/** A frame whose largest blocks the decoder's workers decode (host ranks),
 *  clean, with flipped bits and with a lying QCD: the pixels and the
 *  corrupt-block counts of the CPU backend. */
TEST(GpuTier1DecodePipeline, HostRanksMatchCpuBackend)
{
    const std::vector<uint8_t> clean = encode({384, 256, 3, 12, true, 0, 0, 6, 6, 1, 41});
    ASSERT_GT(first_tile_host_ranks(clean), 2u);
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    size_t corrupt_seen = 0;
    for (const std::vector<uint8_t> &cs : {clean, corrupt(clean, 5), corrupt(clean, 6), lower_exponents(clean)}) {
        std::vector<std::string> cpu_warnings, gpu_warnings;
        g_warnings = &cpu_warnings;
        const Decoded cpu = decode(cs, J2KC_BACKEND_CPU, 0, 0, 0);
        g_warnings = &gpu_warnings;
        const Decoded gpu = decode(cs, J2KC_BACKEND_CUDA, 1, 0, 0);
        g_warnings = nullptr;
        ASSERT_EQ(gpu.status, cpu.status);
        EXPECT_TRUE(gpu.bytes == cpu.bytes);
        EXPECT_EQ(gpu_warnings, cpu_warnings);
        corrupt_seen += !cpu_warnings.empty();
    }
    EXPECT_GE(corrupt_seen, 1u);
}

/** Several frames in flight through one decoder, GPU Tier-1, equal to the CPU backend frame by frame. */
TEST(GpuTier1DecodePipeline, QueuedFramesMatchCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const auto &streams = stream_matrix();
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CUDA;
    cfg.log = quiet;
    cfg.threads = 3;
    cfg.frames_in_flight = 3;
    j2kc_decoder *dec = nullptr;
    ASSERT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    // Same-shaped frames only (one output layout): the first stream and its corrupted copy, repeated.
    const std::vector<uint8_t> &a = streams[0];
    const std::vector<uint8_t> b = corrupt(a, 7);
    const Decoded ra = decode(a, J2KC_BACKEND_CPU, 0, 0, 0), rb = decode(b, J2KC_BACKEND_CPU, 0, 0, 0);
    ASSERT_EQ(ra.status, J2KC_OK);
    std::vector<j2kc_component_info> ci(16);
    j2kc_stream_info info{};
    info.struct_size = sizeof(info);
    info.components = ci.data();
    info.components_capacity = 16;
    ASSERT_EQ(j2kc_decoder_parse(dec, a.data(), a.size(), &info), J2KC_OK);
    std::vector<std::vector<uint8_t>> outs;
    std::vector<std::vector<j2kc_component>> comps;
    std::vector<j2kc_image> images;
    const int frames = 8;
    for (int f = 0; f < frames; ++f) {
        outs.emplace_back(ra.bytes.size(), 0x5A);
        comps.emplace_back(info.num_components);
    }
    for (int f = 0; f < frames; ++f) {
        size_t at = 0;
        for (uint32_t c = 0; c < info.num_components; ++c) {
            j2kc_component &k = comps[f][c];
            std::memset(&k, 0, sizeof(k));
            k.data = reinterpret_cast<uint64_t>(outs[f].data() + at);
            k.row_stride = ptrdiff_t(ci[c].width) * 2;
            k.sample_stride = k.bytes_per_sample = 2;
            k.precision = ci[c].precision;
            k.dx = ci[c].dx;
            k.dy = ci[c].dy;
            k.width = ci[c].width;
            k.height = ci[c].height;
            at += size_t{ci[c].width} * ci[c].height * 2;
        }
        j2kc_image im{};
        im.struct_size = sizeof(im);
        im.memory = J2KC_MEMORY_HOST;
        im.width = info.width;
        im.height = info.height;
        im.num_components = info.num_components;
        im.components = comps[f].data();
        images.push_back(im);
    }
    int next = 0;
    for (int f = 0; f < frames; ++f) {
        const auto &cs = (f % 3 == 2) ? b : a;
        while (j2kc_decoder_submit(dec, cs.data(), cs.size(), f) == J2KC_ERR_AGAIN) {
            int64_t tag = -1;
            const int st = j2kc_decoder_receive(dec, &images[next], &tag, 0);
            EXPECT_EQ(st, (next % 3 == 2) ? rb.status : J2KC_OK);
            EXPECT_EQ(tag, next);
            ++next;
        }
    }
    int64_t tag = -1;
    int st;
    while ((st = j2kc_decoder_receive(dec, next < frames ? &images[next] : &images[0], &tag, 1)) != J2KC_ERR_EOF) {
        ASSERT_LT(next, frames);
        EXPECT_EQ(st, (next % 3 == 2) ? rb.status : J2KC_OK);
        EXPECT_EQ(tag, next);
        ++next;
    }
    EXPECT_EQ(next, frames);
    for (int f = 0; f < frames; ++f) {
        const Decoded &ref = (f % 3 == 2) ? rb : ra;
        if (ref.status == J2KC_OK) {
            EXPECT_TRUE(outs[f] == ref.bytes) << "frame " << f;
        }
    }
    j2kc_stage_times t{};
    EXPECT_EQ(j2kc_decoder_stage_times(dec, &t), J2KC_OK);
    EXPECT_GT(t.tier1, 0.0);  // GPU time of the Tier-1 kernel
    j2kc_decoder_free(&dec);
}

}  // namespace
}  // namespace j2kc
