/**
 * @file band_layout.h
 * @brief Where each sub-band lies in a tile-component plane after the DWT
 * (the Mallat layout of dwt/dwt.h), in terms of geometry/partition.h's rects.
 */
#pragma once

#include "geometry/partition.h"

namespace j2kc {

/** The sub-band's region in its tile-component plane. */
inline Rect band_region(const TileComponent &tc, const Resolution &res, const Band &band)
{
    uint32_t x = 0, y = 0;
    if (res.level > 0) {
        const Rect &lower = tc.resolutions[res.level - 1].rect;
        if (band.orientation == kHL || band.orientation == kHH) x = lower.width();
        if (band.orientation == kLH || band.orientation == kHH) y = lower.height();
    }
    return {x, y, x + band.rect.width(), y + band.rect.height()};
}

/** The code-block's top-left sample in its tile-component plane. */
inline void code_block_origin(const TileComponent &tc, const CodeBlock &cb, uint32_t &x, uint32_t &y)
{
    const Resolution &res = tc.resolutions[cb.resolution];
    const Band &band = res.bands[cb.band];
    const Rect region = band_region(tc, res, band);
    x = region.x0 + cb.rect.x0 - band.rect.x0;
    y = region.y0 + cb.rect.y0 - band.rect.y0;
}

/** Calls fn(band, region) for every sub-band of resolutions 0..max_resolution. */
template <typename F>
void for_each_band(const TileComponent &tc, F &&fn, int max_resolution = -1)
{
    const int top = max_resolution < 0 ? tc.levels : max_resolution;
    for (int r = 0; r <= top; ++r) {
        const Resolution &res = tc.resolutions[r];
        for (const Band &band : res.bands) fn(band, band_region(tc, res, band));
    }
}

}  // namespace j2kc
