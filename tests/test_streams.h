/**
 * @file test_streams.h
 * @brief Test codestreams: a smooth synthetic frame (a sine/cosine field,
 * a 9x4 checker and uniform noise, from a fixed seed) in 16-bit planes, and
 * the plumbing that encodes a host image into one codestream on the CPU
 * backend with the options a test sets. Each test keeps its own shapes and
 * encoder options; what is shared is how the frame is drawn and encoded.
 * No clause of ISO/IEC 15444-1.
 */
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "j2kc.h"
#include "test_images.h"

namespace j2kc_test {

/**
 * A w x h frame of n components at `prec` bits: per component a smooth
 * field (frequencies drawn from the seed), a checker of 9x4 cells and
 * uniform noise of +-`noise`, clamped to [0, 1] and scaled to 2^prec - 1.
 * The draw order (two frequencies, then one draw per sample, component by
 * component, row by row) fixes the content by the seed.
 */
inline Planes16 synthetic_frame(uint32_t w, uint32_t h, uint32_t n, uint8_t prec, uint32_t seed, double noise)
{
    Planes16 p(w, h, n, prec);
    std::mt19937 rng(seed);
    const uint32_t top = (1u << prec) - 1;
    for (uint32_t c = 0; c < n; ++c) {
        const double fx = 0.01 + 0.05 * (rng() % 100) / 100.0, fy = 0.01 + 0.07 * (rng() % 100) / 100.0;
        for (uint32_t y = 0; y < h; ++y)
            for (uint32_t x = 0; x < w; ++x) {
                double v = 0.5 + 0.3 * std::sin(fx * x + 0.4 * c) * std::cos(fy * y) + 0.1 * ((x / 9 + y / 4) % 2) +
                           noise * (int(rng() % 200) - 100) / 100.0;
                v = std::min(1.0, std::max(0.0, v));
                p.at(c, x, y) = static_cast<uint16_t>(v * top);
            }
    }
    return p;
}

/** Encoder defaults for test streams: CPU backend, 2 threads, `log`. */
inline j2kc_encoder_config cpu_encoder_config(j2kc_log_fn log)
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.log = log;
    cfg.threads = 2;
    return cfg;
}

/** One codestream of `image` encoded with `cfg`; empty (and a test failure) where the encoder refuses. */
inline std::vector<uint8_t> encode_stream(const j2kc_image &image, const j2kc_encoder_config &cfg)
{
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &image), J2KC_OK);
    if (!enc) return {};
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encode(enc, &image, &pkt), J2KC_OK);
    std::vector<uint8_t> out(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return out;
}

}  // namespace j2kc_test
