/**
 * @file thread_pool.h
 * @brief A small persistent worker pool: parallel_for over an index range,
 * work handed out by an atomic counter (code-blocks vary wildly in cost, so
 * dynamic hand-out balances better than static slices). The calling thread
 * works too. The first exception thrown by any task is rethrown to the caller.
 */
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace j2kc {

/**
 * Threads that run fn(i, worker) for i in [0, n), the caller one of them,
 * returning when all are done; `worker` tells apart the threads running at
 * once. ThreadPool is one; a scheduler with workers of its own lends them,
 * when idle, through another (the CUDA decoder's Tier-2).
 */
class ParallelRunner {
public:
    virtual ~ParallelRunner() = default;
    /** Threads that may take part, the caller included. */
    virtual unsigned size() const = 0;
    virtual void parallel_for(size_t n, const std::function<void(size_t index, unsigned worker)> &fn) = 0;
};

class ThreadPool final : public ParallelRunner {
public:
    /** threads = 0: one per hardware thread. The caller counts as one. */
    explicit ThreadPool(unsigned threads = 0);
    ~ThreadPool() override;
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    unsigned size() const override { return static_cast<unsigned>(workers_.size()) + 1; }

    /** Runs fn(i) for i in [0, n), in parallel; returns when all are done. */
    void parallel_for(size_t n, const std::function<void(size_t index, unsigned worker)> &fn) override;

private:
    void worker_loop(unsigned worker);
    void run_tasks(unsigned worker);

    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(size_t, unsigned)> *job_ = nullptr;
    size_t job_size_ = 0;
    std::atomic<size_t> next_{0};
    unsigned busy_ = 0;
    uint64_t generation_ = 0;
    bool stop_ = false;
    std::exception_ptr error_;
};

}  // namespace j2kc
