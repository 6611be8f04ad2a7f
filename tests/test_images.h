/**
 * @file test_images.h
 * @brief Test frames for the C API tests and benchmarks: j2kc_component and
 * j2kc_image views over sample buffers, a set of 16-bit planes that owns its
 * samples and its view, filled from a fixed seed, and (where the CUDA runtime
 * header is included first) whether a device can be used and a device copy
 * of host buffers. Each test keeps its own content (what it needs to
 * exercise); what is shared is the memory layout, the plumbing of the views
 * and how two frames are compared. No clause of ISO/IEC 15444-1.
 */
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "j2kc.h"

namespace j2kc_test {

/**
 * True under a GPU instrumentation tool (compute-sanitizer, which
 * scripts/gpu-check.sh runs with J2KC_TEST_INSTRUMENTED=1; injected tools
 * that set CUDA_INJECTION64_PATH): tests then leave out their largest frames,
 * which instrumented would take many minutes each.
 */
inline bool instrumented()
{
    return std::getenv("J2KC_TEST_INSTRUMENTED") != nullptr || std::getenv("CUDA_INJECTION64_PATH") != nullptr;
}

/**
 * A component of 16-bit samples at `data` (a host or device address):
 * `width` x `height` samples, rows `row_stride` bytes apart, samples
 * `sample_stride` bytes apart in a row, values `shift` bits up.
 */
inline j2kc_component component16(uint64_t data, uint32_t width, uint32_t height, uint8_t precision,
                                  ptrdiff_t row_stride, uint32_t sample_stride = 2, uint8_t dx = 1, uint8_t dy = 1,
                                  uint8_t shift = 0)
{
    j2kc_component k;
    std::memset(&k, 0, sizeof(k));  // also is_signed and any padding
    k.data = data;
    k.row_stride = row_stride;
    k.sample_stride = sample_stride;
    k.bytes_per_sample = 2;
    k.shift = shift;
    k.precision = precision;
    k.dx = dx;
    k.dy = dy;
    k.width = width;
    k.height = height;
    return k;
}

/**
 * A host component over a packed plane of `bytes_per_sample`-byte samples
 * (2 or 4) at `data`, shaped as the stream's component `ci` that
 * j2kc_decoder_parse reported: the output a decode test gives j2kc_decode.
 */
inline j2kc_component decoded_component(const j2kc_component_info &ci, void *data, uint8_t bytes_per_sample)
{
    j2kc_component k;
    std::memset(&k, 0, sizeof(k));  // also shift and any padding
    k.data = reinterpret_cast<uint64_t>(data);
    k.row_stride = ptrdiff_t(ci.width) * bytes_per_sample;
    k.sample_stride = bytes_per_sample;
    k.bytes_per_sample = bytes_per_sample;
    k.precision = ci.precision;
    k.is_signed = ci.is_signed;
    k.dx = ci.dx;
    k.dy = ci.dy;
    k.width = ci.width;
    k.height = ci.height;
    return k;
}

/** An image over `comps` (which must outlive it and not reallocate). */
inline j2kc_image image_view(std::vector<j2kc_component> &comps, uint32_t width, uint32_t height,
                             j2kc_memory memory = J2KC_MEMORY_HOST)
{
    j2kc_image image{};
    image.struct_size = sizeof(image);
    image.memory = memory;
    image.width = width;
    image.height = height;
    image.num_components = static_cast<uint32_t>(comps.size());
    image.components = comps.data();
    return image;
}

/**
 * `n` planes of 16-bit samples in host memory, component c subsampled by
 * dx[c] x dy[c] (1 where not given), rows packed (2 bytes a sample), all
 * zero until filled. Movable, not copyable: the view points into it.
 */
struct Planes16 {
    uint32_t width = 0, height = 0;
    uint8_t precision = 8;
    std::vector<std::vector<uint16_t>> planes;  ///< one per component
    std::vector<j2kc_component> comps;
    j2kc_image image{};

    Planes16(uint32_t w, uint32_t h, uint32_t n, uint8_t prec, const std::vector<uint8_t> &dx = {},
             const std::vector<uint8_t> &dy = {})
        : width(w), height(h), precision(prec), planes(n), comps(n)
    {
        for (uint32_t c = 0; c < n; ++c) {
            const uint8_t sx = dx.empty() ? 1 : dx[c], sy = dy.empty() ? 1 : dy[c];
            const uint32_t cw = (w + sx - 1) / sx, ch = (h + sy - 1) / sy;
            planes[c].assign(size_t{cw} * ch, 0);
            comps[c] =
                component16(reinterpret_cast<uint64_t>(planes[c].data()), cw, ch, prec, ptrdiff_t(cw) * 2, 2, sx, sy);
        }
        image = image_view(comps, w, h);
    }
    Planes16(Planes16 &&) = default;
    Planes16 &operator=(Planes16 &&) = default;
    Planes16(const Planes16 &) = delete;
    Planes16 &operator=(const Planes16 &) = delete;

    uint16_t &at(uint32_t c, uint32_t x, uint32_t y) { return planes[c][size_t{y} * comps[c].width + x]; }
    uint16_t at(uint32_t c, uint32_t x, uint32_t y) const { return planes[c][size_t{y} * comps[c].width + x]; }

    /**
     * Sets every sample to f(c, x, y, rng) (a value that fits `precision`),
     * component by component, row by row, with one std::mt19937 seeded
     * `seed`: the content is fixed by the seed, whatever f draws.
     */
    template <typename F>
    void fill(uint32_t seed, F &&f)
    {
        std::mt19937 rng(seed);
        for (uint32_t c = 0; c < planes.size(); ++c)
            for (uint32_t y = 0; y < comps[c].height; ++y)
                for (uint32_t x = 0; x < comps[c].width; ++x) at(c, x, y) = static_cast<uint16_t>(f(c, x, y, rng));
    }
};

/** PSNR in dB of `b` against `a`, two frames of one shape and precision; 999 where they are equal. */
inline double psnr(const Planes16 &a, const Planes16 &b)
{
    double se = 0, n = 0;
    for (size_t c = 0; c < a.planes.size(); ++c)
        for (size_t i = 0; i < a.planes[c].size(); ++i) {
            const double d = double(a.planes[c][i]) - double(b.planes[c][i]);
            se += d * d;
            n += 1;
        }
    const double top = double((1u << a.precision) - 1);
    return se == 0 ? 999.0 : 10 * std::log10(top * top * n / se);
}

#if defined(CUDART_VERSION)
/** Whether a CUDA device can be used; the error of a failed query is cleared, so later calls do not see it. */
inline bool have_gpu()
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        cudaGetLastError();
        return false;
    }
    return true;
}

/**
 * Device copies of host sample buffers, and `image` remapped onto them (a
 * component whose data lies in host buffer i points at the same offset in
 * device buffer i). Freed with the object; `status` holds the first CUDA
 * error of the constructor (tests check it).
 */
struct DeviceImage {
    std::vector<void *> buffers;
    std::vector<size_t> bytes;
    std::vector<j2kc_component> comps;
    j2kc_image image{};
    cudaError_t status = cudaSuccess;

    DeviceImage(const std::vector<std::vector<uint16_t>> &host, const j2kc_image &host_image, bool copy)
        : comps(host_image.components, host_image.components + host_image.num_components), image(host_image)
    {
        for (const auto &b : host) {
            void *p = nullptr;
            note(cudaMalloc(&p, b.size() * 2));
            buffers.push_back(p);
            bytes.push_back(b.size() * 2);
        }
        for (size_t c = 0; c < comps.size(); ++c)
            for (size_t i = 0; i < host.size(); ++i) {
                const uint64_t base = reinterpret_cast<uint64_t>(host[i].data());
                const uint64_t at = host_image.components[c].data;
                if (at >= base && at < base + host[i].size() * 2)
                    comps[c].data = reinterpret_cast<uint64_t>(buffers[i]) + (at - base);
            }
        image.memory = J2KC_MEMORY_CUDA;
        image.components = comps.data();
        if (copy) note(load(host));
    }
    ~DeviceImage()
    {
        for (void *p : buffers) cudaFree(p);
    }
    DeviceImage(const DeviceImage &) = delete;
    DeviceImage &operator=(const DeviceImage &) = delete;

    /** Copies the host buffers (same sizes) in, synchronously or on `stream`. */
    cudaError_t load(const std::vector<std::vector<uint16_t>> &host, cudaStream_t stream = nullptr) const
    {
        cudaError_t e = cudaSuccess;
        for (size_t i = 0; i < buffers.size() && e == cudaSuccess; ++i)
            e = stream ? cudaMemcpyAsync(buffers[i], host[i].data(), bytes[i], cudaMemcpyHostToDevice, stream)
                       : cudaMemcpy(buffers[i], host[i].data(), bytes[i], cudaMemcpyHostToDevice);
        return e;
    }
    /** Overwrites every buffer with 0xA5 bytes, synchronously or on `stream`. */
    cudaError_t scribble(cudaStream_t stream = nullptr) const
    {
        cudaError_t e = cudaSuccess;
        for (size_t i = 0; i < buffers.size() && e == cudaSuccess; ++i)
            e = stream ? cudaMemsetAsync(buffers[i], 0xA5, bytes[i], stream) : cudaMemset(buffers[i], 0xA5, bytes[i]);
        return e;
    }

private:
    void note(cudaError_t e)
    {
        if (status == cudaSuccess) status = e;
    }
};
#endif

}  // namespace j2kc_test
