/**
 * @file host_device.h
 * @brief J2KC_HD marks the bit-defining primitives that the CPU reference and
 * the CUDA kernels share, so both backends compile the very same code.
 */
#pragma once

#if defined(__CUDACC__)
#define J2KC_HD __host__ __device__ __forceinline__
#define J2KC_DEVICE_CONST __device__ __constant__
#else
#define J2KC_HD inline
#define J2KC_DEVICE_CONST
#endif

/** Keeps a loop rolled on the device, where code size costs instruction
 *  fetches (host compilers decide for themselves). */
#if defined(__CUDACC__)
#define J2KC_DEVICE_NO_UNROLL _Pragma("unroll 1")
#else
#define J2KC_DEVICE_NO_UNROLL
#endif

#if defined(__CUDACC__)
#include <cstdint>

namespace j2kc {

/** OR of v over the whole warp, on every lane: one instruction from sm_80
 *  on, a butterfly of shuffles on the older chips the library still runs on. */
__device__ __forceinline__ uint32_t warp_or(uint32_t v)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_or_sync(0xFFFFFFFFu, v);
#else
    for (uint32_t d = 16; d > 0; d >>= 1) v |= __shfl_xor_sync(0xFFFFFFFFu, v, d);
    return v;
#endif
}

}  // namespace j2kc
#endif
