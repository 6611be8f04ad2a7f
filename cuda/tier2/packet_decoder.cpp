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
#include <functional>
#include <utility>

#include "common/status.h"
#include "common/thread_pool.h"
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
    uint8_t lblock;       ///< the block's Lblock after this packet
    uint32_t taken;       ///< bytes the data held (fewer than announced when cut)
    const uint8_t *data;  ///< where they start in Tile::data
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
    J2KC_CHECK_DATA(s.passes == 0,
                    "code-block %u: a Part-1 block of a MIXED tile-component after %u HT placeholder "
                    "passes",
                    cb, s.passes);
    J2KC_CHECK_SUPPORTED(codeword_segment_end(code_block_style(style, true), 0) >= passes,
                         "code-block %u: a Part-1 block of a MIXED tile-component whose first %u passes span "
                         "several codeword segments (style 0x%02X)",
                         cb, passes, style);
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
        const uint32_t refinement = (end - 1) % 3;                           // passes after the packet's last cleanup
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
                J2KC_CHECK_DATA(bits + more <= kMaxLengthBits, "code-block %u: %u-bit segment length", cb, bits + more);
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

/** What every run of packets of a tile reads from and writes to. */
struct PacketSource {
    const CodingStyle &cod;
    const TileLayout &layout;
    const std::vector<uint8_t> &style;  ///< code-block style of each component
    PrecinctTrees &trees;
    std::vector<uint8_t> &started;  ///< per flat precinct: its trees were reset (PrecinctTrees::reset_precinct)
    std::vector<BlockState> &state;
    const uint8_t *data;
    size_t size;
    const uint8_t *hdr;  ///< where headers are: the packed headers, or the data
    size_t hsize;
    bool packed;
    uint32_t layers_kept;
};

/**
 * Adds contribution `ct` to its code-block `o`: its chunk, and its pieces as
 * segments (out.segments from `first_segment` on are the block's). The
 * pieces continue the block's last segment unless they start one
 * (B.10.7.2); passes whose bytes were cut away entirely are dropped.
 */
void add_contribution(const Contribution &ct, const std::vector<Piece> &pieces, size_t first_segment,
                      CodeBlockCodewords &o, TileCodewords &out)
{
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
        if (piece.new_segment || out.segments.size() == first_segment) {
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

/**
 * What one run of packets read: pieces and contributions in packet order, and
 * where it stopped; or, read straight into `direct`, the code-blocks it gave.
 */
struct PacketRunOutput {
    std::vector<Piece> pieces;
    std::vector<Contribution> contributions;
    size_t pos = 0;         ///< in Tile::data
    size_t packed_pos = 0;  ///< in Tile::packed_headers
    uint64_t packets = 0;
    bool truncated = false;
    bool malformed = false;  ///< a split run met bad data: the tile is read again in one run
    /// One layer in one run: each packet's contributions go to their blocks
    /// here as soon as it is read (commit_packet).
    TileCodewords *direct = nullptr;
    std::vector<uint32_t> committed;  ///< the blocks given, in order (their runs follow each other)
    bool moved = false;               ///< out's chunks or segments were reallocated while given
    bool repeated = false;            ///< a block met a second contribution: read again by the sort
};

/**
 * One layer read in one run: the packet's contributions go to their blocks
 * while they are in cache, each block's chunk and segments after the last
 * block's, and the run's arrays stay a packet long. False when a block had
 * one before, which only the sort by code-block joins.
 */
bool commit_packet(PacketRunOutput &run)
{
    TileCodewords &out = *run.direct;
    const size_t chunk_capacity = out.chunks.capacity(), segment_capacity = out.segments.capacity();
    for (const Contribution &ct : run.contributions) {
        if (!ct.first_inclusion) {
            run.repeated = true;
            return false;
        }
        CodeBlockCodewords &o = out.blocks[ct.cblk];
        const size_t chunk = out.chunks.size(), segment = out.segments.size();
        add_contribution(ct, run.pieces, segment, o, out);
        o.chunks = {out.chunks.data() + chunk, out.chunks.size() - chunk};
        o.segments = {out.segments.data() + segment, out.segments.size() - segment};
        run.committed.push_back(ct.cblk);
    }
    run.moved |= out.chunks.capacity() != chunk_capacity || out.segments.capacity() != segment_capacity;
    run.pieces.clear();
    run.contributions.clear();
    return true;
}

/** After commit_packet's arrays were reallocated: every given block's runs again, in the order given. */
void rebase_committed(const PacketRunOutput &run)
{
    TileCodewords &out = *run.direct;
    size_t chunk = 0, segment = 0;
    for (const uint32_t cb : run.committed) {
        CodeBlockCodewords &o = out.blocks[cb];
        o.chunks = {out.chunks.data() + chunk, o.chunks.size()};
        o.segments = {out.segments.data() + segment, o.segments.size()};
        chunk += o.chunks.size();
        segment += o.segments.size();
    }
}

/**
 * Reads packet `id` at run.pos (and run.packed_pos), appending what its header
 * says to the run. Returns false when the data ends inside the packet.
 */
bool read_packet(const PacketSource &src, const PacketId &id, PacketRunOutput &run)
{
    const uint8_t *data = src.data;
    const size_t size = src.size;
    size_t &pos = run.pos;
    size_t &hpos = src.packed ? run.packed_pos : run.pos;
    std::vector<Piece> &pieces = run.pieces;
    std::vector<Contribution> &contributions = run.contributions;
    // A.8.1: an SOP marker segment (6 bytes) may precede the packet; its
    // sequence number is informational. A packet header never starts
    // with 0xFF91, so with headers in the data we look for it even when
    // Scod does not announce it; with packed headers the body follows,
    // and only Scod tells.
    if ((src.cod.sop || !src.packed) && size - pos >= 6 && marker_at(data, size, pos, 0x91)) pos += 6;

    const Resolution &res = src.layout.components[id.component].resolutions[id.resolution];
    const Precinct &prec = res.precincts[id.precinct];
    const uint32_t flat = src.trees.table().index(id.component, id.resolution, id.precinct);
    if (!src.started[flat]) {
        src.trees.reset_precinct(flat);
        src.started[flat] = 1;
    }
    const uint8_t cstyle = src.style[id.component];

    const size_t packet_pieces = pieces.size(), packet_contributions = contributions.size();
    PacketHeaderReader reader(src.hdr + hpos, src.hsize - hpos);
    try {
        if (reader.bit()) {  // B.10.3: 0 = zero-length packet
            for (uint32_t b = 0; b < prec.bands.size(); ++b) {
                const PrecinctBand &pb = prec.bands[b];
                const uint32_t n = pb.num_cblks();
                if (n == 0) continue;
                TagTreeDecoder inclusion(src.trees.inclusion(flat, b, pb), int32_t{id.layer} + 1);
                TagTreeDecoder zero_bitplanes(src.trees.zero_bitplanes(flat, b, pb), kZeroBitplaneLimit);
                for (uint32_t i = 0, x = 0, y = 0; i < n; ++i, x = x + 1 < pb.cblks_x ? x + 1 : 0, y += x == 0) {
                    const uint32_t cb = pb.first_cblk + i;
                    BlockState &s = src.state[cb];
                    Contribution ct{cb, static_cast<uint32_t>(pieces.size()), 0, 0, false, 0, 0, 0, nullptr};
                    if (!s.included) {
                        // B.10.4: the tag tree holds the first layer of inclusion.
                        if (!inclusion.decode(x, y, reader)) continue;
                        J2KC_CHECK_DATA(zero_bitplanes.decode(x, y, reader), "code-block %u: too many zero bit-planes",
                                        cb);
                        ct.first_inclusion = true;
                        ct.zero_bitplanes = static_cast<uint8_t>(zero_bitplanes.value(x, y));
                        s.included = true;
                    } else if (!reader.bit()) {
                        continue;
                    }
                    const uint32_t new_passes = read_num_passes(reader);
                    uint32_t increment = 0;
                    while (reader.bit()) {
                        ++increment;
                        J2KC_CHECK_DATA(s.lblock + increment <= kMaxLengthBits, "code-block %u: Lblock beyond %u", cb,
                                        kMaxLengthBits);
                    }
                    s.lblock = static_cast<uint8_t>(s.lblock + increment);
                    if ((cstyle & cblk_style::kHighThroughput) && !s.part1) {
                        J2KC_CHECK_DATA(s.passes + new_passes >= s.passes, "code-block %u: pass count overflows", cb);
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
                        J2KC_CHECK_DATA(bits <= kMaxLengthBits, "code-block %u: %u-bit segment length", cb, bits);
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
        run.truncated = true;  // the header itself was cut off: keep what we have
        return false;
    }
    hpos += reader.position();
    // A.8.2: EPH after the header (in the packed headers when those are used).
    if (src.cod.eph && marker_at(src.hdr, src.hsize, hpos, 0x92)) hpos += 2;

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
    if (id.layer >= src.layers_kept) {  // parsed for its length, adds nothing
        pieces.resize(packet_pieces);
        contributions.resize(packet_contributions);
    }
    if (run.direct && !commit_packet(run)) return false;
    if (cut) {
        run.truncated = true;
        return false;
    }
    ++run.packets;
    return true;
}

/** Packets order[begin, end) of a tile, read as one run from data byte `pos` on. */
struct PacketRun {
    size_t begin, end, pos;
};

/**
 * Indices s of `order` where it may be cut: no precinct of a packet at or
 * after s has a packet before s.
 */
std::vector<bool> clean_cuts(const std::vector<PacketId> &order, const PrecinctTable &table)
{
    std::vector<uint32_t> first_seen(table.size(), UINT32_MAX);
    std::vector<uint32_t> flat(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        flat[i] = table.index(order[i].component, order[i].resolution, order[i].precinct);
        first_seen[flat[i]] = std::min<uint32_t>(first_seen[flat[i]], static_cast<uint32_t>(i));
    }
    std::vector<bool> clean(order.size());
    uint32_t earliest = UINT32_MAX;  // of the precincts of packets i.. on
    for (size_t i = order.size(); i-- > 0;) {
        earliest = std::min(earliest, first_seen[flat[i]]);
        clean[i] = earliest >= i;
    }
    return clean;
}

/**
 * PLT gives every packet's start: runs of about equal bytes, cut at clean
 * points, `wanted` of them at most.
 */
std::vector<PacketRun> runs_from_packet_lengths(const Tile &tile, const std::vector<bool> &clean, size_t wanted)
{
    std::vector<PacketRun> runs;
    const size_t total = tile.data.size();
    size_t pos = 0;
    for (size_t i = 0; i < clean.size(); ++i) {
        // Run k starts at the first clean packet from k / wanted of the bytes on.
        if (clean[i] && runs.size() < wanted && pos >= total * runs.size() / wanted) {
            if (!runs.empty()) runs.back().end = i;
            runs.push_back(PacketRun{i, clean.size(), pos});
        }
        pos += tile.packet_lengths[i];
    }
    return runs;
}

/**
 * Tile-parts give their first bytes but not their first packets. Encoders
 * cut tile-parts where an outer index of the progression changes (the DCI
 * profiles a tile-part a component, or a component and resolution range of
 * a POC entry): the cuts of the first of component or resolution whose
 * changes come exactly once per tile-part boundary, all clean (a layer's
 * change never is: the next layer revisits precincts). The
 * reading checks the pairing (each run must end where the next tile-part
 * begins) and goes back to one run when it does not hold.
 */
std::vector<PacketRun> runs_from_tile_parts(const std::vector<PacketId> &order, const std::vector<bool> &clean,
                                            const std::vector<size_t> &part_start)
{
    using Field = uint32_t (*)(const PacketId &);
    const Field fields[] = {[](const PacketId &id) { return uint32_t{id.component}; },
                            [](const PacketId &id) { return uint32_t{id.resolution}; }};
    for (Field field : fields) {
        std::vector<PacketRun> runs{PacketRun{0, order.size(), 0}};
        bool usable = true;
        for (size_t i = 1; i < order.size() && usable; ++i) {
            if (field(order[i]) == field(order[i - 1])) continue;
            usable = clean[i] && runs.size() < part_start.size();
            if (!usable) break;
            runs.back().end = i;
            runs.push_back(PacketRun{i, order.size(), part_start[runs.size()]});
        }
        if (usable && runs.size() == part_start.size()) return runs;
    }
    return {};
}

/**
 * The runs in which the packets of `tile` may be read at once, on `threads`
 * threads; empty when the stream locates none (one tile-part and no PLT,
 * packed headers, a cut tile) or there is one thread.
 *
 * Why reading split runs gives what one run gives: a packet's header reads
 * and changes only the state of its own precinct (its bands' inclusion and
 * zero bit-plane tag trees, and its code-blocks' inclusion, Lblock and pass
 * counts), and a run starts only at a clean point, so each run finds the
 * state of its precincts as the single run would: untouched. Its first byte
 * is one the stream locates (a tile-part's, or a packet's through PLT), and
 * the caller accepts the runs only if each ended exactly where the next
 * begins: by induction from the first, each then read the bytes the single
 * run reads for the same packets, in the same state.
 */
std::vector<PacketRun> plan_runs(const Codestream &cs, const Tile &tile, const TileLayout &layout,
                                 const CodingStyle &cod, const PrecinctTable &table, unsigned threads,
                                 std::vector<PacketId> &order)
{
    if (threads < 2 || tile.has_packed_headers || tile.truncated) return {};
    std::vector<size_t> part_start;
    size_t bytes = 0;
    for (const TilePartInfo &tp : cs.tile_parts)
        if (tp.tile == tile.index) {
            part_start.push_back(bytes);
            bytes += tp.data_length;
        }
    if (bytes != tile.data.size()) return {};
    // The packet order is built only where it takes no more memory than the
    // tile's data (real streams hold hundreds of bytes a packet), so that a
    // hostile header promising more packets than bytes costs nothing.
    if (packet_count(layout, cod.layers) * sizeof(PacketId) > tile.data.size()) return {};
    const bool plt = !tile.packet_lengths.empty();
    if (part_start.size() < 2 && !plt) return {};
    order = packet_order(layout, cod.layers, cod.progression, cs.progression_changes(tile));
    const std::vector<bool> clean = clean_cuts(order, table);
    if (plt && tile.packet_lengths.size() == order.size()) {
        uint64_t sum = 0;
        for (uint32_t length : tile.packet_lengths) sum += length;
        if (sum == tile.data.size()) return runs_from_packet_lengths(tile, clean, 2 * size_t{threads});
    }
    return part_start.size() < 2 ? std::vector<PacketRun>{} : runs_from_tile_parts(order, clean, part_start);
}

/**
 * The working arrays of decode_tile_packets, kept by each thread from tile to
 * tile (and frame to frame): once grown to a frame's size, Tier-2 allocates
 * nothing but its output.
 */
struct PacketScratch {
    PrecinctTrees trees;
    std::vector<uint8_t> started;  ///< per flat precinct: its trees were reset
    std::vector<BlockState> state;
    std::vector<PacketRunOutput> runs;
    std::vector<PacketId> order;
    std::vector<Piece> pieces;  ///< split runs' pieces and contributions, joined
    std::vector<Contribution> contributions;
    std::vector<size_t> first, next, sorted, chunk_start, segment_start;
    std::vector<std::pair<uint64_t, size_t>> by_blocks;  ///< split runs' code-blocks and indices
    bool mixed = false;  ///< a component of the tile is MIXED (ISO/IEC 15444-15): blocks may be Part-1

    /** Arrays grown past this (a huge tile) are given back rather than kept. */
    static constexpr size_t kKeptBytes = size_t{64} << 20;

    void release_if_large()
    {
        size_t bytes = state.capacity() * sizeof(BlockState) + pieces.capacity() * sizeof(Piece) +
                       contributions.capacity() * sizeof(Contribution) + order.capacity() * sizeof(PacketId) +
                       (first.capacity() + next.capacity() + sorted.capacity() + chunk_start.capacity() +
                        segment_start.capacity()) *
                           sizeof(size_t) +
                       2 * trees.inclusion_nodes().capacity() * sizeof(TagTreeNode);
        for (const PacketRunOutput &run : runs)
            bytes += run.pieces.capacity() * sizeof(Piece) + run.contributions.capacity() * sizeof(Contribution) +
                     run.committed.capacity() * sizeof(uint32_t);
        if (bytes > kKeptBytes) *this = PacketScratch{};
    }

    /**
     * Every precinct and code-block back to the decoder's reset state (a
     * precinct's tree nodes at its first packet), and `n` empty runs.
     */
    void reset(const TileLayout &layout, size_t n)
    {
        trees.reshape(layout);  // a precinct's nodes are reset at its first packet
        started.assign(trees.table().size(), 0);
        state.assign(layout.code_blocks.size(), BlockState{});
        if (runs.size() < n) runs.resize(n);
        for (size_t r = 0; r < n; ++r) {
            PacketRunOutput &run = runs[r];
            run.pieces.clear();
            run.contributions.clear();
            run.pos = run.packed_pos = 0;
            run.packets = 0;
            run.truncated = run.malformed = false;
            run.direct = nullptr;
            run.committed.clear();
            run.moved = run.repeated = false;
        }
    }
};

/**
 * The common case of one layer: a code-block's codewords come in one packet,
 * so its chunk and segments are its contribution's, taken in packet order
 * with no sort. False (nothing kept) when a block meets a second
 * contribution, which only the sort by code-block joins.
 */
bool assemble_single_contributions(const std::vector<Piece> &pieces, const std::vector<Contribution> &contributions,
                                   TileCodewords &out)
{
    for (const Contribution &ct : contributions) {
        if (!ct.first_inclusion) return false;
        CodeBlockCodewords &o = out.blocks[ct.cblk];
        // Reserved for all of them: the runs of earlier blocks stay valid.
        const size_t chunk = out.chunks.size(), segment = out.segments.size();
        add_contribution(ct, pieces, segment, o, out);
        o.chunks = {out.chunks.data() + chunk, out.chunks.size() - chunk};
        o.segments = {out.segments.data() + segment, out.segments.size() - segment};
    }
    return true;
}

/**
 * Each code-block's chunks and segments from the contributions (packet
 * order), into out's flat arrays, block after block: a stable counting sort
 * of the contributions by code-block joins those of several layers.
 */
void assemble_by_code_block(const std::vector<Piece> &pieces, const std::vector<Contribution> &contributions,
                            PacketScratch &scratch, TileCodewords &out)
{
    std::vector<size_t> &first = scratch.first, &next = scratch.next, &order = scratch.sorted;
    first.assign(out.blocks.size() + 1, 0);
    for (const Contribution &ct : contributions) ++first[ct.cblk + 1];
    for (size_t b = 1; b < first.size(); ++b) first[b] += first[b - 1];
    order.resize(contributions.size());
    next.assign(first.begin(), first.end() - 1);
    for (size_t k = 0; k < contributions.size(); ++k) order[next[contributions[k].cblk]++] = k;
    std::vector<size_t> &chunk_start = scratch.chunk_start, &segment_start = scratch.segment_start;
    chunk_start.resize(out.blocks.size() + 1);
    segment_start.resize(out.blocks.size() + 1);
    for (size_t b = 0; b < out.blocks.size(); ++b) {
        chunk_start[b] = out.chunks.size();
        segment_start[b] = out.segments.size();
        for (size_t k = first[b]; k < first[b + 1]; ++k)
            add_contribution(contributions[order[k]], pieces, segment_start[b], out.blocks[b], out);
    }
    chunk_start.back() = out.chunks.size();
    segment_start.back() = out.segments.size();
    for (size_t b = 0; b < out.blocks.size(); ++b) {
        CodeBlockCodewords &o = out.blocks[b];
        o.chunks = {out.chunks.data() + chunk_start[b], chunk_start[b + 1] - chunk_start[b]};
        o.segments = {out.segments.data() + segment_start[b], segment_start[b + 1] - segment_start[b]};
    }
}

/** MIXED (ISO/IEC 15444-15): which blocks the packet headers made Part-1. */
void copy_part1(const PacketScratch &scratch, TileCodewords &out)
{
    if (scratch.mixed)
        for (size_t b = 0; b < out.blocks.size(); ++b) out.blocks[b].part1 = scratch.state[b].part1;
}

/**
 * Every code-block's codewords from the contributions (packet order) into
 * out, whose blocks are in their reset state. `one_layer`: one layer is
 * kept, so each block has one contribution at most.
 */
void assemble_codewords(const std::vector<Piece> &pieces, const std::vector<Contribution> &contributions,
                        bool one_layer, PacketScratch &scratch, TileCodewords &out)
{
    out.chunks.clear();
    out.segments.clear();
    out.chunks.reserve(contributions.size());
    out.segments.reserve(pieces.size());
    if (!one_layer || !assemble_single_contributions(pieces, contributions, out)) {
        out.chunks.clear();
        out.segments.clear();
        std::fill(out.blocks.begin(), out.blocks.end(), CodeBlockCodewords{});
        assemble_by_code_block(pieces, contributions, scratch, out);
    }
    copy_part1(scratch, out);
}

/** Reads the planned runs at once; false when one of them does not join the next or met bad or cut data. */
bool read_split_runs(const PacketSource &src, const std::vector<PacketId> &order, const std::vector<PacketRun> &plan,
                     PacketScratch &scratch, ParallelRunner &pool)
{
    // Runs handed out by their code-blocks, most first, so that a thread that
    // joins late takes a short one rather than the longest.
    std::vector<std::pair<uint64_t, size_t>> &by_blocks = scratch.by_blocks;
    by_blocks.clear();
    for (size_t r = 0; r < plan.size(); ++r) {
        uint64_t blocks = 0;
        for (size_t i = plan[r].begin; i < plan[r].end; ++i) {
            const PacketId &id = order[i];
            for (const PrecinctBand &pb :
                 src.layout.components[id.component].resolutions[id.resolution].precincts[id.precinct].bands)
                blocks += pb.num_cblks();
        }
        by_blocks.emplace_back(blocks, r);
    }
    std::sort(by_blocks.begin(), by_blocks.end(), std::greater<>());
    pool.parallel_for(plan.size(), [&](size_t k, unsigned) {
        const size_t r = by_blocks[k].second;
        PacketRunOutput &run = scratch.runs[r];
        run.pos = plan[r].pos;
        try {
            for (size_t i = plan[r].begin; i < plan[r].end; ++i)
                if (!read_packet(src, order[i], run)) return;
        } catch (const Error &) {
            run.malformed = true;
        }
    });
    for (size_t r = 0; r < plan.size(); ++r) {
        const PacketRunOutput &run = scratch.runs[r];
        if (run.malformed || run.truncated || run.packets != plan[r].end - plan[r].begin) return false;
        if (r + 1 < plan.size() && run.pos != plan[r + 1].pos) return false;
    }
    return true;
}

/** The split runs' pieces and contributions, one after the other as one run would have them. */
void join_runs(PacketScratch &scratch, size_t n)
{
    scratch.pieces.clear();
    scratch.contributions.clear();
    for (size_t r = 0; r < n; ++r) {
        const PacketRunOutput &run = scratch.runs[r];
        const uint32_t shift = static_cast<uint32_t>(scratch.pieces.size());
        scratch.pieces.insert(scratch.pieces.end(), run.pieces.begin(), run.pieces.end());
        for (Contribution ct : run.contributions) {
            ct.first_piece += shift;
            scratch.contributions.push_back(ct);
        }
    }
}

}  // namespace

void decode_tile_packets(const Codestream &cs, const Tile &tile, const TileLayout &layout, uint32_t max_layers,
                         TileCodewords &out, PacketDecodeStats *stats, ParallelRunner *pool)
{
    out.blocks.assign(layout.code_blocks.size(), CodeBlockCodewords{});
    const CodingStyle &cod = cs.coding_style(tile);

    std::vector<uint8_t> style(layout.components.size());
    for (uint16_t c = 0; c < style.size(); ++c) style[c] = cs.component_coding(tile, c).cblk_style;
    const bool one_layer = cod.layers == 1 || max_layers == 1;

    thread_local PacketScratch scratch;
    scratch.reset(layout, 1);
    scratch.mixed = std::any_of(style.begin(), style.end(), [](uint8_t s) { return (s & cblk_style::kMixed) != 0; });
    const bool packed = tile.has_packed_headers;
    const PacketSource src{cod,
                           layout,
                           style,
                           scratch.trees,
                           scratch.started,
                           scratch.state,
                           tile.data.data(),
                           tile.data.size(),
                           packed ? tile.packed_headers.data() : tile.data.data(),
                           packed ? tile.packed_headers.size() : tile.data.size(),
                           packed,
                           max_layers == 0 ? UINT32_MAX : max_layers};

    PacketDecodeStats local;
    const std::vector<PacketRun> plan =
        plan_runs(cs, tile, layout, cod, scratch.trees.table(), pool ? pool->size() : 1, scratch.order);
    if (plan.size() > 1) {
        scratch.reset(layout, plan.size());
        if (read_split_runs(src, scratch.order, plan, scratch, *pool)) {
            join_runs(scratch, plan.size());
            assemble_codewords(scratch.pieces, scratch.contributions, one_layer, scratch, out);
            for (size_t r = 0; r < plan.size(); ++r) local.packets += scratch.runs[r].packets;
            local.data_consumed = scratch.runs[plan.size() - 1].pos;
            local.runs = static_cast<uint32_t>(plan.size());
            scratch.release_if_large();
            if (stats) *stats = local;
            return;
        }
        scratch.reset(layout, 1);  // read again in one run, which says what went wrong
    }
    PacketRunOutput &run = scratch.runs[0];
    if (one_layer) {
        out.chunks.clear();
        out.segments.clear();
        out.chunks.reserve(out.blocks.size());  // one a block: never reallocated
        run.direct = &out;
    }
    for_each_packet(layout, cod.layers, cod.progression, cs.progression_changes(tile),
                    [&](const PacketId &id) { return read_packet(src, id, run); });
    if (run.repeated) {  // read again, joined by the sort
        scratch.reset(layout, 1);
        out.blocks.assign(layout.code_blocks.size(), CodeBlockCodewords{});
        for_each_packet(layout, cod.layers, cod.progression, cs.progression_changes(tile),
                        [&](const PacketId &id) { return read_packet(src, id, run); });
    }
    if (run.direct) {
        if (run.moved) rebase_committed(run);
        copy_part1(scratch, out);
    } else {
        assemble_codewords(run.pieces, run.contributions, one_layer, scratch, out);
    }
    local.packets = run.packets;
    local.truncated = run.truncated;
    local.data_consumed = run.pos;
    local.headers_consumed = packed ? run.packed_pos : 0;
    scratch.release_if_large();
    if (stats) *stats = local;
}

}  // namespace j2kc
