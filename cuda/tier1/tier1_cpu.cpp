/**
 * @file tier1_cpu.cpp
 * @brief EBCOT Tier-1 of ISO/IEC 15444-1 Annex D on the CPU: the encoder
 * (reference for the CUDA coder) and the production decoder.
 *
 * The encoder's coding passes, flag layout and driver are the J2KC_HD code
 * of tier1_encoder_core.h, shared with the CUDA encoder (tier1.cu), so both
 * backends emit the same bytes. The decoder is the host-only fast layout of
 * tier1_decoder_core.h (one word per stripe column, MQ registers in locals);
 * tests/tier1_decoder_oracle.h keeps the straightforward decoder it replaced
 * as the reference it must match bit for bit. This file adds what only the
 * host needs: argument checks that throw, and reusable scratch.
 */
#include "tier1/tier1.h"

#include <cstring>
#include <vector>

#include "codestream/markers.h"
#include "common/status.h"
#include "tier1/mq_coder.h"
#include "tier1/tier1_contexts.h"
#include "tier1/tier1_decode_job.h"
#include "tier1/tier1_decoder_core.h"
#include "tier1/tier1_encoder_core.h"

namespace j2kc {
namespace {

using namespace t1_flag;
using t1core::BlockState;

static_assert(t1core::kStyleBypass == cblk_style::kBypass && t1core::kStyleReset == cblk_style::kReset &&
                  t1core::kStyleTermAll == cblk_style::kTermAll &&
                  t1core::kStyleVerticallyCausal == cblk_style::kVerticallyCausal &&
                  t1core::kStylePredictable == cblk_style::kPredictableTermination &&
                  t1core::kStyleSegmentation == cblk_style::kSegmentationSymbols &&
                  t1core::kStyleHighThroughput == cblk_style::kHighThroughput,
              "tier1_encoder_core.h style bits follow codestream/markers.h");
static_assert(t1core::kMaxSide == kTier1MaxSide && t1core::kMaxSamples == kTier1MaxSamples &&
                  t1core::kMaxBitplanes == kTier1MaxBitplanes,
              "tier1_encoder_core.h limits follow tier1.h");

void check_geometry(uint32_t width, uint32_t height)
{
    J2KC_CHECK_ARG(width <= kTier1MaxSide && height <= kTier1MaxSide && uint64_t{width} * height <= kTier1MaxSamples,
                   "code-block %ux%u exceeds 1024 per side or 4096 samples", width, height);
}

struct EncoderScratch {
    std::vector<uint16_t> flags;
    std::vector<uint32_t> values;
    std::vector<uint8_t> buf;
    std::vector<MqPassSnapshot> snapshots;
    std::vector<uint32_t> raw_ends;
    std::vector<uint32_t> pass_end;
    std::vector<uint64_t> pass_distortion;
    std::vector<uint8_t> pass_terminated;
};

template <typename T>
T *at_least(std::vector<T> &v, size_t n)
{
    if (v.size() < n) v.resize(n);
    return v.data();
}

}  // namespace

void encode_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                       const Tier1EncodeParams &params, EncodedCodeBlock &out)
{
    check_geometry(width, height);
    J2KC_CHECK_ARG(params.num_bitplanes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", params.num_bitplanes,
                   kTier1MaxBitplanes);
    J2KC_CHECK_SUPPORTED(!(params.style & cblk_style::kHighThroughput), "HT code-blocks are not supported");
    out.data.clear();
    out.passes.clear();
    out.zero_bitplanes = params.num_bitplanes;
    if (width == 0 || height == 0) return;

    thread_local EncoderScratch scratch;
    const size_t state = t1core::t1_state_size(width, height);
    const t1core::T1EncodeScratch ws{at_least(scratch.flags, state), at_least(scratch.values, state),
                                     at_least(scratch.snapshots, t1core::kMaxPasses),
                                     at_least(scratch.raw_ends, t1core::kMaxPasses)};
    t1core::T1EncodeOutput res{};
    // The bound makes the coder's capacity check always pass.
    res.capacity = t1core::t1_encode_buffer_bound(width, height, params.num_bitplanes);
    res.buf = at_least(scratch.buf, res.capacity);
    res.pass_end = at_least(scratch.pass_end, t1core::kMaxPasses);
    res.pass_distortion = at_least(scratch.pass_distortion, t1core::kMaxPasses);
    res.pass_terminated = at_least(scratch.pass_terminated, t1core::kMaxPasses);
    const uint32_t status = t1core::t1_encode_block(coeffs, stride, width, height, params.orientation, params.style,
                                                    params.num_bitplanes, ws, res, params.lowest_plane);
    J2KC_CHECK_ARG(status != t1core::kT1EncodeDataTooDeep, "coefficient needs %u bit-planes, band has %u",
                   res.data_bitplanes, params.num_bitplanes);
    J2KC_CHECK_ARG(status == t1core::kT1EncodeOk, "Tier-1 encoder status %u", status);
    out.zero_bitplanes = res.zero_bitplanes;
    out.passes.resize(res.num_passes);
    for (uint32_t q = 0; q < res.num_passes; ++q) {
        out.passes[q].end = res.pass_end[q];
        out.passes[q].distortion = res.pass_distortion[q];
        out.passes[q].terminated = res.pass_terminated[q] != 0;
    }
    out.data.assign(res.buf + 1, res.buf + 1 + res.bytes);
}

void Tier1Decoder::decode(const uint8_t *data, const CodewordSegment *segments, size_t num_segments, uint32_t width,
                          uint32_t height, const Tier1DecodeParams &params, int32_t *out, size_t out_stride)
{
    check_geometry(width, height);
    if (params.style & cblk_style::kHighThroughput) {
        decode_ht(data, segments, num_segments, width, height, params, out, out_stride);  // ht_decode_cpu.cpp
        return;
    }
    if (width == 0 || height == 0) return;
    const uint32_t planes = uint32_t{params.num_bitplanes} + params.roi_shift;
    uint64_t total_passes = 0;
    for (size_t k = 0; k < num_segments; ++k) total_passes += segments[k].passes;
    if (total_passes > 0) {
        J2KC_CHECK_SUPPORTED(planes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", planes, kTier1MaxBitplanes);
        J2KC_CHECK_DATA(params.zero_bitplanes < planes, "%u missing bit-planes of %u", params.zero_bitplanes, planes);
    }

    t1dec::BlockDec b;
    b.width = width;
    b.height = height;
    b.stripes = (height + 3) / 4;
    b.fs = width + 2;
    b.vstride = width;
    const size_t num_flags = t1dec::flag_words(width, height);
    b.flags = at_least(flags_, num_flags);
    const size_t num_values = size_t{b.stripes} * width * 4;
    b.values = at_least(values_, num_values);
    std::memset(b.flags, 0, num_flags * sizeof(uint32_t));
    std::memset(b.values, 0, num_values * sizeof(uint32_t));
    b.orientation = static_cast<uint32_t>(params.orientation) & 3u;
    b.vc = (params.style & cblk_style::kVerticallyCausal) != 0;
    t1_reset_contexts(b.cx);
    const int nbp = static_cast<int>(planes) - params.zero_bitplanes;
    uint32_t bad_pass = 0;
    const uint32_t status = t1dec::t1_decode_block(b, data, segments, num_segments, params.style, nbp, bad_pass);
    J2KC_CHECK_DATA(status != t1dec::kDecodeMixedSegment, "codeword segment mixes raw and arithmetic passes (pass %u)",
                    bad_pass);
    J2KC_CHECK_DATA(status != t1dec::kDecodePastTermination, "codeword segment runs past terminated pass %u", bad_pass);

    b.write_output(out, out_stride);
}

uint8_t t1_decode_job_cpu(const T1DecodeJob &job, const uint8_t *bytes, const CodewordSegment *segments, int32_t *out,
                          Tier1Decoder &decoder)
{
    bool decode = false;
    const uint8_t checked = t1_decode_job_check(job, segments, out, (job.style & kT1JobStyleHt) == 0, decode);
    if (!decode) return checked;
    Tier1DecodeParams params;
    params.orientation = static_cast<BandOrientation>(job.orientation & 3u);
    params.style = job.style;
    params.num_bitplanes = job.num_bitplanes;
    params.zero_bitplanes = job.zero_bitplanes;
    params.roi_shift = job.roi_shift;
    try {
        decoder.decode(bytes + job.data_offset, segments + job.segment_offset, job.num_segments, job.width, job.height,
                       params, out + job.out_offset, job.out_stride);
    } catch (const Error &) {
        // Whatever Tier1Decoder refuses, t1_decode_job refuses as corrupt
        // (its checks above took the rest): a zero block.
        t1_decode_job_clear(job, out);
        return kT1JobCorrupt;
    }
    return kT1JobOk;
}

}  // namespace j2kc
