/**
 * @file tier1.h
 * @brief EBCOT Tier-1 of ISO/IEC 15444-1 Annex D (coefficient bit modelling,
 * coding passes, termination) over the MQ coder of Annex C: host interface of
 * the CPU reference encoder and the production CPU decoder.
 *
 * Pass numbering: pass 0 is the cleanup pass of the block's most significant
 * non-zero bit-plane; then significance propagation, magnitude refinement and
 * cleanup for each lower plane, 3 * nbp - 2 passes in all for nbp coded
 * planes. tier1_contexts.h says which passes are raw and which end a codeword
 * segment for a given style (cblk_style bits, codestream/markers.h).
 *
 * Distortion units. A coefficient with quantisation index magnitude v is
 * reconstructed at the mid-point of the interval its decoded bits leave
 * (0 while insignificant), exactly as Tier1Decoder's output. PassInfo::
 * distortion is the decrease of the summed squared reconstruction error that
 * the pass brings, in units of 1/4 (quantisation index)^2, computed exactly in
 * integers: at plane p, with l = v mod 2^p,
 *   becoming significant:   2^p * (3 * (2^p + 4 l))
 *   refinement, bit p = 1:  2^p * (4 l - 2^p)        (may be negative)
 *   refinement, bit p = 0:  2^p * (3 * 2^p - 4 l)
 * The pass value is 2^p * S, S the sum over the pass of the bracketed
 * factors (2^p * (...) / 2^p); S is an exact integer, |S| < 2^45, so any
 * summation order gives the same S (in 64-bit two's complement). The reported
 * value is 0 if S <= 0 (a refinement pass over few coefficients can raise
 * the error slightly), else S * 2^p; in blocks of bands with more than 24
 * magnitude bit-planes, S * 2^(p - s), rounded up, s =
 * t1_distortion_shift(Mb) (tier1_contexts.h), so that a block's values
 * stay well under 2^64: their unit is then 2^s / 4 index^2. The model
 * keeps the mid-point also at p = 0; a reversible path that reconstructs
 * exactly gains 1/4 more per coded coefficient there, which rate control may
 * ignore. Weighting by the step size and the synthesis gain is the rate
 * stage's job.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "geometry/partition.h"
#include "tier1/code_block_limits.h"
#include "tier1/codeword_segment.h"
#include "tier1/ht_coding_sets.h"

namespace j2kc {

/** One coding pass of an encoded code-block. */
struct PassInfo {
    /// Bytes of the code-block stream a decoder needs to decode up to and
    /// including this pass: a valid truncation point. Terminated passes: the
    /// end of their codeword segment. Others: the shortest prefix whose
    /// decoding (with the 0xFF fill past the end) reproduces every decision
    /// of the pass, minus a trailing 0xFF (which the fill reproduces), so
    /// no truncated contribution ends in 0xFF. Non-decreasing.
    uint32_t end = 0;
    /// Decrease of squared error, 1/4 index^2 units (see the file comment).
    uint64_t distortion = 0;
    /// The codeword segment ends after this pass.
    bool terminated = false;
};

struct EncodedCodeBlock {
    std::vector<uint8_t> data;     ///< all codeword segments, back to back
    uint8_t zero_bitplanes = 0;    ///< P: missing MSB planes below num_bitplanes
    std::vector<PassInfo> passes;  ///< coding order; empty when the block is all zero
    /** HT blocks coded for rate control: the sets `data` holds and the one
     *  each pass (a truncation point) means (ht_coding_sets.h); else none. */
    htenc::HtCodingSets ht_sets{};
};

struct Tier1EncodeParams {
    BandOrientation orientation = kLL;
    uint8_t style = 0;          ///< cblk_style bits (kHighThroughput is rejected)
    uint8_t num_bitplanes = 0;  ///< Mb of the band (with ROI: Mb + s), at most 30
    /** The lowest bit-plane coded: passes of lower planes are left out, as a
     *  byte budget will not reach them (tier1_plane_floor.h); 0 codes all. */
    uint8_t lowest_plane = 0;
};

/**
 * Codes one code-block. `coeffs` are quantisation indices in two's
 * complement, |v| < 2^num_bitplanes, row r at coeffs + r * stride. The block
 * is at most 1024 wide or high and 4096 samples. Thread-safe (scratch is
 * thread-local). The codeword segments follow the style: t1_pass_is_raw and
 * t1_pass_is_terminated; the last pass is always terminated, with the
 * predictable termination of D.4.2 when style has kPredictableTermination.
 * No segment ends in 0xFF.
 */
void encode_code_block(const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                       const Tier1EncodeParams &params, EncodedCodeBlock &out);

struct Tier1DecodeParams {
    BandOrientation orientation = kLL;
    uint8_t style = 0;           ///< with kHighThroughput: an HT block (ISO/IEC 15444-15)
    uint8_t num_bitplanes = 0;   ///< Mb of the band
    uint8_t zero_bitplanes = 0;  ///< P from the packet header
    uint8_t roi_shift = 0;       ///< s of RGN (max-shift), 0 without ROI
};

/**
 * Decoder with reusable scratch: after the first blocks it allocates no more.
 * One instance per thread.
 *
 * Input: `data` holds the segments back to back (sum of lengths bytes); the
 * decoder reads nothing outside [data, data + sum of lengths) and needs no
 * padding: past the end of a segment it reads 0xFF, as C.3 expects. Segment
 * i starts where segment i - 1 ended; its passes must all be raw or all
 * arithmetic, and only its last pass may be a terminating one (otherwise
 * INVALID_DATA is thrown). More passes than 3 * (Mb + s - P) - 2 throw too.
 *
 * Output: out[y * out_stride + x] for x < width, y < height is
 *   0                    while the coefficient is insignificant, else
 *   sign * (2 * M + 2^p)
 * with M the magnitude decoded so far (bits at and above plane p, as an
 * integer in quantisation-index units) and p the lowest plane decoded for that
 * coefficient: one fractional bit, mid-point reconstruction. With every plane
 * decoded a non-zero index q comes out as sign * (2|q| + 1), so the
 * reversible path takes out / 2 (truncating towards zero) and the irreversible
 * one out * step / 2 (which gives OpenJPEG's r = 1/2 reconstruction).
 *
 * ROI (roi_shift s > 0): the block is decoded over Mb + s planes, and M is the
 * magnitude in that scaled domain (at most 30 planes in all). Per Annex H the
 * dequantiser treats a coefficient with M >= 2^s, i.e. |out| >= 2^(s + 1), as
 * inside the ROI and divides its out by 2^s (keeping the fractional bit);
 * others are background and used as they are. (OpenJPEG and Grok test
 * |out| >= 2^s on the same doubled values; the two rules differ only for
 * background magnitudes in [2^(s-1), 2^s).) *
 * HT blocks (style has kHighThroughput, ISO/IEC 15444-15): the segments are
 * the HT sets' cleanup and refinement segments as Tier-2 delivers them, the
 * last HT set is decoded (ht_block_decoder_core.h), and the output is the
 * same representation. Corrupt HT data (bad Scup, segments that do not form
 * an HT set, exponents beyond the planes) throws INVALID_DATA.
 */
class Tier1Decoder {
public:
    void decode(const uint8_t *data, const CodewordSegment *segments, size_t num_segments, uint32_t width,
                uint32_t height, const Tier1DecodeParams &params, int32_t *out, size_t out_stride);

private:
    void decode_ht(const uint8_t *data, const CodewordSegment *segments, size_t num_segments, uint32_t width,
                   uint32_t height, const Tier1DecodeParams &params, int32_t *out, size_t out_stride);

    std::vector<uint32_t> flags_;   ///< one word per stripe column (tier1_decoder_core.h); HT: quad rows
    std::vector<uint32_t> values_;  ///< the block's values before conversion
};

struct T1DecodeJob;

/**
 * @brief Decodes a job of a decode job table (tier1_decode_job.h) with the
 * CPU's block decoder: the values and status t1_decode_job gives it, written
 * at out[out_offset + y * out_stride + x] (kT1JobCorrupt with the block
 * zeroed where Tier1Decoder rejects the codewords; kT1JobUnsupported, zeroed,
 * for an HT job, as t1_decode_job). `bytes` and `segments` are the whole
 * tables. The CUDA decoder's workers run it on the blocks a GPU launch would
 * wait for longest (tier1_decode_cuda.h's tier1_decode_host_ranks).
 */
uint8_t t1_decode_job_cpu(const T1DecodeJob &job, const uint8_t *bytes, const CodewordSegment *segments, int32_t *out,
                          Tier1Decoder &decoder);

/** Largest code-block the coder accepts, and its most bit-planes (code_block_limits.h). */
constexpr uint32_t kTier1MaxSide = kCodeBlockMaxSide;
constexpr uint32_t kTier1MaxSamples = kCodeBlockMaxSamples;
constexpr uint32_t kTier1MaxBitplanes = kCodeBlockMaxBitplanes;

}  // namespace j2kc
