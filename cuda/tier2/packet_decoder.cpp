/**
 * @file packet_decoder.cpp
 * @brief ISO/IEC 15444-1 B.10 (packet header decoding: B.10.3 zero-length
 * packets, B.10.4 inclusion, B.10.5 zero bit-planes, B.10.6 number of passes,
 * B.10.7 Lblock and codeword-segment lengths), B.9 packet bodies, A.8.1 SOP,
 * A.8.2 EPH and A.7.4/A.7.5 packed headers.
 */
#include "tier2/packet_decoder.h"

#include <algorithm>

#include "common/status.h"
#include "tier2/bit_io.h"
#include "tier2/precinct_trees.h"
#include "tier2/progression.h"

namespace j2kc {
namespace {

/** Zero bit-planes above this are refused (the field is 8 bits wide). */
constexpr int32_t kZeroBitplaneLimit = 255;
/** Lblock grows by signalled increments; lengths are read as 32-bit numbers. */
constexpr uint32_t kMaxLengthBits = 32;

/** Header-coding state of one code-block across layers. */
struct BlockState {
    bool included = false;
    uint8_t lblock = 3;
    uint32_t passes = 0;
};

/** The part of a codeword segment one packet carries for one code-block. */
struct Piece {
    uint32_t length;
    uint32_t passes;
    bool new_segment;  ///< starts a segment (else continues the block's last one)
};

/** One code-block's share of a packet. */
struct Contribution {
    uint32_t cblk;
    uint32_t first_piece, num_pieces;
    uint64_t bytes;
    bool first_inclusion;
    uint8_t zero_bitplanes;
};

bool marker_at(const uint8_t *p, size_t size, size_t pos, uint8_t code)
{
    return size - pos >= 2 && p[pos] == 0xFF && p[pos + 1] == code;
}

}  // namespace

void decode_tile_packets(const Codestream &cs, const Tile &tile, const TileLayout &layout,
                         uint32_t max_layers, std::vector<CodeBlockCodewords> &out,
                         PacketDecodeStats *stats)
{
    out.assign(layout.code_blocks.size(), CodeBlockCodewords{});
    const CodingStyle &cod = cs.coding_style(tile);
    const uint32_t layers_kept = max_layers == 0 ? UINT32_MAX : max_layers;

    std::vector<uint8_t> style(layout.components.size());
    for (uint16_t c = 0; c < style.size(); ++c) style[c] = cs.component_coding(tile, c).cblk_style;

    PrecinctTrees trees(layout);  // nodes start unknown with bound 0: the decoder's reset state
    std::vector<BlockState> state(layout.code_blocks.size());

    const uint8_t *data = tile.data.data();
    const size_t size = tile.data.size();
    size_t pos = 0;
    const bool packed = tile.has_packed_headers;
    const uint8_t *hdr = packed ? tile.packed_headers.data() : data;
    const size_t hsize = packed ? tile.packed_headers.size() : size;
    size_t packed_pos = 0;
    size_t &hpos = packed ? packed_pos : pos;

    PacketDecodeStats local;
    std::vector<Piece> pieces;
    std::vector<Contribution> contributions;

    for_each_packet(
        layout, cod.layers, cod.progression, cs.progression_changes(tile), [&](const PacketId &id) {
            // A.8.1: an SOP marker segment (6 bytes) may precede the packet; its
            // sequence number is informational. A packet header never starts
            // with 0xFF91, so with headers in the data we look for it even when
            // Scod does not announce it; with packed headers the body follows,
            // and only Scod tells.
            if ((cod.sop || !packed) && size - pos >= 6 && marker_at(data, size, pos, 0x91)) pos += 6;

            const Resolution &res = layout.components[id.component].resolutions[id.resolution];
            const Precinct &prec = res.precincts[id.precinct];
            const uint32_t flat = trees.table().index(id.component, id.resolution, id.precinct);
            const uint8_t cstyle = style[id.component];

            pieces.clear();
            contributions.clear();
            PacketHeaderReader reader(hdr + hpos, hsize - hpos);
            try {
                if (reader.bit()) {  // B.10.3: 0 = zero-length packet
                    for (uint32_t b = 0; b < prec.bands.size(); ++b) {
                        const PrecinctBand &pb = prec.bands[b];
                        const uint32_t n = pb.num_cblks();
                        if (n == 0) continue;
                        TagTree inclusion = trees.inclusion(flat, b, pb);
                        TagTree zero_bitplanes = trees.zero_bitplanes(flat, b, pb);
                        for (uint32_t i = 0; i < n; ++i) {
                            const uint32_t cb = pb.first_cblk + i;
                            BlockState &s = state[cb];
                            Contribution ct{cb, static_cast<uint32_t>(pieces.size()), 0, 0, false, 0};
                            if (!s.included) {
                                // B.10.4: the tag tree holds the first layer of inclusion.
                                if (!inclusion.decode(i, int32_t{id.layer} + 1, reader)) continue;
                                J2KC_CHECK_DATA(zero_bitplanes.decode(i, kZeroBitplaneLimit, reader),
                                                "code-block %u: too many zero bit-planes", cb);
                                ct.first_inclusion = true;
                                ct.zero_bitplanes = static_cast<uint8_t>(zero_bitplanes.value(i));
                                s.included = true;
                            } else if (!reader.bit()) {
                                continue;
                            }
                            const uint32_t new_passes = read_num_passes(reader);
                            uint32_t increment = 0;
                            while (reader.bit()) {
                                ++increment;
                                J2KC_CHECK_DATA(s.lblock + increment <= kMaxLengthBits,
                                                "code-block %u: Lblock beyond %u", cb, kMaxLengthBits);
                            }
                            s.lblock = static_cast<uint8_t>(s.lblock + increment);
                            // B.10.7.2: one length per codeword segment the new passes touch.
                            uint32_t pass = s.passes, left = new_passes;
                            while (left > 0) {
                                const uint32_t end = codeword_segment_end(cstyle, pass);
                                const uint32_t take = std::min(left, end - pass);
                                const uint32_t bits = s.lblock + log2_floor_u32(take);
                                J2KC_CHECK_DATA(bits <= kMaxLengthBits,
                                                "code-block %u: %u-bit segment length", cb, bits);
                                const bool starts = pass == 0 || codeword_segment_end(cstyle, pass - 1) <= pass;
                                pieces.push_back(Piece{reader.bits(bits), take, starts});
                                ct.bytes += pieces.back().length;
                                pass += take;
                                left -= take;
                            }
                            J2KC_CHECK_DATA(pass >= s.passes, "code-block %u: pass count overflows", cb);
                            s.passes = pass;
                            ct.num_pieces = static_cast<uint32_t>(pieces.size()) - ct.first_piece;
                            contributions.push_back(ct);
                        }
                    }
                }
                reader.align();
            } catch (const Error &) {
                if (!reader.exhausted()) throw;
                local.truncated = true;  // the header itself was cut off: keep what we have
                return false;
            }
            hpos += reader.position();
            // A.8.2: EPH after the header (in the packed headers when those are used).
            if (cod.eph && marker_at(hdr, hsize, hpos, 0x92)) hpos += 2;

            const bool keep = id.layer < layers_kept;
            bool cut = false;
            for (const Contribution &ct : contributions) {
                const size_t avail = size - pos;
                const size_t take = static_cast<size_t>(std::min<uint64_t>(ct.bytes, avail));
                if (take < ct.bytes) cut = true;
                if (keep) {
                    CodeBlockCodewords &o = out[ct.cblk];
                    if (ct.first_inclusion) {
                        o.included = true;
                        o.zero_bitplanes = ct.zero_bitplanes;
                    }
                    if (take > 0) o.chunks.push_back(CodeBlockChunk{data + pos, static_cast<uint32_t>(take)});
                    size_t left = take;
                    for (uint32_t k = 0; k < ct.num_pieces; ++k) {
                        const Piece &piece = pieces[ct.first_piece + k];
                        const uint32_t len = static_cast<uint32_t>(std::min<size_t>(piece.length, left));
                        // Passes whose bytes were cut away entirely are dropped.
                        if (len == 0 && piece.length > 0) break;
                        if (piece.new_segment || o.segments.empty())
                            o.segments.push_back(CodewordSegment{len, piece.passes});
                        else {
                            o.segments.back().length += len;
                            o.segments.back().passes += piece.passes;
                        }
                        o.num_passes += piece.passes;
                        left -= len;
                    }
                    o.lblock = state[ct.cblk].lblock;
                }
                pos += take;
            }
            if (cut) {
                local.truncated = true;
                return false;
            }
            ++local.packets;
            return true;
        });

    local.data_consumed = pos;
    local.headers_consumed = packed ? packed_pos : 0;
    if (stats) *stats = local;
}

}  // namespace j2kc
