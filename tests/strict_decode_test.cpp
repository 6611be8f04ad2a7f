// Strict decoding (j2kc_decoder_config::strict) through the C API: damaged
// codestreams (cut short, Psot past the end, tile-parts, tiles or EOC
// missing, packet data that ends early, corrupt code-blocks, a clipped jp2c)
// decode with warnings by default and fail the frame with one message when
// strict; benign oddities stay warnings either way. Synchronous and
// submit/receive, where the error belongs to its frame alone. Gpu* tests run
// the CUDA backend (Tier-1 on the CPU workers and on the GPU) and skip
// without a usable device.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "codestream/reader.h"
#include "j2kc.h"
#include "test_images.h"
#include "test_log.h"

namespace {

using Bytes = std::vector<uint8_t>;

using j2kc_test::have_gpu;
using j2kc_test::Log;

/** A decoder configuration: backend, strict or not, Tier-1 on the GPU or not (CUDA only). */
struct Mode {
    j2kc_backend backend;
    int tier1_on_gpu;
    const char *name;
};

j2kc_decoder *make_decoder(const Mode &m, bool strict, Log *log, int frames_in_flight = 0)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = m.backend;
    cfg.tier1_on_gpu = m.tier1_on_gpu;
    cfg.strict = strict ? 1 : 0;
    cfg.frames_in_flight = frames_in_flight;
    cfg.log = Log::callback;
    cfg.log_opaque = log;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    return dec;
}

/** 48x40, three 8-bit components, 16x16 tiles with a tile-part per resolution. */
Bytes encode_tiled(j2kc_container container = J2KC_CONTAINER_CODESTREAM)
{
    j2kc_test::Planes16 f(48, 40, 3, 8);
    f.fill(5, [](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
        return (x * 3 + y * 7 + c * 50 + rng() % 9) & 0xFF;
    });
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.lossless = 1;
    cfg.levels = 2;
    cfg.tile_width = cfg.tile_height = 16;
    cfg.tile_parts = J2KC_TILE_PARTS_RESOLUTION;
    cfg.container = container;
    cfg.color_space = J2KC_COLOR_SRGB;
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &f.image), J2KC_OK);
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encode(enc, &f.image, &pkt), J2KC_OK);
    Bytes out(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return out;
}

struct TilePart {
    size_t offset, length;
    uint16_t tile;
    uint8_t part;
};

std::vector<TilePart> tile_parts(const Bytes &cs)
{
    std::vector<TilePart> out;
    for (const j2kc::MarkerSegment &m : j2kc::list_marker_segments(cs.data(), cs.size()))
        if (m.marker == j2kc::kSOT) {
            const size_t at = m.offset;
            const uint32_t psot =
                uint32_t{cs[at + 6]} << 24 | uint32_t{cs[at + 7]} << 16 | cs[at + 8] << 8 | cs[at + 9];
            out.push_back({at, psot, static_cast<uint16_t>(cs[at + 4] << 8 | cs[at + 5]), cs[at + 10]});
        }
    return out;
}

Bytes erase(Bytes b, size_t at, size_t n)
{
    b.erase(b.begin() + at, b.begin() + at + n);
    return b;
}

void set_psot(Bytes &b, size_t sot, uint32_t psot)
{
    for (int i = 0; i < 4; ++i) b[sot + 6 + i] = static_cast<uint8_t>(psot >> (24 - 8 * i));
}

/** Every QCD exponent lowered to 1: Mb falls under the zero bit-planes the packets signal, so Tier-1 refuses those blocks. */
Bytes lower_exponents(Bytes cs)
{
    for (size_t i = 2; i + 5 < cs.size(); ++i) {
        if (cs[i] != 0xFF || cs[i + 1] != 0x5C) continue;
        const size_t len = size_t{cs[i + 2]} << 8 | cs[i + 3];
        for (size_t at = i + 5; at < i + 2 + len; ++at) cs[at] = 1u << 3;  // reversible: exponent << 3
        break;
    }
    return cs;
}

struct Damage {
    const char *name;
    Bytes stream;
    const char *warning;  ///< what the lenient decode warns of
    bool changes_image = true;
};

/** The damaged copies of the tiled stream, each with what the lenient decoder says of it. */
std::vector<Damage> damaged_streams()
{
    const Bytes cs = encode_tiled();
    const std::vector<TilePart> tps = tile_parts(cs);
    EXPECT_GE(tps.size(), 12u);  // 12 tiles, 3 resolutions: 36 tile-parts
    const TilePart &last = tps.back();
    std::vector<Damage> d;
    d.push_back({"cut in the last tile-part's data", Bytes(cs.begin(), cs.begin() + last.offset + last.length - 5),
                 "past the end"});
    d.push_back({"cut in a tile-part header", Bytes(cs.begin(), cs.begin() + tps[20].offset + 13), "header of tile"});
    d.push_back({"cut inside a SOT", Bytes(cs.begin(), cs.begin() + tps[20].offset + 6), "inside the SOT"});
    d.push_back({"no EOC", Bytes(cs.begin(), cs.end() - 2), "no EOC", false});
    Bytes psot = cs;
    set_psot(psot, last.offset, static_cast<uint32_t>(last.length + 100));
    d.push_back({"Psot past the end", psot, "past the end", false});  // EOC becomes data, unread
    // A tile's last tile-part gone: its TNsot says how many there were.
    size_t victim = 0;
    for (size_t i = 0; i < tps.size(); ++i)
        if (tps[i].tile == 4 && tps[i].part == 2) victim = i;
    EXPECT_GT(victim, 0u);
    d.push_back({"a tile-part missing", erase(cs, tps[victim].offset, tps[victim].length), "tile-parts present"});
    // Every tile-part of tile 7 gone.
    Bytes no_tile = cs;
    for (size_t i = tps.size(); i-- > 0;)
        if (tps[i].tile == 7) no_tile = erase(no_tile, tps[i].offset, tps[i].length);
    d.push_back({"a tile missing", no_tile, "tiles have no tile-part"});
    // Packet bytes gone from the middle of a tile-part, Psot fixed: the
    // markers are whole, the packets run out.
    const TilePart &big = tps[2];
    Bytes short_packets = erase(cs, big.offset + 14 + (big.length - 14) / 2, (big.length - 14) / 2);
    set_psot(short_packets, big.offset, static_cast<uint32_t>(big.length - (big.length - 14) / 2));
    d.push_back({"packet data cut short", short_packets, nullptr});
    d.push_back({"corrupt code-blocks", lower_exponents(cs), "corrupt code-blocks"});
    const Bytes jp2 = encode_tiled(J2KC_CONTAINER_JP2);
    d.push_back({"a clipped jp2c", Bytes(jp2.begin(), jp2.end() - 40), "clipped"});
    return d;
}

/** Decodes synchronously into 8-bit planes; the status. */
int decode(j2kc_decoder *dec, const Bytes &stream, j2kc_test::Planes16 *out)
{
    return j2kc_decode(dec, stream.data(), stream.size(), &out->image);
}

j2kc_test::Planes16 output_for_tiled() { return j2kc_test::Planes16(48, 40, 3, 8); }

void check_damage(const Mode &m)
{
    const Bytes whole = encode_tiled();
    j2kc_test::Planes16 reference = output_for_tiled();
    {
        Log log;
        j2kc_decoder *dec = make_decoder(m, true, &log);
        ASSERT_EQ(decode(dec, whole, &reference), J2KC_OK);
        EXPECT_TRUE(log.warnings.empty() && log.errors.empty());
        j2kc_decoder_free(&dec);
    }
    for (const Damage &d : damaged_streams()) {
        SCOPED_TRACE(std::string(m.name) + ": " + d.name);
        Log lenient_log, strict_log;
        j2kc_decoder *lenient = make_decoder(m, false, &lenient_log);
        j2kc_decoder *strict = make_decoder(m, true, &strict_log);
        j2kc_test::Planes16 a = output_for_tiled(), b = output_for_tiled();
        // Lenient: the frame decodes as far as it goes, and the log says why it is not whole.
        EXPECT_EQ(decode(lenient, d.stream, &a), J2KC_OK);
        EXPECT_TRUE(lenient_log.errors.empty()) << lenient_log.errors[0];
        if (d.warning) {
            EXPECT_TRUE(lenient_log.warned(d.warning))
                << (lenient_log.warnings.empty() ? "no warning" : lenient_log.warnings[0]);
        }
        if (d.changes_image) {
            EXPECT_NE(a.planes, reference.planes) << "the damage changes the image";
        }
        // Strict: the frame fails with one message that says so.
        EXPECT_EQ(decode(strict, d.stream, &b), J2KC_ERR_INVALID_DATA);
        ASSERT_EQ(strict_log.errors.size(), 1u);
        EXPECT_NE(strict_log.errors[0].find("strict"), std::string::npos) << strict_log.errors[0];
        EXPECT_TRUE(strict_log.warnings.empty()) << strict_log.warnings[0];
        // The strict decoder goes on with the next frame.
        j2kc_test::Planes16 c = output_for_tiled();
        EXPECT_EQ(decode(strict, whole, &c), J2KC_OK);
        EXPECT_EQ(c.planes, reference.planes);
        j2kc_decoder_free(&lenient);
        j2kc_decoder_free(&strict);
    }
}

void check_benign(const Mode &m)
{
    const Bytes whole = encode_tiled();
    // After SIZ: a COM of an unknown registration (5) and a reserved marker (0xFF30, no segment).
    size_t cod = 0;
    for (const j2kc::MarkerSegment &s : j2kc::list_marker_segments(whole.data(), whole.size()))
        if (s.marker == j2kc::kCOD) cod = s.offset;
    ASSERT_GT(cod, 0u);
    Bytes odd = whole;
    const Bytes extra = {0xFF, 0x64, 0x00, 0x07, 0x00, 0x05, 'a', 'b', 'c', 0xFF, 0x30};
    odd.insert(odd.begin() + cod, extra.begin(), extra.end());
    Log log;
    j2kc_decoder *dec = make_decoder(m, true, &log);
    j2kc_test::Planes16 a = output_for_tiled(), b = output_for_tiled();
    EXPECT_EQ(decode(dec, whole, &a), J2KC_OK);
    EXPECT_EQ(decode(dec, odd, &b), J2KC_OK);
    EXPECT_EQ(a.planes, b.planes);
    EXPECT_TRUE(log.errors.empty());
    EXPECT_TRUE(log.warned("COM registration"));
    EXPECT_TRUE(log.warned("reserved marker"));
    j2kc_decoder_free(&dec);
}

/** Good, damaged, good, damaged, good through submit/receive: each error is its own frame's. */
void check_async(const Mode &m)
{
    const Bytes whole = encode_tiled();
    const std::vector<Damage> damage = damaged_streams();
    std::vector<Bytes> sequence;
    for (size_t i = 0; i < damage.size(); ++i) {
        sequence.push_back(whole);
        sequence.push_back(damage[i].stream);
    }
    sequence.push_back(whole);
    Log log;
    j2kc_decoder *dec = make_decoder(m, true, &log, 3);
    j2kc_test::Planes16 reference = output_for_tiled();
    {
        Log l;
        j2kc_decoder *sync = make_decoder(m, true, &l);
        ASSERT_EQ(decode(sync, whole, &reference), J2KC_OK);
        j2kc_decoder_free(&sync);
    }
    std::vector<int> status;
    std::vector<int64_t> tags;
    j2kc_test::Planes16 out = output_for_tiled();
    auto take = [&](int flush) {
        int64_t tag = -1;
        for (auto &p : out.planes) std::fill(p.begin(), p.end(), 0);
        const int st = j2kc_decoder_receive(dec, &out.image, &tag, flush);
        if (st == J2KC_ERR_AGAIN || st == J2KC_ERR_EOF) return st;
        status.push_back(st);
        tags.push_back(tag);
        if (st == J2KC_OK) {
            EXPECT_EQ(out.planes, reference.planes) << "frame " << tag;
        }
        return st;
    };
    for (size_t i = 0; i < sequence.size(); ++i) {
        while (j2kc_decoder_submit(dec, sequence[i].data(), sequence[i].size(), int64_t(i)) == J2KC_ERR_AGAIN) take(0);
    }
    while (take(1) != J2KC_ERR_EOF) {}
    ASSERT_EQ(status.size(), sequence.size());
    for (size_t i = 0; i < sequence.size(); ++i) {
        EXPECT_EQ(tags[i], int64_t(i));
        EXPECT_EQ(status[i], i % 2 ? J2KC_ERR_INVALID_DATA : J2KC_OK) << "frame " << i;
    }
    EXPECT_EQ(log.errors.size(), damage.size());
    j2kc_decoder_free(&dec);
}

const Mode kCpu{J2KC_BACKEND_CPU, 0, "cpu"};
const Mode kCudaCpuTier1{J2KC_BACKEND_CUDA, 0, "cuda, Tier-1 on the CPU"};
const Mode kCudaGpuTier1{J2KC_BACKEND_CUDA, 1, "cuda, Tier-1 on the GPU"};

TEST(StrictDecode, DamageFailsTheFrameWithOneMessage) { check_damage(kCpu); }
TEST(StrictDecode, BenignOdditiesStayWarnings) { check_benign(kCpu); }
TEST(StrictDecode, SubmitReceiveFailsOnlyTheDamagedFrames) { check_async(kCpu); }

TEST(StrictDecode, DefaultsToLenientAndOldConfigsStayLenient)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    EXPECT_EQ(cfg.strict, 0);
    // A config from before strict existed: strict stays off.
    std::vector<uint8_t> storage(sizeof(j2kc_decoder_config), 0x01);
    auto *old = reinterpret_cast<j2kc_decoder_config *>(storage.data());
    std::memcpy(old, &cfg, offsetof(j2kc_decoder_config, strict));
    old->backend = J2KC_BACKEND_CPU;
    old->struct_size = offsetof(j2kc_decoder_config, strict);
    Log log;
    old->log = Log::callback;
    old->log_opaque = &log;
    j2kc_decoder *dec = nullptr;
    ASSERT_EQ(j2kc_decoder_create(&dec, old), J2KC_OK);
    const Bytes whole = encode_tiled();
    const Bytes cut(whole.begin(), whole.end() - 2);
    j2kc_test::Planes16 out = output_for_tiled();
    EXPECT_EQ(decode(dec, cut, &out), J2KC_OK);
    EXPECT_TRUE(log.warned("no EOC"));
    j2kc_decoder_free(&dec);
}

TEST(GpuStrictDecode, DamageFailsTheFrameWithOneMessage)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_damage(kCudaCpuTier1);
    check_damage(kCudaGpuTier1);
}

TEST(GpuStrictDecode, BenignOdditiesStayWarnings)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_benign(kCudaCpuTier1);
    check_benign(kCudaGpuTier1);
}

TEST(GpuStrictDecode, SubmitReceiveFailsOnlyTheDamagedFrames)
{
    if (!have_gpu()) GTEST_SKIP() << "no usable CUDA device";
    check_async(kCudaCpuTier1);
    check_async(kCudaGpuTier1);
}

}  // namespace
