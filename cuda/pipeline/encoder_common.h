/**
 * @file encoder_common.h
 * @brief What both encoder backends share around the plan: frame checks,
 * code-block placement and Tier-1 parameters, the stage timer, and the frame's
 * code-block table for rate control with its exact Tier-2 sizing.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "common/log.h"
#include "geometry/partition.h"
#include "pipeline/encoder.h"
#include "pipeline/encoder_plan.h"
#include "rate/pcrd.h"
#include "tier1/tier1.h"
#include "tier2/packet_encoder.h"

namespace j2kc {

/** Throws INVALID_ARG unless the frame has the shape the encoder was made for. */
void check_frame(const EncoderPlan &plan, const j2kc_image &image, bool need_data = true);

/** J2KC_TIMING=1 in the environment turns the per-stage timer on. */
bool timing_requested();
void log_stage_times(const Logger &log, const j2kc_stage_times &t);

struct BlockPlacement {
    uint32_t x = 0, y = 0;  ///< top-left sample in the tile-component plane
    Tier1EncodeParams params;
};
BlockPlacement place_block(const EncoderPlan &plan, const TileLayout &layout, const CodeBlock &cb);

/** MSE weight of one Tier-1 distortion unit of a code-block (for PCRD-opt). */
double block_weight(const EncoderPlan &plan, const TileLayout &layout, const CodeBlock &cb);

/**
 * What rate control and Tier-2 need to know of a frame before any code-block
 * is coded: budgets net of the fixed marker bytes, packet parameters, and the
 * tile-part split (fixed by the layouts: every packet exists, empty or not).
 */
struct RateSetup {
    PcrdParams params;
    PacketEncodeParams packet_params;
    uint64_t fixed_bytes = 0;                              ///< main header, EOC, SOT/SOD of every tile-part
    std::vector<uint64_t> component_fixed;                 ///< SOT/SOD bytes of each component's own tile-parts
    std::vector<std::vector<uint32_t>> tile_part_packets;  ///< per tile: packets of each tile-part
    size_t tile_parts = 0;
};
RateSetup make_rate_setup(const EncoderPlan &plan, const std::vector<const TileLayout *> &layouts);

/**
 * Every code-block of a frame as rate control sees it, plus what Tier-2
 * needs to write the packets for any selection.
 */
struct FrameBlocks {
    const EncoderPlan *plan = nullptr;
    std::vector<const TileLayout *> layouts;
    std::vector<uint32_t> tile_first_block;  ///< per tile, its first frame block index
    std::vector<uint32_t> pass_offset, pass_end;
    std::vector<uint64_t> pass_distortion;
    std::vector<uint8_t> pass_terminated;
    std::vector<double> weight;
    std::vector<uint16_t> component;
    std::vector<CodeBlockPasses> passes;  ///< per frame block, pointing into the arrays above
    /** Per frame block when HT blocks offer coding sets (EncoderPlan::ht_coding_sets): the
     *  passes above are truncation points, and Tier-2 writes the chosen set of each. */
    std::vector<const EncodedCodeBlock *> ht_blocks;
    PcrdBlocks pcrd;
    RateSetup setup;

    /** Writes every tile's packets for `passes` ([block * layers + layer]) and sizes the codestream. */
    PcrdSizes exact_size(const uint16_t *passes, std::vector<EncodedTilePackets> &tiles) const;
};

FrameBlocks collect_blocks(const EncoderPlan &plan, size_t tiles,
                           const std::function<const TileLayout &(uint32_t)> &layout,
                           const std::function<const std::vector<EncodedCodeBlock> &(uint32_t)> &blocks);

/**
 * The file boxes that go before every codestream of an encoder made with
 * `config` for images like `shape`: none for a raw codestream, the JP2
 * header (jp2_file_header) for JP2. INVALID_ARG for a colour description
 * JP2 cannot carry, before any backend is made.
 */
std::vector<uint8_t> container_header(const j2kc_encoder_config &config, const j2kc_image &shape);
/** The backend's codestreams as the configured container: each behind `header` in a jp2c box for JP2. */
std::unique_ptr<Encoder> with_container(std::unique_ptr<Encoder> codestreams, const j2kc_encoder_config &config,
                                        std::vector<uint8_t> header);

/** The backends' codestream encoders, coding at plan_encoder's `step_phase`. */
std::unique_ptr<Encoder> create_cpu_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                            const Logger &log, double step_phase = 0);
std::unique_ptr<Encoder> create_cuda_encoder(const j2kc_encoder_config &config, const j2kc_image &shape,
                                             const Logger &log, double step_phase = 0);

}  // namespace j2kc
