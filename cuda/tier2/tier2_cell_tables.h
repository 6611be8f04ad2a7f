/**
 * @file tier2_cell_tables.h
 * @brief Host side of Tier-2 on the GPU: the frame's cell table and packet
 * geometry (B.12 packet order with POC, tile-part split, TLM entries of
 * A.7.1 in the main header) as flat arrays, built once per geometry and
 * copied to the device by Tier2Gpu (or walked on the host by the tests).
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tier2/tier2_cell_core.h"
#include "tier2/tier2_cuda.h"

namespace j2kc {

struct T2gHostTables {
    std::vector<T2gPrecinct> precincts;
    std::vector<T2gBand> bands;
    std::vector<uint32_t> precinct_packets;
    std::vector<T2gPacket> packets;
    std::vector<T2gTilePart> tile_parts;
    std::vector<uint32_t> block_precinct;
    std::vector<T2gRun> runs;              ///< every precinct's, in precinct order
    std::vector<uint64_t> fixed_cell_len;  ///< cell lengths known now: main header, EOC (others 0)
    std::vector<uint8_t> main_header;
    T2gTables scalars;         ///< counts and flags (pointers null)
    uint64_t fixed_bytes = 0;  ///< main header + 14 per tile-part + EOC
};

/** Builds the tables; throws INVALID_ARG on an inconsistent configuration. */
T2gHostTables build_t2g_tables(const Tier2GpuConfig &config, const std::vector<const TileLayout *> &layouts);

/** The message of a kernel error (status words as T2gScratch::status). */
std::string t2g_error_message(const uint32_t status[4]);

/** The j2kc_status an error maps to. */
j2kc_status t2g_error_status(uint32_t code);

}  // namespace j2kc
