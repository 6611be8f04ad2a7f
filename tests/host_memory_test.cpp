// j2kc_decoder_host_alloc / j2kc_host_free: memory for output planes that
// outlives its decoder; plain on the CPU backend, page-locked on the CUDA
// backend, where the download reaches it by DMA (no staging buffer) and the
// frames decoded into it equal the CPU backend's.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "j2kc.h"
#include "pipeline/host_output_mirror.cuh"
#include "test_images.h"
#include "test_streams.h"

namespace {

void quiet(void *, int, const char *) {}

using j2kc_test::have_gpu;

j2kc_decoder *make_decoder(j2kc_backend backend)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.log = quiet;
    cfg.threads = 2;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    return dec;
}

/** A 3-component 12-bit stream of an odd size, and its shape. */
struct Stream {
    std::vector<uint8_t> bytes;
    uint32_t width = 0, height = 0;

    Stream(uint32_t w, uint32_t h, uint32_t seed) : width(w), height(h)
    {
        const j2kc_test::Planes16 frame = j2kc_test::synthetic_frame(w, h, 3, 12, seed, 0.04);
        bytes = j2kc_test::encode_stream(frame.image, j2kc_test::cpu_encoder_config(quiet));
    }
};

/** Planar 16-bit planes, rows padded, laid out from `base` (as FFmpeg lays out a frame). */
struct Planes {
    std::vector<j2kc_component> comps;
    j2kc_image image{};
    size_t bytes = 0;

    Planes(const Stream &s, uint8_t *base)
    {
        const size_t stride = (size_t{s.width} * 2 + 63) / 64 * 64;
        for (uint32_t c = 0; c < 3; ++c)
            comps.push_back(j2kc_test::component16(reinterpret_cast<uint64_t>(base + c * stride * s.height), s.width,
                                                   s.height, 12, ptrdiff_t(stride)));
        image = j2kc_test::image_view(comps, s.width, s.height);
        bytes = 3 * stride * s.height;
    }
    static size_t size(const Stream &s) { return Planes(s, nullptr).bytes; }
};

/** The CPU backend's decode of the stream into pageable planes of the same layout. */
std::vector<uint8_t> reference(const Stream &s)
{
    std::vector<uint8_t> out(Planes::size(s));
    Planes planes(s, out.data());
    j2kc_decoder *cpu = make_decoder(J2KC_BACKEND_CPU);
    EXPECT_EQ(j2kc_decode(cpu, s.bytes.data(), s.bytes.size(), &planes.image), J2KC_OK);
    j2kc_decoder_free(&cpu);
    return out;
}

/** Decodes `streams` through the queue, each into host memory of `dec`'s, and checks each against the CPU. */
void decode_into_host_memory(j2kc_backend backend)
{
    const std::vector<Stream> streams = {Stream(317, 211, 1), Stream(317, 211, 2), Stream(640, 97, 3)};
    j2kc_decoder *dec = make_decoder(backend);
    ASSERT_NE(dec, nullptr);
    std::vector<uint8_t *> memory;
    for (const Stream &s : streams) {
        void *data = nullptr;
        ASSERT_EQ(j2kc_decoder_host_alloc(dec, Planes::size(s), &data), J2KC_OK);
        ASSERT_NE(data, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(data) % 64, 0u);
        memory.push_back(static_cast<uint8_t *>(data));
    }
    for (size_t i = 0; i < streams.size(); ++i)
        ASSERT_EQ(j2kc_decoder_submit(dec, streams[i].bytes.data(), streams[i].bytes.size(), int64_t(i)), J2KC_OK);
    for (size_t i = 0; i < streams.size(); ++i) {
        Planes planes(streams[i], memory[i]);
        int64_t tag = -1;
        ASSERT_EQ(j2kc_decoder_receive(dec, &planes.image, &tag, 1), J2KC_OK);
        EXPECT_EQ(tag, int64_t(i));
    }
    j2kc_decoder_free(&dec);
    // The memory outlives the decoder: read after it is gone, then freed.
    for (size_t i = 0; i < streams.size(); ++i) {
        const std::vector<uint8_t> want = reference(streams[i]);
        EXPECT_EQ(std::memcmp(memory[i], want.data(), want.size()), 0) << "frame " << i << " differs from the CPU's";
        j2kc_host_free(memory[i]);
    }
}

}  // namespace

TEST(HostMemory, RefusesBadArguments)
{
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CPU);
    ASSERT_NE(dec, nullptr);
    void *data = &dec;
    EXPECT_EQ(j2kc_decoder_host_alloc(nullptr, 64, &data), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(data, nullptr);
    data = &dec;
    EXPECT_EQ(j2kc_decoder_host_alloc(dec, 0, &data), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(data, nullptr);
    EXPECT_EQ(j2kc_decoder_host_alloc(dec, 64, nullptr), J2KC_ERR_INVALID_ARG);
    data = &dec;
    EXPECT_EQ(j2kc_decoder_host_alloc(dec, SIZE_MAX, &data), J2KC_ERR_NOMEM);
    EXPECT_EQ(data, nullptr);
    j2kc_host_free(nullptr);
    j2kc_decoder_free(&dec);
}

TEST(HostMemory, CpuBackendGivesZeroedMemoryThatTakesAFrame)
{
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CPU);
    ASSERT_NE(dec, nullptr);
    for (size_t size : {size_t{1}, size_t{4031}, size_t{4032}, size_t{3} << 20}) {
        void *data = nullptr;
        ASSERT_EQ(j2kc_decoder_host_alloc(dec, size, &data), J2KC_OK) << size;
        const auto *bytes = static_cast<const uint8_t *>(data);
        size_t nonzero = 0;
        for (size_t i = 0; i < size; ++i) nonzero += bytes[i] != 0;
        EXPECT_EQ(nonzero, 0u) << size;
        std::memset(data, 0xA5, size);
        j2kc_host_free(data);
    }
    j2kc_decoder_free(&dec);
    decode_into_host_memory(J2KC_BACKEND_CPU);
}

TEST(GpuHostMemory, PageLockedForEveryContextAndDecodedInto)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CUDA);
    ASSERT_NE(dec, nullptr);
    void *data = nullptr;
    const size_t size = (size_t{5} << 20) + 17;
    ASSERT_EQ(j2kc_decoder_host_alloc(dec, size, &data), J2KC_OK);
    j2kc_decoder_free(&dec);
    for (const uint8_t *at : {static_cast<uint8_t *>(data), static_cast<uint8_t *>(data) + size - 1}) {
        cudaPointerAttributes a{};
        ASSERT_EQ(cudaPointerGetAttributes(&a, at), cudaSuccess);
        EXPECT_EQ(a.type, cudaMemoryTypeHost);
    }
    j2kc_host_free(data);
    decode_into_host_memory(J2KC_BACKEND_CUDA);
}

TEST(GpuHostMemory, DownloadSkipsTheStagingBuffer)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    j2kc_decoder *dec = make_decoder(J2KC_BACKEND_CUDA);
    ASSERT_NE(dec, nullptr);
    const Stream s(317, 211, 4);
    void *data = nullptr;
    ASSERT_EQ(j2kc_decoder_host_alloc(dec, Planes::size(s), &data), J2KC_OK);
    std::vector<uint8_t> pageable(Planes::size(s));
    {
        j2kc::HostOutputMirror mirror;
        mirror.prepare(Planes(s, pageable.data()).image, 2);
        EXPECT_FALSE(mirror.pieces().empty()) << "pageable planes are staged";
        mirror.prepare(Planes(s, static_cast<uint8_t *>(data)).image, 2);
        EXPECT_TRUE(mirror.pieces().empty()) << "the library's host memory is staged";
        EXPECT_TRUE(mirror.download_bands().empty());
    }
    j2kc_host_free(data);
    j2kc_decoder_free(&dec);
}
