/**
 * @file encoder_plan.cpp
 * @brief Encoder parameters and profile rules (ISO/IEC 15444-1 Annex A
 * marker contents; Amd 1 DCI, Amd 3 broadcast, Amd 8 IMF).
 */
#include "pipeline/encoder_plan.h"

#include <algorithm>
#include <cmath>

#include "common/int_math.h"
#include "common/status.h"
#include "quant/quant.h"
#include "tier1/tier1.h"

namespace j2kc {
namespace {

struct Rate {
    int num = 24, den = 1;
    double fps() const { return double(num) / den; }
};

/** floor(megabits/s * 125000 / fps): bytes per frame at a bit rate. */
uint64_t bytes_per_frame(uint64_t megabits, const Rate &rate)
{
    return megabits * 125000ull * uint64_t(rate.den) / uint64_t(rate.num);
}

void set_profile_precincts(ComponentCoding &c)
{
    c.precincts_defined = true;
    c.precinct_width_log2.fill(8);
    c.precinct_height_log2.fill(8);
    c.precinct_width_log2[0] = c.precinct_height_log2[0] = 7;
}

void require(bool cond, const char *profile, const char *what)
{
    J2KC_CHECK_ARG(cond, "profile %s: %s", profile, what);
}

bool all_components(const j2kc_image &s, bool (*pred)(const j2kc_component &))
{
    for (uint32_t c = 0; c < s.num_components; ++c)
        if (!pred(s.components[c])) return false;
    return true;
}

int default_levels(const j2kc_image &shape, uint32_t tile_w, uint32_t tile_h)
{
    // Enough levels that the lowest resolution is small, never more than the
    // smallest tile-component can take (ceil halving to 1 sample).
    uint32_t smallest = UINT32_MAX;
    for (uint32_t c = 0; c < shape.num_components; ++c) {
        const j2kc_component &k = shape.components[c];
        smallest = std::min(
            {smallest, ceil_div(std::min(tile_w, shape.width), k.dx), ceil_div(std::min(tile_h, shape.height), k.dy)});
    }
    return std::min(5, std::max(0, floor_log2(smallest)));
}

void apply_dci(EncoderPlan &plan, const j2kc_encoder_config &cfg, const j2kc_image &shape, const Rate &rate)
{
    const bool k4 = plan.profile == J2KC_PROFILE_DCI_4K;
    const char *name = k4 ? "dci_4k" : "dci_2k";
    require(shape.num_components == 3, name, "needs 3 components (X'Y'Z')");
    require(
        all_components(
            shape, [](const j2kc_component &c) { return c.precision == 12 && !c.is_signed && c.dx == 1 && c.dy == 1; }),
        name, "needs 12-bit unsigned 4:4:4 samples (xyz12)");
    require(shape.width <= (k4 ? 4096u : 2048u) && shape.height <= (k4 ? 2160u : 1080u), name,
            k4 ? "image larger than 4096x2160" : "image larger than 2048x1080");
    require(cfg.tile_width == 0 && cfg.tile_height == 0, name, "one tile only");
    require(cfg.lossless == 0, name, "is lossy (9/7) by definition");
    require(cfg.layers <= 1, name, "allows one quality layer");
    require(!cfg.sop && !cfg.eph && !cfg.plt, name, "forbids SOP, EPH and PLT");
    const int levels = k4 ? 6 : 5;
    require(cfg.levels < 0 || cfg.levels == levels, name,
            k4 ? "needs 6 decomposition levels" : "needs 5 decomposition levels");

    plan.siz.rsiz = k4 ? 4 : 3;
    ComponentCoding &c = plan.cod.component;
    c.levels = static_cast<uint8_t>(levels);
    c.cblk_width_log2 = c.cblk_height_log2 = 5;
    c.cblk_style = 0;
    c.wavelet = Wavelet::kIrreversible97;
    set_profile_precincts(c);
    plan.cod.progression = J2KC_PROG_CPRL;
    plan.cod.layers = 1;
    plan.cod.mct = 1;
    plan.tlm = true;
    plan.tile_parts = k4 ? J2KC_TILE_PARTS_DCI_4K : J2KC_TILE_PARTS_COMPONENT;
    if (k4) {
        // The two-entry POC of DCI 4K (Amd 1): the embedded 2K image first.
        plan.poc.push_back({0, 0, 1, static_cast<uint8_t>(levels), 3, J2KC_PROG_CPRL});
        plan.poc.push_back({static_cast<uint8_t>(levels), 0, 1, static_cast<uint8_t>(levels + 1), 3, J2KC_PROG_CPRL});
    }
    const uint64_t frame_cap = dci_frame_cap(rate.num, rate.den);
    const uint64_t comp_cap = dci_component_cap(rate.num, rate.den);
    plan.frame_bytes = plan.frame_bytes ? std::min(plan.frame_bytes, frame_cap) : frame_cap;
    plan.component_bytes = plan.component_bytes ? std::min(plan.component_bytes, comp_cap) : comp_cap;
}

/** IMF main level: the smallest whose sample rate covers the stream (Amd 8). */
int imf_main_level(double msamples)
{
    static const double limits[] = {65, 130, 195, 260, 520, 1200, 2400, 4800, 9600, 19200, 38400};
    for (int i = 0; i < 11; ++i)
        if (msamples <= limits[i]) return i + 1;
    return 11;
}

void apply_imf(EncoderPlan &plan, const j2kc_encoder_config &cfg, const j2kc_image &shape, const Rate &rate)
{
    const char *name = "imf";
    require(shape.num_components <= 3, name, "allows at most 3 components");
    require(all_components(shape,
                           [](const j2kc_component &c) {
                               return c.precision >= 8 && c.precision <= 16 && !c.is_signed && c.dy == 1;
                           }),
            name, "needs 8 to 16-bit unsigned samples, no vertical subsampling");
    require(shape.components[0].dx == 1, name, "first component must not be subsampled");
    if (shape.num_components == 3)
        require(shape.components[1].dx == shape.components[2].dx && shape.components[1].dx <= 2, name,
                "allows 4:4:4 or 4:2:2 only");
    require(cfg.tile_width == 0 && cfg.tile_height == 0, name, "single tile only in this encoder");
    require(cfg.layers <= 1, name, "allows one quality layer");
    const int family = shape.width <= 2048 && shape.height <= 1556   ? 0
                       : shape.width <= 4096 && shape.height <= 3112 ? 1
                       : shape.width <= 8192 && shape.height <= 6224 ? 2
                                                                     : -1;
    require(family >= 0, name, "image larger than 8192x6224");
    const bool reversible = cfg.lossless != 0;
    const int max_levels =
        reversible ? std::min(5 + family, floor_log2(shape.width / 1024 ? shape.width / 1024 : 1) + 4) : 5 + family;
    const int levels = cfg.levels < 0 ? max_levels : cfg.levels;
    require(levels >= 1 && levels <= max_levels, name, "decomposition levels out of the profile's range");

    double samples = 0;
    for (uint32_t c = 0; c < shape.num_components; ++c)
        samples += double(ceil_div(shape.width, shape.components[c].dx)) * shape.height;
    const int main_level = cfg.imf_main_level > 0 ? cfg.imf_main_level : imf_main_level(samples * rate.fps() / 1e6);
    int sub_level = 0;
    if (!reversible) {
        const int max_sub = std::max(main_level - 2, 1);
        sub_level = cfg.imf_sub_level > 0 ? cfg.imf_sub_level : max_sub;
        if (cfg.imf_sub_level <= 0 && plan.frame_bytes) {
            // The smallest sub-level whose rate (100 * 2^s Mb/s) covers the asked budget.
            const double mbps = double(plan.frame_bytes) * 8 * rate.fps() / 1e6;
            sub_level = 1;
            while (sub_level < max_sub && 100.0 * (1 << sub_level) < mbps) ++sub_level;
        }
        require(sub_level >= 1 && sub_level <= max_sub, name, "sub-level not allowed for this main level");
        const uint64_t cap = bytes_per_frame(100ull << sub_level, rate);
        plan.frame_bytes = plan.frame_bytes ? std::min(plan.frame_bytes, cap) : cap;
    }
    plan.siz.rsiz = static_cast<uint16_t>(((reversible ? 7 : 4) + family) << 8 | sub_level << 4 | main_level);

    ComponentCoding &c = plan.cod.component;
    c.levels = static_cast<uint8_t>(levels);
    c.cblk_width_log2 = c.cblk_height_log2 = 5;
    c.cblk_style = 0;
    c.wavelet = reversible ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    set_profile_precincts(c);
    plan.cod.progression = J2KC_PROG_CPRL;
    plan.cod.layers = 1;
    plan.tlm = true;
    plan.tile_parts = J2KC_TILE_PARTS_COMPONENT;
}

/**
 * IMF with the HT block coder: SMPTE ST 2067-21 Annex I, APP2.HT.REV (5/3)
 * and APP2.HT.IRV (9/7), as Netflix photon checks it. One tile at the
 * origin, 1 to 4 components of 8 to 16 bits, all one depth, 4:4:4 or 4:2:2,
 * one layer, RPCL, precincts of 128 at r = 0 and 256 above, code-blocks of
 * width 32 to 128 and height 32 or 64, at most 5, 6 or 7 levels for images
 * up to 2048, 4096, 8192 samples on a side. The capabilities live in CAP
 * (Rsiz carries only the Part-15 bit); no rate cap.
 */
void apply_imf_ht(EncoderPlan &plan, const j2kc_encoder_config &cfg, const j2kc_image &shape)
{
    const char *name = "imf (HT)";
    require(shape.num_components >= 1 && shape.num_components <= 4, name, "allows 1 to 4 components");
    const uint8_t precision = shape.components[0].precision;
    for (uint32_t c = 0; c < shape.num_components; ++c) {
        const j2kc_component &k = shape.components[c];
        require(k.precision == precision, name, "needs one bit depth for every component");
        require(k.dy == 1, name, "allows no vertical subsampling");
    }
    require(precision >= 8 && precision <= 16, name, "needs 8 to 16-bit samples");
    const bool chroma_halved = shape.num_components >= 3 && shape.components[1].dx == 2 && shape.components[2].dx == 2;
    for (uint32_t c = 0; c < shape.num_components; ++c)
        require(shape.components[c].dx == 1 || (chroma_halved && (c == 1 || c == 2)), name,
                "allows 4:4:4 or 4:2:2 only");
    require(cfg.tile_width == 0 && cfg.tile_height == 0, name, "single tile only");
    require(cfg.layers <= 1, name, "allows one quality layer");
    const uint32_t side = std::max(shape.width, shape.height);
    require(side <= 8192, name, "image larger than 8192 on a side");
    const int max_levels = side <= 2048 ? 5 : side <= 4096 ? 6 : 7;
    const int levels = cfg.levels < 0
                           ? std::min(max_levels, std::max(1, default_levels(shape, shape.width, shape.height)))
                           : cfg.levels;
    require(levels >= 1 && levels <= max_levels, name, "decomposition levels out of the profile's range");
    require(cfg.cblk_width_log2 >= 5 && cfg.cblk_width_log2 <= 7 && cfg.cblk_height_log2 >= 5 &&
                cfg.cblk_height_log2 <= 6 && cfg.cblk_width_log2 + cfg.cblk_height_log2 <= 12,
            name, "code-blocks 32 to 128 wide and 32 or 64 high");

    plan.siz.rsiz = 0;
    ComponentCoding &c = plan.cod.component;
    c.levels = static_cast<uint8_t>(levels);
    c.cblk_width_log2 = static_cast<uint8_t>(cfg.cblk_width_log2);
    c.cblk_height_log2 = static_cast<uint8_t>(cfg.cblk_height_log2);
    c.wavelet = cfg.lossless ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    set_profile_precincts(c);
    plan.cod.progression = J2KC_PROG_RPCL;
    plan.cod.layers = 1;
}

void apply_broadcast(EncoderPlan &plan, const j2kc_encoder_config &cfg, const j2kc_image &shape, const Rate &rate)
{
    const char *name = "broadcast";
    require(shape.num_components <= 4, name, "allows at most 4 components");
    require(all_components(
                shape, [](const j2kc_component &c) { return c.precision >= 8 && c.precision <= 12 && !c.is_signed; }),
            name, "needs 8 to 12-bit unsigned samples");
    require(shape.components[0].dx == 1 && shape.components[0].dy == 1, name, "first component must not be subsampled");
    require(cfg.tile_width == 0 && cfg.tile_height == 0, name, "single tile only in this encoder");
    require(cfg.layers <= 1, name, "allows one quality layer");
    const int levels = cfg.levels < 0 ? 5 : cfg.levels;
    require(levels >= 1 && levels <= 5, name, "allows 1 to 5 decomposition levels");

    static const uint32_t mbps[] = {200, 200, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200};
    static const double msps[] = {65, 130, 195, 260, 520, 1200, 2400, 4800, 9600, 19200, 38400};
    double samples = 0;
    for (uint32_t c = 0; c < shape.num_components; ++c)
        samples +=
            double(ceil_div(shape.width, shape.components[c].dx)) * ceil_div(shape.height, shape.components[c].dy);
    const double rate_msps = samples * rate.fps() / 1e6;
    const double rate_mbps = plan.frame_bytes ? double(plan.frame_bytes) * 8 * rate.fps() / 1e6 : 0;
    int level = cfg.broadcast_level;
    if (level <= 0) {
        level = cfg.lossless ? 6 : 1;
        while (level < 11 && (msps[level - 1] < rate_msps || mbps[level - 1] < rate_mbps)) ++level;
    }
    require(level >= 1 && level <= 11, name, "level out of range 1..11");
    if (cfg.lossless) {
        require(level == 6 || level == 7, name, "reversible coding exists at levels 6 and 7 only");
        plan.siz.rsiz = static_cast<uint16_t>(0x0300 | level);
    } else {
        require(level <= 5, name, "single-tile levels are 1 to 5");
        plan.siz.rsiz = static_cast<uint16_t>(0x0100 | level);
        const uint64_t cap = bytes_per_frame(mbps[level - 1], rate);
        plan.frame_bytes = plan.frame_bytes ? std::min(plan.frame_bytes, cap) : cap;
    }
    ComponentCoding &c = plan.cod.component;
    c.levels = static_cast<uint8_t>(levels);
    c.cblk_width_log2 = c.cblk_height_log2 = 5;
    c.cblk_style = 0;
    c.wavelet = cfg.lossless ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    set_profile_precincts(c);
    plan.cod.progression = J2KC_PROG_CPRL;
    plan.cod.layers = 1;
    plan.tlm = true;
    plan.tile_parts = J2KC_TILE_PARTS_COMPONENT;
}

void apply_generic(EncoderPlan &plan, const j2kc_encoder_config &cfg, const j2kc_image &shape)
{
    ComponentCoding &c = plan.cod.component;
    const uint32_t tw = cfg.tile_width ? cfg.tile_width : shape.width;
    const uint32_t th = cfg.tile_height ? cfg.tile_height : shape.height;
    const int levels = cfg.levels < 0 ? default_levels(shape, tw, th) : cfg.levels;
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "levels must be 0..32, not %d", levels);
    c.levels = static_cast<uint8_t>(levels);
    J2KC_CHECK_ARG(cfg.cblk_width_log2 >= 2 && cfg.cblk_height_log2 >= 2 && cfg.cblk_width_log2 <= 10 &&
                       cfg.cblk_height_log2 <= 10 && cfg.cblk_width_log2 + cfg.cblk_height_log2 <= 12,
                   "code-block size 2^%d x 2^%d: each side 4..1024, area at most 4096", cfg.cblk_width_log2,
                   cfg.cblk_height_log2);
    c.cblk_width_log2 = static_cast<uint8_t>(cfg.cblk_width_log2);
    c.cblk_height_log2 = static_cast<uint8_t>(cfg.cblk_height_log2);
    c.cblk_style = 0;
    c.wavelet = cfg.lossless ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    if (cfg.precinct_width_log2 > 0 || cfg.precinct_height_log2 > 0 || cfg.precinct_r0_width_log2 > 0 ||
        cfg.precinct_r0_height_log2 > 0) {
        const int pw = cfg.precinct_width_log2 > 0 ? cfg.precinct_width_log2 : 15;
        const int ph = cfg.precinct_height_log2 > 0 ? cfg.precinct_height_log2 : 15;
        const int pw0 = cfg.precinct_r0_width_log2 > 0 ? cfg.precinct_r0_width_log2 : pw;
        const int ph0 = cfg.precinct_r0_height_log2 > 0 ? cfg.precinct_r0_height_log2 : ph;
        J2KC_CHECK_ARG(pw >= 1 && ph >= 1 && pw <= 15 && ph <= 15 && pw0 <= 15 && ph0 <= 15,
                       "precinct sizes must be 2^1..2^15");
        c.precincts_defined = true;
        c.precinct_width_log2.fill(static_cast<uint8_t>(pw));
        c.precinct_height_log2.fill(static_cast<uint8_t>(ph));
        c.precinct_width_log2[0] = static_cast<uint8_t>(pw0);
        c.precinct_height_log2[0] = static_cast<uint8_t>(ph0);
    } else if (plan.has_budget()) {
        // Under a budget, header bytes are taken from the image: precincts of
        // 1024 (whole resolutions up to 1024 wide) cost fewer packets and
        // tag-tree roots than the cinema layout. Measured on 11 photographs
        // (1024x768 RGB, against opj_compress -I at its byte counts): +0.005
        // dB on average at ratio 64 and +0.011 at ratio 200, nothing lost at
        // high rates. The GPU's Tier-2 still gets a precinct per thread on
        // large frames.
        c.precincts_defined = true;
        c.precinct_width_log2.fill(10);
        c.precinct_height_log2.fill(10);
    } else if (shape.width > 256 || shape.height > 256) {
        // By default the cinema layout: packets stay small, a decoder can
        // stream, and the GPU's Tier-2 gets a precinct per thread to work on.
        set_profile_precincts(c);
    }
    J2KC_CHECK_ARG(cfg.progression >= J2KC_PROG_LRCP && cfg.progression <= J2KC_PROG_CPRL,
                   "unknown progression order %d", int(cfg.progression));
    plan.cod.progression = static_cast<uint8_t>(cfg.progression);
    J2KC_CHECK_ARG(cfg.layers >= 1 && cfg.layers <= J2KC_MAX_LAYERS, "layers must be 1..%d", J2KC_MAX_LAYERS);
    plan.cod.layers = static_cast<uint16_t>(cfg.layers);
    plan.cod.sop = cfg.sop != 0;
    plan.cod.eph = cfg.eph != 0;
    plan.tlm = cfg.tlm != 0;
    plan.plt = cfg.plt != 0;
    J2KC_CHECK_ARG(cfg.tile_parts >= J2KC_TILE_PARTS_NONE && cfg.tile_parts <= J2KC_TILE_PARTS_COMPONENT,
                   "tile-parts: none, resolution or component");
    plan.tile_parts = cfg.tile_parts;
    // A component cap counts that component's tile-parts, so the tile is
    // split by component; without the split the cap had nothing to count.
    if (plan.component_bytes) {
        J2KC_CHECK_ARG(cfg.tile_parts != J2KC_TILE_PARTS_RESOLUTION,
                       "a component byte budget needs tile-parts by component, not by resolution");
        plan.tile_parts = J2KC_TILE_PARTS_COMPONENT;
    }
}

void check_shape(const j2kc_image &s)
{
    J2KC_CHECK_ARG(s.width >= 1 && s.height >= 1, "image size %ux%u", s.width, s.height);
    J2KC_CHECK_ARG(s.num_components >= 1 && s.num_components <= 16384 && s.components, "%u components (1..16384)",
                   s.num_components);
    for (uint32_t c = 0; c < s.num_components; ++c) {
        const j2kc_component &k = s.components[c];
        J2KC_CHECK_ARG(k.precision >= 1 && k.precision <= 16, "component %u: precision %u (1..16)", c, k.precision);
        J2KC_CHECK_ARG(k.dx >= 1 && k.dy >= 1, "component %u: subsampling %ux%u", c, k.dx, k.dy);
    }
}

}  // namespace

uint64_t dci_frame_cap(int fps_num, int fps_den) { return 250ull * 125000ull * uint64_t(fps_den) / uint64_t(fps_num); }

uint64_t dci_component_cap(int fps_num, int fps_den)
{
    return 200ull * 125000ull * uint64_t(fps_den) / uint64_t(fps_num);
}

/**
 * log2 of the irreversible base step (sample units) under a byte budget, from
 * the distortion expected at the budget's bits per sample b (all components,
 * at their subsampled sizes). PCRD-opt truncates, so the step only has to lie
 * a few bit-planes under the distortion it will reach: then quantisation never
 * bounds the quality at the budget, and content whose stream would not fit
 * uncompressed fills the budget. That distortion depends on the content, so
 * the step follows the smoothest content measured (12-bit X'Y'Z' made from
 * photographs, whose RMSE relative to the range falls about 2^1.5 for each
 * bit per sample), one plane under it: 2^(p-12-floor(1.5 b + 0.1)), never
 * under 2^-10 sample unit (budget_quantization then keeps Mb within 29
 * planes). At 12 bits: 1 sample unit up to 0.6 bit/sample (DCI 4K's cap is
 * 0.39), then 1/2, 1/4 from 1.27 (DCI 2K's cap is 1.57), 1/8 from 1.94, 1/16
 * from 2.6 (the 0.1 keeps ratios 18, 9 and 6 off the edges). The profiles
 * take the rule like any budget: coarser DCI steps (8 sample units at 4K, 2
 * at 2K) left smooth photographs' budgets up to 40 % unspent and lost up to
 * 3 dB to opj_compress -cinema4K, and at 2K up to 0.5 dB where the budget was
 * spent (docs/measurements.md, rate-distortion). At 8 bits the step is 1/16
 * up to 0.6 bit/sample (opj's step is 1) and finer above: a floor of 1/8
 * there left smooth photographs' budgets 7 to 46 % unspent at ratios 2 and 4.
 * A function of the plan's inputs only, so both backends and every frame use
 * the same step (DCI packaging wants the same QCD in every frame).
 */
static int budget_step_log2(int precision, double bits_per_sample)
{
    const double b = std::min(std::max(bits_per_sample, 0.0), 64.0);
    return std::max(-10, precision - 12 - static_cast<int>(std::floor(1.5 * b + 0.1)));
}

/**
 * Ccap15 of an HT-only codestream (ISO/IEC 15444-15): bits 14-15 zero
 * (every code-block HT), no MULTIHT sets, no RGN, homogeneous; bit 5 set for
 * irreversible coding; bits 0-4 the magnitude bound B, the largest Mb of any
 * band, in the field's piecewise code (B <= 8 as 0, up to 27 as B - 8, then
 * 13 + B / 4).
 */
static int ht_magnitude_bound(const EncoderPlan &plan)
{
    int b = 0;
    for (const Quantization &q : plan.quant)
        for (int band = 0; band <= 3 * plan.levels(); ++band)
            b = std::max(b, num_bitplanes(q.guard_bits, q.step(band, plan.levels()).exponent));
    return b;
}

static uint16_t ht_ccap15(const EncoderPlan &plan)
{
    const int b = ht_magnitude_bound(plan);
    const int code = b <= 8 ? 0 : b < 28 ? b - 8 : b < 48 ? 13 + (b >> 2) : 31;
    return static_cast<uint16_t>((plan.reversible() ? 0 : 0x0020) | code);
}

/** HT block coding: code-block style, Rsiz bit and CAP, once the steps are known. */
static void apply_ht(EncoderPlan &plan)
{
    plan.ht = true;
    plan.cod.component.cblk_style = cblk_style::kHighThroughput;
    plan.siz.rsiz = static_cast<uint16_t>(plan.siz.rsiz | kRsizPart15);
    plan.cap = kPcapPart15;
    plan.ccap = {ht_ccap15(plan)};
}

/** The most step phases a frame is coded at (j2kc_encoder_config::step_phases). */
constexpr int kMaxStepPhases = 8;
/** The phases searched on a sequence's first frame by default: four took 0.1
 *  to 0.3 dB on most photographs (docs/measurements.md) for what the search
 *  costs once. */
constexpr int kSequenceStepPhases = 4;

/** APP2.HT's largest magnitude bound B: Photon rejects streams above it
 *  (decoders size their buffers by it). */
constexpr int kImfHtMaxMagnitudeBound = 21;

/**
 * The irreversible quantisation under a budget: the rule's step, coarsened
 * while a band would need more magnitude bit-planes (Mb = G + e_b - 1, E-2)
 * than max_bitplanes (29; APP2.HT's bound for IMF HT). Deep samples at high rates reach the limit: 16 bits at 10.7
 * bit/sample asks for 2^-10 sample units and 30 planes in the LL band. A
 * photograph coded so (16-bit RGB, 1024x768, 3,145,684 bytes) decoded at 24
 * dB in our decoder and OpenJPEG's, where 29 planes give 99.38 dB
 * (docs/measurements.md, rate-distortion).
 */
static Quantization budget_quantization(int levels, int precision, int guard, int step_log2, double phase,
                                        int max_bitplanes)
{
    for (;; ++step_log2) {
        Quantization q = make_irreversible_quantization(levels, precision, guard, std::ldexp(phase, step_log2));
        int planes = 0;
        for (const QuantStep &s : q.steps) planes = std::max(planes, num_bitplanes(guard, s.exponent));
        if (planes <= max_bitplanes || step_log2 >= precision) return q;
    }
}

EncoderPlan plan_encoder(const j2kc_encoder_config &cfg, const j2kc_image &shape, double step_phase)
{
    check_shape(shape);
    EncoderPlan plan;
    plan.profile = cfg.profile;
    const Rate rate =
        cfg.frame_rate_num > 0 && cfg.frame_rate_den > 0 ? Rate{cfg.frame_rate_num, cfg.frame_rate_den} : Rate{};

    ImageSize &siz = plan.siz;
    siz.width = shape.width;
    siz.height = shape.height;
    siz.tile_width = cfg.tile_width ? std::min(cfg.tile_width, shape.width) : shape.width;
    siz.tile_height = cfg.tile_height ? std::min(cfg.tile_height, shape.height) : shape.height;
    J2KC_CHECK_ARG(siz.num_tiles() <= 65535, "%u tiles (at most 65535)", siz.num_tiles());
    for (uint32_t c = 0; c < shape.num_components; ++c) {
        const j2kc_component &k = shape.components[c];
        siz.components.push_back({k.precision, k.is_signed != 0, k.dx, k.dy});
    }
    plan.frame_bytes = cfg.frame_bytes;
    plan.component_bytes = cfg.component_bytes;
    plan.comment = cfg.comment ? cfg.comment : "";

    J2KC_CHECK_ARG(cfg.block_coder == J2KC_BLOCK_CODER_PART1 || cfg.block_coder == J2KC_BLOCK_CODER_HT,
                   "unknown block coder %d", cfg.block_coder);
    const bool ht = cfg.block_coder == J2KC_BLOCK_CODER_HT;
    J2KC_CHECK_SUPPORTED(
        !ht || cfg.profile == J2KC_PROFILE_NONE || cfg.profile == J2KC_PROFILE_IMF,
        "the HT block coder is offered with the generic and IMF profiles only, not with DCI or broadcast");
    switch (cfg.profile) {
    case J2KC_PROFILE_NONE: apply_generic(plan, cfg, shape); break;
    case J2KC_PROFILE_IMF:
        if (ht) {
            apply_imf_ht(plan, cfg, shape);
            break;
        }
        apply_imf(plan, cfg, shape, rate);
        break;
    case J2KC_PROFILE_DCI_2K:
    case J2KC_PROFILE_DCI_4K: apply_dci(plan, cfg, shape, rate); break;
    case J2KC_PROFILE_BROADCAST: apply_broadcast(plan, cfg, shape, rate); break;
    default: J2KC_CHECK_ARG(false, "unknown profile %d", int(cfg.profile));
    }
    plan.lossless = plan.reversible();
    J2KC_CHECK_ARG(!(plan.lossless && plan.frame_bytes && (cfg.profile == J2KC_PROFILE_NONE || ht)),
                   "lossless coding keeps every pass: drop the byte budget or lossless");

    // MCT on the first three components needs them the same size (Annex G).
    const bool mct_possible = shape.num_components >= 3 && shape.components[0].dx == shape.components[1].dx &&
                              shape.components[0].dx == shape.components[2].dx &&
                              shape.components[0].dy == shape.components[1].dy &&
                              shape.components[0].dy == shape.components[2].dy;
    if (plan.profile == J2KC_PROFILE_NONE || plan.profile == J2KC_PROFILE_IMF ||
        plan.profile == J2KC_PROFILE_BROADCAST) {
        J2KC_CHECK_ARG(cfg.mct <= 0 || mct_possible, "MCT needs three components of equal subsampling");
        plan.cod.mct = static_cast<uint8_t>(cfg.mct < 0 ? mct_possible : cfg.mct != 0);
    }

    const int default_guard = plan.profile == J2KC_PROFILE_DCI_2K ? 1 : 2;
    const int guard = cfg.guard_bits < 0 ? default_guard : cfg.guard_bits;
    J2KC_CHECK_ARG(guard >= 0 && guard <= 7, "guard bits must be 0..7");
    J2KC_CHECK_ARG(
        !(plan.profile == J2KC_PROFILE_DCI_2K || plan.profile == J2KC_PROFILE_DCI_4K) || guard == default_guard,
        "DCI needs %d guard bit(s)", default_guard);

    // Without a budget the step itself sets the quality (in sample units).
    // With one, PCRD-opt does the truncation and the step follows the
    // distortion expected at the budget (budget_step_log2).
    J2KC_CHECK_ARG(cfg.quality > 0 && std::isfinite(cfg.quality), "quality must be > 0");
    const bool budget = plan.has_budget();
    double samples = 0;
    for (uint32_t c = 0; c < shape.num_components; ++c)
        samples +=
            double(ceil_div(shape.width, shape.components[c].dx)) * ceil_div(shape.height, shape.components[c].dy);
    const double bits_per_sample = budget ? double(plan.budget_bytes()) * 8 / samples : 0;
    const int max_bitplanes =
        ht && plan.profile == J2KC_PROFILE_IMF ? kImfHtMaxMagnitudeBound : int(kTier1MaxBitplanes) - 1;
    J2KC_CHECK_ARG(cfg.step_phases >= 0 && cfg.step_phases <= kMaxStepPhases, "step phases must be 0..%d, not %d",
                   kMaxStepPhases, cfg.step_phases);
    const bool shared_qcd = plan.profile == J2KC_PROFILE_DCI_2K || plan.profile == J2KC_PROFILE_DCI_4K ||
                            plan.profile == J2KC_PROFILE_IMF;
    if ((plan.profile == J2KC_PROFILE_NONE || shared_qcd) && !plan.reversible() && budget) {
        plan.step_phases = cfg.step_phases > 0 ? cfg.step_phases : kSequenceStepPhases;
        plan.step_phase_per_sequence = plan.step_phases > 1 && (shared_qcd || cfg.step_phases == 0);
    }
    J2KC_CHECK_ARG(step_phase >= 0 && step_phase < 1 && (step_phase == 0 || plan.step_phases > 1),
                   "step phase %g: a fraction of a plane in [0, 1), under a phase search", step_phase);
    const double phase = std::exp2(step_phase);
    for (uint32_t c = 0; c < shape.num_components; ++c) {
        const int precision = siz.components[c].precision;
        // The RCT's chroma outputs need one bit more than the samples (G.2).
        const bool rct_chroma = plan.reversible() && plan.cod.mct && (c == 1 || c == 2);
        if (plan.reversible())
            plan.quant.push_back(make_reversible_quantization(plan.levels(), precision + rct_chroma, guard));
        else if (budget)
            plan.quant.push_back(budget_quantization(
                plan.levels(), precision, guard, budget_step_log2(precision, bits_per_sample), phase, max_bitplanes));
        else
            plan.quant.push_back(make_irreversible_quantization(plan.levels(), precision, guard, cfg.quality));
    }
    if (ht) {
        J2KC_CHECK_ARG(plan.profile != J2KC_PROFILE_IMF || ht_magnitude_bound(plan) <= kImfHtMaxMagnitudeBound,
                       "profile imf (HT): magnitude bound B = %d exceeds 21; a larger quality (coarser steps) "
                       "lowers it",
                       ht_magnitude_bound(plan));
        apply_ht(plan);
    }
    return plan;
}

}  // namespace j2kc
