/**
 * @file packet_header_core.h
 * @brief Packet-header coding of ISO/IEC 15444-1 B.10, written once for both
 * backends: the CPU packet encoder (packet_encoder.cpp) and the GPU Tier-2
 * (tier2_cell_core.h) call code_packet_header() with their own view of a
 * precinct's coding state, so their headers are the same bits.
 *
 * Choices a conforming decoder relies on: a packet with no new pass for any
 * code-block is written as a zero-length packet (a single 0 bit, B.10.3);
 * Lblock is raised by the least increment that lets every segment length of
 * the packet fit (B.10.7.1); one length is sent per codeword segment the new
 * passes touch (B.10.7.2), with segment boundaries from the code-block style
 * (packet_header.h). In a MIXED tile-component (ISO/IEC 15444-15, style
 * 0xC0) a block's first length also tells its coder: an HT block's cleanup
 * length goes out with Lblock above 3 and a top bit of 0 (Lblock raised one
 * more than it needs), a Part-1 block's with the least Lblock, whose field
 * then starts with a 1 (tier2/packet_decoder.cpp reads it back); a Part-1
 * block's first packet must hold passes of one codeword segment only, and
 * HT blocks start with their cleanup pass (no placeholder passes).
 *
 * The State a caller passes describes one precinct at one layer, with
 * code-blocks named by the caller's own indices (cb):
 *   uint32_t num_bands();                 its sub-bands
 *   PacketHeaderBand band(uint32_t k);    their code-blocks and tag trees
 *   uint32_t passes_now(cb);              passes through this layer
 *   uint32_t passes_sent(cb);             passes in the earlier layers
 *   uint32_t num_passes(cb);              passes Tier-1 coded
 *   uint8_t zero_bitplanes(cb);           P of B.10.5
 *   const uint32_t *pass_end(cb);         per pass: bytes up to its end
 *   const uint8_t *pass_terminated(cb);   per pass: terminated; may be null
 *   uint8_t &lblock(cb);                  Lblock, kept across layers
 *   bool part1(cb);                       MIXED mode: coded by Part 1's coder
 *   void contribute(cb, begin, end, at);  bytes [begin, end) of the block go
 *                                         into the body at offset `at`
 *   void fail(PacketHeaderError, cb, x, y, z);  reports what is rejected
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"
#include "tier2/packet_header.h"
#include "tier2/tag_tree.h"

namespace j2kc {

/** Zero bit-plane leaf of a code-block without passes: never coded, so kept out of the minima. */
constexpr int32_t kZeroBitplanesNeverCoded = 0xFFFF;
/** Lblock before a code-block's first contribution (B.10.7.1). */
constexpr uint8_t kLblockStart = 3;
/** What code_packet_header() returns after State::fail(). */
constexpr uint64_t kPacketHeaderFailed = UINT64_MAX;

/** What code_packet_header() rejects; x, y, z of State::fail() after each. */
enum PacketHeaderError : uint32_t {
    kPacketBadPasses,         ///< passes now, passes sent, passes coded
    kPacketTooManyPasses,     ///< new passes (above kMaxPassesPerPacket)
    kPacketPassEndsDecrease,  ///< the pass whose end lies before its segment's start
    kPacketUnterminated,      ///< the pass that ends a codeword segment but is not terminated
    kPacketLengthField,       ///< bits of the segment length field (above 32)
    kPacketMixedFirstLength,  ///< MIXED: the first length cannot tell the block's coder; its passes
};

/** The code-blocks of one sub-band of a precinct, and its two tag trees. */
struct PacketHeaderBand {
    uint32_t first_block = 0;  ///< cb of its first code-block; the others follow in raster order
    uint32_t num_blocks = 0;
    TagTree inclusion, zero_bitplanes;
};

/** A precinct-band's trees and Lblocks as they are before the precinct's first packet. */
template <typename State>
J2KC_HD void reset_packet_header_band(State &state, const PacketHeaderBand &band)
{
    if (band.num_blocks == 0) return;
    TagTree inclusion = band.inclusion, zero_bitplanes = band.zero_bitplanes;
    inclusion.reset(kTagTreeUnknown);
    zero_bitplanes.reset(0);
    for (uint32_t i = 0; i < band.num_blocks; ++i) {
        const uint32_t cb = band.first_block + i;
        zero_bitplanes.set_leaf(
            i, state.num_passes(cb) == 0 ? kZeroBitplanesNeverCoded : int32_t{state.zero_bitplanes(cb)});
        state.lblock(cb) = kLblockStart;
    }
    zero_bitplanes.build();
}

/** Checks a code-block's truncation points for a packet; false after state.fail(). */
template <typename State>
J2KC_HD bool check_block_passes(State &state, uint32_t cb)
{
    const uint32_t now = state.passes_now(cb), sent = state.passes_sent(cb);
    const uint32_t coded = state.num_passes(cb);
    if (now < sent || now > coded) {
        state.fail(kPacketBadPasses, cb, now, sent, coded);
        return false;
    }
    if (now - sent > kMaxPassesPerPacket) {
        state.fail(kPacketTooManyPasses, cb, now - sent, 0, 0);
        return false;
    }
    return true;
}

/**
 * What an included code-block adds to a packet header after its inclusion
 * and zero bit-planes: the number of new passes (B.10.6), the Lblock
 * increment and one length a codeword segment (B.10.7); updates Lblock and
 * hands its bytes to state.contribute() at body offset `at`. Returns their
 * length, or kPacketHeaderFailed after state.fail().
 */
template <typename State, typename Writer>
J2KC_HD uint64_t code_block_contribution(State &state, uint8_t style, uint32_t cb, uint64_t at, Writer &w)
{
    const uint32_t now = state.passes_now(cb), sent = state.passes_sent(cb);
    write_num_passes(now - sent, w);

    const uint32_t *ends = state.pass_end(cb);
    const uint8_t *terminated = state.pass_terminated(cb);
    const uint32_t start_byte = sent ? ends[sent - 1] : 0;
    uint8_t &lblock = state.lblock(cb);
    const bool mixed = (style & cblk_style::kMixed) != 0;
    const uint8_t block_style = code_block_style(style, mixed && state.part1(cb));
    // Least Lblock increment that fits every segment length (B.10.7.1).
    uint32_t need = lblock;
    if (mixed && sent == 0) {
        const bool ht = (block_style & cblk_style::kHighThroughput) != 0;
        const uint32_t first = ends[0];  // HT: the cleanup segment
        if (ht ? first < 2 : (codeword_segment_end(block_style, 0) < now || ends[now - 1] == 0)) {
            state.fail(kPacketMixedFirstLength, cb, now, 0, 0);
            return kPacketHeaderFailed;
        }
        const uint32_t top_bit_zero = bits_for_value(first) + 1;
        if (ht) need = top_bit_zero > kLblockStart + 1u ? top_bit_zero : kLblockStart + 1u;
    }
    for (uint32_t p = sent, from = start_byte; p < now;) {
        const uint32_t segment_end = codeword_segment_end(block_style, p);
        const uint32_t e = now < segment_end ? now : segment_end;
        const uint32_t to = ends[e - 1];
        if (to < from) {
            state.fail(kPacketPassEndsDecrease, cb, e - 1, 0, 0);
            return kPacketHeaderFailed;
        }
        if (terminated && e == segment_end && !terminated[e - 1]) {
            state.fail(kPacketUnterminated, cb, e - 1, 0, 0);
            return kPacketHeaderFailed;
        }
        const uint32_t bits = bits_for_value(to - from), log2p = log2_floor_u32(e - p);
        if (bits > log2p && bits - log2p > need) need = bits - log2p;
        from = to;
        p = e;
    }
    for (uint32_t q = lblock; q < need; ++q) w.put_bit(1);
    w.put_bit(0);
    lblock = static_cast<uint8_t>(need);
    for (uint32_t p = sent, from = start_byte; p < now;) {
        const uint32_t segment_end = codeword_segment_end(block_style, p);
        const uint32_t e = now < segment_end ? now : segment_end;
        const uint32_t to = ends[e - 1];
        const uint32_t nbits = need + log2_floor_u32(e - p);
        if (nbits > 32) {
            state.fail(kPacketLengthField, cb, nbits, 0, 0);
            return kPacketHeaderFailed;
        }
        w.put_bits(to - from, nbits);
        from = to;
        p = e;
    }
    const uint32_t end_byte = ends[now - 1];
    state.contribute(cb, start_byte, end_byte, at);
    return end_byte - start_byte;
}

/**
 * Codes the header of layer `layer` of the precinct `state` describes into
 * `w` (put_bit, put_bits), given the state its earlier layers left in the
 * trees and Lblocks, and updates that state. Returns the body length, or
 * kPacketHeaderFailed after state.fail().
 */
template <typename State, typename Writer>
J2KC_HD uint64_t code_packet_header(State &state, uint8_t style, uint32_t layer, Writer &w)
{
    const uint32_t num_bands = state.num_bands();
    bool any = false;
    for (uint32_t k = 0; k < num_bands; ++k) {
        const PacketHeaderBand band = state.band(k);
        for (uint32_t i = 0; i < band.num_blocks; ++i) {
            const uint32_t cb = band.first_block + i;
            if (!check_block_passes(state, cb)) return kPacketHeaderFailed;
            any |= state.passes_now(cb) > state.passes_sent(cb);
        }
    }
    if (!any) {  // B.10.3: zero-length packet
        w.put_bit(0);
        return 0;
    }
    w.put_bit(1);

    uint64_t body = 0;
    for (uint32_t k = 0; k < num_bands; ++k) {
        PacketHeaderBand band = state.band(k);
        if (band.num_blocks == 0) continue;
        // The inclusion tree must know every leaf first included in this
        // layer before any leaf of the band is coded (they share parents).
        // A code-block is included once it got passes.
        for (uint32_t i = 0; i < band.num_blocks; ++i) {
            const uint32_t cb = band.first_block + i;
            if (state.passes_sent(cb) == 0 && state.passes_now(cb) > 0)
                band.inclusion.lower_leaf(i, static_cast<int32_t>(layer));
        }
        for (uint32_t i = 0; i < band.num_blocks; ++i) {
            const uint32_t cb = band.first_block + i;
            const uint32_t now = state.passes_now(cb), sent = state.passes_sent(cb);
            const uint32_t added = now - sent;
            if (sent == 0) {
                band.inclusion.encode(i, static_cast<int32_t>(layer) + 1, w);
                if (added == 0) continue;
                band.zero_bitplanes.encode(i, band.zero_bitplanes.value(i) + 1, w);
            } else {
                w.put_bit(added > 0 ? 1 : 0);
                if (added == 0) continue;
            }
            const uint64_t bytes = code_block_contribution(state, style, cb, body, w);
            if (bytes == kPacketHeaderFailed) return kPacketHeaderFailed;
            body += bytes;
        }
    }
    return body;
}

}  // namespace j2kc
