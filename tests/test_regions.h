/**
 * @file test_regions.h
 * @brief Regions that reach every boundary case of a tiled 2-D transform:
 * a single sample, single rows and columns, odd sizes at odd origins, a
 * whole tile, and more than one tile each way.
 */
#pragma once

#include <vector>

#include "geometry/partition.h"

namespace j2kc_test {

inline std::vector<j2kc::Rect> odd_regions()
{
    return {
        {0, 0, 1, 1},
        {1, 0, 8, 1},
        {0, 3, 1, 12},
        {3, 1, 3 + 17, 1 + 9},
        {0, 0, 64, 64},
        {5, 2, 5 + 331, 2 + 203},
        {1, 3, 1 + 1030, 3 + 141},
    };
}

}  // namespace j2kc_test
