/**
 * @file ht_gpu_job.h
 * @brief The body of the CUDA HT block-encoder kernel for one job (ISO/IEC
 * 15444-15 cleanup pass over ht_block_encoder_core.h): argument checks, the
 * job's scratch layout, the call into the shared coder and the job's result.
 * J2KC_HD, so the host tests run the very same job logic over host memory
 * (the kernel only adds the thread-to-job mapping).
 *
 * Jobs, results and pass arrays are Part 1's (tier1_gpu.h), so the rest of
 * the GPU pipeline (result gathering, rate control, Tier-2) handles HT
 * blocks unchanged: a coded block has one pass, the cleanup pass at
 * bit-plane 0, and P = Mb - 1 zero bit-planes (with a single HT cleanup pass
 * the cleanup's plane is Mb - 1 - P).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/ht_block_encoder_core.h"
#include "tier1/tier1_gpu.h"

namespace j2kc {
namespace htenc {

J2KC_HD constexpr size_t ht_align16(size_t v) { return (v + 15) & ~size_t{15}; }

/** Byte offsets of the pieces of a job's scratch area. */
struct HtScratchLayout {
    size_t mel, vlc, lines, total;
};

J2KC_HD HtScratchLayout ht_scratch_layout(uint32_t width, uint32_t height)
{
    HtScratchLayout l{};
    l.mel = 0;
    l.vlc = ht_align16(ht_mel_bound(width, height));
    l.lines = l.vlc + ht_align16(ht_vlc_bound(width, height));
    l.total = l.lines + ht_align16(ht_line_scratch_bytes(width));
    return l;
}

/** Output region of a job (its first byte is the dummy byte of Part 1's
 *  layout, unused here) that always holds the segment. */
J2KC_HD size_t ht_job_capacity_bound(uint32_t width, uint32_t height, uint32_t planes)
{
    return 1 + size_t{ht_segment_bound(width, height, planes)};
}

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
J2KC_HD GpuCodeBlockResult ht_encode_job(const GpuCodeBlockJob &job, uint8_t *out_bytes, uint32_t *pass_end,
                                         uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    if (job.width > kMaxSide || job.height > kMaxSide || uint32_t{job.width} * job.height > kMaxSamples) {
        res.status = kGpuTier1BadGeometry;
        return res;
    }
    if (job.num_bitplanes > kMaxBitplanes) {
        res.status = kGpuTier1BadBitplanes;
        return res;
    }
    uint8_t *const scratch = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch));
    const HtScratchLayout l = ht_scratch_layout(job.width, job.height);
    const HtEncodeScratch s{scratch + l.mel, ht_mel_bound(job.width, job.height), scratch + l.vlc,
                            ht_vlc_bound(job.width, job.height), scratch + l.lines};
    HtEncodeResult r;
    const uint32_t capacity = job.out_capacity > 0 ? job.out_capacity - 1 : 0;
    const uint32_t status =
        ht_encode_cleanup(reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride,
                          job.width, job.height, job.num_bitplanes, 0, out_bytes + job.out_offset + 1, capacity, s, r);
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

}  // namespace htenc
}  // namespace j2kc
