/**
 * @file tile_decoder.h
 * @brief The decoder's CPU half for one tile: Tier-2 (packet headers, Annex B
 * and C) and Tier-1 (code-block decoding, Annex D), producing the tile's
 * coefficients for the sample stages. Split in two steps so that a scheduler
 * can run the code-blocks of several tiles and frames on one set of workers:
 * prepare_tile() (Tier-2, sequential per tile) then decode_code_block() for
 * each block, in any order, on any thread.
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "codestream/markers.h"
#include "common/thread_pool.h"
#include "geometry/partition.h"
#include "pipeline/tile_coefficients.h"
#include "tier1/tier1.h"
#include "tier1/tier1_decode_job.h"
#include "tier2/packet_decoder.h"

namespace j2kc {

struct TileDecodeOptions {
    uint32_t reduce = 0;      ///< top resolution levels to discard
    uint32_t max_layers = 0;  ///< 0 = all
    bool strict = false;      ///< packet data that ends early fails the tile (else what was read is kept)
};

/** What Tier-2 found for one tile: the partition and each code-block's codewords. */
struct TileBlocks {
    std::shared_ptr<const TileLayout> layout;  ///< shared with other frames of the same geometry
    TileCodewords codewords;                   ///< per code-block of layout; chunks point into Tile::data
};

/** One worker's Tier-1 state, reused from block to block so that no code-block allocates. */
struct Tier1Scratch {
    Tier1Decoder tier1;
    std::vector<uint8_t> bytes;  ///< the code-block's chunks back to back
};

/**
 * Tier-2 of `tile` into `blocks`, and the geometry of its planes into `out`
 * (every field but ComponentPlane::data, which the caller places: each plane
 * needs samples() elements, which need not be cleared). Idle threads of
 * `pool` read the packets that the stream locates at once (decode_tile_packets).
 */
void prepare_tile(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options, TileBlocks &blocks,
                  TileCoefficients &out, ParallelRunner *pool = nullptr);

/**
 * Tier-1 of code-block `index` into its place in out's planes; blocks that
 * carry no passes (or lie in discarded resolutions' bands, which have no place)
 * are written as zero. Returns false when the block's codewords are corrupt:
 * it is then zero too, as in mature decoders, and the frame goes on. Other
 * errors (unsupported coding styles, impossible parameters) throw.
 */
bool decode_code_block(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                       const TileBlocks &blocks, size_t index, TileCoefficients &out, Tier1Scratch &scratch);

/**
 * Tier-1 inputs gathered for the GPU decoder (tier1_decode_cuda.h): the
 * byte runs that copy_bytes lays back to back, straight into the upload
 * buffer, every code-block's segments, and a job saying where its bytes lie
 * among them and where its values go in one buffer that holds all planes.
 * A tile whose blocks of one chunk hold most of its data gives one run, the
 * data whole, and those blocks point into it; only blocks whose codewords
 * lie in several packets add runs of their own, joined after it. Otherwise
 * (a reduced or layer-limited decode, blocks mostly spanning layers) every
 * block's chunks are runs.
 */
struct Tier1JobTable {
    std::vector<CodeBlockChunk> byte_runs;  ///< copied in order, pointing into Tile::data
    size_t num_bytes = 0;                   ///< their total: every job's data lies in [0, num_bytes)
    std::vector<CodewordSegment> segments;
    std::vector<T1DecodeJob> jobs;
    size_t max_scratch_words = 0;  ///< t1_decode_job_scratch_words of the largest block
    size_t ht_jobs = 0;            ///< jobs of HT code-blocks (style 0x40), for ht_decode_cuda.h
    uint32_t ht_max_quads = 0;     ///< quads (2 x 2 samples) of the largest HT block, for ht_decode_gpu_batch

    void clear()
    {
        byte_runs.clear();
        num_bytes = 0;
        segments.clear();
        jobs.clear();
        max_scratch_words = 0;
        ht_jobs = 0;
        ht_max_quads = 0;
    }

    /**
     * The byte runs back to back into out[0 .. num_bytes), where the jobs'
     * data offsets point; with a pool, in pieces of a mebibyte or more at
     * once, cut anywhere in a run (the bytes of a large frame are most of
     * its Tier-2 time).
     */
    void copy_bytes(uint8_t *out, ParallelRunner *pool = nullptr) const;
};

/**
 * Appends a job for each code-block of the tile that decode_code_block would
 * write (discarded resolutions have none; blocks without passes get a job
 * with no segments, which writes zeros). Component c's plane starts at
 * element plane_offset[c] of the jobs' output buffer (out's planes give the
 * strides). Throws what decode_code_block throws for the tile's parameters
 * (impossible Mb, more than 30 planes); HT blocks get jobs with style 0x40
 * (and the Part-1 blocks of a MIXED tile-component jobs without it)
 * (counted in ht_jobs: the Part-1 kernel leaves them to ht_decode_cuda.h, and
 * t1_decode_any_job runs either on the host); invalid codewords are
 * left to the job, which reports them (kT1JobCorrupt) and writes zeros, as
 * decode_code_block returns false.
 */
void append_tier1_jobs(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                       const TileBlocks &blocks, const TileCoefficients &out, const size_t *plane_offset,
                       Tier1JobTable &table);

/**
 * prepare_tile, planes in `storage` (one reused vector per component, grown
 * as needed), then every code-block on the pool.
 */
void decode_tile_coefficients(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                              ThreadPool &pool, std::vector<std::vector<int32_t>> &storage, TileCoefficients &out);

/**
 * Bytes of working memory decode_tile_coefficients and the CPU sample stages
 * need for `tile`: coefficients (and float planes for 9/7 components), the
 * partition's code-block and precinct records and Tier-2 state. Computed from
 * counts alone, so a limit can be checked before anything is allocated: small
 * code-blocks and precincts cost far more than 4 bytes a sample.
 */
uint64_t tile_working_memory(const Codestream &cs, const Tile &tile);

/** The reference-grid position of a component's first output sample after reduce. */
inline uint32_t reduced_origin(uint32_t image_origin, uint32_t subsampling, uint32_t reduce)
{
    const uint64_t d = uint64_t{subsampling} << reduce;
    return static_cast<uint32_t>((image_origin + d - 1) / d);
}

}  // namespace j2kc
