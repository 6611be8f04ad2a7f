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
 * blocks unchanged. A block is coded either as one cleanup pass at plane 0,
 * with P = Mb - 1 zero bit-planes (the cleanup's plane is Mb - 1 - P), or,
 * for rate control, as an HT set of three passes: cleanup at plane 1, then
 * SigProp and MagRef at plane 0, P = Mb - 2, three truncation points. A
 * block with no magnitude above 1 (or a band of one plane) keeps the single
 * cleanup pass.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/ht_block_encoder_core.h"
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
    l.magref = l.sig + ht_align16(size_t{width} * height);
    l.total = l.magref + ht_align16(ht_magref_bound(width, height));
    return l;
}

/** Output region of a job (its first byte is the dummy byte of Part 1's
 *  layout, unused here) that always holds the segment, and with `refine`
 *  the refinement segment after it. */
J2KC_HD size_t ht_job_capacity_bound(uint32_t width, uint32_t height, uint32_t planes, bool refine)
{
    const size_t refinement = refine ? size_t{ht_sigprop_bound(width, height)} + ht_magref_bound(width, height) : 0;
    return 1 + size_t{ht_segment_bound(width, height, planes)} + refinement;
}

/** Pass entries a job writes: 3 with `refine`, else 1. */
J2KC_HD uint32_t ht_job_max_passes(bool refine) { return refine ? 3u : 1u; }

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

/**
 * Codes one job's cleanup segment into out_bytes[out_offset + 1, ...): reads
 * its coefficients, uses its scratch (ht_scratch_layout), writes its output
 * region and its single pass entry, and returns the result. A job with bad
 * geometry touches nothing.
 */
J2KC_HD GpuCodeBlockResult ht_encode_job(const GpuCodeBlockJob &job, bool refine, uint8_t *out_bytes,
                                         uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    if (job.width > ht::kMaxSide || job.height > ht::kMaxSide || uint32_t{job.width} * job.height > ht::kMaxSamples) {
        res.status = kGpuTier1BadGeometry;
        return res;
    }
    if (job.num_bitplanes > ht::kMaxBitplanes) {
        res.status = kGpuTier1BadBitplanes;
        return res;
    }
    uint8_t *const scratch = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch));
    const HtScratchLayout l = ht_scratch_layout(job.width, job.height);
    const HtEncodeScratch s{scratch + l.mel, ht_mel_bound(job.width, job.height), scratch + l.vlc,
                            ht_vlc_bound(job.width, job.height), scratch + l.lines};
    HtEncodeResult r;
    const int32_t *coeffs = reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs));
    uint8_t *const out = out_bytes + job.out_offset + 1;
    const uint32_t capacity = job.out_capacity > 0 ? job.out_capacity - 1 : 0;
    // The three-pass set first; a block it leaves without a cleanup takes the single pass.
    uint32_t p = refine && job.num_bitplanes >= 2 ? 1 : 0;
    uint32_t status =
        ht_encode_cleanup(coeffs, job.stride, job.width, job.height, job.num_bitplanes, p, out, capacity, s, r);
    if (p == 1 && status == kHtEncodeOk && r.bytes == 0) {
        p = 0;
        status = ht_encode_cleanup(coeffs, job.stride, job.width, job.height, job.num_bitplanes, p, out, capacity, s, r);
    }
    res.status = ht_job_status(status);
    res.data_bitplanes = static_cast<uint8_t>(r.data_bitplanes);
    if (status != kHtEncodeOk || r.bytes == 0) return res;

    uint32_t ends[3] = {r.bytes, 0, 0};
    uint64_t distortion[3] = {r.distortion, 0, 0};
    uint32_t passes = 1;
    if (p == 1) {
        HtRefinementResult f;
        status = ht_encode_refinement(coeffs, job.stride, job.width, job.height, p, out + r.bytes,
                                      capacity - r.bytes, scratch + l.magref, ht_magref_bound(job.width, job.height),
                                      scratch + l.sig, f);
        if (status != kHtEncodeOk || r.bytes + f.sigprop_bytes + f.magref_bytes > capacity) {
            res.status = kGpuTier1Overflow;
            return res;
        }
        uint8_t *const magref_end = out + r.bytes + f.sigprop_bytes + f.magref_bytes;
        for (uint32_t i = 0; i < f.magref_bytes; ++i) magref_end[-1 - static_cast<int>(i)] = scratch[l.magref + i];
        ends[1] = r.bytes + f.sigprop_bytes;
        ends[2] = ends[1] + f.magref_bytes;
        distortion[1] = f.sigprop_distortion;
        distortion[2] = f.magref_distortion;
        passes = 3;
    }
    res.num_passes = passes;
    res.bytes = ends[passes - 1];
    res.zero_bitplanes = static_cast<uint8_t>(job.num_bitplanes - 1 - p);
    for (uint32_t k = 0; k < passes; ++k) {
        if (pass_end) pass_end[job.pass_offset + k] = ends[k];
        if (pass_distortion) pass_distortion[job.pass_offset + k] = distortion[k];
        // The cleanup segment ends at the cleanup; SigProp and MagRef share the second.
        if (pass_terminated) pass_terminated[job.pass_offset + k] = k != 1;
    }
    return res;
}

}  // namespace htenc
}  // namespace j2kc
