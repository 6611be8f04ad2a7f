/**
 * @file tag_tree.h
 * @brief Tag trees (ISO/IEC 15444-1 B.10.2): the inclusion and zero-bit-plane
 * information of a precinct-band's code-blocks.
 *
 * A tag tree over a W x H array of leaves is stored flat in caller memory:
 * level 0 (the leaves, raster order) first, then each coarser level
 * (ceil(W/2) x ceil(H/2), ...) up to the 1 x 1 root. Every node holds its value
 * (the minimum of its children), the lower bound already told to the decoder
 * (`low`) and, on the encoder side, whether the value itself has been sent.
 *
 * Encoding a leaf against a threshold t walks root to leaf; at each node it
 * emits a 0 for every step that raises the node's lower bound (starting at
 * the parent's bound), and a 1 when the bound reaches the value, as long as
 * the bound stays below t. The decoder (TagTreeDecoder, on the host)
 * mirrors that walk. TagTree's functions are J2KC_HD with no allocation,
 * templated on the bit sink, so a GPU packet-header writer shares them with
 * the CPU reference.
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace j2kc {

/** Enough levels for 2^31 leaves a side (precinct-bands need at most 2^15). */
constexpr uint32_t kTagTreeMaxLevels = 32;
/** Value of a node the decoder does not know yet, or of a leaf never coded. */
constexpr int32_t kTagTreeUnknown = 0x7FFFFFFF;

struct TagTreeNode {
    int32_t value = kTagTreeUnknown;
    int32_t low = 0;
    uint32_t known = 0;
};

/**
 * One level of a tag tree in its node array: where its nodes start, its
 * width and its height. Level 0 holds the leaves; each level above halves
 * both sides, rounded up, up to a root of one node (B.10.2).
 */
struct TagTreeLevel {
    uint32_t offset = 0, width = 0, height = 0;

    J2KC_HD bool root() const { return width == 1 && height == 1; }
    J2KC_HD TagTreeLevel parent() const { return {offset + width * height, (width + 1) >> 1, (height + 1) >> 1}; }
};

/** Nodes of a tag tree over w x h leaves (0 when empty). */
J2KC_HD uint32_t tag_tree_num_nodes(uint32_t w, uint32_t h)
{
    if (w == 0 || h == 0) return 0;
    TagTreeLevel l{0, w, h};
    while (!l.root()) l = l.parent();
    return l.offset + 1;
}

/**
 * The node indices from leaf (x, y) up to the root: path[0] is the leaf,
 * path[depth - 1] the root. Returns depth.
 */
J2KC_HD uint32_t tag_tree_path(uint32_t w, uint32_t h, uint32_t x, uint32_t y, uint32_t path[kTagTreeMaxLevels])
{
    uint32_t depth = 0;
    for (TagTreeLevel l{0, w, h};; l = l.parent(), x >>= 1, y >>= 1) {
        path[depth++] = l.offset + y * l.width + x;
        if (l.root()) return depth;
    }
}

/**
 * One node of an encoder's walk toward a threshold (B.10.2): from the bound
 * `low` the walk brings (no lower than the node's own), a 0 for each step
 * that raises it toward the node's value below the threshold, then a 1 when
 * the value is reached below the threshold and not known yet. Returns the
 * bound the walk takes on to the node's children.
 */
template <typename Writer>
J2KC_HD int32_t tag_tree_encode_node(int32_t value, int32_t low, int32_t threshold, uint32_t &known, Writer &writer)
{
    while (low < threshold) {
        if (low >= value) {
            if (!known) {
                writer.put_bit(1);
                known = 1;
            }
            break;
        }
        writer.put_bit(0);
        ++low;
    }
    return low;
}

/** A view of one tag tree's nodes; does not own them. */
struct TagTree {
    TagTreeNode *nodes = nullptr;
    uint32_t width = 0, height = 0;

    J2KC_HD uint32_t num_nodes() const { return tag_tree_num_nodes(width, height); }

    /** Every node to `value` with nothing told yet (decoder: kTagTreeUnknown). */
    J2KC_HD void reset(int32_t value = kTagTreeUnknown)
    {
        const uint32_t n = num_nodes();
        for (uint32_t i = 0; i < n; ++i) {
            nodes[i].value = value;
            nodes[i].low = 0;
            nodes[i].known = 0;
        }
    }

    /** Sets leaf `leaf` (y * width + x) without touching its ancestors; see build(). */
    J2KC_HD void set_leaf(uint32_t leaf, int32_t value) { nodes[leaf].value = value; }

    /** Recomputes every inner node as the minimum of its children. */
    J2KC_HD void build()
    {
        if (width == 0 || height == 0) return;
        for (TagTreeLevel l{0, width, height}; !l.root(); l = l.parent()) {
            const TagTreeLevel p = l.parent();
            for (uint32_t i = 0; i < p.width * p.height; ++i) nodes[p.offset + i].value = kTagTreeUnknown;
            for (uint32_t y = 0; y < l.height; ++y) {
                for (uint32_t x = 0; x < l.width; ++x) {
                    const int32_t v = nodes[l.offset + y * l.width + x].value;
                    TagTreeNode &n = nodes[p.offset + (y >> 1) * p.width + (x >> 1)];
                    if (v < n.value) n.value = v;
                }
            }
        }
    }

    /**
     * Lowers leaf `leaf` to `value` and its ancestors with it (encoder side,
     * when a code-block's first layer becomes known). Values only ever go
     * down, so what was already coded against smaller thresholds stays valid.
     */
    J2KC_HD void lower_leaf(uint32_t leaf, int32_t value)
    {
        uint32_t path[kTagTreeMaxLevels];
        const uint32_t depth = tag_tree_path(width, height, leaf % width, leaf / width, path);
        for (uint32_t i = 0; i < depth; ++i) {
            if (value < nodes[path[i]].value) nodes[path[i]].value = value;
        }
    }

    J2KC_HD int32_t value(uint32_t leaf) const { return nodes[leaf].value; }

    /**
     * Codes what the decoder needs to tell whether leaf value < threshold, and
     * the value itself if so. `writer` has put_bit(uint32_t).
     */
    template <typename Writer>
    J2KC_HD void encode(uint32_t leaf, int32_t threshold, Writer &writer)
    {
        uint32_t path[kTagTreeMaxLevels];
        const uint32_t depth = tag_tree_path(width, height, leaf % width, leaf / width, path);
        int32_t low = 0;
        for (uint32_t i = depth; i-- > 0;) {
            TagTreeNode &n = nodes[path[i]];
            // A node is never below its parent's bound.
            if (low > n.low)
                n.low = low;
            else
                low = n.low;
            low = tag_tree_encode_node(n.value, low, threshold, n.known, writer);
            n.low = low;
        }
    }
};

/**
 * Host decoder of one tag tree's leaves against one threshold, leaf after
 * leaf, as a packet header codes a precinct-band's code-blocks: the same
 * bits and node states as walking each leaf from the root (B.10.2), with
 * less work. A walk leaves every node of its path settled for its threshold
 * (its bound at the threshold, or its value known with the bound at it)
 * with a bound no lower than its parent's, so walking the ancestors a leaf
 * shares with the leaf before reads no bit and changes nothing: the walk
 * starts below them, with the deepest one's bound. Leaves in raster order
 * walk about two levels each rather than all, and a level's node comes from
 * its coordinates (no division, no path built).
 */
class TagTreeDecoder {
public:
    TagTreeDecoder(const TagTree &tree, int32_t threshold) : nodes_(tree.nodes), threshold_(threshold)
    {
        if (tree.width == 0 || tree.height == 0) return;
        for (TagTreeLevel l{0, tree.width, tree.height};; l = l.parent()) {
            offset_[levels_] = l.offset;
            width_[levels_] = l.width;
            ++levels_;
            if (l.root()) return;
        }
    }

    /** Decodes leaf (x, y) against the threshold: true when its value is below it. */
    template <typename Reader>
    bool decode(uint32_t x, uint32_t y, Reader &reader)
    {
        // Level k's node of (x, y) is (x >> k, y >> k): shared with the last
        // leaf from the level of the highest bit in which they differ on.
        uint32_t level = levels_;
        if (walked_) {
            const uint32_t differ = (x ^ last_x_) | (y ^ last_y_);
            const uint32_t width = differ ? 32 - static_cast<uint32_t>(__builtin_clz(differ)) : 0;
            if (width < level) level = width;
        }
        int32_t low = level < levels_ ? nodes_[node(level, x, y)].low : 0;
        while (level-- > 0) {
            TagTreeNode &n = nodes_[node(level, x, y)];
            if (low > n.low)
                n.low = low;
            else
                low = n.low;
            while (low < threshold_ && low < n.value) {
                if (reader.bit())
                    n.value = low;
                else
                    ++low;
            }
            n.low = low;
        }
        last_x_ = x;
        last_y_ = y;
        walked_ = true;
        return nodes_[node(0, x, y)].value < threshold_;
    }

    /** The value of leaf (x, y), once decode() said it is below the threshold. */
    int32_t value(uint32_t x, uint32_t y) const { return nodes_[node(0, x, y)].value; }

private:
    uint32_t node(uint32_t level, uint32_t x, uint32_t y) const
    {
        return offset_[level] + (y >> level) * width_[level] + (x >> level);
    }

    TagTreeNode *nodes_;
    int32_t threshold_;
    uint32_t levels_ = 0;
    uint32_t offset_[kTagTreeMaxLevels];
    uint32_t width_[kTagTreeMaxLevels];
    uint32_t last_x_ = 0, last_y_ = 0;
    bool walked_ = false;
};

}  // namespace j2kc
