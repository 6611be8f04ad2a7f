/**
 * @file staged_encoder.cpp
 * @brief Frame loop: transform (backend), Tier-1 (Annex D) over all
 * code-blocks, PCRD-opt (rate/pcrd.h) with exact Tier-2 sizing, assembly.
 */
#include "pipeline/staged_encoder.h"

#include <array>

#include "common/status.h"
#include "pipeline/codestream_assembly.h"
#include "quant/quant.h"
#include "quant/step_fit_core.h"
#include "rate/pcrd.h"
#include "tier1/ht_block_encoder.h"
#include "tier1/tier1_plane_floor.h"

namespace j2kc {

StagedEncoder::StagedEncoder(const j2kc_encoder_config &config, const j2kc_image &shape, const Logger &log,
                             double step_phase)
    : plan_(plan_encoder(config, shape, step_phase)), log_(log),
      pool_(config.threads > 0 ? unsigned(config.threads) : 0u), timing_(timing_requested())
{
    check_frame(plan_, shape, /*need_data=*/false);
    const uint32_t n = static_cast<uint32_t>(plan_.siz.components.size());
    work_.resize(plan_.siz.num_tiles());
    for (uint32_t t = 0; t < work_.size(); ++t)
        work_[t].layout = build_partition(plan_.siz, t, std::vector<ComponentCoding>(n, plan_.cod.component));
}

bool StagedEncoder::submit(const j2kc_image &image, int64_t tag)
{
    check_frame(plan_, image);
    const auto start = Clock::now();
    times_ = {};
    done_.push_back({encode_frame(image), tag});
    times_.total = ms_since(start);
    if (timing_) log_stage_times(log_, times_);
    return true;
}

bool StagedEncoder::receive(std::vector<uint8_t> &codestream, int64_t &tag, bool)
{
    if (done_.empty()) return false;
    codestream = std::move(done_.front().first);
    tag = done_.front().second;
    done_.pop_front();
    return true;
}

std::vector<uint8_t> StagedEncoder::encode_frame(const j2kc_image &)
{
    fail(J2KC_ERR_INTERNAL, "this backend queues its frames itself");
}

const int32_t *StagedEncoder::block_indices(const TileWork &tw, const CodeBlock &cb, size_t &stride) const
{
    const BlockPlacement p = place_block(plan_, tw.layout, cb);
    stride = tw.layout.components[cb.component].rect.width();
    return tw.indices[cb.component].data() + size_t{p.y} * stride + p.x;
}

void StagedEncoder::plane_cost_model(const std::vector<TileWork> &work, uint64_t (&bits)[htenc::kHtPlaneBins])
{
    for (uint64_t &b : bits) b = 0;
    for (const TileWork &tw : work) {
        std::vector<std::array<uint64_t, htenc::kHtPlaneBins>> block_bits(tw.layout.code_blocks.size());
        pool_.parallel_for(block_bits.size(), [&](size_t i, unsigned) {
            const CodeBlock &cb = tw.layout.code_blocks[i];
            size_t stride = 0;
            const int32_t *coeffs = block_indices(tw, cb, stride);
            block_bits[i].fill(0);
            htenc::ht_add_cleanup_model(coeffs, stride, cb.rect.width(), cb.rect.height(), block_bits[i].data());
        });
        for (const auto &h : block_bits)
            for (uint32_t b = 0; b < htenc::kHtPlaneBins; ++b) bits[b] += h[b];
    }
}

void StagedEncoder::code_blocks(std::vector<TileWork> &work)
{
    // Under a budget the frame's cost model picks the planes: HT blocks offer
    // rate control several HT sets around one, Part 1 blocks stop at another.
    const bool sets = plan_.ht_coding_sets(), floor = plan_.lowest_plane_from_budget();
    uint64_t bits[htenc::kHtPlaneBins] = {};
    if (sets || floor) plane_cost_model(work, bits);
    const uint32_t top_plane = sets ? htenc::ht_sets_top_plane(bits, plan_.budget_bytes()) : 0;
    const uint32_t lowest_plane = floor ? t1core::t1_lowest_plane(bits, plan_.budget_bytes()) : 0;
    if (floor)
        log_.log(J2KC_LOG_VERBOSE, "Tier-1: bit-planes under %u left out (the budget's cost model)", lowest_plane);
    for (TileWork &tw : work) {
        tw.blocks.resize(tw.layout.code_blocks.size());
        pool_.parallel_for(tw.layout.code_blocks.size(), [&](size_t i, unsigned) {
            const CodeBlock &cb = tw.layout.code_blocks[i];
            size_t stride = 0;
            const int32_t *coeffs = block_indices(tw, cb, stride);
            BlockPlacement p = place_block(plan_, tw.layout, cb);
            if (p.params.style & cblk_style::kHighThroughput) {
                encode_ht_code_block(coeffs, stride, cb.rect.width(), cb.rect.height(), p.params.num_bitplanes, sets,
                                     top_plane, tw.blocks[i]);
            } else {
                p.params.lowest_plane = static_cast<uint8_t>(lowest_plane);
                encode_code_block(coeffs, stride, cb.rect.width(), cb.rect.height(), p.params, tw.blocks[i]);
            }
        });
    }
}

/**
 * Tier-1's work against what rate control kept of it: the passes coded and
 * then dropped are the cost of a quantisation step finer than the budget
 * needed.
 */
void StagedEncoder::log_kept_passes(const FrameBlocks &frame, const PcrdResult &selection) const
{
    uint64_t kept = 0;
    const uint32_t layers = selection.num_layers;
    for (uint32_t b = 0; layers && b < selection.num_blocks; ++b)
        kept += selection.passes[size_t{b} * layers + layers - 1];
    log_.log(J2KC_LOG_VERBOSE, "rate control: %u code-blocks, %u coding passes coded, %llu kept, %llu bytes",
             frame.pcrd.num_blocks, frame.pcrd.num_passes, static_cast<unsigned long long>(kept),
             static_cast<unsigned long long>(selection.exact.total));
}

std::vector<uint64_t> StagedEncoder::step_fit_sums(const std::vector<TileWork> &work, const PcrdResult &selection)
{
    const uint32_t bands = num_bands(plan_.levels()), layers = selection.num_layers;
    const int count_log2 = step_fit_count_log2(plan_);
    std::vector<uint64_t> sums(size_t{2} * bands * plan_.siz.components.size(), 0);
    size_t first = 0;
    for (const TileWork &tw : work) {
        // Per block, then in block order: integer sums, the same in any order.
        std::vector<std::array<uint64_t, 2>> block_sums(tw.layout.code_blocks.size());
        pool_.parallel_for(block_sums.size(), [&](size_t i, unsigned) {
            const CodeBlock &cb = tw.layout.code_blocks[i];
            const int planes = place_block(plan_, tw.layout, cb).params.num_bitplanes;
            const uint32_t kept = layers ? selection.passes[(first + i) * layers + layers - 1] : 0;
            const int cut = step_fit_cut_plane(planes, tw.blocks[i].zero_bitplanes, kept);
            const int shift = step_fit_shift(planes, count_log2);
            size_t stride = 0;
            const int32_t *v = block_indices(tw, cb, stride);
            uint64_t xy = 0, yy = 0;
            for (uint32_t y = 0; cut >= 0 && y < cb.rect.height(); ++y)
                for (uint32_t x = 0; x < cb.rect.width(); ++x) step_fit_add(v[y * stride + x], cut, shift, xy, yy);
            block_sums[i] = {xy, yy};
        });
        for (size_t i = 0; i < block_sums.size(); ++i) {
            const CodeBlock &cb = tw.layout.code_blocks[i];
            const TileComponent &tc = tw.layout.components[cb.component];
            const size_t slot =
                step_fit_slot(plan_, cb.component, tc.resolutions[cb.resolution].bands[cb.band].quant_index);
            sums[2 * slot] += block_sums[i][0];
            sums[2 * slot + 1] += block_sums[i][1];
        }
        first += block_sums.size();
    }
    return sums;
}

std::vector<uint8_t> StagedEncoder::rate_and_assemble(const std::vector<TileWork> &work)
{
    auto t0 = Clock::now();
    const FrameBlocks frame = collect_blocks(
        plan_, work.size(), [&](uint32_t t) -> const TileLayout & { return work[t].layout; },
        [&](uint32_t t) -> const std::vector<EncodedCodeBlock> & { return work[t].blocks; });
    std::vector<EncodedTilePackets> packets(work.size());
    // The last exact sizing PCRD asks for is that of its final selection, so
    // `packets` then holds exactly the packets to write.
    const PcrdResult selection = pcrd_select_ref(
        frame.pcrd, frame.setup.params, [&](const uint16_t *passes) { return frame.exact_size(passes, packets); });
    times_.rate = ms_since(t0);
    log_kept_passes(frame, selection);

    t0 = Clock::now();
    std::vector<uint8_t> out = assemble_codestream(plan_, packets);
    if (plan_.fitted_steps()) write_fitted_steps(out.data(), out.size(), plan_, step_fit_sums(work, selection).data());
    times_.tier2 = ms_since(t0);
    return out;
}

}  // namespace j2kc
