/**
 * @file tier1_decode_gpu.h
 * @brief Host interface of the CUDA Tier-1 decoder (ISO/IEC 15444-1 Annex D
 * over the MQ decoder of Annex C.3): a table of code-block jobs
 * (t1_decode_job.h) decoded in one launch, a thread per code-block, each
 * exactly as Tier1Decoder::decode (tier1.h) decodes it. No CUDA types: the
 * stream is a cudaStream_t passed as void *; every pointer is device memory
 * the caller owns (sized once per geometry).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/codeword_segment.h"
#include "tier1/t1_decode_job.h"

namespace j2kc {

/** @brief Threads tier1_decode_gpu runs for `num_jobs` jobs (each loops over
 *  jobs num_threads apart): the count of scratch areas to provide. */
uint32_t tier1_decode_gpu_threads(uint32_t num_jobs);

/**
 * @brief Decodes jobs[0, num_jobs) on `stream` (asynchronous). bytes and
 * segments are the tables the jobs index; each job's block is written at
 * out + out_offset (values as tier1.h's Tier1Decoder output), status[j] gets
 * T1DecodeJobStatus (non-zero: the block was written as zero). scratch holds
 * tier1_decode_gpu_threads(num_jobs) areas of scratch_words 32-bit words,
 * scratch_words >= t1_decode_job_scratch_words of every job's block (a job
 * that needs more reports kT1JobUnsupported). Throws J2KC_ERR_CUDA if the
 * launch fails.
 */
void tier1_decode_gpu(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes,
                      const CodewordSegment *segments, int32_t *out, uint32_t *scratch, size_t scratch_words,
                      uint8_t *status, void *stream);

}  // namespace j2kc
