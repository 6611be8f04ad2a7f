/**
 * @file packet_decoder.cpp
 * @brief ISO/IEC 15444-1 B.10 (packet header decoding: B.10.3 zero-length
 * packets, B.10.4 inclusion, B.10.5 zero bit-planes, B.10.6 number of passes,
 * B.10.7 Lblock and codeword-segment lengths, with the HT code-block form of
 * ISO/IEC 15444-15), B.9 packet bodies, A.8.1 SOP, A.8.2 EPH and A.7.4/A.7.5
 * packed headers.
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
    bool ht_cleanup = false;  ///< HT: the first HT cleanup pass has been read (placeholders are over)
    bool part1 = false;       ///< MIXED: the block's first codeword segment made it a Part-1 block
    uint8_t lblock = 3;
    uint32_t passes = 0;
};

/** The part of a codeword segment one packet carries for one code-block. */
struct Piece {
    uint32_t length;
    uint32_t passes;
    bool new_segment;  ///< starts a segment (else continues the block's last one)
};

/** One code-block's share of a packet: what its header said, then where its bytes are. */
struct Contribution {
    uint32_t cblk;
    uint32_t first_piece, num_pieces;
    uint64_t bytes;  ///< announced by the header
    bool first_inclusion;
    uint8_t zero_bitplanes;
    uint8_t lblock;           ///< the block's Lblock after this packet
    uint32_t taken;           ///< bytes the data held (fewer than announced when cut)
    const uint8_t *data;      ///< where they start in Tile::data
};

bool marker_at(const uint8_t *p, size_t size, size_t pos, uint8_t code)
{
    return size - pos >= 2 && p[pos] == 0xFF && p[pos + 1] == code;
}

/** A segment length field of `bits` bits (Lblock + floor(log2 passes)). */
uint32_t read_length(PacketHeaderReader &reader, uint32_t bits, uint32_t cb)
{
    J2KC_CHECK_DATA(bits <= kMaxLengthBits, "code-block %u: %u-bit segment length", cb, bits);
    return reader.bits(bits);
}

/**
 * ISO/IEC 15444-15, MIXED mode: the first non-zero length of a code-block
 * that may be HT or Part-1, read with `bits` bits, is an HT cleanup segment's
 * only when Lblock has been raised above its start and the field's top bit is
 * 0 (an HT encoder raises Lblock one more than the length needs; a Part-1
 * encoder raises it no more than it needs, so its field starts with a 1), and
 * the length is at least 2 (an HT cleanup segment never is shorter).
 */
bool mixed_first_length_is_ht(uint32_t length, uint32_t bits, uint8_t lblock)
{
    return lblock > 3 && length > 1 && (length >> (bits - 1)) == 0;
}

/**
 * A MIXED-mode block whose first non-zero length says Part-1: `length`, read
 * as Part 1 reads the length of `passes` passes in one codeword segment,
 * covers all of them. Placeholder passes belong to HT blocks, so a Part-1
 * block must not follow them; and since the one field cannot be split, the
 * passes must lie in one codeword segment of the Part-1 modes.
 */
void first_part1_segment(BlockState &s, uint32_t passes, uint32_t length, uint8_t style, uint32_t cb,
                         std::vector<Piece> &pieces, uint64_t &bytes)
{
    J2KC_CHECK_DATA(s.passes == 0, "code-block %u: a Part-1 block of a MIXED tile-component after %u HT placeholder "
                    "passes", cb, s.passes);
    J2KC_CHECK_SUPPORTED(codeword_segment_end(code_block_style(style, true), 0) >= passes,
                         "code-block %u: a Part-1 block of a MIXED tile-component whose first %u passes span "
                         "several codeword segments (style 0x%02X)", cb, passes, style);
    pieces.push_back(Piece{length, passes, true});
    bytes += length;
    s.part1 = true;
}

/**
 * ISO/IEC 15444-15 (its HT form of B.10.7.2): the segment lengths of
 * `new_passes` passes of an HT code-block, from pass s.passes on. Before the
 * block's first HT cleanup pass come placeholder passes (3 * P0 of them,
 * carrying no bytes): a packet whose passes end at Z holds its last cleanup
 * at pass 3 * floor((Z - 1) / 3), so its first length covers the passes up
 * to that cleanup, counted as in Part 1 (Lblock + floor(log2 passes) bits),
 * and is not zero; a zero there means placeholders only, and the field then
 * spans all the packet's passes. After it, each HT cleanup pass is a segment
 * of its own, and the SigProp and MagRef passes of a set share the next one
 * (a MagRef sent in a later packet than its SigProp continues that segment).
 * In a MIXED tile-component (style 0xC0) the first non-zero length also says
 * whether the block is HT (mixed_first_length_is_ht) or Part-1; a Part-1
 * block's field spans all the packet's passes (first_part1_segment), and its
 * later packets are read as Part 1 reads them.
 */
void read_ht_lengths(PacketHeaderReader &reader, BlockState &s, uint32_t new_passes, uint8_t style, uint32_t cb,
                     std::vector<Piece> &pieces, uint64_t &bytes)
{
    const bool mixed = (style & cblk_style::kMixed) != 0;
    uint32_t pass = s.passes, left = new_passes;
    if (!s.ht_cleanup) {
        const uint32_t end = pass + left;
        const uint32_t refinement = (end - 1) % 3;  // passes after the packet's last cleanup
        const uint32_t upto = left > refinement ? left - refinement : left;  // placeholders and the cleanup
        const uint32_t bits = s.lblock + log2_floor_u32(upto);
        uint32_t length = read_length(reader, bits, cb);
        // Where no cleanup can end the packet's passes or the field is zero,
        // it is read on to the width of one segment of all the passes.
        const bool cleanup = left > refinement && length > 0;
        if (cleanup && (!mixed || mixed_first_length_is_ht(length, bits, s.lblock))) {
            pieces.push_back(Piece{length, upto, true});
            bytes += length;
            s.ht_cleanup = true;
            pass += upto;
            left -= upto;
        } else {
            const uint32_t more = log2_floor_u32(left) - log2_floor_u32(upto);
            if (more) {
                J2KC_CHECK_DATA(bits + more <= kMaxLengthBits, "code-block %u: %u-bit segment length", cb,
                                bits + more);
                length = length << more | reader.bits(more);
            }
            if (mixed && length > 0) {
                first_part1_segment(s, left, length, style, cb, pieces, bytes);
                return;
            }
            J2KC_CHECK_DATA(length == 0, "code-block %u: HT placeholder passes with %u bytes", cb, length);
            pieces.push_back(Piece{0, left, true});
            pass += left;
            left = 0;
        }
    }
    while (left > 0) {
        // The first cleanup was pass 3 * P0, so cleanups are the passes = 0 mod 3.
        const uint32_t phase = pass % 3;
        const uint32_t take = phase == 0 ? 1 : std::min(left, 3 - phase);
        const uint32_t length = read_length(reader, s.lblock + log2_floor_u32(take), cb);
        pieces.push_back(Piece{length, take, phase != 2});
        bytes += length;
        pass += take;
        left -= take;
    }
}

/**
 * The working arrays of decode_tile_packets, kept by each thread from tile to
 * tile (and frame to frame): once grown to a frame's size, Tier-2 allocates
 * nothing but its output.
 */
struct PacketScratch {
    PrecinctTrees trees;
    std::vector<BlockState> state;
    std::vector<Piece> pieces;
    std::vector<Contribution> contributions;
    std::vector<size_t> first, next, order, chunk_start, segment_start;

    /** Arrays grown past this (a huge tile) are given back rather than kept. */
    static constexpr size_t kKeptBytes = size_t{64} << 20;

    void release_if_large()
    {
        const size_t bytes = state.capacity() * sizeof(BlockState) + pieces.capacity() * sizeof(Piece) +
                             contributions.capacity() * sizeof(Contribution) +
                             (first.capacity() + next.capacity() + order.capacity() + chunk_start.capacity() +
                              segment_start.capacity()) * sizeof(size_t) +
                             2 * trees.inclusion_nodes().capacity() * sizeof(TagTreeNode);
        if (bytes > kKeptBytes) *this = PacketScratch{};
    }
};

/**
 * Each code-block's chunks and segments from the kept contributions (packet
 * order), into out's flat arrays block after block. The pieces of a block
 * continue its last segment unless they start one (B.10.7.2); passes whose
 * bytes were cut away entirely are dropped.
 */
void assemble_codewords(PacketScratch &scratch, TileCodewords &out)
{
    const std::vector<Piece> &pieces = scratch.pieces;
    const std::vector<Contribution> &contributions = scratch.contributions;
    // A stable counting sort of the contributions by code-block.
    std::vector<size_t> &first = scratch.first, &next = scratch.next, &order = scratch.order;
    first.assign(out.blocks.size() + 1, 0);
    for (const Contribution &ct : contributions) ++first[ct.cblk + 1];
    for (size_t b = 1; b < first.size(); ++b) first[b] += first[b - 1];
    order.resize(contributions.size());
    next.assign(first.begin(), first.end() - 1);
    for (size_t k = 0; k < contributions.size(); ++k) order[next[contributions[k].cblk]++] = k;
    out.chunks.clear();
    out.segments.clear();
    out.chunks.reserve(contributions.size());
    out.segments.reserve(pieces.size());
    std::vector<size_t> &chunk_start = scratch.chunk_start, &segment_start = scratch.segment_start;
    chunk_start.resize(out.blocks.size() + 1);
    segment_start.resize(out.blocks.size() + 1);
    for (size_t b = 0; b < out.blocks.size(); ++b) {
        CodeBlockCodewords &o = out.blocks[b];
        o.part1 = scratch.state[b].part1;
        chunk_start[b] = out.chunks.size();
        segment_start[b] = out.segments.size();
        for (size_t k = first[b]; k < first[b + 1]; ++k) {
            const Contribution &ct = contributions[order[k]];
            if (ct.first_inclusion) {
                o.included = true;
                o.zero_bitplanes = ct.zero_bitplanes;
            }
            if (ct.taken > 0) out.chunks.push_back(CodeBlockChunk{ct.data, ct.taken});
            uint32_t left = ct.taken;
            for (uint32_t p = 0; p < ct.num_pieces; ++p) {
                const Piece &piece = pieces[ct.first_piece + p];
                const uint32_t len = std::min(piece.length, left);
                if (len == 0 && piece.length > 0) break;
                if (piece.new_segment || out.segments.size() == segment_start[b]) {
                    out.segments.push_back(CodewordSegment{len, piece.passes});
                } else {
                    out.segments.back().length += len;
                    out.segments.back().passes += piece.passes;
                }
                o.num_passes += piece.passes;
                left -= len;
            }
            o.lblock = ct.lblock;
        }
    }
    chunk_start.back() = out.chunks.size();
    segment_start.back() = out.segments.size();
    for (size_t b = 0; b < out.blocks.size(); ++b) {
        CodeBlockCodewords &o = out.blocks[b];
        o.chunks = {out.chunks.data() + chunk_start[b], chunk_start[b + 1] - chunk_start[b]};
        o.segments = {out.segments.data() + segment_start[b], segment_start[b + 1] - segment_start[b]};
    }
}

}  // namespace

void decode_tile_packets(const Codestream &cs, const Tile &tile, const TileLayout &layout,
                         uint32_t max_layers, TileCodewords &out,
                         PacketDecodeStats *stats)
{
    out.blocks.assign(layout.code_blocks.size(), CodeBlockCodewords{});
    const CodingStyle &cod = cs.coding_style(tile);
    const uint32_t layers_kept = max_layers == 0 ? UINT32_MAX : max_layers;

    std::vector<uint8_t> style(layout.components.size());
    for (uint16_t c = 0; c < style.size(); ++c) style[c] = cs.component_coding(tile, c).cblk_style;

    thread_local PacketScratch scratch;
    PrecinctTrees &trees = scratch.trees;
    trees.reset(layout);  // nodes start unknown with bound 0: the decoder's reset state
    std::vector<BlockState> &state = scratch.state;
    state.assign(layout.code_blocks.size(), BlockState{});

    const uint8_t *data = tile.data.data();
    const size_t size = tile.data.size();
    size_t pos = 0;
    const bool packed = tile.has_packed_headers;
    const uint8_t *hdr = packed ? tile.packed_headers.data() : data;
    const size_t hsize = packed ? tile.packed_headers.size() : size;
    size_t packed_pos = 0;
    size_t &hpos = packed ? packed_pos : pos;

    PacketDecodeStats local;
    // The pieces and contributions of the kept layers' packets, in packet
    // order; each block's codewords are put together from them at the end.
    std::vector<Piece> &pieces = scratch.pieces;
    std::vector<Contribution> &contributions = scratch.contributions;
    pieces.clear();
    contributions.clear();

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

            const size_t packet_pieces = pieces.size(), packet_contributions = contributions.size();
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
                            Contribution ct{cb, static_cast<uint32_t>(pieces.size()), 0, 0, false, 0, 0, 0, nullptr};
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
                            if ((cstyle & cblk_style::kHighThroughput) && !s.part1) {
                                J2KC_CHECK_DATA(s.passes + new_passes >= s.passes,
                                                "code-block %u: pass count overflows", cb);
                                uint64_t bytes = 0;
                                read_ht_lengths(reader, s, new_passes, cstyle, cb, pieces, bytes);
                                ct.bytes += bytes;
                                s.passes += new_passes;
                                ct.num_pieces = static_cast<uint32_t>(pieces.size()) - ct.first_piece;
                                ct.lblock = s.lblock;
                                contributions.push_back(ct);
                                continue;
                            }
                            // B.10.7.2: one length per codeword segment the new passes touch
                            // (a Part-1 block of a MIXED tile-component: by the Part-1 modes).
                            const uint8_t part1_style = code_block_style(cstyle, true);
                            uint32_t pass = s.passes, left = new_passes;
                            while (left > 0) {
                                const uint32_t end = codeword_segment_end(part1_style, pass);
                                const uint32_t take = std::min(left, end - pass);
                                const uint32_t bits = s.lblock + log2_floor_u32(take);
                                J2KC_CHECK_DATA(bits <= kMaxLengthBits,
                                                "code-block %u: %u-bit segment length", cb, bits);
                                const bool starts = pass == 0 || codeword_segment_end(part1_style, pass - 1) <= pass;
                                pieces.push_back(Piece{reader.bits(bits), take, starts});
                                ct.bytes += pieces.back().length;
                                pass += take;
                                left -= take;
                            }
                            J2KC_CHECK_DATA(pass >= s.passes, "code-block %u: pass count overflows", cb);
                            s.passes = pass;
                            ct.num_pieces = static_cast<uint32_t>(pieces.size()) - ct.first_piece;
                            ct.lblock = s.lblock;
                            contributions.push_back(ct);
                        }
                    }
                }
                reader.align();
            } catch (const Error &) {
                if (!reader.exhausted()) throw;
                pieces.resize(packet_pieces);
                contributions.resize(packet_contributions);
                local.truncated = true;  // the header itself was cut off: keep what we have
                return false;
            }
            hpos += reader.position();
            // A.8.2: EPH after the header (in the packed headers when those are used).
            if (cod.eph && marker_at(hdr, hsize, hpos, 0x92)) hpos += 2;

            bool cut = false;
            for (size_t k = packet_contributions; k < contributions.size(); ++k) {
                Contribution &ct = contributions[k];
                const size_t avail = size - pos;
                const size_t take = static_cast<size_t>(std::min<uint64_t>(ct.bytes, avail));
                if (take < ct.bytes) cut = true;
                ct.taken = static_cast<uint32_t>(take);
                ct.data = data + pos;
                pos += take;
            }
            if (id.layer >= layers_kept) {  // parsed for its length, adds nothing
                pieces.resize(packet_pieces);
                contributions.resize(packet_contributions);
            }
            if (cut) {
                local.truncated = true;
                return false;
            }
            ++local.packets;
            return true;
        });

    assemble_codewords(scratch, out);
    scratch.release_if_large();
    local.data_consumed = pos;
    local.headers_consumed = packed ? packed_pos : 0;
    if (stats) *stats = local;
}

}  // namespace j2kc
