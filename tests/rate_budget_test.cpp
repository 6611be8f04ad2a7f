/**
 * @file rate_budget_test.cpp
 * @brief The encoder spends its byte budget (profile caps, --bytes,
 * --component-bytes) when the content needs it: the quantisation step chosen
 * for the budget (pipeline/encoder_plan.cpp) must be fine enough that
 * PCRD-opt, not quantisation, decides where the stream stops. "Needs it"
 * means the reversible stream of the same frame would not fit.
 *
 * The content is a smooth picture under low noise (sigma of one or two
 * sample units at 12 bits): the case coarse steps lose, since the noise
 * falls into the dead zone and the stream stops far below the budget.
 */
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "j2kc.h"
#include "pipeline/codestream_assembly.h"
#include "pipeline/encoder_common.h"
#include "pipeline/encoder_plan.h"
#include "quant/quant.h"
#include "test_images.h"
#include "test_streams.h"

namespace {

using j2kc_test::Planes16;

void quiet(void *, int, const char *) {}

/** Smooth waves plus Gaussian noise of `sigma` sample units, fixed by the seed. */
Planes16 smooth_noisy(uint32_t w, uint32_t h, uint32_t comps, uint8_t precision, double sigma,
                      const std::vector<uint8_t> &dx = {})
{
    Planes16 f(w, h, comps, precision, dx);
    const double top = double((1u << precision) - 1);
    f.fill(7, [&](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
        std::normal_distribution<double> noise(0.0, sigma);
        const double v = top * (0.45 + 0.07 * c + 0.25 * std::sin(x / 170.0 + c) * std::cos(y / 130.0)) + noise(rng);
        return static_cast<uint32_t>(std::lround(std::fmin(top, std::fmax(0.0, v))));
    });
    return f;
}

j2kc_encoder_config base_config() { return j2kc_test::cpu_encoder_config(quiet); }

std::vector<uint8_t> encode(const j2kc_encoder_config &cfg, const j2kc_image &image)
{
    return j2kc_test::encode_stream(image, cfg);
}

/** Bytes of the reversible (lossless) stream of the frame. */
size_t lossless_bytes(const j2kc_image &image)
{
    j2kc_encoder_config cfg = base_config();
    cfg.lossless = 1;
    return encode(cfg, image).size();
}

/**
 * The stream of `cfg` uses at least `fraction` of `budget` and at most `budget`
 * plus `outside` (bytes the budget does not count: the main header for
 * component caps).
 */
void expect_filled(const j2kc_encoder_config &cfg, const j2kc_image &image, uint64_t budget, uint64_t outside = 0,
                   double fraction = 0.995)
{
    ASSERT_GT(lossless_bytes(image), budget) << "the content must need the budget";
    const size_t bytes = encode(cfg, image).size();
    SCOPED_TRACE(testing::Message() << bytes << " of " << budget << " bytes");
    EXPECT_LE(bytes, budget + outside);
    EXPECT_GE(double(bytes), fraction * double(budget));
}

/** A 12-bit three-component frame of smooth content, noise `sigma`, at 24 fps fills the DCI cap: 1,302,083 bytes. */
void expect_dci_cap_filled(j2kc_profile profile, uint32_t w, uint32_t h, double sigma)
{
    const Planes16 f = smooth_noisy(w, h, 3, 12, sigma);
    j2kc_encoder_config cfg = base_config();
    cfg.profile = profile;
    cfg.frame_rate_num = 24;
    cfg.frame_rate_den = 1;
    expect_filled(cfg, f.image, 1302083);
}

TEST(RateBudget, Dci2kCapFilledOnSmoothContent) { expect_dci_cap_filled(J2KC_PROFILE_DCI_2K, 2048, 1080, 1.0); }

TEST(RateBudget, Dci4kCapFilledOnSmoothContent)
{
    if (j2kc_test::instrumented()) GTEST_SKIP() << "4K frames take minutes under instrumentation";
    expect_dci_cap_filled(J2KC_PROFILE_DCI_4K, 4096, 2160, 2.0);
}

void collect(void *messages, int, const char *line)
{
    static_cast<std::vector<std::string> *>(messages)->push_back(line);
}

/** The number after `key` in the first of `lines` that holds it; -1 if none does. */
long long logged_number(const std::vector<std::string> &lines, const std::string &key)
{
    for (const std::string &l : lines) {
        const size_t at = l.find(key);
        if (at != std::string::npos) return std::stoll(l.substr(at + key.size()));
    }
    return -1;
}

/**
 * Under the DCI 2K cap Tier-1 leaves out the bit-planes the budget will not
 * reach (tier1/tier1_plane_floor.h), and the cap is still filled.
 */
TEST(RateBudget, LowPlanesLeftOutAndTheDciCapFilled)
{
    const Planes16 f = j2kc_test::synthetic_frame(2048, 1080, 3, 12, 3, 0.01);
    std::vector<std::string> log;
    j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(collect);
    cfg.log_opaque = &log;
    cfg.profile = J2KC_PROFILE_DCI_2K;
    cfg.frame_rate_num = 24;
    cfg.frame_rate_den = 1;
    const size_t bytes = encode(cfg, f.image).size();
    EXPECT_LE(bytes, 1302083u);
    EXPECT_GE(double(bytes), 0.995 * 1302083);
    const long long lowest = logged_number(log, "bit-planes under ");
    const long long coded = logged_number(log, "code-blocks, ");
    const long long kept = logged_number(log, "coding passes coded, ");
    SCOPED_TRACE(testing::Message() << bytes << " bytes, planes under " << lowest << " left out, " << coded
                                    << " passes coded, " << kept << " kept");
    EXPECT_GT(lowest, 0);
    EXPECT_GT(kept, 0);
    EXPECT_LE(kept, coded);
}

/**
 * Grey content at DCI 4K: after the colour transform the first component
 * carries most of it and meets DCI's component cap (1,041,666 bytes, 0.8 of
 * the frame's), while the other two, a little noise apart from the first,
 * still have room. A round of slack filling that overshoots the first
 * component's cap must give back that component's segments, not the
 * others': the frame's cap is then filled as on any content (it was left
 * 0.33 % short when the trims took back the other components' segments).
 */
TEST(RateBudget, Dci4kCapFilledWhenOneComponentMeetsItsCap)
{
    if (j2kc_test::instrumented()) GTEST_SKIP() << "4K frames take minutes under instrumentation";
    Planes16 f(4096, 2160, 3, 12);
    f.fill(17, [&](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
        std::normal_distribution<double> noise(0.0, c == 0 ? 6.0 : 1.05);
        const double base =
            c == 0 ? 4095.0 * (0.45 + 0.25 * std::sin(x / 170.0) * std::cos(y / 130.0)) : double(f.at(0, x, y));
        return static_cast<uint32_t>(std::lround(std::fmin(4095.0, std::fmax(0.0, base + noise(rng)))));
    });
    j2kc_encoder_config cfg = base_config();
    cfg.profile = J2KC_PROFILE_DCI_4K;
    cfg.frame_rate_num = 24;
    cfg.frame_rate_den = 1;
    expect_filled(cfg, f.image, 1302083, 0, 0.999);
}

TEST(RateBudget, ImfCapFilledOn422Content)
{
    // 10-bit Y'CbCr 4:2:2 at 1920x1080, IMF 2K sub-level 1 at 24 fps: 1,041,666 bytes.
    const Planes16 f = smooth_noisy(1920, 1080, 3, 10, 1.0, {1, 2, 2});
    j2kc_encoder_config cfg = base_config();
    cfg.profile = J2KC_PROFILE_IMF;
    cfg.frame_rate_num = 24;
    cfg.frame_rate_den = 1;
    cfg.frame_bytes = 1041666;
    expect_filled(cfg, f.image, 1041666);
}

/** A generic budget at a rate, on smooth content of a depth under noise `sigma`. */
struct GenericCase {
    uint8_t precision;
    double sigma;
    double bits_per_sample;
};

/** The generic budget of `base` filled at every case's rate. */
void expect_generic_filled(const j2kc_encoder_config &base, std::initializer_list<GenericCase> cases)
{
    for (const GenericCase k : cases) {
        SCOPED_TRACE(testing::Message() << int(k.precision) << "-bit, " << k.bits_per_sample << " bit/sample");
        const Planes16 f = smooth_noisy(512, 384, 3, k.precision, k.sigma);
        j2kc_encoder_config cfg = base;
        cfg.frame_bytes = static_cast<uint64_t>(512 * 384 * 3 * k.bits_per_sample / 8);
        expect_filled(cfg, f.image, cfg.frame_bytes);
    }
}

/** The generic budget over depths and rates: 0.5 to 12 bits a sample. */
TEST(RateBudget, GenericBytesFilledAcrossDepthsAndRates)
{
    expect_generic_filled(
        base_config(),
        {{8, 0.6, 0.5}, {8, 1.0, 2.0}, {12, 1.0, 0.5}, {12, 8.0, 4.0}, {16, 40.0, 6.0}, {16, 2000.0, 12.0}});
}

/** The decoded frame of `cs` (CPU decoder), shaped as `f`. */
Planes16 decoded(const std::vector<uint8_t> &cs, const Planes16 &f)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.log = quiet;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    std::vector<uint8_t> dx;
    for (const j2kc_component &c : f.comps) dx.push_back(c.dx);
    Planes16 out(f.width, f.height, static_cast<uint32_t>(f.planes.size()), f.precision, dx);
    if (dec) {
        EXPECT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &out.image), J2KC_OK);
    }
    j2kc_decoder_free(&dec);
    return out;
}

/** PSNR of the CPU decoder's output of `cs` against `f` (same shape). */
double decoded_psnr(const std::vector<uint8_t> &cs, const Planes16 &f) { return j2kc_test::psnr(f, decoded(cs, f)); }

/**
 * One 16-bit component of 1024x768: waves of `amplitude` around `mean` (both
 * fractions of the range), sin(x / px) cos(y / py), with Gaussian noise of
 * `sigma` sample units, clipped to the range.
 */
Planes16 deep_waves(uint32_t seed, double mean, double amplitude, double px, double py, double sigma)
{
    Planes16 f(1024, 768, 1, 16);
    f.fill(seed, [=](uint32_t, uint32_t x, uint32_t y, std::mt19937 &rng) {
        std::normal_distribution<double> noise(0.0, sigma);
        const double v = 65535.0 * (mean + amplitude * std::sin(x / px) * std::cos(y / py)) + noise(rng);
        return static_cast<uint32_t>(std::lround(std::fmin(65535.0, std::fmax(0.0, v))));
    });
    return f;
}

/**
 * 16-bit samples up to 11 bits a sample, where the rule's step asks for the
 * finest the plan allows: the LL band would get 30 magnitude bit-planes, and
 * such a stream of full-range, clipped waves decoded at 24 dB. PSNR must
 * keep following the rate.
 */
TEST(RateBudget, DeepSamplesAtHighRateKeepTheirQuality)
{
    const Planes16 f = deep_waves(11, 0.5, 0.7, 37.0, 23.0, 400.0);
    j2kc_encoder_config cfg = base_config();
    double last = 0;
    for (const double bits : {6.0, 9.0, 10.7}) {
        SCOPED_TRACE(testing::Message() << bits << " bit/sample");
        cfg.frame_bytes = static_cast<uint64_t>(1024 * 768 * bits / 8);
        const double psnr = decoded_psnr(encode(cfg, f.image), f);
        EXPECT_GT(psnr, last + 5.0) << "three more bits a sample must gain well over 5 dB";
        last = psnr;
    }
    EXPECT_GT(last, 80.0);
}

/**
 * Near-lossless 16-bit RGB through the ICT: what the budget buys must not
 * be lost to a drift of the colour transform. The decoder's inverse ICT
 * undoes the encoder's forward one, so the mean signed error of each
 * component stays a small fraction of a sample unit, on bright content
 * (where a forward matrix that is not the decoder's inverse drifts most)
 * as anywhere; the error that is left is the budget's own, centred on 0.
 */
TEST(RateBudget, DeepRgbAtHighRateDecodesWithoutColourDrift)
{
    Planes16 f(512, 384, 3, 16);
    f.fill(13, [](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
        std::normal_distribution<double> noise(0.0, 300.0);
        const double v = 65535.0 * (0.8 - 0.05 * c + 0.1 * std::sin(x / 29.0 + c) * std::cos(y / 17.0)) + noise(rng);
        return static_cast<uint32_t>(std::lround(std::fmin(65535.0, std::fmax(0.0, v))));
    });
    j2kc_encoder_config cfg = base_config();
    cfg.frame_bytes = 512 * 384 * 3 * 10 / 8;  // 10 bits a sample
    const Planes16 out = decoded(encode(cfg, f.image), f);
    for (uint32_t c = 0; c < 3; ++c) {
        double sum = 0;
        for (size_t i = 0; i < f.planes[c].size(); ++i) sum += double(out.planes[c][i]) - f.planes[c][i];
        EXPECT_LT(std::fabs(sum / double(f.planes[c].size())), 0.05) << "component " << c;
    }
}

/**
 * Generic budgets fit each band's step to the frame's truncated
 * reconstruction (quant/step_fit_core.h): the codestream with the fitted
 * steps decodes closer to the source than the same codestream with the
 * planned steps, and only the mantissas differ.
 */
TEST(RateBudget, FittedStepsDecodeCloserThanThePlannedOnes)
{
    const Planes16 f = smooth_noisy(512, 384, 3, 8, 6.0);
    j2kc_encoder_config cfg = base_config();
    cfg.frame_bytes = 512 * 384 * 3 / 16;  // half a bit a sample
    cfg.step_phases = 1;                   // the plan's own phase
    const std::vector<uint8_t> fitted = encode(cfg, f.image);
    const j2kc::EncoderPlan plan = j2kc::plan_encoder(cfg, f.image);
    ASSERT_TRUE(plan.fitted_steps());
    std::vector<uint8_t> planned = fitted;
    const std::vector<uint64_t> unit(2 * j2kc::num_bands(plan.levels()) * plan.siz.components.size(), 1);
    j2kc::write_fitted_steps(planned.data(), planned.size(), plan, unit.data());  // a scale of 1: the plan's steps
    EXPECT_EQ(planned.size(), fitted.size());
    size_t differ = 0;
    for (size_t i = 0; i < fitted.size(); ++i) differ += fitted[i] != planned[i];
    EXPECT_GT(differ, 0u);
    EXPECT_LT(differ, size_t{2} * j2kc::num_bands(plan.levels()));  // the QCD's step words
    EXPECT_GT(decoded_psnr(fitted, f), decoded_psnr(planned, f) + 0.01);

    cfg.profile = J2KC_PROFILE_IMF;  // the packagers want one QCD for every frame
    cfg.frame_bytes = 1041666;
    EXPECT_FALSE(j2kc::plan_encoder(cfg, f.image).fitted_steps());
}

/** Sum of squared differences between two frames of one shape. */
double squared_error(const Planes16 &a, const Planes16 &b)
{
    double se = 0;
    for (size_t c = 0; c < a.planes.size(); ++c)
        for (size_t i = 0; i < a.planes[c].size(); ++i) {
            const double d = double(a.planes[c][i]) - double(b.planes[c][i]);
            se += d * d;
        }
    return se;
}

/** The codestream of one frame from the CPU encoder at plan_encoder's step phase p. */
std::vector<uint8_t> encode_at_phase(const j2kc_encoder_config &cfg, const j2kc_image &image, double p)
{
    const std::unique_ptr<j2kc::Encoder> enc = j2kc::create_cpu_encoder(cfg, image, j2kc::Logger{quiet, nullptr}, p);
    std::vector<uint8_t> cs;
    int64_t tag = 0;
    EXPECT_TRUE(enc->submit(image, 0));
    EXPECT_TRUE(enc->receive(cs, tag, true));
    return cs;
}

/** A frame coded at one step phase. */
struct PhaseCoding {
    double phase = 0;
    double error = 0;  ///< squared error of its decode
    std::vector<uint8_t> codestream;
};

/**
 * The coding a search of n phases keeps, found phase by phase here: the
 * grid k / n, then either side of the nearest decode so far at a half, a
 * quarter and an eighth of the grid's spacing (phases wrap into [0, 1)); the
 * first coded wins a tie.
 */
PhaseCoding nearest_phase(const j2kc_encoder_config &cfg, const Planes16 &f, int n)
{
    PhaseCoding best;
    const auto consider = [&](double p) {
        PhaseCoding c{p, 0, encode_at_phase(cfg, f.image, p)};
        c.error = squared_error(f, decoded(c.codestream, f));
        if (best.codestream.empty() || c.error < best.error) best = std::move(c);
    };
    for (int k = 0; k < n; ++k) consider(double(k) / n);
    for (const int halving : {2, 4, 8}) {
        const double centre = best.phase, spacing = 1.0 / (n * halving);
        for (const double p : {centre - spacing, centre + spacing}) consider(p < 0 ? p + 1 : p >= 1 ? p - 1 : p);
    }
    return best;
}

/**
 * A bright 16-bit frame at 12 bits a sample: the budget's steps give the LL
 * band 29 magnitude bit-planes, where a code-block's gains pass 2^64 in its
 * first passes unless Tier-1 scales them (tier1_contexts.h,
 * t1_distortion_shift). Saturated, every later pass read as no gain, rate
 * control cut the LL blocks after their first passes and this frame decoded
 * at 30 dB at phases 1/8 and 1/4. Every phase must keep the quality the
 * rate buys.
 */
TEST(RateBudget, DeepBandsKeepTheirQualityAtEveryStepPhase)
{
    const Planes16 f = deep_waves(17, 0.85, 0.05, 19.0, 13.0, 200.0);
    j2kc_encoder_config cfg = base_config();
    cfg.frame_bytes = 1024 * 768 * 12 / 8;
    for (const double p : {0.0, 0.125, 0.25}) {
        SCOPED_TRACE(testing::Message() << "phase " << p);
        EXPECT_GT(decoded_psnr(encode_at_phase(cfg, f.image, p), f), 100.0);
    }
}

/**
 * Generic budgets with a step phase search keep, of the frame coded at the
 * phases of the base step searched, the codestream that decodes nearest the
 * source: here not the first phase's (the search's choice is taken), and the
 * budget stays filled.
 */
TEST(RateBudget, StepPhaseSearchKeepsTheNearestDecode)
{
    const Planes16 f = smooth_noisy(256, 192, 3, 8, 3.0);
    j2kc_encoder_config cfg = base_config();
    cfg.frame_bytes = 256 * 192 * 3 * 3 / 8;  // 3 bits a sample, 51 dB: near the decoders' rounding
    cfg.step_phases = 4;
    ASSERT_EQ(j2kc::plan_encoder(cfg, f.image).step_phases, 4);
    const std::vector<uint8_t> searched = encode(cfg, f.image);
    const PhaseCoding nearest = nearest_phase(cfg, f, 4);
    EXPECT_NE(nearest.phase, 0.0);
    EXPECT_TRUE(searched == nearest.codestream) << "phase " << nearest.phase << " decodes nearest";
    EXPECT_GE(searched.size(), cfg.frame_bytes * 995 / 1000);
    EXPECT_LE(searched.size(), cfg.frame_bytes);

    EXPECT_FALSE(j2kc::plan_encoder(cfg, f.image).step_phase_per_sequence);
    cfg.step_phases = 1;
    const std::vector<uint8_t> unsearched = encode(cfg, f.image);
    EXPECT_TRUE(unsearched == encode_at_phase(cfg, f.image, 0));
    EXPECT_LT(nearest.error, squared_error(f, decoded(unsearched, f)));
    cfg.step_phases = 0;  // the default: four phases, searched on a sequence's first frame
    EXPECT_TRUE(j2kc::plan_encoder(cfg, f.image).step_phase_per_sequence);
    EXPECT_TRUE(encode(cfg, f.image) == searched);
    cfg.step_phases = 9;
    EXPECT_THROW(j2kc::plan_encoder(cfg, f.image), std::exception);
}

/** The QCD marker segment of a codestream (its bytes from the marker on). */
std::vector<uint8_t> qcd_segment(const std::vector<uint8_t> &cs)
{
    for (size_t i = 2; i + 4 <= cs.size(); i += 2 + ((size_t{cs[i + 2]} << 8) | cs[i + 3])) {
        if (cs[i] == 0xFF && cs[i + 1] == 0x5C) {
            const size_t end = std::min(cs.size(), i + 2 + ((size_t{cs[i + 2]} << 8) | cs[i + 3]));
            return {cs.begin() + static_cast<ptrdiff_t>(i), cs.begin() + static_cast<ptrdiff_t>(end)};
        }
        if (cs[i] != 0xFF || cs[i + 1] == 0x90) break;  // the first tile-part: the main header is over
    }
    return {};
}

/**
 * DCI and IMF sequences share one QCD: the first frame is searched (four
 * phases by default) and every later frame is coded at the phase it chose,
 * as an encoder at that phase alone would code it.
 */
TEST(RateBudget, StepPhaseOfTheFirstFrameCodesTheSequence)
{
    const Planes16 first = smooth_noisy(256, 192, 3, 8, 3.0);
    j2kc_encoder_config cfg = base_config();
    cfg.profile = J2KC_PROFILE_IMF;
    cfg.frame_bytes = 256 * 192 * 3 * 3 / 8;
    const j2kc::EncoderPlan plan = j2kc::plan_encoder(cfg, first.image);
    ASSERT_EQ(plan.step_phases, 4);
    ASSERT_TRUE(plan.step_phase_per_sequence);
    const PhaseCoding nearest = nearest_phase(cfg, first, 4);
    EXPECT_NE(nearest.phase, 0.0);

    j2kc_encoder *enc = nullptr;
    ASSERT_EQ(j2kc_encoder_create(&enc, &cfg, &first.image), J2KC_OK);
    j2kc_packet pkt{};
    ASSERT_EQ(j2kc_encode(enc, &first.image, &pkt), J2KC_OK);
    const std::vector<uint8_t> first_cs(pkt.data, pkt.data + pkt.size);
    EXPECT_TRUE(first_cs == nearest.codestream) << "phase " << nearest.phase << " decodes nearest";
    for (const double sigma : {6.0, 1.0}) {
        const Planes16 f = smooth_noisy(256, 192, 3, 8, sigma);
        ASSERT_EQ(j2kc_encode(enc, &f.image, &pkt), J2KC_OK);
        const std::vector<uint8_t> cs(pkt.data, pkt.data + pkt.size);
        EXPECT_TRUE(cs == encode_at_phase(cfg, f.image, nearest.phase));
        EXPECT_FALSE(qcd_segment(cs).empty());
        EXPECT_TRUE(qcd_segment(cs) == qcd_segment(first_cs));
    }
    j2kc_encoder_free(&enc);

    cfg.step_phases = 1;  // no search
    EXPECT_EQ(j2kc::plan_encoder(cfg, first.image).step_phases, 1);
    EXPECT_TRUE(encode(cfg, first.image) == encode_at_phase(cfg, first.image, 0));
    cfg.step_phases = 0;
    cfg.block_coder = J2KC_BLOCK_CODER_HT;  // HT sequences search their first frame alike
    const j2kc::EncoderPlan ht = j2kc::plan_encoder(cfg, first.image);
    EXPECT_EQ(ht.step_phases, 4);
    EXPECT_TRUE(ht.step_phase_per_sequence);
}

// ------------------------------------------------- the HTJ2K block coder

/** The HT block coder: rate control picks among each block's HT coding sets. */
j2kc_encoder_config ht_config()
{
    j2kc_encoder_config cfg = base_config();
    cfg.block_coder = J2KC_BLOCK_CODER_HT;
    return cfg;
}

/** APP2.HT irreversible, 10-bit Y'CbCr 4:2:2 under noise `sigma`, fills an IMF cap. */
void expect_imf_ht_cap_filled(uint32_t w, uint32_t h, double sigma, uint64_t cap)
{
    const Planes16 f = smooth_noisy(w, h, 3, 10, sigma, {1, 2, 2});
    j2kc_encoder_config cfg = ht_config();
    cfg.profile = J2KC_PROFILE_IMF;
    cfg.frame_bytes = cap;
    expect_filled(cfg, f.image, cap);
}

/** IMF 2K sub-level 1 at 24 fps. */
TEST(RateBudgetHt, ImfHt2kIrreversibleCapFilled) { expect_imf_ht_cap_filled(1920, 1080, 1.0, 1041666); }

/** IMF 4K sub-level 3 at 24 fps. */
TEST(RateBudgetHt, ImfHt4kIrreversibleCapFilled)
{
    if (j2kc_test::instrumented()) GTEST_SKIP() << "4K frames take minutes under instrumentation";
    expect_imf_ht_cap_filled(3840, 2160, 2.0, 4166666);
}

TEST(RateBudgetHt, GenericBytesFilledAcrossDepthsAndRates)
{
    expect_generic_filled(
        ht_config(), {{8, 0.6, 0.25}, {8, 1.0, 2.0}, {12, 1.0, 0.5}, {12, 2.0, 1.0}, {12, 8.0, 4.0}, {16, 40.0, 6.0}});
}

/**
 * HT blocks under a generic budget take the step phase search as Part 1
 * blocks do: the searched codestream is the one the phase-by-phase search
 * finds nearest the frame, at another phase than the rule's.
 */
TEST(RateBudgetHt, StepPhaseSearchKeepsTheNearestDecode)
{
    const Planes16 f = smooth_noisy(256, 192, 3, 8, 3.0);
    j2kc_encoder_config cfg = ht_config();
    cfg.frame_bytes = 256 * 192 * 3 / 4;  // 2 bits a sample
    const PhaseCoding nearest = nearest_phase(cfg, f, 4);
    EXPECT_NE(nearest.phase, 0.0);
    EXPECT_TRUE(encode(cfg, f.image) == nearest.codestream) << "phase " << nearest.phase << " decodes nearest";
    cfg.step_phases = 1;
    EXPECT_LT(nearest.error, squared_error(f, decoded(encode(cfg, f.image), f)));
}

/**
 * Under a budget, HT is at least as good as the finest fixed quantisation
 * step whose stream fits it: rate control moves each block between cleanup
 * planes, which a uniform coarser step cannot. (Coding sets at the two
 * finest planes only would leave most blocks out at such budgets.)
 */
TEST(RateBudgetHt, BudgetBeatsTheFixedStepThatFits)
{
    const Planes16 f = j2kc_test::synthetic_frame(512, 384, 3, 12, 5, 0.01);
    for (const double bits : {0.25, 0.5, 1.0, 2.0, 3.0}) {
        SCOPED_TRACE(testing::Message() << bits << " bit/sample");
        const uint64_t budget = static_cast<uint64_t>(512 * 384 * 3 * bits / 8);
        j2kc_encoder_config fixed = ht_config();
        std::vector<uint8_t> fits;
        for (double quality = 0.25; quality < 4096 && fits.empty(); quality *= std::sqrt(2.0)) {
            fixed.quality = quality;
            std::vector<uint8_t> s = encode(fixed, f.image);
            if (s.size() <= budget) fits = std::move(s);
        }
        ASSERT_FALSE(fits.empty());
        j2kc_encoder_config cfg = ht_config();
        cfg.frame_bytes = budget;
        const std::vector<uint8_t> s = encode(cfg, f.image);
        EXPECT_LE(s.size(), budget);
        const double psnr = decoded_psnr(s, f), step_psnr = decoded_psnr(fits, f);
        SCOPED_TRACE(testing::Message() << s.size() << " B at " << psnr << " dB, fixed step " << fits.size() << " B at "
                                        << step_psnr << " dB");
        EXPECT_GE(psnr, step_psnr);
    }
}

TEST(RateBudget, ComponentBytesFilled)
{
    const Planes16 f = smooth_noisy(512, 384, 3, 12, 1.0);
    j2kc_encoder_config cfg = base_config();
    cfg.component_bytes = 512 * 384 / 8;  // one bit a sample, each component
    cfg.mct = 0;                          // each component then carries its own noise and needs its own cap
    // The caps count each component's tile-part (the encoder then splits
    // the tile by component); the main header lies outside them.
    expect_filled(cfg, f.image, 3 * cfg.component_bytes, 200);
}

}  // namespace
