/**
 * @file dwt_tile.cuh
 * @brief What the tiled GPU transforms of one DWT level share, forward
 * (dwt_forward.cuh) and inverse (dwt_inverse.cuh): a block holds a tile of
 * the level with a margin of samples on every side in shared memory and
 * runs a whole 1-D transform along each axis there.
 *
 * A sample's value after the lifting steps depends only on the samples within
 * one step per lifting step around it, so the margin's samples, whose
 * neighbours outside the tile are missing, are left as they are and only
 * they come out wrong; the tile's inner part is what the block writes.
 */
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "common/cuda_util.cuh"
#include "dwt/dwt_lifting.h"

namespace j2kc {
namespace dwt_tile {

/**
 * The tile of one block: kSide x kSide samples of output, and the margin of
 * samples around it that the lifting steps reach (one a step: four for the
 * 9/7, two for the 5/3), kSpan a side in shared memory, rows kPitch apart
 * (one more than a row, against bank conflicts).
 */
template <uint32_t kSideOfTile>
struct TileShape {
    static constexpr uint32_t kSide = kSideOfTile;
    static constexpr uint32_t kMargin = 4;
    static constexpr uint32_t kSpan = kSide + 2 * kMargin;
    static constexpr uint32_t kPitch = kSpan + 1;
};
/// A block: a warp's lanes across, kTileRows warps (tile_rows).
constexpr uint32_t kTileLanes = 32;
constexpr uint32_t kMaxGridY = 65535;

/** A tile's extent along one axis: run offsets [lo, hi) loaded, [out_lo, out_hi) written. */
template <class Shape>
struct TileAxis {
    uint32_t lo, hi, out_lo, out_hi;
    __device__ TileAxis(uint32_t tile, uint32_t n)
    {
        out_lo = tile * Shape::kSide;
        out_hi = min(out_lo + Shape::kSide, n);
        lo = out_lo > Shape::kMargin ? out_lo - Shape::kMargin : 0;
        hi = min(out_hi + Shape::kMargin, n);
    }
    __device__ uint32_t size() const { return hi - lo; }
    /**
     * Whether the tile loads its whole span along this axis: a margin on
     * both sides of a whole tile side, so that no loaded sample is the run's
     * first (lo is at least kSide - kMargin) and only a tile that ends
     * exactly kMargin before the run's end holds its last.
     */
    __device__ bool whole() const { return hi - lo == Shape::kSpan; }
};

/**
 * The lifting steps of `Steps` along one axis of the tile in s: kAlongX lifts
 * the tile's rows, else its columns. Steps::kCount steps; step i updates the
 * samples of the run's own parity when Steps::on_parity(i), the others
 * otherwise, with Steps::apply (or Steps::apply_scaling when kScaling: the
 * samples are not scaled yet, and the steps scale them; a sample a step
 * leaves unscaled is one it does not update, in the margin, and so is every
 * sample that reads it). The warp's lanes take different lines (rows or
 * columns), so that their shared-memory accesses fall in different banks;
 * the rows of the block take the line's samples. A sample whose neighbour
 * lies outside the loaded part (a cut, not the run's end, where
 * dwt_left/dwt_right reflect inside) is not updated: it is in the margin.
 */
template <class T, class Steps, class Shape, bool kAlongX, bool kScaling, uint32_t kTileRows>
__device__ void lift_tile(T *s, const DwtRun &r, const TileAxis<Shape> &a, uint32_t lines)
{
    if (r.n < 2) return;
    constexpr uint32_t kSpan = Shape::kSpan, kPitch = Shape::kPitch;
    constexpr uint32_t kStep = kAlongX ? 1 : kPitch;  // between a line's samples
    const uint32_t lane = threadIdx.x, row = threadIdx.y;
#pragma unroll
    for (int step = 0; step < Steps::kCount; ++step) {
        const uint32_t parity = Steps::on_parity(step) ? r.parity : 1 - r.parity;
        const uint32_t k0 = a.lo + ((a.lo ^ parity) & 1u);  // the first offset of that parity loaded
        const uint32_t count = k0 < a.hi ? (a.hi - k0 + 1) / 2 : 0;
#pragma unroll
        for (uint32_t t0 = 0; t0 < kSpan; t0 += kTileLanes)
#pragma unroll
            for (uint32_t j0 = 0; j0 < kSpan / 2; j0 += kTileRows) {
                const uint32_t t = t0 + lane, j = j0 + row;
                if (t >= lines || j >= count) continue;
                const uint32_t k = k0 + 2 * j, l = dwt_left(k), rr = dwt_right(k, r.n);
                if (l < a.lo || rr >= a.hi) continue;
                T *line = s + (kAlongX ? t * kPitch : t);
                T &x = line[(k - a.lo) * kStep];
                const T left = line[(l - a.lo) * kStep], right = line[(rr - a.lo) * kStep];
                if constexpr (kScaling)
                    x = Steps::apply_scaling(step, x, left, right);
                else
                    x = Steps::apply(step, x, left, right);
            }
        __syncthreads();
    }
}

/**
 * lift_tile for an axis the tile loads whole (TileAxis::whole): every line
 * then updates the same samples at the same offsets, with no reflection and
 * no margin check a sample, which are most of lift_tile's instructions on a
 * large level. A step updates, of its parity, the kSpan / 2 - 1 samples whose
 * two neighbours are loaded: from offset 1 or 2. Where the span ends at the
 * run's end, lift_tile would update the last sample from its reflected
 * neighbour; here it is left as at a cut, which only the margin's samples
 * read, so the tile's inner part is the same.
 */
template <class T, class Steps, class Shape, bool kAlongX, bool kScaling, uint32_t kTileRows>
__device__ void lift_whole_span(T *s, const DwtRun &r, const TileAxis<Shape> &a, uint32_t lines)
{
    constexpr uint32_t kSpan = Shape::kSpan, kPitch = Shape::kPitch;
    constexpr uint32_t kStep = kAlongX ? 1 : kPitch;  // between a line's samples
    constexpr uint32_t kUpdated = kSpan / 2 - 1;      // samples a line a step
    const uint32_t lane = threadIdx.x, row = threadIdx.y;
    // Offset of the first sample of the run's own parity with both neighbours loaded.
    const uint32_t own_first = 2 - ((a.lo ^ r.parity) & 1u);
#pragma unroll
    for (int step = 0; step < Steps::kCount; ++step) {
        const uint32_t first = Steps::on_parity(step) ? own_first : 3 - own_first;
#pragma unroll
        for (uint32_t t0 = 0; t0 < kSpan; t0 += kTileLanes)
#pragma unroll
            for (uint32_t j0 = 0; j0 < kUpdated; j0 += kTileRows) {
                const uint32_t t = t0 + lane, j = j0 + row;
                if (t >= lines || (j0 + kTileRows > kUpdated && j >= kUpdated)) continue;
                T *x = s + (kAlongX ? t * kPitch : t) + (first + 2 * j) * kStep;
                if constexpr (kScaling)
                    *x = Steps::apply_scaling(step, *x, x[-int32_t{kStep}], x[kStep]);
                else
                    *x = Steps::apply(step, *x, x[-int32_t{kStep}], x[kStep]);
            }
        __syncthreads();
    }
}

/** The lifting steps along one axis of the tile: lift_whole_span where it loads the whole span, else lift_tile. */
template <class T, class Steps, class Shape, bool kAlongX, bool kScaling, uint32_t kTileRows>
__device__ void lift_axis(T *s, const DwtRun &r, const TileAxis<Shape> &a, uint32_t lines)
{
    if (a.whole())
        lift_whole_span<T, Steps, Shape, kAlongX, kScaling, kTileRows>(s, r, a, lines);
    else
        lift_tile<T, Steps, Shape, kAlongX, kScaling, kTileRows>(s, r, a, lines);
}

/**
 * Warps a block of a level with `tiles` tiles takes. A level of few tiles
 * (a few hundred samples across) is latency-bound: each tile is a chain of
 * ten barriers and dependent shared-memory steps, and more warps a tile make
 * each warp's part of the chain shorter. A level of many tiles is bound by
 * its instructions, and blocks of 8 warps keep four to an SM.
 */
inline uint32_t tile_rows(uint64_t tiles)
{
    const uint64_t sms = multiprocessor_count();
    if (tiles * 2 <= sms) return 24;
    return tiles <= 8 * sms ? 16 : 8;
}

/**
 * Calls `launch` with std::integral_constant<uint32_t, tile_rows(tiles)>:
 * the level kernels take their warps a tile as a template parameter, so that
 * their row loops unroll.
 */
template <class Launch>
void with_tile_rows(uint64_t tiles, Launch &&launch)
{
    switch (tile_rows(tiles)) {
    case 24: launch(std::integral_constant<uint32_t, 24>{}); break;
    case 16: launch(std::integral_constant<uint32_t, 16>{}); break;
    default: launch(std::integral_constant<uint32_t, 8>{}); break;
    }
}

/** Tiles of a side of n samples. */
constexpr uint32_t tiles_along(uint32_t n, uint32_t side) { return n / side + (n % side != 0); }

}  // namespace dwt_tile
}  // namespace j2kc
