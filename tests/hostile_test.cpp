// Hostile input through the C API (CPU backend): every resource limit, every
// class of malformed structure (ISO/IEC 15444-1 Annex A markers, Annex B
// packets, Annex I boxes), each with the status it must give; and the memory
// a small file may make the decoder allocate, measured by a counting global
// operator new in this binary (no LD_PRELOAD, works under ASan too).
#include <gtest/gtest.h>

#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "j2kc.h"
#include "test_images.h"

// ---------------------------------------------------------------------------
// Allocation accounting: live bytes and their peak, counted while enabled.
namespace {
std::atomic<bool> g_counting{false};
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<uint64_t> g_largest{0};

void *counted_alloc(size_t n, bool nothrow)
{
    void *p = std::malloc(n ? n : 1);
    if (!p) {
        if (nothrow) return nullptr;
        throw std::bad_alloc();
    }
    if (g_counting.load(std::memory_order_relaxed)) {
        const int64_t sz = static_cast<int64_t>(malloc_usable_size(p));
        const int64_t live = g_live.fetch_add(sz) + sz;
        int64_t peak = g_peak.load();
        while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {}
        uint64_t big = g_largest.load();
        while (uint64_t(sz) > big && !g_largest.compare_exchange_weak(big, uint64_t(sz))) {}
    }
    return p;
}

void counted_free(void *p)
{
    if (!p) return;
    if (g_counting.load(std::memory_order_relaxed)) g_live.fetch_sub(static_cast<int64_t>(malloc_usable_size(p)));
    std::free(p);
}

/** Counts allocations made in its scope; frees of older blocks may make live go negative, hence peak - start. */
struct AllocationMeter {
    AllocationMeter()
    {
        g_live = 0;
        g_peak = 0;
        g_largest = 0;
        g_counting = true;
    }
    ~AllocationMeter() { g_counting = false; }
    int64_t peak() const { return g_peak.load(); }
    uint64_t largest() const { return g_largest.load(); }
};
}  // namespace

void *operator new(size_t n) { return counted_alloc(n, false); }
void *operator new[](size_t n) { return counted_alloc(n, false); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { return counted_alloc(n, true); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return counted_alloc(n, true); }
void operator delete(void *p) noexcept { counted_free(p); }
void operator delete[](void *p) noexcept { counted_free(p); }
void operator delete(void *p, size_t) noexcept { counted_free(p); }
void operator delete[](void *p, size_t) noexcept { counted_free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { counted_free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { counted_free(p); }

namespace {

std::atomic<int> g_corrupt_warnings{0};

void quiet(void *, int level, const char *msg)
{
    if (level == J2KC_LOG_WARNING && std::strstr(msg, "corrupt code-block")) ++g_corrupt_warnings;
    if (std::getenv("J2KC_TEST_VERBOSE") && level <= J2KC_LOG_WARNING) fprintf(stderr, "j2kc: %s\n", msg);
}

// ---------------------------------------------------------------------------
// Streams: some from our encoder, some written byte by byte.

using Bytes = std::vector<uint8_t>;

void put16(Bytes &b, uint32_t v)
{
    b.push_back(uint8_t(v >> 8));
    b.push_back(uint8_t(v));
}
void put32(Bytes &b, uint32_t v)
{
    put16(b, v >> 16);
    put16(b, v & 0xFFFF);
}
void set16(Bytes &b, size_t at, uint32_t v)
{
    b[at] = uint8_t(v >> 8);
    b[at + 1] = uint8_t(v);
}
void set32(Bytes &b, size_t at, uint32_t v)
{
    set16(b, at, v >> 16);
    set16(b, at + 2, v & 0xFFFF);
}
uint32_t get16(const Bytes &b, size_t at) { return uint32_t{b[at]} << 8 | b[at + 1]; }
uint32_t get32(const Bytes &b, size_t at) { return get16(b, at) << 16 | get16(b, at + 2); }

struct Shape {
    uint32_t width = 40, height = 33, components = 1;
    uint8_t precision = 8;
};

/** Our encoder's codestream of a noisy gradient, CPU backend. */
Bytes encode(const Shape &shape, j2kc_encoder_config cfg)
{
    j2kc_test::Planes16 in(shape.width, shape.height, shape.components, shape.precision);
    in.fill(shape.width * 131 + shape.height, [&](uint32_t c, uint32_t x, uint32_t y, std::mt19937 &rng) {
        return uint16_t(((x * 5 + y * 3 + c * 40 + rng() % 9) * ((1u << shape.precision) - 1)) /
                        (shape.width * 5 + shape.height * 3 + 130));
    });
    const j2kc_image &image = in.image;
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.log = quiet;
    j2kc_encoder *enc = nullptr;
    EXPECT_EQ(j2kc_encoder_create(&enc, &cfg, &image), J2KC_OK);
    if (!enc) return {};
    j2kc_packet pkt{};
    EXPECT_EQ(j2kc_encode(enc, &image, &pkt), J2KC_OK);
    Bytes out(pkt.data, pkt.data + pkt.size);
    j2kc_encoder_free(&enc);
    return out;
}

j2kc_encoder_config enc_config()
{
    j2kc_encoder_config cfg;
    j2kc_encoder_config_default(&cfg);
    cfg.lossless = 1;
    cfg.levels = 3;
    cfg.threads = 1;
    return cfg;
}

/** A stream using most of the syntax: tiles, tile-parts, layers, precincts, SOP/EPH, TLM/PLT. */
Bytes rich_stream(const Shape &shape = {48, 40, 3, 8})
{
    j2kc_encoder_config cfg = enc_config();
    cfg.lossless = 0;
    cfg.quality = 3.0;
    cfg.layers = 3;
    cfg.frame_bytes = 6000;
    cfg.tile_width = 32;
    cfg.tile_height = 24;
    cfg.tile_parts = J2KC_TILE_PARTS_RESOLUTION;
    cfg.precinct_width_log2 = cfg.precinct_height_log2 = 4;
    cfg.cblk_width_log2 = cfg.cblk_height_log2 = 3;
    cfg.progression = J2KC_PROG_RPCL;
    cfg.sop = cfg.eph = cfg.tlm = cfg.plt = 1;
    return encode(shape, cfg);
}

/** Offset of the first marker `m` in the main header (0xFF of the marker), or npos. */
size_t find_main_marker(const Bytes &cs, uint16_t m)
{
    size_t pos = 2;
    while (pos + 4 <= cs.size()) {
        const uint32_t mk = get16(cs, pos);
        if (mk == m) return pos;
        if (mk == 0xFF90 || mk == 0xFF93 || mk == 0xFFD9) break;
        pos += 2 + get16(cs, pos + 2);
    }
    return std::string::npos;
}

/** Offsets of every SOT marker, following Psot. */
std::vector<size_t> find_sots(const Bytes &cs)
{
    std::vector<size_t> out;
    size_t pos = find_main_marker(cs, 0xFF90);
    while (pos != std::string::npos && pos + 12 <= cs.size() && get16(cs, pos) == 0xFF90) {
        out.push_back(pos);
        const uint32_t psot = get32(cs, pos + 6);
        if (psot == 0) break;
        pos += psot;
    }
    return out;
}

// ---- hand-written streams ----

struct Hand {
    uint32_t width = 4, height = 4, components = 1;
    uint32_t tile_w = 0, tile_h = 0;  // 0: one tile
    uint8_t precision = 8;
    uint8_t levels = 0;
    uint8_t xcb = 4, ycb = 4;  // SPcod values (exponent - 2)
    uint8_t guard_bits = 1;
    uint8_t exponent = 8;  // every band's epsilon (no quantisation)
    uint16_t layers = 1;
    uint8_t scod = 0;
    std::vector<uint8_t> precincts;  // Scod bit 0 when non-empty
};

Bytes main_header(const Hand &h)
{
    Bytes b = {0xFF, 0x4F, 0xFF, 0x51};
    put16(b, 38 + 3 * h.components);
    put16(b, 0);
    put32(b, h.width);
    put32(b, h.height);
    put32(b, 0);
    put32(b, 0);
    put32(b, h.tile_w ? h.tile_w : h.width);
    put32(b, h.tile_h ? h.tile_h : h.height);
    put32(b, 0);
    put32(b, 0);
    put16(b, h.components);
    for (uint32_t c = 0; c < h.components; ++c) {
        b.push_back(uint8_t(h.precision - 1));
        b.push_back(1);
        b.push_back(1);
    }
    b.push_back(0xFF);
    b.push_back(0x52);
    put16(b, 12 + uint32_t(h.precincts.size()));
    b.push_back(uint8_t(h.scod | (h.precincts.empty() ? 0 : 1)));
    b.push_back(0);  // LRCP
    put16(b, h.layers);
    b.push_back(0);  // no MCT
    b.push_back(h.levels);
    b.push_back(h.xcb);
    b.push_back(h.ycb);
    b.push_back(0);
    b.push_back(1);  // 5/3
    for (uint8_t p : h.precincts) b.push_back(p);
    const uint32_t steps = 3u * h.levels + 1;
    b.push_back(0xFF);
    b.push_back(0x5C);
    put16(b, 3 + steps);
    b.push_back(uint8_t(h.guard_bits << 5));
    for (uint32_t i = 0; i < steps; ++i) b.push_back(uint8_t(h.exponent << 3));
    return b;
}

void append_tile_part(Bytes &b, uint16_t tile, const Bytes &body, uint8_t part = 0, uint8_t parts = 1,
                      const Bytes &header = {})
{
    b.push_back(0xFF);
    b.push_back(0x90);
    put16(b, 10);
    put16(b, tile);
    put32(b, uint32_t(12 + header.size() + 2 + body.size()));
    b.push_back(part);
    b.push_back(parts);
    b.insert(b.end(), header.begin(), header.end());
    b.push_back(0xFF);
    b.push_back(0x93);
    b.insert(b.end(), body.begin(), body.end());
}

Bytes finish(Bytes b)
{
    if (find_sots(b).empty()) append_tile_part(b, 0, {0x00});  // a header needs a tile-part after it
    b.push_back(0xFF);
    b.push_back(0xD9);
    return b;
}

/** Packet-header bits (B.10), MSB first, with the 0xFF bit stuffing of B.10.1. */
struct BitWriter {
    Bytes bytes;
    uint32_t acc = 0, n = 0;
    void bit(uint32_t v)
    {
        const uint32_t room = !bytes.empty() && bytes.back() == 0xFF ? 7 : 8;
        acc = acc << 1 | (v & 1);
        if (++n == room) {
            bytes.push_back(uint8_t(acc));
            acc = n = 0;
        }
    }
    void bits(uint32_t v, uint32_t count)
    {
        while (count--) bit(v >> count);
    }
    Bytes done()
    {
        if (n) {
            const uint32_t room = !bytes.empty() && bytes.back() == 0xFF ? 7 : 8;
            bytes.push_back(uint8_t(acc << (room - n)));
            acc = n = 0;
        }
        if (!bytes.empty() && bytes.back() == 0xFF) bytes.push_back(0);
        return bytes;
    }
    /** B.10.6 Table B.4. */
    void passes(uint32_t p)
    {
        if (p == 1)
            bit(0);
        else if (p == 2)
            bits(2, 2);
        else if (p <= 5)
            bits(0xC | (p - 3), 4);
        else if (p <= 36)
            bits(0x1E0 | (p - 6), 9);
        else
            bits(0xFF80 | (p - 37), 16);
    }
};

/**
 * A one-code-block packet header: included in layer 0, `zero` missing
 * bit-planes, `passes` passes, Lblock raised by `lblock_up`, one length.
 */
Bytes one_block_header(uint32_t zero, uint32_t passes, uint32_t lblock_up, uint32_t length, uint32_t length_bits)
{
    BitWriter w;
    w.bit(1);  // non-empty packet
    w.bit(1);  // inclusion tag tree: included in layer 0
    for (uint32_t i = 0; i < zero; ++i) w.bit(0);
    w.bit(1);  // zero bit-plane tag tree value `zero`
    w.passes(passes);
    for (uint32_t i = 0; i < lblock_up; ++i) w.bit(1);
    w.bit(0);
    w.bits(length, length_bits);
    return w.done();
}

// ---------------------------------------------------------------------------
// Decoding.

struct Limits {
    uint64_t max_pixels = 0, max_memory = 0;
    uint32_t max_components = 0, max_tiles = 0;
    uint64_t max_tile_components = 0;
    int reduce = 0, layers = 0;
};

struct Result {
    int parse = J2KC_ERR_INTERNAL;
    int decode = J2KC_ERR_INTERNAL;
    /** The first failure, or OK. */
    int status() const { return parse != J2KC_OK ? parse : decode; }
};

Result decode(const Bytes &data, const Limits &limits = {}, size_t size = SIZE_MAX)
{
    j2kc_decoder_config cfg;
    j2kc_decoder_config_default(&cfg);
    cfg.backend = J2KC_BACKEND_CPU;
    cfg.threads = 2;
    cfg.log = quiet;
    cfg.max_pixels = limits.max_pixels;
    cfg.max_memory = limits.max_memory;
    cfg.max_components = limits.max_components;
    cfg.max_tiles = limits.max_tiles;
    cfg.max_tile_components = limits.max_tile_components;
    cfg.reduce = limits.reduce;
    cfg.layers = limits.layers;
    Result r;
    j2kc_decoder *dec = nullptr;
    EXPECT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
    if (!dec) return r;
    if (size == SIZE_MAX) size = data.size();
    std::vector<j2kc_component_info> ci(64);
    j2kc_stream_info info{};
    info.struct_size = sizeof(info);
    info.components = ci.data();
    info.components_capacity = uint32_t(ci.size());
    const uint8_t dummy = 0;
    r.parse = j2kc_decoder_parse(dec, size ? data.data() : &dummy, size, &info);
    if (r.parse == J2KC_OK) {
        const uint32_t n = std::min<uint32_t>(info.num_components, uint32_t(ci.size()));
        std::vector<std::vector<uint32_t>> planes(n);
        std::vector<j2kc_component> comps(n);
        for (uint32_t c = 0; c < n; ++c) {
            planes[c].assign(size_t{ci[c].width} * ci[c].height, 0);
            j2kc_component &k = comps[c];
            std::memset(&k, 0, sizeof(k));
            k.data = reinterpret_cast<uint64_t>(planes[c].data());
            k.row_stride = ptrdiff_t(ci[c].width) * 4;
            k.sample_stride = 4;
            k.bytes_per_sample = 4;
            k.precision = std::min<uint8_t>(ci[c].precision, 32);
            k.is_signed = ci[c].is_signed;
            k.dx = ci[c].dx;
            k.dy = ci[c].dy;
            k.width = ci[c].width;
            k.height = ci[c].height;
        }
        j2kc_image out = j2kc_test::image_view(comps, info.width, info.height);  // comps holds n components
        r.decode = j2kc_decode(dec, data.data(), size, &out);
    }
    j2kc_decoder_free(&dec);
    return r;
}

int status_of(const Bytes &data, const Limits &limits = {}) { return decode(data, limits).status(); }

/** No internal errors, no crashes: every outcome is OK or a data-side status. */
::testing::AssertionResult graceful(int status)
{
    if (status == J2KC_OK || status == J2KC_ERR_INVALID_DATA || status == J2KC_ERR_UNSUPPORTED ||
        status == J2KC_ERR_LIMIT)
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << j2kc_status_string(status) << " (" << status << ")";
}

Bytes small_lossless(uint32_t w = 40, uint32_t h = 33, uint32_t comps = 1)
{
    return encode({w, h, comps, 8}, enc_config());
}

// ---------------------------------------------------------------------------
// Limits: each one refused with LIMIT at exactly the configured value.

TEST(HostileLimits, MaxPixels)
{
    const Bytes cs = small_lossless(40, 33);
    Limits l;
    l.max_pixels = 40 * 33;
    EXPECT_EQ(status_of(cs, l), J2KC_OK);
    l.max_pixels = 40 * 33 - 1;
    EXPECT_EQ(status_of(cs, l), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, MaxComponents)
{
    const Bytes cs = small_lossless(17, 9, 3);
    Limits l;
    l.max_components = 3;
    EXPECT_EQ(status_of(cs, l), J2KC_OK);
    l.max_components = 2;
    EXPECT_EQ(status_of(cs, l), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, MaxTiles)
{
    j2kc_encoder_config cfg = enc_config();
    cfg.levels = 2;
    cfg.tile_width = 16;
    cfg.tile_height = 16;
    const Bytes cs = encode({40, 33, 1, 8}, cfg);  // 3 x 3 tiles
    Limits l;
    l.max_tiles = 9;
    EXPECT_EQ(status_of(cs, l), J2KC_OK);
    l.max_tiles = 8;
    EXPECT_EQ(status_of(cs, l), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, MaxMemorySamples)
{
    const Bytes cs = small_lossless(40, 33, 3);
    Limits l;
    l.max_memory = 4ull * 40 * 33 * 3 - 1;
    EXPECT_EQ(status_of(cs, l), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, HugeDeclaredSizeDefaults)
{
    Hand h;
    h.width = 0xFFFFFFFFu;
    h.height = 0xFFFFFFFFu;
    h.tile_w = 0xFFFFFFFFu;
    h.tile_h = 0xFFFFFFFFu;
    EXPECT_EQ(status_of(finish(main_header(h))), J2KC_ERR_LIMIT);
    h.width = 1u << 20;  // 2^40 pixels in one column of tiles
    h.height = 1u << 20;
    EXPECT_EQ(status_of(finish(main_header(h))), J2KC_ERR_LIMIT);
    h.components = 16384;  // legal Csiz, over the default memory limit
    h.width = h.height = h.tile_w = h.tile_h = 32768;
    EXPECT_EQ(status_of(finish(main_header(h))), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, TooManyTilesForIsot)
{
    Hand h;
    h.width = h.height = 1024;
    h.tile_w = h.tile_h = 2;  // 262144 tiles: more than Isot can number
    EXPECT_EQ(status_of(finish(main_header(h))), J2KC_ERR_INVALID_DATA);
}

TEST(HostileLimits, MaxTileComponents)
{
    j2kc_encoder_config cfg = enc_config();
    cfg.levels = 2;
    cfg.tile_width = 16;
    cfg.tile_height = 16;
    const Bytes cs = encode({40, 33, 3, 8}, cfg);  // 3 x 3 tiles of 3 components
    Limits l;
    l.max_tile_components = 27;
    EXPECT_EQ(status_of(cs, l), J2KC_OK);
    l.max_tile_components = 26;
    EXPECT_EQ(status_of(cs, l), J2KC_ERR_LIMIT);
    // The tile and component limits on their own let it through.
    l.max_tiles = 9;
    l.max_components = 3;
    EXPECT_EQ(status_of(cs, l), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, ManyTilesOfManyComponentsDefaults)
{
    // 255 x 257 = 65535 tiles of 1 x 1 sample, each with 16384 components:
    // a ~49 KB main header within every other default limit (65535 pixels,
    // 65535 tiles, 16384 components, 2^30 samples = 4 GiB < 16 GiB) that
    // would make the decoder walk a billion tile-components. Refused by the
    // default tile-component limit (2^20) before anything is built.
    Hand h;
    h.width = 255;
    h.height = 257;
    h.tile_w = h.tile_h = 1;
    h.components = 16384;
    const Bytes many = finish(main_header(h));
    EXPECT_EQ(status_of(many), J2KC_ERR_LIMIT);
    // Just over the default with 17 components; just under it with 16
    // (1,048,560 tile-components), which is refused only when asked to be.
    h.components = 17;
    EXPECT_EQ(status_of(finish(main_header(h))), J2KC_ERR_LIMIT);
    h.components = 16;
    Limits l;
    l.max_tile_components = 65535u * 16 - 1;
    EXPECT_EQ(status_of(finish(main_header(h)), l), J2KC_ERR_LIMIT);
}

// A 4096 x 4096 image declared by a file of a few hundred bytes: whatever the
// outcome, the decoder may not allocate more than the memory limit (plus
// a small constant), and it never makes a single allocation beyond it.
void expect_bounded(const Bytes &cs, uint64_t max_memory, const char *what)
{
    Limits l;
    l.max_memory = max_memory;
    int status;
    int64_t peak;
    uint64_t largest;
    {
        // The output planes (4 bytes a sample) are the caller's: sized before counting starts.
        j2kc_decoder_config cfg;
        j2kc_decoder_config_default(&cfg);
        cfg.backend = J2KC_BACKEND_CPU;
        cfg.threads = 2;
        cfg.log = quiet;
        cfg.max_memory = max_memory;
        j2kc_decoder *dec = nullptr;
        ASSERT_EQ(j2kc_decoder_create(&dec, &cfg), J2KC_OK);
        std::vector<j2kc_component_info> ci(4);
        j2kc_stream_info info{};
        info.struct_size = sizeof(info);
        info.components = ci.data();
        info.components_capacity = 4;
        status = j2kc_decoder_parse(dec, cs.data(), cs.size(), &info);
        std::vector<std::vector<uint32_t>> planes;
        std::vector<j2kc_component> comps;
        j2kc_image out{};
        if (status == J2KC_OK) {
            const uint32_t n = std::min<uint32_t>(info.num_components, 4);
            planes.resize(n);
            comps.resize(n);
            for (uint32_t c = 0; c < n; ++c) {
                planes[c].assign(size_t{ci[c].width} * ci[c].height, 0);
                j2kc_component &k = comps[c];
                std::memset(&k, 0, sizeof(k));
                k.data = reinterpret_cast<uint64_t>(planes[c].data());
                k.row_stride = ptrdiff_t(ci[c].width) * 4;
                k.sample_stride = k.bytes_per_sample = 4;
                k.precision = ci[c].precision;
                k.dx = ci[c].dx;
                k.dy = ci[c].dy;
                k.width = ci[c].width;
                k.height = ci[c].height;
            }
            out.struct_size = sizeof(out);
            out.memory = J2KC_MEMORY_HOST;
            out.width = info.width;
            out.height = info.height;
            out.num_components = n;
            out.components = comps.data();
        }
        AllocationMeter meter;
        if (status == J2KC_OK) status = j2kc_decode(dec, cs.data(), cs.size(), &out);
        peak = meter.peak();
        largest = meter.largest();
        j2kc_decoder_free(&dec);
    }
    EXPECT_TRUE(graceful(status)) << what;
    EXPECT_LE(uint64_t(std::max<int64_t>(peak, 0)), max_memory + (1u << 20))
        << what << ": status " << j2kc_status_string(status);
    EXPECT_LE(largest, max_memory) << what;
}

TEST(HostileLimits, SmallFileAllocatesWithinMemoryLimit)
{
    Hand h;
    h.width = h.height = 4096;
    h.levels = 5;
    const Bytes plain = finish(main_header(h));
    ASSERT_LT(plain.size(), 1024u);
    const uint64_t samples = 4096ull * 4096;
    // Enough for the samples (4 bytes each) and twice more.
    expect_bounded(plain, samples * 12, "64x64 code-blocks");
    // 4x4 code-blocks and 2x2 precincts: a million code-blocks' bookkeeping
    // for the same samples. It must either fit the limit or be refused.
    h.xcb = h.ycb = 0;
    h.precincts.assign(h.levels + 1u, 0x11);
    expect_bounded(finish(main_header(h)), samples * 12, "4x4 code-blocks, 2x2 precincts");
    // The same within a tight limit: refused before the bookkeeping is built.
    Limits l;
    l.max_memory = samples * 5;
    EXPECT_EQ(status_of(finish(main_header(h)), l), J2KC_ERR_LIMIT);
}

TEST(HostileLimits, CodeBlockBookkeepingCountsAgainstMemory)
{
    // 1x1 precincts at resolution 0 and 2x2 above put one code-block on
    // nearly every coefficient; the partition alone would need far more than
    // the 4 bytes a sample that the samples check allows for.
    Hand h;
    h.width = h.height = 1024;
    h.levels = 1;
    h.xcb = h.ycb = 0;
    h.precincts = {0x00, 0x11};
    Limits l;
    l.max_memory = 1024ull * 1024 * 16;
    EXPECT_EQ(status_of(finish(main_header(h)), l), J2KC_ERR_LIMIT);
    l.max_memory = 0;  // the default (16 GiB) lets it through
    EXPECT_TRUE(graceful(status_of(finish(main_header(h)), l)));
}

// ---------------------------------------------------------------------------
// Truncation: every prefix of streams of each kind decodes or fails cleanly.

void every_prefix(const Bytes &cs, const char *what, size_t step = 1)
{
    ASSERT_FALSE(cs.empty());
    int ok = 0;
    EXPECT_EQ(decode(cs, {}, 0).status(), J2KC_ERR_INVALID_ARG);  // no data: the caller's mistake
    for (size_t cut = 1; cut <= cs.size(); cut += step) {
        const int s = decode(cs, {}, cut).status();
        EXPECT_TRUE(graceful(s)) << what << " cut at " << cut << " of " << cs.size();
        ok += s == J2KC_OK;
    }
    EXPECT_EQ(decode(cs).status(), J2KC_OK) << what;
    EXPECT_GT(ok, 0) << what;
}

TEST(HostileTruncation, EveryOffsetRich) { every_prefix(rich_stream(), "rich"); }

TEST(HostileTruncation, EveryOffsetLossless) { every_prefix(small_lossless(23, 19, 3), "lossless"); }

TEST(HostileTruncation, EveryOffsetHandWritten)
{
    Hand h;
    const Bytes body = one_block_header(1, 1, 0, 3, 3);
    Bytes b = main_header(h);
    append_tile_part(b, 0, Bytes(body.begin(), body.end()));
    b.insert(b.end(), {0x12, 0x34, 0x56});
    every_prefix(finish(b), "hand");
}

// ---------------------------------------------------------------------------
// Lying main-header values.

Bytes with_siz(std::function<void(Bytes &, size_t)> edit)
{
    Bytes cs = small_lossless(21, 17, 3);
    const size_t siz = find_main_marker(cs, 0xFF51);
    EXPECT_NE(siz, std::string::npos);
    edit(cs, siz);
    return cs;
}

TEST(HostileSiz, LyingValues)
{
    // Offsets inside SIZ: +4 Rsiz, +6 Xsiz, +10 Ysiz, +14 XOsiz, +18 YOsiz, +22 XTsiz,
    // +26 YTsiz, +30 XTOsiz, +34 YTOsiz, +38 Csiz, +40 Ssiz0, +41 XRsiz0, +42 YRsiz0.
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { set32(b, s + 6, 0); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { set32(b, s + 14, 21); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { set32(b, s + 22, 0); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { set32(b, s + 30, 5); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { set16(b, s + 38, 4); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { set16(b, s + 38, 0); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { b[s + 40] = 0x7F; })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { b[s + 41] = 0; })), J2KC_ERR_INVALID_DATA);
    // XRsiz 255 on a 21-wide image: a legal, 1-sample-wide component; the
    // stream's data no longer fits it, but nothing may go wrong.
    EXPECT_TRUE(graceful(status_of(with_siz([](Bytes &b, size_t s) { b[s + 44] = 255; }))));
    // Larger than the data was coded for: still decodes (or fails) cleanly.
    EXPECT_TRUE(graceful(status_of(with_siz([](Bytes &b, size_t s) { set32(b, s + 6, 4000); }))));
    // 38-bit samples: legal, beyond the 32 bits the sample stages hold.
    EXPECT_EQ(status_of(with_siz([](Bytes &b, size_t s) { b[s + 40] = 37; })), J2KC_ERR_UNSUPPORTED);
    EXPECT_TRUE(graceful(status_of(with_siz([](Bytes &b, size_t s) { b[s + 40] = 0x80 | 15; }))));
}

Bytes with_cod(std::function<void(Bytes &, size_t)> edit, bool main_header_only = true)
{
    Bytes cs = small_lossless(21, 17, 1);
    const size_t cod = find_main_marker(cs, 0xFF52);
    EXPECT_NE(cod, std::string::npos);
    edit(cs, cod);
    (void)main_header_only;
    return cs;
}

TEST(HostileCod, LyingValues)
{
    // +4 Scod, +5 progression, +6 layers, +8 MCT, +9 levels, +10 xcb, +11 ycb, +12 style, +13 transform.
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 4] |= 0x80; })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 5] = 5; })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { set16(b, s + 6, 0); })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 8] = 2; })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 9] = 33; })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 10] = 9; })), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 10] = 5, b[s + 11] = 5; })), J2KC_ERR_INVALID_DATA);
    // Part-1 code-blocks read as HT ones or as MIXED ones (Part 15): a clean
    // outcome either way; bit 7 without bit 6 is refused.
    EXPECT_TRUE(graceful(status_of(with_cod([](Bytes &b, size_t s) { b[s + 12] = 0x40; }))));
    EXPECT_TRUE(graceful(status_of(with_cod([](Bytes &b, size_t s) { b[s + 12] = 0xC0; }))));
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 12] = 0x80; })), J2KC_ERR_UNSUPPORTED);
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 13] = 2; })), J2KC_ERR_INVALID_DATA);
    // More levels than the data was coded with (QCD then has too few steps),
    // more layers than coded, another progression: clean outcomes.
    EXPECT_TRUE(graceful(status_of(with_cod([](Bytes &b, size_t s) { b[s + 9] = 32; }))));
    EXPECT_TRUE(graceful(status_of(with_cod([](Bytes &b, size_t s) { set16(b, s + 6, 65535); }))));
    EXPECT_TRUE(graceful(status_of(with_cod([](Bytes &b, size_t s) { b[s + 5] = 4; }))));
    EXPECT_TRUE(graceful(status_of(with_cod([](Bytes &b, size_t s) { b[s + 12] = 0x3F; }))));
    // Scod says precincts follow, but Lcod has no room for them.
    EXPECT_EQ(status_of(with_cod([](Bytes &b, size_t s) { b[s + 4] |= 1; })), J2KC_ERR_INVALID_DATA);
}

TEST(HostileQcd, LyingValues)
{
    Hand h;
    h.levels = 2;
    const Bytes body = {0x00};  // one empty packet is enough; the header is what is tested
    auto with = [&](const Hand &hh, std::function<void(Bytes &)> edit) {
        Bytes b = main_header(hh);
        edit(b);
        append_tile_part(b, 0, body);
        return finish(b);
    };
    auto qcd_at = [](const Bytes &b) { return find_main_marker(b, 0xFF5C); };
    EXPECT_EQ(status_of(with(h, [](Bytes &) {})), J2KC_OK);
    // Quantisation style 3.
    EXPECT_EQ(status_of(with(h, [&](Bytes &b) { b[qcd_at(b) + 4] |= 3; })), J2KC_ERR_INVALID_DATA);
    // Fewer steps than the bands need (7 for 2 levels): Lqcd says 4.
    EXPECT_EQ(status_of(with(h,
                             [&](Bytes &b) {
                                 const size_t q = qcd_at(b);
                                 set16(b, q + 2, 4);
                                 b.erase(b.begin() + long(q + 6), b.begin() + long(q + 11));
                             })),
              J2KC_ERR_INVALID_DATA);
    // Exponent 31 with 7 guard bits: 37 magnitude bit-planes, the most Tier-1 can hold.
    Hand deep = h;
    deep.exponent = 31;
    deep.guard_bits = 7;
    EXPECT_TRUE(graceful(status_of(with(deep, [](Bytes &) {}))));
    // A packet that uses such a band: more bit-planes than any sample can have.
    Bytes b = main_header(deep);
    Hand one;
    one.exponent = 31;
    one.guard_bits = 7;
    b = main_header(one);
    append_tile_part(b, 0, one_block_header(0, 1, 0, 2, 3));
    b.insert(b.end(), {0x00, 0x00});
    EXPECT_TRUE(graceful(status_of(finish(b))));
}

// ---------------------------------------------------------------------------
// Marker segment lengths.

TEST(HostileMarkers, BadLengths)
{
    const Bytes cs = small_lossless(21, 17, 1);
    for (uint16_t m : {0xFF51, 0xFF52, 0xFF5C}) {
        const size_t at = find_main_marker(cs, m);
        ASSERT_NE(at, std::string::npos);
        for (uint32_t len : {0u, 1u, 2u, 3u, 0xFFFFu}) {
            Bytes b = cs;
            set16(b, at + 2, len);
            EXPECT_TRUE(graceful(status_of(b))) << std::hex << m << " length " << std::dec << len;
            EXPECT_NE(status_of(b), J2KC_OK) << std::hex << m << " length " << std::dec << len;
        }
        // One byte too long / short.
        for (int d : {-1, 1}) {
            Bytes b = cs;
            set16(b, at + 2, uint32_t(int(get16(cs, at + 2)) + d));
            EXPECT_NE(status_of(b), J2KC_OK) << std::hex << m << " length off by " << std::dec << d;
        }
    }
    // No SOC; SIZ not first; a main header that ends at a truncated marker.
    Bytes b = cs;
    b[1] = 0x50;
    EXPECT_EQ(status_of(b), J2KC_ERR_INVALID_DATA);
    b = cs;
    b[3] = 0x52;
    EXPECT_EQ(status_of(b), J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(Bytes{0xFF, 0x4F, 0xFF}), J2KC_ERR_INVALID_DATA);
}

TEST(HostileMarkers, UnknownAndRepeatedSegments)
{
    Bytes cs = small_lossless(21, 17, 1);
    const size_t cod = find_main_marker(cs, 0xFF52);
    // An unknown segment is skipped; a second SIZ or a COM of absurd length is not.
    Bytes b = cs;
    const Bytes unknown = {0xFF, 0x30 + 0x0F, 0xFF, 0x7A, 0x00, 0x04, 0xAB, 0xCD};
    b.insert(b.begin() + long(cod), unknown.begin() + 2, unknown.end());
    EXPECT_TRUE(graceful(status_of(b)));
    b = cs;
    const size_t siz = find_main_marker(cs, 0xFF51);
    const Bytes siz_copy(cs.begin() + long(siz), cs.begin() + long(siz + 2 + get16(cs, siz + 2)));
    b.insert(b.begin() + long(cod), siz_copy.begin(), siz_copy.end());
    EXPECT_EQ(status_of(b), J2KC_ERR_INVALID_DATA);
}

// ---------------------------------------------------------------------------
// Tile-parts: Psot, TPsot, TNsot, Isot.

TEST(HostileTileParts, BadSotFields)
{
    const Bytes cs = rich_stream();
    const std::vector<size_t> sots = find_sots(cs);
    ASSERT_GT(sots.size(), 4u);
    const size_t first = sots[0], mid = sots[sots.size() / 2];
    auto edit = [&](std::function<void(Bytes &)> f) {
        Bytes b = cs;
        f(b);
        return status_of(b);
    };
    // Isot beyond the tile grid (2 x 2 tiles).
    EXPECT_EQ(edit([&](Bytes &b) { set16(b, first + 4, 4); }), J2KC_ERR_INVALID_DATA);
    // Psot shorter than SOT + SOD; Psot in the middle of the next header.
    EXPECT_EQ(edit([&](Bytes &b) { set32(b, first + 6, 13); }), J2KC_ERR_INVALID_DATA);
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { set32(b, first + 6, get32(cs, first + 6) + 3); })));
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { set32(b, first + 6, get32(cs, first + 6) - 3); })));
    // Psot far past the end on the last tile-part: kept, with a warning.
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { set32(b, sots.back() + 6, 0x7FFFFFFF); })));
    // Psot far past the end in the middle: what follows is lost, never read.
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { set32(b, mid + 6, 0xFFFFFFFF); })));
    // Psot 0 (runs to EOC) on a tile-part that is not the last.
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { set32(b, first + 6, 0); })));
    // TPsot 255; TPsot out of order; TPsot >= TNsot; TNsot 0 and changing.
    EXPECT_EQ(edit([&](Bytes &b) { b[first + 10] = 255; }), J2KC_ERR_INVALID_DATA);
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { b[mid + 10] = uint8_t(b[mid + 10] + 1); })));
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { b[first + 11] = 1; })));
    EXPECT_TRUE(graceful(edit([&](Bytes &b) {
        for (size_t s : sots) b[s + 11] = 0;
    })));
    EXPECT_TRUE(graceful(edit([&](Bytes &b) { b[mid + 11] = 200; })));
    // Lsot other than 10.
    EXPECT_EQ(edit([&](Bytes &b) { set16(b, first + 2, 11); }), J2KC_ERR_INVALID_DATA);
    // Every tile-part claims tile 0.
    EXPECT_TRUE(graceful(edit([&](Bytes &b) {
        for (size_t s : sots) set16(b, s + 4, 0);
    })));
}

TEST(HostileTileParts, TileHeaderRules)
{
    Hand h;
    h.levels = 1;
    const Bytes main = main_header(h);
    // A SIZ in a tile-part header; a COD after the first tile-part of a tile.
    const Bytes siz(main.begin() + 2, main.begin() + 2 + 2 + get16(main, 4));
    Bytes b = main;
    append_tile_part(b, 0, {0x00}, 0, 1, siz);
    EXPECT_EQ(status_of(finish(b)), J2KC_ERR_INVALID_DATA);
    const size_t cod_at = find_main_marker(main, 0xFF52);
    const Bytes cod(main.begin() + long(cod_at), main.begin() + long(cod_at + 2 + get16(main, cod_at + 2)));
    b = main;
    append_tile_part(b, 0, {0x00}, 0, 2);
    append_tile_part(b, 0, {0x00}, 1, 2, cod);
    EXPECT_TRUE(graceful(status_of(finish(b))));
    // A tile-part header segment whose length runs past Psot.
    b = main;
    Bytes com = {0xFF, 0x64, 0x00, 0x40, 0x00, 0x01};
    append_tile_part(b, 0, {0x00}, 0, 1, com);
    EXPECT_EQ(status_of(finish(b)), J2KC_ERR_INVALID_DATA);
}

// ---------------------------------------------------------------------------
// PPM / PPT.

Bytes ppm_segment(uint8_t z, const Bytes &records)
{
    Bytes s = {0xFF, 0x60};
    put16(s, uint32_t(3 + records.size()));
    s.push_back(z);
    s.insert(s.end(), records.begin(), records.end());
    return s;
}

Bytes ppt_segment(uint8_t z, const Bytes &headers)
{
    Bytes s = {0xFF, 0x61};
    put16(s, uint32_t(3 + headers.size()));
    s.push_back(z);
    s.insert(s.end(), headers.begin(), headers.end());
    return s;
}

/** One code-block, one packet: its header in PPM (main) or PPT (tile), body {0x80 0x00} in the tile-part. */
Bytes packed_stream(bool ppm, const Bytes &header, uint32_t nppm_delta = 0)
{
    Hand h;
    Bytes b = main_header(h);
    const Bytes body = {0x80, 0x00};
    if (ppm) {
        Bytes rec;
        put32(rec, uint32_t(header.size() + nppm_delta));
        rec.insert(rec.end(), header.begin(), header.end());
        const Bytes seg = ppm_segment(0, rec);
        b.insert(b.end(), seg.begin(), seg.end());
        append_tile_part(b, 0, body);
    } else {
        append_tile_part(b, 0, body, 0, 1, ppt_segment(0, header));
    }
    return finish(b);
}

TEST(HostilePacked, Consistent)
{
    const Bytes hdr = one_block_header(1, 1, 0, 2, 3);
    EXPECT_EQ(status_of(packed_stream(true, hdr)), J2KC_OK);
    EXPECT_EQ(status_of(packed_stream(false, hdr)), J2KC_OK);
}

TEST(HostilePacked, Inconsistencies)
{
    const Bytes hdr = one_block_header(1, 1, 0, 2, 3);
    // Nppm larger than the PPM data; smaller than the header it holds.
    EXPECT_EQ(status_of(packed_stream(true, hdr, 100)), J2KC_ERR_INVALID_DATA);
    EXPECT_TRUE(graceful(status_of(packed_stream(true, hdr, uint32_t(-1)))));
    EXPECT_EQ(status_of(packed_stream(true, hdr, 0x80000000u)), J2KC_ERR_INVALID_DATA);
    // PPM in the main header and PPT in a tile-part header.
    Hand h;
    Bytes b = main_header(h);
    Bytes rec;
    put32(rec, uint32_t(hdr.size()));
    rec.insert(rec.end(), hdr.begin(), hdr.end());
    const Bytes seg = ppm_segment(0, rec);
    b.insert(b.end(), seg.begin(), seg.end());
    append_tile_part(b, 0, {0x80, 0x00}, 0, 1, ppt_segment(0, hdr));
    EXPECT_EQ(status_of(finish(b)), J2KC_ERR_INVALID_DATA);
    // PPM records for fewer tile-parts than present.
    b = main_header(h);
    b.insert(b.end(), seg.begin(), seg.end());
    append_tile_part(b, 0, {0x80, 0x00}, 0, 2);
    append_tile_part(b, 0, {}, 1, 2);
    EXPECT_EQ(status_of(finish(b)), J2KC_ERR_INVALID_DATA);
    // Zppm / Zppt out of order or repeated.
    b = main_header(h);
    const Bytes seg1 = ppm_segment(1, rec);
    b.insert(b.end(), seg1.begin(), seg1.end());
    append_tile_part(b, 0, {0x80, 0x00});
    EXPECT_TRUE(graceful(status_of(finish(b))));
    b = main_header(h);
    Bytes two = ppt_segment(0, Bytes(hdr.begin(), hdr.begin() + 1));
    const Bytes rest = ppt_segment(0, Bytes(hdr.begin() + 1, hdr.end()));
    two.insert(two.end(), rest.begin(), rest.end());
    append_tile_part(b, 0, {0x80, 0x00}, 0, 1, two);
    EXPECT_TRUE(graceful(status_of(finish(b))));
    // Packed headers that end before the packet's header does: truncated, never read beyond.
    EXPECT_TRUE(graceful(status_of(packed_stream(false, Bytes(hdr.begin(), hdr.begin() + 1)))));
    EXPECT_TRUE(graceful(status_of(packed_stream(true, Bytes{}))));
    // PPT with an empty body (Lppt 3).
    EXPECT_TRUE(graceful(status_of(packed_stream(false, Bytes{}))));
}

// ---------------------------------------------------------------------------
// Packet headers (B.10) with impossible values.

Bytes one_block_stream(const Bytes &packet_header, const Bytes &body, Hand h = {})
{
    Bytes b = main_header(h);
    Bytes data = packet_header;
    data.insert(data.end(), body.begin(), body.end());
    append_tile_part(b, 0, data);
    return finish(b);
}

TEST(HostilePackets, ValidOneBlock)
{
    // 8 magnitude bit-planes (guard 1 + exponent 8 - 1), 1 missing: one cleanup pass of 2 bytes.
    EXPECT_EQ(status_of(one_block_stream(one_block_header(1, 1, 0, 2, 3), {0x80, 0x00})), J2KC_OK);
}

/** Decodes, expecting success with `blocks` code-blocks reported corrupt (decoded as zero). */
void expect_corrupt_blocks(const Bytes &cs, int blocks, const Limits &l = {})
{
    g_corrupt_warnings = 0;
    EXPECT_EQ(status_of(cs, l), J2KC_OK);
    EXPECT_EQ(g_corrupt_warnings.load(), blocks);
}

TEST(HostilePackets, ImpossiblePassCounts)
{
    // Passes beyond the last bit-plane are ignored, as OpenJPEG and Grok
    // ignore them (OpenJPEG 2.3.1 wrote such blocks for 1-bit components):
    // 164 passes where 8 bit-planes hold at most 22, and 23, decode.
    expect_corrupt_blocks(one_block_stream(one_block_header(0, 164, 0, 2, 3 + 7), {0x80, 0x00}), 0);
    expect_corrupt_blocks(one_block_stream(one_block_header(0, 23, 0, 2, 3 + 4), {0x80, 0x00}), 0);
    expect_corrupt_blocks(one_block_stream(one_block_header(0, 22, 0, 2, 3 + 4), {0x80, 0x00}), 0);
    // More missing bit-planes than the band has: the block is corrupt, so the
    // frame decodes (the block as zero) with a warning, as mature decoders do.
    expect_corrupt_blocks(one_block_stream(one_block_header(9, 1, 0, 2, 3), {0x80, 0x00}), 1);
    // The zero bit-plane tag tree never terminating (all 0 bits).
    Bytes zeros = {0xC0};
    zeros.resize(64, 0x00);
    EXPECT_TRUE(graceful(status_of(one_block_stream(zeros, {}))));
}

TEST(HostilePackets, ImpossibleLengths)
{
    // Lblock raised past 32 bits.
    EXPECT_EQ(status_of(one_block_stream(one_block_header(1, 1, 40, 0, 0), {})), J2KC_ERR_INVALID_DATA);
    // A 2^31-byte segment in a tiny file: cut to the data there is.
    EXPECT_TRUE(graceful(status_of(one_block_stream(one_block_header(1, 1, 28, 0x7FFFFFFF, 31), {0x80}))));
    // Zero-length segment with a pass.
    EXPECT_TRUE(graceful(status_of(one_block_stream(one_block_header(1, 1, 0, 0, 3), {}))));
    // Many layers, each adding passes to the same block: 40 passes, the last
    // 18 beyond the planes (ignored), in segments of 0 bytes.
    Hand h;
    h.layers = 40;
    Bytes hdr;
    {
        BitWriter w;
        w.bit(1);
        w.bit(1);
        w.bit(1);  // zero bit-planes 0
        w.passes(1);
        w.bit(0);
        w.bits(0, 3);
        for (int l = 1; l < 40; ++l) {
            // Next packet header starts on a byte boundary.
            Bytes part = w.done();
            hdr.insert(hdr.end(), part.begin(), part.end());
            w = BitWriter();
            w.bit(1);
            w.bit(1);  // included again
            w.passes(1);
            w.bit(0);
            w.bits(0, 3);
        }
        Bytes part = w.done();
        hdr.insert(hdr.end(), part.begin(), part.end());
    }
    expect_corrupt_blocks(one_block_stream(hdr, {}, h), 0);
    Limits l;
    l.layers = 3;
    expect_corrupt_blocks(one_block_stream(hdr, {}, h), 0, l);
}

TEST(HostilePackets, RandomHeaderBits)
{
    // Random bits where packet headers and bodies should be, over several geometries.
    std::mt19937 rng(11);
    for (int i = 0; i < 300; ++i) {
        Hand h;
        h.width = 1 + rng() % 70;
        h.height = 1 + rng() % 70;
        h.levels = uint8_t(rng() % 4);
        h.layers = uint16_t(1 + rng() % 4);
        h.xcb = uint8_t(rng() % 4);
        h.ycb = uint8_t(rng() % 4);
        h.scod = uint8_t((rng() % 2) << 2);  // EPH sometimes
        Bytes body(rng() % 200);
        for (auto &v : body) v = uint8_t(rng() % 3 == 0 ? 0xFF : rng());
        Bytes b = main_header(h);
        append_tile_part(b, 0, body);
        const int s = status_of(finish(b));
        EXPECT_TRUE(graceful(s)) << "case " << i;
    }
}

// ---------------------------------------------------------------------------
// JP2 boxes.

void box(Bytes &b, const char *type, const Bytes &payload)
{
    put32(b, uint32_t(8 + payload.size()));
    b.insert(b.end(), type, type + 4);
    b.insert(b.end(), payload.begin(), payload.end());
}

Bytes jp2_signature_and_ftyp()
{
    Bytes b;
    box(b, "jP  ", {0x0D, 0x0A, 0x87, 0x0A});
    box(b, "ftyp", {'j', 'p', '2', ' ', 0, 0, 0, 0, 'j', 'p', '2', ' '});
    return b;
}

Bytes ihdr(uint32_t w, uint32_t h, uint16_t nc, uint8_t bpc)
{
    Bytes p;
    put32(p, h);
    put32(p, w);
    put16(p, nc);
    p.push_back(bpc);
    p.push_back(7);
    p.push_back(0);
    p.push_back(0);
    return p;
}

Bytes colr_srgb() { return {1, 0, 0, 0, 0, 0, 16}; }

TEST(HostileJp2, BoxStructure)
{
    const Bytes cs = small_lossless(13, 11, 3);
    auto jp2 = [&](std::function<void(Bytes &)> jp2h_extra, bool with_jp2c = true) {
        Bytes b = jp2_signature_and_ftyp();
        Bytes h;
        box(h, "ihdr", ihdr(13, 11, 3, 7));
        box(h, "colr", colr_srgb());
        jp2h_extra(h);
        box(b, "jp2h", h);
        if (with_jp2c) box(b, "jp2c", cs);
        return b;
    };
    EXPECT_EQ(status_of(jp2([](Bytes &) {})), J2KC_OK);
    EXPECT_EQ(status_of(jp2([](Bytes &) {}, false)), J2KC_ERR_INVALID_DATA);
    // A box length smaller than its header, or running past its superbox.
    EXPECT_EQ(status_of(jp2([](Bytes &h) {
                  put32(h, 4), h.insert(h.end(), {'a', 'b', 'c', 'd'});
              })),
              J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(jp2([](Bytes &h) {
                  put32(h, 1000), h.insert(h.end(), {'x', 'x', 'x', 'x'});
              })),
              J2KC_ERR_INVALID_DATA);
    // XLBox (length 1) with a 64-bit length beyond the file; XLBox smaller than 16.
    EXPECT_EQ(status_of(jp2([](Bytes &h) {
                  put32(h, 1);
                  h.insert(h.end(), {'x', 'x', 'x', 'x'});
                  put32(h, 0xFFFFFFFF);
                  put32(h, 0xFFFFFFF0);
              })),
              J2KC_ERR_INVALID_DATA);
    EXPECT_EQ(status_of(jp2([](Bytes &h) {
                  put32(h, 1);
                  h.insert(h.end(), {'x', 'x', 'x', 'x'});
                  put32(h, 0);
                  put32(h, 8);
              })),
              J2KC_ERR_INVALID_DATA);
    // Deeply nested superboxes: jp2h inside jp2h inside ... (only the top one is entered).
    EXPECT_TRUE(graceful(status_of(jp2([](Bytes &h) {
        Bytes inner;
        box(inner, "ihdr", ihdr(13, 11, 3, 7));
        for (int d = 0; d < 2000; ++d) {
            Bytes outer;
            box(outer, d % 2 ? "jp2h" : "res ", inner);
            inner.swap(outer);
        }
        h.insert(h.end(), inner.begin(), inner.end());
    }))));
    // A well-formed palette is decoded (I.5.3.4); a cmap naming a column the
    // palette lacks is invalid data, not a read past the palette.
    EXPECT_EQ(status_of(jp2([](Bytes &h) {
                  box(h, "pclr", {0, 2, 1, 7, 0, 255});
                  box(h, "cmap", {0, 0, 1, 0});
              })),
              J2KC_OK);
    EXPECT_EQ(status_of(jp2([](Bytes &h) {
                  box(h, "pclr", {0, 2, 1, 7, 0, 255});
                  box(h, "cmap", {0, 0, 1, 5});
              })),
              J2KC_ERR_INVALID_DATA);
    // Palette without cmap.
    EXPECT_EQ(status_of(jp2([](Bytes &h) { box(h, "pclr", {0, 2, 1, 7, 0, 255}); })), J2KC_ERR_INVALID_DATA);
    // A cdef naming a channel the codestream lacks, or with N larger than its
    // payload: dropped (the channels keep their coded order), the image decodes.
    EXPECT_EQ(status_of(jp2([](Bytes &h) { box(h, "cdef", {0, 1, 0, 40, 0, 0, 0, 1}); })), J2KC_OK);
    EXPECT_EQ(status_of(jp2([](Bytes &h) { box(h, "cdef", {0x7F, 0xFF, 0, 0}); })), J2KC_OK);
}

TEST(HostileJp2, Truncated)
{
    j2kc_encoder_config cfg = enc_config();
    Bytes cs = encode({13, 11, 3, 8}, cfg);
    Bytes b = jp2_signature_and_ftyp();
    Bytes h;
    box(h, "ihdr", ihdr(13, 11, 3, 7));
    box(h, "colr", colr_srgb());
    box(b, "jp2h", h);
    box(b, "jp2c", cs);
    every_prefix(b, "jp2", 3);
}

// ---------------------------------------------------------------------------
// Random damage to valid streams of several kinds.

TEST(HostileDamage, RandomBytes)
{
    const std::vector<Bytes> streams = {rich_stream(), small_lossless(23, 19, 3)};
    std::mt19937 rng(77);
    for (const Bytes &cs : streams) {
        for (int i = 0; i < 150; ++i) {
            Bytes b = cs;
            const int hits = 1 + int(rng() % 6);
            for (int k = 0; k < hits; ++k) b[rng() % b.size()] = uint8_t(rng());
            Limits l;
            l.reduce = int(rng() % 3);
            l.layers = int(rng() % 3);
            EXPECT_TRUE(graceful(status_of(b, l))) << "case " << i;
        }
    }
}

}  // namespace
