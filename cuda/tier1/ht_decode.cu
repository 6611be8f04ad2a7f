/**
 * @file ht_decode.cu
 * @brief CUDA HT block decoder (ISO/IEC 15444-15): a warp per HT code-block,
 * built from the pieces of the shared HT block decoder
 * (ht_block_decoder_core.h) that the CPU's Tier1Decoder runs, so the
 * coefficients are the CPU's bit for bit.
 *
 * Why a warp a block: the cleanup pass's MEL and VLC streams are one serial
 * chain per block, but its MagSgn values and the samples need not be; a
 * thread a block did all of it alone, beside one other lane of its warp,
 * and wrote each sample alone. Here one lane reads the MEL and VLC streams
 * of the whole block into quad records in shared memory (significance,
 * known exponents, U-VLC residual), then the warp decodes MagSgn a row of
 * quads at a time, a quad a lane: the exponent bound U of a quad needs only
 * the row above (7.3.7), so the row's MagSgn bit counts are known together
 * and a prefix sum over the lanes gives each quad where its bits start. The
 * MagSgn stream is unstuffed into a ring of words in shared memory, 32 bytes
 * a step, the stuffing rule of ForwardLsb::refill (a byte after 0xFF gives
 * seven bits, 0xFF past the end). SigProp and MagRef go over the lanes a
 * column each, 32 columns of a stripe at a time, both passes a stripe before
 * the next, their streams unstuffed into two halves of the ring: a MagRef
 * bit's place is the count of refined samples before it; SigProp's members
 * and bits are guessed and read again until they stop changing
 * (sigprop_stripe). The last pass stores the samples in two's complement, so
 * a block's samples are read back from memory at most once, a stripe's at a
 * time (a warp's block is a chain of dependent steps; a load's wait is the
 * longest of them). Clearing goes a row at a time over the lanes, so the
 * stores of a row are contiguous.
 *
 * The one lane's VLC pass is most of a block's issued instructions, so a
 * warp takes several neighbouring positions of the batch at once (blocks of
 * like length, or the same block of several frames) and runs their VLC
 * passes together, a lane each, as far as their records fit its area.
 *
 * A kernel of its own, beside the Part-1 one (tier1_decode.cu), taking the
 * batch's positions in the same order (longest blocks first, the tables
 * round robin), skipping the Part-1 jobs. A block's loops are bounded by
 * its size and its segments, and every byte read lies in its segments, so a
 * hostile stream cannot hang the kernel or read past them.
 */
#include <cuda_runtime.h>

#include <algorithm>

#include "common/cuda_util.cuh"
#include "tier1/ht_decode_cuda.h"
#include "tier1/ht_decode_job.h"
#include "tier1/tier1_decode_cuda.h"

namespace j2kc {
namespace {

constexpr uint32_t kWarpSize = 32;
constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr uint32_t kWarpsPerCta = 4;
/// Quads of the largest block the checks let through: ceil(w/2) ceil(h/2) <=
/// (w h + w + h + 1) / 4, with w h <= 4096 and w + h <= 1024 + 4.
constexpr uint32_t kMaxQuads = (ht::kMaxSamples + ht::kMaxSide + 4 + 1) / 4;
/// A warp's quad records (vlc_record, 16 bits each): as many blocks at once
/// as fit (six of 32 x 32, three of 64 x 64), so that their VLC passes, a
/// lane's serial chain each, run side by side, in the 6 KB that let seven
/// CTAs share a multiprocessor.
constexpr uint32_t kAreaQuads = 3072;
static_assert(kAreaQuads >= kMaxQuads, "the largest block fits alone");
/// Jobs a warp takes together at most: lanes below this read their MEL and VLC streams at once.
constexpr uint32_t kGroup = 6;
/// The MagSgn ring: 8192 bits, twice what a step of 32 quads can take
/// (32 x 4 samples x 31 bits) plus a fill step, so no bit still to be read is
/// overwritten.
constexpr uint32_t kRingWords = 256;
/// The refinement passes split the ring between SigProp and MagRef: a stripe's
/// 32 columns read at most 256 bits of SigProp (a significance bit and a sign
/// a sample) and 128 of MagRef, each filled ahead by at most that and a fill
/// step (256 bits), far inside 4096 bits.
constexpr uint32_t kRefineRingWords = kRingWords / 2;
/// SigProp bits a stripe's 32 columns read at most.
constexpr uint32_t kStripeSigPropBits = 2 * 4 * kWarpSize;
/// MagRef bits a stripe's 32 columns read at most.
constexpr uint32_t kStripeMagRefBits = 4 * kWarpSize;
/// Columns of a SigProp group (7.4): its signs follow its significance bits.
constexpr uint32_t kGroupColumns = 4;
/// Shared memory a multiprocessor gives its CTAs (Hopper: 228 KB, 1 KB of it
/// reserved a CTA).
constexpr uint32_t kSmemPerSm = 228 * 1024, kSmemReservedPerCta = 1024;
/// Warps enough to fill the largest GPUs several times over; the rest loop.
constexpr uint32_t kMaxWarps = 1u << 15;

/** A warp's shared memory: its blocks' quad records and the MagSgn ring. */
struct WarpArea {
    uint32_t ring[kRingWords];
    uint16_t quads[kAreaQuads];
};

/**
 * The launch bound: as many CTAs a multiprocessor as their shared memory
 * allows (seven), so that the registers do not allow fewer.
 */
constexpr uint32_t kCtasPerSm = kSmemPerSm / (kWarpsPerCta * sizeof(WarpArea) + kSmemReservedPerCta);

/** Whether every CxtVLC codeword's EMB pattern lies in its significance: e_1 in e_k in rho. */
constexpr bool emb_within_rho(const HtVlcRow *rows, size_t n)
{
    for (size_t r = 0; r < n; ++r)
        if ((rows[r].e_1 & ~rows[r].e_k) != 0 || (rows[r].e_k & ~rows[r].rho) != 0) return false;
    return true;
}
static_assert(emb_within_rho(kHtVlcFirstRow, kHtVlcFirstRowCount) &&
                  emb_within_rho(kHtVlcOtherRows, kHtVlcOtherRowsCount),
              "vlc_record's two nibbles hold rho, e_k and e_1");

/**
 * What the VLC pass keeps for a quad until MagSgn, in 16 bits so that a
 * warp's area holds twice the blocks: a sample is insignificant, significant
 * (low nibble), of known exponent (high nibble) or both, its "1" bit (e_1,
 * within e_k within rho); then the U-VLC residual u (at most 98: prefix 5,
 * suffix 31, extension 4 x 15, and 2 in the first row).
 */
__device__ __forceinline__ uint16_t vlc_record(const ht::QuadSig &q, uint32_t u)
{
    return static_cast<uint16_t>(((q.rho & ~q.e_k) | q.e_1) | (q.e_k << 4) | (u << 8));
}
__device__ __forceinline__ uint32_t vlc_record_rho(uint32_t r) { return (r | (r >> 4)) & 0xFu; }

/** A quad record of MagSgn (ht::quad_record) in 16 bits: rho, then the exponents (at most 32) of its bottom samples. */
__device__ __forceinline__ uint16_t pack_quad_record(uint32_t rho, uint32_t e_bl, uint32_t e_br)
{
    return static_cast<uint16_t>(rho | (e_bl << 4) | (e_br << 10));
}
__device__ __forceinline__ uint32_t unpack_quad_record(uint32_t r)
{
    return ht::quad_record(r & 0xFu, (r >> 4) & 0x3Fu, r >> 10);
}

/**
 * Lane 0: the MEL and VLC streams of the whole cleanup segment into a
 * vlc_record a quad, row after row (the context of a row reads the rho of
 * the records above, which the VLC pass alone writes).
 */
__device__ void vlc_pass(const uint8_t *d, uint32_t lcup, uint32_t pcup, uint32_t qw, uint32_t qh, uint16_t *quads)
{
    ht::MelDecoder mel;
    ht::BackwardLsb vlc;
    ht::cleanup_streams(d, lcup, pcup, mel, vlc);
#pragma unroll 1
    for (uint32_t qy = 0; qy < qh; ++qy) {
        uint16_t *cur = quads + qy * qw;
        const uint16_t *above = qy > 0 ? cur - qw : cur;  // read below the first row only
        uint32_t c = 0;
#pragma unroll 1
        for (uint32_t qx = 0; qx < qw; qx += 2) {
            const bool has_b = qx + 1 < qw;
            ht::QuadSig a, b;
            uint32_t ua, ub;
            if (qy == 0) {
                ht::decode_pair_first_row(vlc, mel, has_b, c, a, b, ua, ub);
            } else {
                // The context reads the significance of the records around.
                const uint32_t nw = qx > 0 ? vlc_record_rho(above[qx - 1]) : 0u;
                const uint32_t nf = has_b ? vlc_record_rho(above[qx + 1]) : 0u;
                const uint32_t nf2 = qx + 2 < qw ? vlc_record_rho(above[qx + 2]) : 0u;
                const uint32_t left = qx > 0 ? vlc_record_rho(cur[qx - 1]) : 0u;
                ht::decode_pair_other_row(vlc, mel, has_b, nw, vlc_record_rho(above[qx]), nf, nf2, left, a, b, ua, ub);
            }
            cur[qx] = vlc_record(a, ua);
            if (has_b) cur[qx + 1] = vlc_record(b, ub);
        }
    }
}

__device__ __forceinline__ uint32_t warp_inclusive_sum(uint32_t v, uint32_t lane)
{
#pragma unroll
    for (uint32_t d = 1; d < kWarpSize; d *= 2) {
        const uint32_t t = __shfl_up_sync(kFullMask, v, d);
        if (lane >= d) v += t;
    }
    return v;
}

/**
 * Appends a byte a lane, n of its bits (7 or 8), to a ring of kWords words
 * after its `filled` bits, in lane order: all lanes; `filled` grows by the
 * bits of all.
 */
template <uint32_t kWords>
__device__ __forceinline__ void ring_append(uint32_t *ring, uint32_t &filled, uint32_t b, uint32_t n, uint32_t lane)
{
    // Words from the first not yet touched: zero what this step ORs into.
    const uint32_t fresh = (filled + 31) >> 5;
    if (lane < 9) ring[(fresh + lane) % kWords] = 0;
    __syncwarp();
    const uint32_t end = warp_inclusive_sum(n, lane);
    const uint32_t at = filled + end - n, bits = b & ((1u << n) - 1u);
    const uint32_t word = at >> 5, shift = at & 31u;
    atomicOr(&ring[word % kWords], bits << shift);
    if (shift + n > 32) atomicOr(&ring[(word + 1) % kWords], bits >> (32 - shift));
    filled += __shfl_sync(kFullMask, end, kWarpSize - 1);
    __syncwarp();
}

/**
 * A forward stream (MagSgn, SigProp) unstuffed into the ring up to bit
 * `need` (at least), 32 bytes a step (ForwardLsb's rule): all lanes.
 */
struct ForwardRing {
    const uint8_t *data;
    uint32_t size;
    uint32_t fill_byte;   ///< read past the end: 0xFF for MagSgn, 0 for SigProp
    uint32_t filled = 0;  ///< bits in the ring so far (absolute)
    uint32_t next = 0;    ///< the next byte of the stream
    uint32_t last = 0;    ///< the byte read last, which decides the next one's stuffing

    __device__ ForwardRing(const uint8_t *d, uint32_t n, uint32_t fill) : data(d), size(n), fill_byte(fill) {}

    template <uint32_t kWords = kRingWords>
    __device__ __forceinline__ void fill(uint32_t *ring, uint32_t need, uint32_t lane)
    {
#pragma unroll 1
        while (filled < need) {
            const uint32_t j = next + lane;
            const uint32_t b = j < size ? data[j] : fill_byte;
            uint32_t before = __shfl_up_sync(kFullMask, b, 1);
            if (lane == 0) before = last;
            ring_append<kWords>(ring, filled, b, ht::forward_byte_bits(before), lane);
            last = __shfl_sync(kFullMask, b, kWarpSize - 1);
            next += kWarpSize;
        }
    }
};

/**
 * The MagRef stream, read backward from the end of the refinement segment
 * (zeros before its start), unstuffed into the ring up to bit `need` (at
 * least), 32 bytes a step (BackwardLsb's rule): all lanes.
 */
struct BackwardRing {
    const uint8_t *data;
    uint32_t size;
    uint32_t filled = 0;   ///< bits in the ring so far (absolute)
    uint32_t next = 0;     ///< bytes read so far, from the end
    uint32_t last = 0xFF;  ///< the byte read last (as if one of 0xFF came before the first)

    __device__ BackwardRing(const uint8_t *d, uint32_t n) : data(d), size(n) {}

    template <uint32_t kWords = kRingWords>
    __device__ __forceinline__ void fill(uint32_t *ring, uint32_t need, uint32_t lane)
    {
#pragma unroll 1
        while (filled < need) {
            const uint32_t j = next + lane;
            const uint32_t b = j < size ? data[size - 1 - j] : 0u;
            uint32_t before = __shfl_up_sync(kFullMask, b, 1);
            if (lane == 0) before = last;
            ring_append<kWords>(ring, filled, b, ht::backward_byte_bits(before, b), lane);
            last = __shfl_sync(kFullMask, b, kWarpSize - 1);
            next += kWarpSize;
        }
    }
};

/** m <= 31 bits of a ring of kWords words from absolute bit `at`, the first in bit 0. */
template <uint32_t kWords = kRingWords>
__device__ __forceinline__ uint32_t ring_bits(const uint32_t *ring, uint32_t at, uint32_t m)
{
    const uint32_t word = at >> 5;
    const uint32_t v = __funnelshift_r(ring[word % kWords], ring[(word + 1) % kWords], at & 31u);
    return v & ((1u << m) - 1u);
}

/**
 * The cleanup pass of a block over the warp once vlc_pass has filled
 * `quads` (decode_cleanup's results, every sample of the block written):
 * MagSgn from d[0, pcup). The samples are stored in two's complement when
 * `final` (no refinement pass follows, so no pass reads them back), else in
 * sign and magnitude. kHtOk or why the block is corrupt.
 */
__device__ uint32_t magsgn_warp(const ht::CleanupFrame &f, const uint8_t *d, uint32_t pcup, bool final, uint16_t *quads,
                                uint32_t *ring, uint32_t lane)
{
    const uint32_t qw = (f.width + 1) / 2, qh = (f.height + 1) / 2;

    ForwardRing ms(d, pcup, 0xFF);
    uint32_t cursor = 0;  // the row step's first MagSgn bit
    bool bad = false;
#pragma unroll 1
    for (uint32_t qy = 0; qy < qh; ++qy) {
        uint16_t *cur = quads + qy * qw;
        const uint16_t *above = qy > 0 ? cur - qw : cur;  // read below the first row only
#pragma unroll 1
        for (uint32_t q0 = 0; q0 < qw; q0 += kWarpSize) {
            const uint32_t q = q0 + lane;
            const bool mine = q < qw;
            const uint32_t rec = mine ? cur[q] : 0u;
            ht::QuadSig s{vlc_record_rho(rec), 0, (rec >> 4) & 0xFu, rec & (rec >> 4) & 0xFu};
            const uint32_t u = rec >> 8;
            uint32_t U = 1 + u;  // kappa is 1 in the first row
            if (qy > 0 && mine) {
                const uint32_t nw = q > 0 ? unpack_quad_record(above[q - 1]) : 0u;
                const uint32_t nf = q + 1 < qw ? unpack_quad_record(above[q + 1]) : 0u;
                U = ht::exponent_bound(s.rho, u, nw, unpack_quad_record(above[q]), nf);
            }
            if (U > f.u_max) {
                bad = true;
                s.rho = 0;  // no bits: the offsets stay bounded; the block is corrupt anyway
            }
            uint32_t quad_bits = 0;
#pragma unroll
            for (uint32_t i = 0; i < 4; ++i)
                if ((s.rho >> i) & 1u) quad_bits += ht::magsgn_bits(s, U, i);
            const uint32_t end = warp_inclusive_sum(quad_bits, lane);
            const uint32_t step_bits = __shfl_sync(kFullMask, end, kWarpSize - 1);
            ms.fill(ring, cursor + step_bits, lane);
            uint32_t at = cursor + end - quad_bits;
            uint32_t e_bl = 0, e_br = 0;
#pragma unroll
            for (uint32_t i = 0; i < 4; ++i) {
                uint32_t value = 0, e = 0;
                if ((s.rho >> i) & 1u) {
                    const uint32_t m = ht::magsgn_bits(s, U, i);
                    const uint32_t v = ring_bits(ring, at, m) | (((s.e_1 >> i) & 1u) << m);
                    at += m;
                    bad |= !ht::magsgn_sample(f, v, value, e);
                }
                if (i == 1) e_bl = e;
                if (i == 3) e_br = e;
                const uint32_t x = 2 * q + (i >> 1), y = 2 * qy + (i & 1u);
                if (mine && x < f.width && y < f.height)
                    f.values[size_t{y} * f.vstride + x] = final ? t1_twos_complement(value) : value;
            }
            if (mine) cur[q] = pack_quad_record(s.rho, e_bl, e_br);
            cursor += step_bits;
        }
        __syncwarp();  // the row's records, for the row below
    }
    return __any_sync(kFullMask, bad) ? ht::kHtBadExponent : ht::kHtOk;
}

/** Zeroes the job's block, a row at a time over the lanes. */
__device__ void clear_warp(const T1DecodeJob &job, int32_t *out, uint32_t lane)
{
    int32_t *block = out + job.out_offset;
#pragma unroll 1
    for (uint32_t y = 0; y < job.height; ++y)
        for (uint32_t x = lane; x < job.width; x += kWarpSize) block[size_t{y} * job.out_stride + x] = 0;
}

/** A job of the batch and what its checks found, as each lane of a warp works it out alike. */
struct HtJob {
    const T1DecodeTable *table = nullptr;
    uint32_t j = 0;
    bool take = false;  ///< an HT job at this position
    T1DecodeJob job{};
    uint8_t checked = kT1JobOk;   ///< t1_decode_job_verdict's status
    bool decode = false;          ///< the verdict lets it decode
    uint32_t status = ht::kHtOk;  ///< the HT set and the cleanup segment's split
    ht::HtSet set{};
    uint32_t pcup = 0;
    const uint8_t *dcup = nullptr;

    /** Quad records its VLC pass writes (0 when it has none to run). */
    __device__ uint32_t quads() const
    {
        if (!take || !decode || status != ht::kHtOk) return 0;
        return ((job.width + 1u) / 2) * ((job.height + 1u) / 2);
    }
};

/**
 * The job at `position` of the batch (the tables round robin, each in its
 * order from its first_rank on, as the Part-1 kernel takes them) and its
 * checks.
 */
__device__ HtJob ht_job_at(const T1DecodeBatch &batch, uint32_t position)
{
    HtJob h;
    const T1DecodeTable &table = batch.tables[position % batch.num_tables];
    const uint32_t step = position / batch.num_tables;
    if (step >= table.num_jobs - table.first_rank) return h;  // a shorter table than the longest
    const uint32_t rank = step + table.first_rank;            // ranks before it are the host's
    h.j = table.order ? table.order[rank] : rank;
    if (h.j >= table.num_jobs) return h;
    h.table = &table;
    h.job = table.jobs[h.j];
    h.take = (h.job.style & kT1JobStyleHt) != 0;
    if (!h.take) return h;
    // The shared area takes any block the checks let through.
    h.checked = t1_decode_job_verdict(h.job, table.segments, true, h.decode);
    if (!h.decode) return h;
    const uint32_t planes = uint32_t{h.job.num_bitplanes} + h.job.roi_shift;
    const CodewordSegment *segments = table.segments + h.job.segment_offset;
    const uint64_t total = ht::ht_total_passes(segments, h.job.num_segments);
    h.status = ht::locate_ht_set(segments, h.job.num_segments, total, planes, h.job.zero_bitplanes, h.set);
    if (h.status != ht::kHtOk) return h;
    h.dcup = table.bytes + h.job.data_offset + h.set.cleanup_offset;
    h.status = ht::cleanup_split(h.dcup, h.set.lcup, h.pcup);
    return h;
}

/**
 * MagSgn of a job over the warp, once vlc_pass has written its quad
 * records; every lane calls it with the same job and gets the same result:
 * kHtOk when its refinement passes, if any, are to follow.
 */
__device__ uint32_t cleanup_job(const HtJob &h, uint16_t *quads, uint32_t *ring, uint32_t lane)
{
    if (!h.decode || h.status != ht::kHtOk) return h.decode ? h.status : ht::kHtOk;
    const T1DecodeJob &job = h.job;
    const uint32_t planes = uint32_t{job.num_bitplanes} + job.roi_shift;
    uint32_t *values = reinterpret_cast<uint32_t *>(h.table->out + job.out_offset);
    const ht::CleanupFrame f = ht::cleanup_frame(values, job.out_stride, job.width, job.height, planes, h.set.pc);
    return magsgn_warp(f, h.dcup, h.pcup, ht::refinement_passes(h.set) == 0, quads, ring, lane);
}

/** The low n <= 4 bits of `bits`, placed at the set bits of `mask` (the first at its lowest). */
__device__ __forceinline__ uint32_t deposit4(uint32_t bits, uint32_t mask)
{
    uint32_t out = 0;
#pragma unroll
    for (uint32_t r = 0; r < 4; ++r)
        if ((mask >> r) & 1u) {
            out |= (bits & 1u) << r;
            bits >>= 1;
        }
    return out;
}

/**
 * The count of the lanes of a lane's SigProp group (kGroupColumns lanes in
 * a row) before it, a scan over the group alone; `total` gets the group's.
 */
__device__ __forceinline__ uint32_t group_before(uint32_t count, uint32_t lane, uint32_t &total)
{
    uint32_t end = count;
#pragma unroll
    for (uint32_t d = 1; d < kGroupColumns; d *= 2) {
        const uint32_t t = __shfl_up_sync(kFullMask, end, d, kGroupColumns);
        if (lane % kGroupColumns >= d) end += t;
    }
    total = __shfl_sync(kFullMask, end, kGroupColumns - 1, kGroupColumns);
    return end - count;
}

/**
 * The significance bits SigProp reads for a stripe's 32 columns from
 * `cursor` on, given the members `m` of each lane's column: the groups one
 * after another (a group's start follows the one before and its signs, so
 * the fresh samples of each), then the lanes at once, each scanning its
 * column from where its group's bits before it end (sigprop_column, with
 * its `left`, `own`, `right` and `rows`); `columns` of the lanes lie in the
 * block. Gives the lane's fresh rows and the members its scan found, where
 * its group starts and how many members its group has; returns where the
 * chunk's bits end.
 */
__device__ uint32_t sigprop_read(const uint32_t *ring, uint32_t cursor, uint32_t columns, uint32_t m, uint32_t left,
                                 uint32_t own, uint32_t right, uint32_t rows, uint32_t lane, uint32_t &fresh,
                                 uint32_t &scanned, uint32_t &group_start, uint32_t &group_members)
{
    const uint32_t before = group_before(__popc(m), lane, group_members);
    uint32_t at = cursor;
    // Unrolled, so that the groups' member counts come over before the chain of reads.
#pragma unroll
    for (uint32_t g = 0; g < kWarpSize; g += kGroupColumns) {
        const uint32_t members = __shfl_sync(kFullMask, group_members, g);
        if (g >= columns) break;
        if (lane / kGroupColumns == g / kGroupColumns) group_start = at;
        at += members + __popc(ring_bits<kRefineRingWords>(ring, at, members));
    }
    fresh =
        ht::sigprop_column(left, own, right, rows, ring_bits<kRefineRingWords>(ring, group_start + before, 4), scanned);
    return at;
}

/** The rows `fresh` of a stripe's column, made significant by SigProp at plane p, with their `signs`. */
__device__ __forceinline__ void sigprop_apply(uint32_t (&stripe)[4], uint32_t fresh, uint32_t signs, uint32_t p)
{
#pragma unroll
    for (uint32_t r = 0; r < 4; ++r)
        if ((fresh >> r) & 1u) stripe[r] = ht::sigprop_value((signs >> r) & 1u, p);
}

/**
 * The significance SigProp (7.4) reads for a stripe's 32 columns, a lane a
 * column, from the SigProp stream's bit `cursor`: the rows it makes
 * significant in the lane's column (`fresh`) and where the chunk's bits end.
 * `own` and `right` are the stripe_column_bits of the lane's column and the
 * next as the cleanup left them, `left_of_chunk` the final one left of the
 * chunk; `columns` of the lanes lie in the block. A sample's membership
 * depends on the samples SigProp made significant before it in the scan,
 * and where its bit lies on the fresh samples of the groups before its own,
 * so the lanes guess: no fresh samples, then those the last guess read
 * (a lane scanning its own column: a fresh row's effect on the rows below
 * needs no further round), until the members the positions came from, those
 * the scans found and those of the fresh samples are the same. Each round
 * settles at least the first sample the last one had wrong (its membership
 * and bit depend only on samples before it), so the rounds end, and where
 * they end every lane holds what the serial scan reads. The signs follow in
 * the returned `signs` (bit r for row r).
 */
__device__ uint32_t sigprop_stripe(const uint32_t *ring, uint32_t cursor, uint32_t columns, uint32_t rows,
                                   uint32_t left_of_chunk, uint32_t own, uint32_t right, bool inside, uint32_t lane,
                                   uint32_t &fresh, uint32_t &signs)
{
    const uint32_t lane_rows = inside ? rows : 0u;  // no members outside the block
    uint32_t m = 0, scanned = 0, group_start = 0, group_members = 0, end = cursor;
    fresh = 0;
#pragma unroll 1
    for (;;) {
        uint32_t left = __shfl_up_sync(kFullMask, own | (fresh << 1), 1);
        if (lane == 0) left = left_of_chunk;
        const uint32_t members = ht::sigprop_members(left, own, fresh, right, lane_rows);
        if (!__any_sync(kFullMask, members != m || members != scanned)) break;
        m = members;
        end = sigprop_read(ring, cursor, columns, m, left, own, right, lane_rows, lane, fresh, scanned, group_start,
                           group_members);
    }
    uint32_t group_fresh;  // the group's signs, which no lane needs here
    const uint32_t before = group_before(__popc(fresh), lane, group_fresh);
    signs = deposit4(ring_bits<kRefineRingWords>(ring, group_start + group_members + before, __popc(fresh)), fresh);
    return end;
}

/**
 * MagRef (7.5) of a stripe's 32 columns, a lane a column, on the samples
 * as SigProp left them, from the MagRef stream's bit `cursor`: a lane's
 * bits start after those of the columns before it, the count of their
 * refined samples. Returns where the chunk's bits end.
 */
__device__ uint32_t magref_stripe(const uint32_t *ring, uint32_t cursor, uint32_t (&stripe)[4], uint32_t p,
                                  uint32_t lane)
{
    uint32_t refined = 0;
#pragma unroll
    for (uint32_t r = 0; r < 4; ++r) refined |= (ht::magref_refines(stripe[r], p) ? 1u : 0u) << r;
    const uint32_t count = __popc(refined);
    const uint32_t end = warp_inclusive_sum(count, lane);
    const uint32_t bits = deposit4(ring_bits<kRefineRingWords>(ring, cursor + end - count, count), refined);
#pragma unroll
    for (uint32_t r = 0; r < 4; ++r)
        if ((refined >> r) & 1u) stripe[r] = ht::magref_value(stripe[r], (bits >> r) & 1u, p);
    return cursor + __shfl_sync(kFullMask, end, kWarpSize - 1);
}

/**
 * The job's refinement passes (ht::decode_refinement) over the warp after
 * its cleanup, and the two's complement of its samples: 32 columns of a
 * stripe at a time, a lane a column, SigProp then MagRef, each stripe's
 * samples read and written once. MagRef may follow SigProp stripe by
 * stripe rather than after the whole block: it reads a stripe's samples
 * alone, as SigProp left them, and changes no sample's significance, which
 * is all SigProp reads of the stripes around. The row above a stripe is
 * read back in two's complement, significant just the same
 * (stripe_column_bits).
 */
__device__ void refine_job(const HtJob &h, uint32_t *ring, uint32_t lane)
{
    const T1DecodeJob &job = h.job;
    const uint32_t width = job.width, height = job.height, stride = job.out_stride;
    const uint32_t p = h.set.pc - 1;
    const bool causal = (job.style & kT1JobStyleCausal) != 0;
    const bool magref = ht::refinement_passes(h.set) > 1;
    uint32_t *values = reinterpret_cast<uint32_t *>(h.table->out + job.out_offset);
    const uint8_t *dref = h.dcup + h.set.lcup;
    uint32_t *sp_ring = ring, *mr_ring = ring + kRefineRingWords;
    ForwardRing sp(dref, h.set.lref, 0);
    BackwardRing mr(dref, h.set.lref);
    uint32_t sp_cursor = 0, mr_cursor = 0;
#pragma unroll 1
    for (uint32_t y0 = 0; y0 < height; y0 += 4) {
        const uint32_t rows = min(4u, height - y0);
        uint32_t left_of_chunk = 0;  // the final stripe_column_bits left of the chunk
#pragma unroll 1
        for (uint32_t x0 = 0; x0 < width; x0 += kWarpSize) {
            const uint32_t x = x0 + lane;
            const bool inside = x < width;
            uint32_t *col = values + size_t{y0} * stride + x;
            // All of the stripe's loads at once, and the streams' refills beside them; the
            // last lane's right is the next chunk's first column, still as the cleanup left it.
            const uint32_t next_chunk =
                lane == kWarpSize - 1 ? ht::stripe_column(values, stride, width, height, x + 1, y0, causal) : 0u;
            uint32_t above = 0, below = 0, stripe[4] = {0, 0, 0, 0};
            if (inside) {
                if (y0 > 0) above = values[size_t{y0 - 1} * stride + x];
#pragma unroll
                for (uint32_t r = 0; r < 4; ++r)
                    if (r < rows) stripe[r] = col[size_t{r} * stride];
                if (!causal && y0 + 4 < height) below = col[size_t{4} * stride];
            }
            const uint32_t own = ht::stripe_column_bits(above, stripe, below);
            uint32_t right = __shfl_down_sync(kFullMask, own, 1);
            if (lane == kWarpSize - 1) right = next_chunk;
            sp.fill<kRefineRingWords>(sp_ring, sp_cursor + kStripeSigPropBits, lane);
            if (magref) mr.fill<kRefineRingWords>(mr_ring, mr_cursor + kStripeMagRefBits, lane);

            uint32_t fresh = 0, signs = 0;
            sp_cursor = sigprop_stripe(sp_ring, sp_cursor, min(kWarpSize, width - x0), rows, left_of_chunk, own, right,
                                       inside, lane, fresh, signs);
            sigprop_apply(stripe, fresh, signs, p);
            if (magref) mr_cursor = magref_stripe(mr_ring, mr_cursor, stripe, p, lane);
            if (inside)
#pragma unroll
                for (uint32_t r = 0; r < 4; ++r)
                    if (r < rows) col[size_t{r} * stride] = t1_twos_complement(stripe[r]);
            left_of_chunk = __shfl_sync(kFullMask, own | (fresh << 1), kWarpSize - 1);
            __syncwarp();  // the stripe's samples, for the columns and the stripe after it
        }
    }
}

/**
 * The rest of t1_decode_job_ht over the warp, once the job's passes ran
 * (`status` as cleanup_job returned it), the last of them storing the
 * samples in two's complement: the job's status, and zeros where it failed.
 */
__device__ void complete_job(const HtJob &h, uint32_t status, uint32_t lane)
{
    uint8_t result = h.checked;
    if (h.decode && status == ht::kHtOk) {
        result = kT1JobOk;
    } else {
        clear_warp(h.job, h.table->out, lane);
        if (h.decode) result = kT1JobCorrupt;
    }
    if (lane == 0) h.table->status[h.j] = result;
}

/**
 * A warp takes `group_size` positions (kGroup at most) at once. Lane g
 * works out job g; the jobs whose records fit its area of kAreaQuads records
 * together (from the first not yet done) run their VLC passes at once, a
 * lane each, into consecutive records; then the warp decodes them one after
 * another (MagSgn, the refinement passes and the two's complement over the
 * lanes), and goes on with the next that fit.
 */
__global__ void __launch_bounds__(kWarpsPerCta *kWarpSize, kCtasPerSm)
    ht_decode_kernel(const __grid_constant__ T1DecodeBatch batch, uint32_t positions, uint32_t group_size)
{
    __shared__ WarpArea areas[kWarpsPerCta];
    const uint32_t lane = threadIdx.x % kWarpSize;
    WarpArea &area = areas[threadIdx.x / kWarpSize];
    const uint32_t stride = gridDim.x * kWarpsPerCta * group_size;
#pragma unroll 1
    for (uint32_t first = (blockIdx.x * kWarpsPerCta + threadIdx.x / kWarpSize) * group_size; first < positions;
         first += stride) {
        const uint32_t group = min(group_size, positions - first);
        const HtJob mine = lane < group ? ht_job_at(batch, first + lane) : HtJob{};
        const uint32_t quads = mine.quads();
#pragma unroll 1
        for (uint32_t done = 0; done < group;) {
            const uint32_t waiting = lane >= done && lane < group ? quads : 0u;
            const uint32_t end = warp_inclusive_sum(waiting, lane);
            const bool fits = lane >= done && lane < group && end <= kAreaQuads;
            if (fits && quads)
                vlc_pass(mine.dcup, mine.set.lcup, mine.pcup, (mine.job.width + 1u) / 2, (mine.job.height + 1u) / 2,
                         area.quads + end - quads);
            // The jobs that fit are those from `done` on, up to the first that does not (at least one).
            const uint32_t next = done + __popc(__ballot_sync(kFullMask, fits));
            __syncwarp();
#pragma unroll 1
            for (uint32_t g = done; g < next; ++g) {
                const uint32_t at = __shfl_sync(kFullMask, end - waiting, g);
                const HtJob h = ht_job_at(batch, first + g);
                if (!h.take) continue;
                const uint32_t status = cleanup_job(h, area.quads + at, area.ring, lane);
                __syncwarp();  // the cleanup's samples, for the refinement over the lanes
                if (h.decode && status == ht::kHtOk && ht::refinement_passes(h.set) > 0) refine_job(h, area.ring, lane);
                __syncwarp();  // the samples, for the clearing of a failed block over the lanes
                complete_job(h, status, lane);
                __syncwarp();  // its records and ring are the next job's
            }
            done = next;
        }
    }
}

}  // namespace

void ht_decode_gpu_batch(const T1DecodeBatch &batch, void *stream, uint32_t max_quads)
{
    const uint32_t positions = tier1_decode_batch_positions(batch);
    if (positions == 0) return;
    // A warp's group decodes its blocks one after another once their VLC
    // passes are done, so a group of blocks that do not fit the area together
    // would only take warps from the grid.
    const uint32_t group = max_quads == 0 ? kGroup : std::clamp(kAreaQuads / max_quads, 1u, kGroup);
    const uint32_t warps = std::min((positions + group - 1) / group, kMaxWarps);
    const uint32_t ctas = (warps + kWarpsPerCta - 1) / kWarpsPerCta;
    ht_decode_kernel<<<ctas, kWarpsPerCta * kWarpSize, 0, static_cast<cudaStream_t>(stream)>>>(batch, positions, group);
    check_cuda(cudaGetLastError(), "HT decode kernel launch");
}

void ht_decode_gpu(const T1DecodeJob *jobs, uint32_t num_jobs, const uint8_t *bytes, const CodewordSegment *segments,
                   int32_t *out, uint8_t *status, void *stream, const uint32_t *order)
{
    ht_decode_gpu_batch(tier1_decode_single(jobs, num_jobs, bytes, segments, out, status, order), stream);
}

}  // namespace j2kc
