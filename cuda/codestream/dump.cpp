/**
 * @file dump.cpp
 * @brief Readable dump of the Annex A marker segments of a parsed codestream,
 * and the DCI (ISO/IEC 15444-1 Amd 1, as libdcp verifies it) and IMF (Amd 8,
 * as OpenJPEG and Grok enforce it) profile checks.
 */
#include "codestream/dump.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <set>

#include "codestream/reader.h"

namespace j2kc {
namespace {

constexpr size_t kMaxListed = 64;  // entries shown per list before "... N more"


const char *progression_name(unsigned p)
{
    static const char *names[] = {"LRCP", "RLCP", "RPCL", "PCRL", "CPRL"};
    return p < 5 ? names[p] : "?";
}

std::string style_names(uint8_t s)
{
    static const char *names[] = {"BYPASS", "RESET", "TERMALL", "VSC", "PTERM", "SEGSYM", "HT", "MIXED"};
    std::string out;
    for (int b = 0; b < 8; ++b) {
        if (s & (1 << b)) out += std::string(out.empty() ? "" : "|") + names[b];
    }
    return out.empty() ? "none" : out;
}

void dump_component_coding(std::string &s, const ComponentCoding &c, const char *indent)
{
    appendf(s, "%slevels %u, code-block %ux%u, style 0x%02X (%s), %s\n", indent, c.levels, 1u << c.cblk_width_log2,
            1u << c.cblk_height_log2, c.cblk_style, style_names(c.cblk_style).c_str(),
            c.wavelet == Wavelet::kReversible53 ? "5/3 reversible" : "9/7 irreversible");
    if (c.precincts_defined) {
        appendf(s, "%sprecincts:", indent);
        for (int r = 0; r <= c.levels; ++r)
            appendf(s, " r%d %ux%u", r, 1u << c.precinct_width_log2[r], 1u << c.precinct_height_log2[r]);
        s += "\n";
    } else {
        appendf(s, "%sprecincts: maximal (32768x32768)\n", indent);
    }
}

/** CAP (A.5.2 as Part 15 extends it): the parts Pcap names, each Ccap^i, Ccap15's fields. */
void dump_cap(std::string &s, const Codestream &cs)
{
    appendf(s, "CAP: Pcap 0x%08X:", cs.cap);
    size_t k = 0;
    for (int bit = 31; bit >= 0; --bit) {
        if (!(cs.cap >> bit & 1u)) continue;
        appendf(s, " Part %d", 32 - bit);
        if (k < cs.ccap.size()) appendf(s, " (Ccap 0x%04X)", cs.ccap[k]);
        ++k;
    }
    s += "\n";
    if (!cs.has_ccap15) return;
    const uint16_t c = cs.ccap15;
    static const char *modes[] = {"HTONLY (every code-block HT)", "reserved mode 1",
                                  "HTDECLARED (HT code-blocks declared)", "MIXED (HT and Part-1 code-blocks)"};
    appendf(s, "     Ccap15 0x%04X: %s, %s, %s, %s, %s, MAGB %u (B %u)\n", c, modes[(c & ccap15::kModeMask) >> 14],
            (c & ccap15::kMultiHt) ? "MULTIHT" : "SINGLEHT", (c & ccap15::kRgn) ? "RGN" : "RGNFREE",
            (c & ccap15::kHeterogeneous) ? "HETEROGENEOUS" : "HOMOGENEOUS",
            (c & ccap15::kIrreversible) ? "HTIRV (irreversible allowed)" : "HTREV (reversible only)", ccap15::magb(c),
            static_cast<unsigned>(c & ccap15::kMagbMask));
}

void dump_cod(std::string &s, const CodingStyle &c, const char *label)
{
    appendf(s, "%s: progression %s, %u layer%s, MCT %u, SOP %s, EPH %s\n", label, progression_name(c.progression),
            unsigned{c.layers}, c.layers == 1 ? "" : "s", c.mct, c.sop ? "yes" : "no", c.eph ? "yes" : "no");
    dump_component_coding(s, c.component, "     ");
}

void dump_quant(std::string &s, const Quantization &q, const std::string &label)
{
    static const char *styles[] = {"none (reversible)", "scalar derived", "scalar expounded"};
    appendf(s, "%s: %s, %u guard bit%s, %zu step%s\n", label.c_str(), styles[q.style], q.guard_bits,
            q.guard_bits == 1 ? "" : "s", q.steps.size(), q.steps.size() == 1 ? "" : "s");
    s += "     (exponent, mantissa):";
    for (size_t i = 0; i < q.steps.size(); ++i) {
        if (i == kMaxListed) {
            appendf(s, " ... %zu more", q.steps.size() - i);
            break;
        }
        appendf(s, " (%u,%u)", q.steps[i].exponent, unsigned{q.steps[i].mantissa});
    }
    s += "\n";
}

void dump_header(std::string &s, const HeaderParameters &h, const char *prefix)
{
    if (h.cod) dump_cod(s, *h.cod, (std::string(prefix) + "COD").c_str());
    for (const auto &kv : h.coc) {
        appendf(s, "%sCOC component %u:\n", prefix, unsigned{kv.first});
        dump_component_coding(s, kv.second, "     ");
    }
    if (h.qcd) dump_quant(s, *h.qcd, std::string(prefix) + "QCD");
    for (const auto &kv : h.qcc)
        dump_quant(s, kv.second, std::string(prefix) + "QCC component " + std::to_string(kv.first));
    for (const auto &kv : h.roi_shift)
        appendf(s, "%sRGN component %u: shift %u\n", prefix, unsigned{kv.first}, kv.second);
    if (!h.poc.empty()) {
        appendf(s, "%sPOC: %zu entr%s\n", prefix, h.poc.size(), h.poc.size() == 1 ? "y" : "ies");
        for (const auto &p : h.poc)
            appendf(s, "     res %u..%u, comp %u..%u, layers ..%u, %s\n", p.resolution_start, p.resolution_end,
                    unsigned{p.component_start}, unsigned{p.component_end}, unsigned{p.layer_end},
                    progression_name(p.progression));
    }
}

std::string printable(const std::string &text)
{
    std::string out;
    for (unsigned char c : text.substr(0, 200)) {
        if (c >= 0x20 && c < 0x7F) {
            out += static_cast<char>(c);
        } else {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02X", c);
            out += b;
        }
    }
    if (text.size() > 200) out += "...";
    return out;
}

}  // namespace

void appendf(std::string &s, const char *format, ...)
{
    char line[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof(line), format, args);
    va_end(args);
    s += line;
}

std::string dump_codestream(const Codestream &cs)
{
    std::string s;
    const ImageSize &z = cs.siz;
    appendf(s, "SIZ: Rsiz 0x%04X%s, Xsiz %u, Ysiz %u, XOsiz %u, YOsiz %u\n", z.rsiz,
            (z.rsiz & kRsizPart15) ? " (Part 15 capabilities)" : "", z.width, z.height, z.x0, z.y0);
    appendf(s, "     XTsiz %u, YTsiz %u, XTOsiz %u, YTOsiz %u: %ux%u = %u tile%s\n", z.tile_width, z.tile_height,
            z.tile_x0, z.tile_y0, z.tiles_x(), z.tiles_y(), z.num_tiles(), z.num_tiles() == 1 ? "" : "s");
    appendf(s, "     Csiz %zu\n", z.components.size());
    for (size_t c = 0; c < z.components.size(); ++c) {
        if (c == kMaxListed) {
            appendf(s, "     ... %zu more components\n", z.components.size() - c);
            break;
        }
        const ComponentSize &k = z.components[c];
        appendf(s, "     component %zu: %u-bit %s, XRsiz %u, YRsiz %u\n", c, k.precision,
                k.is_signed ? "signed" : "unsigned", k.dx, k.dy);
    }
    if (cs.cap) dump_cap(s, cs);
    dump_header(s, cs.main, "");
    if (!cs.tlm.empty()) {
        appendf(s, "TLM: %zu tile-part length%s:", cs.tlm.size(), cs.tlm.size() == 1 ? "" : "s");
        for (size_t i = 0; i < cs.tlm.size(); ++i) {
            if (i == kMaxListed) {
                appendf(s, " ... %zu more", cs.tlm.size() - i);
                break;
            }
            appendf(s, " %u:%u", unsigned{cs.tlm[i].tile}, cs.tlm[i].length);
        }
        s += "\n";
    }
    if (!cs.crg.empty()) {
        s += "CRG:";
        for (size_t i = 0; i < cs.crg.size() && i < kMaxListed; ++i)
            appendf(s, " (%u,%u)", unsigned{cs.crg[i].first}, unsigned{cs.crg[i].second});
        s += "\n";
    }
    for (const auto &c : cs.comments) appendf(s, "COM: \"%s\"\n", printable(c).c_str());
    appendf(s, "main header: %llu bytes\n", static_cast<unsigned long long>(cs.main_header_end));

    appendf(s, "tile-parts: %zu\n", cs.tile_parts.size());
    for (size_t i = 0; i < cs.tile_parts.size(); ++i) {
        if (i == kMaxListed) {
            appendf(s, "  ... %zu more tile-parts\n", cs.tile_parts.size() - i);
            break;
        }
        const TilePartInfo &t = cs.tile_parts[i];
        appendf(s, "  at %llu: tile %u, TPsot %u, TNsot %u, Psot %u, %llu data bytes%s\n",
                static_cast<unsigned long long>(t.offset), unsigned{t.tile}, unsigned{t.part}, unsigned{t.parts},
                t.psot, static_cast<unsigned long long>(t.data_length), t.truncated ? " (truncated)" : "");
    }
    appendf(s, "tiles: %zu present\n", cs.tiles.size());
    for (size_t i = 0; i < cs.tiles.size(); ++i) {
        if (i == kMaxListed) {
            appendf(s, "  ... %zu more tiles\n", cs.tiles.size() - i);
            break;
        }
        const Tile &t = cs.tiles[i];
        appendf(s, "  tile %u: %u tile-part%s (TNsot %u), %zu data bytes", t.index, unsigned{t.tile_parts_seen},
                t.tile_parts_seen == 1 ? "" : "s", unsigned{t.tile_parts_declared}, t.data.size());
        if (t.has_packed_headers) appendf(s, ", %zu packed header bytes", t.packed_headers.size());
        if (!t.packet_lengths.empty()) appendf(s, ", %zu packet lengths", t.packet_lengths.size());
        s += t.truncated ? " (truncated)\n" : "\n";
        dump_header(s, t.header, "    tile ");
    }
    appendf(s, "EOC: %s\n", cs.has_eoc ? "present" : "missing");
    for (const auto &w : cs.warnings) appendf(s, "warning: %s\n", w.c_str());
    return s;
}

namespace {

class ProfileChecker {
public:
    ProfileChecker(const Codestream &cs, const uint8_t *data, size_t size)
        : cs_(cs), data_(data), size_(size), segs_(list_marker_segments(data, size))
    {}

    std::vector<std::string> out;

#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    void
    v(const char *format, ...)
    {
        char line[400];
        va_list args;
        va_start(args, format);
        std::vsnprintf(line, sizeof(line), format, args);
        va_end(args);
        out.push_back(line);
    }

    size_t count(uint16_t marker) const
    {
        return static_cast<size_t>(
            std::count_if(segs_.begin(), segs_.end(), [&](const MarkerSegment &m) { return m.marker == marker; }));
    }
    const MarkerSegment *first(uint16_t marker) const
    {
        for (const auto &m : segs_)
            if (m.marker == marker) return &m;
        return nullptr;
    }

    void common_single_tile_rules(const char *profile);
    void dci(bool is4k, double fps);
    void imf();

    const Codestream &cs_;
    const uint8_t *data_;
    size_t size_;
    std::vector<MarkerSegment> segs_;
};

void ProfileChecker::common_single_tile_rules(const char *profile)
{
    const ImageSize &z = cs_.siz;
    if (z.x0 || z.y0 || z.tile_x0 || z.tile_y0)
        v("%s: origins must be 0 (XOsiz %u, YOsiz %u, XTOsiz %u, YTOsiz %u)", profile, z.x0, z.y0, z.tile_x0,
          z.tile_y0);
}

void ProfileChecker::dci(bool is4k, double fps)
{
    const char *p = is4k ? "DCI 4K" : "DCI 2K";
    const ImageSize &z = cs_.siz;
    const unsigned nl_want = is4k ? 6 : 5;
    // Rsiz follows the width (libdcp).
    if ((z.width > 2048) != is4k)
        v("%s: Rsiz %u with width %u (width <= 2048 needs Rsiz 3, wider Rsiz 4)", p, z.rsiz, z.width);
    const uint32_t maxw = is4k ? 4096 : 2048, maxh = is4k ? 2160 : 1080;
    if (z.width > maxw || z.height > maxh)
        v("%s: image %ux%u exceeds %ux%u", p, z.width, z.height, maxw, maxh);
    else if (z.width != maxw && z.height != maxh)
        v("%s: image %ux%u fills neither the container width %u nor height %u", p, z.width, z.height, maxw, maxh);
    if (const MarkerSegment *siz = first(kSIZ); siz && siz->length != 47) v("%s: Lsiz %u (must be 47)", p, siz->length);
    common_single_tile_rules(p);
    if (z.tile_width != z.width || z.tile_height != z.height)
        v("%s: tile %ux%u must equal the image %ux%u", p, z.tile_width, z.tile_height, z.width, z.height);
    if (z.components.size() != 3) v("%s: Csiz %zu (must be 3)", p, z.components.size());
    for (size_t c = 0; c < z.components.size() && c < 16; ++c) {
        const ComponentSize &k = z.components[c];
        if (k.precision != 12 || k.is_signed)
            v("%s: component %zu is %u-bit %s (must be 12-bit unsigned)", p, c, k.precision,
              k.is_signed ? "signed" : "unsigned");
        if (k.dx != 1 || k.dy != 1) v("%s: component %zu subsampled %ux%u", p, c, k.dx, k.dy);
    }
    if (count(kCOD) != 1) v("%s: %zu COD segments (exactly one)", p, count(kCOD));
    if (count(kQCD) != 1) v("%s: %zu QCD segments (exactly one)", p, count(kQCD));

    const CodingStyle &cod = *cs_.main.cod;
    const ComponentCoding &cc = cod.component;
    if (const MarkerSegment *m = first(kCOD); m && m->offset + 5 <= size_ && data_[m->offset + 4] != 1)
        v("%s: Scod 0x%02X (must be 0x01)", p, data_[m->offset + 4]);
    if (cod.progression != 4) v("%s: progression %s (must be CPRL)", p, progression_name(cod.progression));
    if (cod.layers != 1) v("%s: %u layers (must be 1)", p, unsigned{cod.layers});
    if (cod.mct != 1) v("%s: MCT %u (must be 1)", p, cod.mct);
    if (cc.levels != nl_want) v("%s: %u decomposition levels (must be %u)", p, cc.levels, nl_want);
    if (cc.cblk_width_log2 != 5 || cc.cblk_height_log2 != 5)
        v("%s: code-block %ux%u (must be 32x32)", p, 1u << cc.cblk_width_log2, 1u << cc.cblk_height_log2);
    if (cc.cblk_style != 0) v("%s: code-block style 0x%02X (must be 0)", p, cc.cblk_style);
    if (cc.wavelet != Wavelet::kIrreversible97) v("%s: 5/3 wavelet (must be 9/7)", p);
    if (!cc.precincts_defined) {
        v("%s: no precinct sizes in COD", p);
    } else {
        for (int r = 0; r <= cc.levels; ++r) {
            const unsigned want = r == 0 ? 7 : 8;
            if (cc.precinct_width_log2[r] != want || cc.precinct_height_log2[r] != want)
                v("%s: precinct byte 0x%X%X at resolution %d (must be 0x%u%u)", p, cc.precinct_height_log2[r],
                  cc.precinct_width_log2[r], r, want, want);
        }
    }
    const uint8_t guard = is4k ? 2 : 1;
    if (cs_.main.qcd->guard_bits != guard) v("%s: %u guard bits (must be %u)", p, cs_.main.qcd->guard_bits, guard);
    for (const auto &kv : cs_.main.qcc)
        if (kv.second.guard_bits != guard)
            v("%s: QCC component %u: %u guard bits (must be %u)", p, unsigned{kv.first}, kv.second.guard_bits, guard);
    for (const auto &kv : cs_.main.coc) {
        const ComponentCoding &o = kv.second;
        bool same = o.levels == cc.levels && o.cblk_width_log2 == cc.cblk_width_log2 &&
                    o.cblk_height_log2 == cc.cblk_height_log2 && o.cblk_style == cc.cblk_style &&
                    o.wavelet == cc.wavelet && o.precincts_defined == cc.precincts_defined;
        for (int r = 0; same && r <= cc.levels; ++r)
            same = o.precinct_width_log2[r] == cc.precinct_width_log2[r] &&
                   o.precinct_height_log2[r] == cc.precinct_height_log2[r];
        if (!same) v("%s: COC for component %u differs from COD", p, unsigned{kv.first});
    }
    if (!count(kTLM)) v("%s: no TLM marker segment", p);

    // POC: none for 2K; for 4K exactly one, in the main header, with the §1.2 bytes.
    const size_t pocs = count(kPOC);
    if (!is4k) {
        if (pocs) v("%s: %zu POC segments (none allowed)", p, pocs);
    } else if (pocs != 1) {
        v("%s: %zu POC segments (exactly one)", p, pocs);
    } else {
        const MarkerSegment *m = first(kPOC);
        const uint8_t n = cc.levels;
        const uint8_t want[] = {0xFF, 0x5F, 0x00, 0x10, 0, 0, 0, 1, n, 3, 4, n, 0, 0, 1, static_cast<uint8_t>(n + 1),
                                3,    4};
        if (m->tile >= 0)
            v("%s: POC in a tile-part header", p);
        else if (m->offset + sizeof want > size_ || !std::equal(want, want + sizeof want, data_ + m->offset))
            v("%s: POC bytes differ from the 4K layout (2 CPRL entries split at r = NL)", p);
    }

    // Tile-parts: TNsot 3 / 6 in every SOT.
    const unsigned tn = is4k ? 6 : 3;
    for (const auto &t : cs_.tile_parts)
        if (t.parts != tn)
            v("%s: tile %u tile-part %u has TNsot %u (must be %u)", p, unsigned{t.tile}, unsigned{t.part},
              unsigned{t.parts}, tn);
    for (const auto &t : cs_.tiles)
        if (t.tile_parts_seen != tn)
            v("%s: tile %u has %u tile-parts (must be %u)", p, t.index, unsigned{t.tile_parts_seen}, tn);
    // In order: component c's part is TPsot c (2K); 4K adds the r = NL parts as 3 + c.
    for (size_t i = 0; i < cs_.tile_parts.size(); ++i)
        if (cs_.tile_parts[i].part != i)
            v("%s: tile-part %zu of the codestream has TPsot %u (in order from 0)", p, i,
              unsigned{cs_.tile_parts[i].part});
    // TLM: one entry per tile-part, with its length.
    if (count(kTLM)) {
        if (cs_.tlm.size() != cs_.tile_parts.size())
            v("%s: TLM lists %zu tile-parts, the codestream has %zu", p, cs_.tlm.size(), cs_.tile_parts.size());
        for (size_t i = 0; i < cs_.tlm.size() && i < cs_.tile_parts.size(); ++i)
            if (cs_.tlm[i].length != cs_.tile_parts[i].psot)
                v("%s: TLM gives tile-part %zu %u bytes, its Psot %u", p, i, cs_.tlm[i].length, cs_.tile_parts[i].psot);
    }

    // Only the markers libdcp knows; COC/QCC only in the main header; COM non-empty.
    static const std::set<uint16_t> known = {kSOC, kSIZ, kCOD, kCOC, kTLM, kQCD, kQCC, kPOC, kCOM, kSOT, kSOD, kEOC};
    std::set<uint16_t> reported;
    for (const auto &m : segs_) {
        if (!known.count(m.marker) && reported.insert(m.marker).second)
            v("%s: %s marker (0x%04X) at offset %llu is not allowed", p, marker_name(m.marker), m.marker,
              static_cast<unsigned long long>(m.offset));
        if (m.tile >= 0 && (m.marker == kCOC || m.marker == kQCC || m.marker == kCOD || m.marker == kQCD))
            v("%s: %s in a tile-part header of tile %d", p, marker_name(m.marker), m.tile);
        if (m.marker == kCOM && m.length <= 4)
            v("%s: empty COM at offset %llu", p, static_cast<unsigned long long>(m.offset));
    }
    if (cs_.main.cod->sop || cs_.main.cod->eph) v("%s: SOP/EPH markers in packets", p);

    if (fps > 0) {
        const uint64_t part_cap = static_cast<uint64_t>(std::floor(200e6 / (8 * fps)));
        const uint64_t frame_cap = static_cast<uint64_t>(std::floor(250e6 / (8 * fps)));
        // Each tile-part alone (libdcp) and each component's tile-parts
        // together (OpenJPEG: both 4K parts of a component) within the cap.
        std::vector<uint64_t> per_component(3, 0);
        for (const auto &t : cs_.tile_parts) {
            const uint64_t bytes = t.psot ? t.psot : size_ - t.offset;
            if (bytes > part_cap)
                v("%s: tile-part %u is %llu bytes, the cap at %g fps is %llu", p, unsigned{t.part},
                  static_cast<unsigned long long>(bytes), fps, static_cast<unsigned long long>(part_cap));
            if (t.part < tn) per_component[t.part % 3] += bytes;
        }
        for (unsigned c = 0; c < 3 && is4k; ++c)
            if (per_component[c] > part_cap)
                v("%s: component %u's tile-parts are %llu bytes, the cap at %g fps is %llu", p, c,
                  static_cast<unsigned long long>(per_component[c]), fps, static_cast<unsigned long long>(part_cap));
        if (size_ > frame_cap)
            v("%s: codestream is %zu bytes, the cap at %g fps is %llu", p, size_, fps,
              static_cast<unsigned long long>(frame_cap));
    }
}

void ProfileChecker::imf()
{
    const ImageSize &z = cs_.siz;
    const unsigned prof = z.rsiz >> 8, sub = (z.rsiz >> 4) & 0xF, main = z.rsiz & 0xF;
    const bool reversible = prof >= 7;
    const unsigned k = (prof - 4) % 3;  // 0: 2K, 1: 4K, 2: 8K
    static const char *names[] = {"IMF 2K", "IMF 4K", "IMF 8K", "IMF 2K_R", "IMF 4K_R", "IMF 8K_R"};
    const char *p = names[prof - 4];
    if (main > 11) v("%s: main level %u (0..11)", p, main);
    if (main > 0 && int(sub) > std::max(int(main) - 2, 1))
        v("%s: sub-level %u exceeds %d for main level %u", p, sub, std::max(int(main) - 2, 1), main);
    if (sub > 9) v("%s: sub-level %u (0..9)", p, sub);
    static const uint32_t maxw[] = {2048, 4096, 8192}, maxh[] = {1556, 3112, 6224};
    if (z.width > maxw[k] || z.height > maxh[k])
        v("%s: image %ux%u exceeds %ux%u", p, z.width, z.height, maxw[k], maxh[k]);
    const size_t nc = z.components.size();
    if (nc > 3) v("%s: %zu components (at most 3)", p, nc);
    for (size_t c = 0; c < nc && c < 16; ++c) {
        const ComponentSize &q = z.components[c];
        if (q.precision < 8 || q.precision > 16 || q.is_signed)
            v("%s: component %zu is %u-bit %s (8..16-bit unsigned)", p, c, q.precision,
              q.is_signed ? "signed" : "unsigned");
        if (q.dy != 1) v("%s: component %zu YRsiz %u (must be 1)", p, c, q.dy);
    }
    if (nc >= 1 && z.components[0].dx != 1) v("%s: component 0 XRsiz %u (must be 1)", p, z.components[0].dx);
    if (nc >= 2 && z.components[1].dx != 1 && z.components[1].dx != 2)
        v("%s: component 1 XRsiz %u (1 or 2)", p, z.components[1].dx);
    if (nc >= 3 && z.components[2].dx != z.components[1].dx)
        v("%s: component 2 XRsiz %u differs from component 1's %u", p, z.components[2].dx, z.components[1].dx);
    common_single_tile_rules(p);
    const bool single = z.num_tiles() == 1;
    if (!single) {
        bool ok = reversible && z.tile_width == z.tile_height;
        if (ok) {
            const uint32_t t = z.tile_width;
            ok = t == 1024 || (t == 2048 && k >= 1) || (t == 4096 && k == 2);
        }
        if (!ok)
            v("%s: tiles %ux%u (%s)", p, z.tile_width, z.tile_height,
              reversible ? "single tile or square 1024/2048/4096 as the level allows" : "single tile only");
    }
    const CodingStyle &cod = *cs_.main.cod;
    if (cod.layers != 1) v("%s: %u layers (must be 1)", p, unsigned{cod.layers});
    if (cod.progression != 4) v("%s: progression %s (must be CPRL)", p, progression_name(cod.progression));
    if (count(kPOC)) v("%s: POC not allowed", p);
    if (count(kRGN)) v("%s: RGN not allowed", p);
    if (!count(kTLM)) v("%s: no TLM marker segment", p);

    const uint32_t xt = single ? z.width : z.tile_width;
    unsigned max_nl;
    if (!reversible) {
        max_nl = 5 + k;
    } else {
        max_nl = 4;  // XTsiz 1024..2047 (and below)
        if (xt >= 2048) max_nl = 5;
        if (k >= 1 && xt >= 4096) max_nl = 6;
        if (k == 2 && xt >= 8192) max_nl = 7;
    }
    auto check_cc = [&](const ComponentCoding &c, const std::string &who) {
        if (c.wavelet != (reversible ? Wavelet::kReversible53 : Wavelet::kIrreversible97))
            v("%s: %s uses the %s wavelet", p, who.c_str(), c.wavelet == Wavelet::kReversible53 ? "5/3" : "9/7");
        if (c.levels < 1 || c.levels > max_nl) v("%s: %s has %u levels (1..%u)", p, who.c_str(), c.levels, max_nl);
        if (c.cblk_width_log2 != 5 || c.cblk_height_log2 != 5)
            v("%s: %s code-block %ux%u (32x32)", p, who.c_str(), 1u << c.cblk_width_log2, 1u << c.cblk_height_log2);
        if (c.cblk_style) v("%s: %s code-block style 0x%02X (0)", p, who.c_str(), c.cblk_style);
        bool prec = c.precincts_defined;
        for (int r = 0; prec && r <= c.levels; ++r) {
            const unsigned want = r == 0 ? 7 : 8;
            prec = c.precinct_width_log2[r] == want && c.precinct_height_log2[r] == want;
        }
        if (!prec) v("%s: %s precincts (128 at r0, 256 above)", p, who.c_str());
    };
    check_cc(cod.component, "COD");
    for (const auto &kv : cs_.main.coc) check_cc(kv.second, "COC " + std::to_string(kv.first));
    for (const auto &t : cs_.tiles) {
        if (t.header.cod) check_cc(t.header.cod->component, "tile COD " + std::to_string(t.index));
        for (const auto &kv : t.header.coc) check_cc(kv.second, "tile COC " + std::to_string(kv.first));
        if (t.tile_parts_seen != nc)
            v("%s: tile %u has %u tile-parts (one per component: %zu)", p, t.index, unsigned{t.tile_parts_seen}, nc);
    }
}

}  // namespace

std::vector<std::string> check_profile(const Codestream &cs, const uint8_t *data, size_t size, double fps)
{
    const uint16_t rsiz = cs.siz.rsiz;
    const unsigned family = rsiz >> 8;
    if (rsiz != 3 && rsiz != 4 && !(family >= 4 && family <= 9 && !(rsiz & 0xF000))) return {};
    ProfileChecker pc(cs, data, size);
    if (rsiz == 3 || rsiz == 4)
        pc.dci(rsiz == 4, fps);
    else
        pc.imf();
    return std::move(pc.out);
}

}  // namespace j2kc
