/**
 * @file bit_io.h
 * @brief Packet-header bit writer and reader (ISO/IEC 15444-1 B.10.1).
 *
 * Bits are packed MSB first. After a byte of value 0xFF only 7 bits are used
 * in the next byte (its MSB is a stuffed 0), so a header can never contain a
 * marker code (0xFF90..0xFFFF). The last byte is padded with zeros, and a
 * header never ends in 0xFF: if it would, one more (stuffed) byte 0x00 follows.
 *
 * The writer is J2KC_HD (flat buffer, no allocation, no exceptions) so the CPU
 * reference and a GPU packet-header kernel write the same bytes. With a null
 * buffer (or a short one) it still counts the bytes it would emit, which is how
 * header sizes are measured without writing. The reader is host-only and
 * bounds-checked: running out of bytes throws INVALID_DATA.
 */
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/host_device.h"
#include "common/status.h"

namespace j2kc {

/**
 * ORs `v` into the header byte at p, which writers of neighbouring pieces of
 * one header may share. On the device a 16-bit compare-and-swap on the
 * halfword around it: the bytes around a packet header's are the
 * codestream's too (its headers are followed by EOC at least).
 */
J2KC_HD void or_header_byte(uint8_t *p, uint32_t v)
{
#if defined(__CUDA_ARCH__)
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    unsigned short *half = reinterpret_cast<unsigned short *>(a & ~uintptr_t{1});
    const unsigned short bits = static_cast<unsigned short>(v << (8 * (a & 1)));
    unsigned short old = *half, seen;
    while ((seen = atomicCAS(half, old, static_cast<unsigned short>(old | bits))) != old) old = seen;
#else
    *p |= static_cast<uint8_t>(v);
#endif
}

/** Phases of PacketHeaderWriter::at_phase(). */
constexpr uint32_t kPacketHeaderPhases = 22;

/** Writes packet-header bits into out[0 .. capacity); counts beyond it. */
struct PacketHeaderWriter {
    uint8_t *out = nullptr;
    uint32_t capacity = 0;
    uint32_t length = 0;   ///< bytes emitted so far (written or only counted)
    uint32_t acc = 0;      ///< bits of the byte being assembled
    uint32_t nbits = 0;    ///< how many bits acc holds
    uint32_t limit = 8;    ///< bits this byte takes: 7 right after a 0xFF
    bool last_ff = false;  ///< the last emitted byte was 0xFF
    bool combine = false;  ///< OR bytes into a zeroed buffer that writers of the header's other pieces share

    PacketHeaderWriter() = default;
    J2KC_HD PacketHeaderWriter(uint8_t *buffer, uint32_t size) : out(buffer), capacity(size) {}

    /**
     * A counting writer (no buffer, no byte emitted yet) in phase `phase`
     * (0 .. kPacketHeaderPhases - 1): where a writer stands between two bits,
     * as far as the bytes it will still emit can tell. Phases 0..6: a 7-bit
     * byte (after a 0xFF) holds that many bits; 7: an 8-bit byte holds none;
     * 8..14: it holds 1..7 bits, all 1 (it may still become 0xFF);
     * 15..21: it holds 1..7 bits, not all 1. Bits put from a phase emit a
     * number of bytes and end in a phase that depend on that phase alone,
     * so the byte count of a header is a walk over the counts of its pieces
     * from every phase, which can be made piece by piece in parallel.
     */
    J2KC_HD static PacketHeaderWriter at_phase(uint32_t phase)
    {
        PacketHeaderWriter w;
        if (phase < 7) {
            w.nbits = phase;
            w.limit = 7;
            w.last_ff = true;
        } else if (phase < 15) {
            w.nbits = phase - 7;
            w.acc = (1u << w.nbits) - 1;
        } else {
            w.nbits = phase - 14;
        }
        return w;
    }

    /** The phase this writer is in (see at_phase()). */
    J2KC_HD uint32_t phase() const
    {
        if (limit == 7) return nbits;
        if (nbits == 0) return 7;
        return acc == (1u << nbits) - 1 ? 7 + nbits : 14 + nbits;
    }

    /** True when every emitted byte fitted into the buffer. */
    J2KC_HD bool fits() const { return length <= capacity; }

    J2KC_HD void store(uint32_t at, uint32_t byte)
    {
        if (!out || at >= capacity) return;
        if (combine)
            or_header_byte(out + at, byte);
        else
            out[at] = static_cast<uint8_t>(byte);
    }

    J2KC_HD void emit_byte(uint32_t byte)
    {
        store(length, byte);
        ++length;
        last_ff = byte == 0xFF;
        limit = last_ff ? 7 : 8;
        acc = 0;
        nbits = 0;
    }

    J2KC_HD void put_bit(uint32_t bit)
    {
        acc = acc << 1 | (bit & 1u);
        if (++nbits == limit) emit_byte(acc);
    }

    /** The n (<= 32) low bits of v, most significant first. */
    J2KC_HD void put_bits(uint32_t v, uint32_t n)
    {
        for (uint32_t i = n; i-- > 0;) put_bit(v >> i);
    }

    /**
     * A combining writer's last bits: ORs those of the byte being assembled
     * where that byte goes, leaving the rest of it to the next piece.
     */
    J2KC_HD void put_partial()
    {
        if (nbits > 0) store(length, acc << (limit - nbits));
    }

    /**
     * Ends the header: pads the partial byte with zeros and, if the header
     * would end in 0xFF, adds the byte that carries the stuffed bit. Returns
     * the header length in bytes. The writer can be reused afterwards for a
     * following header (e.g. the next packet) as it restarts byte-aligned.
     */
    J2KC_HD uint32_t flush()
    {
        if (nbits > 0) emit_byte(acc << (limit - nbits));
        if (last_ff) emit_byte(0);
        last_ff = false;
        limit = 8;
        return length;
    }
};

/** Reads packet-header bits from data[0 .. size); never reads beyond. */
class PacketHeaderReader {
public:
    PacketHeaderReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    uint32_t bit()
    {
        if (bits_left_ == 0) next_byte();
        return (byte_ >> --bits_left_) & 1u;
    }

    /** n (<= 32) bits, most significant first: as many at a time as the current byte holds. */
    uint32_t bits(uint32_t n)
    {
        uint32_t v = 0;
        while (n > 0) {
            if (bits_left_ == 0) next_byte();
            const uint32_t take = n < bits_left_ ? n : bits_left_;
            bits_left_ -= take;
            v = v << take | ((byte_ >> bits_left_) & ((1u << take) - 1));
            n -= take;
        }
        return v;
    }

    /**
     * Ends the header: drops the rest of the current byte and, if that byte
     * was 0xFF, the byte holding the stuffed bit. Returns the header length.
     */
    size_t align()
    {
        bits_left_ = 0;
        if (last_ff_) {
            if (pos_ >= size_) {
                exhausted_ = true;
                fail(J2KC_ERR_INVALID_DATA, "packet header ends in 0xFF without its stuffed byte");
            }
            ++pos_;
            last_ff_ = false;
        }
        return pos_;
    }

    size_t position() const { return pos_; }
    /** True once a read failed because the bytes ran out (a truncated stream). */
    bool exhausted() const { return exhausted_; }

private:
    /** The next byte: 8 bits, or 7 after a 0xFF (its MSB is the stuffed 0). */
    void next_byte()
    {
        if (pos_ >= size_) {
            exhausted_ = true;
            fail(J2KC_ERR_INVALID_DATA, "packet header runs past its data (%zu bytes)", size_);
        }
        byte_ = data_[pos_++];
        bits_left_ = last_ff_ ? 7 : 8;
        last_ff_ = byte_ == 0xFF;
    }

    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
    uint32_t byte_ = 0;
    uint32_t bits_left_ = 0;
    bool last_ff_ = false;
    bool exhausted_ = false;
};

}  // namespace j2kc
