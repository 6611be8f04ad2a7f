/**
 * @file precinct_trees.h
 * @brief Storage of a tile's tag trees (ISO/IEC 15444-1 B.10.2, B.10.4,
 * B.10.5): one inclusion tree and one zero-bit-plane tree per sub-band of
 * every precinct, all nodes of the tile in two flat arrays (host side; a GPU
 * header writer copies the same arrays).
 */
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "geometry/partition.h"
#include "tier2/progression.h"
#include "tier2/tag_tree.h"

namespace j2kc {

class PrecinctTrees {
public:
    PrecinctTrees() = default;
    explicit PrecinctTrees(const TileLayout &layout) { reset(layout); }

    /** The trees of `layout`, every node in its initial state; the arrays keep their capacity. */
    void reset(const TileLayout &layout)
    {
        reshape(layout);
        inclusion_.assign(inclusion_.size(), TagTreeNode{});
        zero_bitplanes_.assign(zero_bitplanes_.size(), TagTreeNode{});
    }

    /**
     * The trees of `layout` with their nodes in no given state: each
     * precinct's are put in their initial state by reset_precinct() before
     * its first use, so that they are in cache when its first packet reads
     * them rather than written for a whole tile at once.
     */
    void reshape(const TileLayout &layout)
    {
        table_ = PrecinctTable(layout);
        band_base_.clear();
        node_offset_.clear();
        band_base_.reserve(table_.size() + 1);
        uint32_t nodes = 0;
        for (const TileComponent &tc : layout.components) {
            for (const Resolution &res : tc.resolutions) {
                for (const Precinct &prec : res.precincts) {
                    band_base_.push_back(static_cast<uint32_t>(node_offset_.size()));
                    for (const PrecinctBand &pb : prec.bands) {
                        node_offset_.push_back(nodes);
                        nodes += tag_tree_num_nodes(pb.cblks_x, pb.cblks_y);
                    }
                }
            }
        }
        band_base_.push_back(static_cast<uint32_t>(node_offset_.size()));
        node_offset_.push_back(nodes);  // sentinel: the end of the last precinct
        inclusion_.resize(nodes);
        zero_bitplanes_.resize(nodes);
    }

    /** Every node of precinct `flat_precinct`'s trees in its initial state. */
    void reset_precinct(uint32_t flat_precinct)
    {
        const uint32_t begin = nodes_begin(flat_precinct), end = nodes_end(flat_precinct);
        std::fill(inclusion_.begin() + begin, inclusion_.begin() + end, TagTreeNode{});
        std::fill(zero_bitplanes_.begin() + begin, zero_bitplanes_.begin() + end, TagTreeNode{});
    }

    const PrecinctTable &table() const { return table_; }

    TagTree inclusion(uint32_t flat_precinct, uint32_t band, const PrecinctBand &pb)
    {
        return {inclusion_.data() + node_offset_[band_base_[flat_precinct] + band], pb.cblks_x, pb.cblks_y};
    }
    TagTree zero_bitplanes(uint32_t flat_precinct, uint32_t band, const PrecinctBand &pb)
    {
        return {zero_bitplanes_.data() + node_offset_[band_base_[flat_precinct] + band], pb.cblks_x, pb.cblks_y};
    }

    /** The nodes of every band of precinct `flat_precinct`: [begin, end) in both arrays. */
    uint32_t nodes_begin(uint32_t flat_precinct) const { return node_offset_[band_base_[flat_precinct]]; }
    uint32_t nodes_end(uint32_t flat_precinct) const { return node_offset_[band_base_[flat_precinct + 1]]; }

    std::vector<TagTreeNode> &inclusion_nodes() { return inclusion_; }
    std::vector<TagTreeNode> &zero_bitplane_nodes() { return zero_bitplanes_; }

private:
    PrecinctTable table_;
    std::vector<uint32_t> band_base_;    ///< per flat precinct (+1): its first entry in node_offset_
    std::vector<uint32_t> node_offset_;  ///< per precinct-band (+ sentinel): first node in the arrays
    std::vector<TagTreeNode> inclusion_, zero_bitplanes_;
};

}  // namespace j2kc
