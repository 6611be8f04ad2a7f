/**
 * @file host_memory.h
 * @brief Host memory for output planes that the decoder writes fastest:
 * page-locked for the CUDA backend (the frame comes down by DMA straight
 * into it), plain otherwise. It belongs to no decoder and to no context a
 * caller lends, so frames that hold it may outlive both.
 */
#pragma once

#include <cstddef>

namespace j2kc {

/**
 * `bytes` of zeroed host memory, 64-byte aligned. With `page_lock_device`
 * >= 0 it is page-locked for every CUDA context, and lives in that device's
 * primary context. Throws NOMEM, or CUDA.
 */
void *host_memory_allocate(size_t bytes, int page_lock_device);

/** Frees what host_memory_allocate gave, whatever its kind; nullptr is fine. Never throws. */
void host_memory_free(void *data) noexcept;

}  // namespace j2kc
