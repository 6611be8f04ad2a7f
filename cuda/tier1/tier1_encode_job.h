/**
 * @file tier1_encode_job.h
 * @brief The body of the CUDA Tier-1 kernel for one job (ISO/IEC 15444-1
 * Annex D): argument checks, the job's scratch layout, and the call into the
 * shared coder of tier1_encoder_core.h. J2KC_HD, so the host tests run the very
 * same job logic over host memory (the kernel only adds the thread-to-job
 * mapping).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/tier1_cuda.h"
#include "tier1/tier1_encoder_core.h"
#include "tier1/tier1_two_phase_coder.h"
#include "tier1/tier1_warp_coder.h"

namespace j2kc {
namespace t1core {

/** Byte offsets of the pieces of a job's scratch area. The two-phase
 *  kernel's pieces (pass ends of the decision stream, the stream itself) come
 *  last, so an area sized for more planes serves a job of fewer. */
struct T1ScratchLayout {
    size_t flags, values, snapshots, raw_ends, pass_dec_end, decisions, decision_bytes, total;
};

J2KC_HD constexpr size_t align16(size_t v) { return (v + 15) & ~size_t{15}; }

J2KC_HD T1ScratchLayout t1_scratch_layout(uint32_t width, uint32_t height, uint32_t planes = kMaxBitplanes)
{
    const size_t n = t1_state_size(width, height);
    T1ScratchLayout l{};
    l.flags = 0;
    l.values = align16(n * sizeof(uint16_t));
    l.snapshots = l.values + align16(n * sizeof(uint32_t));
    l.raw_ends = l.snapshots + align16(kMaxPasses * sizeof(MqPassSnapshot));
    l.pass_dec_end = l.raw_ends + align16(kMaxPasses * sizeof(uint32_t));
    l.decisions = l.pass_dec_end + align16(kMaxPasses * sizeof(uint32_t));
    l.decision_bytes = t1_decision_bound(width, height, planes < kMaxBitplanes ? planes : kMaxBitplanes);
    l.total = l.decisions + align16(l.decision_bytes);
    return l;
}

/**
 * A fresh result for `job`, or the geometry verdict before any scratch is
 * touched (the scratch layout assumes a block the encoders accept).
 * Returns false when the job is rejected (res says why).
 */
J2KC_HD bool t1_job_begin(const GpuCodeBlockJob &job, GpuCodeBlockResult &res)
{
    res = GpuCodeBlockResult{};
    res.zero_bitplanes = job.num_bitplanes;
    if (job.width > kMaxSide || job.height > kMaxSide || uint32_t{job.width} * job.height > kMaxSamples) {
        res.status = kGpuTier1BadGeometry;
        return false;
    }
    return true;
}

/** The coder scratch regions of a job's scratch for layout `l`. */
J2KC_HD T1EncodeScratch t1_job_scratch(uint8_t *scratch, const T1ScratchLayout &l)
{
    return T1EncodeScratch{
        reinterpret_cast<uint16_t *>(scratch + l.flags), reinterpret_cast<uint32_t *>(scratch + l.values),
        reinterpret_cast<MqPassSnapshot *>(scratch + l.snapshots), reinterpret_cast<uint32_t *>(scratch + l.raw_ends)};
}

/** The job's windows of the batch's output arrays (null arrays stay null). */
J2KC_HD T1EncodeOutput t1_job_output(const GpuCodeBlockJob &job, uint8_t *out_bytes, uint32_t *pass_end,
                                     uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    T1EncodeOutput out{};
    out.buf = out_bytes ? out_bytes + job.out_offset : nullptr;
    out.capacity = job.out_capacity;
    out.pass_end = pass_end ? pass_end + job.pass_offset : nullptr;
    out.pass_distortion = pass_distortion ? pass_distortion + job.pass_offset : nullptr;
    out.pass_terminated = pass_terminated ? pass_terminated + job.pass_offset : nullptr;
    return out;
}

/** Completes `res` from an encoder's status and outputs. */
J2KC_HD void t1_job_finish(GpuCodeBlockResult &res, uint32_t status, const T1EncodeOutput &out)
{
    res.status = static_cast<uint8_t>(status);
    res.data_bitplanes = out.data_bitplanes;
    if (status == kT1EncodeOk) {
        res.num_passes = out.num_passes;
        res.bytes = out.bytes;
        res.zero_bitplanes = out.zero_bitplanes;
    }
}

/**
 * Codes one job: reads its coefficients, uses its scratch, writes its output
 * region and pass entries, and returns the result. A job with bad geometry
 * touches nothing (its scratch layout would be meaningless).
 */
J2KC_HD GpuCodeBlockResult t1_encode_job(const GpuCodeBlockJob &job, uint8_t *out_bytes, uint32_t *pass_end,
                                         uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res;
    if (!t1_job_begin(job, res)) return res;
    const T1EncodeScratch ws = t1_job_scratch(reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch)),
                                              t1_scratch_layout(job.width, job.height));
    T1EncodeOutput out = t1_job_output(job, out_bytes, pass_end, pass_distortion, pass_terminated);
    const uint32_t status =
        t1_encode_block(reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride, job.width,
                        job.height, job.orientation, job.style, job.num_bitplanes, ws, out, job.lowest_plane);
    t1_job_finish(res, status, out);
    return res;
}

/**
 * The same job coded by a warp (tier1_warp_coder.h): every lane of the warp
 * calls it with the same job; the result is valid in lane 0.
 */
J2KC_HD GpuCodeBlockResult t1_warp_encode_job(T1WarpShared &sh, const GpuCodeBlockJob &job, uint8_t *out_bytes,
                                              uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res;
    if (!t1_job_begin(job, res)) return res;
    const T1EncodeScratch ws = t1_job_scratch(reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch)),
                                              t1_scratch_layout(job.width, job.height));
    T1EncodeOutput out = t1_job_output(job, out_bytes, pass_end, pass_distortion, pass_terminated);
    // Column words and magnitudes (t1_stripes(h) * w and 4x that entries)
    // fit in the flag and value regions of the scratch layout.
    const uint32_t status = t1_warp_encode_block(
        sh, reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride, job.width, job.height,
        job.orientation, job.style, job.num_bitplanes, job.lowest_plane, ws.flags, ws.values, ws, out);
    t1_job_finish(res, status, out);
    return res;
}

/** The job's pieces of the two-phase coder (tier1_two_phase_coder.h). */
struct T1TwoPhaseJobView {
    T1EncodeScratch ws;
    uint16_t *words;
    uint32_t *mags;
    uint32_t *pass_dec_end;
    uint8_t *decisions;
    uint32_t decision_cap;
};

J2KC_HD T1TwoPhaseJobView t1_two_phase_view(const GpuCodeBlockJob &job)
{
    uint8_t *const scratch = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(job.scratch));
    const T1ScratchLayout l = t1_scratch_layout(job.width, job.height, job.num_bitplanes);
    T1TwoPhaseJobView v{};
    v.ws = t1_job_scratch(scratch, l);
    v.words = v.ws.flags;
    v.mags = v.ws.values;
    v.pass_dec_end = reinterpret_cast<uint32_t *>(scratch + l.pass_dec_end);
    v.decisions = scratch + l.decisions;
    v.decision_cap = static_cast<uint32_t>(l.decision_bytes);
    return v;
}

/**
 * Phase 1 of the two-phase coder for one job, by a warp (every lane calls
 * it with the same job; the result is valid in lane 0): checks, context
 * modelling into the job's scratch, distortion and termination flags per
 * pass. The result's bytes are phase 2's; a status other than ok, or no
 * passes, means phase 2 has nothing to do.
 */
J2KC_HD GpuCodeBlockResult t1_model_job(T1WarpShared &sh, const GpuCodeBlockJob &job, uint64_t *pass_distortion,
                                        uint8_t *pass_terminated)
{
    GpuCodeBlockResult res;
    if (!t1_job_begin(job, res)) return res;
    const T1TwoPhaseJobView v = t1_two_phase_view(job);
    // Phase 1 writes no codeword bytes and no pass ends.
    T1EncodeOutput out = t1_job_output(job, nullptr, nullptr, pass_distortion, pass_terminated);
    const uint32_t status =
        t1w_model_block(sh, reinterpret_cast<const int32_t *>(static_cast<uintptr_t>(job.coeffs)), job.stride,
                        job.width, job.height, job.orientation, job.style, job.num_bitplanes, job.lowest_plane, v.words,
                        v.mags, v.decisions, v.decision_cap, v.pass_dec_end, out);
    t1_job_finish(res, status, out);  // out.bytes is 0: phase 2 sets the bytes
    return res;
}

/**
 * Phase 2 for one job, by one thread: MQ/raw coding of phase 1's decisions.
 * `res` is phase 1's result and is completed (bytes; the status becomes
 * kGpuTier1Overflow if the output region proves too small).
 */
J2KC_HD void t1_code_job(const GpuCodeBlockJob &job, GpuCodeBlockResult &res, uint8_t *out_bytes, uint32_t *pass_end,
                         uint32_t *cx, uint32_t cx_stride, const MqWordTransition *table)
{
    if (res.status != kGpuTier1Ok || res.num_passes == 0) return;
    const T1TwoPhaseJobView v = t1_two_phase_view(job);
    T1EncodeOutput out = t1_job_output(job, out_bytes, pass_end, nullptr, nullptr);
    out.num_passes = res.num_passes;
    const uint32_t status = t1_code_block_decisions(v.decisions, v.pass_dec_end, job.width, job.height, job.style, v.ws,
                                                    out, cx, cx_stride, table);
    if (status != kT1EncodeOk) {
        res.status = static_cast<uint8_t>(status);
        res.num_passes = 0;
        res.bytes = 0;
        res.zero_bitplanes = job.num_bitplanes;
        return;
    }
    res.bytes = out.bytes;
}

}  // namespace t1core
}  // namespace j2kc
