/**
 * @file cuda_util.cuh
 * @brief CUDA plumbing for the backends: status checks that throw
 * J2KC_ERR_CUDA, grow-only device and pinned buffers (pools sized once per
 * geometry, so steady-state frames allocate nothing), owned streams and
 * events, a lent-or-owned stream holder, and a guard that makes the caller's
 * device current for the duration of a call.
 */
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
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

/** Streaming multiprocessors of the current device (at least 1): launch shapes follow it. */
inline uint32_t multiprocessor_count()
{
    int device = 0, count = 0;
    check_cuda(cudaGetDevice(&device), "cudaGetDevice");
    check_cuda(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
    return count > 0 ? static_cast<uint32_t>(count) : 1u;
}

/**
 * Allocations made by DeviceBuffer and PinnedBuffer in this process: tests
 * read it before and after steady-state frames to show that they allocate
 * nothing (the pools are sized once per geometry).
 */
inline std::atomic<uint64_t> &cuda_buffer_allocations()
{
    static std::atomic<uint64_t> count{0};
    return count;
}

/** cudaMalloc and cudaFree, for GrowBuffer: device memory. */
struct DeviceMemory {
    static void *allocate(size_t bytes)
    {
        void *p = nullptr;
        const cudaError_t e = cudaMalloc(&p, bytes);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            fail(J2KC_ERR_NOMEM, "cudaMalloc of %zu bytes failed", bytes);
        }
        check_cuda(e, "cudaMalloc");
        return p;
    }
    static void release(void *p) { cudaFree(p); }
};

/** cudaMallocHost and cudaFreeHost, for GrowBuffer: page-locked host
 *  memory (fast, asynchronous copies). */
struct PinnedMemory {
    static void *allocate(size_t bytes)
    {
        void *p = nullptr;
        check_cuda(cudaMallocHost(&p, bytes), "cudaMallocHost");
        return p;
    }
    static void release(void *p) { cudaFreeHost(p); }
};

/** Memory of one kind (`Memory`: DeviceMemory or PinnedMemory) that only
 *  grows, and is counted in cuda_buffer_allocations. */
template <typename Memory>
class GrowBuffer {
public:
    GrowBuffer() = default;
    ~GrowBuffer() { release(); }
    GrowBuffer(const GrowBuffer &) = delete;
    GrowBuffer &operator=(const GrowBuffer &) = delete;
    GrowBuffer(GrowBuffer &&o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}

    void *reserve(size_t bytes)
    {
        if (bytes > size_) {
            release();
            ptr_ = Memory::allocate(bytes);
            cuda_buffer_allocations().fetch_add(1, std::memory_order_relaxed);
            size_ = bytes;
        }
        return ptr_;
    }
    template <typename T>
    T *as() const
    {
        return static_cast<T *>(ptr_);
    }
    size_t size() const { return size_; }

private:
    void release()
    {
        if (ptr_) Memory::release(ptr_);
        ptr_ = nullptr;
        size_ = 0;
    }
    void *ptr_ = nullptr;
    size_t size_ = 0;
};

/** Device memory that only grows. */
using DeviceBuffer = GrowBuffer<DeviceMemory>;
/** Page-locked host memory that only grows. */
using PinnedBuffer = GrowBuffer<PinnedMemory>;

/** A DeviceBuffer seen as an array of T, never empty (so its pointer is never null). */
template <typename T>
class DeviceArray {
public:
    T *reserve(size_t n) { return static_cast<T *>(buffer_.reserve(std::max<size_t>(n, 1) * sizeof(T))); }
    T *get() const { return buffer_.as<T>(); }

private:
    DeviceBuffer buffer_;
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
        const DriverCalls &d = driver();
        check_cuda(d.status, "cuCtxPushCurrent lookup");
        if (d.push(context_) != 0) fail(J2KC_ERR_CUDA, "cuCtxPushCurrent failed for the lent context");
    }
    ~ContextScope()
    {
        if (context_) {
            void *popped = nullptr;
            driver().pop(&popped);
        }
    }
    ContextScope(const ContextScope &) = delete;
    ContextScope &operator=(const ContextScope &) = delete;

private:
    using PushFn = int (*)(void *);
    using PopFn = int (*)(void **);
    struct DriverCalls {
        cudaError_t status = cudaSuccess;
        PushFn push = nullptr;
        PopFn pop = nullptr;
    };
    /**
     * Looked up once per process (every encoder call opens a scope, so a
     * lookup per scope would be per-frame host work). The ABI version is
     * pinned: 12000 names the cuCtxPushCurrent_v2 / cuCtxPopCurrent_v2
     * signatures used here, whatever driver runs.
     */
    static const DriverCalls &driver()
    {
        static const DriverCalls calls = [] {
            DriverCalls d;
            cudaDriverEntryPointQueryResult q1 = cudaDriverEntryPointSymbolNotFound, q2 = q1;
            void *push = nullptr, *pop = nullptr;
#if CUDART_VERSION >= 12050
            d.status = cudaGetDriverEntryPointByVersion("cuCtxPushCurrent", &push, 12000, cudaEnableDefault, &q1);
            if (d.status == cudaSuccess)
                d.status = cudaGetDriverEntryPointByVersion("cuCtxPopCurrent", &pop, 12000, cudaEnableDefault, &q2);
#else
            d.status = cudaGetDriverEntryPoint("cuCtxPushCurrent", &push, cudaEnableDefault, &q1);
            if (d.status == cudaSuccess)
                d.status = cudaGetDriverEntryPoint("cuCtxPopCurrent", &pop, cudaEnableDefault, &q2);
#endif
            if (d.status == cudaSuccess && (q1 != cudaDriverEntryPointSuccess || q2 != cudaDriverEntryPointSuccess))
                d.status = cudaErrorSymbolNotFound;
            if (d.status != cudaSuccess) cudaGetLastError();
            d.push = reinterpret_cast<PushFn>(push);
            d.pop = reinterpret_cast<PopFn>(pop);
            return d;
        }();
        return calls;
    }
    void *context_;
    std::optional<DeviceGuard> guard_;
};

/**
 * A CUDA runtime handle of our own (a stream, an event), destroyed with its
 * owner by `Destroy`. Destroy it in the context that made it (owners that
 * outlive a call open a ContextScope in their destructor). Empty until the
 * owning class makes one, so handles that only some paths need cost
 * nothing otherwise.
 */
template <typename Handle, cudaError_t (*Destroy)(Handle)>
class CudaOwned {
public:
    CudaOwned() = default;
    ~CudaOwned() { reset(); }
    CudaOwned(const CudaOwned &) = delete;
    CudaOwned &operator=(const CudaOwned &) = delete;
    CudaOwned(CudaOwned &&o) noexcept : handle_(std::exchange(o.handle_, nullptr)) {}
    CudaOwned &operator=(CudaOwned &&o) noexcept
    {
        if (this != &o) {
            reset();
            handle_ = std::exchange(o.handle_, nullptr);
        }
        return *this;
    }

    void reset()
    {
        if (handle_) Destroy(handle_);
        handle_ = nullptr;
    }
    Handle get() const { return handle_; }

protected:
    /** Takes `h` (made by the caller), replacing any held handle. */
    void adopt(Handle h)
    {
        reset();
        handle_ = h;
    }

private:
    Handle handle_ = nullptr;
};

/** A CUDA stream of our own, created with flags and a priority. */
class CudaStream : public CudaOwned<cudaStream_t, cudaStreamDestroy> {
public:
    CudaStream() = default;
    explicit CudaStream(unsigned flags, int priority = 0) { create(flags, priority); }

    /** Makes a new stream (replacing any held one); priority 0 is the default priority. */
    void create(unsigned flags = cudaStreamNonBlocking, int priority = 0)
    {
        cudaStream_t s = nullptr;
        check_cuda(cudaStreamCreateWithPriority(&s, flags, priority), "cudaStreamCreate");
        adopt(s);
    }
    void sync() const { check_cuda(cudaStreamSynchronize(get()), "cudaStreamSynchronize"); }
};

/**
 * A CUDA event of our own, created with flags (cudaEventDefault times it,
 * cudaEventDisableTiming makes it cheaper for ordering only).
 */
class CudaEvent : public CudaOwned<cudaEvent_t, cudaEventDestroy> {
public:
    CudaEvent() = default;
    explicit CudaEvent(unsigned flags) { create(flags); }

    /** Makes a new event (replacing any held one). */
    void create(unsigned flags = cudaEventDefault)
    {
        cudaEvent_t e = nullptr;
        check_cuda(cudaEventCreateWithFlags(&e, flags), "cudaEventCreate");
        adopt(e);
    }
    void record(cudaStream_t stream) const { check_cuda(cudaEventRecord(get(), stream), "cudaEventRecord"); }
    void sync() const { check_cuda(cudaEventSynchronize(get()), "cudaEventSynchronize"); }
};

/**
 * Milliseconds of GPU time between two completed timing events, for the
 * stage times the encoders and decoders report. A time that cannot be read
 * (an event made without timing, or not yet complete) counts as 0 and the
 * error is cleared: statistics never fail a frame, nor a later launch check.
 */
inline float elapsed_ms(const CudaEvent &from, const CudaEvent &to)
{
    float ms = 0;
    if (cudaEventElapsedTime(&ms, from.get(), to.get()) == cudaSuccess) return ms;
    cudaGetLastError();
    return 0.0f;
}

/** The stream the caller lent, or one of our own (a CudaStream) on `device`. */
class StreamHolder {
public:
    StreamHolder(void *lent, void *context, int device)
    {
        if (lent) {
            stream_ = static_cast<cudaStream_t>(lent);
        } else {
            ContextScope scope(context, device);
            owned_.create(cudaStreamNonBlocking);
            stream_ = owned_.get();
        }
    }
    StreamHolder(const StreamHolder &) = delete;
    StreamHolder &operator=(const StreamHolder &) = delete;
    cudaStream_t get() const { return stream_; }
    void sync() const { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

private:
    CudaStream owned_;  ///< empty when the stream is lent
    cudaStream_t stream_ = nullptr;
};

}  // namespace j2kc
