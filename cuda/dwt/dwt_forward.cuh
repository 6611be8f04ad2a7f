/**
 * @file dwt_forward.cuh
 * @brief The GPU forward 2-D DWT of ISO/IEC 15444-1 Annex F (2D_SD), one
 * tiled kernel a level, for dwt.cu and for the encoder's analysis
 * (pipeline/analysis.cu), which differ only in where a level's sub-bands
 * go: a `Sink` takes each de-interleaved sample with its band, so that the
 * encoder can quantise the sub-bands as it stores them instead of in a pass
 * of its own.
 *
 * Each block loads a tile of the level's input with its margin
 * (dwt_tile.cuh), runs every column step, the column scaling and every row
 * step in shared memory, and stores the tile's inner part de-interleaved,
 * with the row scaling. Along an axis where the tile loads its whole span
 * (every tile but those at the level's edges) the steps run without margin
 * checks (dwt_tile::lift_axis). Each sample goes through the same operations in the
 * same order as in dwt_cpu.cpp (columns, then rows), so the results are the
 * CPU's bit for bit.
 */
#pragma once

#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "dwt/dwt_layout.h"
#include "dwt/dwt_lifting.h"
#include "dwt/dwt_tile.cuh"
#include "geometry/partition.h"

namespace j2kc {
namespace dwt_forward {

using dwt_tile::kMaxGridY;
using dwt_tile::kTileLanes;
/// 56 samples of output a side: with the margins, a tile's rows and columns
/// are two warps' lanes wide, so that no lifting round leaves lanes idle.
using Tile = dwt_tile::TileShape<56>;
using TileAxis = dwt_tile::TileAxis<Tile>;
constexpr uint32_t kTileSide = Tile::kSide, kSpan = Tile::kSpan, kPitch = Tile::kPitch;
static_assert(kSpan % kTileLanes == 0, "a tile's lines fill whole warps");

/** The forward lifting steps of the filter for T, in dwt_cpu.cpp's order. */
template <class T>
struct ForwardSteps;
template <>
struct ForwardSteps<int32_t> {
    static constexpr int kCount = 2;
    /// The 5/3 scales only single-sample runs (dwt53_single_fwd).
    static constexpr bool kScales = false;
    /** Step i: whether it updates the samples of the run's own parity (the low-pass ones). */
    __device__ static bool on_parity(int i) { return i == 1; }
    __device__ static int32_t apply(int i, int32_t x, int32_t l, int32_t r)
    {
        return i == 0 ? lift53_predict_fwd(x, l, r) : lift53_update_fwd(x, l, r);
    }
};
template <>
struct ForwardSteps<float> {
    static constexpr int kCount = 4;
    static constexpr bool kScales = true;
    __device__ static bool on_parity(int i) { return (i & 1) == 1; }
    __device__ static float apply(int i, float x, float l, float r)
    {
        const float c = i == 0 ? kDwtAlpha : i == 1 ? kDwtBeta : i == 2 ? kDwtGamma : kDwtDelta;
        return lift97_fwd(x, l, r, c);
    }
};

__device__ __forceinline__ int32_t scale_fwd(int32_t v, const DwtRun &r, bool) { return dwt53_single_fwd(r, v); }
__device__ __forceinline__ float scale_fwd(float v, const DwtRun &r, bool high)
{
    return dwt_fmul(v, dwt97_scale_fwd(r, high));
}

/** A level's input: w x h interleaved samples, rows `stride` elements apart. */
template <class T>
struct LevelInput {
    const T *data;
    size_t stride;
};

/**
 * One level of the forward 2-D transform over tiles: the level's input into
 * `dst` (dst.store(px, py, high_x, high_y, v): the sample at (px, py) of the
 * de-interleaved layout, in the band that high_x and high_y name). The loops
 * have fixed trip counts, so that each thread's loads and stores are issued
 * together rather than one latency after another.
 */
template <class T, class Sink, uint32_t kTileRows>
__global__ void __launch_bounds__(kTileLanes *kTileRows, kTileRows < 32 ? 32 / kTileRows : 1)
    dwt_forward_level_kernel(LevelInput<T> src, const Sink dst, DwtRun rx, DwtRun ry, uint32_t tiles_y)
{
    __shared__ T s[kSpan * kPitch];
    const uint32_t lane = threadIdx.x, row = threadIdx.y;
    const TileAxis ax(blockIdx.x, rx.n);
    for (uint32_t tile_y = blockIdx.y; tile_y < tiles_y; tile_y += gridDim.y) {
        const TileAxis ay(tile_y, ry.n);
        const uint32_t sw = ax.size(), sh = ay.size();
#pragma unroll
        for (uint32_t y0 = 0; y0 < kSpan; y0 += kTileRows)
#pragma unroll
            for (uint32_t x0 = 0; x0 < kSpan; x0 += kTileLanes) {
                const uint32_t y = y0 + row, x = x0 + lane;
                if (y < sh && x < sw) s[y * kPitch + x] = src.data[size_t{ay.lo + y} * src.stride + ax.lo + x];
            }
        __syncthreads();
        dwt_tile::lift_axis<T, ForwardSteps<T>, Tile, false, false, kTileRows>(s, ry, ay, sw);
        // The column scaling, before the rows mix the samples of a row (the
        // 5/3 scales only a run of one sample).
        if (ForwardSteps<T>::kScales || ry.n < 2) {
#pragma unroll
            for (uint32_t y0 = 0; y0 < kSpan; y0 += kTileRows)
#pragma unroll
                for (uint32_t x0 = 0; x0 < kSpan; x0 += kTileLanes) {
                    const uint32_t y = y0 + row, x = x0 + lane;
                    if (y < sh && x < sw)
                        s[y * kPitch + x] = scale_fwd(s[y * kPitch + x], ry, dwt_is_high(ry, ay.lo + y));
                }
            __syncthreads();
        }
        dwt_tile::lift_axis<T, ForwardSteps<T>, Tile, true, false, kTileRows>(s, rx, ax, sh);
        // The inner part, the low-pass samples of a row by the lanes, then
        // the high-pass ones, so that a warp's stores go to consecutive
        // positions of one band.
        const uint32_t oh = ay.out_hi - ay.out_lo;
#pragma unroll
        for (uint32_t y0 = 0; y0 < kTileSide; y0 += kTileRows)
#pragma unroll
            for (uint32_t high = 0; high < 2; ++high) {
                const uint32_t y = y0 + row;
                const uint32_t k = ax.out_lo + ((ax.out_lo + rx.parity + high) & 1u) + 2 * lane;
                if (y >= oh || k >= ax.out_hi) continue;
                const uint32_t py = dwt_split_pos(ry, ay.out_lo + y);
                const T v = s[(ay.out_lo - ay.lo + y) * kPitch + k - ax.lo];
                dst.store(dwt_split_pos(rx, k), py, high != 0, py >= ry.nl, scale_fwd(v, rx, high != 0));
            }
        __syncthreads();  // s is reused by the next tile
    }
}

/** Queues one level on `stream`: resolution rect `rr`'s samples from `src` into `dst`. */
template <class T, class Sink>
void forward_level(LevelInput<T> src, const Sink &dst, const Rect &rr, cudaStream_t stream)
{
    const uint32_t w = rr.width(), h = rr.height();
    if (w == 0 || h == 0) return;
    const uint32_t tiles_x = dwt_tile::tiles_along(w, kTileSide), tiles_y = dwt_tile::tiles_along(h, kTileSide);
    const dim3 grid(tiles_x, std::min(tiles_y, kMaxGridY));
    const DwtRun rx = dwt_run(rr.x0, w), ry = dwt_run(rr.y0, h);
    dwt_tile::with_tile_rows(uint64_t{tiles_x} * tiles_y, [&](auto rows) {
        constexpr uint32_t kRows = decltype(rows)::value;
        dwt_forward_level_kernel<T, Sink, kRows><<<grid, dim3(kTileLanes, kRows), 0, stream>>>(src, dst, rx, ry, tiles_y);
    });
    check_cuda(cudaGetLastError(), "DWT: forward kernel");
}

/**
 * Elements of LL scratch forward_levels needs for `rect`: the first level's
 * LL band (every later one goes to `in`, or to the sink at the last level).
 */
inline uint64_t ll_scratch_elements(const Rect &rect)
{
    return uint64_t{rect.width() / 2 + 1} * (rect.height() / 2 + 1);
}

/**
 * Queues every level of the forward transform of tile-component `rect` on
 * `stream`. The first level reads `in`, each next one the LL band the level
 * before left, which goes to `ll_scratch` from the first level and then
 * alternately to `in` (consumed by then) and `ll_scratch`, its rows its
 * width apart; the last level's LL band goes with the other bands.
 * `make_sink(r, ll, ll_stride)` gives the sink of the level that makes
 * resolution r's sub-bands, its LL band to `ll` (nullptr at the last level).
 */
template <class T, class MakeSink>
void forward_levels(T *in, size_t in_stride, T *ll_scratch, const Rect &rect, int levels, const MakeSink &make_sink,
                    cudaStream_t stream)
{
    LevelInput<T> src{in, in_stride};
    for (int lev = 1; lev <= levels; ++lev) {
        const int r = levels - lev + 1;
        const Rect rr = dwt_resolution_rect(rect, levels, r);
        if (rr.empty()) break;
        T *const ll = lev == levels ? nullptr : (lev & 1) ? ll_scratch : in;
        const size_t ll_stride = dwt_resolution_rect(rect, levels, r - 1).width();
        forward_level<T>(src, make_sink(r, ll, ll_stride), rr, stream);
        src = {ll, ll_stride};
    }
}

}  // namespace dwt_forward
}  // namespace j2kc
