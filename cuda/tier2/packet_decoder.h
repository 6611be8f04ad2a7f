/**
 * @file packet_decoder.h
 * @brief Reading a tile's packets (ISO/IEC 15444-1 B.9-B.12, A.8.1 SOP,
 * A.8.2 EPH, A.7.4/A.7.5 PPM/PPT): packet headers, then per code-block the
 * body bytes and codeword segments Tier-1 decodes.
 */
#pragma once

#include <cstdint>
#include <vector>

#include "codestream/markers.h"
#include "common/thread_pool.h"
#include "geometry/partition.h"
#include "tier2/packet_header.h"

namespace j2kc {

/** A run of a code-block's body bytes inside Tile::data. */
struct CodeBlockChunk {
    const uint8_t *data = nullptr;
    uint32_t length = 0;
};

/** A read-only run of elements owned elsewhere (a TileCodewords' flat arrays). */
template <typename T>
class ElementRun {
public:
    ElementRun() = default;
    ElementRun(const T *first, size_t count) : first_(first), count_(count) {}
    const T *begin() const { return first_; }
    const T *end() const { return first_ + count_; }
    const T *data() const { return first_; }
    size_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    const T &operator[](size_t i) const { return first_[i]; }

private:
    const T *first_ = nullptr;
    size_t count_ = 0;
};

/** Everything Tier-1 needs for one code-block. */
struct CodeBlockCodewords {
    bool included = false;
    uint8_t zero_bitplanes = 0;  ///< from the zero-bit-plane tag tree
    uint8_t lblock = 3;          ///< Lblock after the last layer used
    /// In a MIXED tile-component (ISO/IEC 15444-15, style 0xC0): the packet
    /// headers made it a Part-1 block, coded with the Part-1 modes (style
    /// bits 0..5); otherwise it is HT. Always false outside MIXED mode.
    bool part1 = false;
    uint32_t num_passes = 0;            ///< passes received (first max_layers layers)
    ElementRun<CodeBlockChunk> chunks;  ///< body bytes in order, pointing into Tile::data
    /// Codeword segments in order; their lengths add up to the chunks' lengths
    /// and their passes to num_passes. A segment may span several chunks.
    ElementRun<CodewordSegment> segments;
};

/**
 * Every code-block's codewords of a tile. The chunks and segments of all
 * blocks lie in two flat arrays (a block's runs point into them), so that a
 * frame's Tier-2 allocates a handful of arrays rather than two per block.
 * Movable, not copyable: the runs point into its own arrays.
 */
struct TileCodewords {
    std::vector<CodeBlockCodewords> blocks;  ///< index = code-block index of the layout
    std::vector<CodeBlockChunk> chunks;
    std::vector<CodewordSegment> segments;

    TileCodewords() = default;
    TileCodewords(TileCodewords &&) = default;
    TileCodewords &operator=(TileCodewords &&) = default;
    TileCodewords(const TileCodewords &) = delete;
    TileCodewords &operator=(const TileCodewords &) = delete;

    size_t size() const { return blocks.size(); }
    const CodeBlockCodewords &operator[](size_t i) const { return blocks[i]; }
    std::vector<CodeBlockCodewords>::const_iterator begin() const { return blocks.begin(); }
    std::vector<CodeBlockCodewords>::const_iterator end() const { return blocks.end(); }
};

/** What decode_tile_packets() saw (for diagnostics and tests). */
struct PacketDecodeStats {
    uint64_t packets = 0;           ///< packets fully read
    uint64_t data_consumed = 0;     ///< bytes of Tile::data used
    uint64_t headers_consumed = 0;  ///< bytes of Tile::packed_headers used
    bool truncated = false;         ///< data ended inside a packet or before the last one
    uint32_t runs = 1;              ///< runs of packets read at once on the pool (1: one after the other)
};

/**
 * Reads every packet of `tile` in its progression order (COD/POC in force)
 * and fills `out` (one entry per code-block of the layout). Headers come from Tile::packed_headers when
 * has_packed_headers (PPM/PPT), else from the data; SOP marker segments are
 * skipped where present, EPH markers where Scod announces them. Packets of
 * layers >= max_layers (0 = all) are parsed but add nothing. When the data
 * ends early (a truncated stream), what was read is kept and decoding stops.
 * Malformed headers (impossible Lblock or lengths) throw INVALID_DATA, as
 * does a MIXED-mode Part-1 block after HT placeholder passes; one whose
 * first packet's passes span several Part-1 codeword segments, which its one
 * length field cannot say, throws UNSUPPORTED.
 *
 * With a pool of several threads, packets that the stream locates (tile-parts,
 * PLT) and whose precincts no earlier packet touched are read in runs at
 * once, with the same result; a run that does not join the next, or meets
 * cut or bad data, sends the tile back to one run. A ThreadPool must be idle.
 */
void decode_tile_packets(const Codestream &cs, const Tile &tile, const TileLayout &layout, uint32_t max_layers,
                         TileCodewords &out, PacketDecodeStats *stats = nullptr, ParallelRunner *pool = nullptr);

}  // namespace j2kc
