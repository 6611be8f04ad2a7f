// GPU resources through the C API: device memory goes back to where it was
// once CUDA encoders and decoders are freed (no pool, staging buffer or
// stream outlives its codec), and a missing or invalid GPU is an error status
// with a message, never an abort. Robustness only; no clause of
// ISO/IEC 15444-1 is involved.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "j2kc.h"
#include "test_images.h"

extern char **environ;

namespace {

std::string g_last_error;  // the newest ERROR-level message of the library

void log_errors(void *, int level, const char *msg)
{
    if (level <= J2KC_LOG_ERROR) g_last_error = msg;
    if (std::getenv("J2KC_TEST_VERBOSE") && level <= J2KC_LOG_WARNING) std::fprintf(stderr, "j2kc: %s\n", msg);
}

int visible_devices()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    cudaGetLastError();
    return n;
}

/** Free device memory of device 0, after every queued piece of work. */
size_t free_bytes()
{
    cudaSetDevice(0);
    cudaDeviceSynchronize();
    size_t free = 0, total = 0;
    EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
    return free;
}

/** A w x h image of n 16-bit planes (precision prec) in host memory, noisy gradients. */
struct Frame : j2kc_test::Planes16 {
    Frame(uint32_t w, uint32_t h, uint32_t n, uint8_t prec, uint32_t seed) : Planes16(w, h, n, prec)
    {
        fill(seed, [&](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
            return uint16_t((((x + c * 13) * 7 + y * 5 + rng() % 23) % 997) * ((1u << prec) - 1) / 996);
        });
    }
};

/** The same planes copied to device memory (freed with the object). */
struct DeviceFrame : j2kc_test::DeviceImage {
    explicit DeviceFrame(const Frame &host) : DeviceImage(host.planes, host.image, true)
    {
        EXPECT_EQ(status, cudaSuccess);
    }
};

j2kc_encoder_config cuda_encoder_config(bool lossless)
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CUDA;
    cfg.log = log_errors;
    cfg.lossless = lossless;
    cfg.threads = 2;
    return cfg;
}

/**
 * Encodes `frames` frames with a fresh CUDA encoder, then decodes the last
 * codestream with a fresh CUDA decoder into host and into device memory.
 * Returns the free device memory seen while both codecs were alive.
 */
size_t one_round(const Frame &frame, bool lossless, int frames)
{
    const j2kc_image &img = frame.image;
    j2kc_encoder_config ecfg = cuda_encoder_config(lossless);
    if (!lossless) ecfg.frame_bytes = uint64_t{img.width} * img.height / 4;
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &ecfg, &img), J2KC_OK) << g_last_error;
    if (!enc) return 0;
    std::vector<uint8_t> cs;
    {
        DeviceFrame dev(frame);
        for (int f = 0; f < frames; ++f) {
            j2kc_packet pkt{};
            EXPECT_EQ(j2kc_encode(enc, f % 2 ? &dev.image : &img, &pkt), J2KC_OK) << g_last_error;
            cs.assign(pkt.data, pkt.data + pkt.size);
        }
    }

    j2kc_decoder_config dcfg;
    j2kc_decoder_config_default(&dcfg);
    dcfg.backend = J2KC_BACKEND_CUDA;
    dcfg.log = log_errors;
    dcfg.threads = 2;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &dcfg), J2KC_OK) << g_last_error;
    size_t during = SIZE_MAX;
    if (dec) {
        j2kc_stream_info info{};
        info.struct_size = sizeof(info);
        EXPECT_EQ(j2kc_decoder_parse(dec, cs.data(), cs.size(), &info), J2KC_OK) << g_last_error;
        Frame out(img.width, img.height, img.num_components, frame.comps[0].precision, 0);
        EXPECT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &out.image), J2KC_OK) << g_last_error;
        if (lossless) {
            EXPECT_TRUE(out.planes == frame.planes);
        }
        DeviceFrame dev_out(out);
        EXPECT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &dev_out.image), J2KC_OK) << g_last_error;
        during = free_bytes();
    }
    j2kc_decoder_free(&dec);
    j2kc_encoder_free(&enc);
    EXPECT_EQ(enc, nullptr);
    EXPECT_EQ(dec, nullptr);
    return during;
}

constexpr size_t kMiB = size_t{1} << 20;

/** Free device memory says nothing about the codecs under an instrumentation
 *  tool (its own allocations; gpu-check.sh's other test processes on the same
 *  GPU): these tests skip there, and memcheck's leak check covers leaks. */
#define SKIP_UNLESS_MEMORY_IS_OURS()                                                            \
    do {                                                                                        \
        if (visible_devices() == 0) GTEST_SKIP() << "no usable CUDA device";                    \
        if (j2kc_test::instrumented()) GTEST_SKIP() << "device memory accounting under a tool"; \
    } while (0)

TEST(GpuResource, DeviceMemoryBackToBaselineAfterCodecsFree)
{
    SKIP_UNLESS_MEMORY_IS_OURS();
    const Frame small(97, 61, 3, 8, 1);
    const Frame big(2048, 1080, 3, 12, 2);
    // Warm-up: the first round loads the kernels' modules (lazy loading) and
    // grows the primary context's own heaps; none of that is the codecs'.
    one_round(small, true, 2);
    one_round(big, false, 2);
    const size_t baseline = free_bytes();
    for (int round = 0; round < 3; ++round) {
        const size_t during_small = one_round(small, true, 3);
        const size_t during_big = one_round(big, round % 2 == 0, 3);
        const size_t after = free_bytes();
        // The measurement can see the codecs: a 2K encoder's pools are tens of MiB.
        EXPECT_LT(during_big, baseline) << "round " << round;
        (void)during_small;
        // Back to the baseline, within one 2 MiB page of the allocator.
        EXPECT_GE(after + 2 * kMiB, baseline)
            << "round " << round << ": " << (baseline - after) / double(kMiB) << " MiB not returned";
    }
}

TEST(GpuResource, ManyCodecsAliveAtOnceAllReturned)
{
    SKIP_UNLESS_MEMORY_IS_OURS();
    const Frame frame(320, 240, 3, 10, 3);
    // Four encoders and four decoders alive at once, freed in another order
    // than created.
    const auto many_alive = [&frame] {
        std::vector<j2kc_encoder *> encs(4, nullptr);
        std::vector<j2kc_decoder *> decs(4, nullptr);
        std::vector<uint8_t> cs;
        for (size_t i = 0; i < encs.size(); ++i) {
            j2kc_encoder_config cfg = cuda_encoder_config(i % 2 == 0);
            ASSERT_EQ(j2kc_encoder_create(&encs[i], &cfg, &frame.image), J2KC_OK) << g_last_error;
            j2kc_packet pkt{};
            ASSERT_EQ(j2kc_encode(encs[i], &frame.image, &pkt), J2KC_OK) << g_last_error;
            cs.assign(pkt.data, pkt.data + pkt.size);
        }
        for (size_t i = 0; i < decs.size(); ++i) {
            j2kc_decoder_config cfg;
            j2kc_decoder_config_default(&cfg);
            cfg.backend = J2KC_BACKEND_CUDA;
            cfg.log = log_errors;
            ASSERT_EQ(j2kc_decoder_create(&decs[i], &cfg), J2KC_OK) << g_last_error;
            Frame out(320, 240, 3, 10, 0);
            ASSERT_EQ(j2kc_decode(decs[i], cs.data(), cs.size(), &out.image), J2KC_OK) << g_last_error;
        }
        for (size_t i = decs.size(); i-- > 0;) j2kc_decoder_free(&decs[i]);
        for (j2kc_encoder *&e : encs) j2kc_encoder_free(&e);
    };
    // The warm-up is the same round: the driver keeps what it grows the first
    // time this many streams are alive at once (seen on an H200: 20 MiB, once,
    // not per round); what the codecs take must come back every round after.
    many_alive();
    const size_t baseline = free_bytes();
    for (int round = 0; round < 3; ++round) {
        many_alive();
        const size_t after = free_bytes();
        EXPECT_GE(after + 2 * kMiB, baseline)
            << "round " << round << ": " << (baseline - after) / double(kMiB) << " MiB not returned";
    }
}

TEST(GpuResource, FailedCreateLeavesNothingBehind)
{
    SKIP_UNLESS_MEMORY_IS_OURS();
    const Frame frame(64, 48, 3, 8, 4);
    one_round(frame, true, 1);
    const size_t baseline = free_bytes();
    for (int i = 0; i < 3; ++i) {
        // Refused at create: an option no backend accepts.
        j2kc_encoder_config cfg = cuda_encoder_config(true);
        cfg.cblk_width_log2 = 11;
        j2kc_encoder *enc = nullptr;
        EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &frame.image), J2KC_ERR_INVALID_ARG);
        EXPECT_EQ(enc, nullptr);
        // A decoder fed garbage: the error path frees what the frame took.
        j2kc_decoder_config dcfg;
        j2kc_decoder_config_default(&dcfg);
        dcfg.backend = J2KC_BACKEND_CUDA;
        dcfg.log = log_errors;
        j2kc_decoder *dec = nullptr;
        ASSERT_EQ(j2kc_decoder_create(&dec, &dcfg), J2KC_OK) << g_last_error;
        const uint8_t junk[] = {0xFF, 0x4F, 0xFF, 0x51, 0x00, 0x02, 0x12, 0x34};
        Frame out(64, 48, 3, 8, 0);
        EXPECT_NE(j2kc_decode(dec, junk, sizeof(junk), &out.image), J2KC_OK);
        j2kc_decoder_free(&dec);
    }
    EXPECT_GE(free_bytes() + 2 * kMiB, baseline);
}

// ---------------------------------------------------------------------------
// A missing GPU: runs on every machine. Without a device the checks run in
// this process; with one, an invalid ordinal is checked here and the
// no-device case in a child process that sees no GPU (CUDA_VISIBLE_DEVICES
// empty), the nearest thing to a GPU that has gone away.

void expect_no_device_errors(int device)
{
    const Frame frame(33, 17, 3, 8, 5);
    j2kc_encoder_config ecfg = cuda_encoder_config(true);
    ecfg.device = device;
    j2kc_encoder *enc = nullptr;
    g_last_error.clear();
    EXPECT_EQ(j2kc_encoder_create(&enc, &ecfg, &frame.image), J2KC_ERR_NO_DEVICE) << "device " << device;
    EXPECT_EQ(enc, nullptr);
    EXPECT_NE(g_last_error.find("CUDA device"), std::string::npos) << "message: '" << g_last_error << "'";

    j2kc_decoder_config dcfg;
    j2kc_decoder_config_default(&dcfg);
    dcfg.backend = J2KC_BACKEND_CUDA;
    dcfg.device = device;
    dcfg.log = log_errors;
    j2kc_decoder *dec = nullptr;
    g_last_error.clear();
    EXPECT_EQ(j2kc_decoder_create(&dec, &dcfg), J2KC_ERR_NO_DEVICE) << "device " << device;
    EXPECT_EQ(dec, nullptr);
    EXPECT_NE(g_last_error.find("CUDA device"), std::string::npos) << "message: '" << g_last_error << "'";
    EXPECT_STRNE(j2kc_status_string(J2KC_ERR_NO_DEVICE), "");

    // AUTO falls back to the CPU backend and still works.
    ecfg.backend = J2KC_BACKEND_AUTO;
    ASSERT_EQ(j2kc_encoder_create(&enc, &ecfg, &frame.image), J2KC_OK) << g_last_error;
    EXPECT_EQ(j2kc_encoder_backend(enc), J2KC_BACKEND_CPU);
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encode(enc, &frame.image, &pkt), J2KC_OK);
    j2kc_encoder_free(&enc);
    dcfg.backend = J2KC_BACKEND_AUTO;
    ASSERT_EQ(j2kc_decoder_create(&dec, &dcfg), J2KC_OK) << g_last_error;
    EXPECT_EQ(j2kc_decoder_backend(dec), J2KC_BACKEND_CPU);
    j2kc_decoder_free(&dec);
}

TEST(DeviceSetup, LoadingTheLibraryWidensCudaWorkQueues)
{
    // cuda_device.cu sets CUDA_DEVICE_MAX_CONNECTIONS when the library is
    // loaded, before any CUDA context exists (ctest sets no such variable).
    const char *v = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    ASSERT_NE(v, nullptr);
    EXPECT_GE(std::atoi(v), 16);
}

TEST(DeviceErrors, InvalidOrdinalIsNoDevice)
{
    const int n = visible_devices();
    for (int device : {n, n + 7, -1}) expect_no_device_errors(device);
}

TEST(DeviceErrors, NoVisibleGpuIsNoDevice)
{
    if (visible_devices() == 0 || std::getenv("J2KC_TEST_NO_GPU_CHILD")) {
        expect_no_device_errors(0);
        return;
    }
    // Re-run only this test in a child that sees no GPU; it must exit 0, not die of a signal.
    std::vector<std::string> env;
    for (char **e = environ; *e; ++e)
        if (std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0 && std::strncmp(*e, "GTEST_", 6) != 0)
            env.emplace_back(*e);
    env.emplace_back("CUDA_VISIBLE_DEVICES=");
    env.emplace_back("J2KC_TEST_NO_GPU_CHILD=1");
    std::vector<char *> envp;
    for (std::string &s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string self = "/proc/self/exe", filter = "--gtest_filter=DeviceErrors.NoVisibleGpuIsNoDevice";
    char *argv[] = {self.data(), filter.data(), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv, envp.data()), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

}  // namespace
