/**
 * @file t1_gpu_job.h
 * @brief The body of the CUDA Tier-1 kernel for one job (ISO/IEC 15444-1
 * Annex D): argument checks, the job's scratch layout, and the call into the
 * shared coder of t1_encoder_core.h. J2KC_HD, so the host tests run the very
 * same job logic over host memory (the kernel only adds the thread-to-job
 * mapping).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/t1_encoder_core.h"
#include "tier1/t1_warp_coder.h"
#include "tier1/tier1_gpu.h"

namespace j2kc {
namespace t1core {

/** Byte offsets of the pieces of a job's scratch area. */
struct T1ScratchLayout {
    size_t flags, values, snapshots, raw_ends, total;
};

J2KC_HD constexpr size_t align16(size_t v) { return (v + 15) & ~size_t{15}; }

J2KC_HD T1ScratchLayout t1_scratch_layout(uint32_t width, uint32_t height)
{
    const size_t n = t1_state_size(width, height);
    T1ScratchLayout l{};
    l.flags = 0;
    l.values = align16(n * sizeof(uint16_t));
    l.snapshots = l.values + align16(n * sizeof(uint32_t));
    l.raw_ends = l.snapshots + align16(kMaxPasses * sizeof(MqPassSnapshot));
    l.total = l.raw_ends + align16(kMaxPasses * sizeof(uint32_t));
    return l;
}

/**
 * Codes one job: reads its coefficients, uses its scratch, writes its output
 * region and pass entries, and returns the result. A job with bad geometry
 * touches nothing (its scratch layout would be meaningless).
 */
J2KC_HD GpuCodeBlockResult t1_encode_job(const GpuCodeBlockJob &job, uint8_t *out_bytes, uint32_t *pass_end,
                                         uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    if (job.width > kMaxSide || job.height > kMaxSide || uint32_t{job.width} * job.height > kMaxSamples) {
        res.status = kGpuTier1BadGeometry;
        return res;
    }
    uint8_t *const scratch = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch));
    const T1ScratchLayout l = t1_scratch_layout(job.width, job.height);
    const T1EncodeScratch ws{reinterpret_cast<uint16_t *>(scratch + l.flags),
                             reinterpret_cast<uint32_t *>(scratch + l.values),
                             reinterpret_cast<MqPassSnapshot *>(scratch + l.snapshots),
                             reinterpret_cast<uint32_t *>(scratch + l.raw_ends)};
    T1EncodeOutput out{};
    out.buf = out_bytes + job.out_offset;
    out.capacity = job.out_capacity;
    out.pass_end = pass_end + job.pass_offset;
    out.pass_distortion = pass_distortion + job.pass_offset;
    out.pass_terminated = pass_terminated + job.pass_offset;
    const uint32_t status =
        t1_encode_block(reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride,
                        job.width, job.height, job.orientation, job.style, job.num_bitplanes, ws, out);
    res.status = static_cast<uint8_t>(status);
    res.data_bitplanes = out.data_bitplanes;
    if (status == kT1EncodeOk) {
        res.num_passes = out.num_passes;
        res.bytes = out.bytes;
        res.zero_bitplanes = out.zero_bitplanes;
    }
    return res;
}

/**
 * The same job coded by a warp (t1_warp_coder.h): every lane of the warp
 * calls it with the same job; the result is valid in lane 0.
 */
J2KC_HD GpuCodeBlockResult t1_warp_encode_job(T1WarpShared &sh, const GpuCodeBlockJob &job, uint8_t *out_bytes,
                                              uint32_t *pass_end, uint64_t *pass_distortion,
                                              uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    if (job.width > kMaxSide || job.height > kMaxSide || uint32_t{job.width} * job.height > kMaxSamples) {
        res.status = kGpuTier1BadGeometry;
        return res;
    }
    uint8_t *const scratch = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch));
    const T1ScratchLayout l = t1_scratch_layout(job.width, job.height);
    const T1EncodeScratch ws{reinterpret_cast<uint16_t *>(scratch + l.flags),
                             reinterpret_cast<uint32_t *>(scratch + l.values),
                             reinterpret_cast<MqPassSnapshot *>(scratch + l.snapshots),
                             reinterpret_cast<uint32_t *>(scratch + l.raw_ends)};
    T1EncodeOutput out{};
    out.buf = out_bytes + job.out_offset;
    out.capacity = job.out_capacity;
    out.pass_end = pass_end + job.pass_offset;
    out.pass_distortion = pass_distortion + job.pass_offset;
    out.pass_terminated = pass_terminated + job.pass_offset;
    // Column words and magnitudes (t1_stripes(h) * w and 4x that entries)
    // fit in the flag and value regions of the scratch layout.
    const uint32_t status = t1_warp_encode_block(
        sh, reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride, job.width,
        job.height, job.orientation, job.style, job.num_bitplanes, ws.flags, ws.values, ws, out);
    res.status = static_cast<uint8_t>(status);
    res.data_bitplanes = out.data_bitplanes;
    if (status == kT1EncodeOk) {
        res.num_passes = out.num_passes;
        res.bytes = out.bytes;
        res.zero_bitplanes = out.zero_bitplanes;
    }
    return res;
}

}  // namespace t1core
}  // namespace j2kc
