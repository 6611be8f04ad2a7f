/**
 * @file packet_encoder.cpp
 * @brief ISO/IEC 15444-1 B.10 (packet header coding), B.9 packet bodies,
 * A.8.1 SOP and A.8.2 EPH, in the packet order of B.12.
 *
 * Choices a conforming decoder relies on: a packet with no new pass for any
 * code-block is written as a zero-length packet (a single 0 bit); Lblock is
 * raised by the least increment that lets every segment length of the packet
 * fit; one length is sent per codeword segment the new passes touch (B.10.7.2),
 * with segment boundaries from the code-block style (packet_header.h).
 */
#include "tier2/packet_encoder.h"

#include <algorithm>

#include "common/status.h"
#include "tier2/bit_io.h"
#include "tier2/packet_header.h"
#include "tier2/precinct_trees.h"

namespace j2kc {
namespace {

/** Zero bit-plane leaf of a code-block that has no pass: never coded, so kept out of the minima. */
constexpr int32_t kNeverCoded = 0xFFFF;

/** A PacketHeaderWriter into a growing host vector, from `base` on. */
struct VectorHeaderWriter {
    std::vector<uint8_t> &buf;
    size_t base;
    PacketHeaderWriter w;

    VectorHeaderWriter(std::vector<uint8_t> &b, size_t at) : buf(b), base(at) { reserve(64); }

    void reserve(size_t more)
    {
        // resize() grows the capacity geometrically; only the new tail is zeroed.
        if (buf.size() < base + w.length + more) buf.resize(base + w.length + more);
        w.out = buf.data() + base;
        w.capacity = static_cast<uint32_t>(std::min<size_t>(buf.size() - base, UINT32_MAX));
    }
    void put_bit(uint32_t b)
    {
        if (w.length + 2 > w.capacity) reserve(64);  // a bit emits at most one byte
        w.put_bit(b);
    }
    void put_bits(uint32_t v, uint32_t n)
    {
        for (uint32_t i = n; i-- > 0;) put_bit(v >> i);
    }
    /** Ends the header, trims the vector to it and returns its length. */
    uint32_t finish()
    {
        reserve(2);
        const uint32_t n = w.flush();
        buf.resize(base + n);
        return n;
    }
};

/** Counts header bytes without storing them (same bit logic). */
struct CountingHeaderWriter {
    PacketHeaderWriter w;
    void put_bit(uint32_t b) { w.put_bit(b); }
    void put_bits(uint32_t v, uint32_t n) { w.put_bits(v, n); }
    uint32_t finish() { return w.flush(); }
};

struct BlockState {
    bool included = false;
    uint8_t lblock = 3;
    uint32_t passes = 0;
};

}  // namespace

/**
 * Header-coding state of a whole tile: tag trees of every precinct-band and
 * Lblock / passes sent / inclusion of every code-block.
 */
class PacketHeaderCoder {
public:
    /** A byte range of one code-block's data that goes into a packet body. */
    struct BodyRun {
        uint32_t cblk;
        uint32_t begin, end;
    };

    PacketHeaderCoder(const TileLayout &layout, const std::vector<uint8_t> &styles, const CodeBlockPasses *cblks)
        : layout_(layout), styles_(styles), cblks_(cblks), trees_(layout), state_(layout.code_blocks.size())
    {
        J2KC_CHECK_ARG(styles.size() == layout.components.size(), "%zu code-block styles for %zu components",
                       styles.size(), layout.components.size());
        J2KC_CHECK_ARG(cblks != nullptr || layout.code_blocks.empty(), "no code-block passes");
        for (uint16_t c = 0; c < layout.components.size(); ++c) {
            const TileComponent &tc = layout.components[c];
            for (uint8_t r = 0; r < tc.resolutions.size(); ++r) {
                const Resolution &res = tc.resolutions[r];
                for (uint32_t p = 0; p < res.precincts.size(); ++p) {
                    const Precinct &prec = res.precincts[p];
                    const uint32_t flat = trees_.table().index(c, r, p);
                    for (uint32_t b = 0; b < prec.bands.size(); ++b) {
                        const PrecinctBand &pb = prec.bands[b];
                        if (pb.num_cblks() == 0) continue;
                        trees_.inclusion(flat, b, pb).reset(kTagTreeUnknown);
                        TagTree zbp = trees_.zero_bitplanes(flat, b, pb);
                        zbp.reset(0);
                        for (uint32_t i = 0; i < pb.num_cblks(); ++i) {
                            const CodeBlockPasses &cb = cblks[pb.first_cblk + i];
                            zbp.set_leaf(i, cb.num_passes == 0 ? kNeverCoded : cb.zero_bitplanes);
                        }
                        zbp.build();
                    }
                }
            }
        }
    }

    /**
     * Codes the header of packet `id` (layer id.layer of its precinct, which
     * must follow the precinct's previous layer) into `w`, updating the state;
     * `passes_now` holds the cumulative passes through this layer of every
     * code-block. Fills runs() with the body. Returns the body length.
     */
    template <typename Writer>
    uint64_t code_packet(const PacketId &id, const uint32_t *passes_now, Writer &w)
    {
        const Resolution &res = layout_.components[id.component].resolutions[id.resolution];
        const Precinct &prec = res.precincts[id.precinct];
        const uint32_t flat = trees_.table().index(id.component, id.resolution, id.precinct);
        const uint8_t style = styles_[id.component];
        runs_.clear();

        bool any = false;
        for (const PrecinctBand &pb : prec.bands) {
            for (uint32_t i = 0; i < pb.num_cblks(); ++i) {
                const uint32_t cb = pb.first_cblk + i;
                const uint32_t now = passes_now[cb], sent = state_[cb].passes;
                J2KC_CHECK_ARG(now >= sent && now <= cblks_[cb].num_passes,
                               "code-block %u: %u passes in layer %u (had %u of %u)", cb, now, id.layer, sent,
                               cblks_[cb].num_passes);
                J2KC_CHECK_ARG(now - sent <= kMaxPassesPerPacket, "code-block %u: %u passes in one packet", cb,
                               now - sent);
                any |= now > sent;
            }
        }
        if (!any) {  // B.10.3: zero-length packet
            w.put_bit(0);
            return 0;
        }
        w.put_bit(1);

        uint64_t body = 0;
        for (uint32_t b = 0; b < prec.bands.size(); ++b) {
            const PrecinctBand &pb = prec.bands[b];
            const uint32_t n = pb.num_cblks();
            if (n == 0) continue;
            TagTree inclusion = trees_.inclusion(flat, b, pb);
            TagTree zbp = trees_.zero_bitplanes(flat, b, pb);
            // The inclusion tree must know every leaf first included in this
            // layer before any leaf of the band is coded (they share parents).
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t cb = pb.first_cblk + i;
                if (!state_[cb].included && passes_now[cb] > 0) inclusion.lower_leaf(i, id.layer);
            }
            for (uint32_t i = 0; i < n; ++i) {
                const uint32_t cb = pb.first_cblk + i;
                BlockState &s = state_[cb];
                const uint32_t now = passes_now[cb], added = now - s.passes;
                if (!s.included) {
                    inclusion.encode(i, int32_t{id.layer} + 1, w);
                    if (added == 0) continue;
                    zbp.encode(i, zbp.value(i) + 1, w);
                    s.included = true;
                } else {
                    w.put_bit(added > 0 ? 1 : 0);
                    if (added == 0) continue;
                }
                write_num_passes(added, w);

                const CodeBlockPasses &in = cblks_[cb];
                const uint32_t start_byte = s.passes ? in.pass_end[s.passes - 1] : 0;
                // Least Lblock increment that fits every segment length (B.10.7.1).
                uint32_t need = s.lblock;
                for (uint32_t p = s.passes, from = start_byte; p < now;) {
                    const uint32_t e = std::min(now, codeword_segment_end(style, p));
                    const uint32_t to = in.pass_end[e - 1];
                    J2KC_CHECK_ARG(to >= from, "code-block %u: pass ends decrease at pass %u", cb, e - 1);
                    J2KC_CHECK_ARG(!in.pass_terminated || e != codeword_segment_end(style, p) ||
                                       in.pass_terminated[e - 1],
                                   "code-block %u: pass %u ends a codeword segment but is not terminated", cb,
                                   e - 1);
                    const uint32_t bits = bits_for_value(to - from), log2p = log2_floor_u32(e - p);
                    if (bits > log2p) need = std::max(need, bits - log2p);
                    from = to;
                    p = e;
                }
                for (uint32_t k = s.lblock; k < need; ++k) w.put_bit(1);
                w.put_bit(0);
                s.lblock = static_cast<uint8_t>(need);
                for (uint32_t p = s.passes, from = start_byte; p < now;) {
                    const uint32_t e = std::min(now, codeword_segment_end(style, p));
                    const uint32_t to = in.pass_end[e - 1];
                    const uint32_t nbits = s.lblock + log2_floor_u32(e - p);
                    J2KC_CHECK_ARG(nbits <= 32, "code-block %u: %u-bit length field", cb, nbits);
                    w.put_bits(to - from, nbits);
                    from = to;
                    p = e;
                }
                const uint32_t end_byte = in.pass_end[now - 1];
                runs_.push_back(BodyRun{cb, start_byte, end_byte});
                body += end_byte - start_byte;
                s.passes = now;
            }
        }
        return body;
    }

    const std::vector<BodyRun> &runs() const { return runs_; }

    /** Saves the state a packet of precinct (c, r, p) can change. */
    void save(const PacketId &id)
    {
        const uint32_t flat = trees_.table().index(id.component, id.resolution, id.precinct);
        const Precinct &prec = layout_.components[id.component].resolutions[id.resolution].precincts[id.precinct];
        saved_nodes_begin_ = trees_.nodes_begin(flat);
        const uint32_t nodes_end = trees_.nodes_end(flat);
        saved_inclusion_.assign(trees_.inclusion_nodes().begin() + saved_nodes_begin_,
                                trees_.inclusion_nodes().begin() + nodes_end);
        saved_zbp_.assign(trees_.zero_bitplane_nodes().begin() + saved_nodes_begin_,
                          trees_.zero_bitplane_nodes().begin() + nodes_end);
        saved_cblk_begin_ = prec.bands.empty() ? 0 : prec.bands.front().first_cblk;
        const uint32_t cblk_end = prec.bands.empty() ? 0 : prec.bands.back().first_cblk + prec.bands.back().num_cblks();
        saved_blocks_.assign(state_.begin() + saved_cblk_begin_, state_.begin() + cblk_end);
    }
    /** Puts back what save() kept. */
    void restore()
    {
        std::copy(saved_inclusion_.begin(), saved_inclusion_.end(),
                  trees_.inclusion_nodes().begin() + saved_nodes_begin_);
        std::copy(saved_zbp_.begin(), saved_zbp_.end(), trees_.zero_bitplane_nodes().begin() + saved_nodes_begin_);
        std::copy(saved_blocks_.begin(), saved_blocks_.end(), state_.begin() + saved_cblk_begin_);
    }

private:
    const TileLayout &layout_;
    std::vector<uint8_t> styles_;
    const CodeBlockPasses *cblks_;
    PrecinctTrees trees_;
    std::vector<BlockState> state_;
    std::vector<BodyRun> runs_;
    uint32_t saved_nodes_begin_ = 0, saved_cblk_begin_ = 0;
    std::vector<TagTreeNode> saved_inclusion_, saved_zbp_;
    std::vector<BlockState> saved_blocks_;
};

namespace {

constexpr uint32_t kSopBytes = 6, kEphBytes = 2;

uint32_t to_u32(uint64_t v, const char *what)
{
    J2KC_CHECK_LIMIT(v <= UINT32_MAX, "%s of %llu bytes", what, static_cast<unsigned long long>(v));
    return static_cast<uint32_t>(v);
}

}  // namespace

void encode_tile_packets(const TileLayout &layout, const PacketEncodeParams &params,
                         const CodeBlockPasses *cblks, const uint32_t *layer_passes, EncodedTilePackets &out)
{
    out.data.clear();
    out.headers.clear();
    out.packets.clear();
    PacketHeaderCoder coder(layout, params.cblk_style, cblks);
    const size_t ncblk = layout.code_blocks.size();
    uint32_t sequence = 0;
    for_each_packet(layout, params.layers, params.progression, params.progression_changes,
                    [&](const PacketId &id) {
                        PacketRecord rec;
                        rec.id = id;
                        rec.offset = to_u32(out.data.size(), "tile data");
                        if (params.sop) {
                            const uint8_t sop[kSopBytes] = {0xFF, 0x91, 0x00, 0x04,
                                                            static_cast<uint8_t>(sequence >> 8),
                                                            static_cast<uint8_t>(sequence)};
                            out.data.insert(out.data.end(), sop, sop + kSopBytes);
                        }
                        std::vector<uint8_t> &hbuf = params.packed_headers ? out.headers : out.data;
                        rec.header_offset = to_u32(hbuf.size(), "packet headers");
                        VectorHeaderWriter w(hbuf, hbuf.size());
                        const uint64_t body = coder.code_packet(id, layer_passes + id.layer * ncblk, w);
                        rec.header_length = w.finish();
                        if (params.eph) {
                            hbuf.push_back(0xFF);
                            hbuf.push_back(0x92);
                            rec.header_length += kEphBytes;
                        }
                        rec.body_length = to_u32(body, "packet body");
                        for (const PacketHeaderCoder::BodyRun &run : coder.runs()) {
                            const uint8_t *src = cblks[run.cblk].data;
                            out.data.insert(out.data.end(), src + run.begin, src + run.end);
                        }
                        rec.length = to_u32(out.data.size() - rec.offset, "packet");
                        out.packets.push_back(rec);
                        sequence = (sequence + 1) & 0xFFFF;
                        return true;
                    });
}

uint64_t tile_packets_size(const TileLayout &layout, const PacketEncodeParams &params,
                           const CodeBlockPasses *cblks, const uint32_t *layer_passes)
{
    PacketHeaderCoder coder(layout, params.cblk_style, cblks);
    const size_t ncblk = layout.code_blocks.size();
    const uint64_t per_packet = (params.sop ? kSopBytes : 0) + (params.eph ? kEphBytes : 0);
    uint64_t total = 0;
    for_each_packet(layout, params.layers, params.progression, params.progression_changes,
                    [&](const PacketId &id) {
                        CountingHeaderWriter w;
                        total += coder.code_packet(id, layer_passes + id.layer * ncblk, w);
                        total += w.finish() + per_packet;
                        return true;
                    });
    return total;
}

LayerSizer::LayerSizer(const TileLayout &layout, const PacketEncodeParams &params, const CodeBlockPasses *cblks)
    : layout_(layout), params_(params), coder_(std::make_unique<PacketHeaderCoder>(layout, params.cblk_style, cblks))
{
    // The packets each layer really has (a POC may leave some out).
    packets_.resize(params.layers);
    for_each_packet(layout, params.layers, params.progression, params.progression_changes,
                    [&](const PacketId &id) {
                        packets_[id.layer].push_back(id);
                        return true;
                    });
}

LayerSizer::~LayerSizer() = default;

uint64_t LayerSizer::run_layer(const uint32_t *passes_through, bool commit)
{
    J2KC_CHECK_ARG(layer_ < params_.layers, "layer %u of %u", layer_, params_.layers);
    const uint64_t per_packet = (params_.sop ? kSopBytes : 0) + (params_.eph ? kEphBytes : 0);
    uint64_t total = 0;
    // Packet order within a layer does not change sizes: each header depends
    // on its own precinct's earlier layers only.
    for (const PacketId &id : packets_[layer_]) {
        if (!commit) coder_->save(id);
        CountingHeaderWriter w;
        total += coder_->code_packet(id, passes_through, w);
        total += w.finish() + per_packet;
        if (!commit) coder_->restore();
    }
    if (commit) ++layer_;
    return total;
}

uint64_t LayerSizer::layer_bytes(const uint32_t *passes_through) { return run_layer(passes_through, false); }

uint64_t LayerSizer::commit_layer(const uint32_t *passes_through) { return run_layer(passes_through, true); }

uint32_t LayerSizer::packet_header_bytes(const PacketId &id, const uint32_t *passes_through)
{
    J2KC_CHECK_ARG(layer_ < params_.layers, "layer %u of %u", layer_, params_.layers);
    J2KC_CHECK_ARG(id.component < layout_.components.size() &&
                       id.resolution < layout_.components[id.component].resolutions.size() &&
                       id.precinct < layout_.components[id.component].resolutions[id.resolution].num_precincts(),
                   "no precinct %u of resolution %u, component %u", id.precinct, id.resolution, id.component);
    const PacketId at{layer_, id.resolution, id.component, id.precinct};
    coder_->save(at);
    CountingHeaderWriter w;
    coder_->code_packet(at, passes_through, w);
    const uint32_t n = w.finish() + (params_.eph ? kEphBytes : 0);
    coder_->restore();
    return n;
}

}  // namespace j2kc
