/**
 * @file pcrd_core.h
 * @brief The bit-defining pieces of PCRD-opt (rate/pcrd.h; ISO/IEC 15444-1
 * Annex J.14) shared by the CPU reference and the CUDA kernels: slope keys,
 * the per-code-block convex hull, selection at a threshold, the packet-header
 * estimate, the 32 probe thresholds of a search window and the window update.
 * Both backends call exactly these, so they agree bit for bit.
 */
#pragma once

#include <cstdint>
#include <cstring>

#include "common/host_device.h"
#include "rate/pcrd.h"

namespace j2kc {

/** @brief Bits of a float (the order of positive floats is the order of their bits). */
J2KC_HD uint32_t pcrd_float_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
#endif
}

/**
 * @brief Slope key of a hull segment: 0 when the segment reduces no distortion
 * (or the weight is not positive), so the point is not a hull candidate;
 * otherwise the bits of float(dd * weight / dr) clamped to [1, kPcrdKeyMax].
 * dr == 0 with dd > 0 (bytes-free improvement) is the steepest slope.
 * Double arithmetic in this fixed order is correctly rounded on both sides.
 */
J2KC_HD uint32_t pcrd_slope_key(uint64_t dd, uint32_t dr, double weight)
{
    if (dd == 0 || !(weight > 0.0)) return 0;
    if (dr == 0) return kPcrdKeyMax;
    const double s = static_cast<double>(dd) * weight / static_cast<double>(dr);
    if (!(s < 3.4028234663852886e38)) return kPcrdKeyMax;  // FLT_MAX and beyond, inf
    const uint32_t k = pcrd_float_bits(static_cast<float>(s));
    return k == 0 ? 1u : k;  // a positive slope that underflows stays a candidate
}

/**
 * @brief Convex hull of one code-block's rate-distortion points (monotone
 * chain over passes 1..n, starting at the origin). A new point removes earlier
 * hull points whose key is not above its own key, so hull keys strictly
 * decrease. hull_dist is workspace (cumulative distortion of each hull point).
 * @return number of hull points written.
 */
J2KC_HD uint32_t pcrd_build_hull(const uint32_t *end, const uint64_t *dist, uint32_t n, double weight,
                                 uint16_t *hull_pass, uint32_t *hull_key, uint64_t *hull_dist)
{
    uint32_t count = 0;
    uint64_t d = 0;
    for (uint32_t k = 1; k <= n; ++k) {
        const uint64_t step = dist[k - 1];
        d = (d + step < d) ? ~uint64_t{0} : d + step;  // saturate: never wraps
        const uint32_t r = end[k - 1];
        for (;;) {
            const uint64_t dj = count ? hull_dist[count - 1] : 0;
            const uint32_t rj = count ? end[hull_pass[count - 1] - 1] : 0;
            const uint32_t key = pcrd_slope_key(d - dj, r > rj ? r - rj : 0, weight);
            if (key == 0) break;  // no gain over the last hull point: not a candidate
            if (count && key >= hull_key[count - 1]) {
                --count;  // the last hull point lies under the chord: drop it
                continue;
            }
            hull_pass[count] = static_cast<uint16_t>(k);
            hull_key[count] = key;
            hull_dist[count] = d;
            ++count;
            break;
        }
    }
    return count;
}

/**
 * @brief Passes a code-block keeps at threshold t: every pass for
 * t == kPcrdKeyAll, else the passes of its last hull point with key >= t.
 */
J2KC_HD uint32_t pcrd_select_passes(const uint16_t *hull_pass, const uint32_t *hull_key, uint32_t hull_count,
                                    uint32_t num_passes, uint32_t t)
{
    if (t == kPcrdKeyAll) return num_passes;
    uint32_t lo = 0, hi = hull_count;  // keys descend: count the keys >= t
    while (lo < hi) {
        const uint32_t mid = (lo + hi) >> 1;
        if (hull_key[mid] >= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? hull_pass[lo - 1] : 0u;
}

J2KC_HD uint32_t pcrd_bit_width(uint32_t v)
{
    uint32_t w = 0;
    while (v) {
        v >>= 1;
        ++w;
    }
    return w;
}

/** @brief Bits of the number-of-coding-passes codeword (ISO/IEC 15444-1 Table B.4). */
J2KC_HD uint32_t pcrd_pass_code_bits(uint32_t passes)
{
    return passes <= 1 ? 1u : passes == 2 ? 2u : passes <= 5 ? 4u : passes <= 36 ? 9u : 16u;
}

/** @brief Estimated packet-header bits of one code-block in one layer. */
J2KC_HD uint32_t pcrd_header_bits(const PcrdHeaderModel &m, uint32_t new_passes, uint32_t new_bytes, bool first)
{
    if (new_passes == 0) return m.empty_bits;
    uint32_t bits = (first ? m.first_bits : m.later_bits) + m.pass_bits * new_passes;
    if (m.pass_code) bits += pcrd_pass_code_bits(new_passes);
    if (m.length_bits) {
        const uint32_t w = pcrd_bit_width(new_bytes);
        bits += (w > 3 ? w : 3u) + pcrd_bit_width(new_passes) - 1;
    }
    return bits;
}

/** One code-block's choice at a threshold in a layer. */
struct PcrdPick {
    uint32_t passes;  ///< passes up to and including this layer
    uint32_t bytes;   ///< code-block bytes up to and including this layer
    uint32_t bits;    ///< estimated header bits of this layer
};

/**
 * @brief Passes of a code-block at threshold t in a layer: its selection, but
 * never fewer than `prev` (the passes of the layer below), so truncation
 * points do not decrease over layers. end/hull_* point at the block's own.
 */
J2KC_HD PcrdPick pcrd_pick_at(const uint32_t *end, uint32_t selected, uint32_t prev, const PcrdHeaderModel &model)
{
    const uint32_t p = selected < prev ? prev : selected;
    const uint32_t bytes = p ? end[p - 1] : 0u;
    const uint32_t prev_bytes = prev ? end[prev - 1] : 0u;
    return PcrdPick{p, bytes, pcrd_header_bits(model, p - prev, bytes - prev_bytes, prev == 0)};
}

J2KC_HD PcrdPick pcrd_pick(const uint32_t *end, const uint16_t *hull_pass, const uint32_t *hull_key,
                           uint32_t hull_count, uint32_t num_passes, uint32_t prev, uint32_t t,
                           const PcrdHeaderModel &model)
{
    return pcrd_pick_at(end, pcrd_select_passes(hull_pass, hull_key, hull_count, num_passes, t), prev, model);
}

/**
 * A slack-filling candidate: the next hull segment of one code-block beyond
 * its selection in the last layer. Candidates are taken in decreasing key
 * order, ties by increasing block index (see pcrd_candidate_before()).
 */
struct PcrdCandidate {
    uint32_t key;  ///< slope key of the segment (the key of its end hull point)
    uint32_t block;
    uint32_t group;  ///< size group (component) of the block
    uint16_t from;   ///< passes of the block in the last layer now
    uint16_t to;     ///< passes after the segment
    uint32_t bytes;  ///< code-block bytes the segment adds
    uint32_t bits;   ///< estimated packet-header bits it adds
};

/**
 * @brief The next hull segment of a block whose last layer holds `cur`
 * passes (and the layer below it `prev`): the first hull point with more
 * passes than cur. False when the block has none left.
 */
J2KC_HD bool pcrd_next_segment(const uint32_t *end, const uint16_t *hull_pass, const uint32_t *hull_key,
                               uint32_t hull_count, uint32_t cur, uint32_t prev, const PcrdHeaderModel &model,
                               uint32_t block, uint32_t group, PcrdCandidate &out)
{
    uint32_t h = 0;
    while (h < hull_count && hull_pass[h] <= cur) ++h;
    if (h == hull_count) return false;
    const uint32_t to = hull_pass[h];
    const uint32_t cur_bytes = cur ? end[cur - 1] : 0u;
    const uint32_t prev_bytes = prev ? end[prev - 1] : 0u;
    const uint32_t old_bits = pcrd_header_bits(model, cur - prev, cur_bytes - prev_bytes, prev == 0);
    const uint32_t new_bits = pcrd_header_bits(model, to - prev, end[to - 1] - prev_bytes, prev == 0);
    out.key = hull_key[h];
    out.block = block;
    out.group = group;
    out.from = static_cast<uint16_t>(cur);
    out.to = static_cast<uint16_t>(to);
    out.bytes = end[to - 1] - cur_bytes;
    out.bits = new_bits > old_bits ? new_bits - old_bits : 0u;
    return true;
}

/** @brief Order of slack filling: steeper first, then lower block index. */
J2KC_HD bool pcrd_candidate_before(const PcrdCandidate &a, const PcrdCandidate &b)
{
    return a.key != b.key ? a.key > b.key : a.block < b.block;
}

/** @brief Estimated size: bodies plus whole bytes of header bits. */
J2KC_HD uint64_t pcrd_group_size(uint64_t body, uint64_t bits) { return body + (bits + 7) / 8; }

/**
 * @brief Header bits kept back in a layer's sizes for the layers above it:
 * each of them costs every block at least empty_bits, so a layer that fits
 * with this reserve leaves the layers above a feasible (empty) choice.
 */
J2KC_HD uint64_t pcrd_reserve_bits(const PcrdHeaderModel &m, uint32_t blocks_in_group, uint32_t layers_above)
{
    return uint64_t{blocks_in_group} * layers_above * m.empty_bits;
}

/**
 * A search window: thresholds lo (known too large a size, or -1) < ... < hi
 * (known to fit, or kPcrdKeyNone / the start value). The probes are
 * lo + 1 + floor((hi - lo - 1) * i / 32), i = 0..31: probe 0 is always the
 * next threshold above lo (so kPcrdKeyAll is tried first), the others equally
 * spaced up to below hi. Converged when hi == lo + 1: hi is the smallest
 * fitting threshold.
 */
struct PcrdWindow {
    int64_t lo;
    uint32_t hi;
};

J2KC_HD PcrdWindow pcrd_window_start(bool limited) { return PcrdWindow{-1, limited ? kPcrdKeyNone : kPcrdKeyAll}; }

J2KC_HD bool pcrd_window_converged(const PcrdWindow &w) { return static_cast<int64_t>(w.hi) - w.lo <= 1; }

J2KC_HD uint32_t pcrd_window_probe(const PcrdWindow &w, uint32_t i)
{
    const uint64_t span = static_cast<uint64_t>(static_cast<int64_t>(w.hi) - w.lo - 1);
    return static_cast<uint32_t>(w.lo + 1 + static_cast<int64_t>(span * i / kPcrdProbes));
}

/**
 * @brief Narrows the window from the probes' fit mask (bit i: probe i fits).
 * Sizes never grow with the threshold, so the fitting probes are a suffix;
 * the first fitting probe (lowest i) is the tie rule either way.
 */
J2KC_HD void pcrd_window_update(PcrdWindow &w, uint32_t fit_mask)
{
    if (pcrd_window_converged(w)) return;
    uint32_t f = 0;
    while (f < kPcrdProbes && !((fit_mask >> f) & 1u)) ++f;
    const PcrdWindow old = w;
    if (f > 0) w.lo = pcrd_window_probe(old, f - 1);
    if (f < kPcrdProbes) w.hi = pcrd_window_probe(old, f);
}

/** Iterations that bring any start window to convergence (width -> ceil((width-1)/32)). */
constexpr int pcrd_max_iterations()
{
    uint64_t width = uint64_t{kPcrdKeyNone} + 1;
    int it = 0;
    while (width > 1) {
        width = (width - 1 + kPcrdProbes - 1) / kPcrdProbes;
        ++it;
    }
    return it;
}
constexpr int kPcrdMaxIterations = pcrd_max_iterations();
static_assert(kPcrdMaxIterations == 7, "31-bit key space narrows in 7 rounds of 32 probes");

}  // namespace j2kc
