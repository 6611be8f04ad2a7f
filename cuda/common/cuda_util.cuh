/**
 * @file cuda_util.cuh
 * @brief CUDA plumbing for the backends: status checks that throw
 * J2KC_ERR_CUDA, grow-only device and pinned buffers (pools sized once per
 * geometry, so steady-state frames allocate nothing), a stream holder, and a
 * guard that makes the caller's device current for the duration of a call.
 */
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <utility>

#include "common/status.h"

namespace j2kc {

inline void check_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        cudaGetLastError();  // clear a non-sticky error so the next call starts clean
        fail(J2KC_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
    }
}

/** Device memory that only grows. */
class DeviceBuffer {
public:
    DeviceBuffer() = default;
    ~DeviceBuffer() { release(); }
    DeviceBuffer(const DeviceBuffer &) = delete;
    DeviceBuffer &operator=(const DeviceBuffer &) = delete;
    DeviceBuffer(DeviceBuffer &&o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}

    void *reserve(size_t bytes)
    {
        if (bytes > size_) {
            release();
            void *p = nullptr;
            const cudaError_t e = cudaMalloc(&p, bytes);
            if (e == cudaErrorMemoryAllocation) {
                cudaGetLastError();
                fail(J2KC_ERR_NOMEM, "cudaMalloc of %zu bytes failed", bytes);
            }
            check_cuda(e, "cudaMalloc");
            ptr_ = p;
            size_ = bytes;
        }
        return ptr_;
    }
    template <typename T>
    T *as() const { return static_cast<T *>(ptr_); }
    size_t size() const { return size_; }

private:
    void release()
    {
        if (ptr_) cudaFree(ptr_);
        ptr_ = nullptr;
        size_ = 0;
    }
    void *ptr_ = nullptr;
    size_t size_ = 0;
};

/** Page-locked host memory that only grows (fast, asynchronous copies). */
class PinnedBuffer {
public:
    PinnedBuffer() = default;
    ~PinnedBuffer() { if (ptr_) cudaFreeHost(ptr_); }
    PinnedBuffer(const PinnedBuffer &) = delete;
    PinnedBuffer &operator=(const PinnedBuffer &) = delete;

    void *reserve(size_t bytes)
    {
        if (bytes > size_) {
            if (ptr_) cudaFreeHost(ptr_);
            ptr_ = nullptr;
            size_ = 0;
            check_cuda(cudaMallocHost(&ptr_, bytes), "cudaMallocHost");
            size_ = bytes;
        }
        return ptr_;
    }
    template <typename T>
    T *as() const { return static_cast<T *>(ptr_); }

private:
    void *ptr_ = nullptr;
    size_t size_ = 0;
};

/** Makes `device` current for a scope and restores the caller's device after. */
class DeviceGuard {
public:
    explicit DeviceGuard(int device)
    {
        cudaGetDevice(&previous_);
        if (device != previous_) check_cuda(cudaSetDevice(device), "cudaSetDevice");
    }
    ~DeviceGuard() { cudaSetDevice(previous_); }
    DeviceGuard(const DeviceGuard &) = delete;
    DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
    int previous_ = 0;
};

/**
 * Makes the caller's CUDA context current for a scope (FFmpeg lends its
 * CUcontext through AVCUDADeviceContext), or else `device`'s primary context.
 * The driver's push/pop are fetched through the runtime, so nothing links
 * against libcuda and a machine without a driver still loads the library.
 */
class ContextScope {
public:
    ContextScope(void *context, int device) : context_(context)
    {
        if (!context_) {
            guard_.emplace(device);
            return;
        }
        check_cuda(resolve(), "cuCtxPushCurrent lookup");
        if (push_(context_) != 0) fail(J2KC_ERR_CUDA, "cuCtxPushCurrent failed for the lent context");
    }
    ~ContextScope()
    {
        if (context_) {
            void *popped = nullptr;
            pop_(&popped);
        }
    }
    ContextScope(const ContextScope &) = delete;
    ContextScope &operator=(const ContextScope &) = delete;

private:
    using PushFn = int (*)(void *);
    using PopFn = int (*)(void **);
    cudaError_t resolve()
    {
        cudaDriverEntryPointQueryResult q1, q2;
        void *push = nullptr, *pop = nullptr;
        cudaError_t e = cudaGetDriverEntryPoint("cuCtxPushCurrent", &push, cudaEnableDefault, &q1);
        if (e == cudaSuccess) e = cudaGetDriverEntryPoint("cuCtxPopCurrent", &pop, cudaEnableDefault, &q2);
        if (e == cudaSuccess && (q1 != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess))
            e = cudaErrorSymbolNotFound;
        push_ = reinterpret_cast<PushFn>(push);
        pop_ = reinterpret_cast<PopFn>(pop);
        return e;
    }
    void *context_;
    PushFn push_ = nullptr;
    PopFn pop_ = nullptr;
    std::optional<DeviceGuard> guard_;
};

/** The stream the caller lent, or one of our own on `device`. */
class StreamHolder {
public:
    StreamHolder(void *lent, void *context, int device)
    {
        if (lent) {
            stream_ = static_cast<cudaStream_t>(lent);
        } else {
            ContextScope scope(context, device);
            check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
            owned_ = true;
        }
    }
    ~StreamHolder()
    {
        if (owned_) cudaStreamDestroy(stream_);
    }
    StreamHolder(const StreamHolder &) = delete;
    StreamHolder &operator=(const StreamHolder &) = delete;
    cudaStream_t get() const { return stream_; }
    void sync() const { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

private:
    cudaStream_t stream_ = nullptr;
    bool owned_ = false;
};


}  // namespace j2kc
