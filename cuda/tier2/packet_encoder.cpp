/**
 * @file packet_encoder.cpp
 * @brief ISO/IEC 15444-1 B.9 packets of a tile on the CPU: headers (B.10) by
 * the coder both backends share (packet_header_core.h), bodies, A.8.1 SOP and
 * A.8.2 EPH, in the packet order of B.12.
 */
#include "tier2/packet_encoder.h"

#include <algorithm>

#include "common/status.h"
#include "tier2/bit_io.h"
#include "tier2/packet_header_core.h"
#include "tier2/precinct_trees.h"

namespace j2kc {
namespace {

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

/** What the packets sent so far tell the decoder about a code-block. */
struct BlockState {
    uint8_t lblock = kLblockStart;
    uint32_t passes = 0;  ///< included once non-zero
};

}  // namespace

/**
 * Header-coding state of a whole tile: tag trees of every precinct-band and
 * Lblock and passes sent of every code-block.
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
                for (uint32_t p = 0; p < tc.resolutions[r].precincts.size(); ++p) {
                    PrecinctState precinct(*this, PacketId{0, r, c, p}, nullptr);
                    for (uint32_t b = 0; b < precinct.num_bands(); ++b)
                        reset_packet_header_band(precinct, precinct.band(b));
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
        runs_.clear();
        PrecinctState precinct(*this, id, passes_now);
        return code_packet_header(precinct, styles_[id.component], id.layer, w);
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
    /** One precinct at one layer, as code_packet_header() sees it (cb: index in TileLayout::code_blocks). */
    class PrecinctState {
    public:
        PrecinctState(PacketHeaderCoder &coder, const PacketId &id, const uint32_t *passes_now)
            : coder_(coder), id_(id), passes_now_(passes_now),
              flat_(coder.trees_.table().index(id.component, id.resolution, id.precinct)),
              precinct_(coder.layout_.components[id.component].resolutions[id.resolution].precincts[id.precinct])
        {}

        uint32_t num_bands() const { return static_cast<uint32_t>(precinct_.bands.size()); }
        PacketHeaderBand band(uint32_t k) const
        {
            const PrecinctBand &pb = precinct_.bands[k];
            return {pb.first_cblk, pb.num_cblks(), coder_.trees_.inclusion(flat_, k, pb),
                    coder_.trees_.zero_bitplanes(flat_, k, pb)};
        }
        uint32_t passes_now(uint32_t cb) const { return passes_now_[cb]; }
        uint32_t passes_sent(uint32_t cb) const { return coder_.state_[cb].passes; }
        uint32_t num_passes(uint32_t cb) const { return coder_.cblks_[cb].num_passes; }
        uint8_t zero_bitplanes(uint32_t cb) const { return coder_.cblks_[cb].zero_bitplanes; }
        const uint32_t *pass_end(uint32_t cb) const { return coder_.cblks_[cb].pass_end; }
        const uint8_t *pass_terminated(uint32_t cb) const { return coder_.cblks_[cb].pass_terminated; }
        uint8_t &lblock(uint32_t cb) { return coder_.state_[cb].lblock; }
        bool part1(uint32_t cb) const { return coder_.cblks_[cb].part1; }
        void contribute(uint32_t cb, uint32_t begin, uint32_t end, uint64_t)
        {
            coder_.runs_.push_back(BodyRun{cb, begin, end});
            coder_.state_[cb].passes = passes_now_[cb];
        }
        void fail(PacketHeaderError error, uint32_t cb, uint32_t x, uint32_t y, uint32_t z) const
        {
            switch (error) {
            case kPacketBadPasses:
                ::j2kc::fail(J2KC_ERR_INVALID_ARG, "code-block %u: %u passes in layer %u (had %u of %u)", cb, x,
                             unsigned{id_.layer}, y, z);
            case kPacketTooManyPasses:
                ::j2kc::fail(J2KC_ERR_INVALID_ARG, "code-block %u: %u passes in one packet", cb, x);
            case kPacketPassEndsDecrease:
                ::j2kc::fail(J2KC_ERR_INVALID_ARG, "code-block %u: pass ends decrease at pass %u", cb, x);
            case kPacketUnterminated:
                ::j2kc::fail(J2KC_ERR_INVALID_ARG,
                             "code-block %u: pass %u ends a codeword segment but is not terminated", cb, x);
            case kPacketLengthField: ::j2kc::fail(J2KC_ERR_INVALID_ARG, "code-block %u: %u-bit length field", cb, x);
            case kPacketMixedFirstLength:
                ::j2kc::fail(J2KC_ERR_INVALID_ARG,
                             "code-block %u of a MIXED tile-component: its first %u passes cannot go out (an HT "
                             "cleanup under 2 bytes, or Part-1 passes empty or over several codeword segments)",
                             cb, x);
            }
        }

    private:
        PacketHeaderCoder &coder_;
        PacketId id_;
        const uint32_t *passes_now_;
        uint32_t flat_;
        const Precinct &precinct_;
    };

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

void encode_tile_packets(const TileLayout &layout, const PacketEncodeParams &params, const CodeBlockPasses *cblks,
                         const uint32_t *layer_passes, EncodedTilePackets &out)
{
    out.data.clear();
    out.headers.clear();
    out.packets.clear();
    PacketHeaderCoder coder(layout, params.cblk_style, cblks);
    const size_t ncblk = layout.code_blocks.size();
    uint32_t sequence = 0;
    for_each_packet(layout, params.layers, params.progression, params.progression_changes, [&](const PacketId &id) {
        PacketRecord rec;
        rec.id = id;
        rec.offset = to_u32(out.data.size(), "tile data");
        if (params.sop) {
            const uint8_t sop[kSopBytes] = {
                0xFF, 0x91, 0x00, 0x04, static_cast<uint8_t>(sequence >> 8), static_cast<uint8_t>(sequence)};
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

uint64_t tile_packets_size(const TileLayout &layout, const PacketEncodeParams &params, const CodeBlockPasses *cblks,
                           const uint32_t *layer_passes)
{
    PacketHeaderCoder coder(layout, params.cblk_style, cblks);
    const size_t ncblk = layout.code_blocks.size();
    const uint64_t per_packet = (params.sop ? kSopBytes : 0) + (params.eph ? kEphBytes : 0);
    uint64_t total = 0;
    for_each_packet(layout, params.layers, params.progression, params.progression_changes, [&](const PacketId &id) {
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
    for_each_packet(layout, params.layers, params.progression, params.progression_changes, [&](const PacketId &id) {
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
