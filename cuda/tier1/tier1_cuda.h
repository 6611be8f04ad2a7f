/**
 * @file tier1_cuda.h
 * @brief Host interface of the CUDA Tier-1 encoder (ISO/IEC 15444-1 Annex D
 * over the MQ coder of Annex C): many code-blocks of a frame in one launch,
 * each coded exactly as encode_code_block() (tier1.h) codes it: the same
 * bytes, the same PassInfo per pass, the same zero_bitplanes. No CUDA types:
 * device pointers are plain pointers (or uint64_t in device-resident
 * structs), the stream is a cudaStream_t passed as void *.
 *
 * Memory, all in device memory and owned by the caller (size it once per
 * geometry, so that steady-state frames allocate nothing):
 * - jobs[num_jobs], results[num_jobs];
 * - an output byte arena: job j owns out_bytes[out_offset, out_offset +
 *   out_capacity). Its first byte is the MQ coder's dummy byte B before the
 *   stream (C.2.8 reads it), so the block's codeword bytes are
 *   out_bytes[out_offset + 1, out_offset + 1 + bytes): the same layout as
 *   EncodedCodeBlock::data. The kernel may write anywhere in the region;
 *   only the first 1 + bytes bytes are meaningful afterwards;
 * - pass arrays: job j's passes are entries [pass_offset, pass_offset +
 *   num_passes) of pass_end (PassInfo::end), pass_distortion
 *   (PassInfo::distortion) and pass_terminated (PassInfo::terminated, 0/1);
 *   reserve tier1_gpu_max_passes(num_bitplanes) entries per job;
 * - a per-job scratch area (coder state: flags, magnitudes, pass snapshots)
 *   of tier1_gpu_scratch_bound(width, height) bytes (or the smaller
 *   tier1_gpu_scratch_bound(width, height, num_bitplanes)), 16-byte aligned.
 *
 * Errors: a job the CPU encoder would reject (geometry, > 30 bit-planes, the
 * HT style bit, a coefficient needing more planes than num_bitplanes) or one
 * whose out_capacity is too small gets a non-zero result status; its region,
 * scratch and pass entries then hold nothing meaningful (geometry and
 * parameter errors are found before anything is written). Nothing is read
 * or written outside the job's regions. With
 * out_capacity >= tier1_gpu_capacity_bound(width, height, num_bitplanes)
 * the capacity status never occurs. A smaller arena is allowed: the coder
 * checks before each pass that the worst case of the pass still fits, and
 * a block that may not fit reports kGpuTier1Overflow (encode it with
 * encode_code_block instead).
 *
 * Throughput: see tier1.cu for the kernels. The default (kTwoPhase) forms
 * a block's decisions with a warp and MQ-codes 32 blocks per warp, a thread
 * each: jobs next to each other (a warp's 32) should be of similar work,
 * as neighbouring blocks of a band are. Its scratch holds the decision
 * stream, so tier1_gpu_scratch_bound grew (about 57 KB for a 32x32 block at
 * 30 planes; pass num_bitplanes for the tighter bound). tier1_gpu_capacity_bound is a proof, not an
 * estimate (about 50 KB for a 32x32 block of 14 planes, where real streams
 * take 1 to 3 KB); an arena of "expected size + t1_pass_byte_bound" per
 * block with a CPU retry of kGpuTier1Overflow blocks is the frugal choice.
 */
#pragma once

#include <cstddef>
#include <cstdint>

namespace j2kc {

/** One code-block to encode (device memory). */
struct GpuCodeBlockJob {
    uint64_t coeffs;        ///< device pointer to the block's first index (int32, two's complement)
    uint64_t scratch;       ///< device pointer: tier1_gpu_scratch_bound(width, height) bytes, 16-aligned
    uint64_t out_offset;    ///< the job's region in the output arena (first byte: the coder's dummy)
    uint32_t out_capacity;  ///< bytes of that region
    uint32_t pass_offset;   ///< first entry of the job's passes in the pass arrays
    uint32_t stride;        ///< elements per row
    uint16_t width, height;
    uint8_t orientation;    ///< BandOrientation: 0 LL, 1 HL, 2 LH, 3 HH
    uint8_t style;          ///< cblk_style bits
    uint8_t num_bitplanes;  ///< Mb of the band (with ROI: Mb + s), at most 30
    /** The lowest bit-plane coded (tier1_plane_floor.h; 0: every plane):
     *  passes below it are left out, as Tier1EncodeParams::lowest_plane. */
    uint8_t lowest_plane = 0;
};

/** Result status of one job. */
enum GpuTier1Status : uint8_t {
    kGpuTier1Ok = 0,
    kGpuTier1BadGeometry = 1,   ///< a side above 1024 or more than 4096 samples
    kGpuTier1BadBitplanes = 2,  ///< num_bitplanes above 30
    kGpuTier1Unsupported = 3,   ///< HT code-block style
    kGpuTier1DataTooDeep = 4,   ///< a coefficient needs more than num_bitplanes planes
    kGpuTier1Overflow = 5,      ///< out_capacity might not hold the stream
};

/** What the kernel reports per job (device memory). */
struct GpuCodeBlockResult {
    uint32_t num_passes;     ///< 3 * planes - 2, 0 for an all-zero block
    uint32_t bytes;          ///< codeword bytes, at out_bytes + out_offset + 1
    uint8_t zero_bitplanes;  ///< P: missing MSB planes below num_bitplanes
    uint8_t status;          ///< GpuTier1Status
    uint8_t data_bitplanes;  ///< planes the data needs (explains kGpuTier1DataTooDeep)
    uint8_t reserved;
};

/** Which kernel codes the jobs (both give the same output). */
enum class GpuTier1Kernel : uint8_t {
    kWarpPerBlock = 0,    ///< a warp per block, sample-parallel decisions, lane 0 codes them
    kThreadPerBlock = 1,  ///< a thread per block over the serial coder (the reference path on the GPU)
    kTwoPhase = 2,        ///< (default) a warp per block forms decisions, then a thread per block codes them
};

/**
 * @brief Encodes every job on `stream` (a cudaStream_t, or nullptr for the
 * legacy default stream); asynchronous: results are ready when the stream
 * is. Throws J2KC_ERR_CUDA if the launch fails.
 */
void tier1_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint8_t *out_bytes, GpuCodeBlockResult *results,
                      uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated, void *stream,
                      GpuTier1Kernel kernel = GpuTier1Kernel::kTwoPhase);

/**
 * @brief One of kTwoPhase's two launches (phase 1: context modelling into
 * the scratch areas, results without bytes; phase 2: MQ coding, completes
 * the results), for benchmarks that time them apart. Phase 2 must follow
 * phase 1 on the same jobs. Phase 3 is phase 1 built for fewer warps per SM
 * (a tuning probe; same output).
 */
void tier1_encode_gpu_phase(int phase, const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint8_t *out_bytes,
                            GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                            uint8_t *pass_terminated, void *stream);

/**
 * @brief Sums the frame's plane cost model (htenc::ht_add_cleanup_model
 * over every job's indices) into `model`, htenc::kHtPlaneBins 64-bit counts
 * of device memory, on `stream`; asynchronous. The same integers as the
 * CPU's sums, whatever the order.
 */
void tier1_plane_model_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t *model, void *stream);

/**
 * @brief Sets every job's lowest_plane for a frame under `budget` bytes
 * (tier1_plane_floor.h): sums the frame's cost model into `model`
 * (tier1_plane_model_gpu) and picks the plane, on
 * `stream`, before tier1_encode_gpu on the same jobs.
 */
void tier1_plan_planes_gpu(GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t budget, uint64_t *model, void *stream);

/** @brief Output region size (dummy byte included) that is never too small. */
size_t tier1_gpu_capacity_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes);

/** @brief Scratch bytes one job needs (a multiple of 16), whatever its num_bitplanes. */
size_t tier1_gpu_scratch_bound(uint32_t width, uint32_t height);

/** @brief Scratch bytes a job with at most `num_bitplanes` planes needs
 *  (smaller: kTwoPhase's decision stream is sized by the planes). */
size_t tier1_gpu_scratch_bound(uint32_t width, uint32_t height, uint8_t num_bitplanes);

/** @brief Pass-array entries to reserve for a job: 3 * num_bitplanes - 2 (0 for 0). */
uint32_t tier1_gpu_max_passes(uint8_t num_bitplanes);

}  // namespace j2kc
