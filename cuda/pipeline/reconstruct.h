/**
 * @file reconstruct.h
 * @brief The decoder's sample half for one tile: dequantisation (Annex E),
 * inverse DWT (Annex F), inverse MCT and DC level shift, clip and pack
 * (Annex G) into the caller's output planes. CPU reference here; the CUDA
 * backend runs the same stages' arithmetic, dequantisation fused into the
 * inverse DWT's loads (reconstruct.cu).
 */
#pragma once

#include "common/thread_pool.h"
#include "j2kc.h"
#include "pipeline/tile_coefficients.h"

namespace j2kc {

/**
 * Where tile-component planes go in the output image: the output component c
 * holds the samples from reference position origin[c] (after reduce) on.
 */
struct OutputPlacement {
    const j2kc_image *image = nullptr;
    std::vector<uint32_t> origin_x, origin_y;
};

/**
 * Whether the inverse MCT applies to the first three of the n output
 * components; throws INVALID_DATA when the stream asks for it over components
 * of different filters or sizes (both backends check here, before any kernel).
 */
bool tile_uses_mct(const TileCoefficients &tile, uint32_t n);

/** CPU: reconstructs the tile in place (the coefficients are consumed) and packs it;
 *  components (and the MCT group) run in parallel on `pool`. */
void reconstruct_tile_cpu(TileCoefficients &tile, const OutputPlacement &placement, ThreadPool &pool);

/**
 * GPU: dequantisation (Annex E, H) and inverse DWT (Annex F) of one
 * tile-component, queued on `stream` (a cudaStream_t). `plane` is p's Tier-1
 * plane on the device (p.stride apart). Each level dequantises its sub-bands
 * as it loads them from the plane, which is read, never written, and the
 * samples (int32 for the 5/3, float for the 9/7) go to `out`,
 * p.out_rect.width() apart. With no level to invert, the plane is
 * dequantised in place and `out` is not used. The samples equal
 * reconstruct_tile_cpu's before its pack.
 *
 * The levels come in two parts, so that the small, latency-bound lower
 * levels of several tile-components can run side by side on streams of
 * their own: the lower levels (all but the top two) write to `lower`
 * scratch, the upper two to `upper` scratch and `out`. `out`, `upper`,
 * `lower` and the plane must not overlap.
 */
void reconstruct_component_gpu(const ComponentPlane &p, int32_t *plane, void *out, void *scratch, void *stream);

/** Scratch reconstruct_component_gpu needs (bytes): upper, then lower. */
size_t reconstruct_gpu_scratch_bytes(const ComponentPlane &p);
/** Bytes of `upper` scratch: the output of the level below the top. */
size_t reconstruct_gpu_upper_bytes(const ComponentPlane &p);
/** Bytes of `lower` scratch: the outputs of the two levels under that one. */
size_t reconstruct_gpu_lower_bytes(const ComponentPlane &p);

/** Whether reconstruct_component_gpu leaves p's samples in its plane (no level to invert) rather than in `out`. */
inline bool reconstructs_in_place(const ComponentPlane &p) { return p.levels == p.levels_to_skip; }
/** Whether p has lower levels (more than two to invert). */
bool reconstruct_has_lower_levels(const ComponentPlane &p);

/** The lower levels alone (none: nothing is queued). */
void reconstruct_lower_gpu(const ComponentPlane &p, int32_t *plane, void *lower, void *stream);
/** The upper levels, after the lower ones (whose last output `lower` holds), or the in-place dequantisation. */
void reconstruct_upper_gpu(const ComponentPlane &p, int32_t *plane, void *out, void *upper, void *lower, void *stream);

/** Bytes a component's samples span from its data pointer (what a copy of it must move). */
inline uint64_t component_span(const j2kc_component &c)
{
    if (c.width == 0 || c.height == 0) return 0;
    return uint64_t(c.height - 1) * uint64_t(c.row_stride) + uint64_t(c.width - 1) * c.sample_stride +
           c.bytes_per_sample;
}

/** The output component rebased on one tile's rectangle (data at its first sample). */
j2kc_component tile_view(const j2kc_component &out, const Rect &rect, uint32_t origin_x, uint32_t origin_y);

}  // namespace j2kc
