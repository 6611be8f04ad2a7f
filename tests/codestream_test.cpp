// Annex A codestream syntax: marker writers read back by the parser, a
// hand-built stream, tile-part ordering, PPM/PPT/PLT/TLM splitting, hostile
// input (truncation at every byte, lying fields, bad lengths, random damage),
// reference streams from opj_compress, and the DCI/IMF profile checks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "codestream/dump.h"
#include "codestream/reader.h"
#include "codestream/writer.h"
#include "common/status.h"

namespace j2kc {
namespace {

using Bytes = std::vector<uint8_t>;
using HeaderFn = std::function<void(ByteWriter &)>;

int status_of(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.status();
    }
    return J2KC_OK;
}

int parse_status(const Bytes &b, const ParseLimits &limits = {})
{
    return status_of([&] { parse_codestream(b.data(), b.size(), limits); });
}

std::string parse_error(const Bytes &b)
{
    try {
        parse_codestream(b.data(), b.size());
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

ImageSize make_siz(uint32_t w, uint32_t h, size_t comps, uint32_t tw = 0, uint32_t th = 0)
{
    ImageSize s;
    s.width = w;
    s.height = h;
    s.tile_width = tw ? tw : w;
    s.tile_height = th ? th : h;
    s.components.assign(comps, ComponentSize{});
    return s;
}

Quantization reversible_quant(int levels, uint8_t guard = 2)
{
    Quantization q;
    q.style = Quantization::kNone;
    q.guard_bits = guard;
    for (int i = 0; i < 3 * levels + 1; ++i) q.steps.push_back({static_cast<uint8_t>(8 + i % 3), 0});
    return q;
}

struct TilePartSpec {
    uint16_t tile = 0;
    uint8_t part = 0, parts = 0;
    HeaderFn header;
    Bytes data;
    int64_t psot = -1;  ///< -1: the right value
};

struct StreamSpec {
    ImageSize siz = make_siz(17, 13, 1);
    CodingStyle cod;
    Quantization qcd;
    HeaderFn main_extra;
    std::vector<TilePartSpec> parts;
    bool eoc = true;

    StreamSpec()
    {
        cod.component.levels = 2;
        cod.component.wavelet = Wavelet::kReversible53;
        qcd = reversible_quant(2);
        parts.push_back({0, 0, 1, nullptr, {1, 2, 3, 4, 5}, -1});
    }
};

Bytes build(const StreamSpec &s)
{
    ByteWriter w;
    write_soc(w);
    write_siz(w, s.siz);
    write_cod(w, s.cod);
    write_qcd(w, s.qcd);
    if (s.main_extra) s.main_extra(w);
    for (const TilePartSpec &tp : s.parts) {
        const size_t at = write_sot(w, tp.tile, tp.part, tp.parts);
        if (tp.header) tp.header(w);
        write_sod(w);
        w.bytes(tp.data);
        if (tp.psot >= 0)
            w.patch_u32(at + 6, static_cast<uint32_t>(tp.psot));  // may lie on purpose
        else
            patch_sot_psot(w, at, static_cast<uint32_t>(w.size() - at));
    }
    if (s.eoc) write_eoc(w);
    return w.buffer();
}

Codestream parse(const Bytes &b, const ParseLimits &limits = {})
{
    return parse_codestream(b.data(), b.size(), limits);
}

Bytes random_bytes(std::mt19937 &rng, size_t n)
{
    Bytes b(n);
    for (auto &v : b) v = static_cast<uint8_t>(rng());
    return b;
}

bool has_warning(const Codestream &cs, const std::string &needle)
{
    for (const auto &w : cs.warnings)
        if (w.find(needle) != std::string::npos) return true;
    return false;
}

// ---------------------------------------------------------------------------

TEST(Codestream, HandBuiltMinimalStream)
{
    const Bytes b = {0xFF, 0x4F,                          // SOC
                     0xFF, 0x51, 0x00, 0x29, 0x00, 0x00,  // SIZ, Lsiz 41, Rsiz 0
                     0,    0,    0,    8,    0,    0,    0,    8,    0,    0,    0,    0,
                     0,    0,    0,    0,  // Xsiz Ysiz XOsiz YOsiz
                     0,    0,    0,    8,    0,    0,    0,    8,    0,    0,    0,    0,
                     0,    0,    0,    0,                                   // XTsiz YTsiz XTOsiz YTOsiz
                     0x00, 0x01, 0x07, 0x01, 0x01,                          // Csiz 1: 8-bit, 1x1
                     0xFF, 0x52, 0x00, 0x0C, 0x00, 0x00, 0x00, 0x01, 0x00,  // COD: LRCP, 1 layer, no MCT
                     0x01, 0x04, 0x04, 0x00, 0x01,                          // NL 1, 64x64, style 0, 5/3
                     0xFF, 0x5C, 0x00, 0x07, 0x40, 0x48, 0x50, 0x50, 0x58,  // QCD: 2 guard bits, no quant
                     0xFF, 0x90, 0x00, 0x0A, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11, 0x00, 0x01,  // SOT Psot 17
                     0xFF, 0x93, 0xAA, 0xBB, 0xCC,                                            // SOD + data
                     0xFF, 0xD9};
    const Codestream cs = parse(b);
    EXPECT_EQ(cs.siz.width, 8u);
    EXPECT_EQ(cs.siz.height, 8u);
    ASSERT_EQ(cs.siz.components.size(), 1u);
    EXPECT_EQ(cs.siz.components[0].precision, 8);
    ASSERT_TRUE(cs.main.cod);
    EXPECT_EQ(cs.main.cod->component.levels, 1);
    EXPECT_EQ(cs.main.cod->component.cblk_width_log2, 6);
    EXPECT_EQ(cs.main.cod->component.wavelet, Wavelet::kReversible53);
    ASSERT_TRUE(cs.main.qcd);
    EXPECT_EQ(cs.main.qcd->guard_bits, 2);
    ASSERT_EQ(cs.main.qcd->steps.size(), 4u);
    EXPECT_EQ(cs.main.qcd->steps[0].exponent, 9);
    EXPECT_EQ(cs.main.qcd->steps[2].exponent, 10);
    ASSERT_EQ(cs.tiles.size(), 1u);
    EXPECT_EQ(cs.tiles[0].index, 0u);
    EXPECT_EQ(cs.tiles[0].data, (Bytes{0xAA, 0xBB, 0xCC}));
    EXPECT_EQ(cs.tiles[0].tile_parts_declared, 1);
    EXPECT_TRUE(cs.has_eoc);
    EXPECT_FALSE(cs.truncated);
    EXPECT_TRUE(cs.warnings.empty());
    EXPECT_EQ(cs.main_header_end, 68u);
    ASSERT_EQ(cs.tile_parts.size(), 1u);
    EXPECT_EQ(cs.tile_parts[0].psot, 17u);
    EXPECT_EQ(cs.tile_parts[0].data_offset, 82u);
}

TEST(Codestream, SizRoundTrip)
{
    std::mt19937 rng(11);
    for (int iter = 0; iter < 200; ++iter) {
        StreamSpec s;
        ImageSize &z = s.siz;
        z.rsiz = static_cast<uint16_t>(rng() & 0x7FFF);
        z.tile_x0 = rng() % 50;
        z.tile_y0 = rng() % 50;
        z.x0 = z.tile_x0 + rng() % 20;
        z.y0 = z.tile_y0 + rng() % 20;
        z.tile_width = 1 + rng() % 300 + (z.x0 - z.tile_x0);
        z.tile_height = 1 + rng() % 300 + (z.y0 - z.tile_y0);
        z.width = z.x0 + 3 + rng() % 900;  // >= 3 wide: no component is empty
        z.height = z.y0 + 3 + rng() % 900;
        z.components.resize(1 + rng() % 5);
        for (auto &c : z.components) {
            c.precision = static_cast<uint8_t>(1 + rng() % 38);
            c.is_signed = rng() & 1;
            c.dx = static_cast<uint8_t>(1 + rng() % 3);
            c.dy = static_cast<uint8_t>(1 + rng() % 3);
        }
        if (z.num_tiles() > 200) continue;
        s.parts[0].tile = static_cast<uint16_t>(rng() % z.num_tiles());
        const Codestream cs = parse(build(s));
        const ImageSize &r = cs.siz;
        EXPECT_EQ(r.rsiz, z.rsiz);
        EXPECT_EQ(r.width, z.width);
        EXPECT_EQ(r.height, z.height);
        EXPECT_EQ(r.x0, z.x0);
        EXPECT_EQ(r.y0, z.y0);
        EXPECT_EQ(r.tile_width, z.tile_width);
        EXPECT_EQ(r.tile_height, z.tile_height);
        EXPECT_EQ(r.tile_x0, z.tile_x0);
        EXPECT_EQ(r.tile_y0, z.tile_y0);
        ASSERT_EQ(r.components.size(), z.components.size());
        for (size_t c = 0; c < z.components.size(); ++c) {
            EXPECT_EQ(r.components[c].precision, z.components[c].precision);
            EXPECT_EQ(r.components[c].is_signed, z.components[c].is_signed);
            EXPECT_EQ(r.components[c].dx, z.components[c].dx);
            EXPECT_EQ(r.components[c].dy, z.components[c].dy);
        }
        ASSERT_EQ(cs.tiles.size(), 1u);
        EXPECT_EQ(cs.tiles[0].index, s.parts[0].tile);
    }
}

void expect_same_coding(const ComponentCoding &a, const ComponentCoding &b)
{
    EXPECT_EQ(a.levels, b.levels);
    EXPECT_EQ(a.cblk_width_log2, b.cblk_width_log2);
    EXPECT_EQ(a.cblk_height_log2, b.cblk_height_log2);
    EXPECT_EQ(a.cblk_style, b.cblk_style);
    EXPECT_EQ(a.wavelet, b.wavelet);
    EXPECT_EQ(a.precincts_defined, b.precincts_defined);
    for (int r = 0; r <= a.levels; ++r) {
        EXPECT_EQ(a.precinct_width_log2[r], b.precinct_width_log2[r]) << r;
        EXPECT_EQ(a.precinct_height_log2[r], b.precinct_height_log2[r]) << r;
    }
}

ComponentCoding random_coding(std::mt19937 &rng, int levels)
{
    ComponentCoding c;
    c.levels = static_cast<uint8_t>(levels);
    c.cblk_width_log2 = static_cast<uint8_t>(2 + rng() % 9);
    c.cblk_height_log2 = static_cast<uint8_t>(2 + rng() % (11 - c.cblk_width_log2));
    c.cblk_style = static_cast<uint8_t>(rng() & 0x3F);
    c.wavelet = rng() & 1 ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    c.precincts_defined = rng() & 1;
    if (c.precincts_defined) {
        for (int r = 0; r <= levels; ++r) {
            c.precinct_width_log2[r] = static_cast<uint8_t>((r ? 1 : 0) + rng() % (r ? 15 : 16));
            c.precinct_height_log2[r] = static_cast<uint8_t>((r ? 1 : 0) + rng() % (r ? 15 : 16));
        }
    }
    return c;
}

TEST(Codestream, CodCocRoundTrip)
{
    std::mt19937 rng(12);
    for (int iter = 0; iter < 100; ++iter) {
        for (size_t comps : {size_t{3}, size_t{300}}) {
            StreamSpec s;
            s.siz = make_siz(40, 30, comps);
            CodingStyle &cod = s.cod;
            cod.sop = rng() & 1;
            cod.eph = rng() & 1;
            cod.progression = static_cast<uint8_t>(rng() % 5);
            cod.layers = static_cast<uint16_t>(1 + rng() % 65535);
            cod.mct = rng() & 1;
            const int levels = static_cast<int>(rng() % 33);
            cod.component = random_coding(rng, levels);
            s.qcd = reversible_quant(32);
            const uint16_t cc = static_cast<uint16_t>(rng() % comps);
            const ComponentCoding coc = random_coding(rng, static_cast<int>(rng() % 33));
            s.main_extra = [&](ByteWriter &w) { write_coc(w, cc, coc, static_cast<uint32_t>(comps)); };
            const Codestream cs = parse(build(s));
            const CodingStyle &r = *cs.main.cod;
            EXPECT_EQ(r.sop, cod.sop);
            EXPECT_EQ(r.eph, cod.eph);
            EXPECT_EQ(r.progression, cod.progression);
            EXPECT_EQ(r.layers, cod.layers);
            EXPECT_EQ(r.mct, cod.mct);
            expect_same_coding(r.component, cod.component);
            ASSERT_EQ(cs.main.coc.count(cc), 1u);
            expect_same_coding(cs.main.coc.at(cc), coc);
            EXPECT_EQ(&cs.component_coding(cs.tiles[0], cc), &cs.main.coc.at(cc));
        }
    }
}

TEST(Codestream, QcdQccRgnRoundTrip)
{
    std::mt19937 rng(13);
    for (int iter = 0; iter < 60; ++iter) {
        for (size_t comps : {size_t{2}, size_t{257}}) {
            StreamSpec s;
            s.siz = make_siz(40, 30, comps);
            const int levels = static_cast<int>(rng() % 10);
            s.cod.component.levels = static_cast<uint8_t>(levels);
            auto random_quant = [&](int style) {
                Quantization q;
                q.style = static_cast<Quantization::Style>(style);
                q.guard_bits = static_cast<uint8_t>(rng() % 8);
                const size_t n = style == 1 ? 1 : 3 * levels + 1;
                for (size_t i = 0; i < n; ++i)
                    q.steps.push_back({static_cast<uint8_t>(style == 1 ? levels + rng() % (32 - levels) : rng() % 32),
                                       static_cast<uint16_t>(style == 0 ? 0 : rng() % 2048)});
                return q;
            };
            s.qcd = random_quant(static_cast<int>(rng() % 3));
            const Quantization qcc = random_quant(static_cast<int>(rng() % 3));
            const uint16_t c = static_cast<uint16_t>(comps - 1);
            const uint8_t shift = static_cast<uint8_t>(rng());
            s.main_extra = [&](ByteWriter &w) {
                write_qcc(w, c, qcc, static_cast<uint32_t>(comps));
                write_rgn(w, 0, shift, static_cast<uint32_t>(comps));
            };
            const Codestream cs = parse(build(s));
            auto same = [](const Quantization &a, const Quantization &b) {
                EXPECT_EQ(a.style, b.style);
                EXPECT_EQ(a.guard_bits, b.guard_bits);
                ASSERT_EQ(a.steps.size(), b.steps.size());
                for (size_t i = 0; i < a.steps.size(); ++i) {
                    EXPECT_EQ(a.steps[i].exponent, b.steps[i].exponent);
                    EXPECT_EQ(a.steps[i].mantissa, b.steps[i].mantissa);
                }
            };
            same(*cs.main.qcd, s.qcd);
            ASSERT_EQ(cs.main.qcc.count(c), 1u);
            same(cs.main.qcc.at(c), qcc);
            EXPECT_EQ(cs.roi_shift(cs.tiles[0], 0), shift);
            EXPECT_EQ(cs.roi_shift(cs.tiles[0], c), 0);
        }
    }
}

TEST(Codestream, PocCrgComCapRoundTrip)
{
    for (size_t comps : {size_t{3}, size_t{256}, size_t{400}}) {
        StreamSpec s;
        s.siz = make_siz(40, 30, comps);
        s.siz.rsiz = 0x4000;
        std::vector<ProgressionChange> poc = {{0, 0, 3, 2, static_cast<uint16_t>(comps), 4},
                                              {1, 1, 65535, 33, static_cast<uint16_t>(comps > 256 ? comps : 256), 2},
                                              {2, 0, 1, 3, 1, 0}};
        std::vector<std::pair<uint16_t, uint16_t>> crg;
        for (size_t c = 0; c < comps; ++c)
            crg.emplace_back(static_cast<uint16_t>(c * 7), static_cast<uint16_t>(65535 - c));
        s.main_extra = [&](ByteWriter &w) {
            write_poc(w, poc, static_cast<uint32_t>(comps));
            write_crg(w, crg);
            write_com(w, "made by j2kc");
            write_com(w, "");
            write_cap(w, 0x00020001, {0x0003, 0xABCD});
        };
        s.parts[0].header = [&](ByteWriter &w) {
            write_poc(w, {{0, 0, 2, 1, 1, 1}}, static_cast<uint32_t>(comps));
            write_com(w, "tile comment");
        };
        const Codestream cs = parse(build(s));
        ASSERT_EQ(cs.main.poc.size(), 3u);
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(cs.main.poc[i].resolution_start, poc[i].resolution_start);
            EXPECT_EQ(cs.main.poc[i].component_start, poc[i].component_start);
            EXPECT_EQ(cs.main.poc[i].layer_end, poc[i].layer_end);
            EXPECT_EQ(cs.main.poc[i].resolution_end, poc[i].resolution_end);
            // CEpoc beyond Csiz (256 written as 0) comes back clamped to Csiz.
            EXPECT_EQ(cs.main.poc[i].component_end, std::min<uint32_t>(poc[i].component_end, comps));
            EXPECT_EQ(cs.main.poc[i].progression, poc[i].progression);
        }
        ASSERT_EQ(cs.tiles[0].header.poc.size(), 1u);
        EXPECT_EQ(cs.progression_changes(cs.tiles[0]).size(), 1u);
        EXPECT_EQ(cs.crg, crg);
        ASSERT_EQ(cs.comments.size(), 3u);
        EXPECT_EQ(cs.comments[0], "made by j2kc");
        EXPECT_EQ(cs.comments[1], "");
        EXPECT_EQ(cs.comments[2], "tile comment");
        EXPECT_EQ(cs.cap, 0x00020001u);
        EXPECT_EQ(cs.siz.rsiz, 0x4000);
    }
}

TEST(Codestream, TlmRoundTripAllFormsAndSplits)
{
    std::mt19937 rng(14);
    for (int st : {-1, 0, 1, 2}) {
        for (int sp : {-1, 0, 1}) {
            for (size_t n : {size_t{1}, size_t{255}, size_t{256}, size_t{700}}) {
                std::vector<TilePartLength> e(n);
                for (size_t i = 0; i < n; ++i) {
                    e[i].tile = static_cast<uint16_t>(st == 0 ? i : (st == 1 ? rng() % 256 : rng() % 700));
                    e[i].length = sp == 0 ? rng() % 65536 : (sp == 1 ? rng() : 14 + rng() % 60000);
                }
                StreamSpec s;
                s.siz = make_siz(700, 1, 1, 1, 1);  // 700 tiles
                size_t written = 0;
                s.main_extra = [&](ByteWriter &w) { written = write_tlm(w, e, st, sp); };
                const Bytes b = build(s);
                const Codestream cs = parse(b);
                ASSERT_EQ(cs.tlm.size(), n);
                for (size_t i = 0; i < n; ++i) {
                    EXPECT_EQ(cs.tlm[i].tile, e[i].tile);
                    EXPECT_EQ(cs.tlm[i].length, e[i].length);
                }
                // Segments of <= 255 entries, Ztlm rising from 0 (FFmpeg's limit).
                const auto segs = list_marker_segments(b.data(), b.size());
                size_t count = 0, z = 0, total = 0;
                for (const auto &m : segs) {
                    if (m.marker != kTLM) continue;
                    EXPECT_EQ(b[m.offset + 4], z++);
                    const int seg_st = (b[m.offset + 5] >> 4) & 3, seg_sp = b[m.offset + 5] >> 6;
                    const size_t entries = (m.length - 4) / tlm_entry_bytes(seg_st, seg_sp);
                    EXPECT_LE(entries, 255u);
                    total += 2 + m.length;
                    ++count;
                }
                EXPECT_EQ(count, (n + 254) / 255);
                EXPECT_EQ(total, written);
                if (st >= 0 && sp >= 0) {
                    EXPECT_EQ(tlm_bytes(n, st, sp), written);
                }
            }
        }
    }
    ByteWriter w;
    EXPECT_EQ(status_of([&] { write_tlm(w, {{3, 10}}, 0, 0); }), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(status_of([&] { write_tlm(w, {{300, 10}}, 1, 0); }), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(status_of([&] { write_tlm(w, {{0, 70000}}, 1, 0); }), J2KC_ERR_INVALID_ARG);
}

TEST(Codestream, PltRoundTripSplitsAt65535)
{
    std::mt19937 rng(15);
    std::vector<uint32_t> lengths;
    for (int i = 0; i < 30000; ++i) {
        const int kind = static_cast<int>(rng() % 4);
        lengths.push_back(kind == 0 ? rng() % 128 : kind == 1 ? rng() % 20000 : kind == 2 ? rng() : 127);
    }
    StreamSpec s;
    s.parts[0].header = [&](ByteWriter &w) { write_plt(w, lengths); };
    const Bytes b = build(s);
    const Codestream cs = parse(b);
    EXPECT_EQ(cs.tiles[0].packet_lengths, lengths);
    size_t plts = 0;
    for (const auto &m : list_marker_segments(b.data(), b.size())) {
        if (m.marker != kPLT) continue;
        EXPECT_EQ(b[m.offset + 4], plts);  // Zplt
        EXPECT_EQ(m.tile, 0);
        ++plts;
    }
    EXPECT_GE(plts, 2u);
    EXPECT_EQ(cs.tiles[0].data, s.parts[0].data);
}

TEST(Codestream, PpmSplitAcrossSegmentsAndOutOfZOrder)
{
    std::mt19937 rng(16);
    // Three tiles, four tile-parts; one tile-part's headers cross a segment boundary.
    std::vector<Bytes> headers = {random_bytes(rng, 70000), random_bytes(rng, 5), Bytes{}, random_bytes(rng, 65530)};
    StreamSpec s;
    s.siz = make_siz(30, 10, 1, 10, 10);
    s.parts = {{1, 0, 2, nullptr, {9}, -1},
               {0, 0, 0, nullptr, {8, 8}, -1},
               {1, 1, 2, nullptr, {7}, -1},
               {2, 0, 1, nullptr, {}, -1}};
    ByteWriter ppm;
    write_ppm(ppm, headers);
    // Re-emit the PPM segments in reverse order: Zppm must put them back.
    const Bytes pb = ppm.buffer();
    std::vector<Bytes> segs;
    for (size_t p = 0; p < pb.size();) {
        const size_t len = size_t{pb[p + 2]} << 8 | pb[p + 3];
        segs.emplace_back(pb.begin() + p, pb.begin() + p + 2 + len);
        p += 2 + len;
    }
    ASSERT_GE(segs.size(), 3u);
    s.main_extra = [&](ByteWriter &w) {
        for (size_t i = segs.size(); i-- > 0;) w.bytes(segs[i]);
    };
    const Codestream cs = parse(build(s));
    ASSERT_EQ(cs.tiles.size(), 3u);
    Bytes t1 = headers[0];
    t1.insert(t1.end(), headers[2].begin(), headers[2].end());
    EXPECT_TRUE(cs.tiles[0].has_packed_headers);
    EXPECT_EQ(cs.tiles[0].packed_headers, headers[1]);
    EXPECT_EQ(cs.tiles[1].packed_headers, t1);
    EXPECT_EQ(cs.tiles[2].packed_headers, headers[3]);
    EXPECT_EQ(cs.tiles[1].data, (Bytes{9, 7}));

    // Fewer PPM records than tile-parts, and PPM together with PPT: invalid.
    headers.pop_back();
    StreamSpec s2 = s;
    s2.main_extra = [&](ByteWriter &w) { write_ppm(w, headers); };
    EXPECT_EQ(parse_status(build(s2)), J2KC_ERR_INVALID_DATA);
    headers.push_back({});
    s2.main_extra = [&](ByteWriter &w) { write_ppm(w, headers); };
    EXPECT_EQ(parse_status(build(s2)), J2KC_OK);
    s2.parts[3].header = [](ByteWriter &w) { write_ppt(w, {1, 2}); };
    EXPECT_EQ(parse_status(build(s2)), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, PptInZOrderAcrossTileParts)
{
    std::mt19937 rng(17);
    const Bytes a = random_bytes(rng, 70000), b2 = random_bytes(rng, 33), c = random_bytes(rng, 4);
    StreamSpec s;
    s.parts = {{0, 0, 2, nullptr, {1}, -1}, {0, 1, 2, nullptr, {2}, -1}};
    s.parts[0].header = [&](ByteWriter &w) {
        // Segments of one tile-part written out of Z order.
        ByteWriter tmp;
        write_ppt(tmp, a);
        const Bytes &t = tmp.buffer();
        const size_t first = 2 + (size_t{t[2]} << 8 | t[3]);
        w.bytes(t.data() + first, t.size() - first);
        w.bytes(t.data(), first);
    };
    s.parts[1].header = [&](ByteWriter &w) {
        const unsigned z = write_ppt(w, b2, 0);
        write_ppt(w, c, z);
    };
    const Codestream cs = parse(build(s));
    Bytes want = a;
    want.insert(want.end(), b2.begin(), b2.end());
    want.insert(want.end(), c.begin(), c.end());
    EXPECT_TRUE(cs.tiles[0].has_packed_headers);
    EXPECT_EQ(cs.tiles[0].packed_headers, want);
    EXPECT_EQ(cs.tiles[0].data, (Bytes{1, 2}));
}

/** In place, a tile of one tile-part views its body in the codestream; one of several is joined as before. */
TEST(Codestream, TileDataInPlace)
{
    StreamSpec s;
    s.siz = make_siz(20, 20, 2, 10, 10);  // 4 tiles
    s.parts = {{0, 0, 1, nullptr, {1, 2, 3}, -1},
               {1, 0, 2, nullptr, {10, 11}, -1},
               {2, 0, 1, nullptr, {}, -1},
               {1, 1, 2, nullptr, {12}, -1}};
    const Bytes b = build(s);
    const Codestream copied = parse_codestream(b.data(), b.size());
    const Codestream viewed = parse_codestream(b.data(), b.size(), {}, true);
    ASSERT_EQ(viewed.tiles.size(), 3u);
    for (size_t t = 0; t < viewed.tiles.size(); ++t) {
        const TileData &in = viewed.tiles[t].data;
        EXPECT_EQ(in, std::vector<uint8_t>(copied.tiles[t].data.begin(), copied.tiles[t].data.end())) << t;
        EXPECT_FALSE(copied.tiles[t].data.in_place()) << t;
        EXPECT_EQ(in.in_place(), viewed.tiles[t].tile_parts_seen == 1) << t;
        if (!in.in_place()) continue;
        // Inside the codestream, at the tile-part's body.
        EXPECT_GE(in.data(), b.data()) << t;
        EXPECT_LE(in.data() + in.size(), b.data() + b.size()) << t;
    }
    EXPECT_EQ(viewed.tiles[0].data.data(), b.data() + viewed.tile_parts[0].data_offset);
    EXPECT_EQ(viewed.tiles[1].data, (Bytes{10, 11, 12}));
    // A copy of a tile that joined its data holds its own bytes.
    Tile tile = viewed.tiles[1];
    EXPECT_NE(tile.data.data(), viewed.tiles[1].data.data());
    EXPECT_EQ(tile.data, (Bytes{10, 11, 12}));
}

TEST(Codestream, InterleavedTilesAndTileHeaders)
{
    StreamSpec s;
    s.siz = make_siz(20, 20, 2, 10, 10);  // 4 tiles
    ComponentCoding tile_coc;
    tile_coc.levels = 1;
    Quantization tile_qcd = reversible_quant(2, 3);
    s.parts = {{3, 0, 3, nullptr, {30}, -1},
               {1, 0, 0, nullptr, {10, 11}, -1},
               {3, 1, 3, nullptr, {31, 32}, -1},
               {1, 1, 0, nullptr, {12}, -1},
               {3, 2, 3, nullptr, {}, -1}};
    s.parts[0].header = [&](ByteWriter &w) {
        CodingStyle cod = s.cod;
        cod.layers = 5;
        write_cod(w, cod);
        write_coc(w, 1, tile_coc, 2);
        write_qcd(w, tile_qcd);
        write_qcc(w, 1, reversible_quant(1, 3), 2);
        write_rgn(w, 1, 9, 2);
    };
    const Codestream cs = parse(build(s));
    ASSERT_EQ(cs.tiles.size(), 2u);
    EXPECT_EQ(cs.tiles[0].index, 1u);
    EXPECT_EQ(cs.tiles[1].index, 3u);
    EXPECT_EQ(cs.tiles[0].data, (Bytes{10, 11, 12}));
    EXPECT_EQ(cs.tiles[1].data, (Bytes{30, 31, 32}));
    EXPECT_EQ(cs.tiles[1].tile_parts_seen, 3);
    EXPECT_EQ(cs.tiles[1].tile_parts_declared, 3);
    EXPECT_EQ(cs.tiles[0].tile_parts_seen, 2);
    EXPECT_EQ(cs.coding_style(cs.tiles[1]).layers, 5);
    EXPECT_EQ(cs.coding_style(cs.tiles[0]).layers, 1);
    EXPECT_EQ(cs.component_coding(cs.tiles[1], 1).levels, 1);
    EXPECT_EQ(cs.component_coding(cs.tiles[1], 0).levels, 2);
    EXPECT_EQ(cs.quantization(cs.tiles[1], 0).guard_bits, 3);
    EXPECT_EQ(cs.quantization(cs.tiles[0], 0).guard_bits, 2);
    EXPECT_EQ(cs.roi_shift(cs.tiles[1], 1), 9);
    ASSERT_EQ(cs.tile_parts.size(), 5u);
    EXPECT_EQ(cs.tile_parts[2].tile, 3);
    EXPECT_EQ(cs.tile_parts[2].part, 1);
    // Tiles 0 and 2 have no tile-part: damage (A.4.2), told once.
    ASSERT_EQ(cs.warnings.size(), 1u);
    EXPECT_EQ(cs.warnings[0], "2 of 4 tiles have no tile-part");
    EXPECT_EQ(cs.damage, cs.warnings);
}

TEST(Codestream, TilePartOrderAndSotFieldsValidated)
{
    StreamSpec s;
    s.siz = make_siz(20, 10, 1, 10, 10);
    s.parts = {{0, 1, 2, nullptr, {1}, -1}, {0, 0, 2, nullptr, {2}, -1}};
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    EXPECT_NE(parse_error(build(s)).find("out of order"), std::string::npos);
    s.parts = {{0, 0, 2, nullptr, {1}, -1}, {0, 0, 2, nullptr, {2}, -1}};
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.parts = {{2, 0, 1, nullptr, {1}, -1}};  // only tiles 0 and 1 exist
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    for (int64_t psot : {1, 12, 13}) {
        s.parts = {{0, 0, 1, nullptr, {1}, psot}};
        EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA) << psot;
    }
    // Lsot must be 10.
    Bytes b = build(StreamSpec{});
    const auto segs = list_marker_segments(b.data(), b.size());
    for (const auto &m : segs)
        if (m.marker == kSOT) b[m.offset + 3] = 11;
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, PsotZeroMissingEocTrailingGarbage)
{
    StreamSpec s;
    s.siz = make_siz(20, 10, 1, 10, 10);
    s.parts = {{0, 0, 1, nullptr, {1, 2}, -1}, {1, 0, 1, nullptr, {3, 4, 5}, 0}};
    Codestream cs = parse(build(s));
    EXPECT_EQ(cs.tiles[1].data, (Bytes{3, 4, 5}));
    EXPECT_TRUE(cs.has_eoc);
    EXPECT_FALSE(cs.truncated);

    s.eoc = false;
    cs = parse(build(s));
    EXPECT_EQ(cs.tiles[1].data, (Bytes{3, 4, 5}));
    EXPECT_FALSE(cs.has_eoc);

    s.parts[1].psot = -1;
    cs = parse(build(s));
    EXPECT_FALSE(cs.has_eoc);
    EXPECT_TRUE(has_warning(cs, "EOC"));
    EXPECT_EQ(cs.tiles.size(), 2u);

    s.eoc = true;
    Bytes b = build(s);
    b.insert(b.end(), {0x12, 0x34, 0x56});
    cs = parse(b);
    EXPECT_TRUE(cs.has_eoc);
    EXPECT_TRUE(has_warning(cs, "after EOC"));

    b = build(s);
    b.resize(b.size() - 2);
    b.insert(b.end(), {0x00, 0x01, 0x02});  // garbage where SOT/EOC should be
    cs = parse(b);
    EXPECT_TRUE(has_warning(cs, "neither SOT nor EOC"));
    EXPECT_EQ(cs.tiles.size(), 2u);
}

TEST(Codestream, PsotPastEndKeepsWhatIsThere)
{
    StreamSpec s;
    s.parts[0].data = {1, 2, 3, 4, 5, 6, 7, 8};
    s.parts[0].psot = 12 + 2 + 8 + 1000;
    s.eoc = false;
    const Codestream cs = parse(build(s));
    ASSERT_EQ(cs.tiles.size(), 1u);
    EXPECT_EQ(cs.tiles[0].data, s.parts[0].data);
    EXPECT_TRUE(cs.tiles[0].truncated);
    EXPECT_TRUE(cs.truncated);
    EXPECT_TRUE(cs.tile_parts[0].truncated);
    EXPECT_TRUE(has_warning(cs, "Psot"));
}

/** A small but busy stream: two tiles, three tile-parts, PLT, PPT, COM, TLM. */
StreamSpec busy_stream()
{
    StreamSpec s;
    s.siz = make_siz(20, 10, 3, 10, 10);
    s.siz.components[1].precision = 12;
    s.cod.mct = 1;
    s.cod.component.precincts_defined = true;
    s.main_extra = [](ByteWriter &w) {
        write_tlm(w, {{0, 40}, {1, 30}, {0, 20}});
        write_com(w, "busy");
        ComponentCoding coc;
        coc.levels = 1;
        write_coc(w, 2, coc, 3);
    };
    s.parts = {{0, 0, 2, nullptr, {1, 2, 3, 4}, -1},
               {1, 0, 1, nullptr, {5, 6, 7}, -1},
               {0, 1, 2, nullptr, {8, 9, 10, 11, 12}, -1}};
    s.parts[0].header = [](ByteWriter &w) {
        write_plt(w, {1, 200, 3});
        write_ppt(w, {0xA0, 0xA1});
    };
    s.parts[1].header = [](ByteWriter &w) {
        write_com(w, "tile 1");
        write_ppt(w, {0xB0});
    };
    s.parts[2].header = [](ByteWriter &w) { write_ppt(w, {0xA2}); };
    return s;
}

TEST(Codestream, EveryPrefixParsesOrFailsCleanly)
{
    const Bytes full = build(busy_stream());
    const Codestream ref = parse(full);
    ASSERT_EQ(ref.tiles.size(), 2u);
    ASSERT_FALSE(ref.truncated);
    size_t first_sod = 0;
    for (const auto &m : list_marker_segments(full.data(), full.size()))
        if (m.marker == kSOD && !first_sod) first_sod = m.offset;
    for (size_t n = 0; n < full.size(); ++n) {
        const Bytes prefix(full.begin(), full.begin() + n);
        int status = J2KC_OK;
        Codestream cs;
        try {
            cs = parse(prefix);
        } catch (const Error &e) {
            status = e.status();
        }
        if (n < first_sod + 2) {
            EXPECT_EQ(status, J2KC_ERR_INVALID_DATA) << "prefix " << n;
            continue;
        }
        ASSERT_EQ(status, J2KC_OK) << "prefix " << n;
        EXPECT_FALSE(cs.has_eoc);
        for (const Tile &t : cs.tiles) {
            const Tile *r = nullptr;
            for (const Tile &x : ref.tiles)
                if (x.index == t.index) r = &x;
            ASSERT_NE(r, nullptr);
            ASSERT_LE(t.data.size(), r->data.size());
            EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), r->data.begin())) << n;
            ASSERT_LE(t.packed_headers.size(), r->packed_headers.size());
            EXPECT_TRUE(std::equal(t.packed_headers.begin(), t.packed_headers.end(), r->packed_headers.begin()));
        }
    }
}

TEST(Codestream, LyingSiz)
{
    auto with = [](const std::function<void(ImageSize &)> &f, int csiz = -1) {
        StreamSpec s;
        // Write a valid SIZ, then patch the fields the writer would refuse.
        ImageSize z = s.siz;
        f(z);
        Bytes b = build(s);
        // SIZ body starts at offset 6: Rsiz, then 8 u32 fields, Csiz, components.
        auto put32 = [&](size_t at, uint32_t v) {
            for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
        };
        const uint32_t vals[] = {z.width, z.height, z.x0, z.y0, z.tile_width, z.tile_height, z.tile_x0, z.tile_y0};
        for (int i = 0; i < 8; ++i) put32(6 + 2 + 4 * i, vals[i]);
        const size_t n = csiz >= 0 ? size_t(csiz) : z.components.size();
        b[40] = static_cast<uint8_t>(n >> 8);
        b[41] = static_cast<uint8_t>(n);
        {
            b[42] = static_cast<uint8_t>((z.components[0].precision - 1) | (z.components[0].is_signed ? 0x80 : 0));
            b[43] = z.components[0].dx;
            b[44] = z.components[0].dy;
        }
        return b;
    };
    const int D = J2KC_ERR_INVALID_DATA;
    EXPECT_EQ(parse_status(with([](ImageSize &) {})), J2KC_OK);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.width = 0; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.height = 0; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.x0 = z.width; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.y0 = 1000; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.tile_width = 0; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.tile_x0 = 1; })), D);  // XTOsiz > XOsiz
    EXPECT_EQ(parse_status(with([](ImageSize &z) {
                  z.x0 = 10;
                  z.tile_width = 10;
              })),
              D);  // first tile misses origin
    EXPECT_EQ(parse_status(with([](ImageSize &z) {
                  z.x0 = 10;
                  z.tile_width = 11;
              })),
              J2KC_OK);
    EXPECT_EQ(parse_status(with([](ImageSize &) {}, 0)), D);
    EXPECT_EQ(parse_status(with([](ImageSize &) {}, 20000)), D);
    EXPECT_EQ(parse_status(with([](ImageSize &) {}, 2)), D);  // Lsiz mismatch
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.components[0].precision = 39; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.components[0].precision = 128; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.components[0].precision = 38; })), J2KC_OK);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.components[0].dx = 0; })), D);
    EXPECT_EQ(parse_status(with([](ImageSize &z) { z.components[0].dy = 0; })), D);
    // Subsampling that leaves the component empty.
    EXPECT_EQ(parse_status(with([](ImageSize &z) {
                  z.x0 = 16;
                  z.width = 17;
                  z.components[0].dx = 200;
              })),
              D);
    EXPECT_NE(parse_error(with([](ImageSize &z) { z.width = 0; })).find("SIZ marker segment at offset 2"),
              std::string::npos);
}

TEST(Codestream, LimitsAreCheckedBeforeAllocation)
{
    StreamSpec s;
    s.siz = make_siz(0xFFFFFFFFu, 0xFFFFFFFFu, 1);
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_LIMIT);
    s.siz = make_siz(60000, 60000, 1, 60000, 60000);
    ParseLimits big;
    big.max_pixels = ~0ull;
    EXPECT_EQ(parse_status(build(s), big), J2KC_OK);
    big.max_memory = 1000;
    EXPECT_EQ(parse_status(build(s), big), J2KC_ERR_LIMIT);
    // 16384 components of 2^31 pixels would need 2^47 * 4 bytes.
    s.siz = make_siz(40000, 40000, 16384);
    s.parts[0].data.clear();
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_LIMIT);
    ParseLimits few;
    few.max_components = 8;
    s.siz = make_siz(10, 10, 9);
    EXPECT_EQ(parse_status(build(s), few), J2KC_ERR_LIMIT);
    // Tiles: the standard's 65535 is INVALID_DATA, the caller's limit is LIMIT.
    s.siz = make_siz(65536, 1, 1, 1, 1);
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.siz = make_siz(65535, 1, 1, 1, 1);
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    few.max_tiles = 100;
    EXPECT_EQ(parse_status(build(s), few), J2KC_ERR_LIMIT);
    // Huge tile sizes do not overflow the tile count.
    s.siz = make_siz(0xFFFFFFF0u, 3, 1, 0xFFFFFFFFu, 3);
    s.siz.x0 = 0xFFFFFF00u;
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    EXPECT_EQ(s.siz.num_tiles(), 1u);
}

TEST(Codestream, BadMarkerLengths)
{
    const Bytes good = build(StreamSpec{});
    size_t cod_at = 0;
    for (const auto &m : list_marker_segments(good.data(), good.size()))
        if (m.marker == kCOD) cod_at = m.offset;
    ASSERT_GT(cod_at, 0u);
    for (uint16_t len : {0, 1, 5, 11, 13, 60000}) {
        Bytes b = good;
        b[cod_at + 2] = static_cast<uint8_t>(len >> 8);
        b[cod_at + 3] = static_cast<uint8_t>(len);
        EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA) << len;
        EXPECT_NE(parse_error(b).find("offset " + std::to_string(cod_at)), std::string::npos) << parse_error(b);
    }
    // An unknown segment whose length runs past the end.
    Bytes b = good;
    const Bytes unknown = {0xFF, 0x6F, 0xFF, 0xF0, 1, 2};
    b.insert(b.begin() + cod_at, unknown.begin(), unknown.end());
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
    // In a tile-part header with a right Psot: past the tile-part is invalid.
    StreamSpec s;
    s.parts[0].header = [](ByteWriter &w) { w.bytes({0xFF, 0x64, 0x00, 0x40, 0x00, 0x01}); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.parts[0].header = [](ByteWriter &w) { w.bytes({0xFF, 0x64, 0x00, 0x01}); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    // Not a marker at all in the main header / tile-part header.
    b = good;
    b[cod_at] = 0x12;
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
    s.parts[0].header = [](ByteWriter &w) { w.bytes({0x00, 0x01}); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, MarkerWalkNeverGoesBackwards)
{
    // Psot 14 with a COM in the tile-part header: SOD lies past the tile-part's
    // end. The parser rejects it; the raw walker must too (not loop).
    StreamSpec s;
    s.parts[0].header = [](ByteWriter &w) { write_com(w, std::string(40, 'x')); };
    s.parts[0].psot = 14;
    const Bytes b = build(s);
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of([&] { list_marker_segments(b.data(), b.size()); }), J2KC_ERR_INVALID_DATA);
    // SOD in the main header.
    const Bytes m = {0xFF, 0x4F, 0xFF, 0x93, 0xFF, 0xD9};
    EXPECT_EQ(status_of([&] { list_marker_segments(m.data(), m.size()); }), J2KC_ERR_INVALID_DATA);
    // A valid stream lists SOC first and EOC last, tile-part markers tagged with their tile.
    const Bytes good = build(busy_stream());
    const auto segs = list_marker_segments(good.data(), good.size());
    ASSERT_GE(segs.size(), 4u);
    EXPECT_EQ(segs.front().marker, kSOC);
    EXPECT_EQ(segs[1].marker, kSIZ);
    EXPECT_EQ(segs[1].length, 38u + 9u);
    EXPECT_EQ(segs.back().marker, kEOC);
    EXPECT_EQ(segs.back().offset, good.size() - 2);
    size_t sots = 0;
    for (const auto &g : segs) {
        if (g.marker == kSOT) ++sots;
        if (g.marker == kPLT || g.marker == kPPT) {
            EXPECT_GE(g.tile, 0);
        }
        if (g.marker == kTLM) {
            EXPECT_EQ(g.tile, -1);
        }
    }
    EXPECT_EQ(sots, 3u);
}

TEST(Codestream, UnknownAndForeignMarkers)
{
    StreamSpec s;
    s.main_extra = [](ByteWriter &w) {
        w.bytes({0xFF, 0x30});                          // reserved, no segment
        w.bytes({0xFF, 0x6F, 0x00, 0x04, 0xAB, 0xCD});  // unknown with a length
        w.bytes({0xFF, 0x56, 0x00, 0x04, 0x00, 0x01});  // PRF
    };
    s.parts[0].header = [](ByteWriter &w) { w.bytes({0xFF, 0x3F, 0xFF, 0x6E, 0x00, 0x02}); };
    const Codestream cs = parse(build(s));
    EXPECT_TRUE(has_warning(cs, "0xFF30"));
    EXPECT_TRUE(has_warning(cs, "0xFF6F"));
    EXPECT_TRUE(has_warning(cs, "0xFF6E"));
    EXPECT_EQ(cs.tiles[0].data, s.parts[0].data);

    s.main_extra = [](ByteWriter &w) { w.bytes({0xFF, 0x74, 0x00, 0x04, 0, 0}); };  // Part 2 MCT
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_UNSUPPORTED);
    s.main_extra = [](ByteWriter &w) { w.bytes({0xFF, 0x93}); };  // SOD in the main header
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);

    // Thousands of oddities: the warning list stays bounded.
    s.main_extra = [](ByteWriter &w) {
        for (int i = 0; i < 5000; ++i) w.bytes({0xFF, 0x31});
    };
    EXPECT_LE(parse(build(s)).warnings.size(), 65u);
}

TEST(Codestream, CodValidation)
{
    auto status_with = [](const std::function<void(Bytes &, size_t)> &patch) {
        Bytes b = build(StreamSpec{});
        size_t cod = 0;
        for (const auto &m : list_marker_segments(b.data(), b.size()))
            if (m.marker == kCOD) cod = m.offset;
        patch(b, cod + 4);  // Scod
        return parse_status(b);
    };
    // Scod +0, prog +1, layers +2, mct +4, levels +5, xcb +6, ycb +7, style +8, transform +9
    EXPECT_EQ(status_with([](Bytes &, size_t) {}), J2KC_OK);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 5] = 33; }), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) {
                  b[p + 6] = 5;
                  b[p + 7] = 4;
              }),
              J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) {
                  b[p + 6] = 9;
                  b[p + 7] = 0;
              }),
              J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 8] = 0x40; }), J2KC_OK);               // HT (Part 15)
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 8] = 0xC0; }), J2KC_OK);               // HT MIXED (Part 15)
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 8] = 0x80; }), J2KC_ERR_UNSUPPORTED);  // MIXED without HT
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 9] = 2; }), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 1] = 5; }), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) {
                  b[p + 2] = 0;
                  b[p + 3] = 0;
              }),
              J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p + 4] = 2; }), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p] = 0x20; }), J2KC_ERR_INVALID_DATA);
    // Precincts announced but not written.
    EXPECT_EQ(status_with([](Bytes &b, size_t p) { b[p] = 0x01; }), J2KC_ERR_INVALID_DATA);
    // Part 2 (Rsiz bit 15) features are legal but unsupported.
    EXPECT_EQ(status_with([](Bytes &b, size_t p) {
                  b[6] = 0x80;
                  b[p + 9] = 2;
              }),
              J2KC_ERR_UNSUPPORTED);
    EXPECT_EQ(status_with([](Bytes &b, size_t p) {
                  b[6] = 0x80;
                  b[p] = 0x08;
              }),
              J2KC_ERR_UNSUPPORTED);

    StreamSpec s;
    s.cod.component.precincts_defined = true;
    s.cod.component.precinct_width_log2[1] = 0;                     // only r = 0 may be 0
    EXPECT_EQ(status_of([&] { build(s); }), J2KC_ERR_INVALID_ARG);  // the writer refuses too
    // Duplicates and absences.
    s = StreamSpec{};
    s.main_extra = [&](ByteWriter &w) { write_cod(w, s.cod); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.main_extra = [&](ByteWriter &w) { write_qcd(w, s.qcd); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.main_extra = nullptr;
    s.parts[0].header = [&](ByteWriter &w) {
        write_cod(w, s.cod);
        write_cod(w, s.cod);
    };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    // MCT with one component is ignored with a warning.
    s = StreamSpec{};
    s.cod.mct = 1;
    const Codestream cs = parse(build(s));
    EXPECT_EQ(cs.main.cod->mct, 0);
    EXPECT_FALSE(cs.warnings.empty());
}

TEST(Codestream, MissingMainCodQcdOrSoc)
{
    ByteWriter w;
    write_soc(w);
    write_siz(w, make_siz(8, 8, 1));
    write_qcd(w, reversible_quant(5));
    const size_t at = write_sot(w, 0, 0, 1);
    write_sod(w);
    patch_sot_psot(w, at, static_cast<uint32_t>(w.size() - at));
    write_eoc(w);
    EXPECT_EQ(parse_status(w.buffer()), J2KC_ERR_INVALID_DATA);
    EXPECT_NE(parse_error(w.buffer()).find("COD"), std::string::npos);
    Bytes b = build(StreamSpec{});
    b[1] = 0x4E;
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(parse_status({}), J2KC_ERR_INVALID_DATA);
    // SIZ must come right after SOC.
    ByteWriter w2;
    write_soc(w2);
    write_com(w2, "x");
    write_siz(w2, make_siz(8, 8, 1));
    EXPECT_EQ(parse_status(w2.buffer()), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, QuantisationMustCoverTheLevels)
{
    StreamSpec s;
    s.cod.component.levels = 5;
    s.qcd = reversible_quant(4);  // 13 steps, 16 needed
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.qcd = reversible_quant(5);
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    // A COC with more levels than the QCD covers.
    s.siz = make_siz(17, 13, 2);
    ComponentCoding coc;
    coc.levels = 6;
    s.main_extra = [&](ByteWriter &w) { write_coc(w, 1, coc, 2); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.main_extra = [&](ByteWriter &w) {
        write_coc(w, 1, coc, 2);
        write_qcc(w, 1, reversible_quant(6), 2);
    };
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    // The same in a tile header.
    s.main_extra = nullptr;
    s.parts[0].header = [&](ByteWriter &w) { write_coc(w, 0, coc, 2); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    // Derived quantisation: the exponent must stay >= 0 at the finest level.
    s.parts[0].header = nullptr;
    Quantization d;
    d.style = Quantization::kScalarDerived;
    d.steps = {{3, 100}};
    s.qcd = d;
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.qcd.steps[0].exponent = 4;
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    // Lengths inconsistent with the style.
    Bytes b = build(s);
    size_t q = 0;
    for (const auto &m : list_marker_segments(b.data(), b.size()))
        if (m.marker == kQCD) q = m.offset;
    b[q + 4] = 0x02;  // says expounded, 2 bytes of steps: one step for 5 levels
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
    b[q + 4] = 0x03;  // style 3 does not exist
    EXPECT_EQ(parse_status(b), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, TileDefaultsAgainstMainComponentEntries)
{
    // Tile COD over main COC: component 1's main QCC then covers too few levels.
    StreamSpec s;
    s.siz = make_siz(17, 13, 3);
    ComponentCoding one;
    one.levels = 1;
    s.main_extra = [&](ByteWriter &w) {
        write_coc(w, 1, one, 3);
        write_qcc(w, 1, reversible_quant(1), 3);
    };
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    s.parts[0].header = [&](ByteWriter &w) { write_cod(w, s.cod); };
    EXPECT_EQ(parse_status(build(s)), J2KC_ERR_INVALID_DATA);
    s.parts[0].header = [&](ByteWriter &w) {
        write_cod(w, s.cod);
        write_coc(w, 1, one, 3);
    };
    EXPECT_EQ(parse_status(build(s)), J2KC_OK);
    // Tile QCD over main QCD: the deepest main COC needs more steps than it has.
    StreamSpec t;
    t.siz = make_siz(17, 13, 3);
    t.cod.component.levels = 1;
    ComponentCoding two;
    two.levels = 2;
    t.main_extra = [&](ByteWriter &w) { write_coc(w, 2, two, 3); };
    t.parts[0].header = [&](ByteWriter &w) { write_qcd(w, reversible_quant(1)); };
    EXPECT_EQ(parse_status(build(t)), J2KC_ERR_INVALID_DATA);
    t.parts[0].header = [&](ByteWriter &w) {
        write_qcd(w, reversible_quant(1));
        write_qcc(w, 2, reversible_quant(2), 3);
    };
    EXPECT_EQ(parse_status(build(t)), J2KC_OK);
    // Every component named in the main header, thousands of tiles with a COD:
    // the checks stay proportional to the header bytes.
    StreamSpec big;
    big.siz = make_siz(3000, 1, 16384, 1, 1);
    big.main_extra = [](ByteWriter &w) {
        for (uint32_t c = 0; c < 16384; ++c) write_qcc(w, static_cast<uint16_t>(c), reversible_quant(2), 16384);
    };
    big.parts.clear();
    for (uint16_t i = 0; i < 3000; ++i)
        big.parts.push_back({i, 0, 1, [&](ByteWriter &w) { write_cod(w, big.cod); }, {}, -1});
    const Codestream cs = parse(build(big));
    EXPECT_EQ(cs.tiles.size(), 3000u);
    big.parts[2999].header = [&](ByteWriter &w) {
        CodingStyle deeper = big.cod;
        deeper.component.levels = 3;
        write_cod(w, deeper);
    };
    EXPECT_EQ(parse_status(build(big)), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, PocValidation)
{
    auto st = [](std::vector<uint8_t> body) {
        StreamSpec s;
        s.siz = make_siz(17, 13, 3);
        s.main_extra = [&](ByteWriter &w) {
            w.u16(kPOC);
            w.u16(static_cast<uint16_t>(body.size() + 2));
            w.bytes(body);
        };
        return parse_status(build(s));
    };
    EXPECT_EQ(st({0, 0, 0, 1, 3, 3, 4}), J2KC_OK);
    EXPECT_EQ(st({0, 0, 0, 1, 3, 3, 5}), J2KC_ERR_INVALID_DATA);   // progression 5
    EXPECT_EQ(st({3, 0, 0, 1, 3, 3, 4}), J2KC_ERR_INVALID_DATA);   // RS >= RE
    EXPECT_EQ(st({0, 0, 0, 1, 34, 3, 4}), J2KC_ERR_INVALID_DATA);  // RE > 33
    EXPECT_EQ(st({0, 3, 0, 1, 3, 0, 4}), J2KC_ERR_INVALID_DATA);   // CS >= Csiz
    EXPECT_EQ(st({0, 2, 0, 1, 3, 1, 4}), J2KC_ERR_INVALID_DATA);   // CS >= CE
    EXPECT_EQ(st({0, 0, 0, 0, 3, 3, 4}), J2KC_ERR_INVALID_DATA);   // layer end 0
    EXPECT_EQ(st({0, 0, 0, 1, 3, 3}), J2KC_ERR_INVALID_DATA);      // short entry
    EXPECT_EQ(st({}), J2KC_ERR_INVALID_DATA);
}

TEST(Codestream, RandomDamageNeverCrashes)
{
    std::vector<Bytes> seeds = {build(busy_stream()), build(StreamSpec{})};
    const char *dir = std::getenv("J2KC_TEST_DATA");
    if (dir) {
        for (const char *name : {"cs_rgb_tiles_tpr.j2k", "cs_gray_sop_eph_prec.j2k", "cs_gray12_poc.j2k"}) {
            std::ifstream f(std::string(dir) + "/" + name, std::ios::binary);
            Bytes b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            if (!b.empty()) seeds.push_back(b);
        }
    }
    std::mt19937 rng(99);
    int ok = 0, failed = 0;
    for (const Bytes &seed : seeds) {
        for (int iter = 0; iter < 1500; ++iter) {
            Bytes b = seed;
            const int flips = 1 + static_cast<int>(rng() % 4);
            for (int k = 0; k < flips; ++k) {
                const size_t at = rng() % b.size();
                switch (rng() % 3) {
                case 0: b[at] = static_cast<uint8_t>(rng()); break;
                case 1: b[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
                default: b[at] = 0xFF;
                }
            }
            if (rng() % 4 == 0) b.resize(rng() % b.size());
            const int status = parse_status(b);
            EXPECT_TRUE(status == J2KC_OK || status == J2KC_ERR_INVALID_DATA || status == J2KC_ERR_UNSUPPORTED ||
                        status == J2KC_ERR_LIMIT)
                << status;
            (status == J2KC_OK ? ok : failed)++;
            // The raw walker and the dump must survive whatever parses.
            if (status == J2KC_OK) {
                const Codestream cs = parse(b);
                EXPECT_FALSE(dump_codestream(cs).empty());
                status_of([&] { check_profile(cs, b.data(), b.size(), 24); });
            }
        }
    }
    EXPECT_GT(ok, 0);
    EXPECT_GT(failed, 0);
}

// ---------------------------------------------------------------------------
// Reference streams from opj_compress (tests/data/cs_*.j2k).

Bytes load(const std::string &name)
{
    const char *dir = std::getenv("J2KC_TEST_DATA");
    if (!dir) return {};
    std::ifstream f(std::string(dir) + "/" + name, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(CodestreamReference, OpjTilesResolutionTilePartsPltTlm)
{
    // opj_compress -i rgb.ppm (37x29) -n 3 -t 16,16 -b 16,16 -TP R -PLT -TLM -p RPCL -r 4
    const Bytes b = load("cs_rgb_tiles_tpr.j2k");
    if (b.empty()) GTEST_SKIP() << "J2KC_TEST_DATA not set or file missing";
    const Codestream cs = parse(b);
    EXPECT_EQ(cs.siz.width, 37u);
    EXPECT_EQ(cs.siz.height, 29u);
    EXPECT_EQ(cs.siz.components.size(), 3u);
    EXPECT_EQ(cs.siz.num_tiles(), 6u);
    EXPECT_EQ(cs.main.cod->component.levels, 2);
    EXPECT_EQ(cs.main.cod->component.cblk_width_log2, 4);
    EXPECT_EQ(cs.main.cod->progression, 2);
    EXPECT_EQ(cs.main.cod->mct, 1);
    ASSERT_EQ(cs.tiles.size(), 6u);
    // -TP R: one tile-part per resolution.
    EXPECT_EQ(cs.tile_parts.size(), 18u);
    for (const Tile &t : cs.tiles) {
        EXPECT_EQ(t.tile_parts_seen, 3);
        EXPECT_FALSE(t.packet_lengths.empty());
        uint64_t sum = 0;
        for (uint32_t l : t.packet_lengths) sum += l;
        EXPECT_EQ(sum, t.data.size());  // PLT lengths cover the packet data exactly
    }
    ASSERT_EQ(cs.tlm.size(), cs.tile_parts.size());
    for (size_t i = 0; i < cs.tlm.size(); ++i) {
        EXPECT_EQ(cs.tlm[i].tile, cs.tile_parts[i].tile);
        EXPECT_EQ(cs.tlm[i].length, cs.tile_parts[i].psot);
    }
    EXPECT_TRUE(cs.has_eoc);
    EXPECT_TRUE(cs.warnings.empty());
    EXPECT_TRUE(check_profile(cs, b.data(), b.size()).empty());  // Rsiz 0: no profile
    const std::string d = dump_codestream(cs);
    EXPECT_NE(d.find("RPCL"), std::string::npos);
    EXPECT_NE(d.find("TLM: 18"), std::string::npos);
}

TEST(CodestreamReference, OpjSopEphPrecinctsComment)
{
    // opj_compress -i gray.pgm (45x31) -n 4 -c [32,32],[16,16] -b 8,8 -SOP -EPH -I -r 8,4,2 -p LRCP -C "j2kc test"
    const Bytes b = load("cs_gray_sop_eph_prec.j2k");
    if (b.empty()) GTEST_SKIP() << "J2KC_TEST_DATA not set or file missing";
    const Codestream cs = parse(b);
    const CodingStyle &c = *cs.main.cod;
    EXPECT_TRUE(c.sop);
    EXPECT_TRUE(c.eph);
    EXPECT_EQ(c.layers, 3);
    EXPECT_EQ(c.component.levels, 3);
    EXPECT_EQ(c.component.wavelet, Wavelet::kIrreversible97);
    EXPECT_EQ(c.component.cblk_width_log2, 3);
    ASSERT_TRUE(c.component.precincts_defined);
    // opj gives the list from the highest resolution down, halving the last.
    EXPECT_EQ(c.component.precinct_width_log2[3], 5);
    EXPECT_EQ(c.component.precinct_width_log2[2], 4);
    EXPECT_EQ(c.component.precinct_width_log2[1], 3);
    EXPECT_EQ(c.component.precinct_height_log2[0], 2);
    EXPECT_EQ(cs.main.qcd->style, Quantization::kScalarExpounded);
    EXPECT_EQ(cs.main.qcd->steps.size(), 10u);
    ASSERT_FALSE(cs.comments.empty());
    EXPECT_EQ(cs.comments[0], "j2kc test");
    ASSERT_EQ(cs.tiles.size(), 1u);
    // Packet data starts with an SOP marker.
    ASSERT_GE(cs.tiles[0].data.size(), 6u);
    EXPECT_EQ(cs.tiles[0].data[0], 0xFF);
    EXPECT_EQ(cs.tiles[0].data[1], 0x91);
}

TEST(CodestreamReference, OpjPocAndEveryPrefix)
{
    // opj_compress -i gray12.pgm (33x21, 12-bit) -n 3 -POC T1=0,0,1,3,1,LRCP/T1=0,0,3,4,1,CPRL -r 6,3,1
    const Bytes b = load("cs_gray12_poc.j2k");
    if (b.empty()) GTEST_SKIP() << "J2KC_TEST_DATA not set or file missing";
    const Codestream cs = parse(b);
    EXPECT_EQ(cs.siz.components[0].precision, 12);
    ASSERT_EQ(cs.tiles.size(), 1u);
    const auto &poc = cs.progression_changes(cs.tiles[0]);
    ASSERT_EQ(poc.size(), 2u);
    EXPECT_EQ(poc[0].progression, 0);
    EXPECT_EQ(poc[0].resolution_end, 3);
    EXPECT_EQ(poc[1].progression, 4);
    EXPECT_EQ(poc[1].layer_end, 3);
    for (size_t n = 0; n < b.size(); ++n) {
        const int s = parse_status(Bytes(b.begin(), b.begin() + n));
        EXPECT_TRUE(s == J2KC_OK || s == J2KC_ERR_INVALID_DATA) << n;
    }
}

// ---------------------------------------------------------------------------
// Profile checks.

/** A DCI-shaped stream built with our writers (fake packet data). */
Bytes dci_stream(bool is4k, const std::function<void(StreamSpec &)> &tweak = nullptr)
{
    StreamSpec s;
    const uint32_t w = is4k ? 4096 : 2048, h = is4k ? 1716 : 858;
    s.siz = make_siz(w, h, 3);
    s.siz.rsiz = is4k ? 4 : 3;
    for (auto &c : s.siz.components) c.precision = 12;
    const int nl = is4k ? 6 : 5;
    s.cod.progression = 4;
    s.cod.mct = 1;
    s.cod.component.levels = static_cast<uint8_t>(nl);
    s.cod.component.cblk_width_log2 = s.cod.component.cblk_height_log2 = 5;
    s.cod.component.wavelet = Wavelet::kIrreversible97;
    s.cod.component.precincts_defined = true;
    for (int r = 0; r <= nl; ++r)
        s.cod.component.precinct_width_log2[r] = s.cod.component.precinct_height_log2[r] = r ? 8 : 7;
    s.qcd.style = Quantization::kScalarExpounded;
    s.qcd.guard_bits = is4k ? 2 : 1;
    s.qcd.steps.assign(3 * nl + 1, QuantStep{13, 1000});
    const int parts = is4k ? 6 : 3;
    s.parts.clear();
    for (int p = 0; p < parts; ++p)
        s.parts.push_back({0, static_cast<uint8_t>(p), static_cast<uint8_t>(parts), nullptr, Bytes(100 + p, 0x5A), -1});
    if (tweak) tweak(s);
    // TLM needs the final lengths: write once, read them, write again.
    std::vector<TilePartLength> tlm;
    for (int pass = 0; pass < 2; ++pass) {
        StreamSpec t = s;
        const HeaderFn extra = s.main_extra;
        t.main_extra = [&](ByteWriter &w) {
            write_tlm(w, tlm.empty() ? std::vector<TilePartLength>(s.parts.size(), {0, 0}) : tlm, 1, 1);
            if (is4k)
                write_poc(w,
                          {{0, 0, 1, static_cast<uint8_t>(nl), 3, 4},
                           {static_cast<uint8_t>(nl), 0, 1, static_cast<uint8_t>(nl + 1), 3, 4}},
                          3);
            if (extra) extra(w);
        };
        const Bytes b = build(t);
        if (pass == 1) return b;
        const Codestream cs = parse(b);
        for (const auto &tp : cs.tile_parts) tlm.push_back({tp.tile, tp.psot});
    }
    return {};
}

std::vector<std::string> violations(const Bytes &b, double fps = 0)
{
    const Codestream cs = parse(b);
    return check_profile(cs, b.data(), b.size(), fps);
}

bool mentions(const std::vector<std::string> &v, const std::string &needle)
{
    for (const auto &s : v)
        if (s.find(needle) != std::string::npos) return true;
    return false;
}

TEST(ProfileCheck, CompliantDciStreamsPass)
{
    for (bool is4k : {false, true}) {
        const Bytes b = dci_stream(is4k);
        const auto v = violations(b, 24);
        EXPECT_TRUE(v.empty()) << (v.empty() ? "" : v[0]);
        // The raw walk sees exactly the markers libdcp knows.
        for (const auto &m : list_marker_segments(b.data(), b.size())) {
            EXPECT_TRUE(m.marker == kSOC || m.marker == kSIZ || m.marker == kCOD || m.marker == kQCD ||
                        m.marker == kTLM || m.marker == kPOC || m.marker == kSOT || m.marker == kSOD ||
                        m.marker == kEOC)
                << marker_name(m.marker);
        }
    }
}

TEST(ProfileCheck, DciViolationsAreReported)
{
    EXPECT_TRUE(mentions(violations(dci_stream(false, [](StreamSpec &s) { s.qcd.guard_bits = 2; })), "guard bits"));
    EXPECT_TRUE(mentions(violations(dci_stream(false,
                                               [](StreamSpec &s) {
                                                   s.cod.component.levels = 4;
                                                   s.qcd.steps.resize(13);
                                               })),
                         "levels"));
    EXPECT_TRUE(mentions(violations(dci_stream(false, [](StreamSpec &s) { s.cod.progression = 0; })), "CPRL"));
    EXPECT_TRUE(mentions(violations(dci_stream(false, [](StreamSpec &s) { s.cod.layers = 2; })), "layers"));
    EXPECT_TRUE(mentions(violations(dci_stream(false, [](StreamSpec &s) { s.cod.component.cblk_width_log2 = 6; })),
                         "code-block"));
    EXPECT_TRUE(mentions(
        violations(dci_stream(false, [](StreamSpec &s) { s.cod.component.precinct_width_log2[2] = 7; })), "precinct"));
    EXPECT_TRUE(mentions(violations(dci_stream(false, [](StreamSpec &s) { s.cod.sop = true; })), "Scod"));
    EXPECT_TRUE(
        mentions(violations(dci_stream(false, [](StreamSpec &s) { s.siz.components[1].precision = 10; })), "12-bit"));
    EXPECT_TRUE(mentions(violations(dci_stream(false, [](StreamSpec &s) { s.siz.rsiz = 4; })), "Rsiz"));
    EXPECT_TRUE(mentions(violations(dci_stream(false,
                                               [](StreamSpec &s) {
                                                   s.siz.tile_width = 1024;
                                                   for (auto &p : s.parts) p.tile = 0;
                                               })),
                         "tile"));
    EXPECT_TRUE(mentions(violations(dci_stream(false,
                                               [](StreamSpec &s) {
                                                   for (auto &p : s.parts) p.parts = 0;
                                               })),
                         "TNsot"));
    EXPECT_TRUE(
        mentions(violations(dci_stream(
                     false, [](StreamSpec &s) { s.parts[0].header = [](ByteWriter &w) { write_plt(w, {10}); }; })),
                 "PLT"));
    EXPECT_TRUE(mentions(
        violations(dci_stream(false, [](StreamSpec &s) { s.main_extra = [](ByteWriter &w) { write_com(w, ""); }; })),
        "empty COM"));
    EXPECT_TRUE(mentions(
        violations(dci_stream(
            false, [](StreamSpec &s) { s.main_extra = [](ByteWriter &w) {
                                           write_poc(w, {{0, 0, 1, 6, 3, 4}}, 3);
                                       }; })),
        "POC"));
    EXPECT_TRUE(mentions(violations(dci_stream(true,
                                               [](StreamSpec &s) {
                                                   s.parts[0].header = [](ByteWriter &w) {
                                                       write_poc(w, {{0, 0, 1, 6, 3, 4}}, 3);
                                                   };
                                               })),
                         "POC"));
    EXPECT_TRUE(
        mentions(violations(dci_stream(
                     false, [](StreamSpec &s) { s.parts[0].header = [&](ByteWriter &w) { write_cod(w, s.cod); }; })),
                 "COD"));
    // Byte caps at 24 fps: tile-parts <= 1,041,666 bytes.
    EXPECT_TRUE(mentions(
        violations(dci_stream(false, [](StreamSpec &s) { s.parts[1].data.assign(1041700, 0x11); }), 24), "cap"));
    EXPECT_FALSE(mentions(
        violations(dci_stream(false, [](StreamSpec &s) { s.parts[1].data.assign(1041600, 0x11); }), 24), "cap"));
    // 4K: a component's two tile-parts together within the component cap
    // (each alone is below it), at 24 and at 48 fps (halved).
    auto split = [](size_t low, size_t top) {
        return [=](StreamSpec &s) {
            s.parts[1].data.assign(low, 0x11);
            s.parts[4].data.assign(top, 0x22);
        };
    };
    EXPECT_TRUE(mentions(violations(dci_stream(true, split(600000, 450000)), 24), "component 1's tile-parts"));
    EXPECT_FALSE(mentions(violations(dci_stream(true, split(600000, 440000)), 24), "cap"));
    EXPECT_TRUE(mentions(violations(dci_stream(true, split(300000, 230000)), 48), "component 1's tile-parts"));
    EXPECT_FALSE(mentions(violations(dci_stream(true, split(300000, 220000)), 48), "component 1's"));
    EXPECT_TRUE(mentions(violations(dci_stream(true,
                                               [&](StreamSpec &s) {
                                                   split(300000, 220000)(s);
                                                   s.parts[0].data.assign(140000, 0x33);
                                               }),
                                    48),
                         "codestream is"));  // > 651,041
    // 4K: TLM disagreeing with Psot, a POC with other bounds (tile-parts out of
    // order are the parser's INVALID_DATA already).
    {
        Bytes b = dci_stream(true);
        const auto segs = list_marker_segments(b.data(), b.size());
        for (const auto &m : segs)
            if (m.marker == kTLM) b[m.offset + 8] ^= 1;  // after FF55, Ltlm, Ztlm, Stlm, Ttlm: Ptlm's second byte
        EXPECT_TRUE(mentions(violations(b), "TLM gives"));
    }
    EXPECT_TRUE(mentions(violations(dci_stream(true,
                                               [](StreamSpec &s) {
                                                   s.cod.component.levels = 5;
                                                   s.qcd.steps.resize(16);
                                               })),
                         "POC bytes"));
    // The TLM check: drop it by rewriting Rsiz-3 stream without TLM.
    StreamSpec s;
    s.siz = make_siz(2048, 1080, 3);
    s.siz.rsiz = 3;
    const Bytes b = build(s);
    const auto v = violations(b);
    EXPECT_TRUE(mentions(v, "TLM"));
    EXPECT_TRUE(mentions(v, "MCT"));
    EXPECT_TRUE(mentions(v, "TNsot"));
}

TEST(ProfileCheck, ImfRules)
{
    StreamSpec s;
    s.siz = make_siz(1920, 1080, 3);
    s.siz.rsiz = 0x0400 | 0x10 | 0x3;  // 2K lossy, main level 3, sub-level 1
    for (auto &c : s.siz.components) c.precision = 10;
    s.cod.progression = 4;
    s.cod.component.levels = 5;
    s.cod.component.cblk_width_log2 = s.cod.component.cblk_height_log2 = 5;
    s.cod.component.wavelet = Wavelet::kIrreversible97;
    s.cod.component.precincts_defined = true;
    for (int r = 0; r <= 5; ++r)
        s.cod.component.precinct_width_log2[r] = s.cod.component.precinct_height_log2[r] = r ? 8 : 7;
    s.qcd.style = Quantization::kScalarExpounded;
    s.qcd.steps.assign(16, QuantStep{10, 5});
    s.parts = {{0, 0, 3, nullptr, {1}, -1}, {0, 1, 3, nullptr, {2}, -1}, {0, 2, 3, nullptr, {3}, -1}};
    s.main_extra = [](ByteWriter &w) { write_tlm(w, {{0, 15}, {0, 15}, {0, 15}}); };
    auto v = violations(build(s));
    EXPECT_TRUE(v.empty()) << v[0];
    StreamSpec bad = s;
    bad.cod.component.wavelet = Wavelet::kReversible53;
    bad.cod.component.levels = 6;
    bad.qcd.steps.resize(19);
    bad.siz.rsiz = 0x0400 | 0x20 | 0x3;  // sub-level 2 > max(3 - 2, 1)
    v = violations(build(bad));
    EXPECT_TRUE(mentions(v, "5/3"));
    EXPECT_TRUE(mentions(v, "levels"));
    EXPECT_TRUE(mentions(v, "sub-level"));
    // Reversible 4K with 1024 tiles is allowed; 512 tiles are not.
    StreamSpec r = s;
    r.siz = make_siz(4096, 2160, 3, 1024, 1024);
    r.siz.rsiz = 0x0800;
    r.cod.component.wavelet = Wavelet::kReversible53;
    r.cod.component.levels = 4;
    r.qcd = reversible_quant(4);
    v = violations(build(r));
    EXPECT_FALSE(mentions(v, "tiles"));
    EXPECT_FALSE(mentions(v, "levels"));
    r.siz = make_siz(4096, 2160, 3, 512, 512);
    r.siz.rsiz = 0x0800;
    EXPECT_TRUE(mentions(violations(build(r)), "tiles"));
}

TEST(Dump, NamesTheFields)
{
    const StreamSpec s = busy_stream();
    const Codestream cs = parse(build(s));
    const std::string d = dump_codestream(cs);
    for (const char *needle :
         {"SIZ", "Csiz 3", "COD", "COC component 2", "QCD", "TLM: 3", "COM: \"busy\"", "tile 0: 2 tile-parts",
          "tile 1: 1 tile-part", "packed header bytes", "packet lengths", "EOC: present"})
        EXPECT_NE(d.find(needle), std::string::npos) << needle << "\n" << d;
}

}  // namespace
}  // namespace j2kc
