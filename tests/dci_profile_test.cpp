// DCI 4K (Rsiz 4; ISO/IEC 15444-1 Amd 1): a
// 4096x2160 12-bit frame encoded with profile dci_4k on the CPU backend, then
// every constraint checked on our own output by parsing its markers (and, for
// what each tile-part holds, its packets): Rsiz, image, components, COD
// (Scod, CPRL, one layer, MCT, 6 levels, 32x32 blocks, style 0, 9/7,
// precincts 128 at r0 and 256 above), QCD guard bits, the 4K POC split, six
// tile-parts (component x {r < NL, r = NL}) with TNsot 6, TLM agreeing with
// the tile-parts, no other markers, and the byte caps at 24 and 48 fps
// (frame 1,302,083 / 651,041; each component 1,041,666 / 520,833).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "codestream/dump.h"
#include "codestream/markers.h"
#include "codestream/reader.h"
#include "common/thread_pool.h"
#include "geometry/partition.h"
#include "j2kc.h"
#include "tier2/packet_decoder.h"
#include "codewords_compare.h"
#include "test_images.h"

namespace j2kc {
namespace {

constexpr uint32_t kW = 4096, kH = 2160;

void quiet(void *, int, const char *) {}

uint16_t be16(const std::vector<uint8_t> &b, size_t at) { return uint16_t(b[at] << 8 | b[at + 1]); }
uint32_t be32(const std::vector<uint8_t> &b, size_t at) { return uint32_t(be16(b, at)) << 16 | be16(b, at + 2); }

/**
 * Cheap to code but dense enough that the caps bind: smooth gradients, in
 * component 0 a band of noise over part of the frame (so component 0 alone
 * may meet its own cap), in components 1 and 2 bands of fine stripes.
 */
struct Frame : j2kc_test::Planes16 {
    explicit Frame(uint32_t seed) : Planes16(kW, kH, 3, 12)
    {
        fill(seed, [](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
            double v = 2048 + 900 * std::sin(0.003 * x + c) * std::cos(0.004 * y);
            if (c == 0 && y >= 600 && y < 1000) v += int(rng() % 1601) - 800;
            // Fine stripes, so every component has detail at the top resolution.
            if (c == 1 && y >= 1700 && y < 1900) v += (x % 2) ? 400 : -400;
            if (c == 2 && x >= 3000 && x < 3300) v += (y % 2) ? 400 : -400;
            return static_cast<uint16_t>(std::min(4095.0, std::max(0.0, v)));
        });
    }
};

std::vector<uint8_t> encode_dci_4k(const Frame &f, int fps)
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.profile = J2KC_PROFILE_DCI_4K;
    cfg.frame_rate_num = fps;
    cfg.frame_rate_den = 1;
    cfg.log = quiet;
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &f.image), J2KC_OK);
    if (!enc) return {};
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encode(enc, &f.image, &pkt), J2KC_OK);
    std::vector<uint8_t> out(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return out;
}

void check_dci_4k(const std::vector<uint8_t> &b, int fps)
{
    SCOPED_TRACE(testing::Message() << fps << " fps, " << b.size() << " bytes");
    ASSERT_GT(b.size(), 300u);
    const std::vector<MarkerSegment> segs = list_marker_segments(b.data(), b.size());
    const Codestream cs = parse_codestream(b.data(), b.size());
    auto first = [&](uint16_t m) -> const MarkerSegment * {
        for (const auto &s : segs)
            if (s.marker == m) return &s;
        return nullptr;
    };
    auto count = [&](uint16_t m) {
        return std::count_if(segs.begin(), segs.end(), [&](const MarkerSegment &s) { return s.marker == m; });
    };

    // SIZ: Rsiz 4, Lsiz 47, 4096x2160, one tile at the origin, 3 x 12-bit unsigned, no subsampling.
    const MarkerSegment *siz = first(kSIZ);
    ASSERT_TRUE(siz);
    EXPECT_EQ(siz->offset, 2u);
    EXPECT_EQ(siz->length, 47u);
    const size_t s = siz->offset + 4;
    EXPECT_EQ(be16(b, s), 4) << "Rsiz";
    EXPECT_EQ(be32(b, s + 2), kW);
    EXPECT_EQ(be32(b, s + 6), kH);
    EXPECT_EQ(be32(b, s + 10), 0u);  // XOsiz
    EXPECT_EQ(be32(b, s + 14), 0u);  // YOsiz
    EXPECT_EQ(be32(b, s + 18), kW);  // XTsiz
    EXPECT_EQ(be32(b, s + 22), kH);  // YTsiz
    EXPECT_EQ(be32(b, s + 26), 0u);  // XTOsiz
    EXPECT_EQ(be32(b, s + 30), 0u);  // YTOsiz
    EXPECT_EQ(be16(b, s + 34), 3);   // Csiz
    for (int c = 0; c < 3; ++c) {
        EXPECT_EQ(b[s + 36 + 3 * c], 0x0B) << "Ssiz of component " << c;
        EXPECT_EQ(b[s + 37 + 3 * c], 1);
        EXPECT_EQ(b[s + 38 + 3 * c], 1);
    }

    // COD: one, main header: Scod 0x01, CPRL, 1 layer, MCT 1, NL 6, 32x32, style 0, 9/7, 77 88x6.
    ASSERT_EQ(count(kCOD), 1);
    const MarkerSegment *cod = first(kCOD);
    EXPECT_EQ(cod->tile, -1);
    EXPECT_EQ(cod->length, 12u + 7u);
    const size_t c0 = cod->offset + 4;
    EXPECT_EQ(b[c0], 0x01) << "Scod";
    EXPECT_EQ(b[c0 + 1], 4) << "progression CPRL";
    EXPECT_EQ(be16(b, c0 + 2), 1) << "layers";
    EXPECT_EQ(b[c0 + 4], 1) << "MCT";
    EXPECT_EQ(b[c0 + 5], 6) << "levels";
    EXPECT_EQ(b[c0 + 6], 3) << "code-block width 32";
    EXPECT_EQ(b[c0 + 7], 3) << "code-block height 32";
    EXPECT_EQ(b[c0 + 8], 0) << "code-block style";
    EXPECT_EQ(b[c0 + 9], 0) << "9/7 wavelet";
    EXPECT_EQ(b[c0 + 10], 0x77) << "precinct 128x128 at r = 0";
    for (int r = 1; r <= 6; ++r) EXPECT_EQ(b[c0 + 10 + r], 0x88) << "precinct 256x256 at r = " << r;

    // QCD: one, main header, 2 guard bits, scalar expounded (Lqcd 5 + 6 NL... in 2 bytes each: 3 + 2 * 19).
    ASSERT_EQ(count(kQCD), 1);
    const MarkerSegment *qcd = first(kQCD);
    EXPECT_EQ(qcd->tile, -1);
    EXPECT_EQ(b[qcd->offset + 4] >> 5, 2) << "guard bits";
    EXPECT_EQ(b[qcd->offset + 4] & 0x1F, 2) << "scalar expounded";
    EXPECT_EQ(qcd->length, 3u + 2u * (3 * 6 + 1));

    // POC: exactly one, main header, after TLM, the two CPRL volumes split at r = NL.
    ASSERT_EQ(count(kPOC), 1);
    const MarkerSegment *poc = first(kPOC);
    EXPECT_EQ(poc->tile, -1);
    const std::vector<uint8_t> want_poc = {0xFF, 0x5F, 0x00, 0x10, 0, 0, 0, 1, 6, 3, 4, 6, 0, 0, 1, 7, 3, 4};
    EXPECT_TRUE(std::equal(want_poc.begin(), want_poc.end(), b.begin() + poc->offset));
    ASSERT_TRUE(first(kTLM));
    EXPECT_LT(first(kTLM)->offset, poc->offset);

    // Only these markers; no COC/QCC/RGN/PPM/PPT/PLT/PLM/SOP/EPH/CRG/COM in a tile-part.
    const std::set<uint16_t> allowed = {kSOC, kSIZ, kCOD, kQCD, kTLM, kPOC, kCOM, kSOT, kSOD, kEOC};
    for (const auto &m : segs) {
        EXPECT_TRUE(allowed.count(m.marker)) << marker_name(m.marker) << " at " << m.offset;
        if (m.marker == kCOM) {
            EXPECT_GT(m.length, 4u) << "empty COM";
        }
    }
    EXPECT_TRUE(cs.has_eoc);
    EXPECT_EQ(be16(b, b.size() - 2), kEOC);

    // Six tile-parts of tile 0, TPsot 0..5 in order, TNsot 6 in each.
    ASSERT_EQ(cs.tile_parts.size(), 6u);
    ASSERT_EQ(cs.tiles.size(), 1u);
    for (uint32_t i = 0; i < 6; ++i) {
        EXPECT_EQ(cs.tile_parts[i].tile, 0);
        EXPECT_EQ(cs.tile_parts[i].part, i);
        EXPECT_EQ(cs.tile_parts[i].parts, 6);
        EXPECT_GT(cs.tile_parts[i].psot, 14u);
        EXPECT_FALSE(cs.tile_parts[i].truncated);
    }
    // TLM: one entry per tile-part, in order, with its Psot.
    ASSERT_EQ(cs.tlm.size(), 6u);
    for (uint32_t i = 0; i < 6; ++i) {
        EXPECT_EQ(cs.tlm[i].tile, 0);
        EXPECT_EQ(cs.tlm[i].length, cs.tile_parts[i].psot) << "TLM entry " << i;
    }

    // What each tile-part holds: every code-block's bytes lie in tile-part
    // c (r < 6) or 3 + c (r = 6), read from the packets themselves.
    const Tile &tile = cs.tiles[0];
    const TileLayout layout = build_partition(cs.siz, cs, tile);
    TileCodewords words;
    PacketDecodeStats stats;
    decode_tile_packets(cs, tile, layout, 0, words, &stats);
    EXPECT_FALSE(stats.truncated);
    EXPECT_EQ(stats.data_consumed, tile.data.size()) << "bytes after the last packet";
    std::vector<uint64_t> part_start(7, 0);
    for (uint32_t i = 0; i < 6; ++i) part_start[i + 1] = part_start[i] + cs.tile_parts[i].data_length;
    ASSERT_EQ(part_start[6], tile.data.size());
    std::vector<uint64_t> blocks_in(6, 0);
    for (size_t i = 0; i < words.size(); ++i) {
        const CodeBlock &cb = layout.code_blocks[i];
        const uint32_t want = cb.resolution < 6 ? cb.component : 3u + cb.component;
        for (const CodeBlockChunk &ch : words[i].chunks) {
            if (!ch.length) continue;
            const uint64_t at = static_cast<uint64_t>(ch.data - tile.data.data());
            ASSERT_GE(at, part_start[want]) << "component " << cb.component << " r " << int(cb.resolution);
            ASSERT_LE(at + ch.length, part_start[want + 1])
                << "component " << cb.component << " r " << int(cb.resolution);
        }
        if (words[i].included) ++blocks_in[want];
    }
    for (uint32_t i = 0; i < 6; ++i) EXPECT_GT(blocks_in[i], 0u) << "tile-part " << i << " holds no code-block";

    // The six tile-parts, under two POC entries, are read as six runs at
    // once on a pool, to the same tables.
    ThreadPool pool(4);
    TileCodewords split;
    PacketDecodeStats split_stats;
    decode_tile_packets(cs, tile, layout, 0, split, &split_stats, &pool);
    EXPECT_EQ(split_stats.runs, 6u);
    EXPECT_EQ(split_stats.data_consumed, stats.data_consumed);
    j2kc_test::expect_same_codewords(words, split, "DCI 4K tile-parts read at once");

    // Byte caps: whole codestream <= 250 Mb/s, each component's tile-parts
    // (with their SOT/SOD headers) <= 200 Mb/s, floor(rate / (8 fps)).
    const uint64_t frame_cap = 250000000ull / (8ull * fps);
    const uint64_t comp_cap = 200000000ull / (8ull * fps);
    EXPECT_EQ(frame_cap, fps == 24 ? 1302083u : 651041u);
    EXPECT_EQ(comp_cap, fps == 24 ? 1041666u : 520833u);
    EXPECT_LE(b.size(), frame_cap);
    uint64_t worst = 0;
    for (uint32_t c = 0; c < 3; ++c) {
        const uint64_t bytes = uint64_t{cs.tile_parts[c].psot} + cs.tile_parts[3 + c].psot;
        EXPECT_LE(bytes, comp_cap) << "component " << c;
        worst = std::max(worst, bytes);
    }
    // A budget is met to within 2% by whichever cap binds.
    EXPECT_TRUE(b.size() >= frame_cap - frame_cap / 50 || worst >= comp_cap - comp_cap / 50)
        << "frame " << b.size() << " of " << frame_cap << ", largest component " << worst << " of " << comp_cap;

    // And the profile checker of `j2kc dump --strict` agrees.
    const std::vector<std::string> problems = check_profile(cs, b.data(), b.size(), fps);
    for (const auto &p : problems) ADD_FAILURE() << p;
}

TEST(DciProfile, FourKEveryConstraintFromOurMarkers)
{
    const Frame f(2026);
    for (int fps : {24, 48}) check_dci_4k(encode_dci_4k(f, fps), fps);
}

}  // namespace
}  // namespace j2kc
