/**
 * @file cuda_device.cu
 * @brief Device probing through the CUDA runtime (statically linked; the
 * driver library is loaded only here, on first use).
 */
#include <cuda_runtime.h>

#include <cstdlib>

#include "common/status.h"
#include "pipeline/cuda_device.h"

namespace j2kc {
namespace {

/**
 * CUDA gives a device 8 hardware work queues unless CUDA_DEVICE_MAX_CONNECTIONS
 * says otherwise, and streams that share a queue wait on each other's work in
 * launch order. The encoder keeps up to 16 frames in flight on 2 streams each,
 * so with 8 queues a frame's short rate-control kernels queue behind other
 * frames' Tier-1. 16 queues gain about a fifth at DCI 2K, more gain nothing,
 * and DCI 4K and decoding are unchanged (docs/measurements.md). The variable is read when a CUDA context is
 * made, so it is set when the library is loaded, before any context exists in
 * the process (FFmpeg makes its own for -hwaccel cuda); a value the user set
 * is kept.
 */
__attribute__((constructor)) void widen_cuda_work_queues()
{
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", "16", /*overwrite=*/0);
}

cudaError_t probe(int ordinal)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) return err;
    if (ordinal < 0 || ordinal >= count) return cudaErrorInvalidDevice;
    cudaDeviceProp prop;
    return cudaGetDeviceProperties(&prop, ordinal);
}

}  // namespace

bool cuda_device_usable(int ordinal)
{
    const bool ok = probe(ordinal) == cudaSuccess;
    cudaGetLastError();  // leave no sticky error for the next caller
    return ok;
}

void require_cuda_device(int ordinal)
{
    const cudaError_t err = probe(ordinal);
    cudaGetLastError();
    if (err != cudaSuccess)
        fail(J2KC_ERR_NO_DEVICE, "CUDA device %d is not usable: %s", ordinal, cudaGetErrorString(err));
}

}  // namespace j2kc
