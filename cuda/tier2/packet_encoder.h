/**
 * @file packet_encoder.h
 * @brief Writing a tile's packets (ISO/IEC 15444-1 B.9-B.12, A.8.1 SOP,
 * A.8.2 EPH, A.7.5 PPT-style packed headers) from Tier-1's code-block passes
 * and per-layer truncation points, and measuring them exactly for rate
 * control.
 *
 * Truncation points: `layer_passes` is a flat table [layer][code-block]
 * (index layer * layout.code_blocks.size() + code-block) holding the number of
 * passes of each code-block included in layers 0..layer together; it never
 * decreases from one layer to the next and never exceeds num_passes.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "codestream/markers.h"
#include "geometry/partition.h"
#include "tier2/progression.h"

namespace j2kc {

/** Tier-1's output for one code-block, as Tier-2 reads it (nothing owned). */
struct CodeBlockPasses {
    const uint8_t *data = nullptr;  ///< codeword bytes of all passes, in order
    /// Per pass: bytes of `data` up to and including that pass (non-decreasing).
    /// For a pass that ends a codeword segment it is the terminated length,
    /// else the truncation length Tier-1 estimated for it.
    const uint32_t *pass_end = nullptr;
    /// Optional, per pass: non-zero when the pass was terminated. When given,
    /// every pass that ends a codeword segment of the style (termall: all;
    /// bypass: passes 9, 11, 12, 14, 15, ...) must be terminated.
    const uint8_t *pass_terminated = nullptr;
    uint32_t num_passes = 0;
    uint8_t zero_bitplanes = 0;  ///< P of B.10.5 (missing most significant bit-planes)
    /// In a MIXED tile-component (ISO/IEC 15444-15, style 0xC0): coded by
    /// Part 1's coder with the Part-1 modes; otherwise an HT block. Ignored
    /// outside MIXED mode.
    bool part1 = false;
};

struct PacketEncodeParams {
    uint16_t layers = 1;
    uint8_t progression = kLRCP;
    std::vector<ProgressionChange> progression_changes;  ///< POC entries in force (empty: none)
    bool sop = false;                                    ///< SOP before each packet (Scod bit 1)
    bool eph = false;                                    ///< EPH after each header (Scod bit 2)
    bool packed_headers = false;                         ///< headers to EncodedTilePackets::headers (for PPT/PPM)
    std::vector<uint8_t> cblk_style;                     ///< per component: SPcod/SPcoc code-block style
};

/** Where one packet went. */
struct PacketRecord {
    PacketId id;
    uint32_t offset = 0;         ///< start in EncodedTilePackets::data (at its SOP, if any)
    uint32_t length = 0;         ///< bytes in data: SOP + header + EPH + body (packed: SOP + body); for PLT
    uint32_t header_offset = 0;  ///< packed: start of its header (with EPH) in `headers`
    uint32_t header_length = 0;  ///< header bytes including EPH, wherever they are
    uint32_t body_length = 0;    ///< code-block bytes
};

struct EncodedTilePackets {
    std::vector<uint8_t> data;          ///< the tile's packet stream (all tile-parts' bodies)
    std::vector<uint8_t> headers;       ///< packed headers in packet order (packed_headers only)
    std::vector<PacketRecord> packets;  ///< in progression order
};

/**
 * Writes every packet of the tile in progression order (POC included).
 * `cblks` has layout.code_blocks.size() entries. SOP sequence numbers count
 * the tile's packets from 0 (mod 65536). Throws INVALID_ARG on inconsistent
 * truncation points.
 */
void encode_tile_packets(const TileLayout &layout, const PacketEncodeParams &params, const CodeBlockPasses *cblks,
                         const uint32_t *layer_passes, EncodedTilePackets &out);

/** Bytes encode_tile_packets() would produce (data + headers), without writing them. */
uint64_t tile_packets_size(const TileLayout &layout, const PacketEncodeParams &params, const CodeBlockPasses *cblks,
                           const uint32_t *layer_passes);

class PacketHeaderCoder;

/**
 * Layer-by-layer sizes for rate control. A packet's header depends on the
 * earlier layers of its precinct only, so a layer's size is known once the
 * layers below it are fixed: probe layer L with any truncation points
 * (layer_bytes, packet_header_bytes: no state change), then commit_layer()
 * and go on with L + 1. The byte counts are exactly those encode_tile_packets()
 * writes for the same truncation points.
 */
class LayerSizer {
public:
    LayerSizer(const TileLayout &layout, const PacketEncodeParams &params, const CodeBlockPasses *cblks);
    ~LayerSizer();
    LayerSizer(const LayerSizer &) = delete;
    LayerSizer &operator=(const LayerSizer &) = delete;

    /** The next layer to probe or commit. */
    uint16_t layer() const { return layer_; }
    /**
     * Bytes all packets of layer() would take (SOP + header + EPH + bodies),
     * given passes_through[i]: passes of code-block i in layers 0..layer().
     */
    uint64_t layer_bytes(const uint32_t *passes_through);
    /** Header bytes (with EPH, without SOP) of one packet of layer() (id.layer is ignored). */
    uint32_t packet_header_bytes(const PacketId &id, const uint32_t *passes_through);
    /** Fixes layer() with these truncation points; returns its bytes. */
    uint64_t commit_layer(const uint32_t *passes_through);

private:
    uint64_t run_layer(const uint32_t *passes_through, bool commit);

    const TileLayout &layout_;
    PacketEncodeParams params_;
    std::unique_ptr<PacketHeaderCoder> coder_;
    std::vector<std::vector<PacketId>> packets_;  ///< per layer, in progression order
    uint16_t layer_ = 0;
};

}  // namespace j2kc
