/**
 * @file ht_coding_sets.h
 * @brief The HT coding sets a code-block offers rate control (ISO/IEC
 * 15444-15, one quality layer), and which of them a truncation point means.
 *
 * An HT block is not truncated pass by pass as a Part 1 block is: a decoder
 * reads the block's last HT set, a cleanup pass at some plane q followed by
 * its SigProp and MagRef passes at q - 1. So the encoder codes several
 * complete sets, their cleanups at kHtMaxSets neighbouring planes (a set at
 * plane 0 has no refinement), and rate control picks one set and how many
 * of its passes to keep (Kakadu's way; see D. Taubman, A. Naman, R. Mathew,
 * "High Throughput Block Coding in the HTJ2K Compression Standard").
 *
 * Which planes: a budget cuts most blocks of a frame near one plane, since
 * the quantisation steps already follow the bands' synthesis gains. Before
 * coding, a model of the bytes a cleanup at each plane costs, summed over
 * the frame's quads (ht_add_cleanup_model), finds the plane that fills the
 * budget (ht_sets_top_plane), and the sets go from one plane above it to
 * one below; rate control then moves each block within that window.
 *
 * Every (set, passes) pair is a point of rate R (the set's own bytes: a
 * decoder reads one set) and distortion decrease D (from the all-zero
 * block). The points of different sets are not nested, but PCRD-opt only
 * ever keeps points on the lower convex hull of (R, D), which needs no
 * nesting: the points are ranked by rate, those no better than a cheaper
 * one dropped, and the rest handed to rate control as if they were passes
 * (cumulative ends R, distortion steps D_k - D_(k-1)). A selection of n
 * such passes then means point n - 1, whose set is written alone: its
 * cleanup plane gives the zero bit-planes P = Mb - 1 - q of the packet
 * header, so no placeholder passes are needed with one layer.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/ht_block_coder_core.h"

namespace j2kc {
namespace htenc {

/** Sets coded: cleanup at kHtMaxSets planes from a frame's top plane down. */
constexpr uint32_t kHtMaxSets = 3;
/** Planes the cost model covers: magnitudes of up to 31 bits. */
constexpr uint32_t kHtPlaneBins = 32;
/** Passes of a set: cleanup, SigProp, MagRef. */
constexpr uint32_t kHtSetPasses = 3;
/** Truncation points a block can offer (every pass of every set). */
constexpr uint32_t kHtMaxPoints = kHtMaxSets * kHtSetPasses;

/** A block's coded sets, back to back in its data, coarsest first. */
struct HtCodingSets {
    uint32_t start[kHtMaxSets];              ///< where set s begins in the block's data
    uint32_t end[kHtMaxSets][kHtSetPasses];  ///< its pass ends, counted from its start
    uint8_t zero_bitplanes[kHtMaxSets];      ///< P when set s is the one written
    uint8_t num_passes[kHtMaxSets];          ///< 1 (cleanup at plane 0) or 3
    uint8_t num_sets;
    uint8_t num_points;
    /** Truncation point k: set * 4 + passes kept. */
    uint8_t point[kHtMaxPoints];
};

/** What Tier-2 writes of a block for a selection of truncation points. */
struct HtChosenSet {
    uint32_t passes = 0;              ///< 0: the block is left out
    uint32_t start = 0;               ///< where the set begins in the block's data
    uint32_t end[kHtSetPasses] = {};  ///< its pass ends, from start
    /** P; a block left out keeps its coarsest set's (Mb when all zero), which
     *  still counts in its precinct's zero bit-plane tag tree. */
    uint8_t zero_bitplanes = 0;
};

J2KC_HD HtChosenSet ht_chosen_set(const HtCodingSets &sets, uint32_t points, uint8_t num_bitplanes)
{
    HtChosenSet c;
    c.zero_bitplanes = sets.num_sets ? sets.zero_bitplanes[0] : num_bitplanes;
    if (points == 0 || points > sets.num_points) return c;
    const uint32_t code = sets.point[points - 1];
    const uint32_t s = code >> 2;
    c.passes = code & 3u;
    c.start = sets.start[s];
    for (uint32_t k = 0; k < kHtSetPasses; ++k) c.end[k] = sets.end[s][k];
    c.zero_bitplanes = sets.zero_bitplanes[s];
    return c;
}

/** Bits the model charges a significant quad beyond its MagSgn bits: its VLC codeword and MEL share. */
constexpr uint32_t kHtQuadModelBits = 3;
/** ... and a block with a significant sample: Scup and the streams' terminations. */
constexpr uint32_t kHtBlockModelBits = 24;

/**
 * The modelled bits of a cleanup at plane p < top for a quad whose samples'
 * magnitudes are `length` bits long, `top` the longest: each sample
 * significant at p costs about top - p MagSgn bits and a sign, the quad
 * kHtQuadModelBits more.
 */
J2KC_HD uint32_t ht_quad_model_bits(const uint32_t (&length)[4], uint32_t top, uint32_t p)
{
    uint32_t quad = kHtQuadModelBits;
    for (uint32_t i = 0; i < 4; ++i) quad += length[i] > p ? top - p + 1 : 0;
    return quad;
}

/**
 * The magnitudes' bit lengths of the quad whose top-left sample is (x, y)
 * (0 for its samples outside the block), the longest returned: the quad as
 * the cost model sees it.
 */
J2KC_HD uint32_t ht_quad_lengths(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height, uint32_t x,
                                 uint32_t y, uint32_t (&length)[4])
{
    uint32_t top = 0;
    for (uint32_t i = 0; i < 4; ++i) {
        const uint32_t sx = x + (i >> 1), sy = y + (i & 1);
        length[i] = 0;
        if (sx >= width || sy >= height) continue;
        const int32_t c = coeffs[size_t{sy} * stride + sx];
        length[i] = ht::bit_length(c < 0 ? 0u - static_cast<uint32_t>(c) : static_cast<uint32_t>(c));
        top = length[i] > top ? length[i] : top;
    }
    return top;
}

/**
 * Adds a block's modelled cleanup cost to `bits` (kHtPlaneBins entries: bits
 * of a cleanup at plane p). A quad whose largest magnitude has U bits above p
 * is significant there (ht_quad_model_bits), and the block costs
 * kHtBlockModelBits more.
 */
J2KC_HD void ht_add_cleanup_model(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height, uint64_t *bits)
{
    uint32_t block_top = 0;
    for (uint32_t y = 0; y < height; y += 2)
        for (uint32_t x = 0; x < width; x += 2) {
            uint32_t length[4];
            const uint32_t top = ht_quad_lengths(coeffs, stride, width, height, x, y, length);
            for (uint32_t p = 0; p < top; ++p) bits[p] += ht_quad_model_bits(length, top, p);
            block_top = top > block_top ? top : block_top;
        }
    for (uint32_t p = 0; p < block_top; ++p) bits[p] += kHtBlockModelBits;
}

/**
 * The coarsest set's cleanup plane for a frame whose modelled cleanup costs
 * are `bits` (ht_add_cleanup_model), under `budget` bytes: the lowest plane
 * whose cost fits is the window's middle; the window is at least planes 2,
 * 1, 0.
 */
J2KC_HD uint32_t ht_sets_top_plane(const uint64_t *bits, uint64_t budget)
{
    uint32_t p = 0;
    while (p + 1 < kHtPlaneBins && bits[p] / 8 > budget) ++p;
    return (p > 1 ? p : 1) + 1;
}

/** Which passes of a set end a codeword segment: the cleanup, and MagRef
 *  (SigProp and MagRef share the refinement segment). */
J2KC_HD bool ht_set_pass_terminated(uint32_t k) { return k != 1; }

/**
 * Ranks the points of the coded sets (`distortion[s][k]`: cumulative D of
 * set s after pass k) and writes the kept ones as passes: cumulative
 * `pass_end`, `pass_distortion` steps. A point is kept when it decreases the
 * distortion more than every cheaper point (ties in rate: the larger
 * decrease); the last one kept is the best the block can do. Returns the
 * number of points.
 */
J2KC_HD uint32_t ht_rank_points(HtCodingSets &sets, const uint64_t (&distortion)[kHtMaxSets][kHtSetPasses],
                                uint32_t *pass_end, uint64_t *pass_distortion)
{
    uint32_t rate[kHtMaxPoints];
    uint64_t gain[kHtMaxPoints];
    uint8_t code[kHtMaxPoints];
    uint32_t n = 0;
    for (uint32_t s = 0; s < sets.num_sets; ++s)
        for (uint32_t k = 0; k < sets.num_passes[s]; ++k) {
            // Insertion by (rate ascending, decrease descending); sets.point breaks no ties left.
            uint32_t i = n++;
            const uint32_t r = sets.end[s][k];
            const uint64_t d = distortion[s][k];
            while (i > 0 && (rate[i - 1] > r || (rate[i - 1] == r && gain[i - 1] < d))) {
                rate[i] = rate[i - 1];
                gain[i] = gain[i - 1];
                code[i] = code[i - 1];
                --i;
            }
            rate[i] = r;
            gain[i] = d;
            code[i] = static_cast<uint8_t>(s * 4 + k + 1);
        }
    uint32_t kept = 0;
    uint32_t last_rate = 0;
    uint64_t last_gain = 0;
    for (uint32_t i = 0; i < n; ++i) {
        if (gain[i] <= last_gain || rate[i] == last_rate) continue;
        pass_end[kept] = rate[i];
        pass_distortion[kept] = gain[i] - last_gain;
        sets.point[kept++] = code[i];
        last_rate = rate[i];
        last_gain = gain[i];
    }
    sets.num_points = static_cast<uint8_t>(kept);
    return kept;
}

}  // namespace htenc
}  // namespace j2kc
