/**
 * @file tile_decoder.h
 * @brief The decoder's CPU half for one tile: Tier-2 (packet headers) and
 * Tier-1 (code-block decoding, spread over the thread pool), producing the
 * tile's coefficients for the sample stages.
 */
#pragma once

#include <cstdint>

#include "codestream/markers.h"
#include "common/thread_pool.h"
#include "pipeline/tile_coefficients.h"

namespace j2kc {

struct TileDecodeOptions {
    uint32_t reduce = 0;      ///< top resolution levels to discard
    uint32_t max_layers = 0;  ///< 0 = all
};

/**
 * Decodes Tier-2 and Tier-1 of `tile` into `out` (buffers reused when their
 * sizes fit). Code-blocks of discarded resolutions are not decoded.
 */
void decode_tile_coefficients(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                              ThreadPool &pool, TileCoefficients &out);

/**
 * Bytes of working memory decode_tile_coefficients and the CPU sample stages
 * need for `tile`: coefficients (and float planes for 9/7 components), the
 * partition's code-block and precinct records and Tier-2 state. Computed from
 * counts alone, so a limit can be checked before anything is allocated: small
 * code-blocks and precincts cost far more than 4 bytes a sample.
 */
uint64_t tile_working_memory(const Codestream &cs, const Tile &tile);

/** The reference-grid position of a component's first output sample after reduce. */
inline uint32_t reduced_origin(uint32_t image_origin, uint32_t subsampling, uint32_t reduce)
{
    const uint64_t d = uint64_t{subsampling} << reduce;
    return static_cast<uint32_t>((image_origin + d - 1) / d);
}

}  // namespace j2kc
