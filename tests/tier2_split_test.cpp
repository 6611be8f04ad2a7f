/**
 * @file tier2_split_test.cpp
 * @brief Tier-2 read in runs at once on a pool (decode_tile_packets with a
 * ThreadPool) gives the code-block tables of the reading in one run: on
 * streams with and without TLM and PLT, tile-parts by resolution and by
 * component, every progression, several tiles and layers; and falls back to
 * one run, with the same outcome, where the data is damaged.
 */
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "codestream/markers.h"
#include "codestream/reader.h"
#include "common/status.h"
#include "codewords_compare.h"
#include "common/thread_pool.h"
#include "geometry/partition.h"
#include "j2kc.h"
#include "pipeline/tile_decoder.h"
#include "test_streams.h"
#include "tier2/packet_decoder.h"

using namespace j2kc;

namespace {

void quiet(void *, int, const char *) {}

/** What decode_tile_packets gave for one tile: the table, its stats, or the error it threw. */
struct Outcome {
    TileCodewords words;
    PacketDecodeStats stats;
    std::string error;
};

Outcome read_tile(const Codestream &cs, const Tile &tile, const TileLayout &layout, uint32_t max_layers,
                  ThreadPool *pool)
{
    Outcome o;
    try {
        decode_tile_packets(cs, tile, layout, max_layers, o.words, &o.stats, pool);
    } catch (const Error &e) {
        o.error = e.what();
    }
    return o;
}

/** The outcome of one run against the split one's. */
void expect_same(const Outcome &one, const Outcome &split, const std::string &what)
{
    ASSERT_EQ(one.error, split.error) << what;
    EXPECT_EQ(one.stats.packets, split.stats.packets) << what;
    EXPECT_EQ(one.stats.data_consumed, split.stats.data_consumed) << what;
    EXPECT_EQ(one.stats.truncated, split.stats.truncated) << what;
    j2kc_test::expect_same_codewords(one.words, split.words, what);
}

struct StreamCase {
    j2kc_progression progression;
    j2kc_tile_parts tile_parts;
    bool tlm, plt, tiles, ht;
    int layers;
    bool markers = false;  ///< SOP and EPH

    std::string name() const
    {
        static const char *const orders[] = {"LRCP", "RLCP", "RPCL", "PCRL", "CPRL"};
        static const char *const parts[] = {"none", "R", "C", "dci_4k"};
        return std::string(orders[progression]) + " tile-parts " + parts[tile_parts] + (tlm ? " TLM" : "") +
               (plt ? " PLT" : "") + (tiles ? " 2x2 tiles" : "") + (ht ? " HT" : "") + " " + std::to_string(layers) +
               " layers" + (markers ? " SOP EPH" : "");
    }
};

std::vector<uint8_t> encode(const StreamCase &c, uint64_t frame_bytes = 0)
{
    const j2kc_test::Planes16 frame = j2kc_test::synthetic_frame(320, 200, 3, 10, 7, 0.05);
    j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
    cfg.progression = c.progression;
    cfg.tile_parts = c.tile_parts;
    cfg.tlm = c.tlm;
    cfg.plt = c.plt;
    cfg.layers = c.layers;
    cfg.levels = 4;
    cfg.precinct_width_log2 = cfg.precinct_height_log2 = 6;  // several precincts a resolution
    cfg.cblk_width_log2 = cfg.cblk_height_log2 = 4;
    cfg.quality = 2.0;
    if (c.tiles) cfg.tile_width = cfg.tile_height = 160;
    if (c.ht) cfg.block_coder = J2KC_BLOCK_CODER_HT;
    cfg.sop = cfg.eph = c.markers;
    cfg.frame_bytes = frame_bytes;
    return j2kc_test::encode_stream(frame.image, cfg);
}

/** Reads every tile of `bytes` in one run and on the pool; returns the split tiles' runs. */
uint32_t compare_tiles(const std::vector<uint8_t> &bytes, const std::string &what, ThreadPool &pool,
                       uint32_t max_layers = 0)
{
    const Codestream cs = parse_codestream(bytes.data(), bytes.size());
    uint32_t split_runs = 0;
    for (const Tile &tile : cs.tiles) {
        const TileLayout layout = build_partition(cs.siz, cs, tile);
        const Outcome one = read_tile(cs, tile, layout, max_layers, nullptr);
        const Outcome split = read_tile(cs, tile, layout, max_layers, &pool);
        EXPECT_EQ(one.stats.runs, 1u) << what;
        expect_same(one, split, what + " tile " + std::to_string(tile.index));
        if (split.stats.runs > 1) split_runs += split.stats.runs;
    }
    return split_runs;
}

}  // namespace

TEST(Tier2Split, RunsGiveTheTablesOfOneRun)
{
    ThreadPool pool(4);
    uint32_t split_streams = 0;
    for (j2kc_progression order : {J2KC_PROG_LRCP, J2KC_PROG_RLCP, J2KC_PROG_RPCL, J2KC_PROG_PCRL, J2KC_PROG_CPRL})
        for (j2kc_tile_parts parts : {J2KC_TILE_PARTS_NONE, J2KC_TILE_PARTS_RESOLUTION, J2KC_TILE_PARTS_COMPONENT})
            for (bool plt : {false, true})
                for (int layers : {1, 3}) {
                    const StreamCase c{order, parts, parts != J2KC_TILE_PARTS_NONE, plt, layers == 3, false, layers};
                    const std::vector<uint8_t> bytes = encode(c);
                    ASSERT_FALSE(bytes.empty()) << c.name();
                    const uint32_t runs = compare_tiles(bytes, c.name(), pool);
                    for (uint32_t keep = 1; keep < uint32_t(layers); ++keep)
                        compare_tiles(bytes, c.name() + " first layers " + std::to_string(keep), pool, keep);
                    if (runs > 0) ++split_streams;
                    // Tile-parts a component under CPRL, and PLT of one layer,
                    // locate runs whose precincts no other run touches.
                    if ((order == J2KC_PROG_CPRL && parts == J2KC_TILE_PARTS_COMPONENT) || (plt && layers == 1)) {
                        EXPECT_GT(runs, 0u) << c.name();
                    }
                    // One tile-part and no PLT locate no packet but the first.
                    if (parts == J2KC_TILE_PARTS_NONE && !plt) {
                        EXPECT_EQ(runs, 0u) << c.name();
                    }
                }
    EXPECT_GT(split_streams, 10u);
}

TEST(Tier2Split, HtBlocksSplitAlike)
{
    ThreadPool pool(3);
    for (bool plt : {false, true}) {
        const StreamCase c{J2KC_PROG_CPRL, J2KC_TILE_PARTS_COMPONENT, true, plt, false, true, 1};
        const std::vector<uint8_t> bytes = encode(c);
        ASSERT_FALSE(bytes.empty()) << c.name();
        EXPECT_GT(compare_tiles(bytes, c.name(), pool), 0u) << c.name();
    }
}

TEST(Tier2Split, SopAndEphMarkersSplitAlike)
{
    ThreadPool pool(4);
    for (bool plt : {false, true})
        for (int layers : {1, 2}) {
            StreamCase c{J2KC_PROG_CPRL, J2KC_TILE_PARTS_COMPONENT, true, plt, true, false, layers};
            c.markers = true;
            const std::vector<uint8_t> bytes = encode(c);
            ASSERT_FALSE(bytes.empty()) << c.name();
            EXPECT_GT(compare_tiles(bytes, c.name(), pool), 0u) << c.name();
        }
}

TEST(Tier2Split, RandomDamageReadsAsInOneRun)
{
    ThreadPool pool(3);
    const StreamCase c{J2KC_PROG_RPCL, J2KC_TILE_PARTS_RESOLUTION, true, true, false, false, 1};
    const std::vector<uint8_t> clean = encode(c);
    const Codestream cs = parse_codestream(clean.data(), clean.size());
    ASSERT_GE(cs.tile_parts.size(), 2u);
    ASSERT_GT(compare_tiles(clean, c.name(), pool), 0u);
    const uint64_t first = cs.tile_parts.front().data_offset;
    const uint64_t end = cs.tile_parts.back().data_offset + cs.tile_parts.back().data_length;
    std::mt19937 rng(2027);
    for (int trial = 0; trial < 300; ++trial) {
        std::vector<uint8_t> bytes = clean;
        for (int k = 0; k < 1 + trial % 4; ++k) bytes[first + rng() % (end - first)] = static_cast<uint8_t>(rng());
        compare_tiles(bytes, c.name() + " trial " + std::to_string(trial), pool);
    }
}

TEST(Tier2Split, WithoutAPoolOfSeveralThreadsOneRun)
{
    ThreadPool one(1);
    const StreamCase c{J2KC_PROG_CPRL, J2KC_TILE_PARTS_COMPONENT, true, true, false, false, 1};
    const std::vector<uint8_t> bytes = encode(c);
    EXPECT_EQ(compare_tiles(bytes, c.name(), one), 0u);
}

TEST(Tier2Split, DamagedDataReadsAsInOneRun)
{
    ThreadPool pool(4);
    for (bool plt : {false, true}) {
        const StreamCase c{J2KC_PROG_CPRL, J2KC_TILE_PARTS_COMPONENT, true, plt, false, false, 2};
        const std::vector<uint8_t> clean = encode(c);
        const Codestream cs = parse_codestream(clean.data(), clean.size());
        ASSERT_GE(cs.tile_parts.size(), 3u);
        // Bytes changed inside each tile-part's packets: the runs then end
        // elsewhere, throw or are cut, and the tile is read again in one run.
        for (const TilePartInfo &tp : cs.tile_parts)
            for (uint64_t at : {tp.data_offset, tp.data_offset + 1, tp.data_offset + tp.data_length / 2}) {
                for (uint8_t value : {uint8_t{0x00}, uint8_t{0xFF}, uint8_t{0x5A}}) {
                    std::vector<uint8_t> bytes = clean;
                    bytes[at] = value;
                    compare_tiles(bytes, c.name() + " byte " + std::to_string(at) + " = " + std::to_string(value),
                                  pool);
                }
            }
    }
}

TEST(Tier2Split, JobBytesCopiedInPiecesAsInOne)
{
    // Runs of 0 to 8 KiB out of 6 MiB, so that the copy splits into pieces.
    std::mt19937 rng(11);
    std::vector<uint8_t> source(size_t{6} << 20);
    for (uint8_t &b : source) b = static_cast<uint8_t>(rng());
    Tier1JobTable table;
    // A whole tile's data first: pieces cut inside a run.
    table.byte_runs.push_back(CodeBlockChunk{source.data(), static_cast<uint32_t>(source.size() / 2)});
    table.num_bytes = source.size() / 2;
    while (table.num_bytes < source.size() - 8192) {
        const uint32_t length = rng() % 8193;
        table.byte_runs.push_back(CodeBlockChunk{source.data() + rng() % (source.size() - length), length});
        table.num_bytes += length;
    }
    std::vector<uint8_t> one(table.num_bytes), pieces(table.num_bytes, 0xA5);
    table.copy_bytes(one.data());
    ThreadPool pool(3);
    table.copy_bytes(pieces.data(), &pool);
    EXPECT_TRUE(one == pieces);
    size_t at = 0;
    for (const CodeBlockChunk &run : table.byte_runs) {
        ASSERT_EQ(std::memcmp(one.data() + at, run.data, run.length), 0);
        at += run.length;
    }
}

namespace {

/**
 * Every job of the tile's table reads, inside the copied runs, exactly its
 * block's chunks joined; returns the jobs with bytes.
 */
size_t expect_jobs_read_their_chunks(const Codestream &cs, const Tile &tile, const TileDecodeOptions &options,
                                     const std::string &what)
{
    TileBlocks blocks;
    TileCoefficients planes;
    try {
        prepare_tile(cs, tile, options, blocks, planes);
    } catch (const Error &) {
        return 0;
    }
    std::vector<size_t> offset(planes.components.size(), 0);
    Tier1JobTable table;
    append_tier1_jobs(cs, tile, options, blocks, planes, offset.data(), table);
    std::vector<uint8_t> bytes(table.num_bytes);
    table.copy_bytes(bytes.data());
    size_t with_bytes = 0, job = 0;
    const TileLayout &layout = *blocks.layout;
    for (size_t index = 0; index < layout.code_blocks.size(); ++index) {
        const CodeBlock &cb = layout.code_blocks[index];
        if (cb.resolution > layout.components[cb.component].levels - options.reduce) continue;
        const T1DecodeJob &j = table.jobs.at(job++);
        EXPECT_LE(j.data_offset + j.data_length, table.num_bytes) << what << " block " << index;
        if (j.num_segments == 0) continue;
        std::vector<uint8_t> want;
        for (const CodeBlockChunk &chunk : blocks.codewords[index].chunks)
            want.insert(want.end(), chunk.data, chunk.data + chunk.length);
        EXPECT_EQ(j.data_length, want.size()) << what << " block " << index;
        if (j.data_length != want.size() || j.data_offset + j.data_length > bytes.size()) continue;
        EXPECT_TRUE(std::equal(want.begin(), want.end(), bytes.begin() + j.data_offset)) << what << " block " << index;
        with_bytes += j.data_length > 0;
    }
    EXPECT_EQ(job, table.jobs.size()) << what;
    return with_bytes;
}

}  // namespace

/**
 * Whether the table carries a tile's data whole (blocks of one chunk point
 * into it, others' chunks are joined after it) or block by block (reduce,
 * fewer layers), and on cut streams: every job's bytes are its block's.
 */
TEST(Tier2Split, JobsReadTheirChunksInsideTheCopiedBytes)
{
    for (const bool ht : {false, true})
        for (const int layers : {1, 3}) {
            const StreamCase c{J2KC_PROG_LRCP, J2KC_TILE_PARTS_NONE, false, false, true, ht, layers};
            const std::vector<uint8_t> clean = encode(c, 60000);  // a budget spreads blocks over the layers
            ASSERT_FALSE(clean.empty()) << c.name();
            for (size_t cut : {clean.size(), clean.size() * 3 / 4, clean.size() / 2}) {
                const std::vector<uint8_t> bytes(clean.begin(), clean.begin() + cut);
                const Codestream cs = parse_codestream(bytes.data(), bytes.size(), {}, true);
                for (const Tile &tile : cs.tiles)
                    for (uint32_t reduce : {0u, 1u})
                        for (uint32_t max_layers : {0u, 1u}) {
                            const std::string what = c.name() + " cut " + std::to_string(cut) + " reduce " +
                                                     std::to_string(reduce) + " layers " + std::to_string(max_layers) +
                                                     " tile " + std::to_string(tile.index);
                            const size_t jobs = expect_jobs_read_their_chunks(cs, tile, {reduce, max_layers}, what);
                            if (cut == clean.size()) {
                                EXPECT_GT(jobs, 0u) << what;
                            }
                        }
            }
            // One layer read whole: the table is the tile's data and nothing else.
            const Codestream cs = parse_codestream(clean.data(), clean.size(), {}, true);
            TileBlocks blocks;
            TileCoefficients planes;
            prepare_tile(cs, cs.tiles[0], {}, blocks, planes);
            std::vector<size_t> offset(planes.components.size(), 0);
            Tier1JobTable table;
            append_tier1_jobs(cs, cs.tiles[0], {}, blocks, planes, offset.data(), table);
            size_t in_one = 0, joined = 0, split_blocks = 0;
            for (const CodeBlockCodewords &cw : blocks.codewords) {
                if (!cw.included || cw.num_passes == 0) continue;
                for (const CodeBlockChunk &chunk : cw.chunks) (cw.chunks.size() == 1 ? in_one : joined) += chunk.length;
                split_blocks += cw.chunks.size() > 1;
            }
            if (!ht) {
                EXPECT_EQ(split_blocks > 0, layers > 1) << c.name();
            }  // an HT block here is one segment
            // Whole where the blocks of one chunk hold most of the data, once; else block by block.
            const bool whole = 4 * in_one >= 3 * cs.tiles[0].data.size();
            EXPECT_EQ(whole, layers == 1 || ht) << c.name();
            ASSERT_FALSE(table.byte_runs.empty()) << c.name();
            EXPECT_EQ(table.byte_runs[0].data == cs.tiles[0].data.data(), whole) << c.name();
            EXPECT_EQ(table.num_bytes, whole ? cs.tiles[0].data.size() + joined : in_one + joined) << c.name();
        }
}
