// JP2 colour through the C API: what j2kc_decoder_parse reports of a file's
// colour specification (I.5.3.3; JPX spaces of 15444-2 M.11.7) and channel
// definitions (I.5.3.6), and the encoder's JP2 container with each colour
// and with an ICC profile. Gpu* tests compare the CUDA backend with the CPU
// one and skip without a usable device.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "j2kc.h"
#include "test_images.h"
#include "test_log.h"

namespace {

using Bytes = std::vector<uint8_t>;

using j2kc_test::have_gpu;
using j2kc_test::Log;

void put32(Bytes &b, uint32_t v)
{
    for (int i = 3; i >= 0; --i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

Bytes box(const char *type, const Bytes &content)
{
    Bytes b;
    put32(b, static_cast<uint32_t>(content.size() + 8));
    b.insert(b.end(), type, type + 4);
    b.insert(b.end(), content.begin(), content.end());
    return b;
}

Bytes cat(std::initializer_list<Bytes> parts)
{
    Bytes out;
    for (const Bytes &p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

/**
 * A profile with an ICC header (ICC.1 7.2) and no tags: enough for the
 * container, which checks the size, the signature and the colour space.
 */
Bytes icc_profile(const char *space, size_t padding = 0)
{
    Bytes p(132 + padding, 0);
    const uint32_t size = static_cast<uint32_t>(p.size());
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(size >> (24 - 8 * i));
    std::memcpy(&p[12], "mntr", 4);
    std::memcpy(&p[16], space, 4);
    std::memcpy(&p[20], "XYZ ", 4);
    std::memcpy(&p[36], "acsp", 4);
    for (size_t i = 132; i < p.size(); ++i) p[i] = static_cast<uint8_t>(i * 7);
    return p;
}

/** n planes of `prec` bits with a little content, chroma subsampled by dx x dy. */
j2kc_test::Planes16 frame(uint32_t w, uint32_t h, uint32_t n, uint8_t prec, uint8_t dx = 1, uint8_t dy = 1)
{
    std::vector<uint8_t> sx(n, 1), sy(n, 1);
    for (uint32_t c = 1; c < n && c < 3; ++c) {
        sx[c] = dx;
        sy[c] = dy;
    }
    j2kc_test::Planes16 f(w, h, n, prec, sx, sy);
    f.fill(n * 31 + prec, [&](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
        return ((x * 5 + y * 3 + c * 40 + rng() % 7) % (1u << prec));
    });
    return f;
}

j2kc_encoder_config encoder_config(j2kc_backend backend)
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.lossless = 1;
    return cfg;
}

/** Encodes one frame; the status of create (or of the encode) and the packet. */
int encode(const j2kc_test::Planes16 &f, j2kc_encoder_config cfg, Bytes *out, Log *log = nullptr)
{
    Log own;
    if (!log) log = &own;
    cfg.log = Log::callback;
    cfg.log_opaque = log;
    j2kc_encoder *enc = nullptr;
    int status = j2kc_encoder_create(&enc, &cfg, &f.image);
    if (status != J2KC_OK) return status;
    j2kc_packet pkt{};
    status = j2kc_encode(enc, &f.image, &pkt);
    if (status == J2KC_OK && out) out->assign(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return status;
}

Bytes encode_ok(const j2kc_test::Planes16 &f, const j2kc_encoder_config &cfg)
{
    Bytes out;
    EXPECT_EQ(encode(f, cfg, &out), J2KC_OK);
    return out;
}

struct Parsed {
    int status = 0;
    j2kc_stream_info info{};
    std::vector<j2kc_component_info> components = std::vector<j2kc_component_info>(8);
    Log log;
};

Parsed parse(const Bytes &file, j2kc_backend backend = J2KC_BACKEND_CPU)
{
    Parsed p;
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.log = Log::callback;
    cfg.log_opaque = &p.log;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    p.info.struct_size = sizeof(p.info);
    p.info.components = p.components.data();
    p.info.components_capacity = static_cast<uint32_t>(p.components.size());
    p.status = j2kc_decoder_parse(dec, file.data(), file.size(), &p.info);
    j2kc_decoder_free(&dec);
    return p;
}

/** Decodes every component into 16-bit planes; the status and the log. */
int decode(const Bytes &file, j2kc_backend backend, std::vector<std::vector<uint16_t>> *planes, Log *log)
{
    Parsed p = parse(file, backend);
    if (p.status != J2KC_OK) return p.status;
    std::vector<uint8_t> dx, dy;
    for (uint32_t c = 0; c < p.info.num_components; ++c) {
        dx.push_back(p.components[c].dx);
        dy.push_back(p.components[c].dy);
    }
    j2kc_test::Planes16 out(p.info.width, p.info.height, p.info.num_components, p.components[0].precision, dx, dy);
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.log = Log::callback;
    cfg.log_opaque = log;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    const int status = j2kc_decode(dec, file.data(), file.size(), &out.image);
    j2kc_decoder_free(&dec);
    if (planes) *planes = out.planes;
    return status;
}

/** ihdr (I.5.3.1) for an 8-bit image. */
Bytes ihdr(uint32_t w, uint32_t h, uint16_t n)
{
    Bytes b;
    put32(b, h);
    put32(b, w);
    b.push_back(static_cast<uint8_t>(n >> 8));
    b.push_back(static_cast<uint8_t>(n));
    b.push_back(7);  // 8 bits, unsigned
    b.push_back(7);
    b.push_back(0);
    b.push_back(0);
    return box("ihdr", b);
}

Bytes colr_enumerated(uint32_t enumcs, const Bytes &extra = {})
{
    Bytes b = {1, 0, 0};
    put32(b, enumcs);
    b.insert(b.end(), extra.begin(), extra.end());
    return box("colr", b);
}

Bytes colr_icc(uint8_t method, const Bytes &icc)
{
    Bytes b = {method, 0, 0};
    b.insert(b.end(), icc.begin(), icc.end());
    return box("colr", b);
}

/** A JP2 file around `codestream` with the given jp2h children after ihdr. */
Bytes jp2_file(const Bytes &codestream, uint32_t w, uint32_t h, uint16_t n, const Bytes &children)
{
    const Bytes signature = {0, 0, 0, 12, 'j', 'P', ' ', ' ', 0x0D, 0x0A, 0x87, 0x0A};
    const Bytes ftyp = box("ftyp", {'j', 'p', '2', ' ', 0, 0, 0, 0, 'j', 'p', '2', ' '});
    return cat({signature, ftyp, box("jp2h", cat({ihdr(w, h, n), children})), box("jp2c", codestream)});
}

/** The offset of the first box of `type` at any depth the walk meets (jp2h entered), or npos. */
size_t find_box(const Bytes &file, const char *type)
{
    for (size_t i = 0; i + 8 <= file.size(); ++i)
        if (std::memcmp(&file[i + 4], type, 4) == 0) return i;
    return std::string::npos;
}

TEST(Jp2Colour, EncoderWritesEachEnumeratedSpaceAndTheDecoderReportsIt)
{
    struct Case {
        uint32_t n;
        uint8_t dx, dy;
        j2kc_color_space written, reported;
        uint32_t enumcs, alpha;
        bool unknown_flag;
    };
    const Case cases[] = {
        {3, 1, 1, J2KC_COLOR_SRGB, J2KC_COLOR_SRGB, 16, 0, false},
        {1, 1, 1, J2KC_COLOR_GRAY, J2KC_COLOR_GRAY, 17, 0, false},
        {3, 2, 2, J2KC_COLOR_SYCC, J2KC_COLOR_SYCC, 18, 0, false},
        {3, 2, 1, J2KC_COLOR_SYCC, J2KC_COLOR_SYCC, 18, 0, false},
        {4, 1, 1, J2KC_COLOR_SRGB, J2KC_COLOR_SRGB, 16, 1, false},
        {2, 1, 1, J2KC_COLOR_GRAY, J2KC_COLOR_GRAY, 17, 1, false},
        // UNKNOWN: sRGB or greyscale by component count, with ihdr UnkC set.
        {3, 1, 1, J2KC_COLOR_UNKNOWN, J2KC_COLOR_SRGB, 16, 0, true},
        {1, 1, 1, J2KC_COLOR_UNKNOWN, J2KC_COLOR_GRAY, 17, 0, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(std::to_string(c.n) + " components, colour " + std::to_string(c.written));
        const auto f = frame(37, 21, c.n, 8, c.dx, c.dy);
        j2kc_encoder_config cfg = encoder_config(J2KC_BACKEND_CPU);
        const Bytes codestream = encode_ok(f, cfg);
        cfg.container = J2KC_CONTAINER_JP2;
        cfg.color_space = c.written;
        const Bytes file = encode_ok(f, cfg);
        ASSERT_GT(file.size(), codestream.size());
        // The same codestream, last in the file, in a jp2c box of its size.
        EXPECT_TRUE(std::equal(codestream.begin(), codestream.end(), file.end() - codestream.size()));
        const size_t jp2c = file.size() - codestream.size() - 8;
        EXPECT_EQ(find_box(file, "jp2c"), jp2c);
        const size_t ihdr_at = find_box(file, "ihdr");
        ASSERT_NE(ihdr_at, std::string::npos);
        EXPECT_EQ(file[ihdr_at + 8 + 12], c.unknown_flag ? 1 : 0) << "ihdr UnkC";

        const Parsed p = parse(file);
        ASSERT_EQ(p.status, J2KC_OK);
        EXPECT_EQ(p.info.is_jp2, 1);
        EXPECT_EQ(p.info.color_space, c.reported);
        EXPECT_EQ(p.info.enumerated_cs, c.enumcs);
        EXPECT_EQ(p.info.icc_profile, nullptr);
        EXPECT_EQ(p.info.icc_profile_size, 0u);
        EXPECT_EQ(p.info.num_alpha_channels, c.alpha);
        EXPECT_EQ(p.info.num_components, c.n);
        EXPECT_TRUE(p.log.warnings.empty()) << p.log.warnings[0];

        // The pixels are the codestream's.
        std::vector<std::vector<uint16_t>> a, b;
        Log la, lb;
        ASSERT_EQ(decode(codestream, J2KC_BACKEND_CPU, &a, &la), J2KC_OK);
        ASSERT_EQ(decode(file, J2KC_BACKEND_CPU, &b, &lb), J2KC_OK);
        EXPECT_EQ(a, b);
        EXPECT_EQ(b, f.planes) << "lossless";
    }
}

TEST(Jp2Colour, EncoderEmbedsTheIccProfileAndTheDecoderPointsAtIt)
{
    for (const char *space : {"RGB ", "GRAY"}) {
        SCOPED_TRACE(space);
        const bool grey = space[0] == 'G';
        const auto f = frame(29, 17, grey ? 2 : 3, 12);
        Bytes icc = icc_profile(space, 57);
        j2kc_encoder_config cfg = encoder_config(J2KC_BACKEND_CPU);
        cfg.container = J2KC_CONTAINER_JP2;
        cfg.color_space = J2KC_COLOR_XYZ;  // ignored: the profile says it
        cfg.icc_profile = icc.data();
        cfg.icc_profile_size = icc.size();
        j2kc_encoder *enc = nullptr;
        Log log;
        cfg.log = Log::callback;
        cfg.log_opaque = &log;
        ASSERT_EQ(j2kc_encoder_create(&enc, &cfg, &f.image), J2KC_OK);
        const Bytes given = icc;
        std::fill(icc.begin(), icc.end(), 0);  // copied at create
        j2kc_packet pkt{};
        ASSERT_EQ(j2kc_encode(enc, &f.image, &pkt), J2KC_OK);
        const Bytes file(pkt.data, pkt.data + pkt.size);
        j2kc_encoder_free(&enc);

        const Parsed p = parse(file);
        ASSERT_EQ(p.status, J2KC_OK);
        EXPECT_EQ(p.info.color_space, J2KC_COLOR_UNKNOWN);
        EXPECT_EQ(p.info.enumerated_cs, 0u);
        ASSERT_EQ(p.info.icc_profile_size, given.size());
        ASSERT_NE(p.info.icc_profile, nullptr);
        // A pointer into the bytes given to parse, not a copy.
        EXPECT_GE(p.info.icc_profile, file.data());
        EXPECT_LE(p.info.icc_profile + p.info.icc_profile_size, file.data() + file.size());
        EXPECT_EQ(Bytes(p.info.icc_profile, p.info.icc_profile + p.info.icc_profile_size), given);
        const size_t colr = find_box(file, "colr");
        ASSERT_NE(colr, std::string::npos);
        EXPECT_EQ(file[colr + 8], 2) << "method 2: restricted ICC";
        EXPECT_EQ(p.info.num_alpha_channels, grey ? 1u : 0u);
        EXPECT_EQ(file[find_box(file, "ihdr") + 8 + 12], 0) << "UnkC";
        std::vector<std::vector<uint16_t>> planes;
        Log dl;
        ASSERT_EQ(decode(file, J2KC_BACKEND_CPU, &planes, &dl), J2KC_OK);
        EXPECT_EQ(planes, f.planes);
    }
}

TEST(Jp2Colour, EncoderRefusesWhatJp2CannotSay)
{
    const auto rgb = frame(16, 8, 3, 8);
    const auto grey = frame(16, 8, 1, 8);
    // 15 names no space, yet is a value the enum can hold in C++ (its
    // enumerators need 4 bits), so that reading it is defined behaviour.
    for (j2kc_color_space s :
         {J2KC_COLOR_XYZ, J2KC_COLOR_ESRGB, J2KC_COLOR_ROMM, J2KC_COLOR_ESYCC, J2KC_COLOR_YPBPR_1125_60,
          J2KC_COLOR_YPBPR_1250_50, J2KC_COLOR_CIELAB, J2KC_COLOR_CMYK, static_cast<j2kc_color_space>(15)}) {
        j2kc_encoder_config cfg = encoder_config(J2KC_BACKEND_CPU);
        cfg.container = J2KC_CONTAINER_JP2;
        cfg.color_space = s;
        Log log;
        EXPECT_EQ(encode(rgb, cfg, nullptr, &log), J2KC_ERR_INVALID_ARG) << s;
        ASSERT_FALSE(log.errors.empty());
        EXPECT_NE(log.errors[0].find("ICC profile"), std::string::npos) << log.errors[0];
        // The raw codestream has no colour box: any space is fine there.
        cfg.container = J2KC_CONTAINER_CODESTREAM;
        EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_OK) << s;
    }
    j2kc_encoder_config cfg = encoder_config(J2KC_BACKEND_CPU);
    cfg.container = J2KC_CONTAINER_JP2;
    cfg.color_space = J2KC_COLOR_SRGB;
    EXPECT_EQ(encode(grey, cfg, nullptr), J2KC_ERR_INVALID_ARG) << "sRGB of one component";
    cfg.color_space = J2KC_COLOR_SYCC;
    EXPECT_EQ(encode(grey, cfg, nullptr), J2KC_ERR_INVALID_ARG) << "sYCC of one component";
    cfg.color_space = J2KC_COLOR_SRGB;
    Bytes icc = icc_profile("RGB ");
    cfg.icc_profile = icc.data();
    EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_ERR_INVALID_ARG) << "a profile without its size";
    cfg.icc_profile_size = icc.size();
    EXPECT_EQ(encode(grey, cfg, nullptr), J2KC_ERR_INVALID_ARG) << "an RGB profile for one component";
    EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_OK);
    Bytes bad = icc;
    bad[36] = 'x';  // no 'acsp'
    cfg.icc_profile = bad.data();
    EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_ERR_INVALID_ARG);
    bad = icc;
    bad[3] = 200;  // declares more bytes than given
    cfg.icc_profile = bad.data();
    EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_ERR_INVALID_ARG);
    cfg.icc_profile = icc.data();
    cfg.icc_profile_size = 100;  // shorter than a header
    EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_ERR_INVALID_ARG);
    cfg.icc_profile = nullptr;
    cfg.icc_profile_size = 0;
    cfg.container = static_cast<j2kc_container>(2);
    EXPECT_EQ(encode(rgb, cfg, nullptr), J2KC_ERR_INVALID_ARG);
}

TEST(Jp2Colour, DecoderReportsTheFirstColourBoxOnly)
{
    const auto f = frame(23, 11, 3, 8);
    const Bytes cs = encode_ok(f, encoder_config(J2KC_BACKEND_CPU));
    const Bytes icc = icc_profile("RGB ");
    struct Case {
        const char *name;
        Bytes children;
        j2kc_color_space space;
        uint32_t enumcs;
        bool icc;
        const char *warning;  ///< a warning the decode logs, or nullptr for none
    };
    const Case cases[] = {
        {"JPX spaces", colr_enumerated(24), J2KC_COLOR_ESYCC, 24, false, nullptr},
        {"e-sRGB", colr_enumerated(20), J2KC_COLOR_ESRGB, 20, false, nullptr},
        {"ROMM", colr_enumerated(21), J2KC_COLOR_ROMM, 21, false, nullptr},
        {"YPbPr 60", colr_enumerated(22), J2KC_COLOR_YPBPR_1125_60, 22, false, nullptr},
        {"YPbPr 50", colr_enumerated(23), J2KC_COLOR_YPBPR_1250_50, 23, false, nullptr},
        {"CMYK", colr_enumerated(12), J2KC_COLOR_CMYK, 12, false, nullptr},
        {"CIELab, defaults", colr_enumerated(14), J2KC_COLOR_CIELAB, 14, false, nullptr},
        {"CIELab, parameters", colr_enumerated(14, Bytes(28, 1)), J2KC_COLOR_CIELAB, 14, false, nullptr},
        // Unknown numbers are reported as they are, never guessed from the components.
        {"unknown EnumCS", colr_enumerated(99), J2KC_COLOR_UNKNOWN, 99, false, "99"},
        {"bi-level", colr_enumerated(0), J2KC_COLOR_UNKNOWN, 0, false, "enumerated"},
        {"restricted ICC", colr_icc(2, icc), J2KC_COLOR_UNKNOWN, 0, true, nullptr},
        {"any ICC (JPX)", colr_icc(3, icc), J2KC_COLOR_UNKNOWN, 0, true, nullptr},
        {"ICC then sRGB", cat({colr_icc(2, icc), colr_enumerated(16)}), J2KC_COLOR_UNKNOWN, 0, true, nullptr},
        {"greyscale then ICC", cat({colr_enumerated(17), colr_icc(2, icc)}), J2KC_COLOR_GRAY, 17, false, nullptr},
        // Methods a reader does not know are skipped, not counted as the first.
        {"unknown method first", cat({colr_icc(9, icc), colr_enumerated(18)}), J2KC_COLOR_SYCC, 18, false, "method 9"},
        // Malformed: the colour is unknown, with a warning, and no later box stands in.
        {"colr cut short", cat({box("colr", {1, 0}), colr_enumerated(16)}), J2KC_COLOR_UNKNOWN, 0, false, "unknown"},
        {"EnumCS cut short", box("colr", {1, 0, 0, 0, 16}), J2KC_COLOR_UNKNOWN, 0, false, "cut short"},
        {"ICC too short", cat({colr_icc(2, Bytes(icc.begin(), icc.begin() + 100)), colr_enumerated(16)}),
         J2KC_COLOR_UNKNOWN, 0, false, "ICC"},
        {"ICC without acsp",
         colr_icc(2,
                  [&] {
                      Bytes b = icc;
                      b[37] = 0;
                      return b;
                  }()),
         J2KC_COLOR_UNKNOWN, 0, false, "acsp"},
        {"ICC size past the box",
         colr_icc(2,
                  [&] {
                      Bytes b = icc;
                      b[2] = 1;
                      return b;
                  }()),
         J2KC_COLOR_UNKNOWN, 0, false, "declares"},
        {"extra bytes after EnumCS", colr_enumerated(16, {1, 2}), J2KC_COLOR_SRGB, 16, false, "ignored"},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const Bytes file = jp2_file(cs, 23, 11, 3, c.children);
        const Parsed p = parse(file);
        ASSERT_EQ(p.status, J2KC_OK);
        EXPECT_EQ(p.info.color_space, c.space);
        EXPECT_EQ(p.info.enumerated_cs, c.enumcs);
        if (c.icc) {
            ASSERT_EQ(p.info.icc_profile_size, icc.size());
            EXPECT_EQ(Bytes(p.info.icc_profile, p.info.icc_profile + icc.size()), icc);
            EXPECT_GE(p.info.icc_profile, file.data());
            EXPECT_LT(p.info.icc_profile, file.data() + file.size());
        } else {
            EXPECT_EQ(p.info.icc_profile, nullptr);
            EXPECT_EQ(p.info.icc_profile_size, 0u);
        }
        // Whatever the colour box says, the image decodes, with its warning.
        std::vector<std::vector<uint16_t>> planes;
        Log log;
        ASSERT_EQ(decode(file, J2KC_BACKEND_CPU, &planes, &log), J2KC_OK);
        EXPECT_EQ(planes, f.planes);
        if (c.warning)
            EXPECT_TRUE(log.warned(c.warning)) << (log.warnings.empty() ? "no warning" : log.warnings[0]);
        else
            EXPECT_TRUE(log.warnings.empty()) << log.warnings[0];
    }
    // No colour box at all (not a valid JP2, read anyway): the codestream's own hints.
    const Parsed none = parse(jp2_file(cs, 23, 11, 3, {}));
    ASSERT_EQ(none.status, J2KC_OK);
    EXPECT_EQ(none.info.color_space, J2KC_COLOR_SRGB) << "RCT";
}

TEST(Jp2Colour, ChannelDefinitionsCountOpacity)
{
    const auto f = frame(9, 7, 4, 8);
    const Bytes cs = encode_ok(f, encoder_config(J2KC_BACKEND_CPU));
    auto cdef = [](std::initializer_list<std::array<uint16_t, 3>> entries) {
        Bytes b = {0, static_cast<uint8_t>(entries.size())};
        for (const auto &e : entries)
            for (uint16_t v : e) {
                b.push_back(static_cast<uint8_t>(v >> 8));
                b.push_back(static_cast<uint8_t>(v));
            }
        return box("cdef", b);
    };
    struct Case {
        Bytes cdef;
        uint32_t alpha;
    };
    const Case cases[] = {
        {{}, 0},
        {cdef({{0, 0, 1}, {1, 0, 2}, {2, 0, 3}, {3, 1, 0}}), 1},
        {cdef({{0, 0, 1}, {1, 0, 2}, {2, 0, 3}, {3, 2, 0}}), 1},            // premultiplied
        {cdef({{0, 0, 1}, {1, 0, 2}, {2, 0, 3}, {3, 0xFFFF, 0xFFFF}}), 0},  // unspecified
        {cdef({{0, 0, 1}, {1, 1, 1}, {2, 0, 3}, {3, 1, 3}}), 2},
        {cdef({{0, 0, 1}, {1, 0, 2}, {1, 1, 0}, {3, 1, 0}}), 0},  // channel 1 twice: no cdef
    };
    for (const Case &c : cases) {
        const Parsed p = parse(jp2_file(cs, 9, 7, 4, cat({colr_enumerated(16), c.cdef})));
        ASSERT_EQ(p.status, J2KC_OK);
        EXPECT_EQ(p.info.num_alpha_channels, c.alpha);
        EXPECT_EQ(p.info.num_components, 4u);
    }
    // A raw codestream has no channel definitions.
    EXPECT_EQ(parse(cs).info.num_alpha_channels, 0u);
}

TEST(Jp2Colour, OlderCallersGetTheFieldsTheyKnow)
{
    const auto f = frame(13, 9, 3, 8);
    j2kc_encoder_config cfg = encoder_config(J2KC_BACKEND_CPU);
    cfg.container = J2KC_CONTAINER_JP2;
    const Bytes icc = icc_profile("RGB ");
    cfg.icc_profile = icc.data();
    cfg.icc_profile_size = icc.size();
    const Bytes file = encode_ok(f, cfg);

    // A caller built before the colour fields: its struct ends at components_capacity.
    const size_t old_size = offsetof(j2kc_stream_info, components_capacity) + sizeof(uint32_t);
    std::vector<uint8_t> storage(sizeof(j2kc_stream_info) + 64, 0xA5);
    auto *info = reinterpret_cast<j2kc_stream_info *>(storage.data());
    std::memset(info, 0, old_size);
    info->struct_size = old_size;
    j2kc_decoder_config dcfg;
    j2kc_decoder_config_default(&dcfg);
    dcfg.backend = J2KC_BACKEND_CPU;
    j2kc_decoder *dec = nullptr;
    ASSERT_EQ(j2kc_decoder_create(&dec, &dcfg), J2KC_OK);
    ASSERT_EQ(j2kc_decoder_parse(dec, file.data(), file.size(), info), J2KC_OK);
    EXPECT_EQ(info->width, 13u);
    EXPECT_EQ(info->num_components, 3u);
    EXPECT_EQ(info->struct_size, old_size);
    for (size_t i = old_size; i < storage.size(); ++i) ASSERT_EQ(storage[i], 0xA5) << "byte " << i << " written";

    // An older decoder config (before strict) and encoder config (before the container) still work.
    j2kc_decoder_config old_dcfg;
    j2kc_decoder_config_default(&old_dcfg);
    old_dcfg.backend = J2KC_BACKEND_CPU;
    old_dcfg.struct_size = offsetof(j2kc_decoder_config, strict);
    j2kc_decoder *old_dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&old_dec, &old_dcfg), J2KC_OK);
    j2kc_decoder_free(&old_dec);
    j2kc_encoder_config old_ecfg = encoder_config(J2KC_BACKEND_CPU);
    old_ecfg.container = J2KC_CONTAINER_JP2;  // past the old struct: not read
    old_ecfg.struct_size = offsetof(j2kc_encoder_config, container);
    Bytes raw;
    ASSERT_EQ(encode(f, old_ecfg, &raw), J2KC_OK);
    EXPECT_EQ(raw[0], 0xFF) << "a raw codestream (SOC), not a JP2 file";
    EXPECT_EQ(raw[1], 0x4F);
    j2kc_decoder_free(&dec);
}

// The JP2 boxes are written after the backend: the CUDA backend's files are
// the CPU backend's, byte for byte, with every colour and with a profile.
TEST(GpuJp2Colour, CudaEncoderWritesTheCpuFiles)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    struct Case {
        uint32_t n;
        uint8_t dx, dy, prec;
        j2kc_color_space space;
        const char *icc;
    };
    const Case cases[] = {
        {3, 1, 1, 8, J2KC_COLOR_SRGB, nullptr},    {1, 1, 1, 12, J2KC_COLOR_GRAY, nullptr},
        {3, 2, 2, 8, J2KC_COLOR_SYCC, nullptr},    {3, 2, 1, 10, J2KC_COLOR_SYCC, nullptr},
        {4, 1, 1, 16, J2KC_COLOR_SRGB, nullptr},   {2, 1, 1, 8, J2KC_COLOR_UNKNOWN, nullptr},
        {3, 1, 1, 16, J2KC_COLOR_UNKNOWN, "RGB "}, {1, 1, 1, 8, J2KC_COLOR_GRAY, "GRAY"},
    };
    for (const Case &c : cases) {
        for (int lossless : {1, 0}) {
            SCOPED_TRACE(std::to_string(c.n) + " components, colour " + std::to_string(c.space) +
                         (lossless ? " lossless" : " lossy"));
            const auto f = frame(97, 61, c.n, c.prec, c.dx, c.dy);
            const Bytes icc = c.icc ? icc_profile(c.icc, 11) : Bytes();
            j2kc_encoder_config cpu = encoder_config(J2KC_BACKEND_CPU);
            cpu.lossless = lossless;
            cpu.container = J2KC_CONTAINER_JP2;
            cpu.color_space = c.space;
            cpu.icc_profile = icc.empty() ? nullptr : icc.data();
            cpu.icc_profile_size = icc.size();
            j2kc_encoder_config gpu = cpu;
            gpu.backend = J2KC_BACKEND_CUDA;
            const Bytes a = encode_ok(f, cpu), b = encode_ok(f, gpu);
            ASSERT_FALSE(a.empty());
            EXPECT_EQ(a, b);
            const Parsed pa = parse(a, J2KC_BACKEND_CPU), pb = parse(a, J2KC_BACKEND_CUDA);
            EXPECT_EQ(pa.info.color_space, pb.info.color_space);
            EXPECT_EQ(pa.info.enumerated_cs, pb.info.enumerated_cs);
            EXPECT_EQ(pa.info.icc_profile, pb.info.icc_profile);
            EXPECT_EQ(pa.info.icc_profile_size, pb.info.icc_profile_size);
            EXPECT_EQ(pa.info.num_alpha_channels, pb.info.num_alpha_channels);
        }
    }
}

// Both backends describe and decode the same crafted colour boxes alike.
TEST(GpuJp2Colour, CudaDecoderReportsTheCpuColour)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const auto f = frame(23, 11, 3, 8);
    const Bytes cs = encode_ok(f, encoder_config(J2KC_BACKEND_CPU));
    const Bytes icc = icc_profile("RGB ");
    for (const Bytes &children : {colr_enumerated(99), colr_enumerated(24), colr_icc(2, icc), box("colr", {1, 0}),
                                  cat({colr_enumerated(16), box("cdef", {0, 1, 0, 2, 0, 1, 0, 0})})}) {
        const Bytes file = jp2_file(cs, 23, 11, 3, children);
        const Parsed a = parse(file, J2KC_BACKEND_CPU), b = parse(file, J2KC_BACKEND_CUDA);
        ASSERT_EQ(a.status, J2KC_OK);
        ASSERT_EQ(b.status, J2KC_OK);
        EXPECT_EQ(a.info.color_space, b.info.color_space);
        EXPECT_EQ(a.info.enumerated_cs, b.info.enumerated_cs);
        EXPECT_EQ(a.info.icc_profile, b.info.icc_profile);
        EXPECT_EQ(a.info.num_alpha_channels, b.info.num_alpha_channels);
        std::vector<std::vector<uint16_t>> pa, pb;
        Log la, lb;
        ASSERT_EQ(decode(file, J2KC_BACKEND_CPU, &pa, &la), J2KC_OK);
        ASSERT_EQ(decode(file, J2KC_BACKEND_CUDA, &pb, &lb), J2KC_OK);
        EXPECT_EQ(pa, pb);
        EXPECT_EQ(la.warnings, lb.warnings);
    }
}

}  // namespace
