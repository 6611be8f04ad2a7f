/**
 * @file tile_decoder.cpp
 * @brief Tier-2 then Tier-1 for one tile (ISO/IEC 15444-1 Annex B, C, D).
 * Tier-2 runs once per tile; Tier-1 per code-block on whichever worker takes
 * it, each worker with its own scratch, writing straight into the plane
 * memory the caller placed (for the CUDA backend: the pinned upload buffer).
 */
#include "pipeline/tile_decoder.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "common/status.h"
#include "pipeline/band_layout.h"
#include "quant/quant.h"

namespace j2kc {
namespace {

void prepare_planes(const Codestream &cs, const Tile &tile, const TileLayout &layout, const TileDecodeOptions &options,
                    TileCoefficients &out)
{
    const CodingStyle &cod = cs.coding_style(tile);
    out.components.resize(layout.components.size());
    out.mct = cod.mct != 0 && layout.components.size() >= 3;
    for (uint16_t c = 0; c < layout.components.size(); ++c) {
        const TileComponent &tc = layout.components[c];
        const ComponentCoding &coding = cs.component_coding(tile, c);
        const Quantization &quant = cs.quantization(tile, c);
        const ComponentSize &size = cs.siz.components[c];
        J2KC_CHECK_SUPPORTED(options.reduce <= tc.levels,
                             "reduce %u exceeds the %u decomposition levels of tile %u component %u", options.reduce,
                             tc.levels, tile.index, c);
        ComponentPlane &plane = out.components[c];
        plane.tc_rect = tc.rect;
        plane.levels = tc.levels;
        plane.levels_to_skip = static_cast<uint8_t>(options.reduce);
        plane.wavelet = coding.wavelet;
        plane.precision = size.precision;
        plane.is_signed = size.is_signed;
        const uint8_t kept = static_cast<uint8_t>(tc.levels - options.reduce);
        plane.out_rect = tc.resolutions[kept].rect;
        plane.stride = plane.out_rect.width();
        plane.data = nullptr;
        plane.dequant = make_dequantize_params(quant, coding.wavelet, size.precision, tc.rect, tc.levels,
                                               options.reduce, cs.roi_shift(tile, c));
    }
}

}  // namespace

uint64_t tile_working_memory(const Codestream &cs, const Tile &tile)
{
    const PartitionCount n = count_partition(cs.siz, cs, tile);
    // 9/7 planes are reconstructed through a float copy as large as the coefficients.
    uint64_t float_samples = 0;
    const Rect tr = tile_rect(cs.siz, tile.index);
    for (uint16_t c = 0; c < cs.siz.components.size(); ++c)
        if (cs.component_coding(tile, c).wavelet != Wavelet::kReversible53)
            float_samples += tile_component_rect(tr, cs.siz.components[c]).area();
    // Per code-block: its record (vector growth may double it), its codewords,
    // Tier-2 state and its share of two tag trees; per precinct: its record and
    // three band records plus tree tables.
    constexpr uint64_t kBlockExtra = 64, kPrecinctExtra = 64;
    const uint64_t per_block = 2 * sizeof(CodeBlock) + sizeof(CodeBlockCodewords) + kBlockExtra;
    const uint64_t per_precinct = sizeof(Precinct) + 3 * sizeof(PrecinctBand) + kPrecinctExtra;
    return n.samples * sizeof(int32_t) + float_samples * sizeof(float) + n.code_blocks * per_block +
           n.precincts * per_precinct;
}

void prepare_tile(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options, TileBlocks &blocks,
                  TileCoefficients &out, ParallelRunner *pool)
{
    blocks.layout = shared_partition(cs.siz, cs, tile);
    prepare_planes(cs, tile, *blocks.layout, options, out);
    out.corrupt_code_blocks = 0;
    PacketDecodeStats stats;
    decode_tile_packets(cs, tile, *blocks.layout, options.max_layers, blocks.codewords, &stats, pool);
    // Packet headers that promise more bytes than the tile holds: the packets
    // after the cut are lost, which a strict decoder does not pass over.
    J2KC_CHECK_DATA(!(options.strict && stats.truncated),
                    "damaged codestream (strict decoding): tile %u: its packet data ends after %llu packets",
                    tile.index, static_cast<unsigned long long>(stats.packets));
}

/** Tier-1 parameters of a coded code-block: Mb from its band's step (E.1), P from Tier-2, the ROI shift (H). */
static Tier1DecodeParams code_block_params(const Codestream &cs, const Tile &tile, const TileComponent &tc,
                                           const CodeBlock &cb, const CodeBlockCodewords &cw)
{
    const Band &band = tc.resolutions[cb.resolution].bands[cb.band];
    const Quantization &quant = cs.quantization(tile, cb.component);
    const QuantStep step = quant.step(band.quant_index, tc.levels);
    const int mb = int{quant.guard_bits} + step.exponent - 1;
    J2KC_CHECK_DATA(mb >= 0 && mb <= 37, "tile %u: %d magnitude bit-planes", tile.index, mb);
    Tier1DecodeParams params;
    params.orientation = band.orientation;
    // A Part-1 block of a MIXED tile-component (ISO/IEC 15444-15) is decoded
    // with the Part-1 modes alone; an HT one keeps the HT bit.
    params.style = code_block_style(cs.component_coding(tile, cb.component).cblk_style, cw.part1);
    params.num_bitplanes = static_cast<uint8_t>(mb);
    params.zero_bitplanes = cw.zero_bitplanes;
    params.roi_shift = cs.roi_shift(tile, cb.component);
    return params;
}

bool decode_code_block(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                       const TileBlocks &blocks, size_t index, TileCoefficients &out, Tier1Scratch &scratch)
{
    const TileLayout &layout = *blocks.layout;
    const CodeBlock &cb = layout.code_blocks[index];
    const CodeBlockCodewords &cw = blocks.codewords[index];
    const TileComponent &tc = layout.components[cb.component];
    if (cb.resolution > tc.levels - options.reduce) return true;  // discarded: no place in the planes
    ComponentPlane &plane = out.components[cb.component];
    uint32_t x, y;
    code_block_origin(tc, cb, x, y);
    int32_t *block = plane.data + size_t{y} * plane.stride + x;
    const auto clear = [&] {
        for (uint32_t r = 0; r < cb.rect.height(); ++r)
            std::fill_n(block + size_t{r} * plane.stride, cb.rect.width(), 0);
    };
    if (!cw.included || cw.num_passes == 0) {
        clear();
        return true;
    }
    const Tier1DecodeParams params = code_block_params(cs, tile, tc, cb, cw);

    size_t total = 0;
    for (const CodeBlockChunk &chunk : cw.chunks) total += chunk.length;
    scratch.bytes.resize(total);
    size_t at = 0;
    for (const CodeBlockChunk &chunk : cw.chunks) {
        std::memcpy(scratch.bytes.data() + at, chunk.data, chunk.length);
        at += chunk.length;
    }

    try {
        scratch.tier1.decode(scratch.bytes.data(), cw.segments.data(), cw.segments.size(), cb.rect.width(),
                             cb.rect.height(), params, block, plane.stride);
    } catch (const Error &e) {
        // A corrupt code-block spoils only its own samples, as in mature
        // decoders: it decodes as zero and the frame goes on (with a warning).
        if (e.status() != J2KC_ERR_INVALID_DATA) throw;
        clear();
        return false;
    }
    return true;
}

namespace {

/** Bytes of the chunks of `cw`. */
uint64_t codeword_bytes(const CodeBlockCodewords &cw)
{
    uint64_t total = 0;
    for (const CodeBlockChunk &chunk : cw.chunks) total += chunk.length;
    return total;
}

/**
 * Whether the tile's data goes up whole: when the coded blocks of one chunk
 * (the blocks whose bytes it then holds; `used`, their bytes) take three
 * quarters of it or more, the rest being packet headers, one copy of it
 * costs less than a copy per block. A reduced or layer-limited decode, which
 * uses a fraction of it, and a stream whose blocks mostly span several
 * layers, whose chunks would be joined after it a second time, copy their
 * blocks' bytes alone.
 */
bool upload_tile_whole(const Tile &tile, uint64_t used)
{
    return used > 0 && 4 * used >= 3 * uint64_t{tile.data.size()};
}

/** The tile's data as runs of at most 2^31 bytes (a chunk's length is 32-bit). */
void append_tile_data(const Tile &tile, Tier1JobTable &table)
{
    constexpr size_t kMaxRun = size_t{1} << 31;
    for (size_t at = 0; at < tile.data.size(); at += kMaxRun) {
        const size_t length = std::min(kMaxRun, tile.data.size() - at);
        table.byte_runs.push_back(CodeBlockChunk{tile.data.data() + at, static_cast<uint32_t>(length)});
    }
    table.num_bytes += tile.data.size();
}

}  // namespace

namespace {

/**
 * What the jobs of one sub-band's code-blocks share, worked out once a band
 * rather than once a block: where the band lies in its plane, and its Tier-1
 * parameters (code_block_params less P and the MIXED Part-1 choice), made at
 * its first coded block so that a band without any throws nothing.
 */
struct BandJobs {
    size_t plane_offset = 0;
    size_t stride = 0;
    uint32_t dx = 0, dy = 0;  ///< the band's region origin less the band's origin (mod 2^32)
    uint8_t component_style = 0;
    bool ht_component = false;
    bool known = false;  ///< params made
    Tier1DecodeParams params;
};

/** Where band b of resolution r of component c is in a tile's BandJobs: first[c][r] + b, flattened. */
struct BandIndex {
    std::vector<uint32_t> component_first;  ///< per component: its resolution 0 in resolution_first
    std::vector<uint32_t> resolution_first;

    uint32_t at(const CodeBlock &cb) const
    {
        return resolution_first[component_first[cb.component] + cb.resolution] + cb.band;
    }
};

void plan_bands(const Codestream &cs, const Tile &tile, const TileLayout &layout, const TileCoefficients &out,
                const size_t *plane_offset, BandIndex &index, std::vector<BandJobs> &bands)
{
    for (uint16_t c = 0; c < layout.components.size(); ++c) {
        const TileComponent &tc = layout.components[c];
        const ComponentPlane &plane = out.components[c];
        const uint8_t style = cs.component_coding(tile, c).cblk_style;
        index.component_first.push_back(static_cast<uint32_t>(index.resolution_first.size()));
        for (const Resolution &res : tc.resolutions) {
            index.resolution_first.push_back(static_cast<uint32_t>(bands.size()));
            for (const Band &band : res.bands) {
                const Rect region = band_region(tc, res, band);
                BandJobs b;
                b.plane_offset = plane_offset[c];
                b.stride = plane.stride;
                b.dx = region.x0 - band.rect.x0;
                b.dy = region.y0 - band.rect.y0;
                b.component_style = style;
                b.ht_component = (style & cblk_style::kHighThroughput) != 0;
                bands.push_back(b);
            }
        }
    }
}

/** Fills in a coded block's job from its band's parameters, checking what decode_code_block checks. */
void set_coded_job(const Codestream &cs, const Tile &tile, const TileComponent &tc, const CodeBlock &cb,
                   const CodeBlockCodewords &cw, BandJobs &band, T1DecodeJob &job)
{
    if (!band.known) {
        band.params = code_block_params(cs, tile, tc, cb, CodeBlockCodewords{});
        band.known = true;
    }
    J2KC_CHECK_ARG(cb.rect.width() <= kTier1MaxSide && cb.rect.height() <= kTier1MaxSide &&
                       uint64_t{cb.rect.width()} * cb.rect.height() <= kTier1MaxSamples,
                   "code-block %ux%u exceeds 1024 per side or 4096 samples", cb.rect.width(), cb.rect.height());
    const uint32_t planes = uint32_t{band.params.num_bitplanes} + band.params.roi_shift;
    J2KC_CHECK_SUPPORTED(cb.rect.empty() || planes <= kTier1MaxBitplanes, "%u bit-planes exceed %u", planes,
                         kTier1MaxBitplanes);
    job.orientation = static_cast<uint8_t>(band.params.orientation);
    job.style = code_block_style(band.component_style, cw.part1);
    job.num_bitplanes = band.params.num_bitplanes;
    job.zero_bitplanes = cw.zero_bitplanes;
    job.roi_shift = band.params.roi_shift;
}

}  // namespace

namespace {

/** The sizes of a job table, to go back to. */
struct TableMark {
    size_t byte_runs, num_bytes, segments, jobs, max_scratch_words, ht_jobs;
    uint32_t ht_max_quads;

    explicit TableMark(const Tier1JobTable &t)
        : byte_runs(t.byte_runs.size()), num_bytes(t.num_bytes), segments(t.segments.size()), jobs(t.jobs.size()),
          max_scratch_words(t.max_scratch_words), ht_jobs(t.ht_jobs), ht_max_quads(t.ht_max_quads)
    {}

    void restore(Tier1JobTable &t) const
    {
        t.byte_runs.resize(byte_runs);
        t.num_bytes = num_bytes;
        t.segments.resize(segments);
        t.jobs.resize(jobs);
        t.max_scratch_words = max_scratch_words;
        t.ht_jobs = ht_jobs;
        t.ht_max_quads = ht_max_quads;
    }
};

/**
 * append_tier1_jobs with the tile's data going up whole or not. Returns the
 * bytes of the coded blocks of one chunk (upload_tile_whole's measure).
 */
uint64_t append_jobs(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options, const TileBlocks &blocks,
                     const BandIndex &index, std::vector<BandJobs> &bands, bool whole, Tier1JobTable &table)
{
    const TileLayout &layout = *blocks.layout;
    const size_t tile_base = table.num_bytes;
    if (whole) append_tile_data(tile, table);
    uint64_t used = 0;
    for (size_t i = 0; i < layout.code_blocks.size(); ++i) {
        const CodeBlock &cb = layout.code_blocks[i];
        const CodeBlockCodewords &cw = blocks.codewords[i];
        const TileComponent &tc = layout.components[cb.component];
        if (cb.resolution > tc.levels - options.reduce) continue;  // discarded: no place in the planes
        BandJobs &band = bands[index.at(cb)];
        const uint32_t x = band.dx + cb.rect.x0, y = band.dy + cb.rect.y0;
        T1DecodeJob job{};
        job.out_offset = band.plane_offset + size_t{y} * band.stride + x;
        J2KC_CHECK_LIMIT(band.stride <= UINT32_MAX, "plane stride %zu", band.stride);
        job.out_stride = static_cast<uint32_t>(band.stride);
        job.width = static_cast<uint16_t>(cb.rect.width());
        job.height = static_cast<uint16_t>(cb.rect.height());
        job.data_offset = table.num_bytes;
        job.segment_offset = static_cast<uint32_t>(table.segments.size());
        if (cw.included && cw.num_passes > 0) {
            set_coded_job(cs, tile, tc, cb, cw, band, job);
            if (job.style & cblk_style::kHighThroughput) ++table.ht_jobs;
            const uint64_t total = codeword_bytes(cw);
            J2KC_CHECK_LIMIT(total <= UINT32_MAX && table.segments.size() + cw.segments.size() <= UINT32_MAX,
                             "code-block data too large");
            job.data_length = static_cast<uint32_t>(total);
            if (cw.chunks.size() == 1) used += cw.chunks[0].length;
            if (whole && cw.chunks.size() == 1) {
                // Chunks lie inside Tile::data (decode_tile_packets), so inside the run.
                job.data_offset = tile_base + static_cast<size_t>(cw.chunks[0].data - tile.data.data());
            } else {
                for (const CodeBlockChunk &chunk : cw.chunks) table.byte_runs.push_back(chunk);
                table.num_bytes += total;
            }
            // A block has a segment or two: a push each costs less than a range insert.
            for (const CodewordSegment &segment : cw.segments) table.segments.push_back(segment);
            job.num_segments = static_cast<uint32_t>(cw.segments.size());
        } else if (band.ht_component) {
            // An empty block of an HT tile-component: the HT kernel zeroes it,
            // so a frame of HT blocks alone needs no Part-1 launch.
            job.style = cblk_style::kHighThroughput;
            ++table.ht_jobs;
        }
        table.max_scratch_words = std::max(table.max_scratch_words, t1_decode_job_scratch_words(job.width, job.height));
        if (job.style & cblk_style::kHighThroughput)
            table.ht_max_quads = std::max(table.ht_max_quads, ((job.width + 1u) / 2) * ((job.height + 1u) / 2));
        table.jobs.push_back(job);
    }
    return used;
}

}  // namespace

void append_tier1_jobs(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                       const TileBlocks &blocks, const TileCoefficients &out, const size_t *plane_offset,
                       Tier1JobTable &table)
{
    BandIndex index;
    std::vector<BandJobs> bands;
    plan_bands(cs, tile, *blocks.layout, out, plane_offset, index, bands);
    // Most tiles' data goes up whole: their jobs are made so at once, and
    // made again block by block for a tile it does not suit, rather than
    // every tile's blocks read once more beforehand to decide.
    const TableMark mark(table);
    if (upload_tile_whole(tile, append_jobs(cs, tile, options, blocks, index, bands, true, table))) return;
    mark.restore(table);
    append_jobs(cs, tile, options, blocks, index, bands, false, table);
}

void Tier1JobTable::copy_bytes(uint8_t *out, ParallelRunner *pool) const
{
    constexpr size_t kPieceBytes = size_t{1} << 20;
    const size_t pieces =
        pool && pool->size() > 1 ? std::min<size_t>(2 * size_t{pool->size()}, num_bytes / kPieceBytes) : 1;
    if (pieces < 2) {
        for (const CodeBlockChunk &run : byte_runs) {
            std::memcpy(out, run.data, run.length);
            out += run.length;
        }
        return;
    }
    // Piece k is bytes [k, k + 1) * num_bytes / pieces, from whichever runs hold them.
    std::vector<size_t> run_start(byte_runs.size() + 1, 0);
    for (size_t r = 0; r < byte_runs.size(); ++r) run_start[r + 1] = run_start[r] + byte_runs[r].length;
    pool->parallel_for(pieces, [&](size_t k, unsigned) {
        const size_t begin = num_bytes / pieces * k, end = k + 1 == pieces ? num_bytes : num_bytes / pieces * (k + 1);
        size_t r =
            static_cast<size_t>(std::upper_bound(run_start.begin(), run_start.end(), begin) - run_start.begin()) - 1;
        for (size_t at = begin; at < end; ++r) {
            const size_t from = at - run_start[r], length = std::min(end, run_start[r + 1]) - at;
            std::memcpy(out + at, byte_runs[r].data + from, length);
            at += length;
        }
    });
}

void decode_tile_coefficients(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                              ThreadPool &pool, std::vector<std::vector<int32_t>> &storage, TileCoefficients &out)
{
    TileBlocks blocks;
    prepare_tile(cs, tile, options, blocks, out, &pool);
    if (storage.size() < out.components.size()) storage.resize(out.components.size());
    for (size_t c = 0; c < out.components.size(); ++c) {
        ComponentPlane &plane = out.components[c];
        // Grown, never cleared: every sample is written by its code-block.
        if (storage[c].size() < plane.samples()) storage[c].resize(plane.samples());
        plane.data = storage[c].data();
    }
    std::vector<Tier1Scratch> scratch(pool.size());
    std::atomic<uint32_t> corrupt{0};
    pool.parallel_for(blocks.layout->code_blocks.size(), [&](size_t i, unsigned worker) {
        if (!decode_code_block(cs, tile, options, blocks, i, out, scratch[worker]))
            corrupt.fetch_add(1, std::memory_order_relaxed);
    });
    out.corrupt_code_blocks = corrupt.load();
}

}  // namespace j2kc
