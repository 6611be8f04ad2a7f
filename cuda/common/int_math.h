/**
 * @file int_math.h
 * @brief Integer helpers for the reference-grid arithmetic of ISO/IEC 15444-1
 * Annex B (ceil/floor divisions by powers of two, and so on).
 */
#pragma once

#include <cstdint>

#include "common/host_device.h"

namespace j2kc {

J2KC_HD uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
J2KC_HD uint64_t ceil_div64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
/** ceil(a / 2^s) for a >= 0, s < 64 */
J2KC_HD uint32_t ceil_div_pow2(uint32_t a, uint32_t s)
{
    return static_cast<uint32_t>((static_cast<uint64_t>(a) + ((uint64_t{1} << s) - 1)) >> s);
}
/** floor(a / 2^s) */
J2KC_HD uint32_t floor_div_pow2(uint32_t a, uint32_t s) { return s >= 32 ? 0 : a >> s; }
J2KC_HD int floor_log2(uint32_t v)
{
    int r = -1;
    while (v) {
        v >>= 1;
        ++r;
    }
    return r;
}

}  // namespace j2kc
