/**
 * @file ht_block_coder_core.h
 * @brief What the HTJ2K block encoder (ht_block_encoder_core.h) and decoder
 * (ht_block_decoder_core.h) of Rec. ITU-T T.814 | ISO/IEC 15444-15 derive
 * alike: the block's limits, the exponents of the MEL coder's states, and the
 * bit counts both sides take of magnitudes and significance patterns. One
 * definition, so the two sides cannot drift apart.
 */
#pragma once

#include <cstdint>

#include "tier1/code_block_limits.h"

#if defined(__CUDACC__)
#define J2KC_HT_INLINE __host__ __device__ __forceinline__
#define J2KC_HT_FN __host__ __device__ inline
#define J2KC_HT_BLOCK_FN __host__ __device__ __noinline__ inline
#elif defined(__GNUC__)
#define J2KC_HT_INLINE inline
#define J2KC_HT_FN inline
#define J2KC_HT_BLOCK_FN inline __attribute__((noinline))
#else
#define J2KC_HT_INLINE inline
#define J2KC_HT_FN inline
#define J2KC_HT_BLOCK_FN inline
#endif

namespace j2kc {
namespace ht {

/** Geometry and bit-plane limits of a code-block (code_block_limits.h). */
constexpr uint32_t kMaxSide = kCodeBlockMaxSide;
constexpr uint32_t kMaxSamples = kCodeBlockMaxSamples;
constexpr uint32_t kMaxBitplanes = kCodeBlockMaxBitplanes;

/** MEL exponents of the 13 states of the adaptive run-length coder (T.814 Table 2). */
J2KC_HT_INLINE uint32_t mel_exponent(uint32_t k)
{
    // 0,0,0,1,1,1,2,2,2,3,3,4,5 packed 3 bits per state.
    constexpr uint64_t packed = (0ull << 0) | (0ull << 3) | (0ull << 6) | (1ull << 9) | (1ull << 12) | (1ull << 15) |
                                (2ull << 18) | (2ull << 21) | (2ull << 24) | (3ull << 27) | (3ull << 30) |
                                (4ull << 33) | (5ull << 36);
    return static_cast<uint32_t>(packed >> (3 * k)) & 7u;
}

/** Bits needed to write v (0 for 0). */
J2KC_HT_INLINE uint32_t bit_length(uint32_t v)
{
#if defined(__CUDA_ARCH__)
    return 32u - static_cast<uint32_t>(__clz(static_cast<int>(v)));
#elif defined(__GNUC__)
    return v ? 32u - static_cast<uint32_t>(__builtin_clz(v)) : 0u;
#else
    uint32_t n = 0;
    for (; v; v >>= 1) ++n;
    return n;
#endif
}

/** Set bits of a quad's four-bit pattern (significance rho, or known exponents e_k). */
J2KC_HT_INLINE constexpr uint32_t popcount4(uint32_t v)
{
    return (v & 1u) + ((v >> 1) & 1u) + ((v >> 2) & 1u) + ((v >> 3) & 1u);
}

}  // namespace ht
}  // namespace j2kc
