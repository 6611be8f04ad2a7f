/**
 * @file codewords_compare.h
 * @brief Test helper: two Tier-2 results of one tile, code-block by
 * code-block, the chunks' addresses included (both point into Tile::data).
 */
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tier2/packet_decoder.h"

namespace j2kc_test {

inline void expect_same_codewords(const j2kc::TileCodewords &one, const j2kc::TileCodewords &other,
                                  const std::string &what)
{
    ASSERT_EQ(one.size(), other.size()) << what;
    for (size_t b = 0; b < one.size(); ++b) {
        const j2kc::CodeBlockCodewords &x = one[b], &y = other[b];
        ASSERT_EQ(x.included, y.included) << what << " block " << b;
        ASSERT_EQ(x.zero_bitplanes, y.zero_bitplanes) << what << " block " << b;
        ASSERT_EQ(x.lblock, y.lblock) << what << " block " << b;
        ASSERT_EQ(x.num_passes, y.num_passes) << what << " block " << b;
        ASSERT_EQ(x.chunks.size(), y.chunks.size()) << what << " block " << b;
        for (size_t k = 0; k < x.chunks.size(); ++k) {
            ASSERT_EQ(x.chunks[k].data, y.chunks[k].data) << what << " block " << b;
            ASSERT_EQ(x.chunks[k].length, y.chunks[k].length) << what << " block " << b;
        }
        ASSERT_EQ(x.segments.size(), y.segments.size()) << what << " block " << b;
        for (size_t k = 0; k < x.segments.size(); ++k) {
            ASSERT_EQ(x.segments[k].length, y.segments[k].length) << what << " block " << b;
            ASSERT_EQ(x.segments[k].passes, y.segments[k].passes) << what << " block " << b;
        }
    }
}

}  // namespace j2kc_test
