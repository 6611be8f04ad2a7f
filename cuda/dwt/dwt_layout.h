/**
 * @file dwt_layout.h
 * @brief Resolution rectangles of ISO/IEC 15444-1 B-14 (ceil(tc / 2^(NL-r)))
 * and the Mallat-layout sizes they induce, header-only so that quant/ and
 * pipeline/ can use them without linking the DWT.
 */
#pragma once

#include <cstdint>

#include "codestream/markers.h"
#include "common/int_math.h"
#include "common/status.h"
#include "geometry/partition.h"

namespace j2kc {

/** @brief Rect of resolution r (0..levels) of a tile-component (B-14). */
inline Rect dwt_resolution_rect(const Rect &tile_component, int levels, int r)
{
    const uint32_t s = static_cast<uint32_t>(levels - r);
    return {ceil_div_pow2(tile_component.x0, s), ceil_div_pow2(tile_component.y0, s),
            ceil_div_pow2(tile_component.x1, s), ceil_div_pow2(tile_component.y1, s)};
}

/**
 * Sizes of every resolution of one tile-component, i.e. the nested regions
 * of the Mallat layout: resolution r occupies [0, width[r]) x [0, height[r]).
 * Plain data: copied by value into CUDA kernels.
 */
struct DwtLayout {
    uint32_t levels = 0;
    uint32_t width[kMaxResolutions] = {};
    uint32_t height[kMaxResolutions] = {};
};

/** @brief The Mallat sizes of a tile-component with `levels` decompositions. */
inline DwtLayout dwt_layout(const Rect &tile_component, int levels)
{
    J2KC_CHECK_ARG(levels >= 0 && levels <= kMaxLevels, "DWT: %d levels (0..32)", levels);
    J2KC_CHECK_ARG(tile_component.x1 >= tile_component.x0 && tile_component.y1 >= tile_component.y0,
                   "DWT: inverted rect");
    DwtLayout l;
    l.levels = static_cast<uint32_t>(levels);
    for (int r = 0; r <= levels; ++r) {
        const Rect rr = dwt_resolution_rect(tile_component, levels, r);
        l.width[r] = rr.width();
        l.height[r] = rr.height();
    }
    return l;
}

}  // namespace j2kc
