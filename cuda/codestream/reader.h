/**
 * @file reader.h
 * @brief Codestream parser (ISO/IEC 15444-1 Annex A): SOC, main header,
 * tile-parts, EOC, into the structs of markers.h. Built for hostile input:
 * every field is validated against the standard and the caller's limits
 * before anything is sized from it.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "codestream/markers.h"

namespace j2kc {

/** Resource limits applied while parsing (exceeding one fails with J2KC_ERR_LIMIT). */
struct ParseLimits {
    uint64_t max_pixels = 1ull << 31;   ///< (Xsiz - XOsiz) * (Ysiz - YOsiz)
    uint32_t max_components = 16384;    ///< Csiz
    uint32_t max_tiles = 65535;         ///< tiles in the SIZ grid
    uint64_t max_memory = 16ull << 30;  ///< 4 bytes per decoded sample, all components
    /// Tiles x Csiz. The parser's own work follows the header bytes, so it
    /// sets no bound; the decoder, whose work is per tile-component
    /// (partitions, packet walks), sets kDecoderMaxTileComponents: a stream of
    /// 65535 tiles x 16384 components is small in samples but hours to decode.
    uint64_t max_tile_components = UINT64_MAX;
};

/// The decoder's default for ParseLimits::max_tile_components (j2kc_decoder_config).
constexpr uint64_t kDecoderMaxTileComponents = 1ull << 20;

/**
 * @brief Parses a raw codestream (SOC .. EOC).
 *
 * Tolerated, with a note in Codestream::warnings: missing EOC, trailing
 * garbage after the last tile-part, a last tile-part cut short (its data is
 * kept, Tile::truncated set), unknown marker segments (skipped).
 * Throws j2kc::Error: INVALID_DATA for anything that breaks Annex A,
 * UNSUPPORTED for legal features outside Part 1 other than HT code-blocks
 * (ISO/IEC 15444-15, which are read: CAP/Ccap15, style 0x40, and MIXED
 * tile-components of HT and Part-1 blocks, style 0xC0), Part 2 markers and
 * transforms, LIMIT when
 * `limits` would be exceeded. With `tile_data_in_place`, the data of a tile
 * of one tile-part is viewed in `data` (TileData), which must then outlive
 * the result; otherwise every tile's data is copied.
 */
Codestream parse_codestream(const uint8_t *data, size_t size, const ParseLimits &limits = {},
                            bool tile_data_in_place = false);

/** One marker (segment) found by list_marker_segments. */
struct MarkerSegment {
    uint16_t marker = 0;  ///< e.g. kCOD
    uint64_t offset = 0;  ///< of the marker's first byte (0xFF)
    uint32_t length = 0;  ///< the Lxxx field (excludes the marker), 0 for SOC/SOD/EOC/0xFF3x
    int32_t tile = -1;    ///< Isot of the tile-part whose header holds it, -1 in the main header
};

/**
 * @brief Lists the marker segments of a codestream in order: main header,
 * then per tile-part SOT, its header segments and SOD (packet data is
 * skipped with Psot), then EOC. Raw-level view for profile checks and tests.
 * Stops quietly where the data ends; throws INVALID_DATA on broken structure.
 */
std::vector<MarkerSegment> list_marker_segments(const uint8_t *data, size_t size);

/** @brief Short name of a marker ("COD"), or "unknown". */
const char *marker_name(uint16_t marker);

}  // namespace j2kc
