/**
 * @file codestream_assembly.h
 * @brief The encoder's last step (ISO/IEC 15444-1 A.3-A.4): main header,
 * tile-parts split by the plan's rule, TLM/PLT, EOC; and the exact byte count
 * of the same, so that rate control counts every marker byte.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "pipeline/encoder_plan.h"
#include "tier2/packet_encoder.h"

namespace j2kc {

/** One tile-part: a run of consecutive packets of one tile. */
struct TilePartSpan {
    uint32_t first_packet = 0, num_packets = 0;
    int32_t component = -1;  ///< the single component its packets belong to, or -1
};

/** Splits a tile's packet sequence into tile-parts by the plan's rule (at most 255). */
std::vector<TilePartSpan> split_tile_parts(const EncoderPlan &plan, const std::vector<PacketRecord> &packets);

/** Exact sizes of the codestream for given packets: total and per component. */
struct CodestreamSizes {
    uint64_t total = 0;
    std::vector<uint64_t> component;  ///< bytes of tile-parts that hold one component only
};
CodestreamSizes measure_codestream(const EncoderPlan &plan, const std::vector<EncodedTilePackets> &tiles);

/** Bytes of the main header and EOC alone (with TLM for `tile_parts` entries). */
uint64_t fixed_overhead(const EncoderPlan &plan, size_t tile_parts);

/** The main header (SOC .. COM) with TLM room for `tile_parts` entries (their lengths zero). */
std::vector<uint8_t> main_header_bytes(const EncoderPlan &plan, size_t tile_parts);

/** Writes the finished codestream. */
std::vector<uint8_t> assemble_codestream(const EncoderPlan &plan, const std::vector<EncodedTilePackets> &tiles);

/**
 * Where component c's band b adds its step-fit sums: components with the
 * same planned steps (one QCD or QCC) share a slot, that of the first of
 * them, so their fitted steps stay equal.
 */
uint32_t step_fit_slot(const EncoderPlan &plan, uint32_t component, uint32_t band);

/** Bits of the frame's sample count (every component): the count_log2 of step_fit_shift. */
int step_fit_count_log2(const EncoderPlan &plan);

/**
 * Rewrites the QCD and QCCs of a finished codestream of a plan with
 * fitted_steps() with each band's step fitted to its reconstruction
 * (fit_step): sums[2 s] and sums[2 s + 1] are the sums of x * xh and xh^2
 * (step_fit_core.h) of slot s = step_fit_slot(plan, c, b), at most
 * 2 * num_bands(levels) * components entries. The header keeps its size.
 */
void write_fitted_steps(uint8_t *codestream, size_t size, const EncoderPlan &plan, const uint64_t *sums);

}  // namespace j2kc
