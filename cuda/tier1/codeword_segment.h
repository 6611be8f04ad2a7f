/**
 * @file codeword_segment.h
 * @brief One codeword segment of a code-block (the bytes between two
 * terminations, B.10.7 / D.4): the unit Tier-2 delivers and Tier-1 decodes.
 */
#pragma once

#include <cstdint>

namespace j2kc {

struct CodewordSegment {
    uint32_t length = 0;  ///< bytes
    uint32_t passes = 0;  ///< coding passes in it (the last segment may be cut short)
};

}  // namespace j2kc
