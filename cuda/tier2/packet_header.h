/**
 * @file packet_header.h
 * @brief Bit-defining pieces of a packet header shared by the CPU reference
 * and a GPU header writer (ISO/IEC 15444-1 B.10.6, B.10.7, Table B.4, and the
 * codeword-segment boundaries of D.4.1 / Table D.9 for each code-block style).
 */
#pragma once

#include <cstdint>

#include "codestream/markers.h"
#include "common/host_device.h"
#include "tier1/codeword_segment.h"

namespace j2kc {

/** Passes a packet can add to one code-block (Table B.4 tops out at 164). */
constexpr uint32_t kMaxPassesPerPacket = 164;
/** Passes coded with the MQ coder before the bypass (lazy) mode starts. */
constexpr uint32_t kBypassFirstRawPass = 10;

/**
 * One past the last pass of the codeword segment that holds pass `pass`
 * (0 = the first cleanup pass), given the code-block style:
 * termall: every pass ends a segment; bypass: passes 0..9 form one MQ
 * segment, then each bit-plane's significance + refinement passes form a raw
 * segment and its cleanup pass an MQ segment; HT: the cleanup pass, then its
 * SigProp and MagRef passes; otherwise one segment holds every pass (returns
 * UINT32_MAX).
 */
J2KC_HD uint32_t codeword_segment_end(uint8_t style, uint32_t pass)
{
    // HT (ISO/IEC 15444-15): the cleanup pass is one segment, its SigProp and MagRef passes the next.
    if (style & cblk_style::kHighThroughput) return pass == 0 ? 1 : 3;
    if (style & cblk_style::kTermAll) return pass + 1;
    if (style & cblk_style::kBypass) {
        if (pass < kBypassFirstRawPass) return kBypassFirstRawPass;
        const uint32_t phase = (pass - kBypassFirstRawPass) % 3;  // 0 SPP, 1 MRP, 2 CUP
        return phase == 2 ? pass + 1 : pass - phase + 2;
    }
    return UINT32_MAX;
}

/**
 * The style a code-block is coded with, in a tile-component of style
 * `style`: in MIXED mode (ISO/IEC 15444-15, style 0xC0) a Part-1 block has
 * the Part-1 modes alone and an HT block keeps the component's style;
 * outside MIXED mode every block has the component's.
 */
J2KC_HD uint8_t code_block_style(uint8_t style, bool part1)
{
    return part1 && (style & cblk_style::kMixed) ? static_cast<uint8_t>(style & cblk_style::kPart1Modes) : style;
}

/** floor(log2(v)) for v >= 1. */
J2KC_HD uint32_t log2_floor_u32(uint32_t v)
{
    uint32_t r = 0;
    while (v >>= 1) ++r;
    return r;
}

/** Bits needed to write v as an unsigned number (0 for 0). */
J2KC_HD uint32_t bits_for_value(uint32_t v)
{
    uint32_t r = 0;
    while (v) {
        v >>= 1;
        ++r;
    }
    return r;
}

/** Length in bits of the number-of-passes codeword for n passes (1..164). */
J2KC_HD uint32_t num_passes_codeword_bits(uint32_t n)
{
    return n == 1 ? 1 : n == 2 ? 2 : n <= 5 ? 4 : n <= 36 ? 9 : 16;
}

/** Writes the number-of-passes codeword of Table B.4 for n passes (1..164). */
template <typename Writer>
J2KC_HD void write_num_passes(uint32_t n, Writer &w)
{
    if (n == 1) {
        w.put_bit(0);
    } else if (n == 2) {
        w.put_bits(2, 2);  // 10
    } else if (n <= 5) {
        w.put_bits(0xC | (n - 3), 4);  // 11xx
    } else if (n <= 36) {
        w.put_bits(0x1E0 | (n - 6), 9);  // 1111 xxxxx
    } else {
        w.put_bits(0xFF80 | (n - 37), 16);  // 1111 11111 xxxxxxx
    }
}

/** Reads the number-of-passes codeword of Table B.4: 1..164. */
template <typename Reader>
uint32_t read_num_passes(Reader &r)
{
    if (!r.bit()) return 1;
    if (!r.bit()) return 2;
    uint32_t v = r.bits(2);
    if (v != 3) return 3 + v;
    v = r.bits(5);
    if (v != 31) return 6 + v;
    return 37 + r.bits(7);
}

}  // namespace j2kc
