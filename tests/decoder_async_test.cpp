// The asynchronous decoder API (j2kc_decoder_submit / j2kc_decoder_receive):
// frames come out in submit order with their tags, equal to the synchronous
// path's; AGAIN/EOF, errors of one frame between good ones, reset, reused
// buffers; and the CUDA backend's pipeline pixel for pixel against the CPU,
// with Tier-1 on the GPU (the default) and on the CPU workers, and into host
// planes in pageable and page-locked memory, planar and interleaved.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "common/status.h"
#include "j2kc.h"
#include "pipeline/decoder_common.h"
#include "test_images.h"
#include "test_streams.h"

namespace {

void quiet(void *, int level, const char *msg)
{
    if (level <= J2KC_LOG_ERROR && std::getenv("J2KC_TEST_VERBOSE")) std::fprintf(stderr, "j2kc: %s\n", msg);
}

using j2kc_test::have_gpu;

/** An image in caller memory: planar 16-bit planes, or interleaved with room around the samples. */
struct Image {
    std::vector<uint8_t> bytes;
    std::vector<j2kc_component> comps;
    j2kc_image image{};

    static Image planar(const j2kc_stream_info &info, const j2kc_component_info *ci)
    {
        Image m;
        size_t total = 0;
        std::vector<size_t> at;
        for (uint32_t c = 0; c < info.num_components; ++c) {
            at.push_back(total);
            total += size_t{ci[c].width} * ci[c].height * 2 + 7;  // odd gap between planes
        }
        m.bytes.assign(total + 1, 0x5A);
        for (uint32_t c = 0; c < info.num_components; ++c)
            m.comps.push_back(j2kc_test::component16(reinterpret_cast<uint64_t>(m.bytes.data() + at[c]), ci[c].width,
                                                     ci[c].height, ci[c].precision, ptrdiff_t(ci[c].width) * 2, 2,
                                                     ci[c].dx, ci[c].dy));
        m.finish(info);
        return m;
    }

    /** n components of bytes_per_sample each, sample_stride apart, rows padded by `pad` bytes. */
    static Image interleaved(const j2kc_stream_info &info, const j2kc_component_info *ci, uint32_t n,
                             uint8_t bytes_per_sample, uint32_t sample_stride, uint32_t pad, uint8_t shift)
    {
        Image m;
        const uint32_t w = ci[0].width, h = ci[0].height;
        const size_t row = size_t{w} * sample_stride + pad;
        m.bytes.assign(row * h + 1, 0xA5);
        for (uint32_t c = 0; c < n; ++c) {
            j2kc_component k{};
            k.data = reinterpret_cast<uint64_t>(m.bytes.data() + c * bytes_per_sample);
            k.row_stride = ptrdiff_t(row);
            k.sample_stride = sample_stride;
            k.bytes_per_sample = bytes_per_sample;
            k.shift = shift;
            k.precision = ci[c].precision;
            k.dx = k.dy = 1;
            k.width = w;
            k.height = h;
            m.comps.push_back(k);
        }
        m.finish(info);
        m.image.num_components = n;
        return m;
    }

    void finish(const j2kc_stream_info &info) { image = j2kc_test::image_view(comps, info.width, info.height); }
};

struct Source {
    uint32_t w, h, n;
    uint8_t prec;
    bool lossless;
    uint32_t tile;    // 0 = one tile
    uint64_t budget;  // 0 = none
    uint32_t seed;
    bool ht = false;  // the HTJ2K block coder (lossy at quality 3)
};

std::vector<uint8_t> make_stream(const Source &s)
{
    const j2kc_test::Planes16 frame = j2kc_test::synthetic_frame(s.w, s.h, s.n, s.prec, s.seed, 0.04);
    j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
    cfg.lossless = s.lossless;
    cfg.tile_width = cfg.tile_height = s.tile;
    cfg.frame_bytes = s.budget;
    cfg.cblk_width_log2 = cfg.cblk_height_log2 = 5;
    if (s.ht) {
        cfg.block_coder = J2KC_BLOCK_CODER_HT;
        if (!s.lossless) cfg.quality = 3.0;
    }
    return j2kc_test::encode_stream(frame.image, cfg);
}

/** Streams of varied shapes: sizes, tiles, lossless and lossy, a starved budget (blocks left out). */
std::vector<std::vector<uint8_t>> sample_streams()
{
    static const std::vector<std::vector<uint8_t>> streams = [] {
        const Source sources[] = {
            {97, 61, 3, 8, false, 0, 0, 1},   {97, 61, 3, 8, true, 0, 0, 2},    {130, 77, 3, 12, false, 64, 0, 3},
            {45, 130, 1, 10, true, 32, 0, 4}, {97, 61, 3, 8, false, 0, 300, 5}, {200, 150, 4, 8, false, 0, 0, 6},
            {33, 17, 3, 16, true, 0, 0, 7},
        };
        std::vector<std::vector<uint8_t>> v;
        for (const Source &s : sources) v.push_back(make_stream(s));
        return v;
    }();
    return streams;
}

/** tier1_on_gpu of the decoders make_decoder creates (the default: auto). */
int g_tier1_on_gpu = -1;

/** Runs the CUDA tests of a scope with Tier-1 on the CPU workers. */
struct CpuTier1Scope {
    CpuTier1Scope() { g_tier1_on_gpu = 0; }
    ~CpuTier1Scope() { g_tier1_on_gpu = -1; }
};

/** cuda_stream of the CUDA decoders make_decoder creates (null: the decoder's own). */
cudaStream_t g_cuda_stream = nullptr;

/** Runs the CUDA tests of a scope with a stream of the caller's lent to the decoders. */
struct CallerStreamScope {
    CallerStreamScope() { EXPECT_EQ(cudaStreamCreateWithFlags(&g_cuda_stream, cudaStreamNonBlocking), cudaSuccess); }
    ~CallerStreamScope()
    {
        cudaStreamDestroy(g_cuda_stream);
        g_cuda_stream = nullptr;
    }
};

j2kc_decoder *make_decoder(j2kc_backend backend, int frames_in_flight = 0, int threads = 3, int reduce = 0)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.tier1_on_gpu = g_tier1_on_gpu;
    cfg.backend = backend;
    cfg.log = quiet;
    cfg.threads = threads;
    cfg.reduce = reduce;
    cfg.frames_in_flight = frames_in_flight;
    if (backend == J2KC_BACKEND_CUDA) cfg.cuda_stream = g_cuda_stream;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    return dec;
}

struct Shape {
    j2kc_stream_info info{};
    std::vector<j2kc_component_info> ci = std::vector<j2kc_component_info>(16);
};

Shape parse(j2kc_decoder *dec, const std::vector<uint8_t> &cs, bool expect_ok = true)
{
    Shape s;
    s.info.struct_size = sizeof(s.info);
    s.info.components = s.ci.data();
    s.info.components_capacity = 16;
    const int st = j2kc_decoder_parse(dec, cs.data(), cs.size(), &s.info);
    if (expect_ok) {
        EXPECT_EQ(st, J2KC_OK);
    }
    if (st != J2KC_OK) s.info.num_components = 0;
    return s;
}

/** The synchronous path on a fresh decoder: the reference every queued frame must equal. */
Image decode_sync(const std::vector<uint8_t> &cs, j2kc_backend backend, int reduce = 0)
{
    j2kc_decoder *dec = make_decoder(backend, 0, 2, reduce);
    const Shape s = parse(dec, cs);
    Image out = Image::planar(s.info, s.ci.data());
    EXPECT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &out.image), J2KC_OK);
    j2kc_decoder_free(&dec);
    return out;
}

/**
 * Submits every stream (receiving whenever the queue is full), then drains.
 * Frames come back in order with their tags; statuses per frame.
 */
struct Received {
    int64_t tag;
    int status;
    Image image;
};

std::vector<Received> run_queue(j2kc_decoder *dec, const std::vector<std::vector<uint8_t>> &streams)
{
    std::vector<Shape> shapes;
    std::vector<Image> images;
    for (const auto &cs : streams) {
        Shape s = parse(dec, cs, false);
        if (s.info.num_components == 0) {  // unparsable: any small image, the receive reports the error
            s.info.num_components = 1;
            s.info.width = s.info.height = 1;
            s.ci[0] = {1, 1, 8, 0, 1, 1};
        }
        images.push_back(Image::planar(s.info, s.ci.data()));
        shapes.push_back(s);
    }
    std::vector<Received> got;
    size_t next_out = 0;
    auto take = [&](int flush) -> int {
        if (next_out >= images.size()) return J2KC_ERR_EOF;
        int64_t tag = -1;
        const int st = j2kc_decoder_receive(dec, &images[next_out].image, &tag, flush);
        if (st == J2KC_ERR_AGAIN || st == J2KC_ERR_EOF) return st;
        got.push_back({tag, st, images[next_out]});
        ++next_out;
        return st;
    };
    for (size_t i = 0; i < streams.size(); ++i) {
        int st;
        while ((st = j2kc_decoder_submit(dec, streams[i].data(), streams[i].size(), int64_t(1000 + i))) ==
               J2KC_ERR_AGAIN) {
            const int r = take(0);  // the queue is full: this waits rather than saying AGAIN
            EXPECT_NE(r, J2KC_ERR_AGAIN);
            if (r == J2KC_ERR_AGAIN || r == J2KC_ERR_EOF) return got;
        }
        EXPECT_EQ(st, J2KC_OK);
    }
    while (take(1) != J2KC_ERR_EOF) {}
    int64_t tag;
    EXPECT_EQ(j2kc_decoder_receive(dec, &images[0].image, &tag, 1), J2KC_ERR_EOF);
    return got;
}

void expect_same(const Image &a, const Image &b, const char *what, size_t index)
{
    ASSERT_EQ(a.bytes.size(), b.bytes.size()) << what << " frame " << index;
    EXPECT_TRUE(a.bytes == b.bytes) << what << " frame " << index;
}

void check_queue(j2kc_backend backend, int frames_in_flight, int threads,
                 const std::vector<std::vector<uint8_t>> &streams = sample_streams())
{
    std::vector<Image> refs;
    for (const auto &cs : streams) refs.push_back(decode_sync(cs, J2KC_BACKEND_CPU));
    j2kc_decoder *dec = make_decoder(backend, frames_in_flight, threads);
    ASSERT_NE(dec, nullptr);
    // Twice through: the second pass runs on buffers grown and used by every shape.
    for (int pass = 0; pass < 2; ++pass) {
        const std::vector<Received> got = run_queue(dec, streams);
        ASSERT_EQ(got.size(), streams.size());
        for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_EQ(got[i].tag, int64_t(1000 + i));
            EXPECT_EQ(got[i].status, J2KC_OK) << "frame " << i;
            expect_same(got[i].image, refs[i], "queued vs synchronous CPU", i);
        }
    }
    j2kc_stage_times t{};
    EXPECT_EQ(j2kc_decoder_stage_times(dec, &t), J2KC_OK);
    EXPECT_GE(t.total, t.download);
    j2kc_decoder_free(&dec);
    EXPECT_EQ(dec, nullptr);
}

TEST(AsyncDecoder, FramesComeOutInSubmitOrderEqualToSynchronous)
{
    check_queue(J2KC_BACKEND_CPU, 0, 2);
    check_queue(J2KC_BACKEND_CPU, 1, 1);
}

TEST(AsyncDecoder, AgainAndEof)
{
    const auto streams = sample_streams();
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CPU, 2);
    const Shape s = parse(dec, streams[0]);
    Image out = Image::planar(s.info, s.ci.data());
    int64_t tag = 77;
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 0), J2KC_ERR_AGAIN);
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 1), J2KC_ERR_EOF);
    EXPECT_EQ(tag, 77);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[0].data(), streams[0].size(), 1), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[0].data(), streams[0].size(), 2), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[0].data(), streams[0].size(), 3), J2KC_ERR_AGAIN);
    EXPECT_EQ(j2kc_decoder_submit(dec, nullptr, 10, 3), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[0].data(), 0, 3), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, nullptr, 0), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(j2kc_decoder_receive(nullptr, &out.image, &tag, 0), J2KC_ERR_INVALID_ARG);
    // The synchronous path wants an empty queue.
    EXPECT_EQ(j2kc_decode(dec, streams[0].data(), streams[0].size(), &out.image), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 0), J2KC_OK);
    EXPECT_EQ(tag, 1);
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 1), J2KC_OK);
    EXPECT_EQ(tag, 2);
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 1), J2KC_ERR_EOF);
    EXPECT_EQ(j2kc_decode(dec, streams[0].data(), streams[0].size(), &out.image), J2KC_OK);
    // A NULL output drops the oldest frame; the next one is unaffected.
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[1].data(), streams[1].size(), 8), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[0].data(), streams[0].size(), 9), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_receive(dec, nullptr, &tag, 1), J2KC_OK);
    EXPECT_EQ(tag, 8);
    Image again = Image::planar(s.info, s.ci.data());
    EXPECT_EQ(j2kc_decoder_receive(dec, &again.image, &tag, 1), J2KC_OK);
    EXPECT_EQ(tag, 9);
    expect_same(again, decode_sync(streams[0], J2KC_BACKEND_CPU), "after a drop", 0);
    j2kc_decoder_free(&dec);
}

/** Good, corrupt, good: the corrupt one fails with its tag, the rest decode as if it were not there. */
void check_errors_mid_stream(j2kc_backend backend)
{
    const auto streams = sample_streams();
    std::vector<uint8_t> garbage(streams[1].size());
    std::mt19937 rng(99);
    for (auto &b : garbage) b = uint8_t(rng());
    std::vector<uint8_t> cut(streams[2].begin(), streams[2].begin() + 30);  // ends inside the main header
    std::vector<uint8_t> bad_marker = streams[0];
    bad_marker[2] = 0x12;  // SIZ's marker code: not a marker any more
    const std::vector<std::vector<uint8_t>> sequence = {streams[0], garbage,    streams[1], cut,
                                                        streams[2], bad_marker, streams[3]};
    j2kc_decoder *dec = make_decoder(backend, 2, 2);
    const std::vector<Received> got = run_queue(dec, sequence);
    ASSERT_EQ(got.size(), sequence.size());
    const size_t good[] = {0, 2, 4, 6}, bad[] = {1, 3, 5};
    for (size_t i : bad) {
        EXPECT_EQ(got[i].tag, int64_t(1000 + i));
        EXPECT_EQ(got[i].status, J2KC_ERR_INVALID_DATA) << "frame " << i;
    }
    for (size_t i : good) {
        EXPECT_EQ(got[i].tag, int64_t(1000 + i));
        EXPECT_EQ(got[i].status, J2KC_OK) << "frame " << i;
        expect_same(got[i].image, decode_sync(sequence[i], J2KC_BACKEND_CPU), "after an error", i);
    }

    // An output that does not fit its frame is that frame's error, and consumes it.
    Shape s0 = parse(dec, streams[0]);
    const Shape s1 = parse(dec, streams[1]);
    Image wrong = Image::planar(s1.info, s1.ci.data());
    Image right = Image::planar(s0.info, s0.ci.data());
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[2].data(), streams[2].size(), 5), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[0].data(), streams[0].size(), 6), J2KC_OK);
    int64_t tag = 0;
    EXPECT_EQ(j2kc_decoder_receive(dec, &wrong.image, &tag, 1), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(tag, 5);
    EXPECT_EQ(j2kc_decoder_receive(dec, &right.image, &tag, 1), J2KC_OK);
    EXPECT_EQ(tag, 6);
    expect_same(right, decode_sync(streams[0], J2KC_BACKEND_CPU), "after a wrong output", 0);
    j2kc_decoder_free(&dec);
}

TEST(AsyncDecoder, ErrorsMidStreamStayWithTheirFrame) { check_errors_mid_stream(J2KC_BACKEND_CPU); }

void check_reset(j2kc_backend backend)
{
    const auto streams = sample_streams();
    j2kc_decoder *dec = make_decoder(backend, 3, 2);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(j2kc_decoder_submit(dec, streams[i].data(), streams[i].size(), i), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_reset(dec), J2KC_OK);
    const Shape s = parse(dec, streams[5]);
    Image out = Image::planar(s.info, s.ci.data());
    int64_t tag = -1;
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 1), J2KC_ERR_EOF);
    EXPECT_EQ(j2kc_decoder_submit(dec, streams[5].data(), streams[5].size(), 42), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_receive(dec, &out.image, &tag, 1), J2KC_OK);
    EXPECT_EQ(tag, 42);
    expect_same(out, decode_sync(streams[5], J2KC_BACKEND_CPU), "after reset", 5);
    // A reset right after submit, while the workers are busy, then freeing with frames queued.
    for (int i = 0; i < 3; ++i) EXPECT_EQ(j2kc_decoder_submit(dec, streams[5].data(), streams[5].size(), i), J2KC_OK);
    EXPECT_EQ(j2kc_decoder_reset(dec), J2KC_OK);
    for (int i = 0; i < 2; ++i) EXPECT_EQ(j2kc_decoder_submit(dec, streams[5].data(), streams[5].size(), i), J2KC_OK);
    j2kc_decoder_free(&dec);
}

TEST(AsyncDecoder, ResetDropsQueuedFrames) { check_reset(J2KC_BACKEND_CPU); }

/**
 * A starved stream after a rich one on the same decoder: code-blocks left out
 * must decode as zero, not as what the reused buffers held.
 */
TEST(AsyncDecoder, ReusedBuffersLeaveNoTrace)
{
    const Source rich{97, 61, 3, 8, true, 0, 0, 11}, starved{97, 61, 3, 8, false, 0, 350, 12};
    const std::vector<uint8_t> a = make_stream(rich), b = make_stream(starved);
    const Image ref = decode_sync(b, J2KC_BACKEND_CPU);
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CPU, 2, 2);
    const std::vector<Received> got = run_queue(dec, {a, b, a, b});
    ASSERT_EQ(got.size(), 4u);
    expect_same(got[1].image, ref, "starved after rich", 1);
    expect_same(got[3].image, ref, "starved after rich", 3);
    j2kc_decoder_free(&dec);
}

TEST(AsyncDecoder, InterleavedOutputKeepsTheBytesAround)
{
    const std::vector<uint8_t> cs = make_stream({61, 37, 3, 12, false, 0, 0, 21});
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CPU);
    const Shape s = parse(dec, cs);
    // 12-bit samples in 16-bit words shifted up by 4, 3 of 4 words used (a gap), rows padded.
    Image out = Image::interleaved(s.info, s.ci.data(), 3, 2, 8, 10, 4);
    const std::vector<uint8_t> before = out.bytes;
    EXPECT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &out.image), J2KC_OK);
    const size_t row = size_t{s.ci[0].width} * 8 + 10;
    for (size_t i = 0; i < out.bytes.size(); ++i) {
        const size_t in_row = i % row;
        if (i / row < s.ci[0].height && in_row < size_t{s.ci[0].width} * 8 && in_row % 8 < 6) continue;
        ASSERT_EQ(out.bytes[i], before[i]) << "byte " << i << " outside the samples changed";
    }
    j2kc_decoder_free(&dec);
}

// ---------------------------------------------------------------------------
// CUDA backend: the pipeline against the CPU reference.

TEST(GpuAsyncDecoder, QueueMatchesCpuPixelForPixel)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_queue(J2KC_BACKEND_CUDA, 0, 3);
    check_queue(J2KC_BACKEND_CUDA, 4, 8);
    check_queue(J2KC_BACKEND_CUDA, 1, 1);
}

/** With room in the queue, a receive without flush says AGAIN until the
 *  oldest frame is done on the GPU too, and then gives it: polling alone,
 *  never a flush, gets every frame out, each equal to the CPU's. */
TEST(GpuAsyncDecoder, ReceiveWithRoomGivesEachFrameOnceDone)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const auto streams = sample_streams();
    j2kc_decoder *gpu = make_decoder(J2KC_BACKEND_CUDA, 4, 3);
    ASSERT_NE(gpu, nullptr);
    for (size_t i = 0; i < streams.size(); ++i) {
        const Shape s = parse(gpu, streams[i]);
        Image out = Image::planar(s.info, s.ci.data());
        ASSERT_EQ(j2kc_decoder_submit(gpu, streams[i].data(), streams[i].size(), int64_t(i)), J2KC_OK);
        int64_t tag = -1;
        int st;
        while ((st = j2kc_decoder_receive(gpu, &out.image, &tag, 0)) == J2KC_ERR_AGAIN) std::this_thread::yield();
        ASSERT_EQ(st, J2KC_OK) << "frame " << i;
        EXPECT_EQ(tag, int64_t(i));
        expect_same(decode_sync(streams[i], J2KC_BACKEND_CPU), out, "polled CUDA vs CPU", i);
    }
    int64_t tag;
    EXPECT_EQ(j2kc_decoder_receive(gpu, nullptr, &tag, 1), J2KC_ERR_EOF);
    j2kc_decoder_free(&gpu);
}

/** Codestreams of megabytes, which a submit copies in bands that the workers
 *  share, between small ones, so that slots copy into buffers grown by
 *  another size. */
TEST(GpuAsyncDecoder, LargeCodestreamsMatchCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const std::vector<uint8_t> large = make_stream({1100, 900, 3, 16, true, 0, 0, 31});
    const std::vector<uint8_t> larger = make_stream({1300, 1000, 3, 16, true, 0, 0, 32});
    ASSERT_GT(large.size(), size_t{3} << 20) << "too small to be copied in bands";
    const std::vector<uint8_t> small = sample_streams()[1];
    check_queue(J2KC_BACKEND_CUDA, 3, 4, {large, small, larger, large, small, larger, small});
}

/** sample_streams() with an HT stream (HTJ2K block coder) after each. */
std::vector<std::vector<uint8_t>> mixed_coder_streams()
{
    const Source ht[] = {{97, 61, 3, 8, false, 0, 0, 11, true},
                         {130, 77, 3, 12, true, 64, 0, 12, true},
                         {45, 130, 1, 10, false, 32, 0, 13, true}};
    std::vector<std::vector<uint8_t>> streams;
    const auto part1 = sample_streams();
    for (size_t i = 0; i < part1.size(); ++i) {
        streams.push_back(part1[i]);
        streams.push_back(make_stream(ht[i % 3]));
    }
    return streams;
}

TEST(AsyncDecoder, MixedBlockCodersInFlight) { check_queue(J2KC_BACKEND_CPU, 4, 2, mixed_coder_streams()); }

// Part-1 and HT frames of several shapes in flight together, more than
// the default, so that GPU Tier-1 batches hold tables of both block coders
// and of different sizes side by side.
TEST(GpuAsyncDecoder, MixedBlockCodersShareTier1Batches)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const auto streams = mixed_coder_streams();
    check_queue(J2KC_BACKEND_CUDA, 16, 8, streams);
    check_queue(J2KC_BACKEND_CUDA, 3, 2, streams);
}

// The pack goes on the caller's stream instead of the decoder's own (at the
// highest priority); Tier-1 and the reconstruction stay on the slots' streams.
TEST(GpuAsyncDecoder, CallerStreamQueueMatchesCpuPixelForPixel)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    CallerStreamScope lent;
    check_queue(J2KC_BACKEND_CUDA, 0, 3);
    check_queue(J2KC_BACKEND_CUDA, 1, 1);
}

TEST(GpuAsyncDecoder, CpuTier1QueueMatchesCpuPixelForPixel)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    CpuTier1Scope cpu_tier1;
    check_queue(J2KC_BACKEND_CUDA, 0, 3);
    check_queue(J2KC_BACKEND_CUDA, 1, 1);
}

TEST(GpuAsyncDecoder, CpuTier1ErrorsAndResets)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    CpuTier1Scope cpu_tier1;
    check_errors_mid_stream(J2KC_BACKEND_CUDA);
    check_reset(J2KC_BACKEND_CUDA);
}

TEST(GpuAsyncDecoder, ErrorsMidStreamStayWithTheirFrame)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_errors_mid_stream(J2KC_BACKEND_CUDA);
}

TEST(GpuAsyncDecoder, ResetDropsQueuedFrames)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_reset(J2KC_BACKEND_CUDA);
}

TEST(GpuAsyncDecoder, ReducedAndInterleavedOutputsMatchCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const auto streams = sample_streams();
    for (int reduce : {0, 1}) {
        for (size_t i = 0; i < streams.size(); ++i) {
            const auto &cs = streams[i];
            j2kc_decoder *cpu = make_decoder(J2KC_BACKEND_CPU, 0, 2, reduce);
            j2kc_decoder *gpu = make_decoder(J2KC_BACKEND_CUDA, 0, 2, reduce);
            const Shape s = parse(cpu, cs);
            if (s.info.num_components < 3) {
                j2kc_decoder_free(&cpu);
                j2kc_decoder_free(&gpu);
                continue;
            }
            // Dense interleaved (16-bit, 3 x 2 bytes, padded rows) and gapped (4 words a pixel).
            for (uint32_t stride : {6u, 8u}) {
                Image a = Image::interleaved(s.info, s.ci.data(), 3, 2, stride, 6, s.ci[0].precision <= 12 ? 4 : 0);
                Image b = Image::interleaved(s.info, s.ci.data(), 3, 2, stride, 6, s.ci[0].precision <= 12 ? 4 : 0);
                EXPECT_EQ(j2kc_decode(cpu, cs.data(), cs.size(), &a.image), J2KC_OK);
                EXPECT_EQ(j2kc_decoder_submit(gpu, cs.data(), cs.size(), 9), J2KC_OK);
                int64_t tag = 0;
                EXPECT_EQ(j2kc_decoder_receive(gpu, &b.image, &tag, 1), J2KC_OK);
                expect_same(a, b, "interleaved CPU vs CUDA", i);
            }
            j2kc_decoder_free(&cpu);
            j2kc_decoder_free(&gpu);
        }
    }
}

TEST(GpuAsyncDecoder, DeviceOutputMatchesCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const auto streams = sample_streams();
    j2kc_decoder *gpu = make_decoder(J2KC_BACKEND_CUDA, 3, 4);
    std::vector<void *> device(streams.size(), nullptr);
    std::vector<Image> host;
    // Everything queued first: several frames in flight, each into its own device planes.
    for (size_t i = 0; i < streams.size(); ++i) {
        const Shape s = parse(gpu, streams[i]);
        host.push_back(Image::planar(s.info, s.ci.data()));
    }
    std::vector<Image> dev_images;
    for (size_t i = 0; i < streams.size(); ++i) {
        ASSERT_EQ(cudaMalloc(&device[i], host[i].bytes.size()), cudaSuccess);
        // The planes' gaps are never written; zeroed, the whole copy back is defined.
        ASSERT_EQ(cudaMemset(device[i], 0, host[i].bytes.size()), cudaSuccess);
        Image d = host[i];
        d.image.components = d.comps.data();
        for (j2kc_component &k : d.comps)
            k.data =
                reinterpret_cast<uint64_t>(device[i]) + (k.data - reinterpret_cast<uint64_t>(host[i].bytes.data()));
        d.image.memory = J2KC_MEMORY_CUDA;
        dev_images.push_back(std::move(d));
        dev_images.back().image.components = dev_images.back().comps.data();
    }
    size_t out = 0;
    for (size_t i = 0; i < streams.size(); ++i) {
        int64_t tag;
        while (j2kc_decoder_submit(gpu, streams[i].data(), streams[i].size(), int64_t(i)) == J2KC_ERR_AGAIN) {
            ASSERT_EQ(j2kc_decoder_receive(gpu, &dev_images[out].image, &tag, 0), J2KC_OK);
            EXPECT_EQ(tag, int64_t(out));
            ++out;
        }
    }
    for (; out < streams.size(); ++out) {
        int64_t tag;
        ASSERT_EQ(j2kc_decoder_receive(gpu, &dev_images[out].image, &tag, 1), J2KC_OK);
        EXPECT_EQ(tag, int64_t(out));
    }
    for (size_t i = 0; i < streams.size(); ++i) {
        Image back = host[i];
        ASSERT_EQ(cudaMemcpy(back.bytes.data(), device[i], back.bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        // Only the samples are compared: the device planes' gaps were never written.
        const Image ref = decode_sync(streams[i], J2KC_BACKEND_CPU);
        for (size_t c = 0; c < ref.comps.size(); ++c) {
            const j2kc_component &k = ref.comps[c];
            const size_t at = k.data - reinterpret_cast<uint64_t>(ref.bytes.data());
            const size_t n = size_t{k.width} * k.height * 2;
            EXPECT_EQ(0, std::memcmp(ref.bytes.data() + at, back.bytes.data() + at, n)) << "frame " << i << " c" << c;
        }
        cudaFree(device[i]);
    }
    j2kc_decoder_free(&gpu);
}

/** A JP2 box: length, type, payload. */
void put_box(std::vector<uint8_t> &out, const char *type, const std::vector<uint8_t> &payload)
{
    const uint32_t n = uint32_t(payload.size() + 8);
    out.insert(out.end(), {uint8_t(n >> 24), uint8_t(n >> 16), uint8_t(n >> 8), uint8_t(n)});
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), payload.begin(), payload.end());
}

/** A JP2 file whose 8-bit index image maps through a 256-entry, 3-column palette (pclr and cmap, I.5.3.4-5). */
std::vector<uint8_t> palette_file()
{
    const uint32_t w = 53, h = 29;
    const std::vector<uint8_t> cs = make_stream({w, h, 1, 8, true, 0, 0, 11});
    std::vector<uint8_t> ihdr = {0, 0, 0, uint8_t(h), 0, 0, 0, uint8_t(w), 0, 1, 7, 7, 0, 0};
    std::vector<uint8_t> pclr = {1, 0, 3, 7, 7, 7};  // 256 entries, 3 unsigned 8-bit columns
    for (int i = 0; i < 256; ++i) pclr.insert(pclr.end(), {uint8_t(i), uint8_t(255 - i), uint8_t(i * 7)});
    std::vector<uint8_t> jp2h, file = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};
    put_box(file, "ftyp", {'j', 'p', '2', ' ', 0, 0, 0, 0, 'j', 'p', '2', ' '});
    put_box(jp2h, "ihdr", ihdr);
    put_box(jp2h, "colr", {1, 0, 0, 0, 0, 0, 16});
    put_box(jp2h, "pclr", pclr);
    put_box(jp2h, "cmap", {0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 2});
    put_box(file, "jp2h", jp2h);
    put_box(file, "jp2c", cs);
    return file;
}

TEST(PaletteRouting, FramesLeaveInSubmitOrderWithTheirErrors)
{
    // The router's bookkeeping, on any machine: a CPU decoder stands in for the GPU's.
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.threads = 2;
    cfg.frames_in_flight = 2;
    const j2kc::Logger log{quiet, nullptr};
    std::unique_ptr<j2kc::Decoder> dec = j2kc::route_palettes_to_cpu(j2kc::create_cpu_decoder(cfg, log), cfg, log);
    const std::vector<uint8_t> pal = palette_file();
    const auto samples = sample_streams();
    // A palette file whose codestream has lost its SOC marker: an error of its own.
    std::vector<uint8_t> broken = pal;
    const uint8_t soc_siz[4] = {0xFF, 0x4F, 0xFF, 0x51};
    const auto soc = std::search(broken.begin(), broken.end(), soc_siz, soc_siz + 4);
    ASSERT_NE(soc, broken.end());
    soc[1] = 0x00;
    const std::vector<std::vector<uint8_t>> streams = {pal, samples[0], pal, broken, samples[1], pal, pal, samples[2]};
    std::vector<Image> refs, outs;
    for (const auto &cs : streams) {
        refs.push_back(decode_sync(cs == broken ? pal : cs, J2KC_BACKEND_CPU));
        outs.push_back(refs.back());
    }
    size_t next = 0, errors = 0;
    auto take = [&](bool flush) {
        int64_t tag = -1;
        try {
            if (!dec->receive(&outs[next].image, tag, flush)) return false;
        } catch (const j2kc::Error &) {
            EXPECT_EQ(streams[next], broken) << "frame " << next;
            ++errors;
            ++next;
            return true;
        }
        EXPECT_EQ(tag, int64_t(next));
        if (streams[next] != broken) expect_same(outs[next], refs[next], "routed vs synchronous", next);
        ++next;
        return true;
    };
    for (size_t i = 0; i < streams.size(); ++i)
        while (!dec->submit(streams[i].data(), streams[i].size(), int64_t(i)))
            ASSERT_TRUE(take(false)) << "frame " << i;
    while (next < streams.size()) ASSERT_TRUE(take(true));
    EXPECT_EQ(errors, 1u);
    int64_t tag;
    EXPECT_FALSE(dec->receive(nullptr, tag, true));
}

TEST(GpuAsyncDecoder, PaletteFilesMatchCpuInOrderAndOnDevice)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const std::vector<uint8_t> pal = palette_file();
    const Image ref = decode_sync(pal, J2KC_BACKEND_CPU);
    ASSERT_EQ(ref.comps.size(), 3u);
    // In a queue between GPU frames: the palette frames go to the CPU and come back in order.
    const auto samples = sample_streams();
    const std::vector<std::vector<uint8_t>> streams = {samples[0], pal, samples[2], pal, pal, samples[1]};
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CUDA, 3, 4);
    ASSERT_NE(dec, nullptr);
    const std::vector<Received> got = run_queue(dec, streams);
    ASSERT_EQ(got.size(), streams.size());
    for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].tag, int64_t(1000 + i));
        EXPECT_EQ(got[i].status, J2KC_OK) << "frame " << i;
        expect_same(got[i].image, decode_sync(streams[i], J2KC_BACKEND_CPU), "CUDA queue vs CPU", i);
    }
    // Into device planes, synchronously.
    Image host = ref;
    void *device = nullptr;
    ASSERT_EQ(cudaMalloc(&device, host.bytes.size()), cudaSuccess);
    ASSERT_EQ(cudaMemset(device, 0, host.bytes.size()), cudaSuccess);
    Image d = ref;
    for (j2kc_component &k : d.comps)
        k.data = reinterpret_cast<uint64_t>(device) + (k.data - reinterpret_cast<uint64_t>(ref.bytes.data()));
    d.image.components = d.comps.data();
    d.image.memory = J2KC_MEMORY_CUDA;
    EXPECT_EQ(j2kc_decode(dec, pal.data(), pal.size(), &d.image), J2KC_OK);
    ASSERT_EQ(cudaMemcpy(host.bytes.data(), device, host.bytes.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (const j2kc_component &k : ref.comps) {
        const size_t at = k.data - reinterpret_cast<uint64_t>(ref.bytes.data());
        EXPECT_EQ(0, std::memcmp(ref.bytes.data() + at, host.bytes.data() + at, size_t{k.width} * k.height * 2));
    }
    cudaFree(device);
    j2kc_decoder_free(&dec);
}

}  // namespace

// ---------------------------------------------------------------------------
// CUDA backend, host output: pageable planes go through a pinned staging
// buffer and a host copy in bands (the workers and the caller's thread),
// page-locked ones by DMA straight into them. Frames large enough for many
// bands and pieces, several in flight, every layout against the CPU.

namespace host_output {

enum class Layout { kPlanar, kGapped, kDenseInterleaved };
enum class Memory { kPageable, kPinned, kMixed };  ///< kMixed: planar plane 0 page-locked, the rest pageable

const char *name(Layout l)
{
    return l == Layout::kPlanar ? "planar" : l == Layout::kGapped ? "gapped interleaved" : "dense interleaved";
}
const char *name(Memory m) { return m == Memory::kPageable ? "pageable" : m == Memory::kPinned ? "pinned" : "mixed"; }

/** Host bytes, pageable (a vector) or page-locked (cudaMallocHost), filled from a seed. */
class HostBytes {
public:
    HostBytes(size_t size, bool pinned, uint32_t seed) : size_(size)
    {
        if (pinned) {
            EXPECT_EQ(cudaMallocHost(reinterpret_cast<void **>(&pinned_), size), cudaSuccess);
        } else {
            pageable_.resize(size);
        }
        std::mt19937 rng(seed);
        for (size_t i = 0; i < size; ++i) data()[i] = uint8_t(rng());
    }
    ~HostBytes()
    {
        if (pinned_) cudaFreeHost(pinned_);
    }
    HostBytes(const HostBytes &) = delete;
    HostBytes &operator=(const HostBytes &) = delete;
    uint8_t *data() { return pinned_ ? pinned_ : pageable_.data(); }
    std::vector<uint8_t> contents() { return std::vector<uint8_t>(data(), data() + size_); }

private:
    size_t size_;
    std::vector<uint8_t> pageable_;
    uint8_t *pinned_ = nullptr;
};

/**
 * An output of 16-bit samples in one of the layouts: planar planes with rows
 * padded (odd widths, so strides differ per component) and odd gaps between
 * planes; three components interleaved 8 bytes a pixel (2 bytes of gap, so
 * one group with gaps) or 6 (dense), rows padded. Every byte starts random
 * (the seed): what is not a sample must come out as it went in.
 */
struct Output {
    std::unique_ptr<HostBytes> first, rest;  ///< rest: kMixed's pageable planes
    std::vector<j2kc_component> comps;
    j2kc_image image{};

    /** With pin false, the same layout and bytes all in pageable memory (the CPU reference's). */
    Output(const Shape &s, Layout layout, Memory memory, uint32_t seed, bool pin = true)
    {
        const j2kc_stream_info &info = s.info;
        const j2kc_component_info *ci = s.ci.data();
        if (layout == Layout::kPlanar) {
            std::vector<size_t> stride(info.num_components), at(info.num_components);
            size_t total[2] = {0, 0};
            for (uint32_t c = 0; c < info.num_components; ++c) {
                stride[c] = size_t{ci[c].width} * 2 + 6 + 4 * c;
                const int buffer = memory == Memory::kMixed && c > 0;
                at[c] = total[buffer];
                total[buffer] += stride[c] * ci[c].height + 7;
            }
            first = std::make_unique<HostBytes>(total[0] + 1, pin && memory != Memory::kPageable, seed);
            if (total[1]) rest = std::make_unique<HostBytes>(total[1] + 1, false, seed + 1);
            for (uint32_t c = 0; c < info.num_components; ++c) {
                HostBytes &b = memory == Memory::kMixed && c > 0 ? *rest : *first;
                comps.push_back(j2kc_test::component16(reinterpret_cast<uint64_t>(b.data() + at[c]), ci[c].width,
                                                       ci[c].height, ci[c].precision, ptrdiff_t(stride[c]), 2, ci[c].dx,
                                                       ci[c].dy));
            }
        } else {
            const uint32_t n = std::min<uint32_t>(info.num_components, 3);
            const uint32_t pixel = layout == Layout::kGapped ? 2 * n + 2 : 2 * n;
            const uint32_t w = ci[0].width, h = ci[0].height;
            const size_t row = size_t{w} * pixel + 10;
            first = std::make_unique<HostBytes>(row * h + 3, pin && memory != Memory::kPageable, seed);
            for (uint32_t c = 0; c < n; ++c) {
                j2kc_component k{};
                k.data = reinterpret_cast<uint64_t>(first->data() + 2 * c);
                k.row_stride = ptrdiff_t(row);
                k.sample_stride = pixel;
                k.bytes_per_sample = 2;
                k.shift = ci[c].precision <= 12 ? 4 : 0;
                k.precision = ci[c].precision;
                k.dx = k.dy = 1;
                k.width = w;
                k.height = h;
                comps.push_back(k);
            }
        }
        image = j2kc_test::image_view(comps, info.width, info.height);
    }

    std::vector<uint8_t> contents() const
    {
        std::vector<uint8_t> v = first->contents();
        if (rest) {
            const std::vector<uint8_t> r = rest->contents();
            v.insert(v.end(), r.begin(), r.end());
        }
        return v;
    }
};

struct Job {
    size_t stream;
    Layout layout;
    Memory memory;
    uint32_t seed;
};

void check_host_outputs(int frames_in_flight, int threads)
{
    // Odd widths; about 0.4 to 2 MB of output a frame, so tens of bands and several pieces.
    const Source sources[] = {{701, 413, 3, 12, false, 0, 0, 31},
                              {517, 389, 3, 8, true, 128, 0, 32},
                              {653, 301, 1, 10, false, 0, 0, 33},
                              {389, 211, 4, 8, false, 0, 0, 34}};
    std::vector<std::vector<uint8_t>> streams;
    for (const Source &s : sources) streams.push_back(make_stream(s));
    std::vector<Job> jobs;
    uint32_t seed = 500;
    for (Memory m : {Memory::kPageable, Memory::kPinned, Memory::kMixed})
        for (Layout l : {Layout::kPlanar, Layout::kGapped, Layout::kDenseInterleaved})
            for (size_t i = 0; i < streams.size(); ++i) jobs.push_back({i, l, m, seed++});

    j2kc_decoder *cpu = make_decoder(J2KC_BACKEND_CPU, 0, 2);
    j2kc_decoder *gpu = make_decoder(J2KC_BACKEND_CUDA, frames_in_flight, threads);
    ASSERT_NE(gpu, nullptr);
    std::vector<Shape> shapes;
    for (const auto &cs : streams) shapes.push_back(parse(cpu, cs));
    std::vector<std::unique_ptr<Output>> outs;
    for (const Job &j : jobs) outs.push_back(std::make_unique<Output>(shapes[j.stream], j.layout, j.memory, j.seed));

    size_t out = 0;
    auto take = [&](int flush) {
        int64_t tag = -1;
        ASSERT_EQ(j2kc_decoder_receive(gpu, &outs[out]->image, &tag, flush), J2KC_OK) << "frame " << out;
        EXPECT_EQ(tag, int64_t(out));
        ++out;
    };
    for (size_t i = 0; i < jobs.size(); ++i) {
        const std::vector<uint8_t> &cs = streams[jobs[i].stream];
        while (j2kc_decoder_submit(gpu, cs.data(), cs.size(), int64_t(i)) == J2KC_ERR_AGAIN) {
            take(0);
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
    while (out < jobs.size()) {
        take(1);
        if (::testing::Test::HasFatalFailure()) return;
    }
    j2kc_stage_times t{};
    EXPECT_EQ(j2kc_decoder_stage_times(gpu, &t), J2KC_OK);
    EXPECT_GE(t.download, 0.0);
    EXPECT_GE(t.total, t.download);

    for (size_t i = 0; i < jobs.size(); ++i) {
        const Job &j = jobs[i];
        // The reference: the CPU backend into the same layout, from the same random bytes.
        Output ref(shapes[j.stream], j.layout, j.memory, j.seed, /*pin=*/false);
        const std::vector<uint8_t> before = ref.contents();
        ASSERT_EQ(j2kc_decode(cpu, streams[j.stream].data(), streams[j.stream].size(), &ref.image), J2KC_OK);
        const std::vector<uint8_t> want = ref.contents(), got = outs[i]->contents();
        ASSERT_EQ(want.size(), got.size());
        EXPECT_TRUE(want == got) << "frame " << i << " (" << name(j.layout) << ", " << name(j.memory)
                                 << ") differs from the CPU backend";
        if (j.layout == Layout::kGapped) {
            // Independently of the CPU: every byte that is not a sample is as it was.
            const j2kc_component &k0 = ref.comps[0];
            const size_t row = size_t(k0.row_stride), n = ref.comps.size();
            size_t changed = 0;
            for (size_t b = 0; b < got.size(); ++b) {
                const size_t y = b / row, x = b % row;
                const bool sample =
                    y < k0.height && x < size_t{k0.width} * k0.sample_stride && x % k0.sample_stride < 2 * n;
                if (!sample && got[b] != before[b]) ++changed;
            }
            EXPECT_EQ(changed, 0u) << "frame " << i << ": bytes between the samples changed";
        }
    }
    j2kc_decoder_free(&cpu);
    j2kc_decoder_free(&gpu);
}

}  // namespace host_output

TEST(GpuAsyncDecoder, HostOutputsInFlightMatchCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    host_output::check_host_outputs(3, 3);
    host_output::check_host_outputs(2, 1);  // one worker: mostly the caller's thread copies
}

TEST(GpuAsyncDecoder, CpuTier1HostOutputsInFlightMatchCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    CpuTier1Scope cpu_tier1;  // the workers are busy with Tier-1 while the bands are copied
    host_output::check_host_outputs(3, 4);
}
