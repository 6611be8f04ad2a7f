/**
 * @file color.h
 * @brief ISO/IEC 15444-1 Annex G: sample unpacking with the DC level shift,
 * the RCT and ICT, and the decoder's inverse path (inverse transform, level
 * shift, clip, pack into any j2kc_component layout), on the CPU
 * (color_cpu.cpp) and on the GPU (color.cu, bit-identical). The per-sample
 * arithmetic and the ICT's float operation order are in color_ops.h.
 *
 * Planes are w x h arrays of int32 (reversible path) or float (irreversible
 * path) with a row stride in elements. A j2kc_component may be planar or
 * packed (sample_stride), 1/2/4-byte little-endian words, with the value at
 * bit `shift` and `precision` bits wide (1..32, precision + shift <= 8 *
 * bytes_per_sample). To work on a tile, pass a component whose data points at
 * the tile's first sample and whose width/height are the tile's.
 *
 * MCT (`mct` true) applies to components 0..2, which must have equal sizes;
 * further components are only level shifted. The integer planes carry the
 * RCT, the float planes the ICT.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "color/color_ops.h"
#include "j2kc.h"

namespace j2kc {

/** @brief Throws INVALID_ARG unless c is a layout these functions can read/write. */
void check_component_layout(const j2kc_component &c);
/** @brief Throws INVALID_ARG unless components 0..2 exist and have one size (what MCT needs). */
void check_mct(const j2kc_component *c, uint32_t count);

/* ---- CPU reference: single stages ---- */

/** @brief Host component -> DC-shifted int32 plane (G.1.2). */
void unpack_component(const j2kc_component &c, int32_t *plane, size_t stride);
/** @brief Same into a float plane (exact for precision <= 24). */
void unpack_component(const j2kc_component &c, float *plane, size_t stride);
/**
 * @brief int32 plane in format `source` -> inverse level shift, clip, rescale
 * to out.precision, pack into host component `out` (see pack_sample).
 */
void pack_component(const int32_t *plane, size_t stride, SampleFormat source, const j2kc_component &out);
/** @brief Float plane: float_to_sample (round half even) then as above. */
void pack_component(const float *plane, size_t stride, SampleFormat source, const j2kc_component &out);

void rct_forward(int32_t *const planes[3], size_t stride, uint32_t width, uint32_t height);
void rct_inverse(int32_t *const planes[3], size_t stride, uint32_t width, uint32_t height);
void ict_forward(float *const planes[3], size_t stride, uint32_t width, uint32_t height);
void ict_inverse(float *const planes[3], size_t stride, uint32_t width, uint32_t height);

/* ---- CPU reference: the fused encoder front-end / decoder back-end ---- */

/** @brief Encoder: components -> level shift -> RCT (if mct) -> int32 planes. */
void color_forward_ref(const j2kc_component *components, uint32_t count, bool mct, int32_t *const *planes,
                       const size_t *strides);
/** @brief Encoder: components -> level shift -> ICT (if mct) -> float planes. */
void color_forward_ref(const j2kc_component *components, uint32_t count, bool mct, float *const *planes,
                       const size_t *strides);
/**
 * @brief Decoder: int32 planes (formats `source`) -> inverse RCT (if mct) ->
 * level shift, clip, pack into `out` (out[i].width x out[i].height samples).
 */
void color_inverse_ref(const int32_t *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out);
/** @brief Decoder: float planes -> inverse ICT (if mct) -> round, shift, clip, pack. */
void color_inverse_ref(const float *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out);

/* ---- CUDA (color.cu): same contracts, device data, asynchronous on `stream` ---- */

/** @brief components[i].data and planes[i] are device pointers; the arrays themselves are host arrays. */
void color_forward_gpu(const j2kc_component *components, uint32_t count, bool mct, int32_t *const *planes,
                       const size_t *strides, void *stream);
void color_forward_gpu(const j2kc_component *components, uint32_t count, bool mct, float *const *planes,
                       const size_t *strides, void *stream);
void color_inverse_gpu(const int32_t *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out, void *stream);
void color_inverse_gpu(const float *const *planes, const size_t *strides, const SampleFormat *source, uint32_t count,
                       bool mct, const j2kc_component *out, void *stream);

}  // namespace j2kc
