// JP2 file format (Annex I): wrap/parse round trips, palettes, component
// mapping and channel definitions, box length forms, hostile boxes, and the
// JP2 files opj_compress wrote (tests/data/cs_*.jp2).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "codestream/jp2.h"
#include "codestream/reader.h"
#include "codestream/writer.h"
#include "common/byte_io.h"
#include "common/status.h"

namespace j2kc {
namespace {

using Bytes = std::vector<uint8_t>;

int status_of(const std::function<void()> &f)
{
    try {
        f();
    } catch (const Error &e) {
        return e.status();
    }
    return J2KC_OK;
}

int jp2_status(const Bytes &b)
{
    return status_of([&] { parse_jp2(b.data(), b.size()); });
}

uint32_t fourcc(const char *s)
{
    return uint32_t(uint8_t(s[0])) << 24 | uint32_t(uint8_t(s[1])) << 16 | uint32_t(uint8_t(s[2])) << 8 | uint8_t(s[3]);
}

Bytes box(const char *type, const Bytes &content)
{
    ByteWriter w;
    w.u32(static_cast<uint32_t>(content.size() + 8));
    w.u32(fourcc(type));
    w.bytes(content);
    return w.buffer();
}

Bytes cat(std::initializer_list<Bytes> parts)
{
    Bytes out;
    for (const Bytes &p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

const Bytes kSignature = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};
const Bytes kFtyp = box("ftyp", {'j', 'p', '2', ' ', 0, 0, 0, 0, 'j', 'p', '2', ' '});

Bytes ihdr(uint32_t w, uint32_t h, uint16_t nc, uint8_t bpc)
{
    ByteWriter b;
    b.u32(h);
    b.u32(w);
    b.u16(nc);
    b.u8(bpc);
    b.u8(7);
    b.u8(0);
    b.u8(0);
    return box("ihdr", b.buffer());
}

Bytes colr_enum(uint32_t cs)
{
    ByteWriter b;
    b.u8(1);
    b.u8(0);
    b.u8(0);
    b.u32(cs);
    return box("colr", b.buffer());
}

ImageSize make_siz(uint32_t w, uint32_t h, size_t comps)
{
    ImageSize s;
    s.width = w;
    s.height = h;
    s.tile_width = w;
    s.tile_height = h;
    s.components.assign(comps, ComponentSize{});
    return s;
}

/** A valid little codestream for the given geometry (fake packet data). */
Bytes codestream_for(const ImageSize &siz)
{
    ByteWriter w;
    write_soc(w);
    write_siz(w, siz);
    CodingStyle cod;
    cod.component.levels = 1;
    write_cod(w, cod);
    Quantization q;
    q.steps.assign(4, QuantStep{8, 0});
    write_qcd(w, q);
    const size_t at = write_sot(w, 0, 0, 1);
    write_sod(w);
    w.bytes({1, 2, 3});
    patch_sot_psot(w, at, static_cast<uint32_t>(w.size() - at));
    write_eoc(w);
    return w.buffer();
}

Bytes load(const std::string &name)
{
    const char *dir = std::getenv("J2KC_TEST_DATA");
    if (!dir) return {};
    std::ifstream f(std::string(dir) + "/" + name, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(Jp2, WrapParseRoundTrip)
{
    struct Case {
        j2kc_color_space colour;
        size_t comps;
        bool mixed_depths;
        uint32_t enumcs;
        bool alpha;
    };
    const Case cases[] = {{J2KC_COLOR_SRGB, 3, false, 16, false},  {J2KC_COLOR_GRAY, 1, false, 17, false},
                          {J2KC_COLOR_SYCC, 3, true, 18, false},   {J2KC_COLOR_GRAY, 2, false, 17, true},
                          {J2KC_COLOR_SRGB, 4, true, 16, true},    {J2KC_COLOR_UNKNOWN, 5, true, 16, false},
                          {J2KC_COLOR_UNKNOWN, 2, false, 17, true}};
    for (const Case &c : cases) {
        ImageSize siz = make_siz(41, 27, c.comps);
        siz.x0 = 3;
        siz.y0 = 5;
        siz.tile_width = 41;
        siz.tile_height = 27;
        for (size_t k = 0; k < c.comps; ++k) {
            siz.components[k].precision = static_cast<uint8_t>(c.mixed_depths ? 4 + k : 10);
            siz.components[k].is_signed = c.mixed_depths && k == 1;
        }
        const Bytes cs = codestream_for(siz);
        const Bytes file = wrap_jp2(cs, siz, c.colour);
        ASSERT_TRUE(is_jp2(file.data(), file.size()));
        EXPECT_FALSE(is_jp2(cs.data(), cs.size()));
        const Jp2File f = parse_jp2(file.data(), file.size());
        ASSERT_EQ(f.codestream_size, cs.size());
        EXPECT_TRUE(std::equal(cs.begin(), cs.end(), f.codestream));
        EXPECT_EQ(f.codestream, file.data() + f.codestream_offset);
        EXPECT_EQ(f.width, 38u);
        EXPECT_EQ(f.height, 22u);
        EXPECT_EQ(f.num_components, c.comps);
        EXPECT_EQ(f.brand, jp2_box::kBrandJp2);
        EXPECT_EQ(f.bpc == 0xFF, c.mixed_depths);
        for (size_t k = 0; k < c.comps; ++k) {
            EXPECT_EQ(f.component_precision(static_cast<uint16_t>(k)), siz.components[k].precision);
            EXPECT_EQ(f.component_signed(static_cast<uint16_t>(k)), siz.components[k].is_signed);
        }
        ASSERT_EQ(f.colours.size(), 1u);
        ASSERT_EQ(f.colour(), &f.colours[0]);
        EXPECT_EQ(f.colours[0].method, 1);
        EXPECT_EQ(f.colours[0].enumerated, c.enumcs);
        const bool known = c.colour == J2KC_COLOR_SRGB || c.colour == J2KC_COLOR_GRAY || c.colour == J2KC_COLOR_SYCC;
        EXPECT_EQ(f.colourspace_unknown, !known);
        EXPECT_EQ(f.color_space, known ? c.colour : jp2_enumerated_space(c.enumcs));
        EXPECT_EQ(f.channel_definitions.empty(), !c.alpha);
        EXPECT_TRUE(f.warnings.empty()) << f.warnings[0];
        const auto ch = jp2_channels(f, static_cast<uint32_t>(c.comps));
        ASSERT_EQ(ch.size(), c.comps);
        if (c.alpha) {
            EXPECT_EQ(ch.back().type, 1);
            EXPECT_EQ(ch.back().component, c.comps - 1);
        }
        EXPECT_EQ(ch[0].type, 0);
        EXPECT_EQ(ch[0].association, 1);
        // The codestream inside parses, and agrees with ihdr.
        const Codestream parsed = parse_codestream(f.codestream, f.codestream_size);
        EXPECT_EQ(parsed.siz.width - parsed.siz.x0, f.width);
        EXPECT_EQ(parsed.siz.components.size(), f.num_components);
    }
    // JP2 enumerates three spaces: the others need an ICC profile.
    const ImageSize siz = make_siz(8, 8, 3);
    for (j2kc_color_space s : {J2KC_COLOR_XYZ, J2KC_COLOR_ESYCC, J2KC_COLOR_CMYK})
        EXPECT_EQ(status_of([&] { wrap_jp2(codestream_for(siz), siz, s); }), J2KC_ERR_INVALID_ARG) << s;
}

/** An ICC header (ICC.1 7.2) of `size` bytes and no tags, for the container. */
Bytes icc_bytes(size_t size, const char *space = "RGB ")
{
    Bytes p(size, 0);
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(size >> (24 - 8 * i));
    std::copy(space, space + 4, p.begin() + 16);
    std::copy("acsp", "acsp" + 4, p.begin() + 36);
    return p;
}

TEST(Jp2, IccProfileIsWrittenAndPointedAt)
{
    const ImageSize siz = make_siz(12, 10, 3);
    const Bytes cs = codestream_for(siz);
    const Bytes icc = icc_bytes(200);
    const Bytes file = wrap_jp2(cs, siz, J2KC_COLOR_UNKNOWN, icc);
    const Jp2File f = parse_jp2(file.data(), file.size());
    ASSERT_NE(f.colour(), nullptr);
    EXPECT_EQ(f.colour()->method, 2);
    EXPECT_EQ(f.colour()->icc_size, icc.size());
    EXPECT_GE(f.colour()->icc, file.data());
    EXPECT_TRUE(std::equal(icc.begin(), icc.end(), f.colour()->icc));
    EXPECT_FALSE(f.colourspace_unknown);
    EXPECT_EQ(f.color_space, J2KC_COLOR_UNKNOWN);
    EXPECT_TRUE(f.warnings.empty());
    std::string why;
    EXPECT_TRUE(icc_profile_plausible(icc.data(), icc.size(), &why));
    EXPECT_FALSE(icc_profile_plausible(icc.data(), 131, &why));
    EXPECT_FALSE(icc_profile_plausible(icc.data(), 199, &why)) << "declares more than there is";
    EXPECT_TRUE(icc_profile_plausible(icc_bytes(132).data(), 132, &why));
    EXPECT_FALSE(icc_profile_plausible(nullptr, 0, &why));
    EXPECT_EQ(status_of([&] { wrap_jp2(cs, make_siz(12, 10, 1), J2KC_COLOR_UNKNOWN, icc); }), J2KC_ERR_INVALID_ARG);
    EXPECT_EQ(status_of([&] { wrap_jp2(cs, make_siz(12, 10, 1), J2KC_COLOR_UNKNOWN, icc_bytes(140, "GRAY")); }),
              J2KC_OK);
}

Bytes palette_file(const std::function<void(Bytes &pclr, Bytes &cmap, Bytes &cdef)> &tweak = nullptr)
{
    // pclr: 3 entries, columns 8u, 12s, 1u, 38u.
    ByteWriter p;
    p.u16(3);
    p.u8(4);
    p.u8(7);
    p.u8(0x80 | 11);
    p.u8(0);
    p.u8(37);
    const uint64_t big = (1ull << 38) - 1;
    const uint16_t s12[3] = {0xFFF, 0x800, 0x7FF};
    for (int e = 0; e < 3; ++e) {
        p.u8(static_cast<uint8_t>(10 * e + 1));
        p.u16(s12[e]);
        p.u8(static_cast<uint8_t>(e & 1));
        p.uint_n(big - e, 5);
    }
    Bytes pclr = p.buffer();
    // cmap: four channels from component 0 through columns 2, 1, 0, 3.
    Bytes cmap = {0, 0, 1, 2, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 3};
    // cdef: channel 0 is blue, 1 green, 2 red, 3 opacity.
    Bytes cdef = {0, 4, 0, 0, 0, 0, 0, 3, 0, 1, 0, 0, 0, 2, 0, 2, 0, 0, 0, 1, 0, 3, 0, 1, 0, 0};
    if (tweak) tweak(pclr, cmap, cdef);
    ByteWriter res;
    res.u16(72);
    res.u16(1);
    res.u16(300);
    res.u16(3);
    res.u8(0xFE);
    res.u8(2);
    const Bytes resc = box("resc", res.buffer());
    const Bytes resd = box("resd", res.buffer());
    const Bytes jp2h = box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(16), box("pclr", pclr), box("cmap", cmap),
                                        box("cdef", cdef), box("res ", cat({resc, resd}))}));
    const Bytes cs = codestream_for(make_siz(9, 7, 1));
    return cat({kSignature, kFtyp, jp2h, box("jp2c", cs)});
}

TEST(Jp2, PaletteMappingChannelDefinitionsResolution)
{
    const Bytes file = palette_file();
    const Jp2File f = parse_jp2(file.data(), file.size());
    ASSERT_TRUE(f.palette);
    const Jp2Palette &p = *f.palette;
    EXPECT_EQ(p.num_entries, 3);
    ASSERT_EQ(p.columns.size(), 4u);
    EXPECT_EQ(p.columns[1].precision, 12);
    EXPECT_TRUE(p.columns[1].is_signed);
    EXPECT_EQ(p.columns[3].precision, 38);
    EXPECT_EQ(p.value(2, 0), 21);
    EXPECT_EQ(p.value(0, 1), -1);
    EXPECT_EQ(p.value(1, 1), -2048);
    EXPECT_EQ(p.value(2, 1), 2047);
    EXPECT_EQ(p.value(1, 2), 1);
    EXPECT_EQ(p.value(2, 3), static_cast<int64_t>((1ull << 38) - 3));
    ASSERT_EQ(f.component_mapping.size(), 4u);
    EXPECT_EQ(f.component_mapping[0].column, 2);
    ASSERT_EQ(f.channel_definitions.size(), 4u);
    ASSERT_TRUE(f.capture_resolution);
    EXPECT_EQ(f.capture_resolution->v_num, 72);
    EXPECT_EQ(f.capture_resolution->h_den, 3);
    EXPECT_EQ(f.capture_resolution->v_exp, -2);
    ASSERT_TRUE(f.display_resolution);
    EXPECT_EQ(f.display_resolution->h_exp, 2);

    // Output order: red (channel 2, column 0), green (1, column 1), blue (0, column 2), alpha.
    const auto ch = jp2_channels(f, 1);
    ASSERT_EQ(ch.size(), 4u);
    EXPECT_EQ(ch[0].channel, 2);
    EXPECT_EQ(ch[1].channel, 1);
    EXPECT_EQ(ch[2].channel, 0);
    EXPECT_EQ(ch[3].channel, 3);
    EXPECT_EQ(ch[0].palette_column, 0);
    EXPECT_EQ(ch[0].association, 1);
    EXPECT_EQ(ch[1].palette_column, 1);
    EXPECT_EQ(ch[2].palette_column, 2);
    EXPECT_EQ(ch[3].palette_column, 3);
    EXPECT_EQ(ch[3].type, 1);
    for (const auto &c : ch) EXPECT_EQ(c.component, 0);
    EXPECT_EQ(status_of([&] { jp2_channels(f, 0); }), J2KC_ERR_INVALID_DATA);
}

TEST(Jp2, MalformedResolutionBoxIsDropped)
{
    // A resc that claims more bytes than its res box holds (seen in the
    // wild): the resolution is informative, so the image still decodes.
    ByteWriter w;
    w.u32(34);
    w.u32(fourcc("resc"));
    for (int i = 0; i < 10; ++i) w.u8(1);
    const Bytes jp2h = box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17), box("res ", w.buffer())}));
    const Bytes file = cat({kSignature, kFtyp, jp2h, box("jp2c", codestream_for(make_siz(9, 7, 1)))});
    const Jp2File f = parse_jp2(file.data(), file.size());
    EXPECT_FALSE(f.capture_resolution);
    EXPECT_FALSE(f.display_resolution);
    ASSERT_FALSE(f.warnings.empty());
    EXPECT_NE(f.warnings.back().find("res box ignored"), std::string::npos) << f.warnings.back();
    EXPECT_EQ(f.num_components, 1);
}

TEST(Jp2, BadPaletteMappingDefinitions)
{
    const int D = J2KC_ERR_INVALID_DATA;
    auto st = [](const std::function<void(Bytes &, Bytes &, Bytes &)> &t) { return jp2_status(palette_file(t)); };
    EXPECT_EQ(st(nullptr), J2KC_OK);
    EXPECT_EQ(st([](Bytes &p, Bytes &, Bytes &) {
                  p[0] = 0;
                  p[1] = 0;
              }),
              D);  // NE 0
    EXPECT_EQ(st([](Bytes &p, Bytes &, Bytes &) {
                  p[0] = 4;
                  p[1] = 1;
              }),
              D);                                                        // NE 1025
    EXPECT_EQ(st([](Bytes &p, Bytes &, Bytes &) { p.pop_back(); }), D);  // short table
    EXPECT_EQ(st([](Bytes &p, Bytes &, Bytes &) { p[3] = 38; }), D);     // 39-bit column
    EXPECT_EQ(st([](Bytes &, Bytes &m, Bytes &) { m[1] = 1; }), D);      // component 1 of 1
    EXPECT_EQ(st([](Bytes &, Bytes &m, Bytes &) { m[3] = 4; }), D);      // column 4 of 4
    EXPECT_EQ(st([](Bytes &, Bytes &m, Bytes &) { m[2] = 2; }), D);      // mapping type 2
    EXPECT_EQ(st([](Bytes &, Bytes &m, Bytes &) { m.pop_back(); }), D);  // not 4-byte entries
    // Palette without mapping, mapping without palette.
    const Bytes cs = codestream_for(make_siz(9, 7, 1));
    const Bytes pclr = {0, 1, 1, 7, 42};
    EXPECT_EQ(jp2_status(cat({kSignature, kFtyp, box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(16), box("pclr", pclr)})),
                              box("jp2c", cs)})),
              D);
    EXPECT_EQ(jp2_status(cat({kSignature, kFtyp,
                              box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(16), box("cmap", {0, 0, 0, 0})})),
                              box("jp2c", cs)})),
              D);
}

TEST(Jp2, MalformedChannelDefinitionsAreDropped)
{
    // A cdef naming a channel twice or one cmap does not make, of a reserved
    // type or with a wrong count: the file parses without it (a warning), and
    // the channels keep cmap's order.
    const std::pair<const char *, std::function<void(Bytes &, Bytes &, Bytes &)>> cases[] = {
        {"channel 0 twice", [](Bytes &, Bytes &, Bytes &d) { d[9] = 0; }},
        {"channel 4 of 4", [](Bytes &, Bytes &, Bytes &d) { d[3] = 4; }},
        {"type 3", [](Bytes &, Bytes &, Bytes &d) { d[5] = 3; }},
        {"N 5", [](Bytes &, Bytes &, Bytes &d) { d[1] = 5; }},
    };
    for (const auto &c : cases) {
        const Bytes file = palette_file(c.second);
        const Jp2File f = parse_jp2(file.data(), file.size());
        EXPECT_TRUE(f.channel_definitions.empty()) << c.first;
        EXPECT_NE(f.channel_definitions_ignored.find(c.first), std::string::npos) << f.channel_definitions_ignored;
        ASSERT_EQ(f.warnings.size(), 1u) << c.first;
        EXPECT_EQ(f.warnings[0].rfind("cdef ignored (", 0), 0u) << f.warnings[0];
        const auto ch = jp2_channels(f, 1);
        ASSERT_EQ(ch.size(), 4u);
        for (uint16_t i = 0; i < 4; ++i) EXPECT_EQ(ch[i].channel, i) << c.first;
        EXPECT_EQ(ch[0].palette_column, 2);
    }
    const Bytes good = palette_file();
    EXPECT_TRUE(parse_jp2(good.data(), good.size()).channel_definitions_ignored.empty());
}

/** A host plane of the given format for the palette step. */
struct Plane {
    std::vector<uint8_t> bytes;
    j2kc_component c{};
    Plane(uint32_t w, uint32_t h, uint8_t bps, uint8_t shift, uint32_t pad, bool is_signed)
    {
        c.width = w;
        c.height = h;
        c.bytes_per_sample = bps;
        c.shift = shift;
        c.sample_stride = bps + pad;
        c.row_stride = static_cast<ptrdiff_t>(c.sample_stride) * w + 3;
        c.is_signed = is_signed;
        c.dx = c.dy = 1;
        bytes.assign(size_t(c.row_stride) * h + 8, 0xA5);
        c.data = reinterpret_cast<uintptr_t>(bytes.data());
    }
    uint64_t raw(uint32_t x, uint32_t y) const
    {
        const uint8_t *at = bytes.data() + y * c.row_stride + x * c.sample_stride;
        uint64_t v = 0;
        for (unsigned i = 0; i < c.bytes_per_sample; ++i) v |= uint64_t{at[i]} << (8 * i);
        return v;
    }
    void set(uint32_t x, uint32_t y, uint64_t v)
    {
        uint8_t *at = bytes.data() + y * c.row_stride + x * c.sample_stride;
        for (unsigned i = 0; i < c.bytes_per_sample; ++i) at[i] = uint8_t(v >> (8 * i));
    }
};

// I.5.3.4/I.5.3.5: a palette with 8-bit, signed 12-bit and 20-bit columns;
// cmap maps component 0 through three columns (in a shuffled order) and
// component 1 directly. Random indices, including out-of-range ones.
TEST(Jp2Palette, AppliesColumnsDirectChannelsAndClamps)
{
    std::mt19937 rng(77);
    const uint16_t ne = 37;
    ByteWriter pw;
    pw.u16(ne);
    pw.u8(3);
    pw.u8(7);
    pw.u8(0x80 | 11);
    pw.u8(19);
    std::vector<std::array<int64_t, 3>> table(ne);
    for (uint16_t e = 0; e < ne; ++e) {
        table[e] = {int64_t(rng() % 256), int64_t(rng() % 4096) - 2048, int64_t(rng() % (1 << 20))};
        pw.u8(uint8_t(table[e][0]));
        pw.u16(uint16_t(table[e][1] & 0xFFF));
        pw.u8(uint8_t(table[e][2] >> 16));
        pw.u16(uint16_t(table[e][2]));
    }
    const Bytes cmap = {0, 0, 1, 2, 0, 1, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0};
    ImageSize siz = make_siz(13, 6, 2);
    siz.components[0].precision = 6;  // indices 0..63: past the 37 entries too
    siz.components[1].precision = 10;
    siz.components[1].is_signed = true;
    const Bytes cs = codestream_for(siz);
    const Bytes file = cat({kSignature, kFtyp,
                            box("jp2h", cat({ihdr(13, 6, 2, 0xFF), box("bpcc", {5, 0x89}), colr_enum(16),
                                             box("pclr", pw.buffer()), box("cmap", cmap)})),
                            box("jp2c", cs)});
    const Jp2File f = parse_jp2(file.data(), file.size());
    const std::vector<Jp2PaletteOutput> outs = jp2_palette_outputs(f, siz);
    ASSERT_EQ(outs.size(), 4u);
    EXPECT_EQ(outs[0].palette_column, 2);
    EXPECT_EQ(outs[0].precision, 20);
    EXPECT_EQ(outs[1].palette_column, -1);
    EXPECT_EQ(outs[1].component, 1);
    EXPECT_EQ(outs[1].precision, 10);
    EXPECT_TRUE(outs[1].is_signed);
    EXPECT_EQ(outs[2].palette_column, 1);
    EXPECT_TRUE(outs[2].is_signed);
    EXPECT_EQ(outs[2].precision, 12);
    EXPECT_EQ(outs[3].palette_column, 0);
    EXPECT_FALSE(outs[3].is_signed);

    // Decoded planes as a decoder writes them: 16-bit indices, 32-bit signed samples.
    Plane idx(13, 6, 2, 0, 2, false), direct(13, 6, 4, 0, 0, true);
    std::vector<int64_t> iv(13 * 6), dv(13 * 6);
    for (uint32_t y = 0; y < 6; ++y)
        for (uint32_t x = 0; x < 13; ++x) {
            iv[y * 13 + x] = rng() % 64;
            dv[y * 13 + x] = int64_t(rng() % 1024) - 512;
            idx.set(x, y, uint64_t(iv[y * 13 + x]));
            direct.set(x, y, uint64_t(uint32_t(int32_t(dv[y * 13 + x]))));
        }
    j2kc_component dec_c[2] = {idx.c, direct.c};
    j2kc_image decoded{sizeof(j2kc_image), J2KC_MEMORY_HOST, 13, 6, 2, dec_c};
    Plane o0(13, 6, 4, 0, 0, false), o1(13, 6, 2, 0, 0, true), o2(13, 6, 2, 4, 0, true), o3(13, 6, 1, 0, 1, false);
    j2kc_component out_c[4] = {o0.c, o1.c, o2.c, o3.c};
    j2kc_image out{sizeof(j2kc_image), J2KC_MEMORY_HOST, 13, 6, 4, out_c};
    jp2_apply_palette(f, outs, decoded, out);
    for (uint32_t y = 0; y < 6; ++y)
        for (uint32_t x = 0; x < 13; ++x) {
            const int64_t e = std::min<int64_t>(iv[y * 13 + x], ne - 1);
            ASSERT_EQ(o0.raw(x, y), uint64_t(table[e][2])) << x << "," << y;
            ASSERT_EQ(int16_t(o1.raw(x, y)), dv[y * 13 + x]);
            ASSERT_EQ(int16_t(o2.raw(x, y)) >> 4, table[e][1]);  // shifted, sign kept
            ASSERT_EQ(o3.raw(x, y), uint64_t(table[e][0]));
            EXPECT_EQ(jp2_palette_lookup(*f.palette, 1, iv[y * 13 + x]), table[e][1]);
        }
    EXPECT_EQ(o3.bytes[1], 0xA5) << "padding between samples was written";
    EXPECT_EQ(jp2_palette_lookup(*f.palette, 0, -5), table[0][0]);
    EXPECT_EQ(jp2_palette_lookup(*f.palette, 0, 1 << 30), table[ne - 1][0]);

    // Mismatched planes are argument errors, never out-of-bounds access.
    const int A = J2KC_ERR_INVALID_ARG;
    j2kc_image bad = out;
    bad.num_components = 3;
    EXPECT_EQ(status_of([&] { jp2_apply_palette(f, outs, decoded, bad); }), A);
    j2kc_component small[4] = {o0.c, o1.c, o2.c, o3.c};
    small[2].width = 12;
    bad = out;
    bad.components = small;
    EXPECT_EQ(status_of([&] { jp2_apply_palette(f, outs, decoded, bad); }), A);
    j2kc_image one = decoded;
    one.num_components = 1;
    EXPECT_EQ(status_of([&] { jp2_apply_palette(f, outs, one, out); }), A);
    // No palette: no outputs; a cmap naming a component the codestream lacks.
    const Bytes plain = cat({kSignature, kFtyp, box("jp2h", cat({ihdr(13, 6, 2, 7), colr_enum(17)})), box("jp2c", cs)});
    EXPECT_TRUE(jp2_palette_outputs(parse_jp2(plain.data(), plain.size()), siz).empty());
    EXPECT_EQ(status_of([&] { jp2_palette_outputs(f, make_siz(13, 6, 1)); }), J2KC_ERR_INVALID_DATA);
}

Bytes simple_file(const Bytes &jp2c_box)
{
    return cat({kSignature, kFtyp, box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17)})), jp2c_box});
}

TEST(Jp2, CodestreamBoxLengthForms)
{
    const Bytes cs = codestream_for(make_siz(9, 7, 1));
    // XLBox.
    ByteWriter x;
    x.u32(1);
    x.u32(jp2_box::kCodestream);
    x.u32(0);
    x.u32(static_cast<uint32_t>(cs.size() + 16));
    x.bytes(cs);
    Bytes file = simple_file(x.buffer());
    Jp2File f = parse_jp2(file.data(), file.size());
    EXPECT_EQ(f.codestream_size, cs.size());
    EXPECT_TRUE(std::equal(cs.begin(), cs.end(), f.codestream));
    EXPECT_EQ(f.color_space, J2KC_COLOR_GRAY);
    // LBox 0: to the end of the file.
    ByteWriter z;
    z.u32(0);
    z.u32(jp2_box::kCodestream);
    z.bytes(cs);
    file = simple_file(z.buffer());
    f = parse_jp2(file.data(), file.size());
    EXPECT_EQ(f.codestream_size, cs.size());
    // A jp2c longer than the file is clipped (the codestream parser keeps what is there).
    Bytes longer = box("jp2c", cs);
    longer[2] = 0x10;
    file = simple_file(longer);
    f = parse_jp2(file.data(), file.size());
    EXPECT_EQ(f.codestream_size, cs.size());
    EXPECT_FALSE(f.warnings.empty());
    // XLBox below 16, or a 64-bit length past the end of a non-jp2c box.
    x.patch_u32(12, 15);
    file = simple_file(x.buffer());
    EXPECT_EQ(jp2_status(file), J2KC_ERR_INVALID_DATA);
    // Boxes after the first jp2c are not looked at; a box before it is skipped.
    file = cat({kSignature, kFtyp, box("xml ", {'<', 'a', '/', '>'}),
                box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17)})), box("jp2c", cs), Bytes{0, 0, 0, 3}});
    EXPECT_EQ(jp2_status(file), J2KC_OK);
}

TEST(Jp2, MalformedBoxes)
{
    const int D = J2KC_ERR_INVALID_DATA;
    const Bytes cs = codestream_for(make_siz(9, 7, 1));
    const Bytes jp2h = box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17)}));
    const Bytes good = cat({kSignature, kFtyp, jp2h, box("jp2c", cs)});
    EXPECT_EQ(jp2_status(good), J2KC_OK);
    Bytes b = good;
    b[11] = 0x0B;  // signature content
    EXPECT_EQ(jp2_status(b), D);
    EXPECT_FALSE(is_jp2(b.data(), b.size()));
    EXPECT_FALSE(is_jp2(good.data(), 11));
    EXPECT_FALSE(is_jp2(nullptr, 0));
    EXPECT_EQ(jp2_status(cat({kSignature, jp2h, box("jp2c", cs)})), D);         // no ftyp
    EXPECT_EQ(jp2_status(cat({kSignature, kFtyp, box("jp2c", cs)})), D);        // no jp2h
    EXPECT_EQ(jp2_status(cat({kSignature, kFtyp, jp2h})), D);                   // no jp2c
    EXPECT_EQ(jp2_status(cat({kSignature, kFtyp, box("jp2c", cs), jp2h})), D);  // jp2c first
    EXPECT_EQ(jp2_status(cat({kSignature, box("ftyp", {1, 2, 3}), jp2h, box("jp2c", cs)})), D);
    for (uint32_t lbox : {2u, 3u, 7u}) {
        b = good;
        b[kSignature.size() + kFtyp.size() + 3] = static_cast<uint8_t>(lbox);  // jp2h LBox
        EXPECT_EQ(jp2_status(b), D) << lbox;
    }
    b = good;
    b[kSignature.size() + kFtyp.size() + 2] = 0x7F;  // jp2h runs past the end
    EXPECT_EQ(jp2_status(b), D);
    // Children of jp2h: bad ihdr.
    auto with_header = [&](const Bytes &children) {
        return jp2_status(cat({kSignature, kFtyp, box("jp2h", children), box("jp2c", cs)}));
    };
    EXPECT_EQ(with_header({colr_enum(17)}), D);                                         // no ihdr
    EXPECT_EQ(with_header({box("ihdr", {0, 0, 0, 7, 0, 0, 0, 9, 0, 1, 7, 7, 0})}), D);  // 13 bytes
    EXPECT_EQ(with_header(cat({ihdr(9, 7, 0, 7), colr_enum(17)})), D);                  // NC 0
    EXPECT_EQ(with_header(cat({ihdr(0, 7, 1, 7), colr_enum(17)})), D);                  // width 0
    EXPECT_EQ(with_header(cat({ihdr(9, 7, 1, 0xFF), colr_enum(17)})), D);               // no bpcc
    EXPECT_EQ(with_header(cat({ihdr(9, 7, 2, 0xFF), box("bpcc", {7}), colr_enum(17)})), D);
    EXPECT_EQ(with_header(cat({ihdr(9, 7, 2, 0xFF), box("bpcc", {7, 11}), colr_enum(17)})), J2KC_OK);
    // A malformed colour box costs the colour, not the image (I.5.3.3 leaves
    // the image's samples as they are): no later box stands in for it.
    for (const Bytes &colr : {box("colr", {1, 0}), box("colr", {1, 0, 0, 0, 0}), box("colr", {2, 0, 0, 1, 2})}) {
        const Bytes file =
            cat({kSignature, kFtyp, box("jp2h", cat({ihdr(9, 7, 1, 7), colr, colr_enum(17)})), box("jp2c", cs)});
        const Jp2File f = parse_jp2(file.data(), file.size());
        EXPECT_TRUE(f.has_colour_box);
        EXPECT_EQ(f.colour(), nullptr);
        EXPECT_EQ(f.color_space, J2KC_COLOR_UNKNOWN);
        ASSERT_FALSE(f.warnings.empty());
        EXPECT_NE(f.warnings[0].find("unknown"), std::string::npos) << f.warnings[0];
    }
    EXPECT_EQ(with_header(cat({ihdr(9, 7, 1, 7), Bytes{0, 0, 0, 5, 'c', 'o', 'l', 'r'}})), D);  // LBox < 8
    // ICC profile bytes are pointed at; an unknown method is skipped.
    const Bytes icc = icc_bytes(140);
    Bytes icc_colr = {2, 0, 0};
    icc_colr.insert(icc_colr.end(), icc.begin(), icc.end());
    Bytes file =
        cat({kSignature, kFtyp,
             box("jp2h", cat({ihdr(9, 7, 1, 7), box("colr", {9, 0, 0}), box("colr", icc_colr), colr_enum(16)})),
             box("jp2c", cs)});
    const Jp2File f = parse_jp2(file.data(), file.size());
    ASSERT_EQ(f.colours.size(), 2u);
    ASSERT_EQ(f.colour(), &f.colours[0]);
    EXPECT_EQ(Bytes(f.colours[0].icc, f.colours[0].icc + f.colours[0].icc_size), icc);
    EXPECT_EQ(f.color_space, J2KC_COLOR_UNKNOWN);  // the first (ICC) rules
    // CIELab keeps its seven parameters (15444-2 M.11.7.4).
    Bytes lab = {1, 0, 0, 0, 0, 0, 14};
    for (uint8_t i = 1; i <= 7; ++i) lab.insert(lab.end(), {0, 0, 0, i});
    file = cat({kSignature, kFtyp, box("jp2h", cat({ihdr(9, 7, 3, 7), box("colr", lab)})),
                box("jp2c", codestream_for(make_siz(9, 7, 3)))});
    const Jp2File l = parse_jp2(file.data(), file.size());
    ASSERT_NE(l.colour(), nullptr);
    EXPECT_EQ(l.color_space, J2KC_COLOR_CIELAB);
    ASSERT_TRUE(l.colour()->lab_parameters);
    EXPECT_EQ((*l.colour()->lab_parameters)[0], 1u);
    EXPECT_EQ((*l.colour()->lab_parameters)[6], 7u);
}

TEST(Jp2, DeepNestingCostsNoRecursion)
{
    // 200000 boxes nested inside one another inside jp2h: only one level is entered.
    const size_t depth = 200000;
    Bytes nested(8 * depth);
    for (size_t i = 0; i < depth; ++i) {
        const uint32_t len = static_cast<uint32_t>(8 * (depth - i));
        ByteWriter w;
        w.u32(len);
        w.u32(fourcc(i % 2 ? "res " : "jp2h"));
        std::copy(w.buffer().begin(), w.buffer().end(), nested.begin() + 8 * i);
    }
    const Bytes cs = codestream_for(make_siz(9, 7, 1));
    Bytes file = cat({kSignature, kFtyp, box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17), nested})), box("jp2c", cs)});
    EXPECT_EQ(jp2_status(file), J2KC_OK);
    file = cat(
        {kSignature, kFtyp, box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17), box("res ", nested)})), box("jp2c", cs)});
    EXPECT_EQ(jp2_status(file), J2KC_OK);
    // Many top-level boxes before jp2c: a linear walk.
    Bytes many;
    for (int i = 0; i < 100000; ++i) {
        const Bytes f = box("free", {});
        many.insert(many.end(), f.begin(), f.end());
    }
    file = cat({kSignature, kFtyp, many, box("jp2h", cat({ihdr(9, 7, 1, 7), colr_enum(17)})), box("jp2c", cs)});
    EXPECT_EQ(jp2_status(file), J2KC_OK);
}

TEST(Jp2, EveryPrefixAndRandomDamage)
{
    const Bytes file = palette_file();
    const Jp2File full = parse_jp2(file.data(), file.size());
    for (size_t n = 0; n < file.size(); ++n) {
        const Bytes prefix(file.begin(), file.begin() + n);
        const int s = jp2_status(prefix);
        // Only a clipped jp2c still parses; every other cut is invalid.
        if (n >= full.codestream_offset)
            EXPECT_EQ(s, J2KC_OK) << n;
        else
            EXPECT_EQ(s, J2KC_ERR_INVALID_DATA) << n;
    }
    std::mt19937 rng(5);
    int ok = 0, bad = 0;
    for (int iter = 0; iter < 5000; ++iter) {
        Bytes b = file;
        for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<uint8_t>(rng());
        try {
            const Jp2File f = parse_jp2(b.data(), b.size());
            ASSERT_GE(f.codestream, b.data());
            ASSERT_LE(f.codestream + f.codestream_size, b.data() + b.size());
            status_of([&] { jp2_channels(f, 1); });
            ++ok;
        } catch (const Error &e) {
            EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA);
            ++bad;
        }
    }
    EXPECT_GT(ok, 0);
    EXPECT_GT(bad, 0);
}

TEST(Jp2Reference, OpjFiles)
{
    struct Ref {
        const char *name;
        uint32_t width, height;
        uint16_t comps;
        j2kc_color_space colour;
    };
    // opj_compress -i rgb.ppm -o rgb.jp2 -n 2 -r 5; opj_compress -i gray.pgm -o gray.jp2 -n 3
    for (const Ref &r :
         {Ref{"cs_rgb.jp2", 37, 29, 3, J2KC_COLOR_SRGB}, Ref{"cs_gray.jp2", 45, 31, 1, J2KC_COLOR_GRAY}}) {
        const Bytes b = load(r.name);
        if (b.empty()) GTEST_SKIP() << "J2KC_TEST_DATA not set or " << r.name << " missing";
        ASSERT_TRUE(is_jp2(b.data(), b.size()));
        const Jp2File f = parse_jp2(b.data(), b.size());
        EXPECT_EQ(f.width, r.width);
        EXPECT_EQ(f.height, r.height);
        EXPECT_EQ(f.num_components, r.comps);
        EXPECT_EQ(f.color_space, r.colour);
        EXPECT_EQ(f.component_precision(0), 8);
        const Codestream cs = parse_codestream(f.codestream, f.codestream_size);
        EXPECT_EQ(cs.siz.width, r.width);
        EXPECT_EQ(cs.siz.components.size(), r.comps);
        EXPECT_TRUE(cs.has_eoc);
        const auto ch = jp2_channels(f, r.comps);
        ASSERT_EQ(ch.size(), r.comps);
        for (size_t i = 0; i < ch.size(); ++i) EXPECT_EQ(ch[i].component, i);
    }
}

}  // namespace
}  // namespace j2kc
