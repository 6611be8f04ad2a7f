/**
 * @file scan.h
 * @brief The only door to CUB: device-wide exclusive prefix sum and sum
 * reduction (the offset and size computations of Bruns et al., "Evaluation
 * of GPU/CPU Co-Processing Models for JPEG 2000 Packetization", section VII).
 * Every CUB call of the library goes through here, so that a driver-API/PTX
 * route needs to replace this header only. Include from .cu files only.
 *
 * Each operation has a *_temp_bytes() query for its workspace (size it once
 * per geometry, then pass the same buffer to every call: no allocation per
 * frame). Integer sums are exact, so results do not depend on CUB's order.
 */
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>

#include "common/cuda_util.cuh"

namespace j2kc {

/** Workspace bytes of scan_exclusive_sum over n items of T. */
template <typename T>
size_t scan_exclusive_sum_temp_bytes(uint32_t n)
{
    size_t bytes = 0;
    check_cuda(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const T *>(nullptr), static_cast<T *>(nullptr),
                                             static_cast<int>(n)),
               "cub::DeviceScan::ExclusiveSum (size query)");
    return bytes;
}

/** out[i] = in[0] + ... + in[i - 1] (out[0] = 0), on `stream`; in == out is allowed. */
template <typename T>
void scan_exclusive_sum(const T *in, T *out, uint32_t n, void *temp, size_t temp_bytes, cudaStream_t stream)
{
    if (n == 0) return;
    check_cuda(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, in, out, static_cast<int>(n), stream),
               "cub::DeviceScan::ExclusiveSum");
}

/** Workspace bytes of reduce_sum over n items of T. */
template <typename T>
size_t reduce_sum_temp_bytes(uint32_t n)
{
    size_t bytes = 0;
    check_cuda(cub::DeviceReduce::Sum(nullptr, bytes, static_cast<const T *>(nullptr), static_cast<T *>(nullptr),
                                      static_cast<int>(n)),
               "cub::DeviceReduce::Sum (size query)");
    return bytes;
}

/** *out = in[0] + ... + in[n - 1] (device memory), on `stream`. */
template <typename T>
void reduce_sum(const T *in, T *out, uint32_t n, void *temp, size_t temp_bytes, cudaStream_t stream)
{
    check_cuda(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, static_cast<int>(n), stream),
               "cub::DeviceReduce::Sum");
}

}  // namespace j2kc
