/**
 * @file ht_encode_job.h
 * @brief The body of the CUDA HT block-encoder kernel for one job (ISO/IEC
 * 15444-15 cleanup pass over ht_block_encoder_core.h): argument checks, the
 * job's scratch layout, the call into the shared coder and the job's result.
 * J2KC_HD, so the host tests run the very same job logic over host memory
 * (the kernel only adds the thread-to-job mapping).
 *
 * Jobs, results and pass arrays are Part 1's (tier1_cuda.h), so the rest of
 * the GPU pipeline (result gathering, rate control, Tier-2) handles HT
 * blocks as Part 1's. A block is coded either as one cleanup pass at plane
 * 0, with P = Mb - 1 zero bit-planes (the cleanup's plane is Mb - 1 - P), or,
 * for rate control, as the several HT sets of ht_coding_sets.h, whose
 * ranked truncation points are its pass entries.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/ht_block_encoder_core.h"
#include "tier1/ht_coding_sets.h"
#include "tier1/tier1_cuda.h"

namespace j2kc {
namespace htenc {

J2KC_HD constexpr size_t ht_align16(size_t v) { return (v + 15) & ~size_t{15}; }

/** Byte offsets of the pieces of a job's scratch area. */
struct HtScratchLayout {
    size_t mel, vlc, lines, sig, magref, total;
};

J2KC_HD HtScratchLayout ht_scratch_layout(uint32_t width, uint32_t height)
{
    HtScratchLayout l{};
    l.mel = 0;
    l.vlc = ht_align16(ht_mel_bound(width, height));
    l.lines = l.vlc + ht_align16(ht_vlc_bound(width, height));
    l.sig = l.lines + ht_align16(ht_line_scratch_bytes(width));
    l.magref = l.sig + ht_align16(ht_sig_map_bytes(width, height));
    l.total = l.magref + ht_align16(ht_magref_bound(width, height));
    return l;
}

/** Output region of a job (its first byte is the dummy byte of Part 1's
 *  layout, unused here) that always holds the single cleanup segment, or
 *  with `sets` every coding set of ht_coding_sets.h. */
J2KC_HD size_t ht_job_capacity_bound(uint32_t width, uint32_t height, uint32_t planes, bool sets)
{
    const size_t set = size_t{ht_segment_bound(width, height, planes)} + ht_sigprop_bound(width, height) +
                       ht_magref_bound(width, height);
    return 1 + (sets ? kHtMaxSets * set : size_t{ht_segment_bound(width, height, planes)});
}

/** Pass entries a job writes: a truncation point each with `sets`, else 1. */
J2KC_HD uint32_t ht_job_max_passes(bool sets) { return sets ? kHtMaxPoints : 1u; }

/** Maps the core's status to the job's. */
J2KC_HD uint8_t ht_job_status(uint32_t status)
{
    switch (status) {
    case kHtEncodeOk: return kGpuTier1Ok;
    case kHtEncodeBadGeometry: return kGpuTier1BadGeometry;
    case kHtEncodeBadBitplanes: return kGpuTier1BadBitplanes;
    case kHtEncodeDataTooDeep: return kGpuTier1DataTooDeep;
    default: return kGpuTier1Overflow;
    }
}

/** Where a job's input, scratch and output lie. */
struct HtJobContext {
    const int32_t *coeffs;
    HtEncodeScratch scratch;
    uint8_t *magref;  ///< MagRef bytes as coded (reversed into place after SigProp)
    uint32_t *sig;    ///< the significance map (ht_sig_words)
    uint8_t *out;  ///< the job's region past the dummy byte
    uint32_t capacity;
};

/** A job's pointers into its coefficients, scratch (ht_scratch_layout) and output region. */
J2KC_HD HtJobContext ht_job_context(const GpuCodeBlockJob &job, uint8_t *out_bytes)
{
    uint8_t *const scratch = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch));
    const HtScratchLayout l = ht_scratch_layout(job.width, job.height);
    HtJobContext c;
    c.coeffs = reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs));
    c.scratch = HtEncodeScratch{scratch + l.mel, ht_mel_bound(job.width, job.height), scratch + l.vlc,
                                ht_vlc_bound(job.width, job.height), scratch + l.lines};
    c.magref = scratch + l.magref;
    c.sig = reinterpret_cast<uint32_t *>(scratch + l.sig);
    c.out = out_bytes + job.out_offset + 1;
    c.capacity = job.out_capacity > 0 ? job.out_capacity - 1 : 0;
    return c;
}

/** A job's verdict on its geometry and planes before anything is coded (kGpuTier1Ok: codable). */
J2KC_HD uint8_t ht_job_check(const GpuCodeBlockJob &job)
{
    if (job.width > ht::kMaxSide || job.height > ht::kMaxSide || uint32_t{job.width} * job.height > ht::kMaxSamples)
        return kGpuTier1BadGeometry;
    if (job.num_bitplanes > ht::kMaxBitplanes) return kGpuTier1BadBitplanes;
    return kGpuTier1Ok;
}

/**
 * The result and pass entry of a job coded as one cleanup pass at plane 0
 * (P = Mb - 1), from the cleanup's status and result.
 */
J2KC_HD GpuCodeBlockResult ht_cleanup_job_result(const GpuCodeBlockJob &job, uint32_t status, const HtEncodeResult &r,
                                                 uint32_t *pass_end, uint64_t *pass_distortion,
                                                 uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    res.status = ht_job_status(status);
    res.data_bitplanes = static_cast<uint8_t>(r.data_bitplanes);
    if (status != kHtEncodeOk || r.bytes == 0) return res;
    res.num_passes = 1;
    res.bytes = r.bytes;
    res.zero_bitplanes = static_cast<uint8_t>(job.num_bitplanes - 1);
    if (pass_end) pass_end[job.pass_offset] = r.bytes;
    if (pass_distortion) pass_distortion[job.pass_offset] = r.distortion;
    if (pass_terminated) pass_terminated[job.pass_offset] = 1;
    return res;
}

/** A set's pass ends and distortions once its refinement segment (f) follows its cleanup (r). */
J2KC_HD void ht_refinement_ends(const HtEncodeResult &r, const HtRefinementResult &f, uint32_t (&end)[kHtSetPasses],
                                uint64_t (&distortion)[kHtSetPasses])
{
    end[1] = r.bytes + f.sigprop_bytes;
    end[2] = end[1] + f.magref_bytes;
    distortion[1] = distortion[0] + f.sigprop_distortion;
    distortion[2] = distortion[1] + f.magref_distortion;
}

/** Lays the refinement segment after a set's cleanup at `out` (`room` bytes
 *  in all): SigProp's bytes are in place, MagRef's (coded into c.magref,
 *  k-th from the end) go in reverse behind them. */
J2KC_HD uint32_t ht_place_refinement(const HtJobContext &c, uint8_t *out, uint32_t room, const HtEncodeResult &r,
                                     const HtRefinementResult &f)
{
    if (r.bytes + f.sigprop_bytes + f.magref_bytes > room) return kHtEncodeOverflow;
    uint8_t *const magref_end = out + r.bytes + f.sigprop_bytes + f.magref_bytes;
    for (uint32_t i = 0; i < f.magref_bytes; ++i) magref_end[-1 - static_cast<int>(i)] = c.magref[i];
    return kHtEncodeOk;
}

/**
 * Codes one HT set at cleanup plane p into c.out[at, ...): the cleanup, and
 * for p >= 1 the refinement segment at p - 1. Returns the core's status;
 * `passes` = 0 when no sample is significant at p (nothing is kept).
 */
J2KC_HD uint32_t ht_encode_set(const GpuCodeBlockJob &job, const HtJobContext &c, uint32_t p, uint32_t at,
                               uint32_t (&end)[kHtSetPasses], uint64_t (&distortion)[kHtSetPasses], uint32_t &passes,
                               uint32_t &data_bitplanes)
{
    HtEncodeResult r;
    uint8_t *const out = c.out + at;
    const uint32_t room = c.capacity - at;
    uint32_t status =
        ht_encode_cleanup(c.coeffs, job.stride, job.width, job.height, job.num_bitplanes, p, out, room, c.scratch, r);
    data_bitplanes = r.data_bitplanes;
    passes = 0;
    if (status != kHtEncodeOk || r.bytes == 0) return status;
    end[0] = r.bytes;
    distortion[0] = r.distortion;
    passes = 1;
    if (p == 0) return kHtEncodeOk;
    HtRefinementResult f;
    const uint32_t magref_capacity = ht_magref_bound(job.width, job.height);
    status = ht_encode_refinement(c.coeffs, job.stride, job.width, job.height, job.num_bitplanes, p, out + r.bytes,
                                  room - r.bytes, c.magref, magref_capacity, c.sig, f);
    if (status != kHtEncodeOk || ht_place_refinement(c, out, room, r, f) != kHtEncodeOk) return kHtEncodeOverflow;
    ht_refinement_ends(r, f, end, distortion);
    passes = 3;
    return kHtEncodeOk;
}

/** The cleanup planes of a job's sets: from `top` - 1 down to `lowest`
 *  (top_plane and the kHtMaxSets - 1 below it, below Mb, at least 0). */
J2KC_HD void ht_set_planes(const GpuCodeBlockJob &job, uint32_t top_plane, uint32_t &lowest, uint32_t &top)
{
    lowest = top_plane + 1 > kHtMaxSets ? top_plane + 1 - kHtMaxSets : 0;
    top = top_plane < job.num_bitplanes ? top_plane + 1 : job.num_bitplanes;
}

/** Enters a coded set (cleanup at plane p, `passes` > 0 ending at `end`,
 *  starting at `at`) in `sets`, its distortions in `set_distortion`. */
J2KC_HD void ht_record_set(const GpuCodeBlockJob &job, HtCodingSets &sets,
                           uint64_t (&set_distortion)[kHtMaxSets][kHtSetPasses], uint32_t at, uint32_t p,
                           const uint32_t (&end)[kHtSetPasses], const uint64_t (&distortion)[kHtSetPasses],
                           uint32_t passes)
{
    const uint32_t s = sets.num_sets++;
    sets.start[s] = at;
    sets.zero_bitplanes[s] = static_cast<uint8_t>(job.num_bitplanes - 1 - p);
    sets.num_passes[s] = static_cast<uint8_t>(passes);
    for (uint32_t k = 0; k < kHtSetPasses; ++k) {
        sets.end[s][k] = k < passes ? end[k] : 0;
        set_distortion[s][k] = k < passes ? distortion[k] : 0;
    }
}

/** A job's result once its sets are coded (`bytes` in all): the ranked
 *  truncation points become its pass entries. */
J2KC_HD GpuCodeBlockResult ht_sets_job_result(const GpuCodeBlockJob &job, HtCodingSets &sets,
                                              const uint64_t (&set_distortion)[kHtMaxSets][kHtSetPasses],
                                              uint32_t bytes, uint32_t data_bitplanes, uint32_t *pass_end,
                                              uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    res.status = kGpuTier1Ok;
    res.data_bitplanes = static_cast<uint8_t>(data_bitplanes);
    if (sets.num_sets == 0) return res;
    uint32_t ends[kHtMaxPoints];
    uint64_t steps[kHtMaxPoints];
    const uint32_t points = ht_rank_points(sets, set_distortion, ends, steps);
    res.num_passes = points;
    res.bytes = bytes;
    res.zero_bitplanes = sets.zero_bitplanes[0];
    for (uint32_t k = 0; k < points; ++k) {
        if (pass_end) pass_end[job.pass_offset + k] = ends[k];
        if (pass_distortion) pass_distortion[job.pass_offset + k] = steps[k];
        // Points are not passes of one segment: Tier-2 reads terminations from the chosen set.
        if (pass_terminated) pass_terminated[job.pass_offset + k] = 1;
    }
    return res;
}

/**
 * Codes one job into out_bytes[out_offset + 1, ...): reads its coefficients,
 * uses its scratch (ht_scratch_layout), writes its output region and pass
 * entries, and returns the result. A job with bad geometry touches nothing
 * but *sets, which it empties.
 *
 * Without `sets`: one cleanup pass at plane 0, P = Mb - 1. With `sets`
 * (rate control, ht_coding_sets.h): the sets with cleanup at planes
 * top_plane down to top_plane + 1 - kHtMaxSets (below Mb, at least 0) that
 * have a significant sample, back to back, described in *sets; the pass
 * entries are the ranked truncation points, and the result's bytes span all
 * sets (P is that of the coarsest; Tier-2 takes the chosen set's from
 * *sets).
 */
J2KC_HD GpuCodeBlockResult ht_encode_job(const GpuCodeBlockJob &job, HtCodingSets *sets, uint32_t top_plane,
                                         uint8_t *out_bytes, uint32_t *pass_end, uint64_t *pass_distortion,
                                         uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    if (sets) sets->num_sets = sets->num_points = 0;
    res.status = ht_job_check(job);
    if (res.status != kGpuTier1Ok) return res;
    const HtJobContext c = ht_job_context(job, out_bytes);
    if (!sets) {
        HtEncodeResult r;
        const uint32_t status = ht_encode_cleanup(c.coeffs, job.stride, job.width, job.height, job.num_bitplanes, 0,
                                                  c.out, c.capacity, c.scratch, r);
        return ht_cleanup_job_result(job, status, r, pass_end, pass_distortion, pass_terminated);
    }

    uint64_t set_distortion[kHtMaxSets][kHtSetPasses] = {};
    uint32_t at = 0, data_bitplanes = 0, lowest, top;
    ht_set_planes(job, top_plane, lowest, top);
    for (uint32_t p = top; p-- > lowest;) {
        uint32_t end[kHtSetPasses] = {}, passes = 0;
        uint64_t distortion[kHtSetPasses] = {};
        const uint32_t status = ht_encode_set(job, c, p, at, end, distortion, passes, data_bitplanes);
        if (status != kHtEncodeOk) {
            res.status = ht_job_status(status);
            res.data_bitplanes = static_cast<uint8_t>(data_bitplanes);
            return res;
        }
        if (passes == 0) continue;
        ht_record_set(job, *sets, set_distortion, at, p, end, distortion, passes);
        at += end[passes - 1];
    }
    return ht_sets_job_result(job, *sets, set_distortion, at, data_bitplanes, pass_end, pass_distortion,
                              pass_terminated);
}

}  // namespace htenc
}  // namespace j2kc
