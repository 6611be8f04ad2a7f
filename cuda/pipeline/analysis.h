/**
 * @file analysis.h
 * @brief The CUDA encoder's sample stages of one irreversible
 * tile-component after the colour transform: the forward 9/7 DWT (Annex F)
 * with the scalar quantisation of Annex E in its stores (analysis.cu). The
 * indices equal the CPU's dwt97_forward followed by quantize_ref.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "geometry/partition.h"
#include "quant/quant.h"

namespace j2kc {

/** Device scratch analyse_component_gpu needs for tile-component `rect` (bytes): about a quarter of its samples. */
size_t analysis_gpu_scratch_bytes(const Rect &rect);

/**
 * Queues on `stream` (a cudaStream_t) the forward 9/7 transform of the
 * `levels` decompositions of tile-component `rect`, whose samples `plane`
 * holds (rows `stride` apart), and the quantisation of its sub-bands with
 * `q` into `indices` (Mallat layout, rows `indices_stride` apart). The plane
 * is consumed: the transform keeps LL bands of lower levels there. Device
 * pointers; `indices` must not overlap the plane or the scratch.
 */
void analyse_component_gpu(float *plane, size_t stride, int32_t *indices, size_t indices_stride, const Rect &rect,
                           int levels, const QuantizeParams &q, void *scratch, void *stream);

}  // namespace j2kc
