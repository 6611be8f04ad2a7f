/**
 * @file encoder_common.cpp
 * @brief Shared encoder plumbing: frame checks, Tier-1 parameters per
 * code-block (Mb of E-2), rate-control inputs and exact sizing through Tier-2
 * and the codestream assembly, so that every marker byte counts.
 */
#include "pipeline/encoder_common.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/status.h"
#include "pipeline/band_layout.h"
#include "pipeline/codestream_assembly.h"
#include "quant/quant.h"
#include "tier1/tier1_contexts.h"

namespace j2kc {

void check_frame(const EncoderPlan &plan, const j2kc_image &image, bool need_data)
{
    const ImageSize &siz = plan.siz;
    J2KC_CHECK_ARG(image.width == siz.width && image.height == siz.height,
                   "frame is %ux%u, the encoder was opened for %ux%u", image.width, image.height, siz.width,
                   siz.height);
    J2KC_CHECK_ARG(image.num_components == siz.components.size() && image.components,
                   "frame has %u components, the encoder %zu", image.num_components, siz.components.size());
    for (uint32_t c = 0; c < image.num_components; ++c) {
        const j2kc_component &k = image.components[c];
        const ComponentSize &s = siz.components[c];
        J2KC_CHECK_ARG(k.precision == s.precision && (k.is_signed != 0) == s.is_signed && k.dx == s.dx && k.dy == s.dy,
                       "component %u changed format since the encoder was opened", c);
        J2KC_CHECK_ARG(k.width == (siz.width + s.dx - 1) / s.dx && k.height == (siz.height + s.dy - 1) / s.dy,
                       "component %u is %ux%u, expected %ux%u", c, k.width, k.height, (siz.width + s.dx - 1) / s.dx,
                       (siz.height + s.dy - 1) / s.dy);
        J2KC_CHECK_ARG(!need_data || k.data != 0, "component %u has no data", c);
        J2KC_CHECK_ARG(k.bytes_per_sample == 1 || k.bytes_per_sample == 2 || k.bytes_per_sample == 4,
                       "component %u: %u bytes per sample", c, k.bytes_per_sample);
        J2KC_CHECK_ARG(k.precision + k.shift <= 8 * k.bytes_per_sample,
                       "component %u: %u bits at shift %u do not fit %u bytes", c, k.precision, k.shift,
                       k.bytes_per_sample);
    }
}

bool timing_requested()
{
    const char *v = std::getenv("J2KC_TIMING");
    return v && *v && std::strcmp(v, "0") != 0;
}

void log_stage_times(const Logger &log, const j2kc_stage_times &t)
{
    log.log(J2KC_LOG_INFO,
            "stage ms: upload %.2f color %.2f dwt %.2f quant %.2f tier1 %.2f rate %.2f tier2 %.2f "
            "download %.2f total %.2f",
            t.upload, t.color, t.dwt, t.quant, t.tier1, t.rate, t.tier2, t.download, t.total);
}

BlockPlacement place_block(const EncoderPlan &plan, const TileLayout &layout, const CodeBlock &cb)
{
    const TileComponent &tc = layout.components[cb.component];
    const Band &band = tc.resolutions[cb.resolution].bands[cb.band];
    BlockPlacement p;
    code_block_origin(tc, cb, p.x, p.y);
    const Quantization &q = plan.quant[cb.component];
    p.params.orientation = band.orientation;
    p.params.style = plan.cod.component.cblk_style;
    p.params.num_bitplanes = static_cast<uint8_t>(q.guard_bits + q.step(band.quant_index, tc.levels).exponent - 1);
    return p;
}

namespace {

/**
 * Energy of the inverse colour transform's column for a component: an error
 * in a transformed component reaches the output components with these weights
 * (G.2, G.3), so rate control weighs it accordingly.
 */
double mct_energy(const EncoderPlan &plan, uint16_t component)
{
    if (!plan.cod.mct || component > 2) return 1.0;
    static const double rct[3] = {3.0, 0.6875, 0.6875};  // (1,1,1), (-1/4,3/4,-1/4), (3/4,-1/4,-1/4)
    static const double ict[3] = {3.0, 0.344136 * 0.344136 + 1.772 * 1.772, 1.402 * 1.402 + 0.714136 * 0.714136};
    return plan.reversible() ? rct[component] : ict[component];
}

}  // namespace

double block_weight(const EncoderPlan &plan, const TileLayout &layout, const CodeBlock &cb)
{
    const TileComponent &tc = layout.components[cb.component];
    const Band &band = tc.resolutions[cb.resolution].bands[cb.band];
    // Tier-1 counts distortion in quarters of a squared quantisation index,
    // times 2^t1_distortion_shift(Mb) in the deepest bands.
    const Quantization &q = plan.quant[cb.component];
    const int mb = num_bitplanes(q.guard_bits, q.step(band.quant_index, tc.levels).exponent);
    return std::ldexp(0.25, t1_distortion_shift(static_cast<uint32_t>(mb))) * mct_energy(plan, cb.component) *
           band_mse_weight(q, plan.cod.component.wavelet, plan.siz.components[cb.component].precision,
                           band.quant_index, tc.levels);
}

RateSetup make_rate_setup(const EncoderPlan &plan, const std::vector<const TileLayout *> &layouts)
{
    RateSetup r;
    const uint32_t layers = plan.cod.layers;
    const uint32_t ncomp = static_cast<uint32_t>(plan.siz.components.size());
    r.component_fixed.assign(ncomp, 0);
    for (const TileLayout *l : layouts) {
        const auto order = packet_order(*l, static_cast<uint16_t>(layers), plan.cod.progression, plan.poc);
        std::vector<PacketRecord> records(order.size());
        for (size_t p = 0; p < order.size(); ++p) records[p].id = order[p];
        r.tile_part_packets.emplace_back();
        for (const TilePartSpan &span : split_tile_parts(plan, records)) {
            ++r.tile_parts;
            r.tile_part_packets.back().push_back(span.num_packets);
            if (span.component >= 0) r.component_fixed[span.component] += 14;
        }
    }
    r.fixed_bytes = fixed_overhead(plan, r.tile_parts) + 14 * r.tile_parts;
    r.params.num_components = ncomp;
    r.params.num_layers = layers;
    if (plan.frame_bytes) {
        J2KC_CHECK_ARG(
            plan.frame_bytes > r.fixed_bytes, "a budget of %llu bytes cannot even hold the %llu bytes of markers",
            static_cast<unsigned long long>(plan.frame_bytes), static_cast<unsigned long long>(r.fixed_bytes));
        r.params.budget = plan.frame_bytes - r.fixed_bytes;
    }
    if (plan.component_bytes) {
        for (uint32_t c = 0; c < ncomp; ++c) {
            J2KC_CHECK_ARG(plan.component_bytes > r.component_fixed[c], "component budget below its markers");
            r.params.component_budgets.push_back(plan.component_bytes - r.component_fixed[c]);
        }
    }
    r.packet_params.layers = static_cast<uint16_t>(layers);
    r.packet_params.progression = plan.cod.progression;
    r.packet_params.progression_changes = plan.poc;
    r.packet_params.sop = plan.cod.sop;
    r.packet_params.eph = plan.cod.eph;
    r.packet_params.cblk_style.assign(ncomp, plan.cod.component.cblk_style);
    return r;
}

FrameBlocks collect_blocks(const EncoderPlan &plan, size_t tiles,
                           const std::function<const TileLayout &(uint32_t)> &layout,
                           const std::function<const std::vector<EncodedCodeBlock> &(uint32_t)> &blocks)
{
    FrameBlocks f;
    f.plan = &plan;
    for (uint32_t t = 0; t < tiles; ++t) {
        const TileLayout &l = layout(t);
        const std::vector<EncodedCodeBlock> &b = blocks(t);
        f.layouts.push_back(&l);
        f.tile_first_block.push_back(static_cast<uint32_t>(f.weight.size()));
        for (size_t i = 0; i < l.code_blocks.size(); ++i) {
            f.pass_offset.push_back(static_cast<uint32_t>(f.pass_end.size()));
            for (const PassInfo &p : b[i].passes) {
                f.pass_end.push_back(p.end);
                f.pass_distortion.push_back(p.distortion);
                f.pass_terminated.push_back(p.terminated);
            }
            f.weight.push_back(block_weight(plan, l, l.code_blocks[i]));
            f.component.push_back(l.code_blocks[i].component);
        }
    }
    f.pass_offset.push_back(static_cast<uint32_t>(f.pass_end.size()));

    // Pointers only once the arrays have stopped growing.
    size_t block = 0;
    for (uint32_t t = 0; t < tiles; ++t) {
        const std::vector<EncodedCodeBlock> &b = blocks(t);
        for (size_t i = 0; i < b.size(); ++i, ++block) {
            CodeBlockPasses cp;
            cp.data = b[i].data.data();
            cp.pass_end = f.pass_end.data() + f.pass_offset[block];
            cp.pass_terminated = f.pass_terminated.data() + f.pass_offset[block];
            cp.num_passes = static_cast<uint32_t>(b[i].passes.size());
            cp.zero_bitplanes = b[i].zero_bitplanes;
            f.passes.push_back(cp);
            if (plan.ht_coding_sets()) f.ht_blocks.push_back(&b[i]);
        }
    }
    f.pcrd.num_blocks = static_cast<uint32_t>(f.weight.size());
    f.pcrd.num_passes = static_cast<uint32_t>(f.pass_end.size());
    f.pcrd.pass_offset = f.pass_offset.data();
    f.pcrd.pass_end = f.pass_end.data();
    f.pcrd.pass_distortion = f.pass_distortion.data();
    f.pcrd.weight = f.weight.data();
    f.pcrd.component = f.component.data();
    f.setup = make_rate_setup(plan, f.layouts);
    return f;
}

namespace {

/** One tile's chosen HT sets (`blocks`, n of them) for its truncation points (one layer), which
 *  become the sets' pass counts. */
void choose_ht_sets(const EncodedCodeBlock *const *blocks, size_t n, std::vector<uint32_t> &points,
                    std::vector<CodeBlockPasses> &chosen, std::vector<uint32_t> &chosen_end)
{
    static const uint8_t kTerminated[htenc::kHtSetPasses] = {
        htenc::ht_set_pass_terminated(0), htenc::ht_set_pass_terminated(1), htenc::ht_set_pass_terminated(2)};
    chosen.assign(n, CodeBlockPasses{});
    chosen_end.assign(n * htenc::kHtSetPasses, 0);
    for (size_t i = 0; i < n; ++i) {
        const EncodedCodeBlock &b = *blocks[i];
        const htenc::HtChosenSet c = htenc::ht_chosen_set(b.ht_sets, points[i], b.zero_bitplanes);
        std::copy(c.end, c.end + htenc::kHtSetPasses, chosen_end.begin() + i * htenc::kHtSetPasses);
        chosen[i].data = b.data.data() + c.start;
        chosen[i].pass_end = chosen_end.data() + i * htenc::kHtSetPasses;
        chosen[i].pass_terminated = kTerminated;
        chosen[i].num_passes = c.passes;
        chosen[i].zero_bitplanes = c.zero_bitplanes;
        points[i] = c.passes;
    }
}

}  // namespace

PcrdSizes FrameBlocks::exact_size(const uint16_t *passes, std::vector<EncodedTilePackets> &tiles) const
{
    const uint32_t layers = plan->cod.layers;
    std::vector<uint32_t> layer_passes, chosen_end;
    std::vector<CodeBlockPasses> chosen;
    for (uint32_t t = 0; t < layouts.size(); ++t) {
        const size_t n = layouts[t]->code_blocks.size();
        const uint32_t first = tile_first_block[t];
        layer_passes.assign(n * layers, 0);
        for (size_t i = 0; i < n; ++i)
            for (uint32_t l = 0; l < layers; ++l) layer_passes[l * n + i] = passes[(first + i) * layers + l];
        const CodeBlockPasses *cblks = this->passes.data() + first;
        if (!ht_blocks.empty()) {
            choose_ht_sets(ht_blocks.data() + first, n, layer_passes, chosen, chosen_end);
            cblks = chosen.data();
        }
        encode_tile_packets(*layouts[t], setup.packet_params, cblks, layer_passes.data(), tiles[t]);
    }
    const CodestreamSizes sizes = measure_codestream(*plan, tiles);
    PcrdSizes out;
    out.total = sizes.total - setup.fixed_bytes;
    if (!setup.params.component_budgets.empty())
        for (size_t c = 0; c < sizes.component.size(); ++c)
            out.component.push_back(sizes.component[c] - setup.component_fixed[c]);
    return out;
}

}  // namespace j2kc
