/**
 * @file reader.cpp
 * @brief Codestream syntax, ISO/IEC 15444-1 Annex A: marker segments (A.2-A.9),
 * the main and tile-part headers (A.4), tile-part ordering (A.4.2), packed
 * packet headers PPM/PPT (A.7.4, A.7.5) and packet lengths TLM/PLM/PLT (A.7).
 *
 * The input comes from strangers: every length is checked against the bytes
 * that are there, every count against the standard and the caller's limits
 * before it sizes anything, and each error names the marker and its offset.
 */
#include "codestream/reader.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <utility>

#include "common/byte_io.h"
#include "common/status.h"

namespace j2kc {

const char *marker_name(uint16_t marker)
{
    switch (marker) {
    case kSOC: return "SOC";
    case kCAP: return "CAP";
    case kSIZ: return "SIZ";
    case kCOD: return "COD";
    case kCOC: return "COC";
    case kTLM: return "TLM";
    case kPRF: return "PRF";
    case kPLM: return "PLM";
    case kPLT: return "PLT";
    case kCPF: return "CPF";
    case kQCD: return "QCD";
    case kQCC: return "QCC";
    case kRGN: return "RGN";
    case kPOC: return "POC";
    case kPPM: return "PPM";
    case kPPT: return "PPT";
    case kCRG: return "CRG";
    case kCOM: return "COM";
    case kSOT: return "SOT";
    case kSOP: return "SOP";
    case kEPH: return "EPH";
    case kSOD: return "SOD";
    case kEOC: return "EOC";
    default: return "unknown";
    }
}

namespace {

constexpr size_t kMaxWarnings = 64;
constexpr uint32_t kMaxQuantSteps = 3 * kMaxLevels + 1;

/** 0xFF30..0xFF3F: reserved markers with no segment (A.1.3); skipped. */
bool is_bare_reserved(uint16_t m) { return m >= 0xFF30 && m <= 0xFF3F; }
/** 0xFF70..0xFF7F: Part 2 marker segments (DCO, VMS, DFS, ADS, MCT, MCC, NLT, MCO, CBD, ATK). */
bool is_part2_marker(uint16_t m) { return m >= 0xFF70 && m <= 0xFF7F; }

std::string hex16(uint16_t v)
{
    char b[8];
    std::snprintf(b, sizeof b, "0x%04X", v);
    return b;
}

/** "COD", or "0xFF6F" for markers without a name. */
std::string display_name(uint16_t m)
{
    const char *name = marker_name(m);
    return name[0] == 'u' ? hex16(m) : name;
}

/** Reruns f, prefixing any error with the marker and its offset. */
template <typename F>
void in_segment(uint16_t marker, size_t offset, F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        std::string what =
            display_name(marker) + " marker segment at offset " + std::to_string(offset) + ": " + e.what();
        throw Error(e.status(), what);
    }
}

void expect_consumed(const ByteReader &r)
{
    J2KC_CHECK_DATA(r.remaining() == 0, "segment length leaves %zu unexplained bytes", r.remaining());
}

/** Decodes PLT/PLM packet lengths: 7-bit groups, most significant first, bit 7 = more. */
void decode_packet_lengths(const uint8_t *p, size_t n, std::vector<uint32_t> &out)
{
    uint64_t value = 0;
    bool open = false;
    for (size_t i = 0; i < n; ++i) {
        value = value << 7 | (p[i] & 0x7F);
        J2KC_CHECK_DATA(value <= 0xFFFFFFFFull, "packet length does not fit 32 bits");
        if (p[i] & 0x80) {
            open = true;
        } else {
            out.push_back(static_cast<uint32_t>(value));
            value = 0;
            open = false;
        }
    }
    J2KC_CHECK_DATA(!open, "packet length runs past the end of its segments");
}

struct ZSegment {
    uint8_t z;
    std::vector<uint8_t> bytes;
};

std::vector<uint8_t> concat_in_z_order(std::vector<ZSegment> &segs, bool &duplicate_z)
{
    std::stable_sort(segs.begin(), segs.end(), [](const ZSegment &a, const ZSegment &b) { return a.z < b.z; });
    duplicate_z = false;
    std::vector<uint8_t> out;
    for (size_t i = 0; i < segs.size(); ++i) {
        if (i > 0 && segs[i].z == segs[i - 1].z) duplicate_z = true;
        out.insert(out.end(), segs[i].bytes.begin(), segs[i].bytes.end());
    }
    return out;
}

/** Highest level count a step list covers: 3 NL + 1 steps, or eps_0 + 1 >= NL when derived (E-5). */
int levels_covered(const Quantization &q)
{
    if (q.style == Quantization::kScalarDerived) return q.steps[0].exponent + 1;
    return static_cast<int>((q.steps.size() - 1) / 3);
}

class Parser {
public:
    Parser(const uint8_t *data, size_t size, const ParseLimits &limits, bool tile_data_in_place)
        : data_(data), size_(size), limits_(limits), tile_data_in_place_(tile_data_in_place)
    {}

    Codestream run();

private:
    struct TilePartHeader {
        HeaderParameters params;
        bool has_cod = false, has_qcd = false;
        std::vector<ZSegment> ppt, plt;
    };

#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    void
    warn(const char *format, ...);
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    /// A warning that says the codestream is damaged (Codestream::damage).
    void
    damaged(const char *format, ...);

    void parse_main_header(ByteReader &r);
    /// Returns false when the data ended inside this tile-part's header.
    bool parse_tile_part(ByteReader &r);

    void parse_siz(ByteReader &r);
    CodingStyle parse_cod(ByteReader &r);
    std::pair<uint16_t, ComponentCoding> parse_coc(ByteReader &r);
    ComponentCoding parse_spco(ByteReader &r, bool precincts);
    Quantization parse_quant_body(ByteReader &r);
    std::pair<uint16_t, uint8_t> parse_rgn(ByteReader &r);
    void parse_poc(ByteReader &r, std::vector<ProgressionChange> &out);
    void parse_tlm(ByteReader &r);
    void parse_cap(ByteReader &r);
    void parse_crg(ByteReader &r);
    void parse_com(ByteReader &r);
    uint16_t read_component(ByteReader &r);

    /// Shared by main and tile-part headers: returns false if the marker is not one of them.
    bool parse_common_segment(uint16_t marker, ByteReader &body, HeaderParameters &hp, bool &has_cod, bool &has_qcd,
                              bool in_tile);

    void check_quantization(const HeaderParameters *tile, const char *where, uint32_t tile_index);
    void check_ccap15(const HeaderParameters &h, const char *where);
    void check_pair(int levels, const Quantization &q, uint32_t component, const char *where,
                    const HeaderParameters *tile, uint32_t tile_index, bool exact);
    void finish();

    const uint8_t *data_;
    size_t size_;
    ParseLimits limits_;
    bool tile_data_in_place_;
    Codestream cs_;
    bool part2_ = false;
    bool main_cod_ = false, main_qcd_ = false;
    uint32_t num_tiles_ = 0;
    std::vector<int32_t> slot_;  ///< tile index -> position in cs_.tiles
    std::vector<ZSegment> ppm_, plm_;
    /// Main QCCs by levels covered (ascending) and main COCs by levels (descending).
    std::vector<std::pair<int, uint16_t>> main_quant_covers_, main_coc_levels_;
    struct TlmSegment {
        uint8_t z;
        bool implicit_tile;
        std::vector<TilePartLength> entries;
    };
    std::vector<TlmSegment> tlm_;
    bool any_ppt_ = false, any_plt_ = false;
};

void Parser::warn(const char *format, ...)
{
    if (cs_.warnings.size() > kMaxWarnings) return;
    if (cs_.warnings.size() == kMaxWarnings) {
        cs_.warnings.push_back("further warnings suppressed");
        return;
    }
    char message[400];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    cs_.warnings.push_back(message);
}

void Parser::damaged(const char *format, ...)
{
    char message[400];
    va_list args;
    va_start(args, format);
    std::vsnprintf(message, sizeof(message), format, args);
    va_end(args);
    warn("%s", message);
    if (cs_.damage.size() < kMaxWarnings) cs_.damage.push_back(message);
}

uint16_t Parser::read_component(ByteReader &r)
{
    const uint32_t csiz = static_cast<uint32_t>(cs_.siz.components.size());
    // A.6.2: the component index takes 1 byte when Csiz < 257, else 2.
    const uint16_t c = csiz < 257 ? r.u8() : r.u16();
    J2KC_CHECK_DATA(c < csiz, "component index %u, but Csiz is %u", unsigned{c}, csiz);
    return c;
}

void Parser::parse_siz(ByteReader &r)
{
    ImageSize &s = cs_.siz;
    J2KC_CHECK_DATA(r.remaining() >= 36 + 3, "Lsiz %zu is shorter than the fixed part (41)", r.remaining() + 2);
    s.rsiz = r.u16();
    s.width = r.u32();
    s.height = r.u32();
    s.x0 = r.u32();
    s.y0 = r.u32();
    s.tile_width = r.u32();
    s.tile_height = r.u32();
    s.tile_x0 = r.u32();
    s.tile_y0 = r.u32();
    const uint32_t csiz = r.u16();
    part2_ = (s.rsiz & 0x8000) != 0;

    J2KC_CHECK_DATA(s.width > s.x0 && s.height > s.y0, "empty image: Xsiz %u, XOsiz %u, Ysiz %u, YOsiz %u", s.width,
                    s.x0, s.height, s.y0);
    J2KC_CHECK_DATA(s.tile_width > 0 && s.tile_height > 0, "tile size %ux%u", s.tile_width, s.tile_height);
    // A.5.1 / B.3: the first tile must hold the image origin.
    J2KC_CHECK_DATA(s.tile_x0 <= s.x0 && s.tile_y0 <= s.y0,
                    "tile origin (%u,%u) lies right of or below the image origin (%u,%u)", s.tile_x0, s.tile_y0, s.x0,
                    s.y0);
    J2KC_CHECK_DATA(uint64_t{s.tile_x0} + s.tile_width > s.x0 && uint64_t{s.tile_y0} + s.tile_height > s.y0,
                    "first tile (%u,%u)+%ux%u does not cover the image origin (%u,%u)", s.tile_x0, s.tile_y0,
                    s.tile_width, s.tile_height, s.x0, s.y0);
    J2KC_CHECK_DATA(csiz >= 1 && csiz <= 16384, "Csiz %u outside 1..16384", csiz);
    J2KC_CHECK_LIMIT(csiz <= limits_.max_components, "Csiz %u exceeds the limit of %u components", csiz,
                     limits_.max_components);
    J2KC_CHECK_DATA(r.remaining() == 3ull * csiz, "Lsiz %zu does not match Csiz %u (needs %u)", r.remaining() + 38,
                    csiz, 38 + 3 * csiz);

    const uint64_t area = uint64_t{s.width - s.x0} * (s.height - s.y0);
    J2KC_CHECK_LIMIT(area <= limits_.max_pixels, "image %ux%u has %llu pixels, the limit is %llu", s.width - s.x0,
                     s.height - s.y0, static_cast<unsigned long long>(area),
                     static_cast<unsigned long long>(limits_.max_pixels));
    const uint64_t tx = (uint64_t{s.width} - s.tile_x0 + s.tile_width - 1) / s.tile_width;
    const uint64_t ty = (uint64_t{s.height} - s.tile_y0 + s.tile_height - 1) / s.tile_height;
    const uint64_t tiles = tx * ty;
    J2KC_CHECK_DATA(tiles <= 65535, "%llux%llu tiles, Isot can index only 65535", static_cast<unsigned long long>(tx),
                    static_cast<unsigned long long>(ty));
    J2KC_CHECK_LIMIT(tiles <= limits_.max_tiles, "%llu tiles exceed the limit of %u",
                     static_cast<unsigned long long>(tiles), limits_.max_tiles);
    J2KC_CHECK_LIMIT(tiles * csiz <= limits_.max_tile_components,
                     "%llu tiles x %u components exceed the limit of %llu tile-components",
                     static_cast<unsigned long long>(tiles), csiz,
                     static_cast<unsigned long long>(limits_.max_tile_components));

    s.components.resize(csiz);
    uint64_t samples = 0;
    for (uint32_t c = 0; c < csiz; ++c) {
        ComponentSize &k = s.components[c];
        const uint8_t ssiz = r.u8();
        J2KC_CHECK_DATA((ssiz & 0x7F) <= 37, "component %u: Ssiz 0x%02X, precision %u > 38", c, ssiz,
                        (ssiz & 0x7F) + 1u);
        k.precision = static_cast<uint8_t>((ssiz & 0x7F) + 1);
        k.is_signed = (ssiz & 0x80) != 0;
        k.dx = r.u8();
        k.dy = r.u8();
        J2KC_CHECK_DATA(k.dx >= 1 && k.dy >= 1, "component %u: XRsiz %u, YRsiz %u (must be 1..255)", c, k.dx, k.dy);
        // B-2: the component's extent is ceil(Xsiz/XRsiz) - ceil(XOsiz/XRsiz).
        const uint64_t w = (uint64_t{s.width} + k.dx - 1) / k.dx - (uint64_t{s.x0} + k.dx - 1) / k.dx;
        const uint64_t h = (uint64_t{s.height} + k.dy - 1) / k.dy - (uint64_t{s.y0} + k.dy - 1) / k.dy;
        J2KC_CHECK_DATA(w > 0 && h > 0, "component %u is empty after %ux%u subsampling", c, k.dx, k.dy);
        samples += w * h;
    }
    J2KC_CHECK_LIMIT(samples <= limits_.max_memory / 4, "%llu samples need more than the memory limit of %llu bytes",
                     static_cast<unsigned long long>(samples), static_cast<unsigned long long>(limits_.max_memory));
    num_tiles_ = static_cast<uint32_t>(tiles);
}

ComponentCoding Parser::parse_spco(ByteReader &r, bool precincts)
{
    ComponentCoding cc;
    J2KC_CHECK_DATA(r.remaining() >= 5, "too short for SPcod/SPcoc (%zu of 5 bytes)", r.remaining());
    cc.levels = r.u8();
    J2KC_CHECK_DATA(cc.levels <= kMaxLevels, "%u decomposition levels, at most 32", cc.levels);
    const uint8_t xcb = r.u8(), ycb = r.u8();
    J2KC_CHECK_DATA(xcb <= 8 && ycb <= 8 && xcb + ycb <= 8,
                    "code-block size 2^%u x 2^%u: each exponent 2..10 and their sum <= 12", xcb + 2u, ycb + 2u);
    cc.cblk_width_log2 = static_cast<uint8_t>(xcb + 2);
    cc.cblk_height_log2 = static_cast<uint8_t>(ycb + 2);
    cc.cblk_style = r.u8();
    // ISO/IEC 15444-15: bit 6 alone makes every code-block HT; with bit 7
    // (MIXED) each block is HT or Part-1, as its first codeword-segment
    // length in the packet headers tells (tier2/packet_decoder.cpp). Bit 7
    // alone has no meaning.
    J2KC_CHECK_SUPPORTED(!(cc.cblk_style & cblk_style::kMixed) || (cc.cblk_style & cblk_style::kHighThroughput),
                         "code-block style 0x%02X: bit 7 without bit 6 is outside Parts 1 and 15", cc.cblk_style);
    const uint8_t transform = r.u8();
    if (transform > 1) {
        J2KC_CHECK_SUPPORTED(!part2_, "Part 2 wavelet transform %u is not supported", transform);
        fail(J2KC_ERR_INVALID_DATA, "wavelet transform %u (Part 1 knows 0 = 9/7, 1 = 5/3)", transform);
    }
    cc.wavelet = transform ? Wavelet::kReversible53 : Wavelet::kIrreversible97;
    cc.precincts_defined = precincts;
    if (precincts) {
        J2KC_CHECK_DATA(r.remaining() == cc.levels + 1u, "%zu precinct size bytes, %u levels need %u", r.remaining(),
                        cc.levels, cc.levels + 1u);
        for (int res = 0; res <= cc.levels; ++res) {
            const uint8_t b = r.u8();
            const uint8_t ppx = b & 0x0F, ppy = b >> 4;
            // A.6.1: only resolution 0 may use 1x1 precincts' zero exponents.
            J2KC_CHECK_DATA(res == 0 || (ppx > 0 && ppy > 0),
                            "precinct exponents PPx %u, PPy %u at resolution %d (must be >= 1)", ppx, ppy, res);
            cc.precinct_width_log2[res] = ppx;
            cc.precinct_height_log2[res] = ppy;
        }
    }
    expect_consumed(r);
    return cc;
}

CodingStyle Parser::parse_cod(ByteReader &r)
{
    CodingStyle cod;
    J2KC_CHECK_DATA(r.remaining() >= 10, "Lcod %zu is shorter than 12", r.remaining() + 2);
    const uint8_t scod = r.u8();
    J2KC_CHECK_SUPPORTED(!(scod & 0x18) || !part2_, "Scod 0x%02X uses Part 2 options", scod);
    J2KC_CHECK_DATA(!(scod & 0xF8), "Scod 0x%02X has reserved bits set", scod);
    cod.sop = (scod & 0x02) != 0;
    cod.eph = (scod & 0x04) != 0;
    cod.progression = r.u8();
    J2KC_CHECK_DATA(cod.progression <= 4, "progression order %u (0..4)", cod.progression);
    cod.layers = r.u16();
    J2KC_CHECK_DATA(cod.layers >= 1, "zero quality layers");
    cod.mct = r.u8();
    if (cod.mct > 1) {
        J2KC_CHECK_SUPPORTED(!part2_, "Part 2 multi-component transform %u", cod.mct);
        fail(J2KC_ERR_INVALID_DATA, "multiple component transform %u (0 or 1)", cod.mct);
    }
    cod.component = parse_spco(r, scod & 0x01);
    if (cod.mct) {
        const auto &k = cs_.siz.components;
        if (k.size() < 3) {
            warn("COD asks for a component transform with %zu components: ignored", k.size());
            cod.mct = 0;
        } else if (k[0].dx != k[1].dx || k[0].dx != k[2].dx || k[0].dy != k[1].dy || k[0].dy != k[2].dy) {
            warn("COD asks for a component transform on subsampled components: ignored");
            cod.mct = 0;
        }
    }
    return cod;
}

std::pair<uint16_t, ComponentCoding> Parser::parse_coc(ByteReader &r)
{
    const uint16_t c = read_component(r);
    const uint8_t scoc = r.u8();
    J2KC_CHECK_SUPPORTED(!(scoc & 0x06) || !part2_, "Scoc 0x%02X uses Part 2 options", scoc);
    J2KC_CHECK_DATA(!(scoc & 0xFE), "Scoc 0x%02X has reserved bits set", scoc);
    return {c, parse_spco(r, scoc & 0x01)};
}

Quantization Parser::parse_quant_body(ByteReader &r)
{
    Quantization q;
    const uint8_t s = r.u8();
    J2KC_CHECK_DATA((s & 0x1F) <= 2, "quantisation style %u (0..2)", s & 0x1F);
    q.style = static_cast<Quantization::Style>(s & 0x1F);
    q.guard_bits = s >> 5;
    size_t n = 0;
    if (q.style == Quantization::kNone) {
        n = r.remaining();
    } else if (q.style == Quantization::kScalarDerived) {
        J2KC_CHECK_DATA(r.remaining() == 2, "derived quantisation needs 2 step bytes, has %zu", r.remaining());
        n = 1;
    } else {
        J2KC_CHECK_DATA(r.remaining() % 2 == 0, "odd number (%zu) of expounded step bytes", r.remaining());
        n = r.remaining() / 2;
    }
    J2KC_CHECK_DATA(n >= 1 && n <= kMaxQuantSteps, "%zu quantisation steps (1..%u)", n, kMaxQuantSteps);
    q.steps.resize(n);
    for (auto &st : q.steps) {
        if (q.style == Quantization::kNone) {
            st.exponent = r.u8() >> 3;
        } else {
            const uint16_t v = r.u16();
            st.exponent = static_cast<uint8_t>(v >> 11);
            st.mantissa = v & 0x7FF;
        }
    }
    expect_consumed(r);
    return q;
}

std::pair<uint16_t, uint8_t> Parser::parse_rgn(ByteReader &r)
{
    const uint16_t c = read_component(r);
    const uint8_t srgn = r.u8();
    J2KC_CHECK_DATA(srgn == 0, "ROI style %u (only 0, implicit, exists)", srgn);
    const uint8_t shift = r.u8();
    expect_consumed(r);
    return {c, shift};
}

void Parser::parse_poc(ByteReader &r, std::vector<ProgressionChange> &out)
{
    const uint32_t csiz = static_cast<uint32_t>(cs_.siz.components.size());
    const bool wide = csiz >= 257;
    const size_t entry = wide ? 9 : 7;
    J2KC_CHECK_DATA(r.remaining() > 0 && r.remaining() % entry == 0, "Lpoc %zu is not 2 + a multiple of %zu",
                    r.remaining() + 2, entry);
    while (r.remaining()) {
        ProgressionChange p;
        p.resolution_start = r.u8();
        p.component_start = wide ? r.u16() : r.u8();
        p.layer_end = r.u16();
        p.resolution_end = r.u8();
        uint32_t ce = wide ? r.u16() : r.u8();
        if (ce == 0) ce = wide ? 16384 : 256;  // Table A.32: 0 stands for the top value
        p.progression = r.u8();
        J2KC_CHECK_DATA(p.progression <= 4, "POC progression order %u (0..4)", p.progression);
        J2KC_CHECK_DATA(p.resolution_start < p.resolution_end && p.resolution_end <= 33,
                        "POC resolutions %u..%u (need RSpoc < REpoc <= 33)", p.resolution_start, p.resolution_end);
        J2KC_CHECK_DATA(p.component_start < csiz && p.component_start < ce, "POC components %u..%u with Csiz %u",
                        unsigned{p.component_start}, ce, csiz);
        J2KC_CHECK_DATA(p.layer_end >= 1, "POC ends at layer 0");
        if (ce > csiz) {
            if (ce != 256 && ce != 16384) warn("POC CEpoc %u > Csiz %u: clamped", ce, csiz);
            ce = csiz;
        }
        p.component_end = static_cast<uint16_t>(ce);
        out.push_back(p);
    }
}

void Parser::parse_tlm(ByteReader &r)
{
    J2KC_CHECK_DATA(r.remaining() >= 2, "Ltlm %zu is shorter than 4", r.remaining() + 2);
    TlmSegment seg;
    seg.z = r.u8();
    const uint8_t s = r.u8();
    J2KC_CHECK_DATA(!(s & 0x8F), "Stlm 0x%02X has reserved bits set", s);
    const unsigned st = (s >> 4) & 3, sp = (s >> 6) & 1;
    J2KC_CHECK_DATA(st != 3, "Stlm 0x%02X: ST = 3 is reserved", s);
    const size_t entry = st + (sp ? 4 : 2);
    J2KC_CHECK_DATA(r.remaining() % entry == 0, "%zu entry bytes are no multiple of %zu", r.remaining(), entry);
    seg.implicit_tile = st == 0;
    seg.entries.resize(r.remaining() / entry);
    for (auto &e : seg.entries) {
        e.tile = static_cast<uint16_t>(r.uint_n(st));
        e.length = sp ? r.u32() : r.u16();
    }
    tlm_.push_back(std::move(seg));
}

void Parser::parse_cap(ByteReader &r)
{
    J2KC_CHECK_DATA(r.remaining() >= 4, "Lcap %zu is shorter than 6", r.remaining() + 2);
    const uint32_t pcap = r.u32();
    unsigned bits = 0;
    for (uint32_t v = pcap; v; v &= v - 1) ++bits;
    J2KC_CHECK_DATA(r.remaining() == 2u * bits, "Lcap %zu, Pcap 0x%08X needs %u", r.remaining() + 6, pcap,
                    6 + 2 * bits);
    // A.5.2 (as amended by Part 15): one Ccap^i per bit set in Pcap, from
    // the most significant (Part 1) down.
    cs_.ccap.clear();
    for (int bit = 31; bit >= 0; --bit) {
        if (!(pcap >> bit & 1u)) continue;
        const uint16_t c = r.u16();
        cs_.ccap.push_back(c);
        if (uint32_t{1} << bit == kPcapPart15) {
            cs_.has_ccap15 = true;
            cs_.ccap15 = c;
        }
    }
    cs_.cap = pcap;
}

void Parser::parse_crg(ByteReader &r)
{
    const size_t csiz = cs_.siz.components.size();
    J2KC_CHECK_DATA(r.remaining() == 4 * csiz, "Lcrg %zu, Csiz %zu needs %zu", r.remaining() + 2, csiz, 2 + 4 * csiz);
    cs_.crg.clear();
    for (size_t c = 0; c < csiz; ++c) {
        const uint16_t x = r.u16();
        const uint16_t y = r.u16();
        cs_.crg.emplace_back(x, y);
    }
}

void Parser::parse_com(ByteReader &r)
{
    J2KC_CHECK_DATA(r.remaining() >= 2, "Lcom %zu is shorter than 4", r.remaining() + 2);
    const uint16_t rcom = r.u16();
    if (rcom > 1) warn("COM registration %u is unknown", rcom);
    cs_.comments.emplace_back(reinterpret_cast<const char *>(r.current()), r.remaining());
    r.skip(r.remaining());
}

bool Parser::parse_common_segment(uint16_t marker, ByteReader &body, HeaderParameters &hp, bool &has_cod, bool &has_qcd,
                                  bool in_tile)
{
    const char *where = in_tile ? "tile-part header" : "main header";
    switch (marker) {
    case kCOD:
        J2KC_CHECK_DATA(!has_cod, "second COD in the %s", where);
        hp.cod = parse_cod(body);
        has_cod = true;
        return true;
    case kCOC: {
        auto [c, cc] = parse_coc(body);
        if (hp.coc.count(c)) warn("second COC for component %u in one header: the last wins", c);
        hp.coc[c] = cc;
        return true;
    }
    case kQCD:
        J2KC_CHECK_DATA(!has_qcd, "second QCD in the %s", where);
        hp.qcd = parse_quant_body(body);
        has_qcd = true;
        return true;
    case kQCC: {
        const uint16_t c = read_component(body);
        Quantization q = parse_quant_body(body);
        if (hp.qcc.count(c)) warn("second QCC for component %u in one header: the last wins", c);
        hp.qcc[c] = std::move(q);
        return true;
    }
    case kRGN: {
        auto [c, shift] = parse_rgn(body);
        hp.roi_shift[c] = shift;
        return true;
    }
    case kPOC: parse_poc(body, hp.poc); return true;
    case kCOM: parse_com(body); return true;
    default: return false;
    }
}

void Parser::parse_main_header(ByteReader &r)
{
    // A.4.1: SIZ immediately follows SOC.
    J2KC_CHECK_DATA(r.remaining() >= 4 && r.peek_u16() == kSIZ, "SIZ must follow SOC at offset 2");
    for (bool first = true;; first = false) {
        const size_t at = r.position();
        J2KC_CHECK_DATA(r.remaining() >= 2, "main header truncated at offset %zu (no SOT)", at);
        const uint16_t m = r.peek_u16();
        J2KC_CHECK_DATA(m >= 0xFF01, "expected a marker at offset %zu in the main header, found %s", at,
                        hex16(m).c_str());
        if (m == kSOT) break;
        if (is_bare_reserved(m)) {
            warn("reserved marker %s at offset %zu skipped", hex16(m).c_str(), at);
            r.skip(2);
            continue;
        }
        J2KC_CHECK_DATA(m != kSOC && m != kSOD && m != kEOC && m != kEPH,
                        "unexpected %s at offset %zu in the main header", marker_name(m), at);
        J2KC_CHECK_DATA(r.remaining() >= 4, "main header truncated at offset %zu", at);
        r.skip(2);
        const uint16_t len = r.u16();
        J2KC_CHECK_DATA(len >= 2, "%s marker segment at offset %zu: length %u < 2", display_name(m).c_str(), at,
                        unsigned{len});
        J2KC_CHECK_DATA(len - 2u <= r.remaining(),
                        "%s marker segment at offset %zu: length %u runs past the end (%zu bytes "
                        "left)",
                        display_name(m).c_str(), at, unsigned{len}, r.remaining());
        ByteReader body(r.current(), len - 2u);
        r.skip(len - 2u);
        in_segment(m, at, [&] {
            if (first) {
                parse_siz(body);
                return;
            }
            if (parse_common_segment(m, body, cs_.main, main_cod_, main_qcd_, false)) return;
            J2KC_CHECK_SUPPORTED(!is_part2_marker(m), "Part 2 marker segments are not supported");
            switch (m) {
            case kSIZ: fail(J2KC_ERR_INVALID_DATA, "second SIZ");
            case kCAP: parse_cap(body); return;
            case kTLM: parse_tlm(body); return;
            case kPLM:
            case kPPM: {
                J2KC_CHECK_DATA(body.remaining() >= 1, "no Z index");
                ZSegment z{body.u8(), std::vector<uint8_t>(body.current(), body.current() + body.remaining())};
                (m == kPLM ? plm_ : ppm_).push_back(std::move(z));
                return;
            }
            case kCRG: parse_crg(body); return;
            case kPRF:
            case kCPF: return;  // profile descriptions (newer editions): nothing to decode
            default:
                warn("%s marker segment (%u bytes) at offset %zu skipped in the main header", display_name(m).c_str(),
                     unsigned{len}, at);
            }
        });
    }
    J2KC_CHECK_DATA(main_cod_, "the main header has no COD");
    J2KC_CHECK_DATA(main_qcd_, "the main header has no QCD");
    cs_.main_header_end = r.position();
    check_quantization(nullptr, "main header", 0);
    check_ccap15(cs_.main, "main header");
    for (const auto &kv : cs_.main.qcc) main_quant_covers_.emplace_back(levels_covered(kv.second), kv.first);
    std::sort(main_quant_covers_.begin(), main_quant_covers_.end());
    for (const auto &kv : cs_.main.coc) main_coc_levels_.emplace_back(kv.second.levels, kv.first);
    std::sort(main_coc_levels_.begin(), main_coc_levels_.end(),
              [](const auto &a, const auto &b) { return a.first > b.first; });
}

/**
 * ISO/IEC 15444-15 Table A.3: Ccap15 announces what the HT code-blocks use.
 * Its mode bits say which block coders the code-block styles name (HTONLY:
 * every block HT, style 0x40; HTDECLARED: whole tile-components HT or
 * Part-1, no MIXED one; MIXED: any); HTIRV allows the 9/7 wavelet and RGN
 * RGN marker segments. (MAGB is not checked: OpenJPH's 9/7 streams state
 * fewer planes than their quantisation exponents allow.) The marker segments
 * decide how blocks are decoded, so a disagreement is noted, not refused, as
 * is an HT style without Ccap15. One note per header.
 */
void Parser::check_ccap15(const HeaderParameters &h, const char *where)
{
    std::vector<const ComponentCoding *> codings;
    if (h.cod) codings.push_back(&h.cod->component);
    for (const auto &kv : h.coc) codings.push_back(&kv.second);
    const uint16_t c = cs_.ccap15, mode = c & ccap15::kModeMask;
    for (const ComponentCoding *cc : codings) {
        const uint8_t style = cc->cblk_style;
        const bool ht = (style & cblk_style::kHighThroughput) != 0, mixed = (style & cblk_style::kMixed) != 0;
        if (ht && !cs_.has_ccap15) {
            warn("%s: code-block style 0x%02X is HT (ISO/IEC 15444-15) but CAP has no Ccap15", where, style);
            return;
        }
        if (!cs_.has_ccap15) continue;
        const bool agrees = mode == ccap15::kModeHtOnly       ? ht && !mixed
                            : mode == ccap15::kModeHtDeclared ? !mixed
                                                              : mode == ccap15::kModeMixed;
        if (!agrees) {
            warn("%s: code-block style 0x%02X disagrees with Ccap15 0x%04X (%s)", where, style, c,
                 mode == ccap15::kModeHtOnly       ? "every block HT"
                 : mode == ccap15::kModeHtDeclared ? "no MIXED tile-component"
                                                   : "a reserved mode");
            return;
        }
        if (ht && cc->wavelet == Wavelet::kIrreversible97 && !(c & ccap15::kIrreversible)) {
            warn("%s: HT code-blocks under the 9/7 wavelet, but Ccap15 0x%04X says HTREV", where, c);
            return;
        }
    }
    if (!cs_.has_ccap15) return;
    if (!h.roi_shift.empty() && !(c & ccap15::kRgn))
        warn("%s: RGN marker segments, but Ccap15 0x%04X says RGNFREE", where, c);
}

void Parser::check_pair(int levels, const Quantization &q, uint32_t component, const char *where,
                        const HeaderParameters *tile, uint32_t tile_index, bool exact)
{
    const std::string ti = tile ? " of tile " + std::to_string(tile_index) : "";
    if (q.style == Quantization::kScalarDerived) {
        J2KC_CHECK_DATA(levels_covered(q) >= levels,
                        "%s%s: derived quantisation exponent %u is too small for %d levels "
                        "(component %u)",
                        where, ti.c_str(), q.steps[0].exponent, levels, component);
        return;
    }
    const size_t need = 3 * size_t(levels) + 1;
    J2KC_CHECK_DATA(q.steps.size() >= need, "%s%s: quantisation has %zu steps, component %u with %d levels needs %zu",
                    where, ti.c_str(), q.steps.size(), component, levels, need);
    if (exact && q.steps.size() > need)
        warn("%s%s: quantisation has %zu steps, component %u needs only %zu", where, ti.c_str(), q.steps.size(),
             component, need);
}

void Parser::check_quantization(const HeaderParameters *tile, const char *where, uint32_t tile_index)
{
    // Every component's step list must cover its sub-bands (A.6.4, A.6.5).
    // Checking Csiz components per tile could cost 16384 x 65535 on a hostile
    // stream, so the work is kept to what the headers hold: components named
    // by a COC/QCC exactly, the rest through the extremes of the main header.
    const HeaderParameters &m = cs_.main;
    const uint32_t csiz = static_cast<uint32_t>(cs_.siz.components.size());
    const HeaderParameters &h = tile ? *tile : m;
    auto levels_of = [&](uint32_t c) -> int {
        if (tile) {
            if (auto it = tile->coc.find(c); it != tile->coc.end()) return it->second.levels;
            if (tile->cod) return tile->cod->component.levels;
        }
        if (auto it = m.coc.find(c); it != m.coc.end()) return it->second.levels;
        return m.cod->component.levels;
    };
    auto quant_of = [&](uint32_t c) -> const Quantization & {
        if (tile) {
            if (auto it = tile->qcc.find(c); it != tile->qcc.end()) return it->second;
            if (tile->qcd) return *tile->qcd;
        }
        if (auto it = m.qcc.find(c); it != m.qcc.end()) return it->second;
        return *m.qcd;
    };
    std::vector<uint32_t> named;
    for (const auto &kv : h.coc) named.push_back(kv.first);
    for (const auto &kv : h.qcc) named.push_back(kv.first);
    std::sort(named.begin(), named.end());
    named.erase(std::unique(named.begin(), named.end()), named.end());
    for (uint32_t c : named) check_pair(levels_of(c), quant_of(c), c, where, tile, tile_index, true);
    if (named.size() >= csiz) return;
    auto is_named = [&](uint32_t c) { return std::binary_search(named.begin(), named.end(), c); };
    // How many components a main-header map and `named` cover together.
    auto union_size = [&](const auto &map) {
        size_t n = map.size();
        for (uint32_t c : named) n += map.count(static_cast<uint16_t>(c)) ? 0 : 1;
        return n;
    };
    auto first_default = [&](const auto &map) {
        uint32_t c = 0;
        while (is_named(c) || map.count(static_cast<uint16_t>(c))) ++c;
        return c;
    };

    if (!tile) {  // main header: one default pair
        uint32_t c = 0;
        while (is_named(c)) ++c;
        check_pair(m.cod->component.levels, *m.qcd, c, where, tile, tile_index, true);
        return;
    }
    if (!tile->cod && !tile->qcd) return;  // the others keep the main header's pairs
    if (tile->cod && tile->qcd) {
        uint32_t c = 0;
        while (is_named(c)) ++c;
        check_pair(tile->cod->component.levels, *tile->qcd, c, where, tile, tile_index, true);
        return;
    }
    if (tile->cod) {
        // Levels from the tile COD, steps from the main QCC/QCD: the weakest main
        // QCC not overridden here decides (scan ascending; stops within |named| + 1).
        const int levels = tile->cod->component.levels;
        for (const auto &[covered, c] : main_quant_covers_) {
            if (is_named(c)) continue;
            if (covered < levels) check_pair(levels, m.qcc.at(c), c, where, tile, tile_index, false);
            break;
        }
        if (union_size(m.qcc) < csiz) check_pair(levels, *m.qcd, first_default(m.qcc), where, tile, tile_index, false);
        return;
    }
    // Steps from the tile QCD, levels from the main COC/COD: the deepest main COC decides.
    for (const auto &[levels, c] : main_coc_levels_) {
        if (is_named(c)) continue;
        check_pair(levels, *tile->qcd, c, where, tile, tile_index, false);
        break;
    }
    if (union_size(m.coc) < csiz)
        check_pair(m.cod->component.levels, *tile->qcd, first_default(m.coc), where, tile, tile_index, false);
}

bool Parser::parse_tile_part(ByteReader &r)
{
    const size_t sot_at = r.position();
    if (r.remaining() < 12) {
        damaged("codestream ends inside the SOT at offset %zu", sot_at);
        cs_.truncated = true;
        return false;
    }
    r.skip(2);
    const uint16_t lsot = r.u16();
    J2KC_CHECK_DATA(lsot == 10, "SOT at offset %zu: Lsot %u (must be 10)", sot_at, unsigned{lsot});
    TilePartInfo tp;
    tp.offset = sot_at;
    tp.tile = r.u16();
    tp.psot = r.u32();
    tp.part = r.u8();
    tp.parts = r.u8();
    J2KC_CHECK_DATA(tp.tile < num_tiles_, "SOT at offset %zu: tile %u, but there are %u tiles", sot_at,
                    unsigned{tp.tile}, num_tiles_);
    J2KC_CHECK_DATA(tp.psot == 0 || tp.psot >= 14, "SOT at offset %zu: Psot %u is shorter than SOT + SOD (14)", sot_at,
                    tp.psot);
    J2KC_CHECK_DATA(tp.part != 255, "SOT at offset %zu: TPsot 255", sot_at);

    const int32_t existing = slot_[tp.tile];
    const uint8_t seen = existing >= 0 ? cs_.tiles[existing].tile_parts_seen : 0;
    // A.4.2: a tile's tile-parts appear in TPsot order (other tiles may interleave).
    J2KC_CHECK_DATA(tp.part == seen, "SOT at offset %zu: tile %u tile-part %u out of order (expected %u)", sot_at,
                    unsigned{tp.tile}, unsigned{tp.part}, unsigned{seen});

    size_t end = size_;
    bool past_end = false;
    if (tp.psot != 0) {
        if (uint64_t{tp.psot} > size_ - sot_at) {
            past_end = true;
        } else {
            end = sot_at + tp.psot;
        }
    }
    const bool may_be_cut = past_end || tp.psot == 0;

    TilePartHeader th;
    for (;;) {
        const size_t at = r.position();
        if (end - at < 2) {
            if (may_be_cut) {
                damaged("codestream ends in the header of tile %u tile-part %u: tile-part dropped", unsigned{tp.tile},
                        unsigned{tp.part});
                cs_.truncated = true;
                return false;
            }
            fail(J2KC_ERR_INVALID_DATA, "tile-part header at offset %zu runs past Psot", at);
        }
        const uint16_t m = r.peek_u16();
        J2KC_CHECK_DATA(m >= 0xFF01, "expected a marker at offset %zu in a tile-part header, found %s", at,
                        hex16(m).c_str());
        if (m == kSOD) {
            r.skip(2);
            break;
        }
        if (is_bare_reserved(m)) {
            warn("reserved marker %s at offset %zu skipped", hex16(m).c_str(), at);
            r.skip(2);
            continue;
        }
        J2KC_CHECK_DATA(m != kSOC && m != kSOT && m != kEOC && m != kEPH && m != kSIZ,
                        "unexpected %s at offset %zu in a tile-part header", marker_name(m), at);
        size_t seg_end = end;  // where the segment ends, checked below
        uint16_t len = 0;
        if (end - at >= 4) {
            len = static_cast<uint16_t>(r.data()[at + 2] << 8 | r.data()[at + 3]);
            J2KC_CHECK_DATA(len >= 2, "%s marker segment at offset %zu: length %u < 2", display_name(m).c_str(), at,
                            unsigned{len});
            seg_end = at + 2 + len;
        }
        if (end - at < 4 || seg_end > end) {
            if (may_be_cut) {  // then end is the end of the data: truncation
                damaged("codestream ends in the header of tile %u tile-part %u: tile-part dropped", unsigned{tp.tile},
                        unsigned{tp.part});
                cs_.truncated = true;
                return false;
            }
            fail(J2KC_ERR_INVALID_DATA,
                 "%s marker segment at offset %zu: length %u runs past the "
                 "tile-part's end",
                 display_name(m).c_str(), at, unsigned{len});
        }
        r.skip(4);
        ByteReader body(r.current(), len - 2u);
        r.skip(len - 2u);
        in_segment(m, at, [&] {
            if (parse_common_segment(m, body, th.params, th.has_cod, th.has_qcd, true)) {
                if (tp.part > 0 && m != kPOC && m != kCOM)
                    warn("%s in tile-part %u of tile %u (allowed only in the first)", marker_name(m), unsigned{tp.part},
                         unsigned{tp.tile});
                return;
            }
            J2KC_CHECK_SUPPORTED(!is_part2_marker(m), "Part 2 marker segments are not supported");
            switch (m) {
            case kPPT:
            case kPLT: {
                J2KC_CHECK_DATA(body.remaining() >= 1, "no Z index");
                ZSegment z{body.u8(), std::vector<uint8_t>(body.current(), body.current() + body.remaining())};
                (m == kPPT ? th.ppt : th.plt).push_back(std::move(z));
                return;
            }
            default: warn("%s marker segment at offset %zu skipped in a tile-part header", display_name(m).c_str(), at);
            }
        });
    }

    // The tile-part is accepted: merge its header into the tile.
    tp.data_offset = r.position();
    size_t data_end = end;
    if (tp.psot == 0 && data_end - tp.data_offset >= 2 && data_[data_end - 2] == 0xFF && data_[data_end - 1] == 0xD9) {
        data_end -= 2;  // Psot 0: the data runs up to the EOC
        cs_.has_eoc = true;
    }
    tp.data_length = data_end - tp.data_offset;
    tp.truncated = past_end;
    if (past_end) {
        damaged("tile %u tile-part %u: Psot %u runs %llu bytes past the end; kept what is there", unsigned{tp.tile},
                unsigned{tp.part}, tp.psot, static_cast<unsigned long long>(uint64_t{tp.psot} - (size_ - sot_at)));
        cs_.truncated = true;
    }
    if (existing < 0) {
        slot_[tp.tile] = static_cast<int32_t>(cs_.tiles.size());
        cs_.tiles.emplace_back();
        cs_.tiles.back().index = tp.tile;
    }
    Tile &tile = cs_.tiles[slot_[tp.tile]];
    HeaderParameters &h = tile.header;
    HeaderParameters &n = th.params;
    if (th.has_cod) h.cod = n.cod;
    if (th.has_qcd) h.qcd = n.qcd;
    for (auto &kv : n.coc) h.coc[kv.first] = kv.second;
    for (auto &kv : n.qcc) h.qcc[kv.first] = kv.second;
    for (auto &kv : n.roi_shift) h.roi_shift[kv.first] = kv.second;
    h.poc.insert(h.poc.end(), n.poc.begin(), n.poc.end());
    if (!th.ppt.empty()) {
        bool dup = false;
        std::vector<uint8_t> bytes = concat_in_z_order(th.ppt, dup);
        if (dup) warn("tile %u: repeated Zppt index", unsigned{tp.tile});
        tile.packed_headers.insert(tile.packed_headers.end(), bytes.begin(), bytes.end());
        tile.has_packed_headers = true;
        any_ppt_ = true;
    }
    if (!th.plt.empty()) {
        bool dup = false;
        std::vector<uint8_t> bytes = concat_in_z_order(th.plt, dup);
        if (dup) warn("tile %u: repeated Zplt index", unsigned{tp.tile});
        try {
            decode_packet_lengths(bytes.data(), bytes.size(), tile.packet_lengths);
        } catch (const Error &e) {
            fail(e.status(), "PLT of tile %u tile-part %u: %s", unsigned{tp.tile}, unsigned{tp.part}, e.what());
        }
        any_plt_ = true;
    }
    tile.tile_parts_seen = static_cast<uint8_t>(tile.tile_parts_seen + 1);
    tile.truncated = past_end;
    if (tp.parts) {
        if (tile.tile_parts_declared && tile.tile_parts_declared != tp.parts)
            damaged("tile %u: TNsot changes from %u to %u", unsigned{tp.tile}, unsigned{tile.tile_parts_declared},
                    unsigned{tp.parts});
        if (tp.part >= tp.parts)
            damaged("tile %u: TPsot %u >= TNsot %u", unsigned{tp.tile}, unsigned{tp.part}, unsigned{tp.parts});
        tile.tile_parts_declared = tp.parts;
    }
    cs_.tile_parts.push_back(tp);
    r.seek(end);
    return !past_end && tp.psot != 0;
}

void Parser::finish()
{
    J2KC_CHECK_DATA(!cs_.tile_parts.empty(), "the codestream holds no complete tile-part header");

    // Each tile's data: the bodies of its tile-parts in codestream order. A
    // tile of one tile-part is its body, viewed in place when the caller
    // keeps the codestream (a large frame's copy costs as much as its packet
    // headers); several are copied once their total is known.
    std::vector<uint64_t> tile_bytes(cs_.tiles.size(), 0);
    std::vector<uint32_t> tile_parts(cs_.tiles.size(), 0);
    for (const TilePartInfo &tp : cs_.tile_parts) {
        tile_bytes[slot_[tp.tile]] += tp.data_length;
        ++tile_parts[slot_[tp.tile]];
    }
    const auto in_place = [&](size_t t) { return tile_data_in_place_ && tile_parts[t] == 1; };
    for (size_t t = 0; t < cs_.tiles.size(); ++t)
        if (!in_place(t)) cs_.tiles[t].data.reserve(tile_bytes[t]);
    for (const TilePartInfo &tp : cs_.tile_parts) {
        TileData &bytes = cs_.tiles[slot_[tp.tile]].data;
        if (in_place(slot_[tp.tile]))
            bytes.view(data_ + tp.data_offset, tp.data_length);
        else
            bytes.append(data_ + tp.data_offset, tp.data_length);
    }

    // PPM (A.7.4): Nppm/Ippm records, one per tile-part in codestream order;
    // a record may continue into the next segment, so join them in Zppm order.
    if (!ppm_.empty()) {
        J2KC_CHECK_DATA(!any_ppt_, "PPM in the main header and PPT in a tile-part header");
        bool dup = false;
        const std::vector<uint8_t> all = concat_in_z_order(ppm_, dup);
        if (dup) warn("repeated Zppm index");
        ByteReader pr(all.data(), all.size());
        for (const TilePartInfo &tp : cs_.tile_parts) {
            J2KC_CHECK_DATA(pr.remaining() >= 4, "PPM holds packet headers for fewer tile-parts than the %zu present",
                            cs_.tile_parts.size());
            const uint32_t n = pr.u32();
            J2KC_CHECK_DATA(n <= pr.remaining(), "PPM: Nppm %u for tile %u tile-part %u runs past the PPM data", n,
                            unsigned{tp.tile}, unsigned{tp.part});
            Tile &tile = cs_.tiles[slot_[tp.tile]];
            tile.packed_headers.insert(tile.packed_headers.end(), pr.current(), pr.current() + n);
            pr.skip(n);
        }
        if (pr.remaining() && !cs_.truncated)
            warn("PPM has %zu bytes beyond the last tile-part's headers", pr.remaining());
        for (Tile &t : cs_.tiles) t.has_packed_headers = true;
    }

    // PLM (A.7.2): Nplm/Iplm records per tile-part, informational.
    if (!plm_.empty()) {
        if (any_plt_) {
            warn("both PLM and PLT present: PLM ignored");
        } else {
            bool dup = false;
            const std::vector<uint8_t> all = concat_in_z_order(plm_, dup);
            ByteReader pr(all.data(), all.size());
            for (const TilePartInfo &tp : cs_.tile_parts) {
                if (!pr.remaining()) {
                    warn("PLM covers fewer tile-parts than present");
                    break;
                }
                const uint8_t n = pr.u8();
                J2KC_CHECK_DATA(n <= pr.remaining(), "PLM: Nplm %u runs past the PLM data", n);
                try {
                    decode_packet_lengths(pr.current(), n, cs_.tiles[slot_[tp.tile]].packet_lengths);
                } catch (const Error &e) {
                    fail(e.status(), "PLM: %s", e.what());
                }
                pr.skip(n);
            }
        }
    }

    // TLM (A.7.1): informational; ST = 0 numbers the tiles by entry.
    if (!tlm_.empty()) {
        std::stable_sort(tlm_.begin(), tlm_.end(), [](const TlmSegment &a, const TlmSegment &b) { return a.z < b.z; });
        for (const TlmSegment &seg : tlm_) {
            for (TilePartLength e : seg.entries) {
                if (seg.implicit_tile) e.tile = static_cast<uint16_t>(cs_.tlm.size());
                cs_.tlm.push_back(e);
            }
        }
        bool bad = false;
        for (const auto &e : cs_.tlm) bad |= e.tile >= num_tiles_;
        if (bad) warn("TLM names tiles beyond the %u of the image", num_tiles_);
    }

    std::sort(cs_.tiles.begin(), cs_.tiles.end(), [](const Tile &a, const Tile &b) { return a.index < b.index; });
    // A.4.2: every tile has at least one tile-part. Absent ones decode as
    // zero coefficients (the image's mean), which only a damaged stream needs.
    if (cs_.tiles.size() < num_tiles_ && !cs_.truncated)
        damaged("%zu of %u tiles have no tile-part", num_tiles_ - cs_.tiles.size(), num_tiles_);
    for (const Tile &t : cs_.tiles) {
        if (t.tile_parts_declared && t.tile_parts_seen < t.tile_parts_declared && !cs_.truncated)
            damaged("tile %u: %u of %u tile-parts present", t.index, unsigned{t.tile_parts_seen},
                    unsigned{t.tile_parts_declared});
        const HeaderParameters &h = t.header;
        if (h.cod || h.qcd || !h.coc.empty() || !h.qcc.empty()) check_quantization(&h, "header", t.index);
        if (h.cod || !h.coc.empty() || !h.roi_shift.empty())
            check_ccap15(h, ("tile " + std::to_string(t.index) + " header").c_str());
    }
}

Codestream Parser::run()
{
    ByteReader r(data_, size_);
    J2KC_CHECK_DATA(size_ >= 2 && r.u16() == kSOC, "no SOC marker at offset 0: not a JPEG 2000 codestream");
    parse_main_header(r);
    slot_.assign(num_tiles_, -1);

    for (;;) {
        const size_t at = r.position();
        if (r.remaining() < 2) {
            damaged("no EOC at the end of the codestream");
            break;
        }
        const uint16_t m = r.peek_u16();
        if (m == kEOC) {
            cs_.has_eoc = true;
            if (r.remaining() > 2) warn("%zu bytes after EOC ignored", r.remaining() - 2);
            break;
        }
        if (m != kSOT) {
            damaged("%zu bytes at offset %zu are neither SOT nor EOC: ignored", r.remaining(), at);
            break;
        }
        if (!parse_tile_part(r)) break;
    }
    finish();
    return std::move(cs_);
}

}  // namespace

Codestream parse_codestream(const uint8_t *data, size_t size, const ParseLimits &limits, bool tile_data_in_place)
{
    J2KC_CHECK_ARG(data || size == 0, "no codestream data");
    Parser p(data, size, limits, tile_data_in_place);
    return p.run();
}

std::vector<MarkerSegment> list_marker_segments(const uint8_t *data, size_t size)
{
    std::vector<MarkerSegment> out;
    J2KC_CHECK_DATA(data && size >= 2 && data[0] == 0xFF && data[1] == 0x4F, "no SOC marker at offset 0");
    out.push_back({kSOC, 0, 0, -1});
    size_t pos = 2;
    auto u16_at = [&](size_t p) { return static_cast<uint16_t>(data[p] << 8 | data[p + 1]); };
    int32_t tile = -1;
    size_t tile_part_end = size;
    while (size - pos >= 2) {
        const uint16_t m = u16_at(pos);
        J2KC_CHECK_DATA(m >= 0xFF01, "expected a marker at offset %zu, found %s", pos, hex16(m).c_str());
        if (m == kEOC) {
            out.push_back({m, pos, 0, -1});
            break;
        }
        if (m == kSOD) {
            J2KC_CHECK_DATA(tile >= 0, "SOD at offset %zu outside a tile-part header", pos);
            // Psot must lie beyond the header, or the walk would go backwards.
            J2KC_CHECK_DATA(tile_part_end >= pos + 2, "SOD at offset %zu lies beyond its tile-part's Psot", pos);
            out.push_back({m, pos, 0, tile});
            pos = tile_part_end;
            tile = -1;
            continue;
        }
        if (is_bare_reserved(m)) {
            out.push_back({m, pos, 0, tile});
            pos += 2;
            continue;
        }
        if (size - pos < 4) break;
        const uint16_t len = u16_at(pos + 2);
        J2KC_CHECK_DATA(len >= 2, "%s at offset %zu: length %u < 2", marker_name(m), pos, unsigned{len});
        if (m == kSOT) {
            J2KC_CHECK_DATA(tile < 0, "SOT at offset %zu inside a tile-part header", pos);
            if (size - pos < 12) break;
            tile = u16_at(pos + 4);
            const uint32_t psot = uint32_t{u16_at(pos + 6)} << 16 | u16_at(pos + 8);
            J2KC_CHECK_DATA(psot == 0 || psot >= 14, "SOT at offset %zu: Psot %u < 14", pos, psot);
            tile_part_end = psot == 0 || psot > size - pos ? size : pos + psot;
            if (psot == 0 && size - pos >= 2 + 12 && u16_at(size - 2) == kEOC) tile_part_end = size - 2;
        }
        out.push_back({m, pos, len, tile});
        if (len > size - pos - 2) break;
        pos += 2 + size_t{len};
    }
    return out;
}

}  // namespace j2kc
