/**
 * @file writer.cpp
 * @brief Marker segment syntax of ISO/IEC 15444-1 Annex A (A.4-A.9), written.
 * Each writer checks that its values fit the field widths of the standard, so
 * a caller's mistake fails here instead of producing a stream that lies.
 */
#include "codestream/writer.h"

#include <algorithm>

#include "common/status.h"

namespace j2kc {
namespace {

constexpr size_t kMaxSegmentBody = 65535 - 2;  // Lxxx counts itself

/** Starts a segment; returns where its length goes, for end_segment. */
size_t begin_segment(ByteWriter &w, uint16_t marker)
{
    w.u16(marker);
    const size_t at = w.size();
    w.u16(0);
    return at;
}

void end_segment(ByteWriter &w, size_t length_at)
{
    const size_t len = w.size() - length_at;
    J2KC_CHECK_ARG(len <= 65535, "marker segment of %zu bytes exceeds 65535", len);
    w.patch_u16(length_at, static_cast<uint16_t>(len));
}

void write_component_index(ByteWriter &w, uint16_t component, uint32_t num_components)
{
    J2KC_CHECK_ARG(num_components >= 1 && num_components <= 16384 && component < num_components, "component %u of %u",
                   unsigned{component}, num_components);
    if (num_components < 257)
        w.u8(static_cast<uint8_t>(component));
    else
        w.u16(component);
}

void write_spco(ByteWriter &w, const ComponentCoding &c)
{
    J2KC_CHECK_ARG(c.levels <= kMaxLevels, "%u decomposition levels", c.levels);
    J2KC_CHECK_ARG(c.cblk_width_log2 >= 2 && c.cblk_height_log2 >= 2 && c.cblk_width_log2 + c.cblk_height_log2 <= 12 &&
                       c.cblk_width_log2 <= 10 && c.cblk_height_log2 <= 10,
                   "code-block 2^%u x 2^%u", c.cblk_width_log2, c.cblk_height_log2);
    w.u8(c.levels);
    w.u8(static_cast<uint8_t>(c.cblk_width_log2 - 2));
    w.u8(static_cast<uint8_t>(c.cblk_height_log2 - 2));
    w.u8(c.cblk_style);
    w.u8(static_cast<uint8_t>(c.wavelet));
    if (c.precincts_defined) {
        for (int r = 0; r <= c.levels; ++r) {
            const uint8_t ppx = c.precinct_width_log2[r], ppy = c.precinct_height_log2[r];
            J2KC_CHECK_ARG(ppx <= 15 && ppy <= 15 && (r == 0 || (ppx && ppy)),
                           "precinct exponents %u, %u at resolution %d", ppx, ppy, r);
            w.u8(static_cast<uint8_t>(ppy << 4 | ppx));
        }
    }
}

void write_quant_body(ByteWriter &w, const Quantization &q)
{
    J2KC_CHECK_ARG(q.style <= Quantization::kScalarExpounded, "quantisation style %d", int{q.style});
    J2KC_CHECK_ARG(q.guard_bits <= 7, "%u guard bits (0..7)", q.guard_bits);
    J2KC_CHECK_ARG(!q.steps.empty() && q.steps.size() <= 3 * kMaxLevels + 1, "%zu quantisation steps", q.steps.size());
    w.u8(static_cast<uint8_t>(q.guard_bits << 5 | q.style));
    const size_t n = q.style == Quantization::kScalarDerived ? 1 : q.steps.size();
    for (size_t i = 0; i < n; ++i) {
        const QuantStep &s = q.steps[i];
        J2KC_CHECK_ARG(s.exponent <= 31 && s.mantissa <= 2047, "step %zu: exponent %u mantissa %u", i, s.exponent,
                       unsigned{s.mantissa});
        if (q.style == Quantization::kNone)
            w.u8(static_cast<uint8_t>(s.exponent << 3));
        else
            w.u16(static_cast<uint16_t>(s.exponent << 11 | s.mantissa));
    }
}

/** PLT/PPT-style split: Z byte, then payload bytes up to the segment limit. */
template <typename Chunker>
void write_split(ByteWriter &w, uint16_t marker, unsigned &z, Chunker &&next_chunk_size, const uint8_t *payload,
                 size_t size)
{
    size_t pos = 0;
    do {
        J2KC_CHECK_ARG(z <= 255, "more than 256 %s segments", marker == kPLT ? "PLT" : "PPT");
        const size_t n = next_chunk_size(pos, kMaxSegmentBody - 1);
        const size_t at = begin_segment(w, marker);
        w.u8(static_cast<uint8_t>(z++));
        w.bytes(payload + pos, n);
        end_segment(w, at);
        pos += n;
    } while (pos < size);
}

}  // namespace

void write_soc(ByteWriter &w) { w.u16(kSOC); }
void write_sod(ByteWriter &w) { w.u16(kSOD); }
void write_eoc(ByteWriter &w) { w.u16(kEOC); }

void write_siz(ByteWriter &w, const ImageSize &s)
{
    const size_t csiz = s.components.size();
    J2KC_CHECK_ARG(csiz >= 1 && csiz <= 16384, "%zu components", csiz);
    J2KC_CHECK_ARG(s.width > s.x0 && s.height > s.y0 && s.tile_width && s.tile_height && s.tile_x0 <= s.x0 &&
                       s.tile_y0 <= s.y0 && uint64_t{s.tile_x0} + s.tile_width > s.x0 &&
                       uint64_t{s.tile_y0} + s.tile_height > s.y0,
                   "inconsistent image/tile geometry");
    const size_t at = begin_segment(w, kSIZ);
    w.u16(s.rsiz);
    for (uint32_t v : {s.width, s.height, s.x0, s.y0, s.tile_width, s.tile_height, s.tile_x0, s.tile_y0}) w.u32(v);
    w.u16(static_cast<uint16_t>(csiz));
    for (const ComponentSize &c : s.components) {
        J2KC_CHECK_ARG(c.precision >= 1 && c.precision <= 38 && c.dx >= 1 && c.dy >= 1,
                       "component precision %u, subsampling %ux%u", c.precision, c.dx, c.dy);
        w.u8(static_cast<uint8_t>((c.precision - 1) | (c.is_signed ? 0x80 : 0)));
        w.u8(c.dx);
        w.u8(c.dy);
    }
    end_segment(w, at);
}

void write_cap(ByteWriter &w, uint32_t pcap, const std::vector<uint16_t> &ccap)
{
    size_t bits = 0;
    for (uint32_t v = pcap; v; v &= v - 1) ++bits;
    J2KC_CHECK_ARG(ccap.size() == bits, "Pcap 0x%08X needs %zu Ccap words, %zu given", pcap, bits, ccap.size());
    const size_t at = begin_segment(w, kCAP);
    w.u32(pcap);
    for (uint16_t c : ccap) w.u16(c);
    end_segment(w, at);
}

void write_cod(ByteWriter &w, const CodingStyle &cod)
{
    J2KC_CHECK_ARG(cod.progression <= 4 && cod.layers >= 1 && cod.mct <= 1, "progression %u, %u layers, MCT %u",
                   cod.progression, unsigned{cod.layers}, cod.mct);
    const size_t at = begin_segment(w, kCOD);
    w.u8(static_cast<uint8_t>((cod.component.precincts_defined ? 1 : 0) | (cod.sop ? 2 : 0) | (cod.eph ? 4 : 0)));
    w.u8(cod.progression);
    w.u16(cod.layers);
    w.u8(cod.mct);
    write_spco(w, cod.component);
    end_segment(w, at);
}

void write_coc(ByteWriter &w, uint16_t component, const ComponentCoding &coding, uint32_t num_components)
{
    const size_t at = begin_segment(w, kCOC);
    write_component_index(w, component, num_components);
    w.u8(coding.precincts_defined ? 1 : 0);
    write_spco(w, coding);
    end_segment(w, at);
}

void write_qcd(ByteWriter &w, const Quantization &q)
{
    const size_t at = begin_segment(w, kQCD);
    write_quant_body(w, q);
    end_segment(w, at);
}

void write_qcc(ByteWriter &w, uint16_t component, const Quantization &q, uint32_t num_components)
{
    const size_t at = begin_segment(w, kQCC);
    write_component_index(w, component, num_components);
    write_quant_body(w, q);
    end_segment(w, at);
}

void write_rgn(ByteWriter &w, uint16_t component, uint8_t shift, uint32_t num_components)
{
    const size_t at = begin_segment(w, kRGN);
    write_component_index(w, component, num_components);
    w.u8(0);
    w.u8(shift);
    end_segment(w, at);
}

void write_poc(ByteWriter &w, const std::vector<ProgressionChange> &entries, uint32_t num_components)
{
    J2KC_CHECK_ARG(!entries.empty(), "POC without entries");
    J2KC_CHECK_ARG(num_components >= 1 && num_components <= 16384, "%u components", num_components);
    const bool wide = num_components >= 257;
    const uint32_t top = wide ? 16384 : 256;
    const size_t at = begin_segment(w, kPOC);
    for (const ProgressionChange &p : entries) {
        J2KC_CHECK_ARG(p.progression <= 4 && p.resolution_start < p.resolution_end && p.resolution_end <= 33 &&
                           p.component_start < p.component_end && p.component_end <= top && p.layer_end >= 1 &&
                           p.component_start < num_components,
                       "POC entry r %u..%u c %u..%u l ..%u p %u", p.resolution_start, p.resolution_end,
                       unsigned{p.component_start}, unsigned{p.component_end}, unsigned{p.layer_end}, p.progression);
        const uint32_t ce = p.component_end == top ? 0 : p.component_end;
        w.u8(p.resolution_start);
        w.uint_n(p.component_start, wide ? 2 : 1);
        w.u16(p.layer_end);
        w.u8(p.resolution_end);
        w.uint_n(ce, wide ? 2 : 1);
        w.u8(p.progression);
    }
    end_segment(w, at);
}

void write_crg(ByteWriter &w, const std::vector<std::pair<uint16_t, uint16_t>> &offsets)
{
    J2KC_CHECK_ARG(!offsets.empty(), "CRG without components");
    const size_t at = begin_segment(w, kCRG);
    for (const auto &o : offsets) {
        w.u16(o.first);
        w.u16(o.second);
    }
    end_segment(w, at);
}

size_t tlm_bytes(size_t entries, int st, int sp)
{
    const size_t segments = std::max<size_t>(1, (entries + kTlmEntriesPerSegment - 1) / kTlmEntriesPerSegment);
    return segments * 6 + entries * tlm_entry_bytes(st, sp);
}

size_t write_tlm(ByteWriter &w, const std::vector<TilePartLength> &entries, int st, int sp)
{
    uint32_t max_tile = 0, max_len = 0;
    bool in_order = true;
    for (size_t i = 0; i < entries.size(); ++i) {
        max_tile = std::max<uint32_t>(max_tile, entries[i].tile);
        max_len = std::max(max_len, entries[i].length);
        in_order &= entries[i].tile == i;
    }
    if (st < 0) st = max_tile < 256 ? 1 : 2;
    if (sp < 0) sp = max_len > 65535 ? 1 : 0;
    J2KC_CHECK_ARG(st <= 2 && sp <= 1, "TLM ST %d, SP %d", st, sp);
    J2KC_CHECK_ARG(st != 0 || in_order, "TLM ST 0 needs one tile-part per tile, in order");
    J2KC_CHECK_ARG(st != 1 || max_tile < 256, "TLM ST 1 cannot name tile %u", max_tile);
    J2KC_CHECK_ARG(sp == 1 || max_len <= 65535, "TLM SP 0 cannot hold length %u", max_len);
    const size_t segments = (entries.size() + kTlmEntriesPerSegment - 1) / kTlmEntriesPerSegment;
    J2KC_CHECK_ARG(segments <= 256, "%zu TLM entries need more than 256 segments", entries.size());
    const size_t start = w.size();
    size_t i = 0;
    for (size_t z = 0; z < std::max<size_t>(segments, 1); ++z) {
        const size_t at = begin_segment(w, kTLM);
        w.u8(static_cast<uint8_t>(z));
        w.u8(static_cast<uint8_t>(sp << 6 | st << 4));
        for (size_t k = 0; k < kTlmEntriesPerSegment && i < entries.size(); ++k, ++i) {
            w.uint_n(entries[i].tile, static_cast<unsigned>(st));
            w.uint_n(entries[i].length, sp ? 4 : 2);
        }
        end_segment(w, at);
    }
    return w.size() - start;
}

void write_plt(ByteWriter &w, const std::vector<uint32_t> &packet_lengths)
{
    // Encode all lengths, remembering where each ends so no length is split.
    std::vector<uint8_t> bytes;
    std::vector<size_t> ends;
    for (uint32_t v : packet_lengths) {
        uint8_t group[5];
        int n = 0;
        do {
            group[n++] = static_cast<uint8_t>(v & 0x7F);
            v >>= 7;
        } while (v);
        while (n-- > 0) bytes.push_back(static_cast<uint8_t>(group[n] | (n ? 0x80 : 0)));
        ends.push_back(bytes.size());
    }
    unsigned z = 0;
    size_t e = 0;
    write_split(
        w, kPLT, z,
        [&](size_t pos, size_t room) {
            size_t last = pos;
            while (e < ends.size() && ends[e] - pos <= room) last = ends[e++];
            return last - pos;
        },
        bytes.data(), bytes.size());
}

void write_ppm(ByteWriter &w, const std::vector<std::vector<uint8_t>> &tile_part_headers)
{
    // Records may continue into the next segment, but an Nppm never straddles two
    // (OpenJPEG reads each Nppm from one segment).
    unsigned z = 0;
    size_t at = 0;
    bool open = false;
    auto room = [&] { return kMaxSegmentBody - (w.size() - at - 2); };
    auto start = [&] {
        if (open) end_segment(w, at);
        J2KC_CHECK_ARG(z <= 255, "more than 256 PPM segments");
        at = begin_segment(w, kPPM);
        w.u8(static_cast<uint8_t>(z++));
        open = true;
    };
    start();
    for (const auto &h : tile_part_headers) {
        J2KC_CHECK_ARG(h.size() <= 0xFFFFFFFFull, "tile-part packet headers too long");
        if (room() < 4) start();
        w.u32(static_cast<uint32_t>(h.size()));
        size_t pos = 0;
        while (pos < h.size()) {
            if (room() == 0) start();
            const size_t n = std::min(room(), h.size() - pos);
            w.bytes(h.data() + pos, n);
            pos += n;
        }
    }
    end_segment(w, at);
}

unsigned write_ppt(ByteWriter &w, const std::vector<uint8_t> &packet_headers, unsigned first_z)
{
    unsigned z = first_z;
    write_split(
        w, kPPT, z, [&](size_t pos, size_t room) { return std::min(room, packet_headers.size() - pos); },
        packet_headers.data(), packet_headers.size());
    return z;
}

void write_com(ByteWriter &w, const std::string &text)
{
    J2KC_CHECK_ARG(text.size() <= kMaxSegmentBody - 2, "comment of %zu bytes", text.size());
    const size_t at = begin_segment(w, kCOM);
    w.u16(1);
    w.bytes(reinterpret_cast<const uint8_t *>(text.data()), text.size());
    end_segment(w, at);
}

size_t write_sot(ByteWriter &w, uint16_t tile, uint8_t part, uint8_t parts, uint32_t psot)
{
    J2KC_CHECK_ARG(part != 255 && (parts == 0 || part < parts), "tile-part %u of %u", part, parts);
    const size_t at = w.size();
    w.u16(kSOT);
    w.u16(10);
    w.u16(tile);
    w.u32(psot);
    w.u8(part);
    w.u8(parts);
    return at;
}

void patch_sot_psot(ByteWriter &w, size_t sot_offset, uint32_t psot)
{
    J2KC_CHECK_ARG(sot_offset + 12 <= w.size() && w.buffer()[sot_offset] == 0xFF && w.buffer()[sot_offset + 1] == 0x90,
                   "no SOT at offset %zu", sot_offset);
    J2KC_CHECK_ARG(psot == 0 || psot >= 14, "Psot %u < 14", psot);
    w.patch_u32(sot_offset + 6, psot);
}

}  // namespace j2kc
