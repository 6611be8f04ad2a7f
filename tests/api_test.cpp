// End to end through the C API: encode, decode, compare; both backends where a GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "j2kc.h"
#include "test_images.h"

namespace {

/** Host planes (tests/test_images.h) with natural-looking content. */
struct Planar : j2kc_test::Planes16 {
    using Planes16::Planes16;

    /** Smooth waves, a checkerboard and a little noise: every Tier-1 path, fixed by the seed. */
    void fill_natural(uint32_t seed)
    {
        const uint32_t top = (1u << precision) - 1;
        fill(seed, [&](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
            double v = 0.5 + 0.3 * std::sin(0.05 * x + 0.3 * c) * std::cos(0.07 * y) + 0.1 * ((x / 7 + y / 5) % 2) +
                       0.05 * (int(rng() % 200) - 100) / 100.0;
            v = std::min(1.0, std::max(0.0, v));
            return static_cast<uint16_t>(v * top);
        });
    }
};

void quiet(void *, int level, const char *msg)
{
    if (level <= J2KC_LOG_ERROR && std::getenv("J2KC_TEST_VERBOSE")) fprintf(stderr, "j2kc: %s\n", msg);
}

std::vector<uint8_t> encode(const Planar &in, j2kc_encoder_config cfg)
{
    cfg.log = quiet;
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &in.image), J2KC_OK);
    if (!enc) return {};
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encode(enc, &in.image, &pkt), J2KC_OK);
    std::vector<uint8_t> out(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    EXPECT_EQ(enc, nullptr);
    return out;
}

Planar decode(const std::vector<uint8_t> &cs, j2kc_backend backend, int reduce = 0)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.reduce = reduce;
    cfg.log = quiet;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    std::vector<j2kc_component_info> ci(16);
    j2kc_stream_info info{};
    info.struct_size = sizeof(info);
    info.components = ci.data();
    info.components_capacity = 16;
    EXPECT_EQ(j2kc_decoder_parse(dec, cs.data(), cs.size(), &info), J2KC_OK);
    std::vector<uint8_t> dx, dy;
    for (uint32_t c = 0; c < info.num_components; ++c) {
        dx.push_back(ci[c].dx);
        dy.push_back(ci[c].dy);
    }
    Planar out(info.width, info.height, info.num_components, ci[0].precision, dx, dy);
    for (uint32_t c = 0; c < info.num_components; ++c) {
        EXPECT_EQ(out.comps[c].width, ci[c].width);
        EXPECT_EQ(out.comps[c].height, ci[c].height);
    }
    EXPECT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &out.image), J2KC_OK);
    j2kc_decoder_free(&dec);
    return out;
}

using j2kc_test::psnr;

j2kc_encoder_config base_config()
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    return cfg;
}

TEST(Api, LosslessRoundTripsExactly)
{
    struct Case {
        uint32_t w, h, n;
        uint8_t prec;
        std::vector<uint8_t> dx, dy;
    };
    const std::vector<Case> cases = {
        {1, 1, 1, 8, {}, {}},
        {17, 9, 1, 8, {}, {}},
        {64, 64, 3, 8, {}, {}},
        {33, 65, 3, 10, {}, {}},
        {40, 30, 3, 12, {}, {}},
        {23, 11, 1, 16, {}, {}},
        {31, 17, 3, 8, {1, 2, 2}, {1, 1, 1}},
        {31, 17, 3, 10, {1, 2, 2}, {1, 2, 2}},
        {130, 70, 4, 12, {}, {}},
    };
    for (const Case &k : cases) {
        Planar in(k.w, k.h, k.n, k.prec, k.dx, k.dy);
        in.fill_natural(k.w * 31 + k.h);
        j2kc_encoder_config cfg = base_config();
        cfg.lossless = 1;
        const std::vector<uint8_t> cs = encode(in, cfg);
        ASSERT_FALSE(cs.empty());
        const Planar out = decode(cs, J2KC_BACKEND_CPU);
        ASSERT_EQ(out.planes.size(), in.planes.size());
        for (size_t c = 0; c < in.planes.size(); ++c)
            EXPECT_EQ(out.planes[c], in.planes[c]) << k.w << "x" << k.h << " c" << c << " prec " << int(k.prec);
    }
}

TEST(Api, LossyMeetsBudgetWithGoodQuality)
{
    Planar in(256, 192, 3, 8);
    in.fill_natural(7);
    for (uint64_t budget : {3000ull, 12000ull, 40000ull}) {
        j2kc_encoder_config cfg = base_config();
        cfg.frame_bytes = budget;
        const std::vector<uint8_t> cs = encode(in, cfg);
        EXPECT_LE(cs.size(), budget);
        // One slope threshold for the frame: at a few kilobytes the next
        // hull point of any block can exceed 2% of the budget.
        const uint64_t slack = budget < 5000 ? budget * 5 / 100 : budget * 2 / 100;
        EXPECT_GE(cs.size(), budget - slack) << "budget " << budget;
        const Planar out = decode(cs, J2KC_BACKEND_CPU);
        EXPECT_GT(psnr(in, out), budget == 3000 ? 22.0 : 30.0) << "budget " << budget;
    }
}

TEST(Api, GenerousBudgetsAtEveryDepthAreMet)
{
    // High rates ask for fine steps: at 16 bits the rule's step needs more than
    // the 30 bit-planes Tier-1 codes, and the plan coarsens it instead of failing.
    for (const uint8_t prec : {uint8_t{8}, uint8_t{12}, uint8_t{16}}) {
        Planar in(96, 80, 1, prec);
        in.fill_natural(prec);
        const uint64_t raw = uint64_t{96} * 80 * ((prec + 7) / 8);
        for (const uint64_t budget : {raw / 2, raw}) {
            j2kc_encoder_config cfg = base_config();
            cfg.frame_bytes = budget;
            const std::vector<uint8_t> cs = encode(in, cfg);
            ASSERT_FALSE(cs.empty()) << int(prec) << "-bit, budget " << budget;
            EXPECT_LE(cs.size(), budget);
            EXPECT_GT(psnr(in, decode(cs, J2KC_BACKEND_CPU)), 40.0) << int(prec) << "-bit, budget " << budget;
        }
    }
}

TEST(Api, ReducedResolutionDecodeHasTheRightSize)
{
    Planar in(101, 57, 1, 8);
    in.fill_natural(3);
    j2kc_encoder_config cfg = base_config();
    cfg.lossless = 1;
    const std::vector<uint8_t> cs = encode(in, cfg);
    const Planar out = decode(cs, J2KC_BACKEND_CPU, 2);
    EXPECT_EQ(out.width, 26u);  // ceil(101 / 4)
    EXPECT_EQ(out.height, 15u);
}

TEST(Api, MalformedInputGivesAnError)
{
    Planar in(40, 40, 1, 8);
    in.fill_natural(1);
    j2kc_encoder_config cfg = base_config();
    cfg.lossless = 1;
    std::vector<uint8_t> cs = encode(in, cfg);
    j2kc_decoder_config dcfg;
    j2kc_decoder_config_default(&dcfg);
    dcfg.backend = J2KC_BACKEND_CPU;
    dcfg.log = quiet;
    j2kc_decoder *dec = nullptr;
    ASSERT_EQ(j2kc_decoder_create(&dec, &dcfg), J2KC_OK);
    Planar out(40, 40, 1, 8);
    for (size_t cut = 0; cut < cs.size(); cut += 7) {
        const int status = j2kc_decode(dec, cs.data(), cut, &out.image);
        EXPECT_TRUE(status == J2KC_OK || status == J2KC_ERR_INVALID_DATA || status == J2KC_ERR_INVALID_ARG)
            << "cut " << cut << ": " << j2kc_status_string(status);
    }
    std::mt19937 rng(5);
    for (int i = 0; i < 200; ++i) {
        std::vector<uint8_t> bad = cs;
        for (int k = 0; k < 4; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
        const int status = j2kc_decode(dec, bad.data(), bad.size(), &out.image);
        EXPECT_NE(status, J2KC_ERR_INTERNAL);
    }
    j2kc_decoder_free(&dec);
}

TEST(Api, BadOptionsAreRejected)
{
    Planar in(16, 16, 1, 8);
    j2kc_encoder_config cfg = base_config();
    cfg.log = quiet;
    j2kc_encoder *enc = nullptr;
    cfg.cblk_width_log2 = 11;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &in.image), J2KC_ERR_INVALID_ARG);
    cfg = base_config();
    cfg.log = quiet;
    cfg.profile = J2KC_PROFILE_DCI_2K;  // needs 3 x 12-bit
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &in.image), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(enc, nullptr);
}

}  // namespace

namespace {

bool have_gpu()
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CUDA;
    cfg.log = quiet;
    j2kc_decoder *dec = nullptr;
    const int status = j2kc_decoder_create(&dec, &cfg);
    j2kc_decoder_free(&dec);
    return status == J2KC_OK;
}

struct GpuCase {
    uint32_t w, h, n;
    uint8_t prec;
    std::vector<uint8_t> dx, dy;
    bool lossless;
    uint64_t budget;
    j2kc_profile profile;
};

const std::vector<GpuCase> &gpu_cases()
{
    static const std::vector<GpuCase> cases = {
        {1, 1, 1, 8, {}, {}, true, 0, J2KC_PROFILE_NONE},
        {17, 9, 3, 8, {}, {}, true, 0, J2KC_PROFILE_NONE},
        {97, 61, 3, 10, {1, 2, 2}, {1, 1, 1}, true, 0, J2KC_PROFILE_NONE},
        {64, 48, 3, 12, {1, 2, 2}, {1, 2, 2}, false, 3000, J2KC_PROFILE_NONE},
        {300, 200, 3, 8, {}, {}, false, 20000, J2KC_PROFILE_NONE},
        {257, 129, 1, 16, {}, {}, false, 0, J2KC_PROFILE_NONE},
        {130, 70, 4, 12, {}, {}, true, 0, J2KC_PROFILE_NONE},
        {2048, 1080, 3, 12, {}, {}, false, 0, J2KC_PROFILE_DCI_2K},
    };
    return cases;
}

TEST(GpuApi, EncoderMatchesCpuByteForByte)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (const GpuCase &k : gpu_cases()) {
        Planar in(k.w, k.h, k.n, k.prec, k.dx, k.dy);
        in.fill_natural(k.w + 7 * k.h);
        j2kc_encoder_config cfg = base_config();
        cfg.lossless = k.lossless;
        cfg.frame_bytes = k.budget;
        cfg.profile = k.profile;
        const std::vector<uint8_t> cpu = encode(in, cfg);
        cfg.backend = J2KC_BACKEND_CUDA;
        const std::vector<uint8_t> gpu = encode(in, cfg);
        EXPECT_FALSE(cpu.empty());
        EXPECT_TRUE(cpu == gpu) << k.w << "x" << k.h << " n" << k.n << " prec " << int(k.prec) << " sizes "
                                << cpu.size() << " / " << gpu.size();
    }
}

TEST(GpuApi, DecoderMatchesCpuPixelForPixel)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (const GpuCase &k : gpu_cases()) {
        Planar in(k.w, k.h, k.n, k.prec, k.dx, k.dy);
        in.fill_natural(k.w * 3 + k.h);
        j2kc_encoder_config cfg = base_config();
        cfg.lossless = k.lossless;
        cfg.frame_bytes = k.budget;
        cfg.profile = k.profile;
        const std::vector<uint8_t> cs = encode(in, cfg);
        for (int reduce : {0, 1}) {
            if (k.w == 1 && k.h == 1 && reduce > 0) continue;  // 0 levels: nothing to discard
            const Planar cpu = decode(cs, J2KC_BACKEND_CPU, reduce);
            const Planar gpu = decode(cs, J2KC_BACKEND_CUDA, reduce);
            ASSERT_EQ(cpu.planes.size(), gpu.planes.size());
            for (size_t c = 0; c < cpu.planes.size(); ++c)
                EXPECT_TRUE(cpu.planes[c] == gpu.planes[c]) << k.w << "x" << k.h << " c" << c << " reduce " << reduce;
        }
    }
}

}  // namespace
