/**
 * @file progression.h
 * @brief Packet order of a tile (ISO/IEC 15444-1 B.12): the five progression
 * orders (LRCP, RLCP, RPCL, PCRL, CPRL), the position-driven ones walking the
 * reference grid with component subsampling and precinct sizes, and
 * progression order changes (POC, A.6.6) where each packet comes once only.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "codestream/markers.h"
#include "geometry/partition.h"

namespace j2kc {

enum ProgressionOrder : uint8_t { kLRCP = 0, kRLCP = 1, kRPCL = 2, kPCRL = 3, kCPRL = 4 };

/** One packet: layer, resolution r, component, precinct (raster index in the resolution). */
struct PacketId {
    uint16_t layer = 0;
    uint8_t resolution = 0;
    uint16_t component = 0;
    uint32_t precinct = 0;
    bool operator==(const PacketId &o) const
    {
        return layer == o.layer && resolution == o.resolution && component == o.component && precinct == o.precinct;
    }
};

/** Flat numbering of every precinct of a tile: component, then resolution, then raster. */
class PrecinctTable {
public:
    PrecinctTable() = default;
    explicit PrecinctTable(const TileLayout &layout);

    uint32_t index(uint16_t component, uint8_t resolution, uint32_t precinct) const
    {
        return base_[component_base_[component] + resolution] + precinct;
    }
    uint32_t size() const { return total_; }

private:
    std::vector<uint32_t> component_base_;  ///< per component: its first entry in base_
    std::vector<uint32_t> base_;            ///< per (component, resolution): first flat index
    uint32_t total_ = 0;
};

/**
 * Visits the packets of a tile in the order of B.12: with no POC entries,
 * `progression` over all layers, resolutions, components and precincts; with
 * POC entries (Codestream::progression_changes), each entry in turn over its
 * ranges (ends exclusive, clamped to what exists; resolutions a component
 * lacks are skipped), a packet that an earlier entry emitted is not emitted
 * again, and packets no entry covers are not emitted (as OpenJPEG reads them).
 * `visit` returns false to stop early. Returns the number of packets visited.
 * Throws INVALID_DATA for a progression value above 4.
 */
uint64_t for_each_packet(const TileLayout &layout, uint16_t layers, uint8_t progression,
                         const std::vector<ProgressionChange> &changes,
                         const std::function<bool(const PacketId &)> &visit);

/** The whole packet sequence of for_each_packet(). */
std::vector<PacketId> packet_order(const TileLayout &layout, uint16_t layers, uint8_t progression,
                                   const std::vector<ProgressionChange> &changes = {});

/** layers x (number of precincts of the tile): the packets of a complete tile. */
uint64_t packet_count(const TileLayout &layout, uint16_t layers);

}  // namespace j2kc
