// The CUDA encoder's frame pipeline: byte-identical to the CPU
// backend up to 8192x4320, with several frames in flight through
// submit/receive, for host and CUDA frames, with the caller reusing its
// frame as soon as submit returns, several encoders on several threads, and
// no allocation once the pools are warm. Gpu* tests skip without a device.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/cuda_util.cuh"
#include "j2kc.h"
#include "test_images.h"

namespace {

enum class Layout { kPlanes, kPacked, kOneBuffer };

/** A frame of 16-bit samples in one of three memory layouts, with natural-looking content. */
struct Frame {
    uint32_t width = 0, height = 0;
    std::vector<std::vector<uint16_t>> buffers;
    std::vector<j2kc_component> comps;
    j2kc_image image{};

    Frame(uint32_t w, uint32_t h, uint32_t n, uint8_t prec, const std::vector<uint8_t> &dx, Layout layout)
        : width(w), height(h)
    {
        comps.resize(n);
        for (uint32_t c = 0; c < n; ++c) {
            const uint8_t sx = dx.empty() ? 1 : dx[c];
            comps[c] = j2kc_test::component16(0, (w + sx - 1) / sx, h, prec, 0, 2, sx);
        }
        if (layout == Layout::kPacked) {  // like xyz12le: samples interleaved, value << (16 - prec)
            buffers.emplace_back(size_t{w} * h * n);
            for (uint32_t c = 0; c < n; ++c) {
                comps[c].data = reinterpret_cast<uint64_t>(buffers[0].data() + c);
                comps[c].row_stride = ptrdiff_t(w) * n * 2;
                comps[c].sample_stride = n * 2;
                comps[c].shift = static_cast<uint8_t>(16 - prec);
            }
        } else if (layout == Layout::kOneBuffer) {  // planes in one buffer with padded rows, like FFmpeg's
            size_t total = 0;
            std::vector<size_t> offset(n);
            for (uint32_t c = 0; c < n; ++c) {
                comps[c].row_stride = ptrdiff_t((comps[c].width * 2 + 63) / 64 * 64 + 64);
                offset[c] = total / 2;
                total += size_t(comps[c].row_stride) * h;
            }
            buffers.emplace_back(total / 2);
            for (uint32_t c = 0; c < n; ++c) comps[c].data = reinterpret_cast<uint64_t>(buffers[0].data() + offset[c]);
        } else {
            for (uint32_t c = 0; c < n; ++c) {
                buffers.emplace_back(size_t{comps[c].width} * h);
                comps[c].data = reinterpret_cast<uint64_t>(buffers.back().data());
                comps[c].row_stride = ptrdiff_t(comps[c].width) * 2;
            }
        }
        image = j2kc_test::image_view(comps, w, h);
    }

    uint16_t &at(uint32_t c, uint32_t x, uint32_t y)
    {
        const j2kc_component &k = comps[c];
        return *reinterpret_cast<uint16_t *>(k.data + uint64_t(y) * uint64_t(k.row_stride) +
                                             uint64_t(x) * k.sample_stride);
    }

    /** Smooth gradients, edges, texture and noise: every Tier-1 path and a real rate trade-off. */
    void fill(uint32_t seed)
    {
        std::mt19937 rng(seed);
        for (uint32_t c = 0; c < comps.size(); ++c) {
            const j2kc_component &k = comps[c];
            const uint32_t top = (1u << k.precision) - 1;
            std::vector<double> gx(k.width), gy(k.height);
            for (uint32_t x = 0; x < k.width; ++x) gx[x] = std::sin(0.011 * x + 0.7 * c + seed);
            for (uint32_t y = 0; y < k.height; ++y) gy[y] = std::cos(0.017 * y + 0.3 * seed);
            uint32_t lcg = rng();
            for (uint32_t y = 0; y < k.height; ++y)
                for (uint32_t x = 0; x < k.width; ++x) {
                    lcg = lcg * 1664525u + 1013904223u;
                    double v = 0.5 + 0.3 * gx[x] * gy[y] + 0.08 * ((((x >> 5) + (y >> 4)) & 1) ? 1 : -1) +
                               0.03 * (double(lcg >> 24) / 255.0 - 0.5);
                    v = std::min(1.0, std::max(0.0, v));
                    at(c, x, y) = static_cast<uint16_t>(uint32_t(v * top) << k.shift);
                }
        }
    }

    void scribble()
    {
        for (auto &b : buffers) std::fill(b.begin(), b.end(), uint16_t(0x5A5A));
    }
};

/** A copy of a host frame in CUDA memory (same layout), filled by load(). */
struct DeviceFrame : j2kc_test::DeviceImage {
    explicit DeviceFrame(const Frame &f) : DeviceImage(f.buffers, f.image, false) { EXPECT_EQ(status, cudaSuccess); }
    /** Uploads f (same layout), synchronously or on `stream`. */
    void load(const Frame &f, cudaStream_t stream = nullptr)
    {
        EXPECT_EQ(DeviceImage::load(f.buffers, stream), cudaSuccess);
    }
    void scribble(cudaStream_t stream = nullptr) { EXPECT_EQ(DeviceImage::scribble(stream), cudaSuccess); }
};

void quiet(void *, int level, const char *msg)
{
    if (level <= J2KC_LOG_ERROR && std::getenv("J2KC_TEST_VERBOSE")) std::fprintf(stderr, "j2kc: %s\n", msg);
}

j2kc_encoder_config base_config(j2kc_backend backend)
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.log = quiet;
    return cfg;
}

std::vector<uint8_t> encode_one(const j2kc_image &image, const j2kc_encoder_config &cfg)
{
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &image), J2KC_OK);
    if (!enc) return {};
    j2kc_packet pkt{};
    std::vector<uint8_t> out;
    EXPECT_EQ(j2kc_encode(enc, &image, &pkt), J2KC_OK);
    if (pkt.data) out.assign(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return out;
}

/**
 * Submits every frame through the queue (receiving when it is full), calling
 * after_submit(i) as soon as frame i is accepted; returns the codestreams in
 * the order received and checks that the tags come back in submit order.
 */
template <typename AfterSubmit>
std::vector<std::vector<uint8_t>> encode_queued(j2kc_encoder *enc, const std::vector<const j2kc_image *> &images,
                                                AfterSubmit after_submit)
{
    std::vector<std::vector<uint8_t>> out;
    j2kc_packet pkt{};
    auto take = [&](int flush) {
        const int st = j2kc_encoder_receive(enc, &pkt, flush);
        if (st == J2KC_OK) {
            EXPECT_EQ(pkt.tag, int64_t(out.size()) + 100);
            out.emplace_back(pkt.data, pkt.data + pkt.size);
        }
        return st;
    };
    for (size_t i = 0; i < images.size(); ++i) {
        for (;;) {
            const int st = j2kc_encoder_submit(enc, images[i], int64_t(i) + 100);
            if (st == J2KC_OK) break;
            EXPECT_EQ(st, J2KC_ERR_AGAIN);
            if (st != J2KC_ERR_AGAIN) return out;
            EXPECT_EQ(take(1), J2KC_OK);  // full: waiting for the oldest must give a packet
        }
        after_submit(i);
        take(0);  // whatever is already finished
    }
    int st;
    while ((st = take(1)) == J2KC_OK) {}
    EXPECT_EQ(st, J2KC_ERR_EOF);
    return out;
}

using j2kc_test::have_gpu;

struct MatrixCase {
    const char *name;
    uint32_t w, h, n;
    uint8_t prec;
    std::vector<uint8_t> dx;
    Layout layout;
    bool lossless;
    uint64_t budget;
    j2kc_profile profile;
    uint32_t tile = 0;
};

const std::vector<MatrixCase> &matrix()
{
    static const std::vector<MatrixCase> cases = {
        {"8K IMF 4:4:4 12-bit lossy", 8192, 4320, 3, 12, {}, Layout::kPacked, false, 0, J2KC_PROFILE_IMF},
        {"odd 4097x2161 12-bit budget", 4097, 2161, 3, 12, {}, Layout::kPlanes, false, 1500000, J2KC_PROFILE_NONE},
        {"odd 4097x2161 12-bit lossless", 4097, 2161, 3, 12, {}, Layout::kOneBuffer, true, 0, J2KC_PROFILE_NONE},
        {"DCI 4K", 4096, 2160, 3, 12, {}, Layout::kPacked, false, 0, J2KC_PROFILE_DCI_4K},
        {"DCI 2K", 2048, 1080, 3, 12, {}, Layout::kOneBuffer, false, 0, J2KC_PROFILE_DCI_2K},
        {"IMF 4K 4:2:2 10-bit", 3840, 2160, 3, 10, {1, 2, 2}, Layout::kOneBuffer, false, 0, J2KC_PROFILE_IMF},
        {"odd 1921x1081 4:2:2 lossy budget",
         1921,
         1081,
         3,
         10,
         {1, 2, 2},
         Layout::kPlanes,
         false,
         300000,
         J2KC_PROFILE_NONE},
        {"tiles 1000x700 lossy", 1000, 700, 3, 8, {}, Layout::kPacked, false, 60000, J2KC_PROFILE_NONE, 256},
        {"tiles 517x263 lossless", 517, 263, 3, 12, {}, Layout::kPlanes, true, 0, J2KC_PROFILE_NONE, 128},
        {"16-bit 4097x33 lossless", 4097, 33, 1, 16, {}, Layout::kPlanes, true, 0, J2KC_PROFILE_NONE},
    };
    return cases;
}

/** gtest prints a case by its name. */
void PrintTo(const MatrixCase &k, std::ostream *os) { *os << k.name; }

j2kc_encoder_config matrix_config(const MatrixCase &k, j2kc_backend backend)
{
    j2kc_encoder_config cfg = base_config(backend);
    cfg.lossless = k.lossless;
    cfg.frame_bytes = k.budget;
    cfg.profile = k.profile;
    cfg.tile_width = cfg.tile_height = k.tile;
    return cfg;
}

/**
 * The codestreams of `frames` from one encoder of `cfg`, submitted in order:
 * a sequence, whose first frame's step phase codes every frame.
 */
std::vector<std::vector<uint8_t>> encode_sequence(const std::vector<Frame> &frames, const j2kc_encoder_config &cfg)
{
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &frames[0].image), J2KC_OK);
    if (!enc) return {};
    std::vector<const j2kc_image *> images;
    for (const Frame &f : frames) images.push_back(&f.image);
    auto got = encode_queued(enc, images, [](size_t) {});
    j2kc_encoder_free(&enc);
    return got;
}

}  // namespace

// The equivalence matrix, one frame per case through j2kc_encode,
// each case a test of its own (so a sanitizer run can take them one process
// each). Under an instrumentation tool (j2kc_test::instrumented()) the
// cases above 2K skip: they would take many minutes each, and the smaller
// ones run the same kernels and pipeline.
class GpuEncoderMatrix : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(GpuEncoderMatrix, MatchesCpuByteForByte)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const MatrixCase &k = GetParam();
    if (j2kc_test::instrumented() && uint64_t(k.w) * k.h > 2048u * 1080u)
        GTEST_SKIP() << k.name << ": left out under an instrumentation tool";
    Frame f(k.w, k.h, k.n, k.prec, k.dx, k.layout);
    f.fill(k.w * 31 + k.h);
    const std::vector<uint8_t> cpu = encode_one(f.image, matrix_config(k, J2KC_BACKEND_CPU));
    const std::vector<uint8_t> gpu = encode_one(f.image, matrix_config(k, J2KC_BACKEND_CUDA));
    ASSERT_FALSE(cpu.empty());
    EXPECT_TRUE(cpu == gpu) << k.name << ": sizes " << cpu.size() << " / " << gpu.size();
    if (k.budget) {
        EXPECT_LE(gpu.size(), k.budget);
    }
}

/** gtest names: the case's name in letters, digits and underscores. */
std::string matrix_case_name(const ::testing::TestParamInfo<MatrixCase> &info)
{
    std::string n;
    for (const char *c = info.param.name; *c; ++c) n += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
    return n;
}

INSTANTIATE_TEST_SUITE_P(Formats, GpuEncoderMatrix, ::testing::ValuesIn(matrix()), matrix_case_name);

// The step phase search decides on each backend's decode of each phase's
// codestream: the same bytes and samples on both backends, so the same choice.
TEST(GpuEncoder, StepPhaseSearchMatchesCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    Frame f(641, 481, 3, 10, {1, 2, 2}, Layout::kPlanes);
    f.fill(641);
    j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CPU);
    cfg.frame_bytes = 200000;
    cfg.step_phases = 4;
    const std::vector<uint8_t> cpu = encode_one(f.image, cfg);
    cfg.backend = J2KC_BACKEND_CUDA;
    const std::vector<uint8_t> gpu = encode_one(f.image, cfg);
    ASSERT_FALSE(cpu.empty());
    EXPECT_TRUE(cpu == gpu) << "sizes " << cpu.size() << " / " << gpu.size();
}

namespace {

/**
 * The codestreams of `frames` coded by the CUDA backend (cfg's other fields
 * kept) from one device buffer, reloaded with the next frame right after each
 * submit, in order on `stream` (none: the legacy stream).
 */
std::vector<std::vector<uint8_t>> encode_from_one_device_buffer(const std::vector<Frame> &frames,
                                                                j2kc_encoder_config cfg, cudaStream_t stream)
{
    DeviceFrame dev(frames[0]);
    cfg.backend = J2KC_BACKEND_CUDA;
    cfg.cuda_stream = stream;
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &dev.image), J2KC_OK);
    if (!enc) return {};
    dev.load(frames[0], stream);
    std::vector<const j2kc_image *> images(frames.size(), &dev.image);
    auto got = encode_queued(enc, images, [&](size_t i) {
        dev.scribble(stream);
        if (i + 1 < frames.size()) dev.load(frames[i + 1], stream);
    });
    j2kc_encoder_free(&enc);
    return got;
}

}  // namespace

// An IMF sequence's first frame chooses the phase of every frame: from one
// device buffer reloaded on a lent stream after each submit, with frames in
// flight after the first, the same codestreams as the CPU backend's from host
// frames.
TEST(GpuEncoder, SequenceStepPhaseFromDeviceFramesMatchesCpu)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const uint32_t w = 720, h = 486;
    std::vector<Frame> frames;
    j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CPU);
    cfg.profile = J2KC_PROFILE_IMF;
    cfg.frame_bytes = 150000;
    for (uint32_t i = 0; i < 5; ++i) {
        frames.emplace_back(w, h, 3, 12, std::vector<uint8_t>{}, Layout::kOneBuffer);
        frames.back().fill(3000 + i);
    }
    const auto expected = encode_sequence(frames, cfg);
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    cfg.frames_in_flight = 3;
    const auto got = encode_from_one_device_buffer(frames, cfg, stream);
    cudaStreamDestroy(stream);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == expected[i]) << "frame " << i;
}

// Several frames in flight, host frames overwritten as soon as submit returns.
TEST(GpuEncoder, HostFramesInFlightMatchCpuInOrder)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const uint32_t w = 1283, h = 719;
    for (int slots : {1, 2, 3, 5}) {
        SCOPED_TRACE("frames_in_flight " + std::to_string(slots));
        std::vector<Frame> frames;
        j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CPU);
        cfg.frame_bytes = 90000;
        for (uint32_t i = 0; i < 7; ++i) {
            frames.emplace_back(w, h, 3, 12, std::vector<uint8_t>{}, i % 2 ? Layout::kPacked : Layout::kPlanes);
            frames.back().fill(1000 + i);
        }
        const auto expected = encode_sequence(frames, cfg);  // the CPU backend's coding of the same sequence
        // Layouts alternate (packed and planar): the staging copy follows each frame's pointers.
        cfg.backend = J2KC_BACKEND_CUDA;
        cfg.frames_in_flight = slots;
        j2kc_encoder *enc = nullptr;
        ASSERT_EQ(j2kc_encoder_create(&enc, &cfg, &frames[0].image), J2KC_OK);
        ASSERT_EQ(j2kc_encoder_backend(enc), J2KC_BACKEND_CUDA);
        std::vector<const j2kc_image *> images;
        for (const Frame &f : frames) images.push_back(&f.image);
        const auto got = encode_queued(enc, images, [&](size_t i) { frames[i].scribble(); });
        j2kc_encoder_free(&enc);
        ASSERT_EQ(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == expected[i]) << "frame " << i;
    }
}

// CUDA frames, with and without a lent stream: the caller overwrites each
// frame right after submit (in stream order on its stream when it lent one).
TEST(GpuEncoder, CudaFramesInFlightMatchCpuInOrder)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const uint32_t w = 2049, h = 1081;
    for (bool lend : {false, true}) {
        SCOPED_TRACE(lend ? "lent stream" : "no stream");
        cudaStream_t stream = nullptr;
        if (lend) {
            ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
        }
        std::vector<Frame> frames;
        std::vector<std::vector<uint8_t>> expected;
        j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CPU);
        cfg.lossless = 1;
        for (uint32_t i = 0; i < 6; ++i) {
            frames.emplace_back(w, h, 3, 12, std::vector<uint8_t>{}, Layout::kOneBuffer);
            frames.back().fill(2000 + i);
            expected.push_back(encode_one(frames.back().image, cfg));
        }
        const auto got = encode_from_one_device_buffer(frames, cfg, stream);
        if (stream) cudaStreamDestroy(stream);
        ASSERT_EQ(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == expected[i]) << "frame " << i;
    }
}

// Pools are sized once: after every slot has seen a frame, frames allocate nothing.
TEST(GpuEncoder, SteadyStateAllocatesNothing)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    Frame f(1024, 540, 3, 12, {}, Layout::kOneBuffer);
    f.fill(7);
    j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CUDA);
    cfg.frame_bytes = 100000;
    cfg.frames_in_flight = 3;
    j2kc_encoder *enc = nullptr;
    ASSERT_EQ(j2kc_encoder_create(&enc, &cfg, &f.image), J2KC_OK);
    std::vector<const j2kc_image *> images(6, &f.image);
    auto first = encode_queued(enc, images, [](size_t) {});
    const uint64_t before = j2kc::cuda_buffer_allocations().load();
    auto second = encode_queued(enc, images, [](size_t) {});
    EXPECT_EQ(j2kc::cuda_buffer_allocations().load(), before);
    ASSERT_EQ(first.size(), 6u);
    ASSERT_EQ(second.size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(second[i] == first[0] && first[i] == first[0]) << i;
    j2kc_encoder_free(&enc);
}

// Two encoders (on two GPUs when there are two) driven from two threads at once.
TEST(GpuEncoder, TwoEncodersOnTwoThreads)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    int devices = 0;
    ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
    struct Job {
        int device;
        std::vector<Frame> frames;
        std::vector<std::vector<uint8_t>> expected, got;
        j2kc_encoder_config cfg;
        int create_status = -100;
        j2kc_backend backend = J2KC_BACKEND_AUTO;
    };
    std::deque<Job> jobs(2);
    for (int j = 0; j < 2; ++j) {
        Job &job = jobs[j];
        job.device = devices > 1 ? j : 0;
        job.cfg = base_config(J2KC_BACKEND_CPU);
        job.cfg.profile = j == 0 ? J2KC_PROFILE_DCI_2K : J2KC_PROFILE_NONE;
        job.cfg.lossless = j == 1;
        const uint32_t w = j == 0 ? 2048 : 1501, h = j == 0 ? 1080 : 777;
        for (uint32_t i = 0; i < 5; ++i) {
            job.frames.emplace_back(w, h, 3, 12, std::vector<uint8_t>{}, Layout::kPacked);
            job.frames.back().fill(3000 + 10 * j + i);
        }
        job.expected = encode_sequence(job.frames, job.cfg);  // the CPU backend's coding of the same sequence
        job.cfg.backend = J2KC_BACKEND_CUDA;
        job.cfg.device = job.device;
    }
    std::vector<std::thread> threads;
    for (Job &job : jobs)
        threads.emplace_back([&job] {
            j2kc_encoder *enc = nullptr;
            job.create_status = j2kc_encoder_create(&enc, &job.cfg, &job.frames[0].image);
            if (!enc) return;
            job.backend = j2kc_encoder_backend(enc);
            std::vector<const j2kc_image *> images;
            for (const Frame &f : job.frames) images.push_back(&f.image);
            for (int round = 0; round < 2; ++round) job.got = encode_queued(enc, images, [](size_t) {});
            j2kc_encoder_free(&enc);
        });
    for (std::thread &t : threads) t.join();
    for (Job &job : jobs) {
        SCOPED_TRACE("device " + std::to_string(job.device));
        EXPECT_EQ(job.create_status, J2KC_OK);
        EXPECT_EQ(job.backend, J2KC_BACKEND_CUDA);
        ASSERT_EQ(job.got.size(), job.expected.size());
        for (size_t i = 0; i < job.got.size(); ++i) EXPECT_TRUE(job.got[i] == job.expected[i]) << "frame " << i;
    }
}

// The device index is honoured: one that does not exist gives NO_DEVICE (with or without a GPU).
TEST(Encoder, DeviceIndexIsHonoured)
{
    Frame f(64, 32, 1, 8, {}, Layout::kPlanes);
    j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CUDA);
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) cudaGetLastError();
    for (int device : {-1, devices, 999}) {
        cfg.device = device;
        j2kc_encoder *enc = nullptr;
        EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &f.image), J2KC_ERR_NO_DEVICE) << "device " << device;
        EXPECT_EQ(enc, nullptr);
    }
}

TEST(Encoder, FramesInFlightOutOfRangeIsRejected)
{
    Frame f(64, 32, 1, 8, {}, Layout::kPlanes);
    j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CPU);
    for (int n : {-1, 17}) {
        cfg.frames_in_flight = n;
        j2kc_encoder *enc = nullptr;
        EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &f.image), J2KC_ERR_INVALID_ARG) << n;
        EXPECT_EQ(enc, nullptr);
    }
}

// The queue contract on the CPU backend too: tags in submit order, EOF when drained.
TEST(Encoder, CpuQueueKeepsSubmitOrder)
{
    std::vector<Frame> frames;
    std::vector<std::vector<uint8_t>> expected;
    j2kc_encoder_config cfg = base_config(J2KC_BACKEND_CPU);
    cfg.lossless = 1;
    for (uint32_t i = 0; i < 4; ++i) {
        frames.emplace_back(97, 61, 3, 8, std::vector<uint8_t>{}, i % 2 ? Layout::kPacked : Layout::kOneBuffer);
        frames.back().fill(i);
        expected.push_back(encode_one(frames.back().image, cfg));
    }
    j2kc_encoder *enc = nullptr;
    ASSERT_EQ(j2kc_encoder_create(&enc, &cfg, &frames[0].image), J2KC_OK);
    std::vector<const j2kc_image *> images;
    for (const Frame &f : frames) images.push_back(&f.image);
    const auto got = encode_queued(enc, images, [](size_t) {});
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(got[i] == expected[i]) << "frame " << i;
    for (size_t i = 1; i < got.size(); ++i) EXPECT_FALSE(got[i] == got[0]) << "frames must differ";
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encoder_receive(enc, &pkt, 0), J2KC_ERR_AGAIN);
    EXPECT_EQ(j2kc_encoder_receive(enc, &pkt, 1), J2KC_ERR_EOF);
    j2kc_encoder_free(&enc);
}
