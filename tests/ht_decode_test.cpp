// HTJ2K (ISO/IEC 15444-15) decoding: HT codestreams written by independent
// encoders (OpenJPH's ojph_compress, Grok's grk_compress -M 64) and by
// tests/data/ht's own generator (refinement passes, placeholder passes,
// layers), decoded by the CPU backend and compared with an independent
// decoder's samples (tests/data/ht/expected.txt, scripts/make-ht-data.sh);
// MIXED tile-components of HT and Part-1 code-blocks, put together here from
// a Part-1 and an HT encoding of one image, decoded to that image;
// the job-table path the GPU runs (t1_decode_any_job) against Tier1Decoder on
// the host; the GPU backend against the CPU (Gpu*, skipped without a
// device); and hostile HT data, which must give an error status or a corrupt
// (zero) code-block, never a read outside the bytes.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "codestream/dump.h"
#include "codestream/jp2.h"
#include "codestream/markers.h"
#include "codestream/reader.h"
#include "common/status.h"
#include "j2kc.h"
#include "pipeline/tile_decoder.h"
#include "test_images.h"
#include "test_streams.h"
#include "tier1/ht_block_decoder_core.h"
#include "tier1/ht_block_encoder.h"
#include "tier1/ht_decode_cuda.h"
#include "tier1/ht_decode_job.h"
#include "tier1/ht_vlc_table.h"
#include "tier1/tier1.h"
#include "tier1/tier1_decode_job.h"
#include "tier1_job_table_check.h"
#include "tier2/bit_io.h"
#include "tier2/packet_encoder.h"

namespace j2kc {
namespace {

using j2kc_test::have_gpu;

void quiet(void *, int, const char *) {}

std::string data_path(const std::string &name)
{
    const char *dir = std::getenv("J2KC_TEST_DATA");
    return std::string(dir ? dir : "tests/data") + "/ht/" + name;
}

std::vector<uint8_t> read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

uint64_t fnv1a(const std::vector<int32_t> &v)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int32_t s : v) {
        const uint32_t u = static_cast<uint32_t>(s);
        for (int b = 0; b < 4; ++b) {
            h ^= (u >> (8 * b)) & 0xFF;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

struct Expected {
    std::string file;
    uint32_t component = 0, width = 0, height = 0, precision = 0;
    bool is_signed = false;
    uint64_t hash = 0;
    int tolerance = 0;
};

std::vector<Expected> expected_components()
{
    std::vector<Expected> out;
    std::ifstream f(data_path("expected.txt"));
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream s(line);
        Expected e;
        int sgn = 0;
        std::string hash;
        s >> e.file >> e.component >> e.width >> e.height >> e.precision >> sgn >> hash >> e.tolerance;
        e.is_signed = sgn != 0;
        e.hash = std::stoull(hash, nullptr, 16);
        out.push_back(e);
    }
    return out;
}

std::vector<std::string> stream_names()
{
    std::vector<std::string> names;
    for (const Expected &e : expected_components())
        if (names.empty() || names.back() != e.file) names.push_back(e.file);
    return names;
}

struct Decoded {
    int status = J2KC_OK;
    std::vector<j2kc_component_info> info;
    std::vector<std::vector<int32_t>> planes;
};

/** Decodes through the public API into 32-bit planes, the components as coded. */
Decoded decode(const std::vector<uint8_t> &cs, j2kc_backend backend, int tier1_on_gpu = 0, int reduce = 0,
               int layers = 0, int strict = 0)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = backend;
    cfg.log = quiet;
    cfg.threads = 2;
    cfg.reduce = reduce;
    cfg.layers = layers;
    cfg.strict = strict;
    cfg.tier1_on_gpu = tier1_on_gpu;
    Decoded d;
    j2kc_decoder *dec = nullptr;
    d.status = j2kc_decoder_create(&dec, &cfg);
    if (d.status != J2KC_OK) return d;
    std::vector<j2kc_component_info> ci(16);
    j2kc_stream_info info{};
    info.struct_size = sizeof(info);
    info.components = ci.data();
    info.components_capacity = 16;
    d.status = j2kc_decoder_parse(dec, cs.data(), cs.size(), &info);
    if (d.status == J2KC_OK) {
        ci.resize(info.num_components);
        d.info = ci;
        d.planes.resize(info.num_components);
        std::vector<j2kc_component> comps(info.num_components);
        for (uint32_t c = 0; c < info.num_components; ++c) {
            d.planes[c].assign(size_t{ci[c].width} * ci[c].height, 0x5A5A5A5A);
            comps[c] = j2kc_test::decoded_component(ci[c], d.planes[c].data(), 4);
        }
        j2kc_image image = j2kc_test::image_view(comps, info.width, info.height);
        d.status = j2kc_decode(dec, cs.data(), cs.size(), &image);
        // Samples are the low `precision` bits of each integer (j2kc.h), sign-extended when signed.
        for (uint32_t c = 0; c < info.num_components && d.status == J2KC_OK; ++c) {
            const uint32_t prec = ci[c].precision;
            if (prec >= 32) continue;
            for (int32_t &v : d.planes[c]) {
                const uint32_t u = static_cast<uint32_t>(v) & ((1u << prec) - 1u);
                v = ci[c].is_signed && (u >> (prec - 1)) ? static_cast<int32_t>(u | ~((1u << prec) - 1u))
                                                         : static_cast<int32_t>(u);
            }
        }
    }
    j2kc_decoder_free(&dec);
    return d;
}

/** The reference samples of a 9/7 stream (FILE.ref: components in turn, 16-bit LE). */
std::vector<std::vector<int32_t>> reference_planes(const std::string &file, const std::vector<Expected> &comps)
{
    const std::vector<uint8_t> bytes = read_file(data_path(file + ".ref"));
    std::vector<std::vector<int32_t>> planes;
    size_t at = 0;
    for (const Expected &e : comps) {
        std::vector<int32_t> p(size_t{e.width} * e.height);
        for (auto &v : p) {
            if (at + 2 > bytes.size()) return {};
            const uint16_t u = static_cast<uint16_t>(bytes[at] | (bytes[at + 1] << 8));
            v = e.is_signed ? int32_t(int16_t(u)) : int32_t(u);
            at += 2;
        }
        planes.push_back(std::move(p));
    }
    return planes;
}

/** Checks one stream's decode against its expectation; returns the worst difference. */
void check_against_reference(const std::string &file, const Decoded &d)
{
    std::vector<Expected> comps;
    for (const Expected &e : expected_components())
        if (e.file == file) comps.push_back(e);
    ASSERT_FALSE(comps.empty()) << file;
    ASSERT_EQ(d.status, J2KC_OK) << file;
    ASSERT_EQ(d.planes.size(), comps.size()) << file;
    std::vector<std::vector<int32_t>> ref;
    if (comps[0].tolerance) {
        ref = reference_planes(file, comps);
        ASSERT_EQ(ref.size(), comps.size()) << file << ": no .ref samples";
    }
    for (size_t c = 0; c < comps.size(); ++c) {
        const Expected &e = comps[c];
        EXPECT_EQ(d.info[c].width, e.width) << file << " component " << c;
        EXPECT_EQ(d.info[c].height, e.height) << file << " component " << c;
        EXPECT_EQ(d.info[c].precision, e.precision) << file << " component " << c;
        EXPECT_EQ(d.info[c].is_signed != 0, e.is_signed) << file << " component " << c;
        if (e.tolerance == 0) {
            EXPECT_EQ(fnv1a(d.planes[c]), e.hash) << file << " component " << c << ": not the reference's samples";
        } else {
            ASSERT_EQ(ref[c].size(), d.planes[c].size());
            EXPECT_EQ(fnv1a(ref[c]), e.hash) << file << ".ref";
            int worst = 0;
            size_t differ = 0;
            for (size_t i = 0; i < ref[c].size(); ++i) {
                const int diff = std::abs(ref[c][i] - d.planes[c][i]);
                worst = std::max(worst, diff);
                differ += diff != 0;
            }
            EXPECT_LE(worst, e.tolerance) << file << " component " << c << " (" << differ << " samples differ)";
        }
    }
}

// ------------------------------------------------------------ the VLC tables

TEST(HtVlcTable, CompletePrefixCodePerContext)
{
    const HtVlcRow *tables[2] = {kHtVlcFirstRow, kHtVlcOtherRows};
    const size_t sizes[2] = {kHtVlcFirstRowCount, kHtVlcOtherRowsCount};
    for (int t = 0; t < 2; ++t) {
        for (uint32_t c = 0; c < 8; ++c) {
            // Kraft sum exactly 1 and no codeword a prefix of another: the 128
            // 7-bit look-aheads each match exactly one row.
            std::vector<int> hits(128, 0);
            for (size_t r = 0; r < sizes[t]; ++r) {
                const HtVlcRow &row = tables[t][r];
                ASSERT_LT(row.context, 8);
                ASSERT_GE(row.length, 1);
                ASSERT_LE(row.length, 7);
                ASSERT_LT(row.codeword, 1u << row.length);
                ASSERT_EQ(row.e_k & ~row.rho, 0) << "e_k outside rho";
                ASSERT_EQ(row.e_1 & ~row.e_k, 0) << "e_1 outside e_k";
                if (row.u_off == 0) {
                    ASSERT_EQ(row.e_k, 0);
                }
                if (row.context != c) continue;
                for (uint32_t v = 0; v < 128; ++v)
                    if ((v & ((1u << row.length) - 1)) == row.codeword) ++hits[v];
            }
            for (uint32_t v = 0; v < 128; ++v)
                EXPECT_EQ(hits[v], 1) << "table " << t << " context " << c << " bits " << v;
        }
    }
    // The first row's context 0 never codes an all-insignificant quad (MEL does).
    for (size_t r = 0; r < kHtVlcFirstRowCount; ++r)
        EXPECT_FALSE(kHtVlcFirstRow[r].context == 0 && kHtVlcFirstRow[r].rho == 0);
    EXPECT_EQ(kHtVlcFirstRowCount, 444u);
    EXPECT_EQ(kHtVlcOtherRowsCount, 358u);
}

// ------------------------------------------------------------ the VLC stream

/** A segment's bytes, many of them ones the stuffing rule looks at (0x7F, 0xFF, 0x8F, 0x90). */
std::vector<uint8_t> stuffing_prone_bytes(std::mt19937 &rng, size_t n)
{
    static const uint8_t special[] = {0x7F, 0xFF, 0x8F, 0x90, 0xFE, 0x00};
    std::vector<uint8_t> b(n);
    for (auto &v : b) v = rng() % 2 ? special[rng() % 6] : static_cast<uint8_t>(rng());
    return b;
}

/** The VLC stream's bits a byte at a time, from the end, as 7.1 states the rule; then zeros. */
std::vector<uint8_t> backward_bits_reference(const std::vector<uint8_t> &seg, uint32_t last, size_t total)
{
    std::vector<uint8_t> bits;
    for (size_t i = seg.size(); i-- > 0;) {
        const uint32_t b = seg[i];
        const uint32_t n = last > 0x8F && (b & 0x7F) == 0x7F ? 7u : 8u;
        for (uint32_t k = 0; k < n; ++k) bits.push_back((b >> k) & 1u);
        last = b;
    }
    bits.resize(std::max(bits.size(), total), 0);
    return bits;
}

/** A VLC stream over the whole of `seg`, read from its last byte, `last` the byte before it. */
ht::BackwardLsb backward_stream(const std::vector<uint8_t> &seg, uint32_t last)
{
    ht::BackwardLsb s;
    s.data = seg.data();
    s.lo = 0;
    s.pos = static_cast<int64_t>(seg.size()) - 1;
    s.acc = 0;
    s.bits = 0;
    s.last = last;
    return s;
}

TEST(HtStreams, BackwardStreamUnstuffsAsTheRuleSays)
{
    std::mt19937 rng(15444);
    for (int trial = 0; trial < 2000; ++trial) {
        const std::vector<uint8_t> seg = stuffing_prone_bytes(rng, rng() % 40);
        const uint32_t first_last = rng() % 2 ? 0xFFu : 0u;
        ht::BackwardLsb s = backward_stream(seg, first_last);
        const std::vector<uint8_t> ref = backward_bits_reference(seg, first_last, 8 * seg.size() + 64);
        size_t at = 0;
        while (at + 32 <= ref.size()) {
            const uint32_t n = 1 + rng() % 24;
            const uint32_t v = s.get(n);
            for (uint32_t k = 0; k < n; ++k)
                ASSERT_EQ((v >> k) & 1u, ref[at + k]) << "trial " << trial << " bit " << at + k;
            at += n;
        }
    }
}

/** decodeUPrefix, decodeUSuffix and decodeUExtension of 7.3.6 a bit at a time, from `bits` at `at`. */
uint32_t u_bit(const std::vector<uint8_t> &bits, size_t &at) { return bits[at++]; }
uint32_t u_prefix_reference(const std::vector<uint8_t> &bits, size_t &at)
{
    if (u_bit(bits, at)) return 1;
    if (u_bit(bits, at)) return 2;
    return u_bit(bits, at) ? 3 : 5;
}
uint32_t u_suffix_reference(const std::vector<uint8_t> &bits, size_t &at, uint32_t prefix)
{
    uint32_t v = 0;
    const uint32_t n = prefix < 3 ? 0 : prefix == 3 ? 1 : 5;
    for (uint32_t k = 0; k < n; ++k) v |= u_bit(bits, at) << k;
    return v;
}
uint32_t u_extension_reference(const std::vector<uint8_t> &bits, size_t &at, uint32_t suffix)
{
    uint32_t v = 0;
    for (uint32_t k = 0; suffix >= 28 && k < 4; ++k) v |= u_bit(bits, at) << k;
    return v;
}

TEST(HtStreams, ResidualsOfAQuadPairMatchTheBitwiseProcedure)
{
    std::mt19937 rng(7306);
    for (int trial = 0; trial < 20000; ++trial) {
        // Windows rich in zeros, so that long prefixes, suffixes of 28 and
        // more, and extensions all occur.
        std::vector<uint8_t> seg(8);
        for (auto &v : seg) v = static_cast<uint8_t>(rng() & rng() & rng());
        const bool first_row = rng() % 2, on_a = rng() % 2, on_b = rng() % 2, mel_bit = rng() % 2;
        ht::BackwardLsb s = backward_stream(seg, 0);
        // One MEL symbol of the value mel_bit: in state k = 0 a first bit 0
        // codes a 1, a first bit 1 a run of one 0.
        uint8_t mel_byte[3] = {static_cast<uint8_t>(mel_bit ? 0x00 : 0x80), 0xFF, 0xFF};
        ht::MelDecoder mel;
        mel.init(mel_byte, 0, 3);
        uint32_t ua = 0, ub = 0;
        ht::u_residuals(s, mel, first_row, on_a, on_b, ua, ub);

        const std::vector<uint8_t> bits = backward_bits_reference(seg, 0, 128);
        size_t at = 0;
        uint32_t ra = 0, rb = 0;
        if (on_a && on_b && first_row && mel_bit) {
            const uint32_t pa = u_prefix_reference(bits, at), pb = u_prefix_reference(bits, at);
            const uint32_t sa = u_suffix_reference(bits, at, pa), sb = u_suffix_reference(bits, at, pb);
            ra = pa + sa + 4 * u_extension_reference(bits, at, sa) + 2;
            rb = pb + sb + 4 * u_extension_reference(bits, at, sb) + 2;
        } else if (on_a && on_b) {
            const uint32_t pa = u_prefix_reference(bits, at);
            if (first_row && pa > 2) {
                rb = u_bit(bits, at) + 1;
                const uint32_t sa = u_suffix_reference(bits, at, pa);
                ra = pa + sa + 4 * u_extension_reference(bits, at, sa);
            } else {
                const uint32_t pb = u_prefix_reference(bits, at);
                const uint32_t sa = u_suffix_reference(bits, at, pa), sb = u_suffix_reference(bits, at, pb);
                ra = pa + sa + 4 * u_extension_reference(bits, at, sa);
                rb = pb + sb + 4 * u_extension_reference(bits, at, sb);
            }
        } else if (on_a || on_b) {
            const uint32_t p = u_prefix_reference(bits, at), sfx = u_suffix_reference(bits, at, p);
            (on_a ? ra : rb) = p + sfx + 4 * u_extension_reference(bits, at, sfx);
        }
        ASSERT_EQ(ua, ra) << "trial " << trial;
        ASSERT_EQ(ub, rb) << "trial " << trial;
        // The stream stands at the bit after the residuals.
        const uint32_t next = s.get(16);
        for (uint32_t k = 0; k < 16; ++k) ASSERT_EQ((next >> k) & 1u, bits[at + k]) << "trial " << trial;
    }
}

// ------------------------------------------------------------ peers' streams

TEST(HtDecode, StreamsOfOtherEncodersMatchAnIndependentDecoder)
{
    const std::vector<std::string> names = stream_names();
    ASSERT_GE(names.size(), 15u) << "tests/data/ht/expected.txt missing or short";
    for (const std::string &name : names) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        ASSERT_FALSE(cs.empty()) << name;
        check_against_reference(name, decode(cs, J2KC_BACKEND_CPU));
    }
}

TEST(HtDecode, CodestreamSaysHt)
{
    const std::vector<uint8_t> cs = read_file(data_path("o_gray8_rev.j2c"));
    const Codestream parsed = parse_codestream(cs.data(), cs.size());
    EXPECT_EQ(parsed.siz.rsiz & kRsizPart15, kRsizPart15);
    EXPECT_EQ(parsed.cap, kPcapPart15);
    ASSERT_TRUE(parsed.has_ccap15);
    EXPECT_EQ(parsed.ccap.size(), 1u);
    EXPECT_EQ(parsed.ccap15 & ccap15::kModeMask, 0);  // every block HT
    EXPECT_EQ(parsed.main.cod->component.cblk_style & cblk_style::kHighThroughput, cblk_style::kHighThroughput);
}

TEST(HtDecode, DumpShowsCapAndCcap15)
{
    const std::vector<uint8_t> cs = read_file(data_path("g_gray16_rev.j2k"));
    const std::string text = dump_codestream(parse_codestream(cs.data(), cs.size()));
    EXPECT_NE(text.find("Rsiz 0x4000 (Part 15 capabilities)"), std::string::npos) << text;
    EXPECT_NE(text.find("CAP: Pcap 0x00020000: Part 15"), std::string::npos) << text;
    EXPECT_NE(text.find("Ccap15 0x"), std::string::npos) << text;
    EXPECT_NE(text.find("HTONLY"), std::string::npos) << text;
    EXPECT_NE(text.find("style 0x40 (HT)"), std::string::npos) << text;
}

/**
 * CAP (A.5.2 of 15444-1 as amended by 15444-15) and Rsiz variants of an HT
 * codestream that decoders have treated differently: the code-block style
 * (0x40, 15444-15 A.2) alone says which block coder runs, so a stream
 * without CAP, with Rsiz 0, with a Part-2 Pcap bit and its Ccap word beside
 * Part 15's, or with Ccap15 flags that disagree with the coding (HTIRV on a
 * reversible stream, MIXED and MULTIHT, all zero) decodes to the same samples.
 * A Pcap that asks for more Ccap words than Lcap holds is refused.
 */
std::vector<std::pair<std::string, std::vector<uint8_t>>> cap_variants(const std::vector<uint8_t> &cs)
{
    size_t at = 0;
    for (const MarkerSegment &m : list_marker_segments(cs.data(), cs.size()))
        if (m.marker == kCAP) at = static_cast<size_t>(m.offset);
    std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
    if (at == 0) return out;
    const size_t lcap = size_t{cs[at + 2]} << 8 | cs[at + 3];
    EXPECT_EQ(lcap, 8u);  // Pcap (Part 15 only) and Ccap15
    const std::vector<uint8_t> head(cs.begin(), cs.begin() + static_cast<std::ptrdiff_t>(at));
    const std::vector<uint8_t> tail(cs.begin() + static_cast<std::ptrdiff_t>(at + 2 + lcap), cs.end());
    const uint8_t ccap[2] = {cs[at + 8], cs[at + 9]};
    auto with_cap = [&](const std::vector<uint8_t> &cap) {
        std::vector<uint8_t> v = head;
        v.insert(v.end(), cap.begin(), cap.end());
        v.insert(v.end(), tail.begin(), tail.end());
        return v;
    };
    std::vector<uint8_t> v = with_cap({});
    out.emplace_back("no CAP", v);
    v[6] = v[7] = 0;  // SIZ's Rsiz
    out.emplace_back("no CAP, Rsiz 0", v);
    v = cs;
    v[6] = v[7] = 0;
    out.emplace_back("Rsiz 0", v);
    // Pcap bits 2 (Part 2) and 15, Ccap words in the order of their bits.
    out.emplace_back("Pcap Part 2 and 15",
                     with_cap({0xFF, 0x50, 0x00, 0x0A, 0x40, 0x02, 0x00, 0x00, 0x00, 0x00, ccap[0], ccap[1]}));
    v = cs;
    v[at + 9] |= 0x20;  // HTIRV
    out.emplace_back("Ccap15 HTIRV", v);
    v = cs;
    v[at + 8] |= 0xE0;  // MIXED, MULTIHT
    out.emplace_back("Ccap15 MIXED MULTIHT", v);
    v = cs;
    v[at + 8] = v[at + 9] = 0;
    out.emplace_back("Ccap15 0", v);
    return out;
}

std::vector<uint8_t> cap_short_of_ccap(const std::vector<uint8_t> &cs)
{
    std::vector<uint8_t> v = cs;
    for (const MarkerSegment &m : list_marker_segments(cs.data(), cs.size()))
        if (m.marker == kCAP) v[static_cast<size_t>(m.offset) + 5] |= 0x40;  // Pcap bit 18, no Ccap word for it
    return v;
}

TEST(HtDecode, CapAndRsizVariants)
{
    for (const char *name : {"o_gray8_rev.j2c", "g_gray16_rev.j2k"}) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        const auto variants = cap_variants(cs);
        ASSERT_EQ(variants.size(), 7u) << name;
        for (const auto &v : variants) {
            SCOPED_TRACE(std::string(name) + ": " + v.first);
            check_against_reference(name, decode(v.second, J2KC_BACKEND_CPU));
        }
        const Decoded bad = decode(cap_short_of_ccap(cs), J2KC_BACKEND_CPU);
        EXPECT_EQ(bad.status, J2KC_ERR_INVALID_DATA) << name;
    }
}

TEST(GpuHtDecode, CapAndRsizVariantsMatchReference)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (const char *name : {"o_gray8_rev.j2c", "g_gray16_rev.j2k"}) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        for (const auto &v : cap_variants(cs)) {
            SCOPED_TRACE(std::string(name) + ": " + v.first);
            check_against_reference(name, decode(v.second, J2KC_BACKEND_CUDA, 1));
        }
        EXPECT_EQ(decode(cap_short_of_ccap(cs), J2KC_BACKEND_CUDA, 1).status, J2KC_ERR_INVALID_DATA) << name;
    }
}

/**
 * The Part-1 mode bits of the code-block style beside the HT bit (0x40):
 * BYPASS, RESET, RESTART, ERTERM and SEGMARK say nothing of HT code-blocks
 * (of the six, only the vertically causal bit applies to them, 15444-15
 * Annex A); an HT set is one cleanup segment and at most one refinement
 * segment whatever they say (15444-15 clause 7), so setting them leaves the
 * samples alone (one pass, SigProp and MagRef, placeholder passes, a set over
 * layers, tiles); OpenJPEG 2.5 decodes the one-pass and the tiled ones with
 * the bits set as j2kc does (it refuses the placeholder and layered ones
 * either way). The COD segments are all in the main header here.
 */
std::vector<uint8_t> with_style_bits(const std::vector<uint8_t> &cs, uint8_t bits)
{
    std::vector<uint8_t> v = cs;
    size_t cods = 0;
    for (const MarkerSegment &m : list_marker_segments(cs.data(), cs.size())) {
        EXPECT_NE(m.marker, kCOC);
        if (m.marker != kCOD) continue;
        // Lcod, Scod, SGcod (4), levels, xcb, ycb, style
        v[static_cast<size_t>(m.offset) + 2 + 2 + 1 + 4 + 3] |= bits;
        ++cods;
    }
    EXPECT_EQ(cods, 1u);
    return v;
}

const char *const kStyleStreams[] = {"o_gray8_rev.j2c", "r_refine_32x20.j2c", "r_placeholders_24x24.j2c",
                                     "r_layers_31x9.j2c", "g_rgb8_rev_tiles.j2k"};
const uint8_t kPart1ModeBits[] = {0x01, 0x02, 0x04, 0x10, 0x20, 0x37};

TEST(HtDecode, PartOneModeBitsBesideHtAreIgnored)
{
    for (const char *name : kStyleStreams) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        ASSERT_FALSE(cs.empty()) << name;
        for (uint8_t bits : kPart1ModeBits) {
            SCOPED_TRACE(std::string(name) + " style bits " + std::to_string(bits));
            check_against_reference(name, decode(with_style_bits(cs, bits), J2KC_BACKEND_CPU));
        }
    }
}

/**
 * The vertically causal bit (0x08) changes the SigProp pass's neighbourhood
 * only (15444-15 clause 7.4); the cleanup pass's quad contexts do not see
 * it, so streams of cleanup passes alone (code-blocks of 64x64, 4x1024,
 * 1024x4, 8x64) decode to the same samples with it set, as ojph_expand 0.9
 * decodes them. On SigProp it matters: r_causal_rows_16x12 (significant
 * samples only in the first row of stripes 1 and 2) decodes to other samples
 * without it, since the last row of the stripe above then sees its
 * significant neighbours below.
 */
const char *const kCleanupOnlyStreams[] = {"o_gray8_rev.j2c", "o_wide8_4x1024.j2c", "o_tall8_1024x4.j2c",
                                           "g_gray16_rev.j2k"};

TEST(HtDecode, CausalBitLeavesCleanupPassesAlone)
{
    for (const char *name : kCleanupOnlyStreams) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        ASSERT_FALSE(cs.empty()) << name;
        check_against_reference(name, decode(with_style_bits(cs, 0x08), J2KC_BACKEND_CPU));
    }
    std::vector<uint8_t> cs = read_file(data_path("r_causal_rows_16x12.j2c"));
    ASSERT_FALSE(cs.empty());
    const Decoded causal = decode(cs, J2KC_BACKEND_CPU);
    check_against_reference("r_causal_rows_16x12.j2c", causal);
    for (const MarkerSegment &m : list_marker_segments(cs.data(), cs.size()))
        if (m.marker == kCOD) cs[static_cast<size_t>(m.offset) + 12] &= static_cast<uint8_t>(~0x08);
    const Decoded plain = decode(cs, J2KC_BACKEND_CPU);
    ASSERT_EQ(plain.status, J2KC_OK);
    ASSERT_EQ(plain.planes.size(), 1u);
    EXPECT_NE(plain.planes[0], causal.planes[0]) << "the causal bit changed nothing in SigProp";
}

TEST(GpuHtDecode, PartOneModeBitsBesideHtMatchReference)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (const char *name : kStyleStreams) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        for (uint8_t bits : kPart1ModeBits) {
            SCOPED_TRACE(std::string(name) + " style bits " + std::to_string(bits));
            check_against_reference(name, decode(with_style_bits(cs, bits), J2KC_BACKEND_CUDA, 1));
        }
    }
}

TEST(GpuHtDecode, CausalBitLeavesCleanupPassesAlone)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    for (const char *name : kCleanupOnlyStreams)
        check_against_reference(name, decode(with_style_bits(read_file(data_path(name)), 0x08), J2KC_BACKEND_CUDA, 1));
}

/** A JPH file (brand 'jph ', ISO/IEC 15444-15 Annex D) is a JP2-like file the decoder takes as it is. */
TEST(HtDecode, JphFile)
{
    const std::vector<uint8_t> f = read_file(data_path("g_rgb8_rev.jph"));
    const Jp2File jph = parse_jp2(f.data(), f.size());
    EXPECT_EQ(jph.brand, jp2_box::kBrandJph);
    EXPECT_TRUE(jph.warnings.empty()) << jph.warnings[0];
    check_against_reference("g_rgb8_rev.jph", decode(f, J2KC_BACKEND_CPU));
}

/**
 * A JPH file may say its colour by METH 5 (15444-15 Annex D: colour primaries,
 * transfer characteristics, matrix coefficients and range of ITU-T H.273), as
 * encoders of HTJ2K for video write it: the codestream decodes the same.
 */
TEST(HtDecode, JphFileWithParameterisedColour)
{
    const std::vector<uint8_t> f = read_file(data_path("g_rgb8_rev.jph"));
    ASSERT_GE(f.size(), 77u);
    // signature (12), ftyp (20), jp2h at 32 holding ihdr (22) and an enumerated colr (15) at 62
    ASSERT_EQ(std::string(f.begin() + 36, f.begin() + 40), "jp2h");
    ASSERT_EQ(std::string(f.begin() + 66, f.begin() + 70), "colr");
    ASSERT_EQ(f[70], 1);  // METH 1
    const uint8_t colr[] = {0, 0, 0, 18, 'c', 'o', 'l', 'r', 5,
                            0, 0, 0, 1,  0,   13,  0,   0,   0x80};  // BT.709, sRGB, RGB, full
    std::vector<uint8_t> g(f.begin(), f.begin() + 62);
    g.insert(g.end(), std::begin(colr), std::end(colr));
    g.insert(g.end(), f.begin() + 77, f.end());
    const uint32_t jp2h = 8 + 22 + sizeof(colr);
    g[32] = uint8_t(jp2h >> 24), g[33] = uint8_t(jp2h >> 16), g[34] = uint8_t(jp2h >> 8), g[35] = uint8_t(jp2h);
    EXPECT_EQ(parse_jp2(g.data(), g.size()).brand, jp2_box::kBrandJph);
    check_against_reference("g_rgb8_rev.jph", decode(g, J2KC_BACKEND_CPU));
}

/** Reduced resolutions and fewer layers decode too, with the same values on both paths of Tier-1. */
TEST(HtDecode, ReduceAndLayers)
{
    for (const std::string &name : stream_names()) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        for (int reduce : {1, 2}) {
            const Decoded d = decode(cs, J2KC_BACKEND_CPU, 0, reduce);
            EXPECT_TRUE(d.status == J2KC_OK || d.status == J2KC_ERR_UNSUPPORTED) << name << " reduce " << reduce;
        }
        const Decoded one = decode(cs, J2KC_BACKEND_CPU, 0, 0, 1);
        EXPECT_EQ(one.status, J2KC_OK) << name;
    }
}

// ------------------------------------------------------------ refinement passes, placeholders, layers

/** r_layers_31x9: the cleanup in layer 0, SigProp in layer 1, MagRef in layer 2; every prefix of
 *  layers decodes, and each added pass moves a sample by at most its plane's weight. */
TEST(HtRefinement, SetOverLayersTruncates)
{
    const std::vector<uint8_t> cs = read_file(data_path("r_layers_31x9.j2c"));
    const Decoded all = decode(cs, J2KC_BACKEND_CPU);
    check_against_reference("r_layers_31x9.j2c", all);
    const Decoded two = decode(cs, J2KC_BACKEND_CPU, 0, 0, 2), one = decode(cs, J2KC_BACKEND_CPU, 0, 0, 1);
    ASSERT_EQ(two.status, J2KC_OK);
    ASSERT_EQ(one.status, J2KC_OK);
    size_t refined = 0, propagated = 0;
    for (size_t i = 0; i < all.planes[0].size(); ++i) {
        // Reversible: a plane-1 cleanup value stands for 2 mu (+1 for the half plane it leaves).
        EXPECT_LE(std::abs(all.planes[0][i] - two.planes[0][i]), 1) << i;
        EXPECT_LE(std::abs(two.planes[0][i] - one.planes[0][i]), 1) << i;
        refined += all.planes[0][i] != two.planes[0][i];
        propagated += two.planes[0][i] != one.planes[0][i];
    }
    EXPECT_GT(refined, 10u);
    EXPECT_GT(propagated, 10u);
}

/** The codewords of the one code-block of a stream (its first tile). */
struct OneBlock {
    std::vector<uint8_t> bytes;
    std::vector<CodewordSegment> segments;
    uint32_t width = 0, height = 0;
    Tier1DecodeParams params;
};

OneBlock one_block(const std::string &name)
{
    OneBlock b;
    const std::vector<uint8_t> file = read_file(data_path(name));
    const Codestream cs = parse_codestream(file.data(), file.size());
    TileBlocks blocks;
    TileCoefficients planes;
    prepare_tile(cs, cs.tiles[0], TileDecodeOptions{}, blocks, planes);
    EXPECT_EQ(blocks.codewords.size(), 1u);
    const CodeBlockCodewords &cw = blocks.codewords[0];
    for (const CodeBlockChunk &c : cw.chunks) b.bytes.insert(b.bytes.end(), c.data, c.data + c.length);
    b.segments.assign(cw.segments.begin(), cw.segments.end());
    b.width = blocks.layout->code_blocks[0].rect.width();
    b.height = blocks.layout->code_blocks[0].rect.height();
    b.params.style = cs.main.cod->component.cblk_style;
    b.params.num_bitplanes = 9;  // 9-bit samples, no levels, one guard bit
    b.params.zero_bitplanes = cw.zero_bitplanes;
    return b;
}

std::vector<int32_t> decode_one(const OneBlock &b)
{
    Tier1Decoder dec;
    std::vector<int32_t> out(size_t{b.width} * b.height, 0x5555);
    dec.decode(b.bytes.data(), b.segments.data(), b.segments.size(), b.width, b.height, b.params, out.data(), b.width);
    return out;
}

TEST(HtRefinement, TierTwoSegmentsOfPlaceholdersAndLayers)
{
    // 3 placeholder passes, then the cleanup: one segment of 4 passes, then SigProp + MagRef.
    const OneBlock ph = one_block("r_placeholders_24x24.j2c");
    ASSERT_EQ(ph.segments.size(), 2u);
    EXPECT_EQ(ph.segments[0].passes, 4u);
    EXPECT_EQ(ph.segments[1].passes, 2u);
    // Over three layers: the cleanup's segment, and SigProp and MagRef continuing one segment.
    const OneBlock ly = one_block("r_layers_31x9.j2c");
    ASSERT_EQ(ly.segments.size(), 2u);
    EXPECT_EQ(ly.segments[0].passes, 1u);
    EXPECT_EQ(ly.segments[1].passes, 2u);
}

/** Several HT sets (MULTIHT): only the last is decoded, whatever the earlier sets hold. */
TEST(HtRefinement, EarlierHtSetsAreSkipped)
{
    const OneBlock b = one_block("r_refine_32x20.j2c");
    ASSERT_EQ(b.segments.size(), 2u);
    const std::vector<int32_t> want = decode_one(b);
    std::mt19937 rng(5);
    for (int sets = 1; sets <= 3; ++sets) {
        OneBlock m = b;
        m.bytes.clear();
        m.segments.clear();
        for (int s = 0; s < sets; ++s) {
            const uint32_t a = 2 + rng() % 40, r = rng() % 20;
            for (uint32_t i = 0; i < a + r; ++i) m.bytes.push_back(uint8_t(rng()));
            m.segments.push_back({a, 1});
            m.segments.push_back({r, 2});
        }
        m.bytes.insert(m.bytes.end(), b.bytes.begin(), b.bytes.end());
        m.segments.insert(m.segments.end(), b.segments.begin(), b.segments.end());
        // Each earlier set is a plane above: P drops by one per set to keep the cleanup's plane.
        m.params.zero_bitplanes = static_cast<uint8_t>(b.params.zero_bitplanes - sets);
        EXPECT_TRUE(decode_one(m) == want) << sets << " earlier sets";
    }
}

// ------------------------------------------------------------ the job table (the GPU's code, on the host)

/** append_tier1_jobs + t1_decode_any_job give the planes and corrupt counts decode_code_block does. */
void check_job_table(const std::vector<uint8_t> &file, size_t &blocks_seen, size_t &corrupt_seen)
{
    Codestream cs;
    try {
        cs = parse_codestream(file.data(), file.size());
    } catch (const Error &) {
        return;
    }
    for (uint32_t reduce : {0u, 1u}) {
        for (const Tile &tile : cs.tiles) {
            JobTableRun run;
            if (!decode_tile_both_ways(cs, tile, TileDecodeOptions{reduce, 0}, t1_decode_any_job, run)) continue;
            EXPECT_EQ(run.corrupt_jobs, run.corrupt_cpu);
            ASSERT_TRUE(run.cpu == run.jobs) << "tile " << tile.index << " reduce " << reduce;
            EXPECT_EQ(run.cpu.back(), JobTableRun::kSentinel);
            blocks_seen += run.ht_jobs;
            corrupt_seen += run.corrupt_cpu;
        }
    }
}

/** Flips bytes of the packet data (after the first SOD) at seeded positions. */
std::vector<uint8_t> garble(std::vector<uint8_t> v, uint32_t seed, int flips)
{
    size_t sod = 0;
    for (size_t i = 0; i + 1 < v.size(); ++i)
        if (v[i] == 0xFF && v[i + 1] == 0x93) {
            sod = i + 2;
            break;
        }
    if (sod == 0 || sod >= v.size()) return v;
    std::mt19937 rng(seed);
    for (int k = 0; k < flips; ++k) v[sod + rng() % (v.size() - sod)] ^= static_cast<uint8_t>(1u << (rng() % 8));
    return v;
}

TEST(HtJobTable, GatheredJobsMatchDecodeCodeBlock)
{
    size_t blocks = 0, corrupt = 0;
    for (const std::string &name : stream_names()) {
        const std::vector<uint8_t> cs = read_file(data_path(name));
        if (cs.size() < 2 || cs[0] != 0xFF) continue;  // raw codestreams
        check_job_table(cs, blocks, corrupt);
        for (uint32_t seed = 1; seed <= 3; ++seed) check_job_table(garble(cs, seed, 6), blocks, corrupt);
    }
    EXPECT_GT(blocks, 200u);
    EXPECT_GT(corrupt, 0u);
}

// ------------------------------------------------------------ the GPU backend

void check_gpu_matches_cpu(int tier1_on_gpu)
{
    size_t compared = 0;
    for (const std::string &name : stream_names()) {
        const std::vector<uint8_t> clean = read_file(data_path(name));
        for (uint32_t variant = 0; variant < 3; ++variant) {
            const std::vector<uint8_t> cs = variant ? garble(clean, variant, 4) : clean;
            for (int reduce : {0, 1}) {
                const Decoded cpu = decode(cs, J2KC_BACKEND_CPU, 0, reduce);
                const Decoded gpu = decode(cs, J2KC_BACKEND_CUDA, tier1_on_gpu, reduce);
                ASSERT_EQ(gpu.status, cpu.status) << name << " variant " << variant << " reduce " << reduce;
                if (cpu.status != J2KC_OK) continue;
                EXPECT_TRUE(gpu.planes == cpu.planes) << name << " variant " << variant << " reduce " << reduce;
                ++compared;
            }
        }
        if (tier1_on_gpu) check_against_reference(name, decode(clean, J2KC_BACKEND_CUDA, tier1_on_gpu));
    }
    EXPECT_GE(compared, 60u);
}

TEST(GpuHtDecode, GpuTier1MatchesCpuBackend)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_gpu_matches_cpu(1);
}

TEST(GpuHtDecode, CpuTier1OnCudaBackendMatchesCpuBackend)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_gpu_matches_cpu(0);
}

/**
 * A whole 2K frame of HT code-blocks (written by this library's CPU encoder,
 * lossless, at a fixed step, and under a byte budget, whose blocks mostly
 * end in SigProp and MagRef passes): megabytes of codewords, so the HT
 * kernel runs long after the upload starts and beside the other frames'
 * work, and every warp's group of blocks refines at once; the GPU's pixels
 * must still be the CPU backend's.
 */
TEST(GpuHtDecode, LargeFramesMatchCpuBackend)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const j2kc_test::Planes16 img = j2kc_test::synthetic_frame(2048, 1080, 3, 12, 11, 0.02);
    for (const char *mode : {"lossless", "fixed step", "budget"}) {
        j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
        cfg.block_coder = J2KC_BLOCK_CODER_HT;
        cfg.lossless = mode[0] == 'l';
        cfg.quality = 2.0;
        if (mode[0] == 'b') cfg.frame_bytes = 1600000;  // about 2 bits a sample
        const std::vector<uint8_t> cs = j2kc_test::encode_stream(img.image, cfg);
        ASSERT_FALSE(cs.empty());
        const Decoded cpu = decode(cs, J2KC_BACKEND_CPU);
        ASSERT_EQ(cpu.status, J2KC_OK);
        for (int round = 0; round < 3; ++round) {
            const Decoded gpu = decode(cs, J2KC_BACKEND_CUDA, 1);
            ASSERT_EQ(gpu.status, J2KC_OK);
            EXPECT_TRUE(gpu.planes == cpu.planes) << mode << " round " << round;
        }
    }
}

/**
 * Not a check: with J2KC_HT_BENCH=FILE[,FILE...] set, frames a second of the
 * CPU backend and of the CUDA backend (Tier-1 on the GPU and on the CPU) on
 * those HT files; skipped otherwise.
 */
TEST(HtBench, DecodeThroughput)
{
    const char *list = std::getenv("J2KC_HT_BENCH");
    if (!list) GTEST_SKIP() << "set J2KC_HT_BENCH=FILE[,FILE...] to time HT decoding";
    std::stringstream files(list);
    std::string path;
    while (std::getline(files, path, ',')) {
        const std::vector<uint8_t> cs = read_file(path);
        ASSERT_FALSE(cs.empty()) << path;
        struct Run {
            const char *name;
            j2kc_backend backend;
            int tier1_on_gpu;
        };
        for (const Run &r : {Run{"cpu", J2KC_BACKEND_CPU, 0}, Run{"cuda, Tier-1 on the GPU", J2KC_BACKEND_CUDA, 1},
                             Run{"cuda, Tier-1 on the CPU", J2KC_BACKEND_CUDA, 0}}) {
            if (r.backend == J2KC_BACKEND_CUDA && !have_gpu()) continue;
            j2kc_decoder_config cfg;
            j2kc_decoder_config_default(&cfg);
            cfg.backend = r.backend;
            cfg.log = quiet;
            cfg.threads = 0;
            cfg.tier1_on_gpu = r.tier1_on_gpu;
            j2kc_decoder *dec = nullptr;
            ASSERT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
            std::vector<j2kc_component_info> ci(16);
            j2kc_stream_info info{};
            info.struct_size = sizeof(info);
            info.components = ci.data();
            info.components_capacity = 16;
            ASSERT_EQ(j2kc_decoder_parse(dec, cs.data(), cs.size(), &info), J2KC_OK);
            std::vector<std::vector<uint16_t>> planes(info.num_components);
            std::vector<j2kc_component> comps(info.num_components);
            for (uint32_t c = 0; c < info.num_components; ++c) {
                planes[c].resize(size_t{ci[c].width} * ci[c].height);
                comps[c] = j2kc_test::decoded_component(ci[c], planes[c].data(), 2);
            }
            j2kc_image image = j2kc_test::image_view(comps, info.width, info.height);
            ASSERT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &image), J2KC_OK);  // warm-up
            const int frames = 10;
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < frames; ++i) ASSERT_EQ(j2kc_decode(dec, cs.data(), cs.size(), &image), J2KC_OK);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            j2kc_stage_times t{};
            j2kc_decoder_stage_times(dec, &t);
            std::printf(
                "%s: %ux%u, %zu bytes, %s: %.1f fps (%.2f ms a frame; stage times a frame: tier2 %.2f, "
                "tier1 %.2f, dwt %.2f)\n",
                path.c_str(), info.width, info.height, cs.size(), r.name, frames / s, 1e3 * s / frames,
                t.tier2 / (frames + 1), t.tier1 / (frames + 1), t.dwt / (frames + 1));
            j2kc_decoder_free(&dec);
        }
    }
}

// ------------------------------------------------------------ hostile HT data

/** One HT block through Tier1Decoder; true when it decoded, false on INVALID_DATA. */
bool decode_block(const std::vector<uint8_t> &bytes, const std::vector<CodewordSegment> &segs, uint32_t w, uint32_t h,
                  uint8_t planes, uint8_t zero_bitplanes, std::vector<int32_t> &out, uint8_t extra_style = 0)
{
    Tier1Decoder dec;
    Tier1DecodeParams p;
    p.style = static_cast<uint8_t>(cblk_style::kHighThroughput | extra_style);
    p.num_bitplanes = planes;
    p.zero_bitplanes = zero_bitplanes;
    out.assign(size_t{w} * h, 0x7777);
    try {
        dec.decode(bytes.data(), segs.data(), segs.size(), w, h, p, out.data(), w);
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), J2KC_ERR_INVALID_DATA);
        return false;
    }
    return true;
}

/** The job path on the same block: the same verdict and values. */
void check_job_agrees(const std::vector<uint8_t> &bytes, const std::vector<CodewordSegment> &segs, uint32_t w,
                      uint32_t h, uint8_t planes, uint8_t zero_bitplanes, uint8_t extra_style = 0)
{
    std::vector<int32_t> ref;
    const bool ok = decode_block(bytes, segs, w, h, planes, zero_bitplanes, ref, extra_style);
    T1DecodeJob job{};
    job.data_offset = 0;
    job.out_offset = 1;
    job.data_length = static_cast<uint32_t>(bytes.size());
    job.segment_offset = 0;
    job.num_segments = static_cast<uint32_t>(segs.size());
    job.out_stride = w + 3;
    job.width = static_cast<uint16_t>(w);
    job.height = static_cast<uint16_t>(h);
    job.style = static_cast<uint8_t>(cblk_style::kHighThroughput | extra_style);
    job.num_bitplanes = planes;
    job.zero_bitplanes = zero_bitplanes;
    std::vector<int32_t> out(size_t{h} * job.out_stride + 2, 0x3C3C3C3C);
    std::vector<uint32_t> scratch(t1_decode_job_scratch_words(w, h));
    const uint8_t st = t1_decode_any_job(job, bytes.data(), segs.data(), out.data(), scratch.data(), scratch.size());
    EXPECT_EQ(st == kT1JobOk, ok);
    for (uint32_t y = 0; y < h; ++y)
        for (uint32_t x = 0; x < w; ++x)
            ASSERT_EQ(out[1 + size_t{y} * job.out_stride + x], ok ? ref[size_t{y} * w + x] : 0) << x << "," << y;
    EXPECT_EQ(out[0], 0x3C3C3C3C);
    EXPECT_EQ(out.back(), 0x3C3C3C3C);
}

TEST(HtHostile, BadCleanupSegments)
{
    std::vector<int32_t> out;
    // Shorter than two bytes.
    EXPECT_FALSE(decode_block({0x12}, {{1, 1}}, 8, 8, 8, 0, out));
    EXPECT_FALSE(decode_block({}, {{0, 1}}, 8, 8, 8, 0, out));
    // Scup (last byte << 4 | low nibble of the one before) below 2, above Lcup, above 4079.
    EXPECT_FALSE(decode_block({0x00, 0x00, 0x00, 0x00}, {{4, 1}}, 8, 8, 8, 0, out));
    EXPECT_FALSE(decode_block({0x00, 0x00, 0x03, 0x01}, {{4, 1}}, 8, 8, 8, 0, out));  // Scup 19 > 4
    std::vector<uint8_t> big(5000, 0);
    big[4998] = 0x0F;
    big[4999] = 0xFF;  // Scup 4095
    EXPECT_FALSE(decode_block(big, {{5000, 1}}, 8, 8, 8, 0, out));
    // Zero bit-planes that leave no plane; placeholders that do the same.
    EXPECT_FALSE(decode_block({0x00, 0x00, 0x02, 0x00}, {{4, 1}}, 8, 8, 8, 8, out));
    EXPECT_FALSE(decode_block({0x00, 0x00, 0x02, 0x00}, {{0, 3}, {4, 1}}, 8, 8, 8, 7, out));
    // Segments that do not form an HT set: the cleanup pass inside a longer segment.
    EXPECT_FALSE(decode_block({0x00, 0x00, 0x02, 0x00}, {{4, 2}}, 8, 8, 8, 0, out));
    EXPECT_FALSE(decode_block({0x00, 0x00, 0x02, 0x00}, {{4, 1}, {0, 1}, {0, 1}}, 8, 8, 8, 0, out));
    // MEL bits all ones (runs of insignificant quads) and nothing else: an all-zero block.
    EXPECT_TRUE(decode_block({0xFF, 0x00, 0x04, 0x00}, {{4, 1}}, 8, 8, 8, 0, out));
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](int32_t v) { return v == 0; }));
    EXPECT_TRUE(decode_block({0x00, 0x00, 0x02, 0x00}, {{4, 1}}, 8, 8, 8, 0, out));
    for (const auto &bytes : {std::vector<uint8_t>{0x12}, std::vector<uint8_t>{0x00, 0x00, 0x03, 0x01},
                              std::vector<uint8_t>{0x00, 0x00, 0x02, 0x00}})
        check_job_agrees(bytes, {{uint32_t(bytes.size()), 1}}, 8, 8, 8, 0);
}

/** A block of random bytes as cleanup and refinement segments, of a random shape and plane count. */
struct RandomHtBlock {
    std::vector<uint8_t> bytes;
    std::vector<CodewordSegment> segs;
    uint32_t w = 0, h = 0;
    uint8_t planes = 0, zbp = 0, style = 0;

    explicit RandomHtBlock(std::mt19937 &rng)
    {
        const uint32_t sides[] = {1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 64, 128, 1024};
        w = sides[rng() % 13];
        h = sides[rng() % 13];
        while (w * h > 4096) (w > h ? w : h) /= 2;
        bytes.resize(rng() % 300);
        const int kind = int(rng() % 3);
        for (auto &b : bytes) b = kind == 0 ? uint8_t(rng()) : kind == 1 ? uint8_t(rng() % 2 ? 0xFF : rng()) : 0;
        // Plausible Scup now and then.
        if (bytes.size() >= 4 && rng() % 2) {
            const uint32_t scup = 2 + rng() % std::min<uint32_t>(uint32_t(bytes.size()) - 1, 200);
            bytes[bytes.size() - 1] = uint8_t(scup >> 4);
            bytes[bytes.size() - 2] = uint8_t((bytes[bytes.size() - 2] & 0xF0) | (scup & 0xF));
        }
        const uint32_t lcup = bytes.empty() ? 0 : uint32_t(rng() % (bytes.size() + 1));
        const uint32_t passes = 1 + rng() % 7;
        if (passes <= 3) {
            segs.push_back({lcup, 1});
            if (passes > 1) segs.push_back({uint32_t(bytes.size()) - lcup, passes - 1});
        } else {
            segs.push_back({lcup, passes});
        }
        planes = uint8_t(1 + rng() % 30);
        zbp = uint8_t(rng() % planes);
        style = rng() % 2 ? cblk_style::kVerticallyCausal : 0;
    }
};

/** Random bytes as cleanup and refinement segments of every block shape: no crash, no read
 *  outside the bytes (ASan), the same verdict and values on both paths. */
TEST(HtHostile, RandomSegmentsAnyShape)
{
    std::mt19937 rng(2024);
    size_t ok = 0, bad = 0;
    for (int iter = 0; iter < 600; ++iter) {
        const RandomHtBlock b(rng);
        std::vector<int32_t> out;
        (decode_block(b.bytes, b.segs, b.w, b.h, b.planes, b.zbp, out, b.style) ? ok : bad)++;
        check_job_agrees(b.bytes, b.segs, b.w, b.h, b.planes, b.zbp, b.style);
    }
    EXPECT_GT(ok, 0u);
    EXPECT_GT(bad, 50u);
}

/** A device copy of a vector, in an allocation of its exact size (so that compute-sanitizer sees a read past it). */
template <class T>
T *device_copy(const std::vector<T> &v)
{
    void *p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(v.size() * sizeof(T), 1)), cudaSuccess);
    if (!v.empty()) {
        EXPECT_EQ(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    }
    return static_cast<T *>(p);
}

/**
 * The CUDA kernel (a warp a block, ht_decode.cu) on random blocks, each
 * alone with its bytes in an allocation of their size: the host job path's
 * status and values, and nothing written outside the block.
 */
TEST(GpuHtHostile, RandomSegmentsMatchHostJobs)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    std::mt19937 rng(2025);
    size_t ok = 0, bad = 0;
    for (int iter = 0; iter < 600; ++iter) {
        const RandomHtBlock b(rng);
        T1DecodeJob job{};
        job.out_offset = 1;
        job.data_length = static_cast<uint32_t>(b.bytes.size());
        job.num_segments = static_cast<uint32_t>(b.segs.size());
        job.out_stride = b.w + 3;
        job.width = static_cast<uint16_t>(b.w);
        job.height = static_cast<uint16_t>(b.h);
        job.style = static_cast<uint8_t>(cblk_style::kHighThroughput | b.style);
        job.num_bitplanes = b.planes;
        job.zero_bitplanes = b.zbp;
        std::vector<int32_t> host(size_t{b.h} * job.out_stride + 2, 0x3C3C3C3C);
        const std::vector<int32_t> start = host;
        std::vector<uint32_t> scratch(t1_decode_job_scratch_words(b.w, b.h));
        const uint8_t host_status =
            t1_decode_any_job(job, b.bytes.data(), b.segs.data(), host.data(), scratch.data(), scratch.size());
        (host_status == kT1JobOk ? ok : bad)++;

        uint8_t *bytes = device_copy(b.bytes);
        CodewordSegment *segs = device_copy(b.segs);
        T1DecodeJob *jobs = device_copy(std::vector<T1DecodeJob>{job});
        int32_t *out = device_copy(start);
        uint8_t *status = device_copy(std::vector<uint8_t>{0xEE});
        ht_decode_gpu(jobs, 1, bytes, segs, out, status, nullptr);
        std::vector<int32_t> gpu(host.size());
        uint8_t gpu_status = 0xEE;
        ASSERT_EQ(cudaMemcpy(gpu.data(), out, gpu.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(&gpu_status, status, 1, cudaMemcpyDeviceToHost), cudaSuccess);
        for (void *p : {static_cast<void *>(bytes), static_cast<void *>(segs), static_cast<void *>(jobs),
                        static_cast<void *>(out), static_cast<void *>(status)})
            cudaFree(p);
        ASSERT_EQ(gpu_status, host_status) << "block " << iter << ", " << b.w << "x" << b.h;
        ASSERT_TRUE(gpu == host) << "block " << iter << ", " << b.w << "x" << b.h;
    }
    EXPECT_GT(ok, 0u);
    EXPECT_GT(bad, 50u);
}

/**
 * A block whose cleanup pass (the encoder's, over random indices of a given
 * density) is read `extra_planes` planes up, so that SigProp and MagRef
 * follow it at the plane below, over a refinement segment of random bytes:
 * any bits are a valid refinement, and random ones make SigProp's members
 * spread along the stripes.
 */
struct RefinedHtBlock {
    std::vector<uint8_t> bytes;
    std::vector<CodewordSegment> segs;
    uint8_t planes = 0, zbp = 0;

    RefinedHtBlock(std::mt19937 &rng, uint32_t w, uint32_t h, double density, uint32_t refinement_passes)
    {
        constexpr uint8_t kCoded = 6;
        std::vector<int32_t> coeffs(size_t{w} * h, 0);
        std::bernoulli_distribution significant(density);
        for (int32_t &c : coeffs)
            if (significant(rng)) c = int32_t(1 + rng() % ((1u << kCoded) - 1)) * (rng() % 2 ? 1 : -1);
        coeffs[rng() % coeffs.size()] = 1;  // never an empty block
        EncodedCodeBlock enc;
        encode_ht_code_block(coeffs.data(), w, w, h, kCoded, false, 0, enc);
        bytes = enc.data;
        segs.push_back({uint32_t(bytes.size()), 1});
        const uint32_t lref = 1 + rng() % (w * h / 4 + 4);
        const bool stuffing = rng() % 2;  // bytes that stuff the next one's bit, forward or backward
        const uint8_t stuffers[] = {0xFF, 0x7F, 0x8F, 0x90, 0xFE};
        for (uint32_t i = 0; i < lref; ++i)
            bytes.push_back(stuffing && rng() % 2 ? stuffers[rng() % 5] : uint8_t(rng()));
        segs.push_back({lref, refinement_passes});
        const uint8_t extra_planes[] = {1, 2, 5};
        planes = uint8_t(kCoded + extra_planes[rng() % 3]);
        zbp = enc.zero_bitplanes;
    }
};

/**
 * The kernel's SigProp and MagRef over the lanes against the host's serial
 * passes: dense and sparse significance, every stripe height, widths across
 * and beyond a warp's 32 columns, 64 x 64, causal mode, SigProp alone and
 * with MagRef; all blocks in one table, each with a margin on its right
 * that must stay untouched.
 */
TEST(GpuHtDecode, RefinementPassesMatchHostJobs)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    const std::pair<uint32_t, uint32_t> shapes[] = {{64, 64},  {32, 32},  {64, 61}, {64, 62},  {64, 63},
                                                    {33, 17},  {5, 7},    {1, 64},  {1024, 4}, {4, 1024},
                                                    {128, 32}, {100, 40}, {37, 9}};
    std::mt19937 rng(77);
    std::vector<uint8_t> bytes;
    std::vector<CodewordSegment> segs;
    std::vector<T1DecodeJob> jobs;
    size_t out_size = 0;
    for (const auto &[w, h] : shapes)
        for (const double density : {0.02, 0.3, 0.9})
            for (const uint8_t causal : {uint8_t{0}, cblk_style::kVerticallyCausal})
                for (const uint32_t passes : {1u, 2u}) {
                    const RefinedHtBlock b(rng, w, h, density, passes);
                    T1DecodeJob job{};
                    job.data_offset = bytes.size();
                    job.out_offset = out_size;
                    job.data_length = static_cast<uint32_t>(b.bytes.size());
                    job.segment_offset = static_cast<uint32_t>(segs.size());
                    job.num_segments = static_cast<uint32_t>(b.segs.size());
                    job.out_stride = w + 2;
                    job.width = static_cast<uint16_t>(w);
                    job.height = static_cast<uint16_t>(h);
                    job.style = static_cast<uint8_t>(cblk_style::kHighThroughput | causal);
                    job.num_bitplanes = b.planes;
                    job.zero_bitplanes = b.zbp;
                    bytes.insert(bytes.end(), b.bytes.begin(), b.bytes.end());
                    segs.insert(segs.end(), b.segs.begin(), b.segs.end());
                    jobs.push_back(job);
                    out_size += size_t{h} * job.out_stride;
                }
    std::vector<int32_t> host(out_size, 0x3C3C3C3C);
    const std::vector<int32_t> start = host;
    std::vector<uint32_t> scratch(t1_decode_job_scratch_words(1024, 1024));
    size_t refined = 0;  // samples the refinement passes changed
    for (const T1DecodeJob &job : jobs) {
        ASSERT_EQ(t1_decode_any_job(job, bytes.data(), segs.data(), host.data(), scratch.data(), scratch.size()),
                  kT1JobOk);
        T1DecodeJob cleanup_only = job;
        cleanup_only.num_segments = 1;
        std::vector<int32_t> cleanup(start);
        t1_decode_any_job(cleanup_only, bytes.data(), segs.data(), cleanup.data(), scratch.data(), scratch.size());
        for (size_t i = job.out_offset; i < job.out_offset + size_t{job.height} * job.out_stride; ++i)
            refined += host[i] != cleanup[i];
    }
    EXPECT_GT(refined, out_size / 8);

    // Warps of kGroup positions, and of one (the group a 64 x 64 block gets in a frame's batch).
    for (const uint32_t max_quads : {0u, 32u * 32u}) {
        uint8_t *d_bytes = device_copy(bytes);
        CodewordSegment *d_segs = device_copy(segs);
        T1DecodeJob *d_jobs = device_copy(jobs);
        int32_t *d_out = device_copy(start);
        uint8_t *d_status = device_copy(std::vector<uint8_t>(jobs.size(), 0xEE));
        ht_decode_gpu_batch(
            tier1_decode_single(d_jobs, static_cast<uint32_t>(jobs.size()), d_bytes, d_segs, d_out, d_status, nullptr),
            nullptr, max_quads);
        std::vector<int32_t> gpu(out_size);
        std::vector<uint8_t> status(jobs.size());
        ASSERT_EQ(cudaMemcpy(gpu.data(), d_out, gpu.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(status.data(), d_status, status.size(), cudaMemcpyDeviceToHost), cudaSuccess);
        for (void *p : {static_cast<void *>(d_bytes), static_cast<void *>(d_segs), static_cast<void *>(d_jobs),
                        static_cast<void *>(d_out), static_cast<void *>(d_status)})
            cudaFree(p);
        for (size_t j = 0; j < jobs.size(); ++j) {
            const T1DecodeJob &job = jobs[j];
            ASSERT_EQ(status[j], kT1JobOk) << "job " << j << ", max_quads " << max_quads;
            for (uint32_t y = 0; y < job.height; ++y)
                for (uint32_t x = 0; x < job.out_stride; ++x) {
                    const size_t i = job.out_offset + size_t{y} * job.out_stride + x;
                    ASSERT_EQ(gpu[i], host[i])
                        << "job " << j << " (" << job.width << "x" << job.height << ", style " << int(job.style)
                        << ") at " << x << "," << y << ", max_quads " << max_quads;
                }
        }
    }
}

/** Cut, garbled and truncated HT streams through the whole decoder: a status, never a crash. */
TEST(HtHostile, DamagedStreams)
{
    size_t decoded = 0;
    // J2KC_HT_FUZZ_ROUNDS=N: more damaged copies of each stream (a longer run under the sanitizers).
    const char *rounds_env = std::getenv("J2KC_HT_FUZZ_ROUNDS");
    const uint32_t rounds = rounds_env ? uint32_t(std::max(1, std::atoi(rounds_env))) : 6;
    for (const std::string &name : stream_names()) {
        const std::vector<uint8_t> clean = read_file(data_path(name));
        for (uint32_t seed = 1; seed <= rounds; ++seed) {
            std::vector<uint8_t> v = garble(clean, seed, int(1 + seed % 7 * 3));
            if (seed % 2 == 0) v.resize(v.size() * (50 + seed % 10 * 5) / 100);
            const Decoded d = decode(v, J2KC_BACKEND_CPU);
            EXPECT_TRUE(d.status == J2KC_OK || d.status == J2KC_ERR_INVALID_DATA || d.status == J2KC_ERR_UNSUPPORTED)
                << name << " seed " << seed << " status " << d.status;
            decoded += d.status == J2KC_OK;
            // Strict decoding refuses what the lenient one passes over, never crashes either.
            const Decoded s = decode(v, J2KC_BACKEND_CPU, 0, 0, 0, 1);
            EXPECT_TRUE(s.status == J2KC_OK || s.status == J2KC_ERR_INVALID_DATA || s.status == J2KC_ERR_UNSUPPORTED)
                << name << " seed " << seed << " strict status " << s.status;
        }
    }
    EXPECT_GT(decoded, 20u);
}

// ------------------------------------------------------------ MIXED mode (HT and Part-1 code-blocks)

/**
 * A code-block's codewords as Tier-2 reads them from a one-tile stream, in
 * the form the packet encoder takes: its bytes back to back and an end for
 * each pass (every pass of a segment ends where the segment ends, which is
 * all a packet header needs while segments go whole into packets).
 */
struct BlockSource {
    std::vector<uint8_t> bytes;
    std::vector<uint32_t> pass_end;
    std::vector<uint8_t> terminated;  ///< per pass, where the block was coded here; else empty
    uint8_t zero_bitplanes = 0;
};

/**
 * A lossless Part-1 block (style 0, one segment) coded again with the Part-1
 * modes `modes`: its quantisation indices read back by Tier1Decoder (every
 * plane decoded, so out = sign * (2|q| + 1)), then encode_code_block. Its
 * passes end at real truncation points, so layers may cut it anywhere.
 */
BlockSource recode_part1(const BlockSource &b, const CodeBlock &cb, BandOrientation orientation, uint8_t modes)
{
    const uint32_t w = cb.rect.width(), h = cb.rect.height();
    const uint32_t passes = static_cast<uint32_t>(b.pass_end.size());
    if (passes == 0) return b;
    Tier1DecodeParams dp;
    dp.orientation = orientation;
    dp.zero_bitplanes = b.zero_bitplanes;
    dp.num_bitplanes = static_cast<uint8_t>(b.zero_bitplanes + (passes + 2) / 3);  // 3 nbp - 2 passes
    std::vector<int32_t> q(size_t{w} * h);
    const CodewordSegment segment{static_cast<uint32_t>(b.bytes.size()), passes};
    Tier1Decoder decoder;
    decoder.decode(b.bytes.data(), &segment, 1, w, h, dp, q.data(), w);
    for (int32_t &v : q) v /= 2;
    EncodedCodeBlock enc;
    encode_code_block(q.data(), w, w, h, Tier1EncodeParams{orientation, modes, dp.num_bitplanes}, enc);
    EXPECT_EQ(enc.zero_bitplanes, b.zero_bitplanes);
    EXPECT_EQ(enc.passes.size(), passes);
    BlockSource out;
    out.bytes = enc.data;
    out.zero_bitplanes = enc.zero_bitplanes;
    for (const PassInfo &pi : enc.passes) {
        out.pass_end.push_back(pi.end);
        out.terminated.push_back(pi.terminated ? 1 : 0);
    }
    return out;
}

std::vector<BlockSource> block_sources(const Codestream &cs, std::shared_ptr<const TileLayout> &layout)
{
    TileBlocks blocks;
    TileCoefficients coefficients;
    prepare_tile(cs, cs.tiles.at(0), TileDecodeOptions{}, blocks, coefficients);
    layout = blocks.layout;
    std::vector<BlockSource> out(blocks.codewords.size());
    for (size_t i = 0; i < out.size(); ++i) {
        const CodeBlockCodewords &cw = blocks.codewords[i];
        for (const CodeBlockChunk &c : cw.chunks) out[i].bytes.insert(out[i].bytes.end(), c.data, c.data + c.length);
        uint32_t end = 0;
        for (const CodewordSegment &seg : cw.segments) {
            end += seg.length;
            out[i].pass_end.insert(out[i].pass_end.end(), seg.passes, end);
        }
        out[i].zero_bitplanes = cw.zero_bitplanes;
    }
    return out;
}

size_t main_marker(const std::vector<uint8_t> &cs, uint16_t marker)
{
    for (const MarkerSegment &m : list_marker_segments(cs.data(), cs.size()))
        if (m.marker == marker) return static_cast<size_t>(m.offset);
    ADD_FAILURE() << "no marker 0x" << std::hex << marker;
    return 0;
}

/** Which coder a code-block of the MIXED stream takes (index in the tile's layout). */
bool mixed_part1(size_t index, const CodeBlock &cb) { return (index * 7 + cb.resolution) % 3 != 0; }

/**
 * A MIXED codestream (code-block style 0xC0 with the Part-1 modes `modes`,
 * Ccap15 MIXED) of `image`: it is encoded losslessly twice with `cfg`'s
 * geometry, once with each block coder, and each code-block's codewords are
 * taken from one of the two (mixed_part1; a Part-1 block coded again with
 * `modes` where they are not 0) and written into new packets by the packet
 * encoder, whose first lengths tell the decoder which coder a block used.
 * With two layers a Part-1 block sends half its passes in the first (no more
 * than its first codeword segment holds) and the rest in the second, and
 * every other HT block waits for the second.
 */
std::vector<uint8_t> mixed_stream(const j2kc_image &image, j2kc_encoder_config cfg, uint16_t layers, uint8_t modes)
{
    cfg.lossless = 1;
    cfg.guard_bits = 2;
    cfg.layers = 1;
    cfg.block_coder = J2KC_BLOCK_CODER_PART1;
    const std::vector<uint8_t> part1 = j2kc_test::encode_stream(image, cfg);
    cfg.block_coder = J2KC_BLOCK_CODER_HT;
    std::vector<uint8_t> out = j2kc_test::encode_stream(image, cfg);
    const Codestream cs1 = parse_codestream(part1.data(), part1.size());
    const Codestream csh = parse_codestream(out.data(), out.size());
    EXPECT_EQ(cs1.tiles.size(), 1u);
    EXPECT_EQ(csh.tiles.size(), 1u);
    std::shared_ptr<const TileLayout> layout1, layout;
    std::vector<BlockSource> src1 = block_sources(cs1, layout1);
    const std::vector<BlockSource> srch = block_sources(csh, layout);
    EXPECT_EQ(src1.size(), srch.size());
    const size_t n = srch.size();
    const uint8_t style = cblk_style::kHighThroughput | cblk_style::kMixed | modes;
    std::vector<CodeBlockPasses> cblks(n);
    std::vector<uint32_t> layer_passes(size_t{layers} * n);
    for (size_t i = 0; i < n; ++i) {
        const CodeBlock &cb = layout->code_blocks[i];
        const bool p1 = mixed_part1(i, cb);
        if (p1 && modes) {
            const BandOrientation o =
                layout->components[cb.component].resolutions[cb.resolution].bands[cb.band].orientation;
            src1[i] = recode_part1(src1[i], cb, o, modes);
        }
        const BlockSource &s = p1 ? src1[i] : srch[i];
        const uint32_t passes = static_cast<uint32_t>(s.pass_end.size());
        cblks[i] =
            CodeBlockPasses{s.bytes.data(), s.pass_end.data(), s.terminated.empty() ? nullptr : s.terminated.data(),
                            passes,         s.zero_bitplanes,  p1};
        const uint32_t first = std::min((passes + 1) / 2, codeword_segment_end(modes, 0));
        for (uint16_t l = 0; l < layers; ++l) {
            const bool last = l + 1 == layers;
            layer_passes[l * n + i] = last ? passes : p1 ? first : (i % 2 ? passes : 0);
        }
    }
    const CodingStyle &cod = csh.coding_style(csh.tiles[0]);
    PacketEncodeParams params;
    params.layers = layers;
    params.progression = cod.progression;
    params.cblk_style.assign(csh.siz.components.size(), style);
    EncodedTilePackets packets;
    encode_tile_packets(*layout, params, cblks.data(), layer_passes.data(), packets);

    // The HT stream's headers, with the style, the layers and Ccap15 of a
    // MIXED stream, then the new packets.
    const size_t cod_at = main_marker(out, kCOD), cap_at = main_marker(out, kCAP);
    const size_t sot = main_marker(out, kSOT), sod = main_marker(out, kSOD);
    out[cod_at + 6] = static_cast<uint8_t>(layers >> 8);
    out[cod_at + 7] = static_cast<uint8_t>(layers);
    out[cod_at + 12] = style;
    out[cap_at + 8] |= static_cast<uint8_t>(ccap15::kModeMask >> 8);
    out.resize(sod + 2);
    out.insert(out.end(), packets.data.begin(), packets.data.end());
    const uint32_t psot = static_cast<uint32_t>(out.size() - sot);
    for (int k = 0; k < 4; ++k) out[sot + 6 + k] = static_cast<uint8_t>(psot >> (24 - 8 * k));
    out.push_back(0xFF);
    out.push_back(0xD9);
    return out;
}

struct MixedCase {
    const char *name;
    uint32_t width, height, components;
    uint8_t precision;
    int levels, cblk_log2, precinct_log2;
    j2kc_progression progression;
    uint16_t layers;
    uint8_t modes;  ///< Part-1 modes of the style (bits 0..5)
};

const MixedCase kMixedCases[] = {
    {"rgb12_lrcp", 97, 61, 3, 12, 3, 5, 0, J2KC_PROG_LRCP, 1, 0},
    {"gray16_rpcl_precincts_2layers", 80, 72, 1, 16, 2, 4, 5, J2KC_PROG_RPCL, 2, 0},
    {"gray8_cprl_2layers", 64, 40, 1, 8, 1, 3, 0, J2KC_PROG_CPRL, 2, 0},
    // The Part-1 modes that keep one codeword segment (RESET, VSC, PTERM, SEGSYM),
    {"gray10_modes_3a_2layers", 48, 40, 1, 10, 2, 4, 0, J2KC_PROG_LRCP, 2, 0x3A},
    // every Part-1 mode (TERMALL: a first packet of one pass per Part-1 block),
    {"gray10_modes_3f_2layers", 48, 40, 1, 10, 2, 4, 0, J2KC_PROG_LRCP, 2, 0x3F},
    // and BYPASS (raw passes after the tenth) with VSC: first packets of up to ten passes.
    {"rgb8_bypass_vsc_2layers", 40, 36, 3, 8, 1, 4, 0, J2KC_PROG_RLCP, 2, 0x09},
};

struct Mixed {
    j2kc_test::Planes16 image;
    std::vector<uint8_t> stream;
};

Mixed make_mixed(const MixedCase &m)
{
    Mixed out{j2kc_test::synthetic_frame(m.width, m.height, m.components, m.precision, 5, 0.05), {}};
    j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
    cfg.levels = m.levels;
    cfg.cblk_width_log2 = cfg.cblk_height_log2 = m.cblk_log2;
    if (m.precinct_log2) cfg.precinct_width_log2 = cfg.precinct_height_log2 = m.precinct_log2;
    cfg.progression = m.progression;
    out.stream = mixed_stream(out.image.image, cfg, m.layers, m.modes);
    return out;
}

/** HT and Part-1 blocks of the stream's one tile, as Tier-2 tells them apart. */
void count_coders(const std::vector<uint8_t> &stream, size_t &ht, size_t &part1)
{
    const Codestream cs = parse_codestream(stream.data(), stream.size());
    TileBlocks blocks;
    TileCoefficients coefficients;
    prepare_tile(cs, cs.tiles.at(0), TileDecodeOptions{}, blocks, coefficients);
    ht = part1 = 0;
    for (size_t i = 0; i < blocks.codewords.size(); ++i) {
        const CodeBlockCodewords &cw = blocks.codewords[i];
        if (!cw.included) continue;
        EXPECT_EQ(cw.part1, mixed_part1(i, blocks.layout->code_blocks[i])) << "code-block " << i;
        ++(cw.part1 ? part1 : ht);
    }
}

TEST(HtMixed, DecodesToTheImage)
{
    for (const MixedCase &m : kMixedCases) {
        const Mixed mx = make_mixed(m);
        ASSERT_FALSE(mx.stream.empty()) << m.name;
        const Codestream cs = parse_codestream(mx.stream.data(), mx.stream.size());
        EXPECT_EQ(cs.main.cod->component.cblk_style, 0xC0 | m.modes) << m.name;
        EXPECT_EQ(cs.ccap15 & ccap15::kModeMask, ccap15::kModeMixed) << m.name;
        EXPECT_TRUE(cs.warnings.empty()) << m.name << ": " << cs.warnings[0];
        size_t ht = 0, part1 = 0;
        count_coders(mx.stream, ht, part1);
        EXPECT_GT(ht, 3u) << m.name;
        EXPECT_GT(part1, 3u) << m.name;
        const Decoded d = decode(mx.stream, J2KC_BACKEND_CPU);
        ASSERT_EQ(d.status, J2KC_OK) << m.name;
        ASSERT_EQ(d.planes.size(), m.components) << m.name;
        for (uint32_t c = 0; c < m.components; ++c) {
            const std::vector<uint16_t> &want = mx.image.planes[c];
            ASSERT_EQ(d.planes[c].size(), want.size()) << m.name;
            EXPECT_TRUE(std::equal(want.begin(), want.end(), d.planes[c].begin(),
                                   [](uint16_t a, int32_t b) { return int32_t{a} == b; }))
                << m.name << " component " << c << ": not the image (lossless)";
        }
        // Fewer layers and resolutions decode too (the Part-1 blocks' later
        // passes and the late HT blocks are left out).
        EXPECT_EQ(decode(mx.stream, J2KC_BACKEND_CPU, 0, 1, 1).status, J2KC_OK) << m.name;
    }
}

TEST(HtMixed, DumpShowsMixed)
{
    const Mixed mx = make_mixed(kMixedCases[0]);
    const std::string text = dump_codestream(parse_codestream(mx.stream.data(), mx.stream.size()));
    EXPECT_NE(text.find("style 0xC0 (HT|MIXED)"), std::string::npos) << text;
    EXPECT_NE(text.find("MIXED (HT and Part-1 code-blocks)"), std::string::npos) << text;
}

TEST(HtMixed, JobTableMatchesDecodeCodeBlock)
{
    size_t blocks = 0, corrupt = 0;
    for (const MixedCase &m : kMixedCases) {
        const Mixed mx = make_mixed(m);
        check_job_table(mx.stream, blocks, corrupt);
        for (uint32_t seed = 1; seed <= 4; ++seed) check_job_table(garble(mx.stream, seed, 6), blocks, corrupt);
    }
    EXPECT_GT(blocks, 50u);
    EXPECT_GT(corrupt, 0u);
}

/** Signalling the decoder cannot follow is an error for the frame, never a crash. */
TEST(HtMixed, RefusesWhatItCannotRead)
{
    const Mixed mx = make_mixed(kMixedCases[0]);
    const size_t cod = main_marker(mx.stream, kCOD);
    // The Part-1 blocks' modes made TERMALL: their first packets hold several
    // passes, so several codeword segments that one length cannot say.
    std::vector<uint8_t> v = mx.stream;
    v[cod + 12] = 0xC4;
    EXPECT_EQ(decode(v, J2KC_BACKEND_CPU).status, J2KC_ERR_UNSUPPORTED);
    // Read as HT-only, the Part-1 blocks are corrupt HT blocks: a clean outcome.
    v[cod + 12] = 0x40;
    const Decoded d = decode(v, J2KC_BACKEND_CPU);
    EXPECT_TRUE(d.status == J2KC_OK || d.status == J2KC_ERR_INVALID_DATA) << d.status;
    // Damaged MIXED streams: an error status or corrupt code-blocks, strict or not.
    for (uint32_t seed = 1; seed <= 30; ++seed) {
        const std::vector<uint8_t> g = garble(mx.stream, seed, 3);
        for (int strict : {0, 1}) {
            const int status = decode(g, J2KC_BACKEND_CPU, 0, 0, 0, strict).status;
            EXPECT_TRUE(status == J2KC_OK || status == J2KC_ERR_INVALID_DATA || status == J2KC_ERR_UNSUPPORTED)
                << "seed " << seed << " strict " << strict << " status " << status;
        }
    }
}

/**
 * The first length decides, whoever wrote it: a one-block MIXED stream whose
 * packets are written here bit by bit. Layer 0 sends three placeholder
 * passes (a zero field), layer 1 one pass with a 5-byte length. With Lblock
 * 4 and a top bit of 0 the block is HT (its bytes are no valid cleanup: a
 * corrupt block, a clean outcome); with Lblock 3, or a top bit of 1, it is
 * Part-1, which must not follow placeholder passes: INVALID_DATA.
 */
TEST(HtMixed, FirstLengthAfterPlaceholders)
{
    const j2kc_test::Planes16 img = j2kc_test::synthetic_frame(8, 8, 1, 8, 1, 0.1);
    j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
    cfg.block_coder = J2KC_BLOCK_CODER_HT;
    cfg.lossless = 1;
    cfg.levels = 0;
    cfg.cblk_width_log2 = cfg.cblk_height_log2 = 3;
    const std::vector<uint8_t> ht = j2kc_test::encode_stream(img.image, cfg);
    ASSERT_FALSE(ht.empty());
    const auto stream = [&](uint32_t lblock_increment, uint32_t length, uint32_t length_bits) {
        std::vector<uint8_t> out = ht;
        const size_t cod = main_marker(out, kCOD), cap = main_marker(out, kCAP);
        const size_t sot = main_marker(out, kSOT), sod = main_marker(out, kSOD);
        out[cod + 7] = 2;  // layers
        out[cod + 12] = cblk_style::kHighThroughput | cblk_style::kMixed;
        out[cap + 8] |= static_cast<uint8_t>(ccap15::kModeMixed >> 8);
        out.resize(sod + 2);
        uint8_t buf[16];
        PacketHeaderWriter w0(buf, sizeof buf);
        w0.put_bits(0xD, 4);    // non-empty; included in layer 0; P = 1 (0, then 1)
        w0.put_bits(0xC, 4);    // 3 passes
        w0.put_bit(0);          // Lblock stays 3
        w0.put_bits(0, 3 + 1);  // a zero field of 3 + floor(log2 1) bits, read on to floor(log2 3) more
        out.insert(out.end(), buf, buf + w0.flush());
        PacketHeaderWriter w1(buf, sizeof buf);
        w1.put_bits(0x3, 2);  // non-empty; included
        w1.put_bit(0);        // 1 pass
        for (uint32_t k = 0; k < lblock_increment; ++k) w1.put_bit(1);
        w1.put_bit(0);
        w1.put_bits(length, length_bits);
        out.insert(out.end(), buf, buf + w1.flush());
        for (uint32_t k = 0; k < length; ++k) out.push_back(static_cast<uint8_t>(0x35 + 17 * k));
        const uint32_t psot = static_cast<uint32_t>(out.size() - sot);
        for (int k = 0; k < 4; ++k) out[sot + 6 + k] = static_cast<uint8_t>(psot >> (24 - 8 * k));
        out.push_back(0xFF);
        out.push_back(0xD9);
        return out;
    };
    const std::vector<uint8_t> as_ht = stream(1, 5, 4);  // Lblock 4, 0101: HT
    const Codestream cs = parse_codestream(as_ht.data(), as_ht.size());
    TileBlocks blocks;
    TileCoefficients coefficients;
    prepare_tile(cs, cs.tiles.at(0), TileDecodeOptions{}, blocks, coefficients);
    ASSERT_EQ(blocks.codewords.size(), 1u);
    EXPECT_FALSE(blocks.codewords[0].part1);
    EXPECT_EQ(blocks.codewords[0].num_passes, 4u);
    const int status = decode(as_ht, J2KC_BACKEND_CPU).status;
    EXPECT_TRUE(status == J2KC_OK || status == J2KC_ERR_INVALID_DATA) << status;
    EXPECT_EQ(decode(stream(0, 5, 3), J2KC_BACKEND_CPU).status, J2KC_ERR_INVALID_DATA);   // Lblock 3: Part-1
    EXPECT_EQ(decode(stream(1, 13, 4), J2KC_BACKEND_CPU).status, J2KC_ERR_INVALID_DATA);  // top bit 1: Part-1
}

/** Ccap15's mode bits announce the styles: other encoders' streams agree, a disagreement is noted, not refused. */
TEST(HtMixed, Ccap15AgreesWithTheStyles)
{
    for (const std::string &name : stream_names()) {
        const std::vector<uint8_t> f = read_file(data_path(name));
        if (f.size() < 2 || f[0] != 0xFF) continue;  // raw codestreams
        const Codestream cs = parse_codestream(f.data(), f.size());
        for (const std::string &w : cs.warnings) EXPECT_EQ(w.find("Ccap15"), std::string::npos) << name << ": " << w;
    }
    // This library's HT streams, lossless and 9/7.
    const j2kc_test::Planes16 img = j2kc_test::synthetic_frame(64, 48, 3, 12, 3, 0.02);
    for (int lossless : {1, 0}) {
        j2kc_encoder_config cfg = j2kc_test::cpu_encoder_config(quiet);
        cfg.block_coder = J2KC_BLOCK_CODER_HT;
        cfg.lossless = lossless;
        const std::vector<uint8_t> f = j2kc_test::encode_stream(img.image, cfg);
        const Codestream cs = parse_codestream(f.data(), f.size());
        EXPECT_TRUE(cs.warnings.empty()) << (lossless ? "lossless: " : "9/7: ") << cs.warnings[0];
    }
    std::vector<uint8_t> v = make_mixed(kMixedCases[0]).stream;
    v[main_marker(v, kCAP) + 8] &= 0x3F;  // HTONLY
    const Codestream cs = parse_codestream(v.data(), v.size());
    ASSERT_FALSE(cs.warnings.empty());
    EXPECT_NE(cs.warnings[0].find("disagrees with Ccap15"), std::string::npos) << cs.warnings[0];
    EXPECT_EQ(decode(v, J2KC_BACKEND_CPU).status, J2KC_OK);  // the styles decide
    // A 9/7 HT stream whose Ccap15 says HTREV.
    const std::vector<uint8_t> f = read_file(data_path("o_rgb8_irv_32.j2c"));
    std::vector<uint8_t> w = f;
    w[main_marker(w, kCAP) + 9] &= static_cast<uint8_t>(~ccap15::kIrreversible);
    const Codestream irv = parse_codestream(w.data(), w.size());
    ASSERT_FALSE(irv.warnings.empty());
    EXPECT_NE(irv.warnings[0].find("says HTREV"), std::string::npos) << irv.warnings[0];
}

/** The packet encoder refuses MIXED blocks whose first lengths could not tell their coder. */
TEST(HtMixed, WriterRefusesAmbiguousFirstPackets)
{
    const Mixed mx = make_mixed(kMixedCases[2]);
    const Codestream cs = parse_codestream(mx.stream.data(), mx.stream.size());
    std::shared_ptr<const TileLayout> layout;
    const std::vector<BlockSource> src = block_sources(cs, layout);
    std::vector<CodeBlockPasses> cblks(src.size());
    std::vector<uint32_t> passes(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        passes[i] = static_cast<uint32_t>(src[i].pass_end.size());
        cblks[i] = CodeBlockPasses{src[i].bytes.data(), src[i].pass_end.data(), nullptr,
                                   passes[i],           src[i].zero_bitplanes,  true};
    }
    PacketEncodeParams params;
    params.cblk_style = {0xC0};
    EncodedTilePackets packets;
    EXPECT_NO_THROW(encode_tile_packets(*layout, params, cblks.data(), passes.data(), packets));
    params.cblk_style = {0xC4};  // TERMALL: a segment per pass, which a first packet of several passes cannot say
    EXPECT_THROW(encode_tile_packets(*layout, params, cblks.data(), passes.data(), packets), Error);
}

/**
 * Not a check: with J2KC_HT_MIXED_OUT=DIR set, writes each MIXED stream of
 * kMixedCases there (m_NAME.j2c) with its image (m_NAME.raw: the components
 * in turn, 16-bit little-endian), for a decoder of another project to read;
 * skipped otherwise.
 */
TEST(HtMixed, WriteStreams)
{
    const char *dir = std::getenv("J2KC_HT_MIXED_OUT");
    if (!dir) GTEST_SKIP() << "set J2KC_HT_MIXED_OUT=DIR to write the MIXED test streams";
    for (const MixedCase &m : kMixedCases) {
        const Mixed mx = make_mixed(m);
        const std::string base = std::string(dir) + "/m_" + m.name;
        std::ofstream(base + ".j2c", std::ios::binary)
            .write(reinterpret_cast<const char *>(mx.stream.data()), static_cast<std::streamsize>(mx.stream.size()));
        std::ofstream raw(base + ".raw", std::ios::binary);
        for (const std::vector<uint16_t> &plane : mx.image.planes)
            for (const uint16_t v : plane) raw.put(static_cast<char>(v & 0xFF)).put(static_cast<char>(v >> 8));
    }
}

TEST(GpuHtMixed, MatchesCpuBackend)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    size_t compared = 0;
    for (const MixedCase &m : kMixedCases) {
        const Mixed mx = make_mixed(m);
        for (uint32_t variant = 0; variant < 4; ++variant) {
            const std::vector<uint8_t> cs = variant ? garble(mx.stream, variant, 4) : mx.stream;
            for (int reduce : {0, 1}) {
                const Decoded cpu = decode(cs, J2KC_BACKEND_CPU, 0, reduce);
                for (int tier1_on_gpu : {1, 0}) {
                    const Decoded gpu = decode(cs, J2KC_BACKEND_CUDA, tier1_on_gpu, reduce);
                    ASSERT_EQ(gpu.status, cpu.status) << m.name << " variant " << variant << " reduce " << reduce;
                    if (cpu.status != J2KC_OK) continue;
                    EXPECT_TRUE(gpu.planes == cpu.planes)
                        << m.name << " variant " << variant << " reduce " << reduce << " tier1_on_gpu " << tier1_on_gpu;
                    ++compared;
                }
            }
        }
    }
    EXPECT_GE(compared, 30u);
}

}  // namespace
}  // namespace j2kc
