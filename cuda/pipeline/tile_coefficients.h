/**
 * @file tile_coefficients.h
 * @brief The seam between the decoder's CPU half (Tier-2, Tier-1) and its
 * sample half (dequantisation, inverse DWT, inverse MCT, clip and pack), which
 * runs on the CPU or the GPU: one tile's quantisation indices in Tier-1's
 * output scale, laid out per tile-component as the inverse DWT expects.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "codestream/markers.h"
#include "geometry/partition.h"
#include "quant/quant.h"

namespace j2kc {

struct ComponentPlane {
    Rect tc_rect;                ///< tile-component on the component grid
    uint8_t levels = 0;          ///< NL of this tile-component
    uint8_t levels_to_skip = 0;  ///< reduce: top levels not reconstructed
    Wavelet wavelet = Wavelet::kReversible53;
    Rect out_rect;      ///< the kept resolution's rect (ceil(tc_rect / 2^skip))
    size_t stride = 0;  ///< elements per row of `data`
    /// Tier-1 output (sign * (2M + r), see tier1.h), out_rect.width() x height(),
    /// in memory the caller places (a reused host vector, or a pinned upload
    /// buffer shared by the frame's planes); code-blocks that were not coded
    /// are written as zero, so the memory need not be cleared beforehand.
    int32_t *data = nullptr;
    DequantizeParams dequant;  ///< per-band steps and ROI shift over the kept resolutions
    uint8_t precision = 8;
    bool is_signed = false;

    size_t samples() const { return stride * out_rect.height(); }
};

struct TileCoefficients {
    std::vector<ComponentPlane> components;
    bool mct = false;                  ///< inverse RCT/ICT over components 0..2
    uint32_t corrupt_code_blocks = 0;  ///< Tier-1 found them invalid: decoded as zero
};

}  // namespace j2kc
