/**
 * @file tier1_decode_cuda.h
 * @brief Host interface of the CUDA Tier-1 decoder (ISO/IEC 15444-1 Annex D
 * over the MQ decoder of Annex C.3): a table of code-block jobs
 * (tier1_decode_job.h) decoded in one launch, a thread per code-block, each
 * exactly as Tier1Decoder::decode (tier1.h) decodes it. No CUDA types: the
 * stream is a cudaStream_t passed as void *; every pointer is device memory
 * the caller owns (sized once per geometry).
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "tier1/codeword_segment.h"
#include "tier1/tier1_decode_job.h"

namespace j2kc {

/** Job-taking lanes per warp of a launch of up to about a frame's blocks
 *  when the caller says 0 (tier1_decode.cu says why fewer than 32). */
constexpr uint32_t kT1DecodeDefaultLanes = 2;

/** @brief The lanes a launch of `positions` jobs uses for `lanes`: 0 = by
 *  the launch's jobs an SM of the current device (kT1DecodeDefaultLanes,
 *  more for a batch of several frames), else `lanes`, at most 32. */
uint32_t tier1_decode_gpu_lanes(uint32_t lanes, uint32_t positions);

/** @brief Scratch areas tier1_decode_gpu uses for `num_jobs` jobs with the
 *  same `lanes`: one a job-taking thread that gets a job, so never more than
 *  num_jobs (whole warps of `lanes` threads may round the count of threads
 *  above it; those past the last job take none). */
uint32_t tier1_decode_gpu_threads(uint32_t num_jobs, uint32_t lanes = 0);

/** @brief The order tier1_decode_gpu works best in: job indices by decreasing
 *  data_length (ties in table order). */
void tier1_decode_order(const T1DecodeJob *jobs, uint32_t num_jobs, uint32_t *order);

/** One job table of a batched launch: the arguments tier1_decode_gpu takes
 *  for one table (every pointer device memory; order may be null). */
struct T1DecodeTable {
    const T1DecodeJob *jobs = nullptr;
    const uint8_t *bytes = nullptr;
    const CodewordSegment *segments = nullptr;
    const uint32_t *order = nullptr;
    int32_t *out = nullptr;
    uint8_t *status = nullptr;
    uint32_t num_jobs = 0;
    /// The jobs of ranks [0, first_rank) of the order are decoded elsewhere
    /// (on the host, tier1_decode_host_ranks): the kernels neither read nor
    /// write them, their blocks or their statuses. Non-zero only with an order.
    uint32_t first_rank = 0;
};

/** The most tables one launch takes (as many as a decoder keeps frames in flight). */
constexpr uint32_t kT1DecodeMaxTables = 16;

/**
 * Several job tables decoded in one launch, so that the blocks of all of
 * them share the GPU and the longest blocks of every table start first: the
 * threads take position p = rank * num_tables + table, that is each table's
 * jobs in its order, the tables round robin. With every order by decreasing
 * bytes (tier1_decode_order), the longest blocks of all tables come first
 * and a launch waits once for its slowest block, not once a table. Passed
 * by value to the kernel.
 */
struct T1DecodeBatch {
    T1DecodeTable tables[kT1DecodeMaxTables];
    uint32_t num_tables = 0;
};

/** @brief The positions a batch's threads step through: num_tables times the
 *  largest table's num_jobs - first_rank (scratch: tier1_decode_gpu_threads of this).
 *  Throws J2KC_ERR_LIMIT above UINT32_MAX. */
uint32_t tier1_decode_batch_positions(const T1DecodeBatch &batch);

/**
 * @brief Decodes jobs[0, num_jobs) on `stream` (asynchronous). bytes and
 * segments are the tables the jobs index; each job's block is written at
 * out + out_offset (values as tier1.h's Tier1Decoder output), status[j] gets
 * T1DecodeJobStatus (non-zero: the block was written as zero). scratch holds
 * tier1_decode_gpu_threads(num_jobs, lanes) areas of scratch_words 32-bit words,
 * scratch_words >= t1_decode_job_scratch_words of every job's block (a job
 * that needs more reports kT1JobUnsupported). Throws J2KC_ERR_CUDA if the
 * launch fails. `lanes`: job-taking lanes per warp (0 = the default).
 * `order` (device memory, or null for 0, 1, 2...): a permutation of the job
 * indices, the order threads take them in (indices >= num_jobs are skipped);
 * statuses stay indexed by job.
 */
void tier1_decode_gpu(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes, const CodewordSegment *segments,
                      int32_t *out, uint32_t *scratch, size_t scratch_words, uint8_t *status, void *stream,
                      uint32_t lanes = 0, const uint32_t *order = nullptr);

/**
 * @brief The same for every table of a batch in one launch (asynchronous):
 * each table's jobs as tier1_decode_gpu decodes them, scratch for
 * tier1_decode_gpu_threads(tier1_decode_batch_positions(batch), lanes)
 * threads, scratch_words enough for every table's blocks.
 */
void tier1_decode_gpu_batch(const T1DecodeBatch &batch, uint32_t *scratch, size_t scratch_words, void *stream,
                            uint32_t lanes = 0);

/**
 * @brief How many of the first ranks of `order` (decreasing bytes,
 * tier1_decode_order) the host should decode while the GPU decodes the rest.
 * One thread decodes a block on the GPU about ten times slower than a CPU
 * core does, so a launch lasts as long as its largest block, however idle
 * the GPU is; the host takes the Part-1 blocks that would outlast the
 * frame's share of a filled GPU, as long as they stay a small part of the
 * frame's bytes (tier1_decode.cu gives the bounds and docs/measurements.md
 * their timings). HT blocks stay on the GPU: the first HT rank ends the count.
 */
uint32_t tier1_decode_host_ranks(const T1DecodeJob *jobs, const uint32_t *order, uint32_t num_jobs);

/** Where a block decoded on the host (tier1.h's t1_decode_job_cpu) goes: its
 *  values lie row after row at values_offset of a staging buffer. */
struct T1HostBlock {
    uint64_t values_offset;  ///< first value in the staging buffer
    uint64_t out_offset;     ///< the job's out_offset
    uint32_t out_stride;     ///< the job's out_stride
    uint16_t width, height;
};
static_assert(sizeof(T1HostBlock) == 24, "T1HostBlock is a fixed 24-byte record");

/**
 * @brief Copies `num_blocks` host-decoded blocks (blocks and values: device
 * memory) into `out` at their places, on `stream` (asynchronous): the
 * coefficients of the ranks a batch left to the host (T1DecodeTable::first_rank).
 */
void tier1_place_host_blocks_gpu(const T1HostBlock *blocks, uint32_t num_blocks, const int32_t *values, int32_t *out,
                                 void *stream);

/** @brief The batch of one table: tier1_decode_gpu's arguments as a T1DecodeBatch. */
T1DecodeBatch tier1_decode_single(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes,
                                  const CodewordSegment *segments, int32_t *out, uint8_t *status,
                                  const uint32_t *order);

}  // namespace j2kc
