/**
 * @file byte_io.h
 * @brief Big-endian byte reader (bounds-checked: a short read throws
 * INVALID_DATA) and byte writer for marker segments and boxes.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/status.h"

namespace j2kc {

class ByteReader {
public:
    ByteReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

    size_t position() const { return pos_; }
    size_t size() const { return size_; }
    size_t remaining() const { return size_ - pos_; }
    const uint8_t *current() const { return data_ + pos_; }
    const uint8_t *data() const { return data_; }

    void need(size_t n) const
    {
        J2KC_CHECK_DATA(n <= remaining(), "truncated data: need %zu bytes at offset %zu, have %zu", n, pos_,
                        remaining());
    }
    void seek(size_t pos)
    {
        J2KC_CHECK_DATA(pos <= size_, "seek past end (%zu > %zu)", pos, size_);
        pos_ = pos;
    }
    void skip(size_t n)
    {
        need(n);
        pos_ += n;
    }

    uint8_t u8()
    {
        need(1);
        return data_[pos_++];
    }
    uint16_t u16()
    {
        need(2);
        uint16_t v = static_cast<uint16_t>(data_[pos_] << 8 | data_[pos_ + 1]);
        pos_ += 2;
        return v;
    }
    uint32_t u32()
    {
        need(4);
        uint32_t v = uint32_t{data_[pos_]} << 24 | uint32_t{data_[pos_ + 1]} << 16 | uint32_t{data_[pos_ + 2]} << 8 |
                     data_[pos_ + 3];
        pos_ += 4;
        return v;
    }
    uint64_t u64()
    {
        uint64_t hi = u32();
        return hi << 32 | u32();
    }
    /** Unsigned big-endian integer of n bytes (0..8). */
    uint64_t uint_n(unsigned n)
    {
        uint64_t v = 0;
        for (unsigned i = 0; i < n; ++i) v = v << 8 | u8();
        return v;
    }
    uint16_t peek_u16() const
    {
        need(2);
        return static_cast<uint16_t>(data_[pos_] << 8 | data_[pos_ + 1]);
    }

private:
    const uint8_t *data_;
    size_t size_;
    size_t pos_ = 0;
};

class ByteWriter {
public:
    void u8(uint8_t v) { buf_.push_back(v); }
    void u16(uint16_t v)
    {
        u8(static_cast<uint8_t>(v >> 8));
        u8(static_cast<uint8_t>(v));
    }
    void u32(uint32_t v)
    {
        u16(static_cast<uint16_t>(v >> 16));
        u16(static_cast<uint16_t>(v));
    }
    void uint_n(uint64_t v, unsigned n)
    {
        for (unsigned i = n; i-- > 0;) u8(static_cast<uint8_t>(v >> (8 * i)));
    }
    void bytes(const uint8_t *p, size_t n) { buf_.insert(buf_.end(), p, p + n); }
    void bytes(const std::vector<uint8_t> &v) { bytes(v.data(), v.size()); }

    /** Overwrites a 16-bit field written earlier (marker segment lengths). */
    void patch_u16(size_t at, uint16_t v)
    {
        buf_[at] = static_cast<uint8_t>(v >> 8);
        buf_[at + 1] = static_cast<uint8_t>(v);
    }
    void patch_u32(size_t at, uint32_t v)
    {
        patch_u16(at, static_cast<uint16_t>(v >> 16));
        patch_u16(at + 2, static_cast<uint16_t>(v));
    }

    size_t size() const { return buf_.size(); }
    std::vector<uint8_t> &buffer() { return buf_; }
    const std::vector<uint8_t> &buffer() const { return buf_; }

private:
    std::vector<uint8_t> buf_;
};

}  // namespace j2kc
