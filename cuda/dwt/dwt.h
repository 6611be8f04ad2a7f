/**
 * @file dwt.h
 * @brief ISO/IEC 15444-1 Annex F: forward (encoder) and inverse (decoder)
 * 2-D discrete wavelet transform of one tile-component, 5/3 reversible on
 * int32 and 9/7 irreversible on float32, on the CPU (dwt_cpu.cpp) and on the
 * GPU (dwt.cu, bit-identical).
 *
 * Layout contract. `data` holds the w x h samples of the tile-component rect
 * [x0, x1) x [y0, y1) (row stride `stride` elements). After a forward
 * transform with L levels the sub-bands lie in place, Mallat style: for every
 * resolution r >= 1 (rect R_r = ceil(rect / 2^(L-r)), size w_r x h_r) the
 * region [0, w_r) x [0, h_r) holds LL(r-1) in [0, w_{r-1}) x [0, h_{r-1}),
 * HL in [w_{r-1}, w_r) x [0, h_{r-1}), LH in [0, w_{r-1}) x [h_{r-1}, h_r) and
 * HH in the rest. w_{r-1} = ceil(x1_r/2) - ceil(x0_r/2): the parity of each
 * resolution's origin decides whether its first column is low- or high-pass.
 * These are exactly the sizes of geometry/partition.h's band rects.
 *
 * Order of the 1-D passes follows the standard: forward = columns then rows
 * at each level (2D_SD), inverse = rows then columns (2D_SR).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "dwt/dwt_layout.h"
#include "geometry/partition.h"

namespace j2kc {

/* ---- CPU reference ---------------------------------------------------- */

/** @brief Forward 5/3 with `levels` (0..32) decompositions, in place. */
void dwt53_forward(int32_t *data, size_t stride, const Rect &rect, int levels);

/**
 * @brief Inverse 5/3. The data holds the Mallat layout of `levels`
 * decompositions; the inverse stops `levels_to_skip` levels early, leaving
 * resolution levels - levels_to_skip (rect dwt_resolution_rect(rect, levels,
 * levels - levels_to_skip)) reconstructed at the top-left of data.
 */
void dwt53_inverse(int32_t *data, size_t stride, const Rect &rect, int levels, int levels_to_skip = 0);

/** @brief Forward 9/7 (float, F-8 lifting, low *1/K, high *K), in place. */
void dwt97_forward(float *data, size_t stride, const Rect &rect, int levels);

/** @brief Inverse 9/7 (F-7), same conventions as dwt53_inverse. */
void dwt97_inverse(float *data, size_t stride, const Rect &rect, int levels, int levels_to_skip = 0);

/* ---- CUDA (dwt.cu) ---------------------------------------------------- */

/**
 * @brief Device scratch the GPU forward transforms need for `rect` (bytes):
 * about 1.25 x rect.area() 4-byte elements, a copy of the samples and the
 * first level's LL band. Allocate once per geometry (pool).
 */
size_t dwt_gpu_scratch_bytes(const Rect &rect);
/**
 * @brief Device scratch the GPU inverse transforms need for `rect` (bytes):
 * about 1.25 x rect.area() 4-byte elements, two levels' outputs; the same
 * as dwt_gpu_scratch_bytes(rect).
 */
size_t dwt_gpu_inverse_scratch_bytes(const Rect &rect);

/**
 * @brief GPU versions: `data` and `scratch` are device pointers (scratch of
 * dwt_gpu_scratch_bytes for the forward, dwt_gpu_inverse_scratch_bytes for
 * the inverse), `stream` a cudaStream_t (nullptr = default stream). Asynchronous: kernels are queued on
 * the stream; results equal the CPU reference bit for bit. Errors from the
 * CUDA runtime throw j2kc::Error(J2KC_ERR_CUDA).
 */
void dwt53_forward_gpu(int32_t *data, size_t stride, const Rect &rect, int levels, void *scratch, void *stream);
void dwt53_inverse_gpu(int32_t *data, size_t stride, const Rect &rect, int levels, int levels_to_skip, void *scratch,
                       void *stream);
void dwt97_forward_gpu(float *data, size_t stride, const Rect &rect, int levels, void *scratch, void *stream);
void dwt97_inverse_gpu(float *data, size_t stride, const Rect &rect, int levels, int levels_to_skip, void *scratch,
                       void *stream);

}  // namespace j2kc
