/**
 * @file cuda_device.cu
 * @brief Device probing through the CUDA runtime (statically linked; the
 * driver library is loaded only here, on first use).
 */
#include <cuda_runtime.h>

#include "common/status.h"
#include "pipeline/cuda_device.h"

namespace j2kc {
namespace {

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
