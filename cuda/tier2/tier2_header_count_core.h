/**
 * @file tier2_header_count_core.h
 * @brief Single-layer packet headers (ISO/IEC 15444-1 B.10) counted and
 * written in parallel over a precinct's code-blocks, for the GPU Tier-2's
 * measures and write: the serial coder (code_packet_header()) takes one
 * thread the whole precinct, thousands of code-blocks where precincts are
 * not partitioned.
 *
 * In a precinct's first packet no code-block's bits depend on the blocks
 * coded before it, once the trees' values are known:
 *  - a tag-tree node is coded on its first walk only, from the bound its
 *    parent's first walk left, which depends on the parent's value and the
 *    threshold alone (the inclusion tree's threshold is 1 for every leaf;
 *    the zero bit-plane tree's lies above every value on the leaf's path,
 *    so each node's walk ends at its value). The first walk of an inclusion
 *    node is its top-left leaf's, of a zero bit-plane node its first
 *    included leaf's in raster order;
 *  - Lblock starts at 3 for every code-block (B.10.7.1).
 * What the bits cost in bytes depends on where they fall in the bytes
 * (the stuffed bit after each 0xFF, B.10.1), and so on every bit before:
 * each code-block is coded from each of the writer's kPacketHeaderPhases
 * phases (PacketHeaderWriter::at_phase()), giving the bytes it emits and
 * the phase it ends in; runs of code-blocks compose these steps, and a
 * precinct walks its runs' steps from the phase after the header's first
 * bit. These counts and bytes equal the serial coder's
 * (tests/gpu_tier2_test.cpp), which headers of several layers keep.
 *
 * Three kernels (tier2.cu), each step here J2KC_HD so the tests run it on
 * the host:
 *  1. a CTA a precinct-band: the trees' node values, level by level
 *     (t2g_first_packet_node);
 *  2. a CTA a run, a warp a code-block and a lane a phase
 *     (t2g_first_packet_block), the run's steps composed by T2gPhaseWalk;
 *  3. a CTA a precinct: its runs' steps walked, header and packet lengths
 *     stored, and the code-blocks' body offsets and the runs' entry walks.
 * The write takes the same steps: a warp a precinct zeroes its header and
 * writes the first bit (t2g_first_packet_open), then a CTA a run recomputes
 * its code-blocks' steps, walks them from the run's entry, and each
 * code-block ORs its bits in where the walk puts them
 * (t2g_first_packet_block_write).
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"
#include "tier2/bit_io.h"
#include "tier2/packet_header_core.h"
#include "tier2/tag_tree.h"
#include "tier2/tier2_cell_core.h"

namespace j2kc {

/** No code-block under a node is included. */
constexpr uint32_t kT2gNoLeaf = UINT32_MAX;

/** Level `level` of a band's trees (0: the leaves). */
J2KC_HD TagTreeLevel t2g_tree_level(const T2gBand &band, uint32_t level)
{
    TagTreeLevel l{0, band.cblks_x, band.cblks_y};
    for (uint32_t k = 0; k < level; ++k) l = l.parent();
    return l;
}

/** Levels of a band's trees (0 when it has no code-blocks). */
J2KC_HD uint32_t t2g_tree_levels(const T2gBand &band)
{
    if (band.cblks_x == 0 || band.cblks_y == 0) return 0;
    uint32_t n = 1;
    for (TagTreeLevel l{0, band.cblks_x, band.cblks_y}; !l.root(); l = l.parent()) ++n;
    return n;
}

/**
 * Node `i` of level `level` of band `bi`'s trees for the precinct's first
 * packet: the zero bit-plane value (the least of the coded code-blocks
 * under it, as reset_packet_header_band() builds it) and its first included
 * code-block. A leaf reads its code-block; an inner node its children,
 * which must be done.
 */
J2KC_HD void t2g_first_packet_node(const T2gTables &t, const T2gBlocks &b, const uint16_t *passes, const T2gScratch &s,
                                   uint32_t bi, uint32_t level, uint32_t i)
{
    const T2gBand band = t.bands[bi];
    const TagTreeLevel l = t2g_tree_level(band, level);
    const uint32_t node = band.node_offset + l.offset + i;
    if (level == 0) {
        const uint32_t cb = band.first_block + i;
        s.zero_bitplanes[node].value = b.num_passes[cb] == 0 ? kZeroBitplanesNeverCoded : int32_t{b.zero_bitplanes[cb]};
        s.first_included[node] = passes[size_t{cb} * t.layers] > 0 ? i : kT2gNoLeaf;
        return;
    }
    const TagTreeLevel c = t2g_tree_level(band, level - 1);
    const uint32_t x = i % l.width, y = i / l.width;
    int32_t value = kTagTreeUnknown;
    uint32_t first = kT2gNoLeaf;
    for (uint32_t cy = 2 * y; cy < 2 * y + 2 && cy < c.height; ++cy) {
        for (uint32_t cx = 2 * x; cx < 2 * x + 2 && cx < c.width; ++cx) {
            const uint32_t child = band.node_offset + c.offset + cy * c.width + cx;
            if (s.zero_bitplanes[child].value < value) value = s.zero_bitplanes[child].value;
            if (s.first_included[child] < first) first = s.first_included[child];
        }
    }
    s.zero_bitplanes[node].value = value;
    s.first_included[node] = first;
}

/** A bit sink for the walks that only carry a parent's bound down. */
struct T2gNoBits {
    J2KC_HD void put_bit(uint32_t) {}
};

/** A code-block's precinct state with its own Lblock and no body placement (the count leaves both). */
struct T2gFirstPacketState : T2gPrecinctState {
    uint8_t block_lblock = kLblockStart;

    J2KC_HD explicit T2gFirstPacketState(const T2gPrecinctState &p) : T2gPrecinctState(p) {}
    J2KC_HD uint8_t &lblock(uint32_t) { return block_lblock; }
    J2KC_HD void contribute(uint32_t, uint32_t, uint32_t, uint64_t) const {}
};

/** What a code-block adds to its precinct's first packet besides header bits. */
struct T2gBlockCount {
    uint64_t body = 0;      ///< its bytes in the body
    bool included = false;  ///< it has passes in the packet
    bool failed = false;    ///< reported to the status word
};

/**
 * Code-block `leaf` of run `run` as code_packet_header() codes it in its
 * precinct's first packet, when that packet is not empty: its inclusion,
 * zero bit-planes and contribution into `w`. The trees' node values
 * (t2g_first_packet_node) must be in place.
 */
template <typename Writer>
J2KC_HD T2gBlockCount t2g_first_packet_block(const T2gTables &t, const T2gBlocks &b, const uint16_t *passes,
                                             const T2gScratch &s, const T2gRun &run, uint32_t leaf, Writer &w)
{
    const T2gPrecinct prec = t.precincts[run.precinct];
    const T2gBand band = t.bands[run.band];
    T2gFirstPacketState state(T2gPrecinctState{t, b, passes, s, prec, 0});
    const uint32_t cb = band.first_block + leaf;
    T2gBlockCount out;
    if (!check_block_passes(state, cb)) {
        out.failed = true;
        return out;
    }
    out.included = state.passes_now(cb) > 0;

    const uint32_t x = leaf % band.cblks_x, y = leaf / band.cblks_x;
    uint32_t path[kTagTreeMaxLevels];
    const uint32_t depth = tag_tree_path(band.cblks_x, band.cblks_y, x, y, path);
    T2gNoBits none;
    // Inclusion against threshold 1 (layer 0): a node's value is 0 when a
    // code-block under it is included.
    int32_t low = 0;
    for (uint32_t level = depth; level-- > 0;) {
        const uint32_t node = band.node_offset + path[level];
        const int32_t value = s.first_included[node] != kT2gNoLeaf ? 0 : kTagTreeUnknown;
        const bool first_walk = ((x | y) & ((1u << level) - 1)) == 0;
        uint32_t known = 0;
        low = first_walk ? tag_tree_encode_node(value, low, 1, known, w)
                         : tag_tree_encode_node(value, low, 1, known, none);
    }
    if (!out.included) return out;
    const int32_t threshold = s.zero_bitplanes[band.node_offset + path[0]].value + 1;
    low = 0;
    for (uint32_t level = depth; level-- > 0;) {
        const uint32_t node = band.node_offset + path[level];
        const int32_t value = s.zero_bitplanes[node].value;
        uint32_t known = 0;
        low = s.first_included[node] == leaf ? tag_tree_encode_node(value, low, threshold, known, w)
                                             : tag_tree_encode_node(value, low, threshold, known, none);
    }
    out.body = code_block_contribution(state, prec.style, cb, 0, w);
    out.failed = out.body == kPacketHeaderFailed;
    return out;
}

/**
 * A walk over steps: a step table holds, for each phase a writer may start
 * a piece of header in, the bytes the piece emits from there and the phase
 * it ends in (bytes << 5 | phase).
 */
struct T2gPhaseWalk {
    uint32_t phase = 0;
    uint64_t bytes = 0;

    /** The step of a counting writer made by PacketHeaderWriter::at_phase(), after its piece. */
    J2KC_HD static T2gPhaseWalk of(const PacketHeaderWriter &w) { return {w.phase(), w.length}; }
    /** This walk as one step (of a run: under 2^27 bytes). */
    J2KC_HD uint32_t step() const { return static_cast<uint32_t>(bytes) << 5 | phase; }
    /** This walk in 64 bits (T2gScratch::run_entry), and back. */
    J2KC_HD uint64_t packed() const { return bytes << 5 | phase; }
    J2KC_HD static T2gPhaseWalk unpacked(uint64_t v) { return {static_cast<uint32_t>(v & 31), v >> 5}; }

    /** Takes the step of `steps` (one a phase) for the phase it is in. */
    J2KC_HD void take(const uint32_t *steps)
    {
        const uint32_t e = steps[phase];
        phase = e & 31;
        bytes += e >> 5;
    }

    /** Takes the walk of `walks` (one a phase) for the phase it is in. */
    J2KC_HD void take(const T2gPhaseWalk *walks)
    {
        const T2gPhaseWalk e = walks[phase];
        phase = e.phase;
        bytes += e.bytes;
    }
};

/**
 * Header bytes of a precinct's first packet: a zero-length packet when no
 * code-block is included, else the header's first bit, then its code-blocks
 * as `walk` took them from the phase that bit leaves (t2g_first_packet_phase),
 * then the flush.
 */
J2KC_HD uint32_t t2g_first_packet_header(bool included, const T2gPhaseWalk &walk)
{
    PacketHeaderWriter w;
    if (!included) {
        w.put_bit(0);
        return w.flush();
    }
    PacketHeaderWriter end = PacketHeaderWriter::at_phase(walk.phase);
    return static_cast<uint32_t>(walk.bytes) + end.flush();
}

/** The phase a non-empty header's code-blocks start in: after its first bit, 1. */
J2KC_HD uint32_t t2g_first_packet_phase()
{
    PacketHeaderWriter w;
    w.put_bit(1);
    return w.phase();
}

/** T2gScratch::run_entry of a run whose packet is empty: its code-blocks write nothing. */
constexpr uint64_t kT2gNoEntry = UINT64_MAX;

/**
 * The first bit of a first packet's header (`size` bytes without EPH,
 * zeroed), which the code-blocks' bits then join: 1 when one of them is
 * included (B.10.3). The header's last byte and the one that follows a
 * final 0xFF are zeros, as flush() ends it.
 */
J2KC_HD void t2g_first_packet_open(uint8_t *header, uint32_t size, bool included)
{
    PacketHeaderWriter w(header, size);
    w.combine = true;
    w.put_bit(included ? 1 : 0);
    w.put_partial();
}

/**
 * Writes code-block `leaf` of run `run` into its precinct's first-packet
 * header (`size` bytes without EPH, zeroed, its first bit written), where
 * `entry`, the walk from the header's start to the code-block, puts it: its
 * bits are OR-ed in, its first and last bytes shared with its neighbours.
 */
J2KC_HD void t2g_first_packet_block_write(const T2gTables &t, const T2gBlocks &b, const uint16_t *passes,
                                          const T2gScratch &s, const T2gRun &run, uint32_t leaf,
                                          const T2gPhaseWalk &entry, uint8_t *header, uint32_t size)
{
    PacketHeaderWriter w = PacketHeaderWriter::at_phase(entry.phase);
    w.out = header + entry.bytes;
    w.capacity = size > entry.bytes ? static_cast<uint32_t>(size - entry.bytes) : 0;
    w.combine = true;
    t2g_first_packet_block(t, b, passes, s, run, leaf, w);
    w.put_partial();
}

}  // namespace j2kc
