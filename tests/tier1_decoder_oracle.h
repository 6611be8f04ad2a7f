/**
 * @file tier1_decoder_oracle.h
 * @brief Test-only oracle for the Tier-1 decoder (ISO/IEC 15444-1 Annexes C
 * and D): a frozen copy of the straightforward decoder the library used
 * before the speed work (one 16-bit flag word per sample, one pass function
 * per pass type, the MQ decoder of C.3 checking the end of data on every
 * byte). Differential tests and the benchmark decode the same blocks with it
 * and with Tier1Decoder and require identical output, so the optimised
 * decoder is held to this simple one and not only to round trips.
 *
 * Self-contained on purpose (it copies the MQ and raw decoders and the pass
 * loops rather than including the library's versions): later changes to the
 * library's coders must not silently change the oracle. Only the tables of
 * Annex C/D (tier1_contexts.h, kMqTransitions) are shared; they are the
 * standard's and tested on their own.
 */
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tier1/codeword_segment.h"
#include "tier1/mq_coder.h"
#include "tier1/tier1_contexts.h"

namespace j2kc {
namespace t1oracle {

using namespace t1_flag;

/** C.3 decoder, reading 0xFF past the end of the segment. */
struct MqDec {
    uint32_t a, c;
    int32_t ct;
    const uint8_t *bp, *end;

    void byte_in()
    {
        const int64_t left = end - bp;
        if (left <= 0 || *bp == 0xFF) {
            const uint32_t b1 = left > 1 ? bp[1] : 0xFFu;
            if (b1 > 0x8F) {
                c += 0xFF00;
                ct = 8;
            } else {
                ++bp;
                c += b1 << 9;
                ct = 7;
            }
        } else {
            ++bp;
            c += (left > 1 ? static_cast<uint32_t>(*bp) : 0xFFu) << 8;
            ct = 8;
        }
    }
    void init(const uint8_t *data, uint32_t length)
    {
        bp = data;
        end = data + length;
        c = (length > 0 ? static_cast<uint32_t>(*bp) : 0xFFu) << 16;
        byte_in();
        c <<= 7;
        ct -= 7;
        a = 0x8000;
    }
    void renorm()
    {
        do {
            if (ct == 0) byte_in();
            a <<= 1;
            c <<= 1;
            --ct;
        } while ((a & 0x8000) == 0);
    }
    uint32_t decode(uint8_t &cx)
    {
        const MqTransition &t = kMqTransitions.t[cx];
        const uint32_t qe = t.qe;
        uint32_t d = cx & 1u;
        a -= qe;
        if ((c >> 16) < qe) {
            if (a < qe) {
                cx = t.next_mps;
            } else {
                d ^= 1u;
                cx = t.next_lps;
            }
            a = qe;
            renorm();
        } else {
            c -= qe << 16;
            if ((a & 0x8000) == 0) {
                if (a < qe) {
                    d ^= 1u;
                    cx = t.next_lps;
                } else {
                    cx = t.next_mps;
                }
                renorm();
            }
        }
        return d;
    }
};

/** D.6 raw reader with the same end-of-data convention. */
struct RawDec {
    uint32_t c;
    int32_t ct;
    const uint8_t *bp, *end;

    void init(const uint8_t *data, uint32_t length)
    {
        c = 0;
        ct = 0;
        bp = data;
        end = data + length;
    }
    uint32_t get()
    {
        if (ct == 0) {
            const bool more = bp < end;
            const uint32_t next = more ? *bp : 0xFFu;
            if (c == 0xFF && next > 0x8F) {
                ct = 8;
            } else {
                ct = (c == 0xFF) ? 7 : 8;
                c = next;
                bp += more ? 1 : 0;
            }
        }
        return (c >> --ct) & 1u;
    }
};

class OracleDecoder {
public:
    /** Same contract as Tier1Decoder::decode; throws std::runtime_error
     *  where Tier1Decoder throws j2kc::Error (tests compare only outputs of
     *  streams both accept). */
    void decode(const uint8_t *data, const CodewordSegment *segments, size_t num_segments, uint32_t width,
                uint32_t height, uint32_t orientation, uint8_t style, uint32_t num_bitplanes, uint32_t zero_bitplanes,
                uint32_t roi_shift, int32_t *out, size_t out_stride)
    {
        if (width == 0 || height == 0) return;
        const uint32_t planes = num_bitplanes + roi_shift;
        uint64_t total_passes = 0;
        for (size_t k = 0; k < num_segments; ++k) total_passes += segments[k].passes;
        if (total_passes > 0) {
            if (planes > 30 || zero_bitplanes >= planes) throw std::runtime_error("bad planes");
        }
        w_ = width;
        h_ = height;
        stripes_ = (height + 3) / 4;
        ss_ = (width + 2) * 4;
        const size_t size = size_t{stripes_ + 2} * ss_;
        flags_.assign(size, 0);
        values_.assign(size, 0);
        orient_ = orientation & 3u;
        vc_ = (style & 0x08) != 0;
        t1_reset_contexts(cx_);
        const int nbp = static_cast<int>(planes) - static_cast<int>(zero_bitplanes);

        // Passes beyond the last coded plane are ignored, as OpenJPEG and Grok do.
        const uint32_t last_pass = 3u * static_cast<uint32_t>(nbp) - 2u;
        uint32_t pass = 0;
        const uint8_t *seg = data;
        for (size_t k = 0; k < num_segments && pass < last_pass; ++k) {
            const CodewordSegment &segment = segments[k];
            if (segment.passes > 0) {
                const bool raw = t1_pass_is_raw(pass, style);
                if (raw)
                    raw_.init(seg, segment.length);
                else
                    mq_.init(seg, segment.length);
                for (uint32_t n = 0; n < segment.passes && pass < last_pass; ++n, ++pass) {
                    if (t1_pass_is_raw(pass, style) != raw) throw std::runtime_error("mixed segment");
                    if (n + 1 != segment.passes && t1_pass_is_terminated(pass, style))
                        throw std::runtime_error("segment past termination");
                    const int p = t1_pass_bitplane(pass, nbp);
                    if ((style & 0x02) && pass > 0) t1_reset_contexts(cx_);
                    switch (t1_pass_type(pass)) {
                    case 0: spp(p, raw); break;
                    case 1: mrp(p, raw); break;
                    default: cup(p, (style & 0x20) != 0); break;
                    }
                }
            }
            seg += segment.length;
        }
        for (uint32_t y = 0; y < height; ++y) {
            int32_t *row = out + y * out_stride;
            size_t i = ss_ + 4 + size_t{y >> 2} * ss_ + (y & 3);
            for (uint32_t x = 0; x < width; ++x, i += 4) {
                const uint32_t fl = flags_[i];
                const int32_t mag = (fl & kSig) ? static_cast<int32_t>(values_[i]) : 0;
                row[x] = (fl & kNeg) ? -mag : mag;
            }
        }
    }

private:
    std::vector<uint16_t> flags_;
    std::vector<uint32_t> values_;
    uint32_t w_ = 0, h_ = 0, stripes_ = 0;
    ptrdiff_t ss_ = 0;
    uint32_t orient_ = 0;
    bool vc_ = false;
    uint8_t cx_[kT1NumContexts];
    MqDec mq_;
    RawDec raw_;

    uint32_t bit(bool raw, uint32_t ctx) { return raw ? raw_.get() : mq_.decode(cx_[ctx]); }

    void set_significant(size_t i, int row, uint32_t neg)
    {
        uint16_t *f = flags_.data();
        uint16_t *s = f + i;
        s[0] |= static_cast<uint16_t>(kSig | (neg << 15));
        s[-4] |= static_cast<uint16_t>(kSigE | (neg << 7));
        s[4] |= static_cast<uint16_t>(kSigW | (neg << 6));
        if (row != 0 || !vc_) {
            uint16_t *u = s + (row == 0 ? 3 - ss_ : -1);
            u[0] |= static_cast<uint16_t>(kSigS | (neg << 5));
            u[-4] |= kSigSE;
            u[4] |= kSigSW;
        }
        uint16_t *d = s + (row == 3 ? ss_ - 3 : 1);
        d[0] |= static_cast<uint16_t>(kSigN | (neg << 4));
        d[-4] |= kSigNE;
        d[4] |= kSigNW;
    }
    void becomes_significant(size_t i, int row, int p, bool raw)
    {
        uint32_t neg;
        if (raw) {
            neg = raw_.get();
        } else {
            const uint32_t e = t1_sc_lookup(flags_[i]);
            neg = mq_.decode(cx_[e & 0x1Fu]) ^ (e >> 7);
        }
        values_[i] = 3u << p;
        set_significant(i, row, neg);
    }
    size_t first(uint32_t s) const { return ss_ + 4 + size_t{s} * ss_; }
    uint32_t rows(uint32_t s) const { return h_ - 4 * s < 4 ? h_ - 4 * s : 4; }

    void spp(int p, bool raw)
    {
        for (uint32_t s = 0; s < stripes_; ++s) {
            size_t i = first(s);
            for (uint32_t x = 0; x < w_; ++x, i += 4)
                for (uint32_t r = 0; r < rows(s); ++r) {
                    const uint32_t fl = flags_[i + r];
                    if ((fl & kSig) || !(fl & kNeighbours)) continue;
                    const uint32_t b = bit(raw, t1_zc_context(orient_, fl));
                    flags_[i + r] = static_cast<uint16_t>(fl | kVisit);
                    if (b) becomes_significant(i + r, int(r), p, raw);
                }
        }
    }
    void mrp(int p, bool raw)
    {
        for (uint32_t s = 0; s < stripes_; ++s) {
            size_t i = first(s);
            for (uint32_t x = 0; x < w_; ++x, i += 4)
                for (uint32_t r = 0; r < rows(s); ++r) {
                    const uint32_t fl = flags_[i + r];
                    if ((fl & (kSig | kVisit)) != kSig) continue;
                    const uint32_t b = bit(raw, t1_mr_context(fl));
                    flags_[i + r] = static_cast<uint16_t>(fl | kRefined);
                    values_[i + r] = values_[i + r] - (1u << p) + (b << (p + 1));
                }
        }
    }
    void cup_sample(size_t i, int row, int p)
    {
        const uint32_t fl = flags_[i];
        if (fl & (kSig | kVisit)) return;
        if (mq_.decode(cx_[t1_zc_context(orient_, fl)])) becomes_significant(i, row, p, false);
    }
    void cup(int p, bool segmentation)
    {
        for (uint32_t s = 0; s < stripes_; ++s) {
            size_t i = first(s);
            const uint32_t n = rows(s);
            for (uint32_t x = 0; x < w_; ++x, i += 4) {
                int from = 0;
                bool all_zero = n == 4;
                for (uint32_t r = 0; r < n && all_zero; ++r)
                    all_zero = (flags_[i + r] & (kSig | kNeighbours | kVisit)) == 0;
                if (all_zero) {
                    if (!mq_.decode(cx_[kT1CtxRl])) continue;
                    const uint32_t hi = mq_.decode(cx_[kT1CtxUni]);
                    const uint32_t lo = mq_.decode(cx_[kT1CtxUni]);
                    from = static_cast<int>(hi * 2 + lo);
                    becomes_significant(i + from, from, p, false);
                    ++from;
                }
                for (uint32_t r = static_cast<uint32_t>(from); r < n; ++r) cup_sample(i + r, int(r), p);
                for (uint32_t r = 0; r < n; ++r) flags_[i + r] &= static_cast<uint16_t>(~kVisit);
            }
        }
        if (segmentation)
            for (int k = 0; k < 4; ++k) mq_.decode(cx_[kT1CtxUni]);
    }
};

}  // namespace t1oracle
}  // namespace j2kc
