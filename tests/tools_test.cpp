/**
 * @file tools_test.cpp
 * @brief The j2kc tool's image files (PGX, PGM/PPM, PAM, raw):
 * round trips at every precision, signedness and byte order, odd sizes, and
 * malformed headers (each must throw j2kc::Error, never crash or allocate
 * from a header's claims).
 */
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/status.h"
#include "tools/image_io.h"

using namespace j2kc::tools;

namespace {

std::vector<uint8_t> bytes_of(const std::string &s) { return std::vector<uint8_t>(s.begin(), s.end()); }

Plane random_plane(std::mt19937 &rng, uint32_t w, uint32_t h, int precision, bool is_signed)
{
    Plane p;
    p.width = w;
    p.height = h;
    p.precision = precision;
    p.is_signed = is_signed;
    int64_t lo = is_signed ? -(int64_t{1} << (precision - 1)) : 0;
    int64_t hi = is_signed ? (int64_t{1} << (precision - 1)) - 1 : (int64_t{1} << precision) - 1;
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    p.samples.resize(size_t{w} * h);
    for (auto &v : p.samples) v = static_cast<int32_t>(dist(rng));
    // The extremes must survive too.
    p.samples.front() = static_cast<int32_t>(lo);
    p.samples.back() = static_cast<int32_t>(hi);
    return p;
}

void expect_same(const Plane &a, const Plane &b)
{
    EXPECT_EQ(a.width, b.width);
    EXPECT_EQ(a.height, b.height);
    EXPECT_EQ(a.precision, b.precision);
    EXPECT_EQ(a.is_signed, b.is_signed);
    EXPECT_EQ(a.samples, b.samples);
}

/** Parsing must either succeed or throw j2kc::Error: nothing else. */
template <typename F>
void expect_error_or_value(F &&f)
{
    try {
        f();
    } catch (const j2kc::Error &) {}
}

template <typename F>
void expect_data_error(F &&f, const char *what)
{
    try {
        f();
        ADD_FAILURE() << "no error for " << what;
    } catch (const j2kc::Error &e) {
        EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA) << what << ": " << e.what();
        EXPECT_EQ(std::strchr(e.what(), '\n'), nullptr) << "message must be one line: " << e.what();
    }
}

class TempDir {
public:
    TempDir()
    {
        char tmpl[] = "/tmp/j2kc_tools_test_XXXXXX";
        char *d = ::mkdtemp(tmpl);
        if (d) path_ = d;
    }
    ~TempDir()
    {
        if (!path_.empty()) {
            std::string cmd = "rm -rf '" + path_ + "'";
            if (std::system(cmd.c_str()) != 0) {}
        }
    }
    const std::string &path() const { return path_; }

private:
    std::string path_;
};

}  // namespace

/* ------------------------------------------------------------------ PGX */

TEST(Pgx, RoundTripEveryPrecisionSignAndByteOrder)
{
    std::mt19937 rng(1234);
    const uint32_t sizes[][2] = {{1, 1}, {17, 9}, {3, 1}, {1, 5}, {33, 7}};
    for (int precision = 1; precision <= 32; ++precision) {
        for (int s = 0; s < 2; ++s) {
            bool is_signed = s == 1;
            if (!is_signed && precision == 32) continue;  // int32 holds at most 31 unsigned bits
            for (int le = 0; le < 2; ++le) {
                const auto &sz = sizes[(precision + s + le) % 5];
                Plane p = random_plane(rng, sz[0], sz[1], precision, is_signed);
                std::vector<uint8_t> file = format_pgx(p, le == 1);
                ASSERT_EQ(file.size() - (std::find(file.begin(), file.end(), '\n') - file.begin() + 1),
                          p.samples.size() * sample_bytes(precision));
                Plane q = parse_pgx(file.data(), file.size());
                SCOPED_TRACE("precision " + std::to_string(precision) + (is_signed ? " signed" : "") +
                             (le ? " LM" : " ML"));
                expect_same(p, q);
            }
        }
    }
}

TEST(Pgx, HeaderAndSamplesFollowOpjDecompress)
{
    // opj_decompress writes "PG ML <sign> <depth> <w> <h>\n" and big-endian samples.
    Plane p;
    p.width = 3;
    p.height = 1;
    p.precision = 12;
    p.is_signed = true;
    p.samples = {-1, 2047, -2048};
    std::vector<uint8_t> f = format_pgx(p);
    std::string header = "PG ML - 12 3 1\n";
    ASSERT_EQ(f.size(), header.size() + 6);
    EXPECT_EQ(std::string(f.begin(), f.begin() + header.size()), header);
    const uint8_t expect[] = {0xFF, 0xFF, 0x07, 0xFF, 0xF8, 0x00};
    EXPECT_EQ(0, std::memcmp(f.data() + header.size(), expect, 6));

    p.precision = 8;
    p.is_signed = false;
    p.samples = {0, 255, 128};
    f = format_pgx(p);
    EXPECT_EQ(std::string(f.begin(), f.end() - 3), "PG ML + 8 3 1\n");
    EXPECT_EQ(f.size(), std::string("PG ML + 8 3 1\n").size() + 3);
}

TEST(Pgx, HeaderVariantsFromOtherTools)
{
    struct Case {
        std::string header;
        int precision;
        bool is_signed;
        bool little_endian;
    } cases[] = {
        {"PG ML + 8 2 1\n", 8, false, false},  {"PG ML -12 2 1\n", 12, true, false},
        {"PG LM 10 2 1\n", 10, false, true},   {"PG\tML\t-\t16\t2\t1\n", 16, true, false},
        {"PG ML +8 2 1\r\n", 8, false, false}, {"PG LM - 4 2 1 \n", 4, true, true},
    };
    for (const Case &c : cases) {
        SCOPED_TRACE(c.header);
        std::vector<uint8_t> f = bytes_of(c.header);
        unsigned n = sample_bytes(c.precision);
        // Sample 0 = 1, sample 1 = -1 (signed) or 3.
        for (int i = 0; i < 2; ++i) {
            uint32_t v = i == 0 ? 1u : (c.is_signed ? 0xFFFFFFFFu : 3u);
            for (unsigned b = 0; b < n; ++b) {
                unsigned shift = c.little_endian ? 8 * b : 8 * (n - 1 - b);
                f.push_back(static_cast<uint8_t>(v >> shift));
            }
        }
        Plane p = parse_pgx(f.data(), f.size());
        EXPECT_EQ(p.precision, c.precision);
        EXPECT_EQ(p.is_signed, c.is_signed);
        ASSERT_EQ(p.samples.size(), 2u);
        EXPECT_EQ(p.samples[0], 1);
        EXPECT_EQ(p.samples[1], c.is_signed ? -1 : 3);
    }
}

TEST(Pgx, MalformedHeadersAreErrors)
{
    std::vector<uint8_t> ok = bytes_of("PG ML + 8 2 2\n");
    ok.insert(ok.end(), {1, 2, 3, 4});
    ASSERT_NO_THROW(parse_pgx(ok.data(), ok.size()));

    const char *bad[] = {
        "",
        "P",
        "PX ML + 8 2 2\n\1\2\3\4",
        "PGML + 8 2 2\n\1\2\3\4",
        "PG MM + 8 2 2\n\1\2\3\4",
        "PG ML + 0 2 2\n\1\2\3\4",
        "PG ML + 33 2 2\n\1\2\3\4",
        "PG ML + 8 0 2\n",
        "PG ML + 8 2 0\n",
        "PG ML + 8 2\n\1\2\3\4",
        "PG ML + 8 2 2",
        "PG ML + 8 2 2 x\n\1\2\3\4",
        "PG ML + 8 99999999999999999999 2\n",
        "PG ML + 8 2147483647 2147483647\n\0",  // would be 4 EiB: must fail on size, not allocate
        "PG ML + 8 2 2\n\1\2\3",                // one sample short
        "PG ML + x 2 2\n\1\2\3\4",
    };
    for (const char *b : bad) {
        std::vector<uint8_t> f(b, b + std::strlen(b));
        expect_data_error([&] { parse_pgx(f.data(), f.size()); }, b);
    }
    // A 5-bit file with a sample of 200 lies about its depth.
    std::vector<uint8_t> f = bytes_of("PG ML + 5 2 1\n");
    f.insert(f.end(), {3, 200});
    expect_data_error([&] { parse_pgx(f.data(), f.size()); }, "sample beyond depth");
    // Every truncation of a valid file fails cleanly.
    std::mt19937 rng(7);
    std::vector<uint8_t> good = format_pgx(random_plane(rng, 5, 3, 12, true));
    for (size_t n = 0; n < good.size(); ++n) {
        expect_data_error([&] { parse_pgx(good.data(), n); }, "truncated");
    }
}

TEST(Pgx, RandomCorruptionNeverCrashes)
{
    std::mt19937 rng(99);
    for (int round = 0; round < 3000; ++round) {
        Plane p = random_plane(rng, 1 + rng() % 9, 1 + rng() % 9, 1 + rng() % 16, rng() & 1);
        std::vector<uint8_t> f = format_pgx(p, rng() & 1);
        int flips = 1 + rng() % 4;
        for (int i = 0; i < flips; ++i) {
            size_t at = rng() % std::min<size_t>(f.size(), 24);
            f[at] = static_cast<uint8_t>(rng());
        }
        expect_error_or_value([&] { parse_pgx(f.data(), f.size()); });
    }
}

/* ------------------------------------------------------------------ PNM */

TEST(Pnm, RoundTripPgmPpmPam)
{
    std::mt19937 rng(42);
    for (int precision = 1; precision <= 16; ++precision) {
        for (FileFormat fmt : {FileFormat::pgm, FileFormat::ppm, FileFormat::pam}) {
            size_t depths[] = {1, 2, 3, 4};
            for (size_t depth : depths) {
                if (fmt == FileFormat::pgm && depth != 1) continue;
                if (fmt == FileFormat::ppm && depth != 3) continue;
                Image im;
                im.width = 1 + rng() % 19;
                im.height = 1 + rng() % 11;
                for (size_t c = 0; c < depth; ++c) {
                    im.planes.push_back(random_plane(rng, im.width, im.height, precision, false));
                }
                std::vector<uint8_t> f = format_pnm(im, fmt);
                Image back = parse_pnm(f.data(), f.size());
                SCOPED_TRACE("precision " + std::to_string(precision) + " depth " + std::to_string(depth));
                ASSERT_EQ(back.planes.size(), depth);
                EXPECT_EQ(back.width, im.width);
                EXPECT_EQ(back.height, im.height);
                for (size_t c = 0; c < depth; ++c) expect_same(im.planes[c], back.planes[c]);
            }
        }
    }
}

TEST(Pnm, SixteenBitSamplesAreBigEndianAndCommentsAreSkipped)
{
    std::vector<uint8_t> f = bytes_of("P5\n# a comment\n2 # width\n1\n# maxval next\n1023\n");
    f.insert(f.end(), {0x03, 0xFF, 0x01, 0x02});
    Image im = parse_pnm(f.data(), f.size());
    ASSERT_EQ(im.planes.size(), 1u);
    EXPECT_EQ(im.planes[0].precision, 10);
    EXPECT_EQ(im.planes[0].samples, (std::vector<int32_t>{1023, 0x0102}));

    std::vector<uint8_t> pam =
        bytes_of("P7\nWIDTH 1\nHEIGHT 1\nDEPTH 4\nMAXVAL 65535\n# c\nTUPLTYPE RGB_ALPHA\nENDHDR\n");
    pam.insert(pam.end(), {0xAB, 0xCD, 0, 1, 0xFF, 0xFF, 0x80, 0});
    im = parse_pnm(pam.data(), pam.size());
    ASSERT_EQ(im.planes.size(), 4u);
    EXPECT_EQ(im.planes[0].samples[0], 0xABCD);
    EXPECT_EQ(im.planes[1].samples[0], 1);
    EXPECT_EQ(im.planes[2].samples[0], 0xFFFF);
    EXPECT_EQ(im.planes[3].samples[0], 0x8000);
    EXPECT_EQ(im.planes[3].precision, 16);
}

TEST(Pnm, SignedComponentsAreOffsetLikeOpjDecompress)
{
    Image im;
    im.width = 3;
    im.height = 1;
    Plane p;
    p.width = 3;
    p.height = 1;
    p.precision = 8;
    p.is_signed = true;
    p.samples = {-128, 0, 127};
    im.planes.push_back(p);
    std::vector<uint8_t> f = format_pnm(im, FileFormat::pgm);
    ASSERT_GE(f.size(), 3u);
    EXPECT_EQ(f[f.size() - 3], 0);
    EXPECT_EQ(f[f.size() - 2], 128);
    EXPECT_EQ(f[f.size() - 1], 255);
}

TEST(Pnm, WriterRejectsWhatTheFormatCannotHold)
{
    std::mt19937 rng(5);
    auto image_of = [&](size_t depth, int precision) {
        Image im;
        im.width = 4;
        im.height = 3;
        for (size_t c = 0; c < depth; ++c) im.planes.push_back(random_plane(rng, 4, 3, precision, false));
        return im;
    };
    EXPECT_THROW(format_pnm(image_of(3, 8), FileFormat::pgm), j2kc::Error);
    EXPECT_THROW(format_pnm(image_of(1, 8), FileFormat::ppm), j2kc::Error);
    EXPECT_THROW(format_pnm(image_of(5, 8), FileFormat::pam), j2kc::Error);
    EXPECT_THROW(format_pnm(image_of(1, 17), FileFormat::pgm), j2kc::Error);
    Image mixed = image_of(3, 8);
    mixed.planes[1] = random_plane(rng, 2, 2, 8, false);
    EXPECT_THROW(format_pnm(mixed, FileFormat::ppm), j2kc::Error);
    Image precisions = image_of(3, 8);
    precisions.planes[2] = random_plane(rng, 4, 3, 10, false);
    EXPECT_THROW(format_pnm(precisions, FileFormat::ppm), j2kc::Error);
}

TEST(Pnm, MalformedHeadersAreErrors)
{
    const std::string bad[] = {
        "",
        "P",
        "P3\n1 1\n255\n1 2 3\n",  // ASCII: not supported
        "P4\n1 1\n\0",
        "P5",
        "P5\n",
        "P5\n1\n",
        "P5\n1 1\n",
        "P5\n1 1\n0\n\1",
        "P5\n1 1\n65536\n\1\2",
        "P5\n0 1\n255\n",
        "P5\n2 2\n255\n\1\2\3",  // truncated
        "P5\n1 1\n100\n\145",    // 101 > maxval 100
        "P6\n1 1\n255\n\1\2",
        "P5 1 1 255",
        "P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\n\1",  // no ENDHDR
        "P7\nWIDTH 1\nHEIGHT 1\nMAXVAL 255\nENDHDR\n\1",   // no DEPTH
        "P7\nWIDTH 1\nHEIGHT 1\nDEPTH 2\nMAXVAL 255\nTUPLTYPE RGB\nENDHDR\n\1\2",
        "P7\nWIDTH 1\nHEIGHT 1\nDEPTH 1\nMAXVAL 255\nCOLOUR 3\nENDHDR\n\1",
        "P7\nWIDTH 2147483647\nHEIGHT 2147483647\nDEPTH 16384\nMAXVAL 65535\nENDHDR\n",
        "P7 WIDTH 1\n",
    };
    for (const std::string &b : bad) {
        std::vector<uint8_t> f = bytes_of(b);
        expect_data_error([&] { parse_pnm(f.data(), f.size()); }, b.c_str());
    }
    std::mt19937 rng(11);
    for (int round = 0; round < 3000; ++round) {
        Image im;
        im.width = 1 + rng() % 7;
        im.height = 1 + rng() % 7;
        size_t depth = 1 + rng() % 4;
        int precision = 1 + rng() % 16;
        for (size_t c = 0; c < depth; ++c)
            im.planes.push_back(random_plane(rng, im.width, im.height, precision, false));
        std::vector<uint8_t> f = format_pnm(im, depth == 3 && (rng() & 1) ? FileFormat::ppm : FileFormat::pam);
        int flips = 1 + rng() % 3;
        for (int i = 0; i < flips; ++i) f[rng() % std::min<size_t>(f.size(), 64)] = static_cast<uint8_t>(rng());
        size_t cut = (rng() & 3) == 0 ? rng() % (f.size() + 1) : f.size();
        expect_error_or_value([&] { parse_pnm(f.data(), cut); });
    }
}

/* ------------------------------------------------------------------ raw */

TEST(Raw, LayoutSpecs)
{
    RawLayout a = parse_raw_layout("17x9x3x10s@4:2:0");
    EXPECT_EQ(a.width, 17u);
    EXPECT_EQ(a.height, 9u);
    EXPECT_EQ(a.components, 3u);
    EXPECT_EQ(a.precision, 10);
    EXPECT_TRUE(a.is_signed);
    EXPECT_EQ(a.dx, (std::vector<uint8_t>{1, 2, 2}));
    EXPECT_EQ(a.dy, (std::vector<uint8_t>{1, 2, 2}));
    RawLayout b = parse_raw_layout("640x480x3x8@4:2:2");
    EXPECT_FALSE(b.is_signed);
    EXPECT_EQ(b.dx, (std::vector<uint8_t>{1, 2, 2}));
    EXPECT_EQ(b.dy, (std::vector<uint8_t>{1, 1, 1}));
    RawLayout c = parse_raw_layout("5x5x2x16u@1x1:3x2");
    EXPECT_EQ(c.dx, (std::vector<uint8_t>{1, 3}));
    EXPECT_EQ(c.dy, (std::vector<uint8_t>{1, 2}));
    RawLayout d = parse_raw_layout("1x1x1x1");
    EXPECT_EQ(d.precision, 1);

    const char *bad[] = {"",
                         "17x9",
                         "17x9x3",
                         "0x9x3x8",
                         "17x9x0x8",
                         "17x9x3x0",
                         "17x9x3x33",
                         "17x9x3x8q",
                         "17x9x1x8@4:2:0",
                         "17x9x2x8@1x1",
                         "17x9x2x8@1x1:2x2:2x2",
                         "17x9x2x8@1x1:0x2",
                         "17x9x3x8@4:3:1",
                         "17x9x2x8@1x1:2x"};
    for (const char *s : bad) EXPECT_THROW(parse_raw_layout(s), j2kc::Error) << s;
}

TEST(Raw, RoundTripSubsampledSignedBothByteOrders)
{
    std::mt19937 rng(77);
    const char *specs[] = {"17x9x3x8@4:2:0", "17x9x3x12s@4:2:2", "1x1x1x1", "33x7x4x16@1x1:2x2:2x1:1x3",
                           "4097x3x1x10s",   "5x5x2x20s"};
    for (const char *spec : specs) {
        for (int le = 0; le < 2; ++le) {
            SCOPED_TRACE(std::string(spec) + (le ? " little-endian" : " big-endian"));
            RawLayout layout = parse_raw_layout(spec);
            layout.little_endian = le == 1;
            Image im;
            im.width = layout.width;
            im.height = layout.height;
            for (uint32_t c = 0; c < layout.components; ++c) {
                uint32_t w = (layout.width + layout.dx[c] - 1) / layout.dx[c];
                uint32_t h = (layout.height + layout.dy[c] - 1) / layout.dy[c];
                im.planes.push_back(random_plane(rng, w, h, layout.precision, layout.is_signed));
                im.planes.back().dx = layout.dx[c];
                im.planes.back().dy = layout.dy[c];
            }
            std::vector<uint8_t> f = format_raw(im, layout.little_endian);
            Image back = parse_raw(f.data(), f.size(), layout);
            ASSERT_EQ(back.planes.size(), im.planes.size());
            for (size_t c = 0; c < im.planes.size(); ++c) {
                expect_same(im.planes[c], back.planes[c]);
                EXPECT_EQ(back.planes[c].dx, im.planes[c].dx);
                EXPECT_EQ(back.planes[c].dy, im.planes[c].dy);
            }
            // One byte short and one byte long both fail.
            expect_data_error([&] { parse_raw(f.data(), f.size() - 1, layout); }, "short raw");
            f.push_back(0);
            expect_data_error([&] { parse_raw(f.data(), f.size(), layout); }, "long raw");
        }
    }
    // Big-endian means most significant byte first.
    RawLayout l = parse_raw_layout("1x1x1x16");
    const uint8_t be[] = {0x12, 0x34};
    EXPECT_EQ(parse_raw(be, 2, l).planes[0].samples[0], 0x1234);
    l.little_endian = true;
    EXPECT_EQ(parse_raw(be, 2, l).planes[0].samples[0], 0x3412);
}

/* ------------------------------------------------------- images and files */

TEST(Image, ReferenceGridFromComponentSizes)
{
    Image im;
    Plane y, c;
    y.width = 17;
    y.height = 9;
    c.width = 9;
    c.height = 5;
    y.samples.resize(17 * 9);
    c.samples.resize(9 * 5);
    im.planes = {y, c, c};
    derive_reference_grid(im);
    EXPECT_EQ(im.width, 17u);
    EXPECT_EQ(im.height, 9u);
    EXPECT_EQ(im.planes[1].dx, 2);
    EXPECT_EQ(im.planes[1].dy, 2);
    EXPECT_EQ(im.planes[0].dx, 1);

    Image odd;
    Plane a, b;
    a.width = 600;
    a.height = 1;
    b.width = 2;  // no factor up to 255 gives ceil(600 / f) == 2
    b.height = 1;
    odd.planes = {a, b};
    EXPECT_THROW(derive_reference_grid(odd), j2kc::Error);
}

TEST(Image, ComponentPaths)
{
    EXPECT_EQ(component_path("out.pgx", 0), "out_0.pgx");
    EXPECT_EQ(component_path("dir.v2/out.pgx", 12), "dir.v2/out_12.pgx");
    EXPECT_EQ(component_path("dir.v2/out", 1), "dir.v2/out_1");
    EXPECT_EQ(format_from_path("A.PGX"), FileFormat::pgx);
    EXPECT_EQ(format_from_path("a.j2k"), FileFormat::j2c);
    EXPECT_EQ(format_from_path("a.jp2"), FileFormat::jp2);
    EXPECT_EQ(format_from_path("a.yuv"), FileFormat::rawl);
    EXPECT_EQ(format_from_path("dir.pgx/a"), FileFormat::unknown);
}

TEST(Image, FilesRoundTripThroughEveryWriter)
{
    TempDir dir;
    ASSERT_FALSE(dir.path().empty());
    std::mt19937 rng(2024);
    Image im;
    im.width = 17;
    im.height = 9;
    im.planes.push_back(random_plane(rng, 17, 9, 12, false));
    im.planes.push_back(random_plane(rng, 9, 5, 12, true));
    im.planes.push_back(random_plane(rng, 9, 5, 7, false));
    im.planes[1].dx = im.planes[1].dy = im.planes[2].dx = im.planes[2].dy = 2;

    // PGX: one file a component, read back by the base name and by a list.
    std::vector<std::string> files = write_image(dir.path() + "/x.pgx", im);
    ASSERT_EQ(files.size(), 3u);
    EXPECT_EQ(files[2], dir.path() + "/x_2.pgx");
    Image back = read_image(dir.path() + "/x.pgx");
    ASSERT_EQ(back.planes.size(), 3u);
    EXPECT_EQ(back.width, 17u);
    EXPECT_EQ(back.height, 9u);
    for (size_t c = 0; c < 3; ++c) {
        expect_same(im.planes[c], back.planes[c]);
        EXPECT_EQ(back.planes[c].dx, im.planes[c].dx);
    }
    Image listed = read_image(files[2] + "," + files[0]);
    ASSERT_EQ(listed.planes.size(), 2u);
    expect_same(im.planes[2], listed.planes[0]);
    EXPECT_EQ(listed.planes[0].dx, 2);

    // Raw (big-endian .raw, little-endian .rawl).
    for (const char *ext : {".raw", ".rawl"}) {
        std::string path = dir.path() + "/x" + ext;
        write_image(path, im);
        RawLayout layout = parse_raw_layout("17x9x3x16s@4:2:0");
        EXPECT_THROW(read_image(path, &layout), j2kc::Error);  // sizes differ from what was written
    }

    // PGM with several components: one file each.
    Image gray;
    gray.width = 4;
    gray.height = 4;
    gray.planes.push_back(random_plane(rng, 4, 4, 16, false));
    gray.planes.push_back(random_plane(rng, 2, 2, 16, false));
    files = write_image(dir.path() + "/g.pgm", gray);
    ASSERT_EQ(files.size(), 2u);
    Image g1 = read_image(files[1]);
    expect_same(gray.planes[1], g1.planes[0]);

    // PPM and PAM.
    Image rgb;
    rgb.width = 640;
    rgb.height = 3;
    for (int c = 0; c < 3; ++c) rgb.planes.push_back(random_plane(rng, 640, 3, 8, false));
    write_image(dir.path() + "/c.ppm", rgb);
    Image rgb_back = read_image(dir.path() + "/c.ppm");
    for (int c = 0; c < 3; ++c) expect_same(rgb.planes[c], rgb_back.planes[c]);
    rgb.planes.push_back(random_plane(rng, 640, 3, 8, false));
    write_image(dir.path() + "/c.pam", rgb);
    Image rgba_back = read_image(dir.path() + "/c.pam");
    ASSERT_EQ(rgba_back.planes.size(), 4u);
    for (int c = 0; c < 4; ++c) expect_same(rgb.planes[c], rgba_back.planes[c]);

    // Missing files and unknown extensions are clear errors.
    EXPECT_THROW(read_image(dir.path() + "/absent.pgx"), j2kc::Error);
    EXPECT_THROW(read_image(dir.path() + "/x.bmp"), j2kc::Error);
    EXPECT_THROW(read_image(dir.path() + "/x.raw"), j2kc::Error);  // no layout
    EXPECT_THROW(write_image(dir.path() + "/no/such/dir/y.pgx", im), j2kc::Error);
    try {
        read_image(dir.path() + "/absent.ppm");
        ADD_FAILURE();
    } catch (const j2kc::Error &e) {
        EXPECT_NE(std::string(e.what()).find("absent.ppm"), std::string::npos) << e.what();
    }
}
