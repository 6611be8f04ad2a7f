/**
 * @file dwt_inverse.cuh
 * @brief The GPU inverse 2-D DWT of ISO/IEC 15444-1 Annex F (2D_SR), one
 * tiled kernel a level, for dwt.cu and for the decoder's reconstruction
 * (pipeline/reconstruct.cu), which differ only in where a level's sub-bands
 * come from: a `Source` gives the de-interleaved sample at (px, py), so that
 * the decoder can dequantise the Tier-1 plane as it loads it instead of in a
 * pass of its own.
 *
 * Each block takes a tile of the level's output with its margin
 * (dwt_tile.cuh), loads it from the four sub-bands (interleaving and scaling
 * as it loads), runs every row step and then every column step in shared
 * memory, and writes the tile's inner part. Along an axis where the tile
 * loads its whole span (every tile but those at the level's edges) the
 * steps run without margin checks (dwt_tile::lift_axis). Each sample goes
 * through the same operations in the same order as in dwt_cpu.cpp (rows,
 * then columns), so the results are the CPU's bit for bit.
 */
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "dwt/dwt_lifting.h"
#include "dwt/dwt_tile.cuh"
#include "geometry/partition.h"

namespace j2kc {
namespace dwt_inverse {

using dwt_tile::kMaxGridY;
using dwt_tile::kTileLanes;
using Tile = dwt_tile::TileShape<64>;
using TileAxis = dwt_tile::TileAxis<Tile>;
constexpr uint32_t kTileSide = Tile::kSide, kSpan = Tile::kSpan, kPitch = Tile::kPitch;

__device__ __forceinline__ int32_t scale_inv(int32_t v, const DwtRun &r, bool) { return dwt53_single_inv(r, v); }
__device__ __forceinline__ float scale_inv(float v, const DwtRun &r, bool high)
{
    return dwt_fmul(v, dwt97_scale_inv(r, high));
}

/** One inverse lifting step of the filter for T, as dwt_cpu.cpp's order lists them. */
template <class T>
struct InverseSteps;
template <>
struct InverseSteps<int32_t> {
    static constexpr int kCount = 2;
    /// The 5/3 scales only single-sample runs (dwt53_single_inv).
    static constexpr bool kScales = false;
    /** Step i: whether it updates the samples of the run's own parity, and the sample's new value. */
    __device__ static bool on_parity(int i) { return i == 0; }
    __device__ static int32_t apply(int i, int32_t x, int32_t l, int32_t r)
    {
        return i == 0 ? lift53_update_inv(x, l, r) : lift53_predict_inv(x, l, r);
    }
    __device__ static int32_t apply_scaling(int i, int32_t x, int32_t l, int32_t r) { return apply(i, x, l, r); }
};
template <>
struct InverseSteps<float> {
    static constexpr int kCount = 4;
    static constexpr bool kScales = true;
    __device__ static bool on_parity(int i) { return (i & 1) == 0; }
    __device__ static float apply(int i, float x, float l, float r)
    {
        const float c = i == 0 ? kDwtDelta : i == 1 ? kDwtGamma : i == 2 ? kDwtBeta : kDwtAlpha;
        return lift97_inv(x, l, r, c);
    }
    /**
     * Step i on samples that have not been scaled yet (dwt97_scale_inv of a
     * run of two or more: low-pass by K, high-pass by 1/K): the first step
     * scales its low-pass sample and both high-pass neighbours as it reads
     * them, the second its high-pass sample, which the first step had read
     * but not written; every later step reads samples scaled by then. Each
     * sample is still multiplied once, before its first step, as a pass of
     * its own would do, so the values are the same.
     */
    __device__ static float apply_scaling(int i, float x, float l, float r)
    {
        if (i == 0) return apply(i, dwt_fmul(x, kDwtK), dwt_fmul(l, kDwtInvK), dwt_fmul(r, kDwtInvK));
        if (i == 1) return apply(i, dwt_fmul(x, kDwtInvK), l, r);
        return apply(i, x, l, r);
    }
};

/** Where a level's output goes: w x h samples, rows `stride` elements apart. */
template <class T>
struct LevelOutput {
    T *data;
    size_t stride;
};

/**
 * One level of the inverse 2-D transform over tiles: the level's output from
 * its four sub-bands, read through `src` (src.load(px, py, high_x, high_y):
 * the sample at (px, py) of the de-interleaved layout, in the band that
 * high_x and high_y name). The loops have fixed trip counts, so that each
 * thread's loads and stores are issued together rather than one latency
 * after another.
 */
template <class T, class Source, uint32_t kTileRows>
__global__ void __launch_bounds__(kTileLanes *kTileRows, kTileRows < 32 ? 32 / kTileRows : 1)
    dwt_inverse_level_kernel(const Source src, LevelOutput<T> dst, DwtRun rx, DwtRun ry, uint32_t tiles_y)
{
    __shared__ T s[kSpan * kPitch];
    const uint32_t lane = threadIdx.x, row = threadIdx.y;
    const TileAxis ax(blockIdx.x, rx.n);
    for (uint32_t tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
        const TileAxis ay(tile_y, ry.n);
        const uint32_t sw = ax.size(), sh = ay.size();
        // Load, interleaving and scaling along x (the row pass's first step).
        // The loops step by even counts, so a thread's samples share their
        // parities, hence their band, and a step of 2 along an axis is one
        // position in the band: the positions are the first's plus constants.
        static_assert(kTileLanes % 2 == 0 && kTileRows % 2 == 0, "a thread's samples keep their parity");
        const uint32_t px0 = dwt_split_pos(rx, ax.lo + lane), py0 = dwt_split_pos(ry, ay.lo + row);
        const bool high_x = px0 >= rx.nl, high_y = py0 >= ry.nl;
#pragma unroll
        for (uint32_t y0 = 0; y0 < kSpan; y0 += kTileRows)
#pragma unroll
            for (uint32_t x0 = 0; x0 < kSpan; x0 += kTileLanes) {
                const uint32_t y = y0 + row, x = x0 + lane;
                if (y >= sh || x >= sw) continue;
                s[y * kPitch + x] = scale_inv(src.load(px0 + x0 / 2, py0 + y0 / 2, high_x, high_y), rx, high_x);
            }
        __syncthreads();
        dwt_tile::lift_axis<T, InverseSteps<T>, Tile, true, false, kTileRows>(s, rx, ax, sh);
        // The column pass: its scaling, then its steps. Runs of two or more
        // samples are scaled by their steps (the 5/3 does not scale them).
        if (ry.n < 2) {
#pragma unroll
            for (uint32_t y0 = 0; y0 < kSpan; y0 += kTileRows)
#pragma unroll
                for (uint32_t x0 = 0; x0 < kSpan; x0 += kTileLanes) {
                    const uint32_t y = y0 + row, x = x0 + lane;
                    if (y < sh && x < sw)
                        s[y * kPitch + x] = scale_inv(s[y * kPitch + x], ry, dwt_is_high(ry, ay.lo + y));
                }
            __syncthreads();
        }
        dwt_tile::lift_axis<T, InverseSteps<T>, Tile, false, InverseSteps<T>::kScales, kTileRows>(s, ry, ay, sw);
        const uint32_t ow = ax.out_hi - ax.out_lo, oh = ay.out_hi - ay.out_lo;
#pragma unroll
        for (uint32_t y0 = 0; y0 < kTileSide; y0 += kTileRows)
#pragma unroll
            for (uint32_t x0 = 0; x0 < kTileSide; x0 += kTileLanes) {
                const uint32_t y = y0 + row, x = x0 + lane;
                if (y < oh && x < ow)
                    dst.data[size_t{ay.out_lo + y} * dst.stride + ax.out_lo + x] =
                        s[(ay.out_lo - ay.lo + y) * kPitch + ax.out_lo - ax.lo + x];
            }
        __syncthreads();  // s is reused by the next tile
    }
}

/** Queues one level on `stream`: resolution rect `rr`'s samples from `src` into `dst`. */
template <class T, class Source>
void inverse_level(const Source &src, LevelOutput<T> dst, const Rect &rr, cudaStream_t stream)
{
    const uint32_t w = rr.width(), h = rr.height();
    if (w == 0 || h == 0) return;
    const uint32_t tiles_x = dwt_tile::tiles_along(w, kTileSide), tiles_y = dwt_tile::tiles_along(h, kTileSide);
    const dim3 grid(tiles_x, std::min(tiles_y, kMaxGridY));
    const DwtRun rx = dwt_run(rr.x0, w), ry = dwt_run(rr.y0, h);
    dwt_tile::with_tile_rows(uint64_t{tiles_x} * tiles_y, [&](auto rows) {
        constexpr uint32_t kRows = decltype(rows)::value;
        dwt_inverse_level_kernel<T, Source, kRows><<<grid, dim3(kTileLanes, kRows), 0, stream>>>(src, dst, rx, ry, tiles_y);
    });
    check_cuda(cudaGetLastError(), "DWT: inverse kernel");
}

/** The sub-bands as they lie after a forward transform: LL in `ll`, the others in `bands`. */
template <class T>
struct PlainSource {
    const T *ll;
    size_t ll_stride;
    const T *bands;
    size_t band_stride;
    __device__ T load(uint32_t px, uint32_t py, bool high_x, bool high_y) const
    {
        return high_x || high_y ? bands[size_t{py} * band_stride + px] : ll[size_t{py} * ll_stride + px];
    }
};

}  // namespace dwt_inverse
}  // namespace j2kc
