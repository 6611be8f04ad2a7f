// Tier-2 (ISO/IEC 15444-1 B.9-B.12): packet-header bit I/O, tag trees,
// progression orders with POC, packet encoder -> decoder round trips, and
// hostile packet data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "codestream/reader.h"
#include "common/status.h"
#include "tier2/bit_io.h"
#include "tier2/packet_decoder.h"
#include "tier2/packet_encoder.h"
#include "tier2/packet_header.h"
#include "tier2/progression.h"
#include "tier2/tag_tree.h"


namespace j2kc {
namespace {

// ---------------------------------------------------------------- bit I/O

TEST(Tier2BitIo, RoundTripWithStuffing)
{
    std::mt19937 rng(11);
    for (int trial = 0; trial < 300; ++trial) {
        // Runs of ones make 0xFF bytes (and so stuffing) frequent.
        const uint32_t nbits = 1 + rng() % 400;
        const uint32_t one_bias = rng() % 4;
        std::vector<uint32_t> bits(nbits);
        for (auto &b : bits) b = one_bias == 0 ? rng() & 1 : (rng() % 16 != 0);
        std::vector<uint8_t> buf(nbits / 7 + 4);
        PacketHeaderWriter w(buf.data(), static_cast<uint32_t>(buf.size()));
        PacketHeaderWriter counter;  // no buffer: counts only
        for (uint32_t b : bits) {
            w.put_bit(b);
            counter.put_bit(b);
        }
        const uint32_t len = w.flush();
        ASSERT_TRUE(w.fits());
        ASSERT_EQ(counter.flush(), len);
        ASSERT_GE(len, 1u);
        EXPECT_NE(buf[len - 1], 0xFF) << "a header never ends in 0xFF";
        for (uint32_t i = 0; i + 1 < len; ++i)
            if (buf[i] == 0xFF) {
                EXPECT_EQ(buf[i + 1] & 0x80, 0) << "stuffed bit after 0xFF at " << i;
            }

        // Followed by junk: the reader must stop exactly at the header's end.
        std::vector<uint8_t> stream(buf.begin(), buf.begin() + len);
        stream.push_back(0xFF);
        stream.push_back(0x92);
        PacketHeaderReader r(stream.data(), stream.size());
        for (uint32_t i = 0; i < nbits; ++i) ASSERT_EQ(r.bit(), bits[i]) << "bit " << i;
        ASSERT_EQ(r.align(), len);

        // One byte short: INVALID_DATA, never a read past the end.
        PacketHeaderReader short_r(stream.data(), len - 1);
        bool threw = false;
        try {
            for (uint32_t i = 0; i < nbits; ++i) short_r.bit();
            short_r.align();
        } catch (const Error &e) {
            threw = true;
            EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA);
            EXPECT_TRUE(short_r.exhausted());
        }
        EXPECT_TRUE(threw);
    }
}

/** B.10.1 read a bit at a time, as the rule is written: the reference for PacketHeaderReader. */
class BitAtATimeReader {
public:
    BitAtATimeReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    /** False where the bytes ran out. */
    bool bits(uint32_t n, uint32_t &v)
    {
        v = 0;
        for (; n > 0; --n) {
            if (left_ == 0) {
                if (pos_ >= size_) return false;
                byte_ = data_[pos_++];
                left_ = last_ff_ ? 7 : 8;
                last_ff_ = byte_ == 0xFF;
            }
            v = v << 1 | ((byte_ >> --left_) & 1u);
        }
        return true;
    }
    /** False where the stuffed byte after a final 0xFF is missing. */
    bool align(size_t &end)
    {
        left_ = 0;
        if (last_ff_) {
            if (pos_ >= size_) return false;
            ++pos_;
            last_ff_ = false;
        }
        end = pos_;
        return true;
    }

private:
    const uint8_t *data_;
    size_t size_, pos_ = 0;
    uint32_t byte_ = 0, left_ = 0;
    bool last_ff_ = false;
};

/** Any bytes (0xFF runs included), any reads and aligns: the reference's bits, ends and failures. */
TEST(Tier2BitIo, ReaderMatchesBitAtATimeRule)
{
    std::mt19937 rng(77);
    for (int trial = 0; trial < 3000; ++trial) {
        std::vector<uint8_t> bytes(rng() % 40);
        const uint32_t bias = rng() % 3;
        for (auto &b : bytes)
            b = bias == 0 ? static_cast<uint8_t>(rng()) : rng() % 2 ? 0xFF : static_cast<uint8_t>(rng());
        // Exact-size heap copy: a read past the end is a fault under ASan.
        std::unique_ptr<uint8_t[]> data(new uint8_t[std::max<size_t>(bytes.size(), 1)]);
        std::copy(bytes.begin(), bytes.end(), data.get());
        BitAtATimeReader want(data.get(), bytes.size());
        PacketHeaderReader got(data.get(), bytes.size());
        for (int step = 0; step < 60; ++step) {
            if (rng() % 8 == 0) {
                size_t end = 0;
                const bool ok = want.align(end);
                try {
                    const size_t at = got.align();
                    ASSERT_TRUE(ok) << trial << " step " << step;
                    ASSERT_EQ(at, end) << trial << " step " << step;
                    ASSERT_EQ(got.position(), end);
                } catch (const Error &e) {
                    ASSERT_FALSE(ok) << trial << " step " << step;
                    EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA);
                    EXPECT_TRUE(got.exhausted());
                    break;
                }
                continue;
            }
            const uint32_t n = rng() % 3 == 0 ? rng() % 33 : 1;
            uint32_t v = 0;
            const bool ok = want.bits(n, v);
            try {
                const uint32_t g = n == 1 && rng() % 2 ? got.bit() : got.bits(n);
                ASSERT_TRUE(ok) << trial << " step " << step;
                ASSERT_EQ(g, v) << trial << " step " << step << " n " << n;
            } catch (const Error &e) {
                ASSERT_FALSE(ok) << trial << " step " << step;
                EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA);
                EXPECT_TRUE(got.exhausted());
                break;
            }
        }
    }
}

TEST(Tier2BitIo, FinalFFGetsStuffedByte)
{
    std::vector<uint8_t> buf(8);
    PacketHeaderWriter w(buf.data(), 8);
    for (int i = 0; i < 8; ++i) w.put_bit(1);
    EXPECT_EQ(w.flush(), 2u);
    EXPECT_EQ(buf[0], 0xFF);
    EXPECT_EQ(buf[1], 0x00);
    // 8 ones then 7 ones: the second byte holds 7 bits after the stuffed 0
    // (0x7F), so no extra byte. 8 + 7 + 8 ones: 0xFF 0x7F 0xFF 0x00.
    PacketHeaderWriter w2(buf.data(), 8);
    for (int i = 0; i < 15; ++i) w2.put_bit(1);
    EXPECT_EQ(w2.flush(), 2u);
    EXPECT_EQ(buf[1], 0x7F);
    PacketHeaderWriter w4(buf.data(), 8);
    for (int i = 0; i < 23; ++i) w4.put_bit(1);
    EXPECT_EQ(w4.flush(), 4u);
    EXPECT_EQ(buf[0], 0xFF);
    EXPECT_EQ(buf[1], 0x7F);
    EXPECT_EQ(buf[2], 0xFF);
    EXPECT_EQ(buf[3], 0x00);
    PacketHeaderReader r(buf.data(), 4);
    for (int i = 0; i < 23; ++i) EXPECT_EQ(r.bit(), 1u);
    EXPECT_EQ(r.align(), 4u);
    // Short buffer: counts past capacity, writes nothing beyond.
    std::vector<uint8_t> tiny(2, 0xAA);
    PacketHeaderWriter w3(tiny.data(), 1);
    for (int i = 0; i < 20; ++i) w3.put_bit(0);
    EXPECT_EQ(w3.flush(), 3u);
    EXPECT_FALSE(w3.fits());
    EXPECT_EQ(tiny[1], 0xAA);
}

TEST(Tier2BitIo, NumPassesCodewords)
{
    for (uint32_t n = 1; n <= kMaxPassesPerPacket; ++n) {
        struct BitCounter {
            uint32_t n = 0;
            void put_bit(uint32_t) { ++n; }
            void put_bits(uint32_t, uint32_t k) { n += k; }
        } counter;
        write_num_passes(n, counter);
        EXPECT_EQ(counter.n, num_passes_codeword_bits(n)) << n;
        std::vector<uint8_t> buf(8);
        PacketHeaderWriter w(buf.data(), 8);
        write_num_passes(n, w);
        w.flush();
        PacketHeaderReader r(buf.data(), w.length);
        EXPECT_EQ(read_num_passes(r), n);
    }
}

// ---------------------------------------------------------------- tag trees

/** B.10.2's decoding of a tag tree leaf, walked from the root every time:
 *  the reference the encoder's trees and TagTreeDecoder are checked against. */
template <typename Reader>
bool decode_from_root(TagTree &tree, uint32_t leaf, int32_t threshold, Reader &reader)
{
    uint32_t path[kTagTreeMaxLevels];
    const uint32_t depth = tag_tree_path(tree.width, tree.height, leaf % tree.width, leaf / tree.width, path);
    int32_t low = 0;
    for (uint32_t i = depth; i-- > 0;) {
        TagTreeNode &n = tree.nodes[path[i]];
        if (low > n.low)
            n.low = low;
        else
            low = n.low;
        while (low < threshold && low < n.value) {
            if (reader.bit())
                n.value = low;
            else
                ++low;
        }
        n.low = low;
    }
    return tree.nodes[leaf].value < threshold;
}

TEST(Tier2TagTree, RoundTripRandomGrids)
{
    std::mt19937 rng(5);
    const std::pair<uint32_t, uint32_t> sizes[] = {{1, 1}, {1, 7}, {7, 1}, {2, 2}, {5, 3}, {13, 9}, {17, 31}, {3, 64}};
    for (auto [w, h] : sizes) {
        for (int trial = 0; trial < 20; ++trial) {
            const uint32_t n = w * h, nodes = tag_tree_num_nodes(w, h);
            std::vector<int32_t> values(n);
            const int32_t range = 1 + rng() % 12;
            for (auto &v : values) v = static_cast<int32_t>(rng() % range);

            std::vector<TagTreeNode> enc_nodes(nodes), dec_nodes(nodes);
            TagTree enc{enc_nodes.data(), w, h}, dec{dec_nodes.data(), w, h};
            enc.reset(0);
            for (uint32_t i = 0; i < n; ++i) enc.set_leaf(i, values[i]);
            enc.build();
            dec.reset();
            // The root is the minimum of all leaves.
            EXPECT_EQ(enc_nodes[nodes - 1].value, *std::min_element(values.begin(), values.end()));

            // Inclusion-style use: thresholds 1, 2, ... over "layers", leaves in
            // random order each round; then zero-bit-plane-style full decode.
            std::vector<uint8_t> buf(1 << 16);
            PacketHeaderWriter bw(buf.data(), static_cast<uint32_t>(buf.size()));
            std::vector<std::pair<uint32_t, int32_t>> calls;
            std::vector<bool> known(n, false);
            for (int32_t t = 1; t <= range + 1; ++t) {
                for (uint32_t k = 0; k < n; ++k) {
                    const uint32_t leaf = rng() % n;
                    if (known[leaf]) continue;
                    calls.push_back({leaf, t});
                    enc.encode(leaf, t, bw);
                    if (values[leaf] < t) known[leaf] = true;
                }
            }
            for (uint32_t leaf = 0; leaf < n; ++leaf) {
                calls.push_back({leaf, 1000});
                enc.encode(leaf, values[leaf] + 1, bw);  // the encoder stops as soon as the value is out
            }
            bw.flush();
            ASSERT_TRUE(bw.fits());
            PacketHeaderReader br(buf.data(), bw.length);
            for (auto [leaf, t] : calls) {
                const bool below = decode_from_root(dec, leaf, t, br);
                ASSERT_EQ(below, values[leaf] < t) << "leaf " << leaf << " threshold " << t;
                if (below) {
                    ASSERT_EQ(dec.value(leaf), values[leaf]);
                }
            }
            EXPECT_EQ(br.align(), bw.length);
        }
    }
}

TEST(Tier2TagTree, DecoderMatchesDecodeLeafAfterLeaf)
{
    // TagTreeDecoder skips the ancestors a leaf shares with the one before:
    // the same answers, values, node states and bits read as decode_from_root,
    // over layers (one decoder a threshold) that each visit some leaves in
    // raster order, then a zero-bit-plane-style pass over all of them.
    std::mt19937 rng(21);
    const std::pair<uint32_t, uint32_t> sizes[] = {{1, 1}, {1, 9}, {9, 1}, {2, 2}, {5, 3}, {13, 9}, {64, 34}, {3, 70}};
    for (auto [w, h] : sizes) {
        for (int trial = 0; trial < 10; ++trial) {
            const uint32_t n = w * h, nodes = tag_tree_num_nodes(w, h);
            const int32_t range = 1 + static_cast<int32_t>(rng() % 12);
            std::vector<int32_t> values(n);
            for (auto &v : values) v = static_cast<int32_t>(rng() % range);
            std::vector<TagTreeNode> enc_nodes(nodes);
            TagTree enc{enc_nodes.data(), w, h};
            enc.reset(0);
            for (uint32_t i = 0; i < n; ++i) enc.set_leaf(i, values[i]);
            enc.build();
            std::vector<uint8_t> buf(1 << 17);
            PacketHeaderWriter bw(buf.data(), static_cast<uint32_t>(buf.size()));
            std::vector<std::pair<uint32_t, int32_t>> calls;
            std::vector<bool> known(n, false);
            for (int32_t t = 1; t <= range + 1; ++t)
                for (uint32_t leaf = 0; leaf < n; ++leaf) {
                    if (known[leaf] || rng() % 4 == 0) continue;
                    calls.push_back({leaf, t});
                    enc.encode(leaf, t, bw);
                    known[leaf] = values[leaf] < t;
                }
            for (uint32_t leaf = 0; leaf < n; ++leaf) {
                calls.push_back({leaf, 1000});
                enc.encode(leaf, values[leaf] + 1, bw);
            }
            bw.flush();
            ASSERT_TRUE(bw.fits());

            std::vector<TagTreeNode> ref_nodes(nodes), dec_nodes(nodes);
            TagTree ref{ref_nodes.data(), w, h}, tree{dec_nodes.data(), w, h};
            ref.reset();
            tree.reset();
            PacketHeaderReader ref_reader(buf.data(), bw.length), dec_reader(buf.data(), bw.length);
            std::unique_ptr<TagTreeDecoder> dec;
            int32_t threshold = 0;
            for (auto [leaf, t] : calls) {
                if (!dec || t != threshold) dec = std::make_unique<TagTreeDecoder>(tree, threshold = t);
                const uint32_t x = leaf % w, y = leaf / w;
                const bool below = decode_from_root(ref, leaf, t, ref_reader);
                ASSERT_EQ(dec->decode(x, y, dec_reader), below) << "leaf " << leaf << " threshold " << t;
                ASSERT_EQ(below, values[leaf] < t);
                if (below) {
                    ASSERT_EQ(dec->value(x, y), values[leaf]);
                }
                ASSERT_EQ(dec_reader.position(), ref_reader.position());
            }
            for (uint32_t i = 0; i < nodes; ++i) {
                EXPECT_EQ(dec_nodes[i].value, ref_nodes[i].value) << "node " << i;
                EXPECT_EQ(dec_nodes[i].low, ref_nodes[i].low) << "node " << i;
            }
            EXPECT_EQ(dec_reader.align(), bw.length);
        }
    }
}

TEST(Tier2TagTree, LowerLeafMatchesBuild)
{
    // The encoder learns inclusion layers incrementally; coding with
    // lower_leaf must give the same bits as a tree built from all values.
    std::mt19937 rng(9);
    for (int trial = 0; trial < 50; ++trial) {
        const uint32_t w = 1 + rng() % 9, h = 1 + rng() % 9, n = w * h;
        const int32_t layers = 1 + rng() % 5;
        std::vector<int32_t> first(n);
        for (auto &v : first) v = static_cast<int32_t>(rng() % (layers + 1));  // == layers: never
        std::vector<TagTreeNode> a_nodes(tag_tree_num_nodes(w, h)), b_nodes(a_nodes.size());
        TagTree a{a_nodes.data(), w, h}, b{b_nodes.data(), w, h};
        a.reset(0);
        for (uint32_t i = 0; i < n; ++i) a.set_leaf(i, first[i]);
        a.build();
        b.reset(kTagTreeUnknown);
        std::vector<uint8_t> ba(4096), bb(4096);
        PacketHeaderWriter wa(ba.data(), 4096), wb(bb.data(), 4096);
        for (int32_t l = 0; l < layers; ++l) {
            for (uint32_t i = 0; i < n; ++i)
                if (first[i] == l) b.lower_leaf(i, l);
            for (uint32_t i = 0; i < n; ++i) {
                if (first[i] < l) continue;  // already included: no tag tree any more
                a.encode(i, l + 1, wa);
                b.encode(i, l + 1, wb);
            }
        }
        ASSERT_EQ(wa.flush(), wb.flush());
        EXPECT_TRUE(std::equal(ba.begin(), ba.begin() + wa.length, bb.begin()));
    }
}

// ---------------------------------------------------------------- layouts

struct LayoutSpec {
    ImageSize siz;
    std::vector<ComponentCoding> coding;
};

LayoutSpec random_spec(std::mt19937 &rng, bool small, bool subsample)
{
    LayoutSpec s;
    const uint32_t w = small ? 1 + rng() % 70 : 1 + rng() % 300;
    const uint32_t h = small ? 1 + rng() % 50 : 1 + rng() % 200;
    s.siz.x0 = rng() % 9;
    s.siz.y0 = rng() % 9;
    s.siz.width = s.siz.x0 + w;
    s.siz.height = s.siz.y0 + h;
    s.siz.tile_x0 = 0;
    s.siz.tile_y0 = 0;
    s.siz.tile_width = s.siz.width;
    s.siz.tile_height = s.siz.height;
    const uint32_t ncomp = 1 + rng() % 3;
    for (uint32_t c = 0; c < ncomp; ++c) {
        ComponentSize cs;
        if (subsample) {
            cs.dx = static_cast<uint8_t>(1 + rng() % 3);
            cs.dy = static_cast<uint8_t>(1 + rng() % 3);
        }
        s.siz.components.push_back(cs);
        ComponentCoding cc;
        cc.levels = static_cast<uint8_t>(rng() % 4);
        cc.cblk_width_log2 = static_cast<uint8_t>(2 + rng() % 3);
        cc.cblk_height_log2 = static_cast<uint8_t>(2 + rng() % 3);
        cc.precincts_defined = rng() % 4 != 0;
        for (int r = 0; r <= cc.levels; ++r) {
            if (cc.precincts_defined) {
                // Tiny precincts (down to 1-sample code-blocks) only on small tiles.
                const uint32_t lo = small ? (r == 0 ? 0 : 1) : 3;
                cc.precinct_width_log2[r] = static_cast<uint8_t>(lo + rng() % 5);
                cc.precinct_height_log2[r] = static_cast<uint8_t>(lo + rng() % 5);
            }
        }
        s.coding.push_back(cc);
    }
    return s;
}

TileLayout layout_of(const LayoutSpec &s) { return build_partition(s.siz, 0, s.coding); }

uint64_t ceil_div_u64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/**
 * B.12 straight from the text: every (x, y) of the tile stepped one by one,
 * with the conditions as written, and a std::set for "already emitted".
 */
std::vector<PacketId> naive_order(const TileLayout &t, uint16_t layers, uint8_t prog,
                                  const std::vector<ProgressionChange> &pocs)
{
    std::vector<PacketId> out;
    std::set<std::tuple<int, int, int, int>> done;
    auto emit = [&](int l, int r, int c, int p) {
        if (done.insert({l, r, c, p}).second)
            out.push_back(PacketId{static_cast<uint16_t>(l), static_cast<uint8_t>(r), static_cast<uint16_t>(c),
                                   static_cast<uint32_t>(p)});
    };
    const int ncomp = static_cast<int>(t.components.size());
    int max_r = 0;
    for (auto &tc : t.components) max_r = std::max(max_r, tc.levels + 1);
    // Precinct of (c, r) whose origin is at (x, y), or -1.
    auto precinct_at = [&](int c, int r, uint64_t x, uint64_t y) -> int {
        const TileComponent &tc = t.components[c];
        if (r > tc.levels) return -1;
        const Resolution &res = tc.resolutions[r];
        if (res.rect.empty()) return -1;
        const int nl = tc.levels;
        const uint64_t ppx = res.precinct_width_log2, ppy = res.precinct_height_log2;
        const uint64_t xr = tc.dx, yr = tc.dy;
        const uint64_t try0 = ceil_div_u64(t.rect.y0, yr << (nl - r));
        const uint64_t trx0 = ceil_div_u64(t.rect.x0, xr << (nl - r));
        const bool ycond = y % (yr << (ppy + nl - r)) == 0 ||
                           (y == t.rect.y0 && ((try0 << (nl - r)) % (uint64_t{1} << (ppy + nl - r))) != 0);
        const bool xcond = x % (xr << (ppx + nl - r)) == 0 ||
                           (x == t.rect.x0 && ((trx0 << (nl - r)) % (uint64_t{1} << (ppx + nl - r))) != 0);
        if (!ycond || !xcond) return -1;
        const uint64_t nw = res.precincts_x;
        const uint64_t k = (ceil_div_u64(x, xr << (nl - r)) >> ppx) - (trx0 >> ppx) +
                           nw * ((ceil_div_u64(y, yr << (nl - r)) >> ppy) - (try0 >> ppy));
        return static_cast<int>(k);
    };
    auto run = [&](uint8_t p, int le, int r0, int r1, int c0, int c1) {
        switch (p) {
        case kLRCP:
            for (int l = 0; l < le; ++l)
                for (int r = r0; r < r1; ++r)
                    for (int c = c0; c < c1; ++c)
                        if (r <= t.components[c].levels)
                            for (uint32_t k = 0; k < t.components[c].resolutions[r].num_precincts(); ++k)
                                emit(l, r, c, k);
            break;
        case kRLCP:
            for (int r = r0; r < r1; ++r)
                for (int l = 0; l < le; ++l)
                    for (int c = c0; c < c1; ++c)
                        if (r <= t.components[c].levels)
                            for (uint32_t k = 0; k < t.components[c].resolutions[r].num_precincts(); ++k)
                                emit(l, r, c, k);
            break;
        case kRPCL:
            for (int r = r0; r < r1; ++r)
                for (uint64_t y = t.rect.y0; y < t.rect.y1; ++y)
                    for (uint64_t x = t.rect.x0; x < t.rect.x1; ++x)
                        for (int c = c0; c < c1; ++c) {
                            const int k = precinct_at(c, r, x, y);
                            if (k >= 0)
                                for (int l = 0; l < le; ++l) emit(l, r, c, k);
                        }
            break;
        case kPCRL:
            for (uint64_t y = t.rect.y0; y < t.rect.y1; ++y)
                for (uint64_t x = t.rect.x0; x < t.rect.x1; ++x)
                    for (int c = c0; c < c1; ++c)
                        for (int r = r0; r < r1; ++r) {
                            const int k = precinct_at(c, r, x, y);
                            if (k >= 0)
                                for (int l = 0; l < le; ++l) emit(l, r, c, k);
                        }
            break;
        case kCPRL:
            for (int c = c0; c < c1; ++c)
                for (uint64_t y = t.rect.y0; y < t.rect.y1; ++y)
                    for (uint64_t x = t.rect.x0; x < t.rect.x1; ++x)
                        for (int r = r0; r < r1; ++r) {
                            const int k = precinct_at(c, r, x, y);
                            if (k >= 0)
                                for (int l = 0; l < le; ++l) emit(l, r, c, k);
                        }
            break;
        }
    };
    if (pocs.empty()) {
        run(prog, layers, 0, max_r, 0, ncomp);
    } else {
        for (const auto &e : pocs)
            run(e.progression, std::min<int>(e.layer_end, layers), e.resolution_start,
                std::min<int>(e.resolution_end, max_r), e.component_start, std::min<int>(e.component_end, ncomp));
    }
    return out;
}

std::string describe(const PacketId &p)
{
    char s[64];
    std::snprintf(s, sizeof s, "(l%u r%u c%u p%u)", p.layer, p.resolution, p.component, p.precinct);
    return s;
}

TEST(Tier2Progression, EveryOrderMatchesTheStandardsLoops)
{
    std::mt19937 rng(21);
    for (int trial = 0; trial < 150; ++trial) {
        const LayoutSpec spec = random_spec(rng, true, trial % 2 == 1);
        const TileLayout t = layout_of(spec);
        const uint16_t layers = static_cast<uint16_t>(1 + rng() % 3);
        for (uint8_t prog = kLRCP; prog <= kCPRL; ++prog) {
            const auto got = packet_order(t, layers, prog);
            const auto want = naive_order(t, layers, prog, {});
            ASSERT_EQ(got.size(), packet_count(t, layers)) << "trial " << trial << " prog " << int(prog);
            ASSERT_EQ(got.size(), want.size()) << "trial " << trial << " prog " << int(prog);
            for (size_t i = 0; i < got.size(); ++i)
                ASSERT_TRUE(got[i] == want[i]) << "trial " << trial << " prog " << int(prog) << " packet " << i << ": "
                                               << describe(got[i]) << " vs " << describe(want[i]);
            // Each packet once, and every layer of a precinct in increasing order.
            std::set<std::tuple<int, int, int, int>> seen;
            std::map<std::tuple<int, int, int>, int> next;
            for (const auto &p : got) {
                ASSERT_TRUE(seen.insert({p.layer, p.resolution, p.component, p.precinct}).second);
                int &n = next[{p.resolution, p.component, static_cast<int>(p.precinct)}];
                ASSERT_EQ(n, p.layer);
                ++n;
            }
        }
    }
}

TEST(Tier2Progression, OrderRulesOnAKnownLayout)
{
    // Two components, the second subsampled 2x1 with one level less.
    LayoutSpec s;
    s.siz.width = 64;
    s.siz.height = 48;
    s.siz.tile_width = 64;
    s.siz.tile_height = 48;
    s.siz.components.resize(2);
    s.siz.components[1].dx = 2;
    s.coding.resize(2);
    for (int c = 0; c < 2; ++c) {
        s.coding[c].levels = static_cast<uint8_t>(2 - c);
        s.coding[c].precincts_defined = true;
        s.coding[c].precinct_width_log2.fill(4);
        s.coding[c].precinct_height_log2.fill(4);
        s.coding[c].cblk_width_log2 = 2;
        s.coding[c].cblk_height_log2 = 2;
    }
    const TileLayout t = layout_of(s);
    const uint16_t layers = 2;
    const auto lrcp = packet_order(t, layers, kLRCP);
    EXPECT_TRUE(std::is_sorted(lrcp.begin(), lrcp.end(), [](const PacketId &a, const PacketId &b) {
        return std::tie(a.layer, a.resolution, a.component, a.precinct) <
               std::tie(b.layer, b.resolution, b.component, b.precinct);
    }));
    const auto rlcp = packet_order(t, layers, kRLCP);
    EXPECT_TRUE(std::is_sorted(rlcp.begin(), rlcp.end(), [](const PacketId &a, const PacketId &b) {
        return std::tie(a.resolution, a.layer, a.component, a.precinct) <
               std::tie(b.resolution, b.layer, b.component, b.precinct);
    }));
    const auto rpcl = packet_order(t, layers, kRPCL);
    EXPECT_TRUE(std::is_sorted(rpcl.begin(), rpcl.end(),
                               [](const PacketId &a, const PacketId &b) { return a.resolution < b.resolution; }));
    // In RPCL/PCRL/CPRL the layer is the innermost loop.
    for (const auto *v : {&rpcl}) {
        for (size_t i = 0; i + 1 < v->size(); i += layers) {
            for (uint16_t l = 0; l < layers; ++l) EXPECT_EQ((*v)[i + l].layer, l);
        }
    }
    const auto cprl = packet_order(t, layers, kCPRL);
    EXPECT_TRUE(std::is_sorted(cprl.begin(), cprl.end(),
                               [](const PacketId &a, const PacketId &b) { return a.component < b.component; }));
    // Component 1 has 2 resolutions only: never a packet of r = 2 for it.
    for (const auto &p : cprl) EXPECT_TRUE(p.component == 0 || p.resolution <= 1);
    // PCRL on this layout: precincts of 16 at every level; component 0 at r=2
    // covers the reference grid in 16x16 cells, r=1 in 32x32 cells; the first
    // position (0,0) emits c0 r0, c0 r1, c0 r2, c1 r0, c1 r1 (layers inner).
    const auto pcrl = packet_order(t, layers, kPCRL);
    ASSERT_GE(pcrl.size(), 10u);
    const int expect[][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}};
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(pcrl[2 * i].component, expect[i][0]);
        EXPECT_EQ(pcrl[2 * i].resolution, expect[i][1]);
        EXPECT_EQ(pcrl[2 * i].precinct, 0u);
    }
    // Next position x = 16 (c0 r2 precinct 1 only).
    EXPECT_EQ(pcrl[10].component, 0);
    EXPECT_EQ(pcrl[10].resolution, 2);
    EXPECT_EQ(pcrl[10].precinct, 1u);
}

TEST(Tier2Progression, PocEntriesOverlapAndSkipEmitted)
{
    std::mt19937 rng(33);
    for (int trial = 0; trial < 150; ++trial) {
        const LayoutSpec spec = random_spec(rng, true, trial % 3 == 0);
        const TileLayout t = layout_of(spec);
        const uint16_t layers = static_cast<uint16_t>(1 + rng() % 4);
        std::vector<ProgressionChange> pocs;
        const int n = 1 + rng() % 4;
        for (int i = 0; i < n; ++i) {
            ProgressionChange e;
            e.resolution_start = static_cast<uint8_t>(rng() % 3);
            e.resolution_end = static_cast<uint8_t>(e.resolution_start + 1 + rng() % 5);  // may pass NL + 1
            e.component_start = static_cast<uint16_t>(rng() % 2);
            e.component_end = static_cast<uint16_t>(e.component_start + 1 + rng() % 4);  // may pass Csiz
            e.layer_end = static_cast<uint16_t>(1 + rng() % (layers + 1));
            e.progression = static_cast<uint8_t>(rng() % 5);
            pocs.push_back(e);
        }
        if (trial % 2 == 0) {  // a final catch-all entry
            ProgressionChange all;
            all.resolution_end = 33;
            all.component_end = 16384;
            all.layer_end = layers;
            all.progression = static_cast<uint8_t>(rng() % 5);
            pocs.push_back(all);
        }
        const auto got = packet_order(t, layers, kLRCP, pocs);
        const auto want = naive_order(t, layers, kLRCP, pocs);
        ASSERT_EQ(got.size(), want.size()) << "trial " << trial;
        for (size_t i = 0; i < got.size(); ++i)
            ASSERT_TRUE(got[i] == want[i])
                << "trial " << trial << " packet " << i << ": " << describe(got[i]) << " vs " << describe(want[i]);
        if (trial % 2 == 0) {
            EXPECT_EQ(got.size(), packet_count(t, layers));
        }
    }
}

TEST(Tier2Progression, StopsWhenAsked)
{
    std::mt19937 rng(1);
    const TileLayout t = layout_of(random_spec(rng, false, false));
    for (uint8_t prog = 0; prog <= kCPRL; ++prog) {
        uint64_t seen = 0;
        const uint64_t visited = for_each_packet(t, 3, prog, {}, [&](const PacketId &) { return ++seen < 5; });
        EXPECT_EQ(visited, std::min<uint64_t>(5, packet_count(t, 3)));
    }
    EXPECT_THROW(packet_order(t, 1, 5), Error);
}

// ---------------------------------------------------------------- packets

struct RandomTile {
    LayoutSpec spec;
    TileLayout layout;
    std::vector<std::vector<uint8_t>> bytes;
    std::vector<std::vector<uint32_t>> ends;
    std::vector<std::vector<uint8_t>> terminated;
    std::vector<CodeBlockPasses> cblks;
    std::vector<uint32_t> layer_passes;  // [layer][cblk]
    uint16_t layers = 1;
};

/** Segment ends per style, written independently of packet_header.h. */
bool ends_segment(uint8_t style, uint32_t pass)
{
    if (style & cblk_style::kTermAll) return true;
    if (style & cblk_style::kBypass) {
        if (pass < 9) return false;
        if (pass == 9) return true;
        return (pass - 10) % 3 != 0;  // SPP (phase 0) continues into MRP
    }
    return false;
}

RandomTile make_tile(std::mt19937 &rng, uint8_t style, uint16_t layers, bool small)
{
    RandomTile t;
    t.spec = random_spec(rng, small, rng() % 3 == 0);
    for (auto &c : t.spec.coding) c.cblk_style = style;
    t.layout = layout_of(t.spec);
    t.layers = layers;
    const size_t n = t.layout.code_blocks.size();
    t.bytes.resize(n);
    t.ends.resize(n);
    t.terminated.resize(n);
    t.cblks.resize(n);
    t.layer_passes.assign(size_t{layers} * n, 0);
    for (size_t i = 0; i < n; ++i) {
        const uint32_t kind = rng() % 8;
        const uint32_t passes = kind == 0 ? 0 : kind == 1 ? 1 + rng() % 3 : rng() % 40;
        uint32_t end = 0;
        for (uint32_t p = 0; p < passes; ++p) {
            // Mostly small, sometimes empty, sometimes large (to push Lblock).
            const uint32_t r = rng() % 20;
            end += r == 0 ? 0 : r == 1 ? 300 + rng() % 3000 : rng() % 60;
            t.ends[i].push_back(end);
            t.terminated[i].push_back(ends_segment(style, p) || p + 1 == passes ? 1 : 0);
        }
        t.bytes[i].resize(end);
        for (auto &b : t.bytes[i]) b = static_cast<uint8_t>(rng());
        CodeBlockPasses &cb = t.cblks[i];
        cb.data = t.bytes[i].data();
        cb.pass_end = t.ends[i].data();
        cb.pass_terminated = t.terminated[i].data();
        cb.num_passes = passes;
        cb.zero_bitplanes = static_cast<uint8_t>(rng() % 20);
        // Cumulative truncation points, non-decreasing; some blocks appear late.
        uint32_t cum = 0;
        for (uint16_t l = 0; l < layers; ++l) {
            if (rng() % 3 != 0) cum += rng() % (passes - cum + 1);
            if (l + 1 == layers && rng() % 2) cum = passes;
            t.layer_passes[size_t{l} * n + i] = cum;
        }
    }
    return t;
}

Codestream codestream_for(const RandomTile &t, const PacketEncodeParams &p)
{
    Codestream cs;
    cs.siz = t.spec.siz;
    CodingStyle cod;
    cod.sop = p.sop;
    cod.eph = p.eph;
    cod.progression = p.progression;
    cod.layers = p.layers;
    cod.component = t.spec.coding[0];
    cs.main.cod = cod;
    for (uint16_t c = 1; c < t.spec.coding.size(); ++c) cs.main.coc[c] = t.spec.coding[c];
    cs.main.qcd = Quantization{};
    cs.main.poc = p.progression_changes;
    return cs;
}

/** Expected segments of the first `passes` passes of a code-block. */
std::vector<CodewordSegment> expected_segments(const RandomTile &t, size_t i, uint8_t style, uint32_t passes)
{
    std::vector<CodewordSegment> segs;
    uint32_t start_byte = 0, count = 0;
    for (uint32_t p = 0; p < passes; ++p) {
        ++count;
        if (ends_segment(style, p) || p + 1 == passes) {
            segs.push_back(CodewordSegment{t.ends[i][p] - start_byte, count});
            start_byte = t.ends[i][p];
            count = 0;
        }
    }
    return segs;
}

void check_decoded(const RandomTile &t, uint8_t style, uint32_t keep_layers, const TileCodewords &dec,
                   const std::string &what)
{
    const size_t n = t.layout.code_blocks.size();
    ASSERT_EQ(dec.size(), n);
    for (size_t i = 0; i < n; ++i) {
        const uint32_t want = t.layer_passes[size_t{keep_layers - 1} * n + i];
        const CodeBlockCodewords &d = dec[i];
        ASSERT_EQ(d.num_passes, want) << what << " cblk " << i;
        ASSERT_EQ(d.included, want > 0) << what << " cblk " << i;
        if (want == 0) continue;
        ASSERT_EQ(d.zero_bitplanes, t.cblks[i].zero_bitplanes) << what << " cblk " << i;
        std::vector<uint8_t> got;
        for (const auto &c : d.chunks) got.insert(got.end(), c.data, c.data + c.length);
        const uint32_t len = t.ends[i][want - 1];
        ASSERT_EQ(got.size(), len) << what << " cblk " << i;
        ASSERT_TRUE(std::equal(got.begin(), got.end(), t.bytes[i].begin())) << what << " cblk " << i;
        // Segments: with a non-terminated truncation the last segment is
        // partial, which expected_segments models by ending it at `want`.
        const auto segs = expected_segments(t, i, style, want);
        ASSERT_EQ(d.segments.size(), segs.size()) << what << " cblk " << i;
        for (size_t k = 0; k < segs.size(); ++k) {
            ASSERT_EQ(d.segments[k].length, segs[k].length) << what << " cblk " << i << " seg " << k;
            ASSERT_EQ(d.segments[k].passes, segs[k].passes) << what << " cblk " << i << " seg " << k;
        }
    }
}

TEST(Tier2Packets, EncoderDecoderRoundTrip)
{
    std::mt19937 rng(77);
    const uint8_t styles[] = {0, cblk_style::kTermAll, cblk_style::kBypass, cblk_style::kBypass | cblk_style::kTermAll,
                              cblk_style::kReset | cblk_style::kVerticallyCausal | cblk_style::kSegmentationSymbols};
    int trials = 0;
    for (uint8_t style : styles) {
        for (int trial = 0; trial < 40; ++trial, ++trials) {
            const uint16_t layers = static_cast<uint16_t>(1 + rng() % 5);
            RandomTile t = make_tile(rng, style, layers, trial % 4 != 0);
            PacketEncodeParams p;
            p.layers = layers;
            p.progression = static_cast<uint8_t>(rng() % 5);
            p.sop = rng() % 2;
            p.eph = rng() % 2;
            p.packed_headers = rng() % 3 == 0;
            p.cblk_style = std::vector<uint8_t>(t.layout.components.size(), style);
            if (rng() % 4 == 0) {  // POC with overlap, completed by a catch-all
                ProgressionChange a;
                a.resolution_end = 2;
                a.component_end = 1;
                a.layer_end = static_cast<uint16_t>(1 + rng() % layers);
                a.progression = static_cast<uint8_t>(rng() % 5);
                ProgressionChange b;
                b.resolution_end = 33;
                b.component_end = 3;
                b.layer_end = layers;
                b.progression = static_cast<uint8_t>(rng() % 5);
                p.progression_changes = {a, b};
            }
            const std::string what = "style " + std::to_string(style) + " trial " + std::to_string(trial) + " prog " +
                                     std::to_string(p.progression) + " sop " + std::to_string(p.sop) + " eph " +
                                     std::to_string(p.eph) + " packed " + std::to_string(p.packed_headers) + " pocs " +
                                     std::to_string(p.progression_changes.size()) + " layers " + std::to_string(layers);

            EncodedTilePackets enc;
            encode_tile_packets(t.layout, p, t.cblks.data(), t.layer_passes.data(), enc);
            ASSERT_EQ(enc.packets.size(), packet_count(t.layout, layers)) << what;
            ASSERT_EQ(tile_packets_size(t.layout, p, t.cblks.data(), t.layer_passes.data()),
                      enc.data.size() + enc.headers.size())
                << what;
            // Records tile the data exactly, in order.
            uint64_t at = 0, hat = 0;
            for (const auto &r : enc.packets) {
                ASSERT_EQ(r.offset, at) << what;
                at += r.length;
                if (p.packed_headers) {
                    ASSERT_EQ(r.header_offset, hat) << what;
                    hat += r.header_length;
                    ASSERT_EQ(r.length, r.body_length + (p.sop ? 6u : 0u)) << what;
                } else {
                    ASSERT_EQ(r.length, r.header_length + r.body_length + (p.sop ? 6u : 0u)) << what;
                }
                if (p.sop) {
                    ASSERT_EQ(enc.data[r.offset], 0xFF);
                    ASSERT_EQ(enc.data[r.offset + 1], 0x91);
                }
            }
            ASSERT_EQ(at, enc.data.size()) << what;
            ASSERT_EQ(hat, enc.headers.size()) << what;

            // Layer sizes for rate control add up to the same bytes.
            LayerSizer sizer(t.layout, p, t.cblks.data());
            uint64_t by_layers = 0;
            const size_t n = t.layout.code_blocks.size();
            for (uint16_t l = 0; l < layers; ++l) {
                const uint32_t *lp = t.layer_passes.data() + size_t{l} * n;
                uint64_t layer_headers = 0;
                for (const auto &r : enc.packets)
                    if (r.id.layer == l) {
                        ASSERT_EQ(sizer.packet_header_bytes(r.id, lp), r.header_length) << what;
                        layer_headers += r.header_length;
                    }
                const uint64_t probe = sizer.layer_bytes(lp);
                const uint64_t committed = sizer.commit_layer(lp);
                ASSERT_EQ(probe, committed) << what;
                by_layers += committed;
            }
            ASSERT_EQ(by_layers, enc.data.size() + enc.headers.size()) << what;

            Codestream cs = codestream_for(t, p);
            Tile tile;
            tile.data = enc.data;
            tile.has_packed_headers = p.packed_headers;
            tile.packed_headers = enc.headers;
            for (uint32_t keep : {0u, 1u, static_cast<uint32_t>(layers)}) {
                TileCodewords dec;
                PacketDecodeStats st;
                decode_tile_packets(cs, tile, t.layout, keep, dec, &st);
                check_decoded(t, style, keep == 0 ? layers : keep, dec, what + " keep " + std::to_string(keep));
                ASSERT_EQ(st.packets, enc.packets.size()) << what;
                ASSERT_FALSE(st.truncated) << what;
                ASSERT_EQ(st.data_consumed, enc.data.size()) << what;
                ASSERT_EQ(st.headers_consumed, enc.headers.size()) << what;
                // Chunks point into the tile's own data.
                for (const auto &d : dec)
                    for (const auto &c : d.chunks) {
                        ASSERT_GE(c.data, tile.data.data());
                        ASSERT_LE(c.data + c.length, tile.data.data() + tile.data.size());
                    }
            }
        }
    }
    EXPECT_EQ(trials, 200);
}

TEST(Tier2Packets, EmptyPacketsAreOneByte)
{
    std::mt19937 rng(3);
    RandomTile t = make_tile(rng, 0, 2, true);
    std::fill(t.layer_passes.begin(), t.layer_passes.end(), 0u);
    PacketEncodeParams p;
    p.layers = 2;
    p.eph = true;
    p.cblk_style = std::vector<uint8_t>(t.layout.components.size(), 0);
    EncodedTilePackets enc;
    encode_tile_packets(t.layout, p, t.cblks.data(), t.layer_passes.data(), enc);
    for (const auto &r : enc.packets) {
        EXPECT_EQ(r.header_length, 3u);  // 0x00 then EPH
        EXPECT_EQ(enc.data[r.offset], 0x00);
        EXPECT_EQ(enc.data[r.offset + 1], 0xFF);
        EXPECT_EQ(enc.data[r.offset + 2], 0x92);
    }
}

TEST(Tier2Packets, InconsistentTruncationIsRejected)
{
    std::mt19937 rng(4);
    RandomTile t;
    do t = make_tile(rng, 0, 2, true);
    while (t.layout.code_blocks.empty() || t.cblks[0].num_passes == 0);
    const size_t n = t.layout.code_blocks.size();
    PacketEncodeParams p;
    p.layers = 2;
    p.cblk_style = std::vector<uint8_t>(t.layout.components.size(), 0);
    t.layer_passes[0] = t.cblks[0].num_passes;
    t.layer_passes[n] = 0;  // decreases
    EncodedTilePackets enc;
    EXPECT_THROW(encode_tile_packets(t.layout, p, t.cblks.data(), t.layer_passes.data(), enc), Error);
    t.layer_passes[n] = t.cblks[0].num_passes + 1;  // more than exist
    EXPECT_THROW(encode_tile_packets(t.layout, p, t.cblks.data(), t.layer_passes.data(), enc), Error);
}

// ---------------------------------------------------------------- hostile data

void decode_must_not_crash(const Codestream &cs, const Tile &tile, const TileLayout &layout)
{
    TileCodewords dec;
    PacketDecodeStats st;
    try {
        decode_tile_packets(cs, tile, layout, 0, dec, &st);
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA) << e.what();
        return;
    }
    // Whatever was decoded points into the data and adds up.
    for (const auto &d : dec) {
        uint64_t chunk_bytes = 0, seg_bytes = 0, seg_passes = 0;
        for (const auto &c : d.chunks) {
            EXPECT_GE(c.data, tile.data.data());
            EXPECT_LE(c.data + c.length, tile.data.data() + tile.data.size());
            chunk_bytes += c.length;
        }
        for (const auto &s : d.segments) {
            seg_bytes += s.length;
            seg_passes += s.passes;
        }
        EXPECT_EQ(chunk_bytes, seg_bytes);
        EXPECT_EQ(seg_passes, d.num_passes);
    }
}

TEST(Tier2Hostile, RandomBytesNeverCrash)
{
    std::mt19937 rng(99);
    for (int trial = 0; trial < 300; ++trial) {
        const uint8_t style = static_cast<uint8_t>(rng() % 8);
        RandomTile t = make_tile(rng, style, static_cast<uint16_t>(1 + rng() % 6), true);
        PacketEncodeParams p;
        p.layers = t.layers;
        p.progression = static_cast<uint8_t>(rng() % 5);
        p.sop = rng() % 2;
        p.eph = rng() % 2;
        p.cblk_style = std::vector<uint8_t>(t.layout.components.size(), style);
        Codestream cs = codestream_for(t, p);
        Tile tile;
        std::vector<uint8_t> data(rng() % 400);
        const uint32_t bias = rng() % 3;  // plain random, ones-heavy, 0xFF-heavy
        for (auto &b : data)
            b = bias == 0   ? static_cast<uint8_t>(rng())
                : bias == 1 ? static_cast<uint8_t>(rng() | rng())
                            : (rng() % 3 ? 0xFF : static_cast<uint8_t>(rng()));
        tile.data = std::move(data);
        if (rng() % 3 == 0) {
            tile.has_packed_headers = true;
            tile.packed_headers.resize(rng() % 200);
            for (auto &b : tile.packed_headers) b = static_cast<uint8_t>(rng() | rng());
        }
        // Exact-size heap copies so ASan sees any overrun.
        decode_must_not_crash(cs, tile, t.layout);
    }
}

TEST(Tier2Hostile, TruncatedStreamsKeepAPrefix)
{
    std::mt19937 rng(123);
    for (int trial = 0; trial < 40; ++trial) {
        const uint8_t style = static_cast<uint8_t>(rng() % 8);
        const uint16_t layers = static_cast<uint16_t>(1 + rng() % 3);
        RandomTile t = make_tile(rng, style, layers, true);
        PacketEncodeParams p;
        p.layers = layers;
        p.progression = static_cast<uint8_t>(rng() % 5);
        p.sop = rng() % 2;
        p.eph = rng() % 2;
        p.packed_headers = rng() % 4 == 0;
        p.cblk_style = std::vector<uint8_t>(t.layout.components.size(), style);
        EncodedTilePackets enc;
        encode_tile_packets(t.layout, p, t.cblks.data(), t.layer_passes.data(), enc);
        Codestream cs = codestream_for(t, p);
        const size_t full = enc.data.size();
        const size_t step = std::max<size_t>(1, full / 60);
        for (size_t cut = 0; cut < full; cut += step) {
            Tile tile;
            tile.data = std::vector<uint8_t>(enc.data.begin(), enc.data.begin() + cut);
            tile.has_packed_headers = p.packed_headers;
            tile.packed_headers = enc.headers;
            if (p.packed_headers && cut % 2) tile.packed_headers.resize(tile.packed_headers.size() * cut / full);
            TileCodewords dec;
            PacketDecodeStats st;
            decode_tile_packets(cs, tile, t.layout, 0, dec, &st);  // truncation is not an error
            EXPECT_TRUE(st.truncated || cut == full);
            for (size_t i = 0; i < dec.size(); ++i) {
                std::vector<uint8_t> got;
                for (const auto &c : dec[i].chunks) got.insert(got.end(), c.data, c.data + c.length);
                ASSERT_LE(got.size(), t.bytes[i].size());
                ASSERT_TRUE(std::equal(got.begin(), got.end(), t.bytes[i].begin())) << "cblk " << i << " cut " << cut;
                uint64_t seg_bytes = 0;
                for (const auto &s : dec[i].segments) seg_bytes += s.length;
                ASSERT_EQ(seg_bytes, got.size());
                ASSERT_LE(dec[i].num_passes, t.cblks[i].num_passes);
            }
        }
    }
}

// ---------------------------------------------------------------- OpenJPEG streams

bool have_opj_compress() { return std::system("command -v opj_compress >/dev/null 2>&1") == 0; }

void write_pgm(const std::string &path, uint32_t w, uint32_t h, std::mt19937 &rng)
{
    std::ofstream f(path, std::ios::binary);
    f << "P5\n" << w << " " << h << "\n255\n";
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x) {
            const int v = static_cast<int>((x * 3 + y * 2) % 256) / 2 + static_cast<int>(rng() % 64);
            f.put(static_cast<char>(std::min(v, 255)));
        }
}

std::vector<uint8_t> read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

TEST(Tier2OpenJpeg, PacketsOfOpjCompressStreams)
{
    if (!have_opj_compress()) GTEST_SKIP() << "opj_compress not installed";
    std::mt19937 rng(2024);
    const std::string dir = ::testing::TempDir();
    const std::string pgm = dir + "/t2_in.pgm";
    write_pgm(pgm, 157, 101, rng);
    const char *options[] = {
        "-p RPCL -c [32,32],[64,64] -n 3 -r 40,20,10",
        "-p LRCP -n 4 -r 30,10,1 -b 16,16",
        "-p PCRL -c [16,16] -n 3 -r 3,1 -SOP -EPH",  // tiny precincts: needs the bytes
        "-p CPRL -n 2 -r 10,3 -M 5 -b 8,8",          // bypass + termall... (M: 1 bypass, 4 termall)
        "-p RLCP -n 3 -r 8,2 -M 1 -t 64,48",         // bypass only, several tiles
        "-p LRCP -n 3 -r 8,2 -M 4 -c [32,32] -SOP",  // termall only
        "-p RPCL -n 3 -r 12,4 -POC T1=0,0,2,3,1,LRCP/T1=0,0,4,4,1,RPCL",
    };
    int index = 0;
    for (const char *opt : options) {
        const std::string out = dir + "/t2_" + std::to_string(index++) + ".j2k";
        const std::string cmd = "opj_compress -i " + pgm + " -o " + out + " " + opt + " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0) {
            ADD_FAILURE() << "opj_compress failed: " << opt;
            continue;
        }
        const std::vector<uint8_t> bytes = read_file(out);
        Codestream cs;
        try {
            cs = parse_codestream(bytes.data(), bytes.size());
        } catch (const Error &e) {
            GTEST_SKIP() << "codestream reader not ready: " << e.what();
        }
        ASSERT_FALSE(cs.tiles.empty()) << opt;
        for (const Tile &tile : cs.tiles) {
            const TileLayout layout = build_partition(cs.siz, cs, tile);
            TileCodewords dec;
            PacketDecodeStats st;
            decode_tile_packets(cs, tile, layout, 0, dec, &st);
            EXPECT_FALSE(st.truncated) << opt << " tile " << tile.index;
            // With POC, opj_compress 2.5 writes a second tile-part repeating
            // the packets (its encoder's POC handling); like opj_decompress we
            // read each packet once and leave the repeat alone.
            if (std::string(opt).find("-POC") == std::string::npos) {
                EXPECT_EQ(st.data_consumed, tile.data.size()) << opt << " tile " << tile.index;
            } else {
                EXPECT_LE(st.data_consumed, tile.data.size()) << opt;
                EXPECT_GT(st.data_consumed, 0u) << opt;
            }
            EXPECT_EQ(st.packets, packet_count(layout, cs.coding_style(tile).layers)) << opt;
            uint64_t included = 0;
            for (size_t i = 0; i < dec.size(); ++i) {
                const auto &d = dec[i];
                if (!d.included) continue;
                ++included;
                // 8-bit input, reversible 5/3: at most 8 + guard + gain bit-planes.
                EXPECT_LE(d.zero_bitplanes, 16) << opt;
                EXPECT_LE(d.num_passes, 3u * (16 - d.zero_bitplanes) - 2) << opt;
                uint64_t seg_bytes = 0, seg_passes = 0, chunk_bytes = 0;
                for (const auto &s : d.segments) {
                    seg_bytes += s.length;
                    seg_passes += s.passes;
                }
                for (const auto &c : d.chunks) chunk_bytes += c.length;
                EXPECT_EQ(seg_bytes, chunk_bytes);
                EXPECT_EQ(seg_passes, d.num_passes);
            }
            EXPECT_GT(included, 0u) << opt;
        }
    }
}

/**
 * Our encoder against OpenJPEG's decoder: read an opj_compress stream's
 * packets, write them again with encode_tile_packets() from the code-block
 * data and truncation points found, splice them into the same headers, and
 * check that opj_decompress gives the very same image from both streams.
 */
TEST(Tier2OpenJpeg, OurPacketsDecodeIdenticallyInOpenJpeg)
{
    if (!have_opj_compress()) GTEST_SKIP() << "opj_compress not installed";
    std::mt19937 rng(77);
    const std::string dir = ::testing::TempDir();
    const std::string pgm = dir + "/t2_re_in.pgm";
    write_pgm(pgm, 131, 97, rng);
    const char *options[] = {
        "-p RPCL -c [32,32],[64,64] -n 3 -r 40,20,10",
        "-p LRCP -n 4 -r 30,10,1 -b 16,16 -SOP -EPH",
        "-p PCRL -c [16,16] -n 3 -r 3,1 -SOP",
        "-p CPRL -n 3 -r 10,3 -M 5 -b 8,8",
        "-p RLCP -n 3 -r 8,2,1 -M 1",
        "-p LRCP -n 3 -r 8,2 -M 4 -c [32,32] -EPH",
    };
    int index = 0;
    for (const char *opt : options) {
        const std::string base = dir + "/t2_re_" + std::to_string(index++);
        const std::string cmd = "opj_compress -i " + pgm + " -o " + base + ".j2k " + opt + " >/dev/null 2>&1";
        ASSERT_EQ(std::system(cmd.c_str()), 0) << opt;
        const std::vector<uint8_t> orig = read_file(base + ".j2k");
        Codestream cs;
        try {
            cs = parse_codestream(orig.data(), orig.size());
        } catch (const Error &e) {
            GTEST_SKIP() << "codestream reader not ready: " << e.what();
        }
        ASSERT_EQ(cs.tiles.size(), 1u) << opt;
        const Tile &tile = cs.tiles[0];
        const TileLayout layout = build_partition(cs.siz, cs, tile);
        const CodingStyle &cod = cs.coding_style(tile);
        const uint16_t layers = cod.layers;
        const size_t n = layout.code_blocks.size();

        // Code-block bytes and pass ends at every segment end / layer boundary.
        TileCodewords all;
        decode_tile_packets(cs, tile, layout, 0, all);
        std::vector<std::vector<uint8_t>> bytes(n);
        std::vector<std::vector<uint32_t>> ends(n);
        std::vector<uint32_t> layer_passes(size_t{layers} * n);
        for (size_t i = 0; i < n; ++i) {
            for (const auto &c : all[i].chunks) bytes[i].insert(bytes[i].end(), c.data, c.data + c.length);
            ends[i].assign(all[i].num_passes, UINT32_MAX);
        }
        for (uint16_t keep = 1; keep <= layers; ++keep) {
            TileCodewords part;
            decode_tile_packets(cs, tile, layout, keep, part);
            for (size_t i = 0; i < n; ++i) {
                layer_passes[(size_t{keep} - 1) * n + i] = part[i].num_passes;
                uint32_t pass = 0, byte = 0;
                for (const auto &sgm : part[i].segments) {
                    pass += sgm.passes;
                    byte += sgm.length;
                    if (pass > 0) ends[i][pass - 1] = byte;
                }
            }
        }
        std::vector<CodeBlockPasses> cblks(n);
        for (size_t i = 0; i < n; ++i) {
            uint32_t last = 0;  // passes inside a piece: any non-decreasing value
            for (auto &e : ends[i]) {
                if (e == UINT32_MAX) e = last;
                last = e;
            }
            cblks[i].data = bytes[i].data();
            cblks[i].pass_end = ends[i].data();
            cblks[i].num_passes = all[i].num_passes;
            cblks[i].zero_bitplanes = all[i].zero_bitplanes;
        }
        PacketEncodeParams params;
        params.layers = layers;
        params.progression = cod.progression;
        params.progression_changes = cs.progression_changes(tile);
        params.sop = cod.sop;
        params.eph = cod.eph;
        for (uint16_t c = 0; c < layout.components.size(); ++c)
            params.cblk_style.push_back(cs.component_coding(tile, c).cblk_style);
        EncodedTilePackets enc;
        encode_tile_packets(layout, params, cblks.data(), layer_passes.data(), enc);

        // Same main and tile-part headers, our packets, Psot patched.
        const auto segs = list_marker_segments(orig.data(), orig.size());
        uint64_t sot = 0, sod = 0;
        for (const auto &m : segs) {
            if (m.marker == kSOT && sot == 0) sot = m.offset;
            if (m.marker == kSOD && sod == 0) sod = m.offset;
        }
        ASSERT_GT(sot, 0u) << opt;
        ASSERT_GT(sod, sot) << opt;
        std::vector<uint8_t> ours(orig.begin(), orig.begin() + static_cast<long>(sod + 2));
        ours.insert(ours.end(), enc.data.begin(), enc.data.end());
        const uint64_t psot = ours.size() - sot;
        for (int k = 0; k < 4; ++k) ours[sot + 6 + k] = static_cast<uint8_t>(psot >> (24 - 8 * k));
        ours.push_back(0xFF);
        ours.push_back(0xD9);
        {
            std::ofstream f(base + "_ours.j2k", std::ios::binary);
            f.write(reinterpret_cast<const char *>(ours.data()), static_cast<std::streamsize>(ours.size()));
        }
        for (const char *which : {"", "_ours"}) {
            const std::string dec =
                "opj_decompress -i " + base + which + ".j2k -o " + base + which + ".pgm >/dev/null 2>&1";
            ASSERT_EQ(std::system(dec.c_str()), 0) << opt << " " << which;
        }
        const auto a = read_file(base + ".pgm"), b = read_file(base + "_ours.pgm");
        ASSERT_FALSE(a.empty()) << opt;
        EXPECT_TRUE(a == b) << opt << ": opj_decompress decodes our packets differently";
        // Ours differ from OpenJPEG's where it flags a packet without new
        // passes as non-empty (1 + inclusion bits, which advances the tag
        // trees early) and we write a zero-length packet: sizes stay close.
        EXPECT_LE(enc.data.size(), tile.data.size() + tile.data.size() / 100 + 8) << opt;
    }
}

}  // namespace
}  // namespace j2kc
