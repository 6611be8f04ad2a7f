/**
 * @file jp2.cpp
 * @brief JP2 file format, ISO/IEC 15444-1 Annex I: box structure (I.4), the
 * signature and file type boxes (I.5.1, I.5.2), the JP2 header box and its
 * children (I.5.3) and the contiguous codestream box (I.5.4).
 *
 * Only jp2h and res are entered as superboxes, each one level deep, so a
 * hostile nest of boxes costs a linear walk and no recursion.
 */
#include "codestream/jp2.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/byte_io.h"
#include "common/status.h"

namespace j2kc {
namespace {

struct Box {
    uint32_t type = 0;
    size_t offset = 0;  ///< of LBox
    size_t content_offset = 0;
    size_t content_size = 0;
};

std::string box_name(uint32_t t)
{
    std::string s;
    for (int i = 3; i >= 0; --i) {
        const char c = static_cast<char>(t >> (8 * i));
        s += (c >= 0x20 && c < 0x7F) ? c : '?';
    }
    return s;
}

/**
 * Reads the box header at pos within [begin, end); advances pos past the box.
 * A box that overruns is an error unless clip_type names it (jp2c), then it is clipped.
 */
Box next_box(const uint8_t *data, size_t end, size_t &pos, uint32_t clip_type, bool &clipped)
{
    Box b;
    b.offset = pos;
    J2KC_CHECK_DATA(end - pos >= 8, "box header at offset %zu is cut short", pos);
    ByteReader r(data + pos, end - pos);
    const uint32_t lbox = r.u32();
    b.type = r.u32();
    uint64_t length = lbox;
    size_t header = 8;
    if (lbox == 1) {
        J2KC_CHECK_DATA(r.remaining() >= 8, "box '%s' at offset %zu: XLBox is cut short", box_name(b.type).c_str(),
                        pos);
        length = r.u64();
        header = 16;
        J2KC_CHECK_DATA(length >= 16, "box '%s' at offset %zu: XLBox %llu < 16", box_name(b.type).c_str(), pos,
                        static_cast<unsigned long long>(length));
    } else if (lbox == 0) {
        length = end - pos;  // I.4: the box runs to the end of the file
    } else {
        J2KC_CHECK_DATA(lbox >= 8, "box '%s' at offset %zu: LBox %u < 8", box_name(b.type).c_str(), pos, lbox);
    }
    clipped = false;
    if (length > end - pos) {
        J2KC_CHECK_DATA(b.type == clip_type, "box '%s' at offset %zu: length %llu runs past the end (%zu bytes left)",
                        box_name(b.type).c_str(), pos, static_cast<unsigned long long>(length), end - pos);
        length = end - pos;
        clipped = true;
    }
    b.content_offset = pos + header;
    b.content_size = static_cast<size_t>(length) - header;
    pos += static_cast<size_t>(length);
    return b;
}

template <typename F>
void in_box(const Box &b, F &&f)
{
    try {
        f();
    } catch (const Error &e) {
        throw Error(e.status(),
                    "JP2 box '" + box_name(b.type) + "' at offset " + std::to_string(b.offset) + ": " + e.what());
    }
}

void parse_ihdr(ByteReader &r, Jp2File &f)
{
    J2KC_CHECK_DATA(r.remaining() == 14, "%zu content bytes (must be 14)", r.remaining());
    f.height = r.u32();
    f.width = r.u32();
    f.num_components = r.u16();
    f.bpc = r.u8();
    f.compression = r.u8();
    f.colourspace_unknown = r.u8() != 0;
    f.ipr = r.u8() != 0;
    J2KC_CHECK_DATA(f.height > 0 && f.width > 0, "image size %ux%u", f.width, f.height);
    J2KC_CHECK_DATA(f.num_components >= 1 && f.num_components <= 16384, "%u components", unsigned{f.num_components});
    J2KC_CHECK_DATA(f.bpc == 0xFF || (f.bpc & 0x7F) <= 37, "BPC 0x%02X", f.bpc);
    J2KC_CHECK_DATA(f.compression == 7, "compression type %u (JP2 allows 7)", f.compression);
}

/**
 * One colr box into c; returns what makes it unusable, or an empty string.
 * Extra bytes after an EnumCS are noted and ignored; CIELab takes its seven
 * parameters when all are there (M.11.7.4), its defaults otherwise.
 */
std::string parse_colour(ByteReader &r, Jp2Colour &c, std::vector<std::string> &warnings)
{
    if (r.remaining() < 3) return std::to_string(r.remaining()) + " bytes, less than METH, PREC and APPROX";
    c.method = r.u8();
    c.precedence = static_cast<int8_t>(r.u8());
    c.approximation = r.u8();
    if (c.method == 1) {
        if (r.remaining() < 4) return "the enumerated colour space is cut short";
        c.enumerated = r.u32();
        if (c.enumerated == 14 && r.remaining() == 28) {
            std::array<uint32_t, 7> p{};
            for (uint32_t &v : p) v = r.u32();
            c.lab_parameters = p;
        } else if (r.remaining()) {
            warnings.push_back("colr: " + std::to_string(r.remaining()) + " bytes after EnumCS " +
                               std::to_string(c.enumerated) + " ignored");
        }
    } else {
        std::string why;
        if (!icc_profile_plausible(r.current(), r.remaining(), &why)) return "the ICC profile is malformed: " + why;
        c.icc = r.current();
        c.icc_size = r.remaining();
    }
    return {};
}

void parse_colr(ByteReader &r, Jp2File &f)
{
    // I.5.3.3: readers ignore colour specifications of methods they do not
    // know (JP2 has 1 and 2, JPX adds 3, any ICC), and every box after the
    // first. A malformed colour box never costs the image: its colour is
    // unknown, with a warning.
    if (r.remaining() >= 1 && (r.current()[0] < 1 || r.current()[0] > 3)) {
        f.warnings.push_back("colr: method " + std::to_string(r.current()[0]) + " ignored");
        return;
    }
    const bool first = !f.has_colour_box;
    f.has_colour_box = true;
    Jp2Colour c;
    const std::string problem = parse_colour(r, c, f.warnings);
    if (!problem.empty()) {
        f.warnings.push_back(std::string(first ? "colr: " : "colr after the first: ") + problem +
                             (first ? "; the colour space is unknown" : ""));
        return;
    }
    if (first) {
        f.colour_index = f.colours.size();
        if (c.method == 1) {
            f.color_space = jp2_enumerated_space(c.enumerated);
            if (f.color_space == J2KC_COLOR_UNKNOWN)
                f.warnings.push_back("colr: enumerated colour space " + std::to_string(c.enumerated) +
                                     " is not one JP2 or JPX defines for this decoder");
        }
    }
    f.colours.push_back(c);
}

void parse_pclr(ByteReader &r, Jp2File &f)
{
    J2KC_CHECK_DATA(r.remaining() >= 3, "too short");
    Jp2Palette p;
    p.num_entries = r.u16();
    const uint8_t npc = r.u8();
    J2KC_CHECK_DATA(p.num_entries >= 1 && p.num_entries <= 1024, "%u entries (1..1024)", unsigned{p.num_entries});
    J2KC_CHECK_DATA(npc >= 1, "no palette columns");
    J2KC_CHECK_DATA(r.remaining() >= npc, "column depths are cut short");
    size_t row_bytes = 0;
    for (unsigned i = 0; i < npc; ++i) {
        const uint8_t b = r.u8();
        J2KC_CHECK_DATA((b & 0x7F) <= 37, "column %u depth 0x%02X", i, b);
        p.columns.push_back({static_cast<uint8_t>((b & 0x7F) + 1), (b & 0x80) != 0});
        row_bytes += (p.columns.back().precision + 7u) / 8;
    }
    J2KC_CHECK_DATA(r.remaining() == row_bytes * p.num_entries, "%zu palette bytes, %u entries of %zu bytes need %zu",
                    r.remaining(), unsigned{p.num_entries}, row_bytes, row_bytes * p.num_entries);
    p.values.reserve(size_t{p.num_entries} * npc);
    for (unsigned e = 0; e < p.num_entries; ++e) {
        for (const auto &col : p.columns) {
            const unsigned bytes = (col.precision + 7u) / 8;
            uint64_t v = r.uint_n(bytes);
            // Values are stored in the low bits; sign-extend from the column's precision.
            v &= col.precision >= 64 ? ~0ull : (1ull << col.precision) - 1;
            int64_t s = static_cast<int64_t>(v);
            if (col.is_signed && (v >> (col.precision - 1)) & 1)
                s = static_cast<int64_t>(v) - static_cast<int64_t>(1ull << col.precision);
            p.values.push_back(s);
        }
    }
    f.palette = std::move(p);
}

void parse_cmap(ByteReader &r, Jp2File &f)
{
    J2KC_CHECK_DATA(r.remaining() % 4 == 0 && r.remaining() > 0, "%zu bytes are no multiple of 4", r.remaining());
    while (r.remaining()) {
        Jp2ComponentMapping m;
        m.component = r.u16();
        m.type = r.u8();
        m.column = r.u8();
        J2KC_CHECK_DATA(m.type <= 1, "mapping type %u", m.type);
        f.component_mapping.push_back(m);
    }
}

/**
 * A malformed cdef is dropped rather than the image: it only says what the
 * channels are and in which order they are shown, and without it they are
 * what they are coded as (I.5.3.6's defaults), as a reader that ignores it sees them.
 */
void ignore_cdef(Jp2File &f, const std::string &why)
{
    f.channel_definitions.clear();
    f.channel_definitions_ignored = why;
    f.warnings.push_back("cdef ignored (" + why + "): the channels keep their coded order");
}

void parse_cdef(ByteReader &r, Jp2File &f)
{
    J2KC_CHECK_DATA(r.remaining() >= 2, "too short");
    const uint16_t n = r.u16();
    J2KC_CHECK_DATA(n >= 1 && r.remaining() == 6u * n, "N %u with %zu bytes", unsigned{n}, r.remaining());
    for (unsigned i = 0; i < n; ++i) {
        Jp2ChannelDefinition d;
        d.channel = r.u16();
        d.type = r.u16();
        d.association = r.u16();
        J2KC_CHECK_DATA(d.type <= 2 || d.type == 0xFFFF, "channel %u type %u", unsigned{d.channel}, unsigned{d.type});
        f.channel_definitions.push_back(d);
    }
}

Jp2Resolution parse_resolution(ByteReader &r)
{
    J2KC_CHECK_DATA(r.remaining() == 10, "%zu bytes (must be 10)", r.remaining());
    Jp2Resolution res;
    res.v_num = r.u16();
    res.v_den = r.u16();
    res.h_num = r.u16();
    res.h_den = r.u16();
    res.v_exp = static_cast<int8_t>(r.u8());
    res.h_exp = static_cast<int8_t>(r.u8());
    return res;
}

void parse_res(const uint8_t *data, const Box &b, Jp2File &f)
{
    const size_t end = b.content_offset + b.content_size;
    size_t pos = b.content_offset;
    while (pos < end) {
        bool clipped = false;
        const Box rb = next_box(data, end, pos, 0, clipped);
        ByteReader r(data + rb.content_offset, rb.content_size);
        in_box(rb, [&] {
            if (rb.type == jp2_box::kCaptureResolution)
                f.capture_resolution = parse_resolution(r);
            else if (rb.type == jp2_box::kDisplayResolution)
                f.display_resolution = parse_resolution(r);
        });
    }
}

void parse_jp2h(const uint8_t *data, const Box &h, Jp2File &f)
{
    const size_t end = h.content_offset + h.content_size;
    size_t pos = h.content_offset;
    bool have_ihdr = false, have_bpcc = false, have_cdef = false, first = true;
    while (pos < end) {
        bool clipped = false;
        const Box b = next_box(data, end, pos, 0, clipped);
        ByteReader r(data + b.content_offset, b.content_size);
        in_box(b, [&] {
            switch (b.type) {
            case jp2_box::kImageHeader:
                if (have_ihdr) {
                    f.warnings.push_back("second ihdr ignored");
                    return;
                }
                if (!first) f.warnings.push_back("ihdr is not the first box of jp2h");
                parse_ihdr(r, f);
                have_ihdr = true;
                return;
            case jp2_box::kBitsPerComponent:
                J2KC_CHECK_DATA(!have_bpcc, "second bpcc");
                f.bpcc.assign(r.current(), r.current() + r.remaining());
                for (uint8_t v : f.bpcc) J2KC_CHECK_DATA((v & 0x7F) <= 37, "depth 0x%02X", v);
                have_bpcc = true;
                return;
            case jp2_box::kColour: parse_colr(r, f); return;
            case jp2_box::kPalette:
                J2KC_CHECK_DATA(!f.palette, "second pclr");
                parse_pclr(r, f);
                return;
            case jp2_box::kComponentMapping:
                J2KC_CHECK_DATA(f.component_mapping.empty(), "second cmap");
                parse_cmap(r, f);
                return;
            case jp2_box::kChannelDefinition:
                J2KC_CHECK_DATA(!have_cdef, "second cdef");
                have_cdef = true;
                try {
                    parse_cdef(r, f);
                } catch (const Error &e) {
                    if (e.status() != J2KC_ERR_INVALID_DATA) throw;
                    ignore_cdef(f, e.what());
                }
                return;
            case jp2_box::kResolution:
                // Informative only (I.5.3.7): a malformed one is dropped, as
                // OpenJPEG and Kakadu drop it, not the image.
                try {
                    parse_res(data, b, f);
                } catch (const Error &e) {
                    if (e.status() != J2KC_ERR_INVALID_DATA) throw;
                    f.capture_resolution.reset();
                    f.display_resolution.reset();
                    f.warnings.push_back(std::string("res box ignored: ") + e.what());
                }
                return;
            default: f.warnings.push_back("box '" + box_name(b.type) + "' in jp2h skipped");
            }
        });
        first = false;
    }
    J2KC_CHECK_DATA(have_ihdr, "jp2h has no ihdr box");
    if (f.bpc == 0xFF) {
        J2KC_CHECK_DATA(have_bpcc, "ihdr BPC 0xFF but no bpcc box");
    } else if (have_bpcc) {
        f.warnings.push_back("bpcc present although ihdr gives one depth");
    }
    J2KC_CHECK_DATA(!have_bpcc || f.bpcc.size() == f.num_components, "bpcc has %zu depths, ihdr %u components",
                    f.bpcc.size(), unsigned{f.num_components});
    J2KC_CHECK_DATA(f.palette.has_value() == !f.component_mapping.empty(),
                    "a palette needs a component mapping box and the reverse (I.5.3.4, I.5.3.5)");
    if (!f.has_colour_box) f.warnings.push_back("jp2h has no usable colr box");
    for (const auto &m : f.component_mapping) {
        J2KC_CHECK_DATA(m.component < f.num_components, "cmap names component %u of %u", unsigned{m.component},
                        unsigned{f.num_components});
        J2KC_CHECK_DATA(m.type == 0 || m.column < f.palette->columns.size(), "cmap names palette column %u of %zu",
                        m.column, f.palette->columns.size());
    }
    const size_t channels = f.component_mapping.empty() ? f.num_components : f.component_mapping.size();
    std::vector<bool> seen(channels, false);
    for (const auto &d : f.channel_definitions) {
        if (d.channel >= channels) {
            ignore_cdef(f, "it names channel " + std::to_string(d.channel) + " of " + std::to_string(channels));
            return;
        }
        if (seen[d.channel]) {
            ignore_cdef(f, "it names channel " + std::to_string(d.channel) + " twice");
            return;
        }
        seen[d.channel] = true;
    }
}

}  // namespace

j2kc_color_space jp2_enumerated_space(uint32_t enumcs)
{
    switch (enumcs) {
    case 12: return J2KC_COLOR_CMYK;
    case 14: return J2KC_COLOR_CIELAB;
    case 16: return J2KC_COLOR_SRGB;
    case 17: return J2KC_COLOR_GRAY;
    case 18: return J2KC_COLOR_SYCC;
    case 20: return J2KC_COLOR_ESRGB;
    case 21: return J2KC_COLOR_ROMM;
    case 22: return J2KC_COLOR_YPBPR_1125_60;
    case 23: return J2KC_COLOR_YPBPR_1250_50;
    case 24: return J2KC_COLOR_ESYCC;
    default: return J2KC_COLOR_UNKNOWN;
    }
}

uint32_t jp2_enumerated_cs(j2kc_color_space space)
{
    switch (space) {
    case J2KC_COLOR_SRGB: return 16;
    case J2KC_COLOR_GRAY: return 17;
    case J2KC_COLOR_SYCC: return 18;
    default: return 0;
    }
}

bool icc_profile_plausible(const uint8_t *data, size_t size, std::string *why)
{
    auto no = [&](const std::string &text) {
        if (why) *why = text;
        return false;
    };
    // ICC.1 7.2: a 128-byte header, then the tag count; the header's first
    // field is the profile's size and bytes 36..39 its signature 'acsp'.
    if (!data || size < 132) return no(std::to_string(size) + " bytes, less than a header and a tag count");
    const uint32_t declared = uint32_t{data[0]} << 24 | uint32_t{data[1]} << 16 | uint32_t{data[2]} << 8 | data[3];
    if (declared < 132 || declared > size)
        return no("its header declares " + std::to_string(declared) + " bytes, " + std::to_string(size) + " are there");
    if (std::memcmp(data + 36, "acsp", 4) != 0) return no("no 'acsp' signature");
    return true;
}

uint8_t Jp2File::component_precision(uint16_t c) const
{
    const uint8_t raw = bpc == 0xFF ? (c < bpcc.size() ? bpcc[c] : 0) : bpc;
    return static_cast<uint8_t>((raw & 0x7F) + 1);
}

bool Jp2File::component_signed(uint16_t c) const
{
    const uint8_t raw = bpc == 0xFF ? (c < bpcc.size() ? bpcc[c] : 0) : bpc;
    return (raw & 0x80) != 0;
}

bool is_jp2(const uint8_t *data, size_t size)
{
    static const uint8_t sig[12] = {0, 0, 0, 12, 0x6A, 0x50, 0x20, 0x20, 0x0D, 0x0A, 0x87, 0x0A};
    return data && size >= 12 && std::equal(sig, sig + 12, data);
}

Jp2File parse_jp2(const uint8_t *data, size_t size)
{
    J2KC_CHECK_DATA(is_jp2(data, size), "no JP2 signature box at offset 0");
    Jp2File f;
    size_t pos = 12;
    bool have_ftyp = false, have_jp2h = false;
    while (pos < size) {
        bool clipped = false;
        const Box b = next_box(data, size, pos, jp2_box::kCodestream, clipped);
        if (!have_ftyp) {
            J2KC_CHECK_DATA(b.type == jp2_box::kFileType, "the second box is '%s' at offset %zu, not ftyp",
                            box_name(b.type).c_str(), b.offset);
            in_box(b, [&] {
                ByteReader r(data + b.content_offset, b.content_size);
                J2KC_CHECK_DATA(b.content_size >= 8 && b.content_size % 4 == 0, "%zu content bytes", b.content_size);
                f.brand = r.u32();
                f.minor_version = r.u32();
                while (r.remaining()) f.compatibility.push_back(r.u32());
                // A JPH file (HTJ2K, ISO/IEC 15444-15 Annex D) has the JP2 boxes
                // under the brand 'jph '.
                const auto listed = [&](uint32_t brand) {
                    return std::find(f.compatibility.begin(), f.compatibility.end(), brand) != f.compatibility.end();
                };
                if (!listed(jp2_box::kBrandJp2) && !listed(jp2_box::kBrandJph))
                    f.warnings.push_back("ftyp lists neither 'jp2 ' nor 'jph ' as compatible");
            });
            have_ftyp = true;
            continue;
        }
        if (b.type == jp2_box::kHeader) {
            if (have_jp2h) {
                f.warnings.push_back("second jp2h ignored");
                continue;
            }
            parse_jp2h(data, b, f);
            have_jp2h = true;
        } else if (b.type == jp2_box::kCodestream) {
            J2KC_CHECK_DATA(have_jp2h, "jp2c at offset %zu comes before jp2h", b.offset);
            if (clipped) f.warnings.push_back("jp2c runs past the end of the file: clipped");
            f.codestream_clipped = clipped;
            f.codestream = data + b.content_offset;
            f.codestream_size = b.content_size;
            f.codestream_offset = b.content_offset;
            break;  // I.5.4: the first codestream is the one
        }
    }
    J2KC_CHECK_DATA(have_ftyp, "no ftyp box");
    J2KC_CHECK_DATA(have_jp2h, "no jp2h box");
    J2KC_CHECK_DATA(f.codestream, "no jp2c (codestream) box");
    return f;
}

std::vector<Jp2Channel> jp2_channels(const Jp2File &f, uint32_t num_codestream_components)
{
    std::vector<Jp2Channel> ch;
    if (!f.component_mapping.empty()) {
        for (const auto &m : f.component_mapping)
            ch.push_back(
                {m.component, m.type == 1 ? int32_t{m.column} : -1, 0xFFFF, 0xFFFF, static_cast<uint16_t>(ch.size())});
    } else {
        for (uint32_t c = 0; c < f.num_components; ++c)
            ch.push_back({static_cast<uint16_t>(c), -1, 0xFFFF, 0xFFFF, static_cast<uint16_t>(c)});
    }
    for (const auto &c : ch)
        J2KC_CHECK_DATA(c.component < num_codestream_components, "JP2 channel from component %u, the codestream has %u",
                        unsigned{c.component}, num_codestream_components);
    if (f.channel_definitions.empty()) {
        const size_t colours = f.color_space == J2KC_COLOR_GRAY      ? 1
                               : f.color_space == J2KC_COLOR_CMYK    ? 4
                               : f.color_space == J2KC_COLOR_UNKNOWN ? ch.size()
                                                                     : 3;
        for (size_t i = 0; i < ch.size() && i < colours; ++i) {
            ch[i].type = 0;
            ch[i].association = static_cast<uint16_t>(i + 1);
        }
    } else {
        for (const auto &d : f.channel_definitions) {
            if (d.channel >= ch.size()) continue;
            ch[d.channel].type = d.type;
            ch[d.channel].association = d.association;
        }
    }
    auto group = [](const Jp2Channel &c) { return c.type == 0 ? 0 : (c.type <= 2 ? 1 : 2); };
    std::stable_sort(ch.begin(), ch.end(), [&](const Jp2Channel &a, const Jp2Channel &b) {
        if (group(a) != group(b)) return group(a) < group(b);
        if (group(a) == 2) return false;
        return a.association < b.association;
    });
    return ch;
}

std::vector<Jp2PaletteOutput> jp2_palette_outputs(const Jp2File &f, const ImageSize &siz)
{
    std::vector<Jp2PaletteOutput> out;
    if (!f.palette) return out;
    for (const Jp2ComponentMapping &m : f.component_mapping) {
        J2KC_CHECK_DATA(m.component < siz.components.size(), "cmap names component %u, the codestream has %zu",
                        unsigned{m.component}, siz.components.size());
        Jp2PaletteOutput o;
        o.component = m.component;
        if (m.type == 1) {
            J2KC_CHECK_DATA(m.column < f.palette->columns.size(), "cmap names palette column %u of %zu",
                            unsigned{m.column}, f.palette->columns.size());
            o.palette_column = m.column;
            o.precision = f.palette->columns[m.column].precision;
            o.is_signed = f.palette->columns[m.column].is_signed;
        } else {
            o.precision = siz.components[m.component].precision;
            o.is_signed = siz.components[m.component].is_signed;
        }
        out.push_back(o);
    }
    return out;
}

int64_t jp2_palette_lookup(const Jp2Palette &p, uint32_t column, int64_t index)
{
    const int64_t last = int64_t{p.num_entries} - 1;
    return p.value(static_cast<uint32_t>(index < 0 ? 0 : index > last ? last : index), column);
}

namespace {

/** A sample of a host plane, as the value the plane's format holds. */
int64_t load_sample(const j2kc_component &c, uint32_t x, uint32_t y)
{
    const uint8_t *at = reinterpret_cast<const uint8_t *>(static_cast<uintptr_t>(c.data)) +
                        static_cast<ptrdiff_t>(y) * c.row_stride + size_t{x} * c.sample_stride;
    // Planes may be unaligned (any stride): copy the bytes (host order, as the decoder writes).
    uint64_t raw = 0;
    if (c.bytes_per_sample == 1) {
        raw = *at;
    } else if (c.bytes_per_sample == 2) {
        uint16_t v;
        std::memcpy(&v, at, 2);
        raw = v;
    } else {
        uint32_t v;
        std::memcpy(&v, at, 4);
        raw = v;
    }
    const unsigned bits = c.bytes_per_sample * 8u - c.shift;
    raw >>= c.shift;
    if (c.is_signed && bits < 64 && ((raw >> (bits - 1)) & 1)) return static_cast<int64_t>(raw) - (int64_t{1} << bits);
    return static_cast<int64_t>(raw);
}

void store_sample(const j2kc_component &c, uint32_t x, uint32_t y, int64_t v)
{
    uint8_t *at = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(c.data)) +
                  static_cast<ptrdiff_t>(y) * c.row_stride + size_t{x} * c.sample_stride;
    const uint64_t raw = static_cast<uint64_t>(v) << c.shift;
    if (c.bytes_per_sample == 1) {
        *at = static_cast<uint8_t>(raw);
    } else if (c.bytes_per_sample == 2) {
        const uint16_t v = static_cast<uint16_t>(raw);
        std::memcpy(at, &v, 2);
    } else {
        const uint32_t v = static_cast<uint32_t>(raw);
        std::memcpy(at, &v, 4);
    }
}

void check_plane(const j2kc_component &c, const char *which, uint32_t i)
{
    J2KC_CHECK_ARG(c.data != 0 && (c.bytes_per_sample == 1 || c.bytes_per_sample == 2 || c.bytes_per_sample == 4) &&
                       c.shift < c.bytes_per_sample * 8u && c.sample_stride >= c.bytes_per_sample,
                   "palette: %s plane %u has no data or a bad format", which, i);
}

}  // namespace

void jp2_apply_palette(const Jp2File &f, const std::vector<Jp2PaletteOutput> &outputs, const j2kc_image &decoded,
                       const j2kc_image &out)
{
    J2KC_CHECK_ARG(f.palette.has_value(), "palette: the file has none");
    J2KC_CHECK_ARG(decoded.memory == J2KC_MEMORY_HOST && out.memory == J2KC_MEMORY_HOST,
                   "palette: planes must be in host memory");
    J2KC_CHECK_ARG(out.num_components == outputs.size() && out.components && decoded.components,
                   "palette: %u output planes for %zu channels", out.num_components, outputs.size());
    for (uint32_t i = 0; i < out.num_components; ++i) {
        const Jp2PaletteOutput &o = outputs[i];
        J2KC_CHECK_ARG(o.component < decoded.num_components, "palette: channel %u needs component %u of %u", i,
                       unsigned{o.component}, decoded.num_components);
        J2KC_CHECK_ARG(o.palette_column < 0 || size_t(o.palette_column) < f.palette->columns.size(),
                       "palette: column %d", o.palette_column);
        const j2kc_component &src = decoded.components[o.component];
        const j2kc_component &dst = out.components[i];
        check_plane(src, "decoded", o.component);
        check_plane(dst, "output", i);
        J2KC_CHECK_ARG(src.width == dst.width && src.height == dst.height,
                       "palette: output %u is %ux%u, component %u %ux%u", i, dst.width, dst.height,
                       unsigned{o.component}, src.width, src.height);
        for (uint32_t y = 0; y < dst.height; ++y)
            for (uint32_t x = 0; x < dst.width; ++x) {
                const int64_t v = load_sample(src, x, y);
                store_sample(dst, x, y,
                             o.palette_column < 0
                                 ? v
                                 : jp2_palette_lookup(*f.palette, static_cast<uint32_t>(o.palette_column), v));
            }
    }
}

namespace {

const char *space_name(j2kc_color_space space)
{
    switch (space) {
    case J2KC_COLOR_UNKNOWN: return "unknown";
    case J2KC_COLOR_SRGB: return "sRGB";
    case J2KC_COLOR_GRAY: return "greyscale";
    case J2KC_COLOR_SYCC: return "sYCC";
    case J2KC_COLOR_XYZ: return "X'Y'Z'";
    case J2KC_COLOR_ESRGB: return "e-sRGB";
    case J2KC_COLOR_ROMM: return "ROMM-RGB";
    case J2KC_COLOR_ESYCC: return "e-sYCC";
    case J2KC_COLOR_YPBPR_1125_60: return "YPbPr 1125/60";
    case J2KC_COLOR_YPBPR_1250_50: return "YPbPr 1250/50";
    case J2KC_COLOR_CIELAB: return "CIELab";
    case J2KC_COLOR_CMYK: return "CMYK";
    }
    return "out-of-range";
}

}  // namespace

std::vector<uint8_t> jp2_file_header(const ImageSize &siz, j2kc_color_space colour, const std::vector<uint8_t> &icc,
                                     uint32_t brand)
{
    const size_t nc = siz.components.size();
    J2KC_CHECK_ARG(nc >= 1 && nc <= 16384 && siz.width > siz.x0 && siz.height > siz.y0,
                   "image for JP2: %zu components, %ux%u", nc, siz.width, siz.height);
    // The colour box: a restricted ICC profile (I.5.3.3 method 2) when one is
    // given, else one of the three spaces JP2 enumerates. A JP2 reader knows
    // no other space, so any other is a caller's mistake, not a guess to make.
    size_t colours = 0;
    uint32_t enumcs = 0;
    bool unknown = false;
    if (!icc.empty()) {
        std::string why;
        J2KC_CHECK_ARG(icc_profile_plausible(icc.data(), icc.size(), &why), "JP2: the ICC profile is unusable: %s",
                       why.c_str());
        // Restricted ICC profiles are monochrome or three-component (I.5.3.3).
        colours = std::memcmp(icc.data() + 16, "GRAY", 4) == 0 ? 1 : 3;
    } else if (colour == J2KC_COLOR_UNKNOWN) {
        enumcs = nc < 3 ? 17 : 16;
        colours = nc < 3 ? 1 : 3;
        unknown = true;
    } else {
        enumcs = jp2_enumerated_cs(colour);
        J2KC_CHECK_ARG(enumcs != 0,
                       "JP2: %s has no enumerated colour space in JP2 (sRGB, greyscale, sYCC): give its ICC "
                       "profile, or write a raw codestream",
                       space_name(colour));
        colours = enumcs == 17 ? 1 : 3;
    }
    J2KC_CHECK_ARG(nc >= colours, "JP2: %s needs %zu components, the image has %zu",
                   icc.empty() ? space_name(colour) : "the ICC profile", colours, nc);

    ByteWriter w;
    auto begin = [&](uint32_t type) {
        const size_t at = w.size();
        w.u32(0);
        w.u32(type);
        return at;
    };
    auto end = [&](size_t at) {
        J2KC_CHECK_ARG(w.size() - at <= 0xFFFFFFFFull, "box too large");
        w.patch_u32(at, static_cast<uint32_t>(w.size() - at));
    };
    // I.5.1, I.5.2
    w.u32(12);
    w.u32(jp2_box::kSignature);
    w.u32(0x0D0A870A);
    size_t at = begin(jp2_box::kFileType);
    w.u32(brand);
    w.u32(0);
    w.u32(brand);
    end(at);

    const size_t jp2h = begin(jp2_box::kHeader);
    auto depth = [](const ComponentSize &c) {
        return static_cast<uint8_t>((c.precision - 1) | (c.is_signed ? 0x80 : 0));
    };
    bool same = true;
    for (const auto &c : siz.components) same &= depth(c) == depth(siz.components[0]);
    at = begin(jp2_box::kImageHeader);
    w.u32(siz.height - siz.y0);
    w.u32(siz.width - siz.x0);
    w.u16(static_cast<uint16_t>(nc));
    w.u8(same ? depth(siz.components[0]) : 0xFF);
    w.u8(7);
    w.u8(unknown ? 1 : 0);
    w.u8(0);
    end(at);
    if (!same) {
        at = begin(jp2_box::kBitsPerComponent);
        for (const auto &c : siz.components) w.u8(depth(c));
        end(at);
    }
    at = begin(jp2_box::kColour);
    w.u8(icc.empty() ? 1 : 2);
    w.u8(0);  // PREC and APPROX: JP2 writers set both to 0 (I.5.3.3)
    w.u8(0);
    if (icc.empty())
        w.u32(enumcs);
    else
        w.bytes(icc);
    end(at);
    if (nc == colours + 1) {
        at = begin(jp2_box::kChannelDefinition);
        w.u16(static_cast<uint16_t>(nc));
        for (size_t i = 0; i < nc; ++i) {
            w.u16(static_cast<uint16_t>(i));
            w.u16(i < colours ? 0 : 1);
            w.u16(static_cast<uint16_t>(i < colours ? i + 1 : 0));
        }
        end(at);
    }
    end(jp2h);
    return std::move(w.buffer());
}

void append_jp2_codestream_box(std::vector<uint8_t> &file, const uint8_t *codestream, size_t size)
{
    ByteWriter w;
    // XLBox when the codestream would not fit a 32-bit LBox.
    if (size + 8 > 0xFFFFFFFFull) {
        w.u32(1);
        w.u32(jp2_box::kCodestream);
        w.u32(static_cast<uint32_t>((uint64_t{size} + 16) >> 32));
        w.u32(static_cast<uint32_t>(size + 16));
    } else {
        w.u32(static_cast<uint32_t>(size + 8));
        w.u32(jp2_box::kCodestream);
    }
    file.reserve(file.size() + w.size() + size);
    file.insert(file.end(), w.buffer().begin(), w.buffer().end());
    file.insert(file.end(), codestream, codestream + size);
}

std::vector<uint8_t> wrap_jp2(const std::vector<uint8_t> &codestream, const ImageSize &siz, j2kc_color_space colour,
                              const std::vector<uint8_t> &icc)
{
    std::vector<uint8_t> file = jp2_file_header(siz, colour, icc);
    append_jp2_codestream_box(file, codestream.data(), codestream.size());
    return file;
}

}  // namespace j2kc
