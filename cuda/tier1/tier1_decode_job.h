/**
 * @file tier1_decode_job.h
 * @brief One code-block of EBCOT Tier-1 decoding (ISO/IEC 15444-1 Annex D
 * over the MQ decoder of Annex C.3) as a self-contained job: its codeword
 * bytes and segments in shared arrays, its parameters, and its place in a
 * coefficient plane. t1_decode_job() is J2KC_HD: the CUDA kernel
 * (tier1_decode.cu) runs it one thread per job, and the host can run the same
 * function over the same table (tests), so both give Tier1Decoder's values.
 * It decodes with tier1_decoder_simt.h, the passes laid out for a GPU thread.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "tier1/codeword_segment.h"
#include "tier1/tier1_decoder_simt.h"

namespace j2kc {

/** A code-block to decode. Plain data: it travels to the device as bytes. */
struct T1DecodeJob {
    uint64_t data_offset;     ///< first byte of the block's segments in the byte buffer
    uint64_t out_offset;      ///< element of the block's sample (0, 0) in the output buffer
    uint32_t data_length;     ///< bytes of all its segments
    uint32_t segment_offset;  ///< first of its segments in the segment table
    uint32_t num_segments;    ///< 0: the block is all zero
    uint32_t out_stride;      ///< elements between the block's rows in the output
    uint16_t width, height;   ///< at most 1024 each, 4096 samples
    uint8_t orientation;      ///< BandOrientation (LL, HL, LH, HH)
    uint8_t style;            ///< cblk_style bits
    uint8_t num_bitplanes;    ///< Mb of the band
    uint8_t zero_bitplanes;   ///< P
    uint8_t roi_shift;        ///< s of RGN, 0 without ROI
    uint8_t reserved[3];
};
static_assert(sizeof(T1DecodeJob) == 48, "T1DecodeJob is a fixed 48-byte record");

/** Code-block style bit of HT blocks (cblk_style::kHighThroughput). */
constexpr uint8_t kT1JobStyleHt = 0x40;
/** Vertically causal context formation (cblk_style::kVerticallyCausal). */
constexpr uint8_t kT1JobStyleCausal = 0x08;

/** Result of a job (per-job status byte of the kernel). */
enum T1DecodeJobStatus : uint8_t {
    kT1JobOk = 0,
    kT1JobCorrupt = 1,      ///< invalid codewords (Tier1Decoder throws INVALID_DATA): zero output
    kT1JobUnsupported = 2,  ///< geometry, > 30 planes (Tier1Decoder throws), or an HT job, which
                            ///< t1_decode_job_ht (ht_decode_job.h) decodes instead: zero output
};

/** Scratch words one job needs: the stripe-column flags. */
J2KC_HD size_t t1_decode_job_scratch_words(uint32_t width, uint32_t height)
{
    return t1simt::flag_words(width, height);
}

/** Writes zero over the job's block in `out`. */
J2KC_T1D_FN void t1_decode_job_clear(const T1DecodeJob &job, int32_t *out)
{
    int32_t *block = out + job.out_offset;
    J2KC_DEVICE_NO_UNROLL
    for (uint32_t y = 0; y < job.height; ++y)
        for (uint32_t x = 0; x < job.width; ++x) block[size_t{y} * job.out_stride + x] = 0;
}

/**
 * The checks both block decoders (Part 1's below, HT's in ht_decode_job.h)
 * make first, on a block whose samples the caller zeroes or writes in full:
 * kT1JobOk with `decode` set when it has passes to decode, kT1JobOk alone
 * when it has none, kT1JobUnsupported for what Tier1Decoder rejects (a side
 * above 1024, more than 4096 samples, more than 30 planes) or the decoder
 * cannot take (`supported` false), kT1JobCorrupt for segments longer than
 * the job's data.
 */
J2KC_T1D_INLINE uint8_t t1_decode_job_verdict(const T1DecodeJob &job, const CodewordSegment *segments, bool supported,
                                              bool &decode)
{
    decode = false;
    if (job.width == 0 || job.height == 0) return kT1JobOk;
    if (job.width > 1024 || job.height > 1024 || uint32_t{job.width} * job.height > 4096 || !supported)
        return kT1JobUnsupported;
    uint64_t total_passes = 0, total_bytes = 0;
    J2KC_DEVICE_NO_UNROLL
    for (uint32_t k = 0; k < job.num_segments; ++k) {
        total_passes += segments[job.segment_offset + k].passes;
        total_bytes += segments[job.segment_offset + k].length;
    }
    if (total_passes == 0) return kT1JobOk;
    if (uint32_t{job.num_bitplanes} + job.roi_shift > 30) return kT1JobUnsupported;
    if (total_bytes > job.data_length) return kT1JobCorrupt;
    decode = true;
    return kT1JobOk;
}

/** Zeroes the block, then t1_decode_job_verdict. */
J2KC_T1D_INLINE uint8_t t1_decode_job_check(const T1DecodeJob &job, const CodewordSegment *segments, int32_t *out,
                                            bool supported, bool &decode)
{
    t1_decode_job_clear(job, out);
    return t1_decode_job_verdict(job, segments, supported, decode);
}

/** A value in sign and magnitude (bit 31 the sign) in two's complement. */
J2KC_T1D_INLINE uint32_t t1_twos_complement(uint32_t u)
{
    const uint32_t mag = u & 0x7FFFFFFFu;
    return (u >> 31) ? 0u - mag : mag;
}

/** Turns the block's values, built in sign and magnitude, into two's complement in place. */
J2KC_T1D_INLINE void t1_decode_job_twos_complement(const T1DecodeJob &job, uint32_t *values)
{
    J2KC_DEVICE_NO_UNROLL
    for (uint32_t y = 0; y < job.height; ++y) {
        uint32_t *row = values + size_t{y} * job.out_stride;
        for (uint32_t x = 0; x < job.width; ++x) row[x] = t1_twos_complement(row[x]);
    }
}

/**
 * Decodes one job into out[out_offset + y * out_stride + x], exactly the
 * values Tier1Decoder::decode writes (tier1.h), and returns kT1JobOk; or,
 * for the blocks Tier1Decoder rejects, zeroes the block and returns why.
 * `bytes` and `segments` are the whole tables; nothing outside the job's
 * [data_offset, data_offset + data_length) and its segments is read.
 * `scratch` holds at least `scratch_words` words (t1_decode_job_scratch_words
 * of the block). The values are built in place in `out` (sign and
 * magnitude), then turned into two's complement.
 */
J2KC_T1D_FN uint8_t t1_decode_job(const T1DecodeJob &job, const uint8_t *bytes, const CodewordSegment *segments,
                                  int32_t *out, uint32_t *scratch, size_t scratch_words)
{
    const uint32_t width = job.width, height = job.height;
    const bool supported =
        t1_decode_job_scratch_words(width, height) <= scratch_words && (job.style & kT1JobStyleHt) == 0;
    bool decode = false;
    const uint8_t checked = t1_decode_job_check(job, segments, out, supported, decode);
    if (!decode) return checked;
    const uint32_t planes = uint32_t{job.num_bitplanes} + job.roi_shift;
    if (job.zero_bitplanes >= planes) return kT1JobCorrupt;

    t1dec::BlockDec b;
    t1simt::prepare_flags(b, scratch, width, height);
    b.vstride = job.out_stride;
    b.values = reinterpret_cast<uint32_t *>(out + job.out_offset);
    b.orientation = job.orientation & 3u;
    b.vc = (job.style & kT1JobStyleCausal) != 0;
    t1_reset_contexts(b.cx);
    const int nbp = static_cast<int>(planes) - job.zero_bitplanes;
    uint32_t bad_pass = 0;
    const uint32_t status = t1simt::decode_block(b, bytes + job.data_offset, segments + job.segment_offset,
                                                 job.num_segments, job.style, nbp, bad_pass);
    if (status != t1dec::kDecodeOk) {
        t1_decode_job_clear(job, out);
        return kT1JobCorrupt;
    }
    t1_decode_job_twos_complement(job, b.values);  // as write_output
    return kT1JobOk;
}

}  // namespace j2kc
