/**
 * @file ht_decode_job.h
 * @brief One HT code-block (ISO/IEC 15444-15) of a Tier-1 job table
 * (tier1_decode_job.h's T1DecodeJob, style bit 0x40) decoded by the shared HT
 * block decoder (ht_block_decoder_core.h), on the host (the tests run it
 * over job tables, as Tier1Decoder decodes a block); the CUDA kernel of
 * ht_decode.cu decodes the same jobs a warp each from the same core's pieces,
 * and both give Tier1Decoder's values.
 * t1_decode_any_job() picks the Part-1 or the HT decoder by the job's style.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/codeword_segment.h"
#include "tier1/ht_block_decoder_core.h"
#include "tier1/tier1_decode_job.h"

namespace j2kc {

/**
 * Decodes an HT job into out[out_offset + y * out_stride + x], exactly the
 * values Tier1Decoder::decode writes for the block, and returns kT1JobOk; or
 * zeroes the block and returns kT1JobCorrupt (ht::HtStatus other than kHtOk)
 * or kT1JobUnsupported (geometry, more than 30 planes, too little scratch).
 * The values are built in place in `out` (sign and magnitude), then turned
 * into two's complement. `scratch` holds scratch_words >=
 * ht::ht_scratch_words(width) words (t1_decode_job_scratch_words is always
 * enough).
 */
J2KC_HT_FN uint8_t t1_decode_job_ht(const T1DecodeJob &job, const uint8_t *bytes, const CodewordSegment *segments,
                                    int32_t *out, uint32_t *scratch, size_t scratch_words)
{
    const uint32_t width = job.width, height = job.height;
    bool decode = false;
    const bool supported = ht::ht_scratch_words(width) <= scratch_words;
    const uint8_t checked = t1_decode_job_check(job, segments, out, supported, decode);
    if (!decode) return checked;
    const uint32_t planes = uint32_t{job.num_bitplanes} + job.roi_shift;

    uint32_t *values = reinterpret_cast<uint32_t *>(out + job.out_offset);
    const uint32_t status = ht::ht_decode_block(bytes + job.data_offset, segments + job.segment_offset,
                                                job.num_segments, width, height, planes, job.zero_bitplanes,
                                                (job.style & kT1JobStyleCausal) != 0, values, job.out_stride, scratch);
    if (status != ht::kHtOk) {
        t1_decode_job_clear(job, out);
        return kT1JobCorrupt;
    }
    t1_decode_job_twos_complement(job, values);
    return kT1JobOk;
}

/** The job's decoder by its style: HT (t1_decode_job_ht) or Part-1 (t1_decode_job). */
J2KC_HT_FN uint8_t t1_decode_any_job(const T1DecodeJob &job, const uint8_t *bytes, const CodewordSegment *segments,
                                     int32_t *out, uint32_t *scratch, size_t scratch_words)
{
    if (job.style & kT1JobStyleHt) return t1_decode_job_ht(job, bytes, segments, out, scratch, scratch_words);
    return t1_decode_job(job, bytes, segments, out, scratch, scratch_words);
}

}  // namespace j2kc
