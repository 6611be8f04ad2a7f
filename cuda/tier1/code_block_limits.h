/**
 * @file code_block_limits.h
 * @brief The code-block limits every block coder (Part 1 and HT, CPU and
 * GPU) checks: the code-block sizes of ISO/IEC 15444-1 A.6.1 (xcb, ycb at
 * most 10, xcb + ycb at most 12) and the bit-planes the 32-bit coefficient
 * format carries. Host and device code alike may include it.
 */
#pragma once

#include <cstdint>

namespace j2kc {

/** Largest code-block side and area: 2^10 and 2^12 samples. */
constexpr uint32_t kCodeBlockMaxSide = 1024;
constexpr uint32_t kCodeBlockMaxSamples = 4096;
/** Most bit-planes (Mb + s) a block can carry in the 32-bit output format. */
constexpr uint32_t kCodeBlockMaxBitplanes = 30;

}  // namespace j2kc
