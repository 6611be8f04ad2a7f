/**
 * @file tier2_cell_core.h
 * @brief The per-thread work of Tier-2 on the GPU (ISO/IEC 15444-1 B.9-B.12
 * packets, A.4.2 SOT, A.4.3 SOD, A.7.1 TLM, A.7.3 PLT, A.8.1 SOP, A.8.2 EPH),
 * organised as the codestream cell table of Bruns et al. (tier2_cuda.h),
 * section VII: every cell's length, one exclusive prefix sum for the offsets,
 * then fill.
 *
 * Everything here is J2KC_HD and works on flat tables (device pointers in the
 * kernels of tier2.cu, host pointers in the host model of the tests), so the
 * device and the host run the very same code. Packet headers are coded by
 * code_packet_header() (packet_header_core.h), the coder the CPU packet
 * encoder runs, so the bytes are those of the CPU reference.
 *
 * Cells, in codestream order: [main header] then for every tile-part
 * [SOT + PLT + SOD] followed by one cell per packet [SOP + header + EPH +
 * body], and last [EOC].
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"
#include "tier2/bit_io.h"
#include "tier2/packet_header_core.h"
#include "tier2/tag_tree.h"

namespace j2kc {

constexpr uint32_t kT2gSopBytes = 6, kT2gEphBytes = 2;
/** SOT (12) + SOD (2). */
constexpr uint32_t kT2gTilePartFixed = 14;
/** Payload bytes of one PLT segment: Lplt <= 65535 counts itself (2) and Zplt (1). */
constexpr uint32_t kT2gPltRoom = 65535 - 2 - 1;
constexpr uint32_t kT2gNoTlm = UINT32_MAX;

/** Error codes reported by the kernels (first one wins). */
enum T2gError : uint32_t {
    kT2gOk = 0,
    kT2gBadPasses = 1,      ///< a = block, b = layer, c = passes now / sent / total (packed)
    kT2gTooManyPasses = 2,  ///< more than 164 new passes in one packet
    kT2gPassEndsDecrease = 3,
    kT2gUnterminated = 4,     ///< a pass ending a codeword segment is not terminated
    kT2gLengthField = 5,      ///< segment length field above 32 bits
    kT2gPacketTooLong = 6,    ///< packet above 4 GiB
    kT2gTilePartTooLong = 7,  ///< Psot above 32 bits
    kT2gPltSegments = 8,      ///< more than 256 PLT segments in one tile-part
    kT2gTlmLength = 9,        ///< a 16-bit TLM entry cannot hold the tile-part length
    kT2gCapacity = 10,        ///< the output buffer is too small
};

/** A precinct of the frame: its bands and the packets it has in the codestream. */
struct T2gPrecinct {
    uint32_t band_begin = 0;    ///< first entry in the band table
    uint32_t packet_begin = 0;  ///< first entry in precinct_packets: its packet of layer 0, 1, ...
    uint32_t run_begin = 0;     ///< first entry in the run table
    uint32_t num_runs = 0;
    uint16_t layers_emitted = 0;  ///< layers of it in the codestream (a POC may leave out the top ones)
    uint8_t num_bands = 0;
    uint8_t style = 0;  ///< code-block style of its component
};

/** The code-blocks of one sub-band in one precinct, and its two tag trees. */
struct T2gBand {
    uint32_t cblks_x = 0, cblks_y = 0;
    uint32_t first_block = 0;  ///< frame code-block index of its first (raster) block
    uint32_t node_offset = 0;  ///< first node of its trees in the node arrays
};

/** Code-blocks of a run (tier2_header_count_core.h). */
constexpr uint32_t kT2gRunBlocks = 32;

/**
 * Up to kT2gRunBlocks consecutive code-blocks of one precinct-band, in the
 * order its packet header codes them; a precinct's runs follow each other
 * in that order in the run table.
 */
struct T2gRun {
    uint32_t precinct = 0;
    uint32_t band = 0;        ///< its entry in the band table
    uint32_t first_leaf = 0;  ///< its first code-block in the band (raster index)
    uint32_t count = 0;
};

struct T2gPacket {
    uint32_t cell = 0;      ///< its cell
    uint32_t sequence = 0;  ///< Nsop: the tile's packet count before it, mod 65536
};

struct T2gTilePart {
    uint32_t first_packet = 0, num_packets = 0;  ///< frame packet indices (codestream order)
    uint32_t cell = 0;                           ///< its SOT + PLT + SOD cell
    uint32_t tlm_offset = kT2gNoTlm;             ///< its TLM entry in the main header
    int32_t component = -1;                      ///< the one component of its packets, or -1
    uint16_t tile = 0;
    uint8_t part = 0, parts = 1;
};

/** The geometry of a frame's codestream (fixed per encoder). */
struct T2gTables {
    const T2gPrecinct *precincts = nullptr;
    const T2gBand *bands = nullptr;
    const uint32_t *precinct_packets = nullptr;
    const T2gPacket *packets = nullptr;
    const T2gTilePart *tile_parts = nullptr;
    const uint32_t *block_precinct = nullptr;  ///< per frame code-block
    const T2gRun *runs = nullptr;
    uint32_t num_precincts = 0, num_packets = 0, num_tile_parts = 0, num_blocks = 0;
    uint32_t num_bands = 0, num_runs = 0;
    uint32_t num_cells = 0;  ///< main header + tile-parts + packets + EOC
    uint32_t num_nodes = 0;  ///< nodes of one kind of tree, all precinct-bands
    uint16_t layers = 1;
    uint8_t sop = 0, eph = 0, plt = 0;
    uint8_t tlm_st = 0, tlm_sp = 0;
    uint32_t num_components = 1;
};

/** Tier-1's output of every code-block of the frame (see GpuBlocks in tier2_cuda.h). */
struct T2gBlocks {
    const uint8_t *bytes = nullptr;
    const uint64_t *byte_offset = nullptr;
    const uint32_t *pass_offset = nullptr;
    const uint32_t *pass_end = nullptr;
    const uint8_t *pass_terminated = nullptr;  ///< may be null
    const uint32_t *num_passes = nullptr;
    const uint8_t *zero_bitplanes = nullptr;
};

/** Per-call working memory. */
struct T2gScratch {
    TagTreeNode *inclusion = nullptr, *zero_bitplanes = nullptr;  ///< num_nodes each
    uint8_t *lblock = nullptr;                                    ///< per block
    uint32_t *header_len = nullptr;                               ///< per packet: header bytes with EPH, without SOP
    uint32_t *packet_len = nullptr;                               ///< per packet: SOP + header + EPH + body
    uint32_t *contrib_rel = nullptr;  ///< per block and layer: where its bytes start in the packet body
    uint32_t *psot = nullptr;         ///< per tile-part
    uint64_t *cell_len = nullptr;     ///< per cell
    uint64_t *cell_off = nullptr;     ///< per cell (exclusive prefix sum of cell_len)
    /// [0] all packets + PLT; [1 + c] those of component c's own tile-parts;
    /// [1 + num_components] the codestream size (write only)
    uint64_t *sums = nullptr;
    uint32_t *status = nullptr;  ///< [0] T2gError, [1..3] details
    // The parallel count of single-layer headers (tier2_header_count_core.h):
    uint32_t *first_included = nullptr;  ///< per tree node: its first included code-block, or kT2gNoLeaf
    uint32_t *run_steps = nullptr;       ///< per run and phase: its T2gPhaseWalk step
    uint64_t *run_body = nullptr;        ///< per run: its code-blocks' bytes in the body
    uint32_t *run_included = nullptr;    ///< per run: 1 when one of its code-blocks is included
    uint64_t *run_entry = nullptr;       ///< per run: the T2gPhaseWalk from its header's start to it
};

J2KC_HD void t2g_fail(uint32_t *status, uint32_t code, uint32_t a, uint32_t b, uint32_t c)
{
#if defined(__CUDA_ARCH__)
    if (atomicCAS(status, 0u, code) == 0u) {
        status[1] = a;
        status[2] = b;
        status[3] = c;
    }
#else
    if (status[0] == 0) {
        status[0] = code;
        status[1] = a;
        status[2] = b;
        status[3] = c;
    }
#endif
}

J2KC_HD bool t2g_failed(const uint32_t *status)
{
#if defined(__CUDA_ARCH__)
    return *(volatile const uint32_t *)status != 0;
#else
    return status[0] != 0;
#endif
}

J2KC_HD void t2g_add(uint64_t *sum, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    atomicAdd(reinterpret_cast<unsigned long long *>(sum), static_cast<unsigned long long>(v));
#else
    *sum += v;
#endif
}

J2KC_HD uint32_t t2g_min(uint32_t a, uint32_t b) { return a < b ? a : b; }

/** Bytes of one packet length in PLT's 7-bit groups. */
J2KC_HD uint32_t t2g_plt_length_bytes(uint32_t v)
{
    uint32_t n = 1;
    while (v >>= 7) ++n;
    return n;
}

/**
 * Precinct `prec` at layer `layer` as code_packet_header() sees it: frame
 * code-block indices, passes from the selection table [block * layers +
 * layer], errors to the status word.
 */
struct T2gPrecinctState {
    const T2gTables &t;
    const T2gBlocks &b;
    const uint16_t *passes;
    const T2gScratch &s;
    const T2gPrecinct &prec;
    uint32_t layer;

    J2KC_HD uint32_t num_bands() const { return prec.num_bands; }
    J2KC_HD PacketHeaderBand band(uint32_t k) const
    {
        const T2gBand pb = t.bands[prec.band_begin + k];
        return {pb.first_block, pb.cblks_x * pb.cblks_y, TagTree{s.inclusion + pb.node_offset, pb.cblks_x, pb.cblks_y},
                TagTree{s.zero_bitplanes + pb.node_offset, pb.cblks_x, pb.cblks_y}};
    }
    J2KC_HD uint32_t passes_now(uint32_t cb) const { return passes[size_t{cb} * t.layers + layer]; }
    J2KC_HD uint32_t passes_sent(uint32_t cb) const { return layer ? passes[size_t{cb} * t.layers + layer - 1] : 0; }
    J2KC_HD uint32_t num_passes(uint32_t cb) const { return b.num_passes[cb]; }
    J2KC_HD uint8_t zero_bitplanes(uint32_t cb) const { return b.zero_bitplanes[cb]; }
    J2KC_HD const uint32_t *pass_end(uint32_t cb) const { return b.pass_end + b.pass_offset[cb]; }
    J2KC_HD const uint8_t *pass_terminated(uint32_t cb) const
    {
        return b.pass_terminated ? b.pass_terminated + b.pass_offset[cb] : nullptr;
    }
    J2KC_HD uint8_t &lblock(uint32_t cb) const { return s.lblock[cb]; }
    /** The GPU writes no MIXED tile-components: a block of an HT component is an HT block. */
    J2KC_HD bool part1(uint32_t) const { return false; }
    /** Records where the block's bytes start in the body (contrib_rel). */
    J2KC_HD void contribute(uint32_t cb, uint32_t, uint32_t, uint64_t at) const
    {
        s.contrib_rel[size_t{cb} * t.layers + layer] = static_cast<uint32_t>(at);
    }
    J2KC_HD void fail(PacketHeaderError error, uint32_t cb, uint32_t x, uint32_t y, uint32_t z) const
    {
        switch (error) {
        case kPacketBadPasses:
            t2g_fail(s.status, kT2gBadPasses, cb, layer, (x & 0x3FF) << 20 | (y & 0x3FF) << 10 | (z & 0x3FF));
            break;
        case kPacketTooManyPasses: t2g_fail(s.status, kT2gTooManyPasses, cb, layer, x); break;
        case kPacketPassEndsDecrease: t2g_fail(s.status, kT2gPassEndsDecrease, cb, x, 0); break;
        case kPacketUnterminated: t2g_fail(s.status, kT2gUnterminated, cb, x, 0); break;
        case kPacketLengthField:
        case kPacketMixedFirstLength: t2g_fail(s.status, kT2gLengthField, cb, x, 0); break;
        }
    }
};

/**
 * Stores packet `pk`'s lengths, and its cell's, from its header (without
 * SOP and EPH) and body bytes; false after reporting a packet too long.
 */
J2KC_HD bool t2g_store_packet_length(const T2gTables &t, const T2gScratch &s, uint32_t pk, uint32_t header,
                                     uint64_t body)
{
    const uint32_t sop = t.sop ? kT2gSopBytes : 0, eph = t.eph ? kT2gEphBytes : 0;
    const uint64_t len = uint64_t{sop} + header + eph + body;
    if (len > UINT32_MAX) {
        t2g_fail(s.status, kT2gPacketTooLong, pk, 0, 0);
        return false;
    }
    s.header_len[pk] = header + eph;
    s.packet_len[pk] = static_cast<uint32_t>(len);
    s.cell_len[t.packets[pk].cell] = len;
    return true;
}

/** SOP and EPH of a packet whose cell starts at `at`, around a header of `header` bytes. */
J2KC_HD void t2g_packet_markers(const T2gTables &t, const T2gPacket &packet, uint8_t *at, uint32_t header)
{
    const uint32_t sop = t.sop ? kT2gSopBytes : 0;
    if (sop) {
        at[0] = 0xFF;
        at[1] = 0x91;
        at[2] = 0x00;
        at[3] = 0x04;
        at[4] = static_cast<uint8_t>(packet.sequence >> 8);
        at[5] = static_cast<uint8_t>(packet.sequence);
    }
    if (t.eph) {
        at[sop + header] = 0xFF;
        at[sop + header + 1] = 0x92;
    }
}

/**
 * All packets of precinct `pi`, layer after layer. Counting (out == null):
 * stores header and packet lengths and the packets' cell lengths. Writing:
 * SOP, header and EPH of each packet at its cell offset (the bodies are
 * copied separately); the lengths from the counting run must be in place.
 */
J2KC_HD void t2g_precinct_packets(const T2gTables &t, const T2gBlocks &b, const uint16_t *passes, const T2gScratch &s,
                                  uint32_t pi, uint8_t *out)
{
    const T2gPrecinct prec = t.precincts[pi];
    T2gPrecinctState state{t, b, passes, s, prec, 0};
    for (uint32_t k = 0; k < prec.num_bands; ++k) reset_packet_header_band(state, state.band(k));
    const uint32_t sop = t.sop ? kT2gSopBytes : 0, eph = t.eph ? kT2gEphBytes : 0;
    for (uint32_t l = 0; l < prec.layers_emitted; ++l) {
        const uint32_t pk = t.precinct_packets[prec.packet_begin + l];
        const T2gPacket packet = t.packets[pk];
        uint8_t *at = out ? out + s.cell_off[packet.cell] : nullptr;
        PacketHeaderWriter w(at ? at + sop : nullptr, at ? s.header_len[pk] - eph : 0);
        state.layer = l;
        const uint64_t body = code_packet_header(state, prec.style, l, w);
        if (body == kPacketHeaderFailed) return;
        const uint32_t header = w.flush();
        if (!at) {
            if (!t2g_store_packet_length(t, s, pk, header, body)) return;
            continue;
        }
        t2g_packet_markers(t, packet, at, header);
    }
}

/**
 * Tile-part `k`, counting: its PLT bytes (lengths split between segments as
 * write_plt does), Psot, its cell length, and the sums measure() reports.
 */
J2KC_HD void t2g_tile_part_count(const T2gTables &t, const T2gScratch &s, uint32_t k)
{
    const T2gTilePart tp = t.tile_parts[k];
    uint64_t packets = 0;
    uint32_t segments = 1, used = 0;
    uint64_t payload = 0;
    for (uint32_t i = 0; i < tp.num_packets; ++i) {
        const uint32_t len = s.packet_len[tp.first_packet + i];
        packets += len;
        if (t.plt) {
            const uint32_t g = t2g_plt_length_bytes(len);
            if (used + g > kT2gPltRoom) {
                ++segments;
                used = 0;
            }
            used += g;
            payload += g;
        }
    }
    if (t.plt && segments > 256) {
        t2g_fail(s.status, kT2gPltSegments, k, segments, 0);
        return;
    }
    const uint64_t plt = t.plt ? 5ull * segments + payload : 0;
    const uint64_t psot = kT2gTilePartFixed + plt + packets;
    if (psot > UINT32_MAX) {
        t2g_fail(s.status, kT2gTilePartTooLong, k, 0, 0);
        return;
    }
    if (tp.tlm_offset != kT2gNoTlm && !t.tlm_sp && psot > 0xFFFF) {
        t2g_fail(s.status, kT2gTlmLength, k, static_cast<uint32_t>(psot), 0);
        return;
    }
    s.psot[k] = static_cast<uint32_t>(psot);
    s.cell_len[tp.cell] = kT2gTilePartFixed + plt;
    t2g_add(&s.sums[0], plt + packets);
    if (tp.component >= 0) t2g_add(&s.sums[1 + tp.component], plt + packets);
}

J2KC_HD void t2g_put_be(uint8_t *at, uint32_t v, uint32_t bytes)
{
    for (uint32_t i = 0; i < bytes; ++i) at[i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}

/** Tile-part `k`, writing: SOT, PLT, SOD and its TLM entry (tile-part 0 also writes EOC). */
J2KC_HD void t2g_tile_part_write(const T2gTables &t, const T2gScratch &s, uint32_t k, uint8_t *out)
{
    const T2gTilePart tp = t.tile_parts[k];
    uint8_t *at = out + s.cell_off[tp.cell];
    const uint32_t psot = s.psot[k];
    t2g_put_be(at, 0xFF90, 2);
    t2g_put_be(at + 2, 10, 2);
    t2g_put_be(at + 4, tp.tile, 2);
    t2g_put_be(at + 6, psot, 4);
    at[10] = tp.part;
    at[11] = tp.parts;
    at += 12;
    if (t.plt) {
        uint32_t z = 0, i = 0;
        do {
            // Whole lengths only, as many as the segment takes.
            uint32_t n = 0, j = i;
            while (j < tp.num_packets) {
                const uint32_t g = t2g_plt_length_bytes(s.packet_len[tp.first_packet + j]);
                if (n + g > kT2gPltRoom) break;
                n += g;
                ++j;
            }
            t2g_put_be(at, 0xFF58, 2);
            t2g_put_be(at + 2, 3 + n, 2);
            at[4] = static_cast<uint8_t>(z++);
            at += 5;
            for (; i < j; ++i) {
                const uint32_t v = s.packet_len[tp.first_packet + i];
                const uint32_t g = t2g_plt_length_bytes(v);
                for (uint32_t q = g; q-- > 0;) *at++ = static_cast<uint8_t>(((v >> (7 * q)) & 0x7F) | (q ? 0x80 : 0));
            }
        } while (i < tp.num_packets);
    }
    t2g_put_be(at, 0xFF93, 2);
    if (tp.tlm_offset != kT2gNoTlm) {
        t2g_put_be(out + tp.tlm_offset, tp.tile, t.tlm_st);
        t2g_put_be(out + tp.tlm_offset + t.tlm_st, psot, t.tlm_sp ? 4 : 2);
    }
    if (k == 0) t2g_put_be(out + s.cell_off[t.num_cells - 1], 0xFFD9, 2);
}

/** Where the bytes of block `cb` in layer `layer` go. */
struct T2gCopy {
    uint64_t src = 0;  ///< offset in T2gBlocks::bytes
    uint64_t dst = 0;  ///< offset in the codestream
    uint32_t length = 0;
};

/** The copy of block `cb`'s contribution to layer `layer` (length 0: none). */
J2KC_HD T2gCopy t2g_contribution(const T2gTables &t, const T2gBlocks &b, const uint16_t *passes, const T2gScratch &s,
                                 uint32_t cb, uint32_t layer)
{
    T2gCopy c;
    const T2gPrecinct &prec = t.precincts[t.block_precinct[cb]];
    if (layer >= prec.layers_emitted) return c;
    const size_t at = size_t{cb} * t.layers + layer;
    const uint32_t now = passes[at], sent = layer ? passes[at - 1] : 0;
    // Checked by the header pass; kept here so a failed frame never reads out of bounds.
    if (now <= sent || now > b.num_passes[cb]) return c;
    const uint32_t *ends = b.pass_end + b.pass_offset[cb];
    const uint32_t begin = sent ? ends[sent - 1] : 0, end = ends[now - 1];
    if (end <= begin) return c;
    const uint32_t pk = t.precinct_packets[prec.packet_begin + layer];
    c.src = b.byte_offset[cb] + begin;
    c.dst = s.cell_off[t.packets[pk].cell] + (t.sop ? kT2gSopBytes : 0) + s.header_len[pk] + s.contrib_rel[at];
    c.length = end - begin;
    return c;
}

}  // namespace j2kc
