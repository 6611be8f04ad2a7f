/**
 * @file host_memory.cu
 * @brief host_memory.h: aligned memory, or portable page-locked memory
 * (cudaHostAlloc) of a device's primary context.
 *
 * The primary context, not one the caller lent the decoder: memory from
 * cudaHostAlloc goes with the context that made it, and a frame may outlive
 * a lent context, while the primary context lives as long as the process
 * (cudaDeviceReset aside). Portable memory is page-locked for every context,
 * so a decoder in a lent context still copies into it by DMA.
 */
#include "pipeline/host_memory.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "common/cuda_util.cuh"
#include "common/status.h"

namespace j2kc {
namespace {

/** Lies in the 64 bytes before the caller's bytes: how to free them. */
struct alignas(64) Header {
    int device;  ///< the device whose primary context holds them page-locked, or -1: plain memory
};

Header *header_of(void *data) { return static_cast<Header *>(data) - 1; }

void *page_locked(size_t bytes, int device)
{
    DeviceGuard guard(device);
    void *p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        fail(J2KC_ERR_NOMEM, "no page-locked memory for %zu bytes", bytes);
    }
    check_cuda(e, "cudaHostAlloc");
    return p;
}

}  // namespace

void *host_memory_allocate(size_t bytes, int page_lock_device)
{
    if (bytes > SIZE_MAX - 2 * sizeof(Header)) fail(J2KC_ERR_NOMEM, "no room for %zu bytes", bytes);
    const size_t total = (bytes + 2 * sizeof(Header) - 1) / sizeof(Header) * sizeof(Header);
    void *base =
        page_lock_device >= 0 ? page_locked(total, page_lock_device) : std::aligned_alloc(sizeof(Header), total);
    if (!base) fail(J2KC_ERR_NOMEM, "no room for %zu bytes", bytes);
    std::memset(base, 0, total);
    auto *header = new (base) Header{page_lock_device};
    return header + 1;
}

void host_memory_free(void *data) noexcept
{
    if (!data) return;
    Header *header = header_of(data);
    if (header->device < 0) {
        std::free(header);
        return;
    }
    try {
        DeviceGuard guard(header->device);
        cudaFreeHost(header);
    } catch (const Error &) {
        // The device cannot be made current: the memory goes with the process.
    }
    cudaGetLastError();  // leave no error behind for the caller's next CUDA call
}

}  // namespace j2kc
