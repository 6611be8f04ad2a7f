/**
 * @file step_fit_core.h
 * @brief Steps fitted to the truncated reconstruction (an encoder choice
 * within ISO/IEC 15444-1 Annex E): the per-coefficient terms of the fit,
 * shared by the CPU encoder and the CUDA kernel (quant.cu), in integers so
 * that any summation order gives the same sums.
 *
 * Decoders reconstruct a coefficient whose decoding stopped at plane p at the
 * mid-point of the interval its bits leave, times the signalled step Delta_b.
 * Under a byte budget most coefficients of the high-pass bands lie near the
 * bottom of that interval (their distribution falls off with magnitude), so
 * the mid-point overshoots. Signalling s * Delta_b instead, with the indices
 * unchanged, scales every reconstruction of the band by s; the s that
 * minimises the band's squared error is s = sum(x * xh) / sum(xh^2), x the
 * coefficient and xh its reconstruction, both in index units. The fit takes
 * x as the mid-point of its finest index's interval, |v| + 1/2 (the budget's
 * steps lie planes under the cut), and xh from the plane of the block's last
 * cleanup pass kept ("the cut": a significance or refinement pass after it
 * decodes part of the next plane, which the fit leaves out). Both are
 * counted doubled, as integers: u = 2|v| + 1 and y = (2 (|v| >> cut) + 1) *
 * 2^cut (0 for |v| >> cut = 0).
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace j2kc {

/**
 * The plane at and above which a block's first `kept` passes decode every
 * coefficient, or -1 when none is kept. Pass 0 is the cleanup pass of plane
 * Mb - 1 - P; then significance, refinement and cleanup for each lower plane
 * (tier1.h's numbering).
 */
J2KC_HD int step_fit_cut_plane(int num_bitplanes, int zero_bitplanes, uint32_t kept)
{
    if (kept == 0) return -1;
    const int top = num_bitplanes - 1 - zero_bitplanes;
    const uint32_t last = kept - 1;
    if (last == 0) return top;
    const int plane = top - static_cast<int>((last + 2) / 3);
    return (last - 1) % 3 == 2 ? plane : plane + 1;
}

/**
 * Right shift of a band's terms: u and y stay under 2^(Mb + 1), so a term
 * is under 2^(2 Mb + 2), and a sum of up to 2^count_log2 terms (the frame's
 * samples bound those of any band, with every component that shares its
 * fit) stays in 64 bits. A shift drops bits of every term, a bias on small
 * coefficients, so it is as small as the count allows: none below 2 Mb +
 * count_log2 = 62 (up to 18 planes in a 4K frame of three components).
 */
J2KC_HD int step_fit_shift(int num_bitplanes, int count_log2)
{
    const int bits = 2 * num_bitplanes + 2 + count_log2 - 64;
    return bits > 0 ? bits : 0;
}

/** Adds index v's terms (doubled, shifted) to the sums of x * xh and xh^2. */
J2KC_HD void step_fit_add(int32_t v, int cut, int shift, uint64_t &xy, uint64_t &yy)
{
    if (v == 0 || cut < 0) return;
    const uint32_t m = v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v);
    const uint32_t k = m >> cut;
    if (k == 0) return;
    const uint64_t u = 2 * uint64_t{m} + 1;
    const uint64_t y = (2 * uint64_t{k} + 1) << cut;
    xy += (u * y) >> shift;
    yy += (y * y) >> shift;
}

}  // namespace j2kc
