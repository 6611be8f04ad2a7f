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
