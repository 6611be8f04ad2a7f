/**
 * @file partition.h
 * @brief The partitions of ISO/IEC 15444-1 Annex B for one tile: tile-
 * components, resolutions, sub-bands, precincts and code-blocks, as flat
 * tables that the CPU stages walk and the CUDA stages copy to the device.
 *
 * All rectangles are half-open [x0, x1) x [y0, y1) in the coordinate system
 * of their own level: tile-components on the component grid, resolutions in
 * resolution coordinates, sub-bands and code-blocks in sub-band coordinates.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "codestream/markers.h"

namespace j2kc {

struct Rect {
    uint32_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    uint32_t width() const { return x1 - x0; }
    uint32_t height() const { return y1 - y0; }
    bool empty() const { return x1 <= x0 || y1 <= y0; }
    uint64_t area() const { return empty() ? 0 : uint64_t{width()} * height(); }
};

enum BandOrientation : uint8_t { kLL = 0, kHL = 1, kLH = 2, kHH = 3 };

/** One code-block, referenced from its precinct; all of a tile in one table. */
struct CodeBlock {
    Rect rect;  ///< in sub-band coordinates
    uint16_t component = 0;
    uint8_t resolution = 0;
    uint8_t band = 0;       ///< index into Resolution::bands
    uint32_t precinct = 0;  ///< index into Resolution::precincts
};

/** The code-blocks of one sub-band inside one precinct. */
struct PrecinctBand {
    Rect rect;  ///< sub-band coordinates, clipped to the band
    uint32_t cblks_x = 0, cblks_y = 0;
    uint32_t first_cblk = 0;  ///< index of the first (raster order) in TileLayout::code_blocks
    uint32_t num_cblks() const { return cblks_x * cblks_y; }
};

struct Precinct {
    Rect rect;                        ///< resolution coordinates, clipped to the resolution
    std::vector<PrecinctBand> bands;  ///< parallel to Resolution::bands
};

struct Band {
    BandOrientation orientation = kLL;
    Rect rect;                  ///< sub-band coordinates
    uint8_t quant_index = 0;    ///< 0 for LL, 3(r-1) + orientation for r > 0 (QCD order)
    uint8_t decomposition = 0;  ///< nb: decompositions the band went through (0 for NL=0)
};

struct Resolution {
    uint8_t level = 0;                                            ///< r, 0 = lowest
    Rect rect;                                                    ///< resolution coordinates
    uint8_t precinct_width_log2 = 15, precinct_height_log2 = 15;  ///< PPx, PPy
    uint8_t cblk_width_log2 = 6, cblk_height_log2 = 6;            ///< xcb', ycb'
    uint32_t precincts_x = 0, precincts_y = 0;
    uint32_t precinct_x_start = 0, precinct_y_start = 0;  ///< floor(trx0 / 2^PPx)
    std::vector<Band> bands;                              ///< LL at r = 0; HL, LH, HH above
    std::vector<Precinct> precincts;                      ///< raster order
    uint32_t num_precincts() const { return precincts_x * precincts_y; }
};

struct TileComponent {
    Rect rect;  ///< tcx0.. on the component grid
    uint8_t dx = 1, dy = 1;
    uint8_t levels = 0;
    std::vector<Resolution> resolutions;  ///< levels + 1 entries
};

struct TileLayout {
    uint32_t index = 0;
    Rect rect;  ///< tx0.. on the reference grid
    std::vector<TileComponent> components;
    std::vector<CodeBlock> code_blocks;
};

/** The rectangle of tile `index` on the reference grid (B.3). */
Rect tile_rect(const ImageSize &siz, uint32_t index);

/** The rectangle of a tile-component on the component grid (B.3). */
Rect tile_component_rect(const Rect &tile, const ComponentSize &component);

/** A sub-band's rectangle (B.5): orientation at decomposition level nb >= 1, or LL at nb. */
Rect band_rect(const Rect &tile_component, BandOrientation orientation, uint32_t nb);

/** Counts code-blocks and precincts of a tile before anything is allocated. */
struct PartitionCount {
    uint64_t code_blocks = 0;
    uint64_t precincts = 0;
    uint64_t samples = 0;
};
PartitionCount count_partition(const ImageSize &siz, const Codestream &cs, const Tile &tile);

/**
 * Builds the full partition of tile `tile.index`, with each component's
 * coding parameters from `cs` (tile headers over the main header).
 */
TileLayout build_partition(const ImageSize &siz, const Codestream &cs, const Tile &tile);

/**
 * build_partition(siz, cs, tile), shared: each thread keeps the partitions it
 * built last by their geometry (tile rectangle, component subsampling,
 * levels, code-block and precinct sizes), so that the frames of a sequence,
 * whose shape does not change, build theirs once. The layout is immutable and
 * stays valid as long as a holder keeps it.
 */
std::shared_ptr<const TileLayout> shared_partition(const ImageSize &siz, const Codestream &cs, const Tile &tile);

/** Same, from explicit per-component coding (the encoder's side). */
TileLayout build_partition(const ImageSize &siz, uint32_t tile_index, const std::vector<ComponentCoding> &coding);

}  // namespace j2kc
