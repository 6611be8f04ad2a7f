/**
 * @file tier2_cell_tables.cpp
 * @brief The cell table of Bruns et al. (tier2_cuda.h), section VII, for a
 * frame: precincts and their tag-tree storage (B.10.2), packets in B.12 order
 * (POC of A.6.6 included), tile-parts (A.4.2) with their TLM entries (A.7.1).
 */
#include "tier2/tier2_cell_tables.h"

#include <algorithm>
#include <cstdio>

#include "codestream/markers.h"
#include "common/status.h"
#include "tier2/progression.h"

namespace j2kc {
namespace {

/** Offsets of the TLM entries of a main header, in order; st/sp from Stlm. */
std::vector<uint32_t> tlm_entries(const std::vector<uint8_t> &h, uint8_t &st, uint8_t &sp)
{
    std::vector<uint32_t> entries;
    J2KC_CHECK_ARG(h.size() >= 2 && h[0] == 0xFF && h[1] == 0x4F, "main header does not start with SOC");
    J2KC_CHECK_ARG(h.size() < UINT32_MAX, "main header of %zu bytes", h.size());
    bool seen = false;
    size_t pos = 2;
    while (pos < h.size()) {
        J2KC_CHECK_ARG(pos + 4 <= h.size() && h[pos] == 0xFF, "main header: no marker segment at byte %zu", pos);
        const uint32_t marker = uint32_t{h[pos]} << 8 | h[pos + 1];
        const uint32_t length = uint32_t{h[pos + 2]} << 8 | h[pos + 3];
        J2KC_CHECK_ARG(length >= 2 && pos + 2 + length <= h.size(), "main header: marker %04X of length %u", marker,
                       length);
        if (marker == kTLM) {
            J2KC_CHECK_ARG(length >= 4, "TLM segment of length %u", length);
            const uint8_t stlm = h[pos + 5];
            const uint8_t s = (stlm >> 4) & 3, p = (stlm >> 6) & 1;
            J2KC_CHECK_ARG(s <= 2, "TLM ST %u", s);
            J2KC_CHECK_ARG(!seen || (s == st && p == sp), "TLM segments with different Stlm");
            st = s;
            sp = p;
            seen = true;
            const uint32_t entry = s + (p ? 4u : 2u);
            J2KC_CHECK_ARG((length - 4) % entry == 0, "TLM segment of length %u with %u-byte entries", length, entry);
            for (size_t at = pos + 6; at < pos + 2 + length; at += entry) entries.push_back(uint32_t(at));
        }
        pos += 2 + length;
    }
    return entries;
}

}  // namespace

T2gHostTables build_t2g_tables(const Tier2GpuConfig &config, const std::vector<const TileLayout *> &layouts)
{
    const PacketEncodeParams &pp = config.packets;
    J2KC_CHECK_ARG(!layouts.empty(), "no tiles");
    J2KC_CHECK_ARG(layouts.size() <= 65535, "%zu tiles", layouts.size());
    J2KC_CHECK_ARG(!pp.packed_headers, "packed packet headers (PPT/PPM) are not written by Tier2Gpu");
    J2KC_CHECK_ARG(pp.layers >= 1, "no layers");
    J2KC_CHECK_ARG(config.tile_part_packets.empty() || config.tile_part_packets.size() == layouts.size(),
                   "tile-parts given for %zu of %zu tiles", config.tile_part_packets.size(), layouts.size());
    const size_t ncomp = layouts[0]->components.size();
    J2KC_CHECK_ARG(pp.cblk_style.size() == ncomp, "%zu code-block styles for %zu components", pp.cblk_style.size(),
                   ncomp);

    T2gHostTables out;
    out.main_header = config.main_header;
    uint8_t st = 0, sp = 0;
    const std::vector<uint32_t> tlm = tlm_entries(config.main_header, st, sp);
    const bool has_tlm = !tlm.empty();
    out.fixed_cell_len.push_back(config.main_header.size());

    uint32_t block_base = 0, nodes = 0;
    for (uint32_t t = 0; t < layouts.size(); ++t) {
        const TileLayout &layout = *layouts[t];
        J2KC_CHECK_ARG(layout.components.size() == ncomp, "tile %u has %zu components, tile 0 %zu", t,
                       layout.components.size(), ncomp);
        const uint32_t nblocks = static_cast<uint32_t>(layout.code_blocks.size());
        J2KC_CHECK_ARG(uint64_t{block_base} + nblocks < UINT32_MAX, "too many code-blocks");
        const uint32_t precinct_base = static_cast<uint32_t>(out.precincts.size());
        out.block_precinct.resize(size_t{block_base} + nblocks, UINT32_MAX);

        // Precincts in PrecinctTable order (component, resolution, raster).
        const PrecinctTable table(layout);
        for (uint16_t c = 0; c < ncomp; ++c) {
            const TileComponent &tc = layout.components[c];
            for (uint8_t r = 0; r < tc.resolutions.size(); ++r) {
                const Resolution &res = tc.resolutions[r];
                for (uint32_t p = 0; p < res.precincts.size(); ++p) {
                    J2KC_CHECK_ARG(table.index(c, r, p) + precinct_base == out.precincts.size(), "precinct numbering");
                    const Precinct &prec = res.precincts[p];
                    J2KC_CHECK_ARG(prec.bands.size() <= 255, "%zu bands", prec.bands.size());
                    T2gPrecinct tp;
                    tp.band_begin = static_cast<uint32_t>(out.bands.size());
                    tp.num_bands = static_cast<uint8_t>(prec.bands.size());
                    tp.style = pp.cblk_style[c];
                    const uint32_t flat = static_cast<uint32_t>(out.precincts.size());
                    tp.run_begin = static_cast<uint32_t>(out.runs.size());
                    for (const PrecinctBand &pb : prec.bands) {
                        T2gBand band;
                        band.cblks_x = pb.cblks_x;
                        band.cblks_y = pb.cblks_y;
                        band.first_block = block_base + pb.first_cblk;
                        band.node_offset = nodes;
                        const uint64_t n = tag_tree_num_nodes(pb.cblks_x, pb.cblks_y);
                        J2KC_CHECK_ARG(nodes + n < UINT32_MAX, "too many tag-tree nodes");
                        nodes += static_cast<uint32_t>(n);
                        J2KC_CHECK_ARG(uint64_t{pb.first_cblk} + pb.num_cblks() <= nblocks,
                                       "precinct-band beyond the tile's code-blocks");
                        for (uint32_t i = 0; i < pb.num_cblks(); ++i) {
                            uint32_t &owner = out.block_precinct[band.first_block + i];
                            J2KC_CHECK_ARG(owner == UINT32_MAX, "code-block %u in two precincts", band.first_block + i);
                            owner = flat;
                        }
                        for (uint32_t i = 0; i < pb.num_cblks(); i += kT2gRunBlocks)
                            out.runs.push_back({flat, static_cast<uint32_t>(out.bands.size()), i,
                                                std::min(kT2gRunBlocks, pb.num_cblks() - i)});
                        out.bands.push_back(band);
                    }
                    tp.num_runs = static_cast<uint32_t>(out.runs.size()) - tp.run_begin;
                    out.precincts.push_back(tp);
                }
            }
        }
        for (uint32_t i = 0; i < nblocks; ++i)
            J2KC_CHECK_ARG(out.block_precinct[block_base + i] != UINT32_MAX, "tile %u: code-block %u in no precinct", t,
                           i);

        // Packets in codestream order; each precinct's come layer 0, 1, ... (a prefix).
        const std::vector<PacketId> order = packet_order(layout, pp.layers, pp.progression, pp.progression_changes);
        const uint32_t packet_base = static_cast<uint32_t>(out.packets.size());
        std::vector<std::vector<uint32_t>> per_precinct(out.precincts.size() - precinct_base);
        for (uint32_t i = 0; i < order.size(); ++i) {
            const PacketId &id = order[i];
            std::vector<uint32_t> &v = per_precinct[table.index(id.component, id.resolution, id.precinct)];
            J2KC_CHECK_ARG(id.layer == v.size(), "packet order: layer %u of a precinct after %zu layers", id.layer,
                           v.size());
            v.push_back(packet_base + i);
            T2gPacket pk;
            pk.sequence = i & 0xFFFF;
            out.packets.push_back(pk);
        }
        for (size_t k = 0; k < per_precinct.size(); ++k) {
            T2gPrecinct &prec = out.precincts[precinct_base + k];
            prec.packet_begin = static_cast<uint32_t>(out.precinct_packets.size());
            prec.layers_emitted = static_cast<uint16_t>(per_precinct[k].size());
            out.precinct_packets.insert(out.precinct_packets.end(), per_precinct[k].begin(), per_precinct[k].end());
        }

        // Tile-parts and cells.
        std::vector<uint32_t> parts;
        if (!config.tile_part_packets.empty()) parts = config.tile_part_packets[t];
        if (parts.empty()) parts.push_back(static_cast<uint32_t>(order.size()));
        J2KC_CHECK_ARG(parts.size() <= 255, "tile %u: %zu tile-parts (at most 255)", t, parts.size());
        uint64_t sum = 0;
        for (uint32_t n : parts) sum += n;
        J2KC_CHECK_ARG(sum == order.size(), "tile %u: tile-parts hold %llu packets of %zu", t,
                       static_cast<unsigned long long>(sum), order.size());
        uint32_t next = packet_base;
        for (uint32_t k = 0; k < parts.size(); ++k) {
            T2gTilePart tp;
            tp.first_packet = next;
            tp.num_packets = parts[k];
            tp.tile = static_cast<uint16_t>(t);
            tp.part = static_cast<uint8_t>(k);
            tp.parts = static_cast<uint8_t>(parts.size());
            tp.cell = static_cast<uint32_t>(out.fixed_cell_len.size());
            out.fixed_cell_len.push_back(0);
            for (uint32_t i = 0; i < parts[k]; ++i) {
                const PacketId &id = order[next - packet_base + i];
                if (i == 0)
                    tp.component = id.component;
                else if (tp.component != id.component)
                    tp.component = -1;
                out.packets[next + i].cell = static_cast<uint32_t>(out.fixed_cell_len.size());
                out.fixed_cell_len.push_back(0);
            }
            next += parts[k];
            out.tile_parts.push_back(tp);
        }
        block_base += nblocks;
    }
    out.fixed_cell_len.push_back(2);  // EOC

    if (has_tlm) {
        J2KC_CHECK_ARG(tlm.size() == out.tile_parts.size(), "TLM has %zu entries for %zu tile-parts", tlm.size(),
                       out.tile_parts.size());
        for (size_t k = 0; k < tlm.size(); ++k) {
            T2gTilePart &tp = out.tile_parts[k];
            J2KC_CHECK_ARG(st != 1 || tp.tile < 256, "TLM ST 1 cannot name tile %u", tp.tile);
            J2KC_CHECK_ARG(st != 0 || (tp.tile == k && tp.parts == 1),
                           "TLM ST 0 needs one tile-part per tile, in order");
            tp.tlm_offset = tlm[k];
        }
    }

    T2gTables &s = out.scalars;
    s.num_precincts = static_cast<uint32_t>(out.precincts.size());
    s.num_packets = static_cast<uint32_t>(out.packets.size());
    s.num_tile_parts = static_cast<uint32_t>(out.tile_parts.size());
    s.num_blocks = block_base;
    s.num_cells = static_cast<uint32_t>(out.fixed_cell_len.size());
    s.num_nodes = nodes;
    s.num_bands = static_cast<uint32_t>(out.bands.size());
    s.num_runs = static_cast<uint32_t>(out.runs.size());
    s.layers = pp.layers;
    s.sop = pp.sop;
    s.eph = pp.eph;
    s.plt = config.plt;
    s.tlm_st = st;
    s.tlm_sp = sp;
    s.num_components = static_cast<uint32_t>(ncomp);
    out.fixed_bytes = config.main_header.size() + uint64_t{kT2gTilePartFixed} * out.tile_parts.size() + 2;
    return out;
}

std::string t2g_error_message(const uint32_t st[4])
{
    char m[256];
    switch (st[0]) {
    case kT2gBadPasses:
        std::snprintf(m, sizeof m, "code-block %u: %u passes in layer %u (had %u of %u)", st[1], st[3] >> 20, st[2],
                      (st[3] >> 10) & 0x3FF, st[3] & 0x3FF);
        break;
    case kT2gTooManyPasses: std::snprintf(m, sizeof m, "code-block %u: %u passes in one packet", st[1], st[3]); break;
    case kT2gPassEndsDecrease:
        std::snprintf(m, sizeof m, "code-block %u: pass ends decrease at pass %u", st[1], st[2]);
        break;
    case kT2gUnterminated:
        std::snprintf(m, sizeof m, "code-block %u: pass %u ends a codeword segment but is not terminated", st[1],
                      st[2]);
        break;
    case kT2gLengthField: std::snprintf(m, sizeof m, "code-block %u: %u-bit length field", st[1], st[2]); break;
    case kT2gPacketTooLong: std::snprintf(m, sizeof m, "packet %u above 4 GiB", st[1]); break;
    case kT2gTilePartTooLong: std::snprintf(m, sizeof m, "tile-part %u above 4 GiB (Psot is 32-bit)", st[1]); break;
    case kT2gPltSegments:
        std::snprintf(m, sizeof m, "tile-part %u needs %u PLT segments (at most 256)", st[1], st[2]);
        break;
    case kT2gTlmLength: std::snprintf(m, sizeof m, "TLM SP 0 cannot hold length %u", st[2]); break;
    case kT2gCapacity: std::snprintf(m, sizeof m, "codestream does not fit the output buffer"); break;
    default: std::snprintf(m, sizeof m, "Tier-2 error %u", st[0]); break;
    }
    return m;
}

j2kc_status t2g_error_status(uint32_t code)
{
    switch (code) {
    case kT2gTilePartTooLong:
    case kT2gPacketTooLong:
    case kT2gCapacity: return J2KC_ERR_LIMIT;
    default: return J2KC_ERR_INVALID_ARG;
    }
}

}  // namespace j2kc
