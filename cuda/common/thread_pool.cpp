/**
 * @file thread_pool.cpp
 * @brief Worker pool behind the multi-threaded Tier-1 and per-tile stages.
 */
#include "common/thread_pool.h"

namespace j2kc {

ThreadPool::ThreadPool(unsigned threads)
{
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned i = 1; i < threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool()
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread &t : workers_) t.join();
}

void ThreadPool::run_tasks(unsigned worker)
{
    for (;;) {
        const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
        if (i >= job_size_) return;
        try {
            (*job_)(i, worker);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
            next_.store(job_size_, std::memory_order_relaxed);  // stop handing out work
        }
    }
}

void ThreadPool::worker_loop(unsigned worker)
{
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
            ++busy_;
        }
        run_tasks(worker);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (--busy_ == 0) done_.notify_all();
        }
    }
}

void ThreadPool::parallel_for(size_t n, const std::function<void(size_t, unsigned)> &fn)
{
    if (n == 0) return;
    if (workers_.empty() || n == 1) {
        for (size_t i = 0; i < n; ++i) fn(i, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mutex_);
        job_ = &fn;
        job_size_ = n;
        next_.store(0, std::memory_order_relaxed);
        error_ = nullptr;
        ++generation_;
    }
    wake_.notify_all();
    run_tasks(0);
    std::exception_ptr error;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        // Workers that woke late find no work left and leave at once.
        done_.wait(lock, [&] { return busy_ == 0; });
        job_ = nullptr;
        error = error_;
    }
    if (error) std::rethrow_exception(error);
}

}  // namespace j2kc
