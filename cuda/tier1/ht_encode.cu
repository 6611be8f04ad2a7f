/**
 * @file ht_encode.cu
 * @brief CUDA HTJ2K block encoder (ISO/IEC 15444-15 cleanup pass and coding
 * sets), byte-identical to encode_ht_code_block(), and the chosen sets'
 * tables for the GPU Tier-2 (ht_coding_sets.h).
 *
 * One cleanup pass a block (a fixed step, or lossless) is coded by a warp a
 * block: every quad's significance, exponents and context follow from the
 * indices alone (the quads above and on the left only through their
 * significance and exponents, which a first sweep puts in shared memory), so
 * lanes code a quad pair each through the shared ht_code_quad, and prefix
 * sums of their bit counts place their VLC and MagSgn bits in a chunk's bit
 * strings; the lanes then cut the strings into bytes, 32 at a time, up to the
 * first byte whose stuffing moves the ones after it. MEL's symbols, few in
 * busy blocks and runs in empty ones, go through one lane.
 *
 * Coding sets (rate control: several cleanups with their refinement passes)
 * take a warp a block too, its sets in turn: each cleanup as above at the
 * set's plane, SigProp's stripe groups by the lanes as a wavefront (a lane a
 * stripe), MagRef 32 samples at a time, and the sets' records and ranking of
 * ht_encode_job.h on lane 0.
 */
#include <cuda_runtime.h>

#include "common/cuda_util.cuh"
#include "tier1/ht_block_encoder.h"
#include "tier1/ht_encode_job.h"

namespace j2kc {
namespace {

constexpr uint32_t kLanes = 32;
constexpr uint32_t kFullMask = 0xFFFFFFFFu;
constexpr uint32_t kCleanupWarpsPerCta = 4;
/** Quads of a block: (w + 1)(h + 1) / 4 at most, largest where w + h is (one side at its limit). */
constexpr uint32_t kMaxQuads = (ht::kMaxSamples + ht::kMaxSide + ht::kMaxSamples / ht::kMaxSide + 1) / 4 + 1;
/** A chunk is a quad pair a lane. Bits of a pair: MagSgn at most 31 a sample (planes <= 30), VLC two
 *  7-bit codewords and two 12-bit U-VLC codes; a stream keeps fewer than 8 bits from the chunk before. */
constexpr uint32_t kChunkMagSgnBits = 7 + kLanes * 8 * 31;
constexpr uint32_t kChunkVlcBits = 7 + kLanes * (2 * 7 + 2 * 12);
/** Words of a bit string, with one to read past its end. */
constexpr uint32_t kMagSgnWords = kChunkMagSgnBits / 32 + 2;
constexpr uint32_t kVlcWords = kChunkVlcBits / 32 + 2;
/** The packed prefix sum of a lane's MagSgn, VLC and MEL counts: fields wide enough for a chunk's sums. */
constexpr uint32_t kVlcShift = 13, kMelShift = 24;
static_assert(kChunkMagSgnBits < (1u << kVlcShift) && kChunkVlcBits < (1u << (kMelShift - kVlcShift)) &&
                  3 * kLanes < (1u << (32 - kMelShift)),
              "chunk sums overflow their fields");

/** A warp's shared memory. */
struct CleanupArea {
    uint16_t quad[kMaxQuads];  ///< rho | e_1 << 4 | e_3 << 9 of every quad (its bottom exponents)
    uint32_t magsgn[kMagSgnWords];
    uint32_t vlc[kVlcWords];
    uint32_t mel[(3 * kLanes + 31) / 32];  ///< the chunk's MEL symbols: 1 for an event
};

/** Stripe groups of a block: ceil(w / 4) ceil(h / 4) <= (w + 3)(h + 3) / 16, largest where w + h is. */
constexpr uint32_t kMaxGroups = (ht::kMaxSamples + 3 * (ht::kMaxSide + ht::kMaxSamples / ht::kMaxSide) + 9) / 16 + 1;

/** Words of the SigProp pass's bits end to end (at most two a sample), with one to read past its end. */
constexpr uint32_t kSigPropWords = 2 * ht::kMaxSamples / 32 + 2;

/** Every stripe group's samples (HtGroupSamples' masks), read before SigProp's wavefront so that its
 *  steps wait on no coefficient, and the samples each made significant. */
struct SigPropGroups {
    uint16_t significant[kMaxGroups], one[kMaxGroups], negative[kMaxGroups], fresh[kMaxGroups];
};

/** A warp's shared memory in the SigProp pass: every stripe group's bits, in coding order, and their count;
 *  the groups' samples, then in their place the pass's bit string. */
struct SigPropArea {
    uint32_t bits[kMaxGroups];
    uint8_t count[kMaxGroups];
    union {
        SigPropGroups groups;
        uint32_t string[kSigPropWords];
    };
};

/** A warp's shared memory, the cleanup's or SigProp's (which follows it). */
union WarpArea {
    CleanupArea cleanup;
    SigPropArea sigprop;
};

__device__ uint32_t quad_rho(uint32_t info) { return info & 0xFu; }
__device__ uint32_t quad_e1(uint32_t info) { return (info >> 4) & 0x1Fu; }
__device__ uint32_t quad_e3(uint32_t info) { return (info >> 9) & 0x1Fu; }
__device__ uint32_t quad_bl(uint32_t info) { return (info >> 1) & 1u; }
__device__ uint32_t quad_br(uint32_t info) { return (info >> 3) & 1u; }

/** ORs the n low bits of `value` (the rest zero) into a bit string at bit `pos` (LSB first). */
__device__ void or_bits(uint32_t *words, uint32_t pos, uint64_t value, uint32_t n)
{
    if (n == 0) return;
    const uint32_t w = pos >> 5, s = pos & 31u;
    atomicOr(words + w, static_cast<uint32_t>(value << s));
    const uint64_t rest = value >> (32 - s);
    if (n + s > 32) atomicOr(words + w + 1, static_cast<uint32_t>(rest));
    if (n + s > 64) atomicOr(words + w + 2, static_cast<uint32_t>(rest >> 32));
}

/** n <= 8 bits of a bit string from bit `pos`. */
__device__ uint32_t read_bits(const uint32_t *words, uint32_t pos, uint32_t n)
{
    const uint32_t w = pos >> 5;
    const uint64_t pair = words[w] | (uint64_t{words[w + 1]} << 32);
    return static_cast<uint32_t>(pair >> (pos & 31u)) & ((1u << n) - 1u);
}

/** A lane's VLC bits of its pair, in writing order. */
struct VlcBits {
    uint64_t bits = 0;
    uint32_t len = 0;
    __device__ void put(uint32_t b, uint32_t n)
    {
        bits |= uint64_t{htenc::ht_low_bits(b, n)} << len;
        len += n;
    }
};

/** A lane's MEL symbols of its pair, in order (at most 3). */
struct MelSymbols {
    uint32_t count = 0, events = 0;
    __device__ void encode(bool event)
    {
        events |= uint32_t{event} << count;
        ++count;
    }
};

/** MagSgn bit count of a pair. */
struct BitCount {
    uint32_t len = 0;
    __device__ void put(uint32_t, uint32_t n) { len += n; }
};

/** MagSgn bits of a pair into the chunk's string from its place. */
struct SharedBits {
    uint32_t *words;
    uint32_t pos;
    __device__ void put(uint32_t b, uint32_t n)
    {
        or_bits(words, pos, htenc::ht_low_bits(b, n), n);
        pos += n;
    }
};

/** Advances a stream by n bytes as HtByteSink::append would (dropping those past its capacity). */
__device__ void sink_advance(htenc::HtByteSink &sink, uint32_t n)
{
    const uint32_t room = sink.capacity > sink.pos ? sink.capacity - sink.pos : 0;
    if (n > room) sink.overflow = true;
    sink.pos += n < room ? n : room;
}

/**
 * Cuts the MagSgn string (bits [0, total), the writer's pending bits first)
 * into bytes as HtMagSgnWriter::put: each lane takes a byte, 8 bits (lane 0:
 * max_bits), kept up to the first 0xFF (whose next byte carries 7). Leaves
 * the bits short of a byte in the writer, as put does.
 */
__device__ void cut_magsgn(const uint32_t *words, uint32_t total, htenc::HtMagSgnWriter &ms, uint32_t lane)
{
    uint32_t off = 0;
    for (;;) {
        const uint32_t first = ms.max_bits;
        const uint32_t start = lane == 0 ? off : off + first + 8 * (lane - 1);
        const uint32_t width = lane == 0 ? first : 8u;
        const bool ready = start + width <= total;
        const uint32_t byte = ready ? read_bits(words, start, width) : 0u;
        const uint32_t ready_lanes = __ballot_sync(kFullMask, ready);
        if (ready_lanes == 0) break;
        const uint32_t ff = __ballot_sync(kFullMask, ready && byte == 0xFFu);
        uint32_t n = __popc(ready_lanes);
        if (ff) n = min(n, static_cast<uint32_t>(__ffs(ff)));
        if (lane < n && ms.pos + lane < ms.capacity) ms.buf[ms.pos + lane] = static_cast<uint8_t>(byte);
        const uint32_t last = __shfl_sync(kFullMask, byte, n - 1);
        sink_advance(ms, n);
        off += first + 8 * (n - 1);
        ms.max_bits = last == 0xFFu ? 7u : 8u;
    }
    ms.used = total - off;
    ms.tmp = ms.used ? read_bits(words, off, ms.used) : 0u;
}

/**
 * Cuts the VLC string into bytes as HtVlcWriter::put: each lane takes 8
 * bits, or 7 when the byte before is above 0x8F and they are all ones (the
 * top bit stuffed), kept up to the first stuffed byte. Bits past `total` are
 * zero.
 */
__device__ void cut_vlc(const uint32_t *words, uint32_t total, htenc::HtVlcWriter &vlc, uint32_t lane)
{
    uint32_t off = 0;
    for (;;) {
        const uint32_t start = off + 8 * lane;
        const uint32_t avail = total > start ? total - start : 0u;
        const uint32_t bits = avail >= 7 ? read_bits(words, start, 8) : 0u;
        const uint32_t before = __shfl_up_sync(kFullMask, bits, 1);
        const bool after_above_8f = lane == 0 ? vlc.last_above_8f : before > 0x8Fu;
        const bool stuffed = after_above_8f && avail >= 7 && (bits & 0x7Fu) == 0x7Fu;
        const bool ready = stuffed || avail >= 8;
        const uint32_t byte = stuffed ? 0x7Fu : bits;
        const uint32_t ready_lanes = __ballot_sync(kFullMask, ready);
        const uint32_t stuffed_lanes = __ballot_sync(kFullMask, stuffed);
        uint32_t n = ready_lanes == kFullMask ? kLanes : static_cast<uint32_t>(__ffs(~ready_lanes)) - 1;
        if (stuffed_lanes) n = min(n, static_cast<uint32_t>(__ffs(stuffed_lanes)));
        if (n == 0) break;
        if (lane < n && vlc.pos + lane < vlc.capacity) vlc.buf[vlc.pos + lane] = static_cast<uint8_t>(byte);
        const uint32_t last = __shfl_sync(kFullMask, byte, n - 1);
        const uint32_t last_stuffed = (stuffed_lanes >> (n - 1)) & 1u;
        sink_advance(vlc, n);
        off += 8 * n - last_stuffed;
        vlc.last_above_8f = last > 0x8Fu;
    }
    vlc.used = total - off;
    vlc.tmp = vlc.used ? read_bits(words, off, vlc.used) : 0u;
}

/** Inclusive warp prefix sum. */
__device__ uint32_t warp_inclusive_sum(uint32_t v, uint32_t lane)
{
    for (uint32_t d = 1; d < kLanes; d *= 2) {
        const uint32_t o = __shfl_up_sync(kFullMask, v, d);
        if (lane >= d) v += o;
    }
    return v;
}

/** A lane's quad pair of a chunk, coded into bit strings of its own. */
struct PairCode {
    htenc::HtQuad q[2];
    htenc::HtQuadCode code[2];
    VlcBits vlc;
    MelSymbols mel;
    BitCount magsgn;
};

/** Codes pair `pair` (row-major over the line pairs) as ht_encode_cleanup's loops do at plane p. */
__device__ void code_pair(const CleanupArea &a, const int32_t *coeffs, size_t stride, uint32_t width, uint32_t height,
                          uint32_t p, uint32_t quads, uint32_t pairs_across, uint32_t pair, PairCode &pc)
{
    const uint32_t row = pair / pairs_across, jj = 2 * (pair - row * pairs_across);
    const bool second = jj + 1 < quads;
    uint64_t distortion = 0;  // counted by the first sweep
    uint32_t or_magnitude = 0;
    htenc::ht_load_quad(coeffs, stride, width, height, 2 * jj, 2 * row, p, 0, pc.q[0], distortion, or_magnitude);
    pc.q[1] = htenc::HtQuad{};
    if (second)
        htenc::ht_load_quad(coeffs, stride, width, height, 2 * jj + 2, 2 * row, p, 0, pc.q[1], distortion, or_magnitude);
    pc.code[1] = htenc::HtQuadCode{0, 0, 0};
    if (row == 0) {
        const uint32_t c0 = jj == 0 ? 0u : htenc::ht_first_line_context(quad_rho(a.quad[jj - 1]));
        pc.code[0] = htenc::ht_code_quad(pc.q[0], 0, c0, 1, pc.vlc, pc.mel, pc.magsgn);
        if (second)
            pc.code[1] = htenc::ht_code_quad(pc.q[1], 0, htenc::ht_first_line_context(pc.q[0].rho), 1, pc.vlc, pc.mel,
                                             pc.magsgn);
        const uint32_t u0 = pc.code[0].u, u1 = pc.code[1].u;
        if (u0 > 0 && u1 > 0) pc.mel.encode((u0 < u1 ? u0 : u1) > 2);
        htenc::ht_code_first_pair_uvlc(u0, u1, pc.vlc);
        return;
    }
    // The line above as ht_note_bottom leaves it: position k holds the bottom-right
    // sample of quad k - 1 and the bottom-left one of quad k.
    const uint16_t *above = a.quad + (row - 1) * quads;
    auto sig_above = [&](uint32_t k) {
        return (k > 0 ? quad_br(above[k - 1]) : 0u) | (k < quads ? quad_bl(above[k]) : 0u);
    };
    auto e_above = [&](uint32_t k) {
        const uint32_t l = k > 0 ? quad_e3(above[k - 1]) : 0u, r = k < quads ? quad_e1(above[k]) : 0u;
        return l > r ? l : r;
    };
    uint32_t left = jj == 0 ? 0u : htenc::ht_right_column_significant(quad_rho(a.quad[row * quads + jj - 1]));
    for (uint32_t k = 0; k < 2; ++k) {
        if (k == 1 && !second) break;
        const uint32_t at = jj + k;
        const uint32_t context = htenc::ht_later_line_context(sig_above(at), left, sig_above(at + 1));
        const uint32_t ea = e_above(at), eb = e_above(at + 1);
        const uint32_t kappa = htenc::ht_later_line_kappa(pc.q[k].rho, ea > eb ? ea : eb);
        pc.code[k] = htenc::ht_code_quad(pc.q[k], 1, context, kappa, pc.vlc, pc.mel, pc.magsgn);
        left = htenc::ht_right_column_significant(pc.q[k].rho);
    }
    htenc::ht_code_pair_uvlc(pc.code[0].u, pc.code[1].u, pc.vlc);
}

/** MEL's symbols of a chunk (`count`, events set in `events`) through lane 0's encoder. */
__device__ void code_mel_symbols(const uint32_t *events, uint32_t count, htenc::HtMelEncoder &mel)
{
    uint32_t at = 0;
    for (uint32_t w = 0; w * 32 < count; ++w)
        for (uint32_t bits = events[w]; bits; bits &= bits - 1) {
            const uint32_t e = w * 32 + static_cast<uint32_t>(__ffs(bits)) - 1;
            mel.encode_idle(e - at);
            mel.encode(true);
            at = e + 1;
        }
    mel.encode_idle(count - at);
}

/** What the first sweep over a block's quads finds, summed over the warp. */
struct QuadSums {
    uint64_t distortion = 0;  ///< saturating, as the serial sum
    uint32_t or_magnitude = 0;
    bool any_significant = false;
};

/** Puts every quad's significance and bottom exponents in `a.quad`, which
 *  the quads below and on the right read, and sums the block. */
__device__ QuadSums sweep_quads(CleanupArea &a, uint32_t lane, const int32_t *coeffs, size_t stride, uint32_t width,
                                uint32_t height, uint32_t p, int shift, uint32_t quads, uint32_t rows)
{
    QuadSums sums;
    uint32_t rho_any = 0;
    for (uint32_t i = lane; i < quads * rows; i += kLanes) {
        const uint32_t row = i / quads, jj = i - row * quads;
        htenc::HtQuad q;
        htenc::ht_load_quad(coeffs, stride, width, height, 2 * jj, 2 * row, p, shift, q, sums.distortion,
                            sums.or_magnitude);
        a.quad[i] = static_cast<uint16_t>(q.rho | (q.e[1] << 4) | (q.e[3] << 9));
        rho_any |= q.rho;
    }
    for (uint32_t d = kLanes / 2; d > 0; d /= 2) {
        const uint64_t o = __shfl_xor_sync(kFullMask, sums.distortion, d);
        sums.distortion = sums.distortion > ~uint64_t{0} - o ? ~uint64_t{0} : sums.distortion + o;
        sums.or_magnitude |= __shfl_xor_sync(kFullMask, sums.or_magnitude, d);
    }
    sums.any_significant = __ballot_sync(kFullMask, rho_any != 0) != 0;
    return sums;
}

/** The cleanup segment's three writers; the MEL encoder is lane 0's. */
struct CleanupWriters {
    htenc::HtMagSgnWriter ms;
    htenc::HtVlcWriter vlc;
    htenc::HtMelEncoder mel;
};

/** Pairs [base, base + 32) of the block, a lane each, into the writers: the
 *  lanes' bit counts placed by a prefix sum, their bits laid into the
 *  chunk's strings, the strings cut into bytes. */
__device__ void code_chunk(CleanupArea &a, uint32_t lane, const int32_t *coeffs, size_t stride, uint32_t width,
                           uint32_t height, uint32_t p, uint32_t quads, uint32_t pairs_across, uint32_t pairs,
                           uint32_t base, CleanupWriters &w)
{
    PairCode pc{};
    if (base + lane < pairs) code_pair(a, coeffs, stride, width, height, p, quads, pairs_across, base + lane, pc);
    const uint32_t mine = pc.magsgn.len | (pc.vlc.len << kVlcShift) | (pc.mel.count << kMelShift);
    const uint32_t inclusive = warp_inclusive_sum(mine, lane);
    const uint32_t before = inclusive - mine;
    const uint32_t sums = __shfl_sync(kFullMask, inclusive, kLanes - 1);
    const uint32_t ms_total = w.ms.used + (sums & ((1u << kVlcShift) - 1u));
    const uint32_t vlc_total = w.vlc.used + ((sums >> kVlcShift) & ((1u << (kMelShift - kVlcShift)) - 1u));
    const uint32_t mel_count = sums >> kMelShift;

    // The strings start with the bits the writers kept from the chunk before.
    __syncwarp();
    for (uint32_t i = lane; i < ms_total / 32 + 2; i += kLanes)
        a.magsgn[i] = i == 0 ? static_cast<uint32_t>(w.ms.tmp) : 0u;
    for (uint32_t i = lane; i < vlc_total / 32 + 2; i += kLanes)
        a.vlc[i] = i == 0 ? static_cast<uint32_t>(w.vlc.tmp) : 0u;
    if (lane < sizeof(a.mel) / 4) a.mel[lane] = 0;
    __syncwarp();
    or_bits(a.vlc, w.vlc.used + ((before >> kVlcShift) & ((1u << (kMelShift - kVlcShift)) - 1u)), pc.vlc.bits,
            pc.vlc.len);
    or_bits(a.mel, before >> kMelShift, pc.mel.events, pc.mel.count);
    SharedBits magsgn{a.magsgn, w.ms.used + (before & ((1u << kVlcShift) - 1u))};
    htenc::ht_put_magsgn(pc.q[0], pc.code[0], magsgn);
    htenc::ht_put_magsgn(pc.q[1], pc.code[1], magsgn);
    __syncwarp();

    if (lane == 0) code_mel_symbols(a.mel, mel_count, w.mel);
    cut_magsgn(a.magsgn, ms_total, w.ms, lane);
    cut_vlc(a.vlc, vlc_total, w.vlc, lane);
}

/** Terminates the writers (lane 0's state) and lays the segment out as
 *  MagSgn, MEL, then VLC backwards with Scup in its last 12 bits; the
 *  segment's length in `length`. */
__device__ uint32_t finish_segment(uint32_t lane, CleanupWriters &w, uint8_t *out, uint32_t capacity,
                                   const htenc::HtEncodeScratch &scratch, uint32_t &length)
{
    uint32_t status = htenc::kHtEncodeOk;
    if (lane == 0) {
        htenc::ht_terminate_mel_vlc(w.mel, w.vlc);
        w.ms.terminate();
        const uint32_t scup = w.mel.pos + w.vlc.pos;
        length = w.ms.pos + scup;
        if (w.ms.overflow || w.mel.overflow || w.vlc.overflow)
            status = htenc::kHtEncodeOverflow;
        else if (scup > htenc::kMaxScup)
            status = htenc::kHtEncodeScupTooLarge;
        else if (length > capacity)
            status = htenc::kHtEncodeOverflow;
    }
    __syncwarp();
    status = __shfl_sync(kFullMask, status, 0);
    if (status != htenc::kHtEncodeOk) return status;
    length = __shfl_sync(kFullMask, length, 0);
    const uint32_t ms_pos = __shfl_sync(kFullMask, w.ms.pos, 0), mel_pos = __shfl_sync(kFullMask, w.mel.pos, 0);
    const uint32_t vlc_pos = __shfl_sync(kFullMask, w.vlc.pos, 0);
    for (uint32_t i = lane; i < mel_pos; i += kLanes) out[ms_pos + i] = scratch.mel[i];
    for (uint32_t i = lane; i < vlc_pos; i += kLanes) out[length - 1 - i] = scratch.vlc[i];
    __syncwarp();
    if (lane == 0) {
        const uint32_t scup = mel_pos + vlc_pos;
        out[length - 1] = static_cast<uint8_t>(scup >> 4);
        out[length - 2] = static_cast<uint8_t>((out[length - 2] & 0xF0u) | (scup & 0xFu));
    }
    return htenc::kHtEncodeOk;
}

/**
 * ht_encode_cleanup at plane p by a warp: the same status, result and
 * bytes (segment in `out`, MEL and VLC through `scratch`). Geometry and
 * planes (p below num_bitplanes) are checked by the caller.
 */
__device__ uint32_t cleanup_warp(CleanupArea &a, uint32_t lane, const int32_t *coeffs, size_t stride, uint32_t width,
                                 uint32_t height, uint32_t num_bitplanes, uint32_t p, uint8_t *out, uint32_t capacity,
                                 const htenc::HtEncodeScratch &scratch, htenc::HtEncodeResult &result)
{
    result = htenc::HtEncodeResult{};
    if (width == 0 || height == 0) return htenc::kHtEncodeOk;
    const uint32_t quads = htenc::ht_quads_across(width), rows = (height + 1) / 2;
    const QuadSums sums =
        sweep_quads(a, lane, coeffs, stride, width, height, p, t1_distortion_shift(num_bitplanes), quads, rows);
    const uint32_t planes = ht::bit_length(sums.or_magnitude);
    result.data_bitplanes = planes;
    if (planes > num_bitplanes) return htenc::kHtEncodeDataTooDeep;
    if (!sums.any_significant) return htenc::kHtEncodeOk;
    __syncwarp();

    CleanupWriters w;
    w.ms.init(out, capacity);
    w.vlc.init(scratch.vlc, scratch.vlc_capacity);
    w.mel.init(scratch.mel, scratch.mel_capacity);
    const uint32_t pairs_across = (quads + 1) / 2, pairs = pairs_across * rows;
    for (uint32_t base = 0; base < pairs; base += kLanes)
        code_chunk(a, lane, coeffs, stride, width, height, p, quads, pairs_across, pairs, base, w);

    uint32_t length = 0;
    const uint32_t status = finish_segment(lane, w, out, capacity, scratch, length);
    if (status != htenc::kHtEncodeOk) return status;
    result.bytes = length;
    result.distortion = sums.distortion;
    return htenc::kHtEncodeOk;
}

/** One cleanup pass a job, a warp a job (see the file comment). */
__global__ void __launch_bounds__(kCleanupWarpsPerCta *kLanes)
    ht_encode_cleanup_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, uint8_t *out_bytes,
                             GpuCodeBlockResult *__restrict__ results, uint32_t *pass_end, uint64_t *pass_distortion,
                             uint8_t *pass_terminated)
{
    __shared__ CleanupArea areas[kCleanupWarpsPerCta];
    const uint32_t warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
    const uint32_t j = blockIdx.x * kCleanupWarpsPerCta + warp;
    if (j >= num_jobs) return;
    const GpuCodeBlockJob job = jobs[j];
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    res.status = htenc::ht_job_check(job);
    if (res.status == kGpuTier1Ok) {
        const htenc::HtJobContext c = htenc::ht_job_context(job, out_bytes);
        htenc::HtEncodeResult r;
        const uint32_t status = cleanup_warp(areas[warp], lane, c.coeffs, job.stride, job.width, job.height,
                                             job.num_bitplanes, 0, c.out, c.capacity, c.scratch, r);
        if (lane == 0) res = htenc::ht_cleanup_job_result(job, status, r, pass_end, pass_distortion, pass_terminated);
    }
    if (lane == 0) results[j] = res;
}

/** Sum over the warp (every lane gets it). */
__device__ int64_t warp_sum(int64_t v)
{
    for (uint32_t d = kLanes / 2; d > 0; d /= 2) v += __shfl_xor_sync(kFullMask, v, d);
    return v;
}

/**
 * The MagRef pass (ht_encode_refinement's) by a warp: lanes take a stripe's
 * samples in the pass's order (column by column, rows within), a chunk of 32
 * at a time, and lane 0's writer puts the chunk's bits at once. Every lane
 * returns the status and `f`'s MagRef fields.
 */
__device__ uint32_t magref_warp(uint32_t lane, const GpuCodeBlockJob &job, const htenc::HtJobContext &c, uint32_t p,
                                htenc::HtRefinementResult &f)
{
    htenc::HtVlcWriter mr;
    mr.init_magref(c.magref, htenc::ht_magref_bound(job.width, job.height));
    int64_t sum = 0;
    for (uint32_t y0 = 0; y0 < job.height; y0 += 4) {
        const uint32_t rows = job.height - y0 < 4 ? job.height - y0 : 4u, n = rows * job.width;
        for (uint32_t base = 0; base < n; base += kLanes) {
            const uint32_t k = base + lane, x = k / rows;
            uint32_t bit = 0;
            const bool refined =
                k < n && htenc::ht_magref_sample(c.coeffs, job.stride, x, y0 + k - x * rows, p, bit, sum);
            const uint32_t refined_lanes = __ballot_sync(kFullMask, refined);
            const uint32_t rank = __popc(refined_lanes & ((1u << lane) - 1u));
            const uint32_t bits = warp_or(refined && bit ? 1u << rank : 0u);
            const uint32_t count = __popc(refined_lanes);
            if (lane != 0 || count == 0) continue;
            mr.put(bits, count < 16 ? count : 16u);
            if (count > 16) mr.put(bits >> 16, count - 16);
        }
    }
    sum = warp_sum(sum);
    uint32_t status = htenc::kHtEncodeOk;
    if (lane == 0) status = htenc::ht_finish_magref(mr, sum, job.num_bitplanes, p, f);
    f.magref_bytes = __shfl_sync(kFullMask, f.magref_bytes, 0);
    f.magref_distortion = __shfl_sync(kFullMask, f.magref_distortion, 0);
    return __shfl_sync(kFullMask, status, 0);
}

/** Lays the `groups` stripe groups' bits of `a` end to end in a.string (zeroed), a prefix sum of their
 *  counts placing 32 groups at a time; returns the string's length in bits. */
__device__ uint32_t lay_sigprop_bits(SigPropArea &a, uint32_t lane, uint32_t groups)
{
    uint32_t total = 0;
    for (uint32_t base = 0; base < groups; base += kLanes) {
        const uint32_t i = base + lane;
        const uint32_t n = i < groups ? a.count[i] : 0u;
        const uint32_t inclusive = warp_inclusive_sum(n, lane);
        if (n) or_bits(a.string, total + inclusive - n, a.bits[i], n);
        total += __shfl_sync(kFullMask, inclusive, kLanes - 1);
    }
    __syncwarp();
    return total;
}

/** Every stripe group's samples into `a` (ht_group_samples), the groups shared among the lanes. */
__device__ void read_sigprop_groups(SigPropGroups &a, uint32_t lane, const GpuCodeBlockJob &job,
                                    const htenc::HtJobContext &c, uint32_t p, uint32_t across, uint32_t groups)
{
    for (uint32_t i = lane; i < groups; i += kLanes) {
        const uint32_t x0 = 4 * (i % across), y0 = 4 * (i / across);
        const htenc::HtGroupSamples g = htenc::ht_group_samples(
            c.coeffs, job.stride, x0, y0, htenc::ht_group_cols(job.width, x0), htenc::ht_group_rows(job.height, y0), p);
        a.significant[i] = static_cast<uint16_t>(g.significant);
        a.one[i] = static_cast<uint16_t>(g.one);
        a.negative[i] = static_cast<uint16_t>(g.negative);
    }
    __syncwarp();
}

/** The distortion terms of the samples the groups made significant (SigProp at plane p - 1), over the warp. */
__device__ int64_t sigprop_distortion_warp(const SigPropGroups &a, uint32_t lane, const GpuCodeBlockJob &job,
                                           const htenc::HtJobContext &c, uint32_t p, uint32_t across, uint32_t groups)
{
    int64_t sum = 0;
    for (uint32_t i = lane; i < groups; i += kLanes)
        sum += htenc::ht_sigprop_fresh_distortion(c.coeffs, job.stride, 4 * (i % across), 4 * (i / across), p - 1,
                                                  a.fresh[i]);
    return warp_sum(sum);
}

/**
 * ht_encode_sigprop by a warp into `out` (`capacity` bytes). A stripe group
 * reads the outcomes of the groups on its left and of the three above it,
 * and the cleanup's significance of those on its right and below, so the
 * lanes take a stripe each and run as a wavefront, a lane two groups behind
 * the one above it, on the groups' samples read before by every lane; their
 * bits wait in `a`, are laid end to end in the pass's order and cut into
 * bytes as the serial writer's puts would, and the distortion terms of the
 * samples they made significant are summed by every lane after. Every lane
 * returns the status and `f`'s SigProp fields.
 */
__device__ uint32_t sigprop_warp(SigPropArea &a, uint32_t lane, const GpuCodeBlockJob &job,
                                 const htenc::HtJobContext &c, uint32_t p, uint8_t *out, uint32_t capacity,
                                 htenc::HtRefinementResult &f)
{
    const uint32_t across = (job.width + 3u) / 4, stripes = (job.height + 3u) / 4, groups = across * stripes;
    read_sigprop_groups(a.groups, lane, job, c, p, across, groups);
    for (uint32_t first = 0; first < stripes; first += kLanes) {
        const uint32_t lanes = stripes - first < kLanes ? stripes - first : kLanes, s = first + lane;
        for (uint32_t t = 0; t < across + 2 * (lanes - 1); ++t) {
            const uint32_t g = t - 2 * lane;  // wraps before the lane's start: fails the bound
            if (lane < lanes && g < across) {
                const uint32_t at = s * across + g;
                htenc::HtGroupSamples samples;
                samples.significant = a.groups.significant[at];
                samples.one = a.groups.one[at];
                samples.negative = a.groups.negative[at];
                uint32_t fresh;
                a.count[at] = static_cast<uint8_t>(htenc::ht_sigprop_group_bits(samples, job.width, job.height, 4 * g,
                                                                                4 * s, c.sig, a.bits[at], fresh));
                a.groups.fresh[at] = static_cast<uint16_t>(fresh);
            }
            __syncwarp();
        }
    }
    const int64_t sum = sigprop_distortion_warp(a.groups, lane, job, c, p, across, groups);
    __syncwarp();
    for (uint32_t i = lane; i < kSigPropWords; i += kLanes) a.string[i] = 0;  // the groups' samples are spent
    __syncwarp();
    htenc::HtMagSgnWriter sp;
    sp.init(out, capacity);
    cut_magsgn(a.string, lay_sigprop_bits(a, lane, groups), sp, lane);
    __syncwarp();
    uint32_t status = htenc::kHtEncodeOk;
    if (lane == 0) status = htenc::ht_finish_sigprop(sp, sum, job.num_bitplanes, p, f);
    f.sigprop_bytes = __shfl_sync(kFullMask, f.sigprop_bytes, 0);
    f.sigprop_distortion = __shfl_sync(kFullMask, f.sigprop_distortion, 0);
    return __shfl_sync(kFullMask, status, 0);
}

/**
 * The cleanup's significance map at plane p (ht_significance_word's words)
 * by a warp: a ballot covers a word of a row, or for blocks narrower than
 * 32 several rows, each in a span of lanes as wide as the next power of two.
 */
__device__ void mark_significance_warp(uint32_t lane, const GpuCodeBlockJob &job, const htenc::HtJobContext &c,
                                       uint32_t p)
{
    const uint32_t words = htenc::ht_sig_words(job.width);
    const uint32_t span = job.width >= kLanes ? kLanes : 1u << (32 - __clz(job.width - 1u));
    const uint32_t col = lane % span, sub = lane / span;
    for (uint32_t y0 = 0; y0 < job.height; y0 += kLanes / span)
        for (uint32_t w = 0; w < words; ++w) {
            const uint32_t x = kLanes * w + col, y = y0 + sub;
            const bool on = x < job.width && y < job.height && htenc::ht_significant(c.coeffs, job.stride, x, y, p);
            const uint32_t rows = __ballot_sync(kFullMask, on);
            if (col != 0 || y >= job.height) continue;
            c.sig[size_t{y} * words + w] = span == kLanes ? rows : (rows >> (sub * span)) & ((1u << span) - 1u);
        }
}

/**
 * ht_encode_refinement by a warp into `out` (`capacity` bytes): the
 * significance map by every lane, then SigProp and MagRef. Every lane
 * returns the status and `f`.
 */
__device__ uint32_t refinement_warp(WarpArea &a, uint32_t lane, const GpuCodeBlockJob &job,
                                    const htenc::HtJobContext &c, uint32_t p, uint8_t *out, uint32_t capacity,
                                    htenc::HtRefinementResult &f)
{
    f = htenc::HtRefinementResult{};
    mark_significance_warp(lane, job, c, p);
    __syncwarp();
    const uint32_t status = sigprop_warp(a.sigprop, lane, job, c, p, out, capacity, f);
    if (status != htenc::kHtEncodeOk) return status;
    return magref_warp(lane, job, c, p, f);
}

/** ht_encode_set by a warp: the same status, ends, distortions and bytes on every lane. */
__device__ uint32_t set_warp(WarpArea &a, uint32_t lane, const GpuCodeBlockJob &job, const htenc::HtJobContext &c,
                             uint32_t p, uint32_t at, uint32_t (&end)[htenc::kHtSetPasses],
                             uint64_t (&distortion)[htenc::kHtSetPasses], uint32_t &passes, uint32_t &data_bitplanes)
{
    htenc::HtEncodeResult r;
    uint8_t *const out = c.out + at;
    const uint32_t room = c.capacity - at;
    uint32_t status = cleanup_warp(a.cleanup, lane, c.coeffs, job.stride, job.width, job.height, job.num_bitplanes, p,
                                   out, room, c.scratch, r);
    data_bitplanes = r.data_bitplanes;
    passes = 0;
    if (status != htenc::kHtEncodeOk || r.bytes == 0) return status;
    end[0] = r.bytes;
    distortion[0] = r.distortion;
    passes = 1;
    if (p == 0) return htenc::kHtEncodeOk;
    htenc::HtRefinementResult f;
    status = refinement_warp(a, lane, job, c, p, out + r.bytes, room - r.bytes, f);
    __syncwarp();
    if (status == htenc::kHtEncodeOk && lane == 0) status = htenc::ht_place_refinement(c, out, room, r, f);
    if (__shfl_sync(kFullMask, status, 0) != htenc::kHtEncodeOk) return htenc::kHtEncodeOverflow;
    htenc::ht_refinement_ends(r, f, end, distortion);
    passes = 3;
    return htenc::kHtEncodeOk;
}

/** ht_encode_job with sets by a warp: lane 0 keeps the sets' table and returns the result. */
__device__ GpuCodeBlockResult sets_warp(WarpArea &a, uint32_t lane, const GpuCodeBlockJob &job,
                                        htenc::HtCodingSets &sets, uint32_t top_plane, uint8_t *out_bytes,
                                        uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    GpuCodeBlockResult res{};
    res.zero_bitplanes = job.num_bitplanes;
    if (lane == 0) sets.num_sets = sets.num_points = 0;
    res.status = htenc::ht_job_check(job);
    if (res.status != kGpuTier1Ok) return res;
    const htenc::HtJobContext c = htenc::ht_job_context(job, out_bytes);
    uint64_t set_distortion[htenc::kHtMaxSets][htenc::kHtSetPasses] = {};
    uint32_t at = 0, data_bitplanes = 0, lowest, top;
    htenc::ht_set_planes(job, top_plane, lowest, top);
    for (uint32_t p = top; p-- > lowest;) {
        uint32_t end[htenc::kHtSetPasses] = {}, passes = 0;
        uint64_t distortion[htenc::kHtSetPasses] = {};
        const uint32_t status = set_warp(a, lane, job, c, p, at, end, distortion, passes, data_bitplanes);
        if (status != htenc::kHtEncodeOk) {
            res.status = htenc::ht_job_status(status);
            res.data_bitplanes = static_cast<uint8_t>(data_bitplanes);
            return res;
        }
        if (passes == 0) continue;
        if (lane == 0) htenc::ht_record_set(job, sets, set_distortion, at, p, end, distortion, passes);
        at += end[passes - 1];
    }
    if (lane != 0) return res;
    return htenc::ht_sets_job_result(job, sets, set_distortion, at, data_bitplanes, pass_end, pass_distortion,
                                     pass_terminated);
}

/** A job's coding sets (ht_encode_job with sets), a warp a job. */
__global__ void __launch_bounds__(kCleanupWarpsPerCta *kLanes)
    ht_encode_sets_kernel(const GpuCodeBlockJob *__restrict__ jobs, uint32_t num_jobs, htenc::HtCodingSets *sets,
                          const uint32_t *top_plane, uint8_t *out_bytes, GpuCodeBlockResult *__restrict__ results,
                          uint32_t *pass_end, uint64_t *pass_distortion, uint8_t *pass_terminated)
{
    __shared__ WarpArea areas[kCleanupWarpsPerCta];
    const uint32_t warp = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
    const uint32_t j = blockIdx.x * kCleanupWarpsPerCta + warp;
    if (j >= num_jobs) return;
    const GpuCodeBlockResult res = sets_warp(areas[warp], lane, jobs[j], sets[j], *top_plane, out_bytes, pass_end,
                                             pass_distortion, pass_terminated);
    if (lane == 0) results[j] = res;
}

__global__ void ht_top_plane_kernel(const uint64_t *model, uint64_t budget, uint32_t *top_plane)
{
    *top_plane = htenc::ht_sets_top_plane(model, budget);
}

__global__ void ht_choose_sets_kernel(const GpuCodeBlockJob *__restrict__ jobs,
                                      const htenc::HtCodingSets *__restrict__ sets, uint32_t num_jobs,
                                      const uint16_t *__restrict__ points, HtChosenSetTables out)
{
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j > num_jobs) return;
    out.pass_offset[j] = j * htenc::kHtSetPasses;
    if (j == num_jobs) return;
    const htenc::HtChosenSet c = htenc::ht_chosen_set(sets[j], points[j], jobs[j].num_bitplanes);
    out.passes[j] = static_cast<uint16_t>(c.passes);
    out.num_passes[j] = c.passes;
    out.zero_bitplanes[j] = c.zero_bitplanes;
    out.byte_offset[j] = jobs[j].out_offset + 1 + c.start;
    for (uint32_t k = 0; k < htenc::kHtSetPasses; ++k) {
        out.pass_end[j * htenc::kHtSetPasses + k] = c.end[k];
        out.pass_terminated[j * htenc::kHtSetPasses + k] = htenc::ht_set_pass_terminated(k);
    }
}

}  // namespace

void ht_encode_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, htenc::HtCodingSets *sets, const uint32_t *top_plane,
                   uint8_t *out_bytes, GpuCodeBlockResult *results, uint32_t *pass_end, uint64_t *pass_distortion,
                   uint8_t *pass_terminated, void *stream)
{
    if (num_jobs == 0) return;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    const uint32_t ctas = (num_jobs + kCleanupWarpsPerCta - 1) / kCleanupWarpsPerCta;
    if (sets)
        ht_encode_sets_kernel<<<ctas, kCleanupWarpsPerCta * kLanes, 0, s>>>(
            jobs, num_jobs, sets, top_plane, out_bytes, results, pass_end, pass_distortion, pass_terminated);
    else
        ht_encode_cleanup_kernel<<<ctas, kCleanupWarpsPerCta * kLanes, 0, s>>>(
            jobs, num_jobs, out_bytes, results, pass_end, pass_distortion, pass_terminated);
    check_cuda(cudaGetLastError(), "HT encode kernel launch");
}

void ht_plan_sets_gpu(const GpuCodeBlockJob *jobs, uint32_t num_jobs, uint64_t budget, uint64_t *model,
                      uint32_t *top_plane, void *stream)
{
    tier1_plane_model_gpu(jobs, num_jobs, model, stream);
    ht_top_plane_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(model, budget, top_plane);
    check_cuda(cudaGetLastError(), "HT top plane kernel launch");
}

void ht_choose_sets_gpu(const GpuCodeBlockJob *jobs, const htenc::HtCodingSets *sets, uint32_t num_jobs,
                        const uint16_t *points, const HtChosenSetTables &out, void *stream)
{
    constexpr uint32_t kThreads = 256;
    ht_choose_sets_kernel<<<(num_jobs + kThreads) / kThreads, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        jobs, sets, num_jobs, points, out);
    check_cuda(cudaGetLastError(), "HT set choice kernel launch");
}

}  // namespace j2kc
