/**
 * @file frame_queue.h
 * @brief The frames in flight of an asynchronous coder (the CUDA encoder and
 * the CUDA decoder): which of its N entries (slots, each owning one frame's
 * buffers) hold which frame, in submit order, and in which state. The coder keeps the entries themselves, indexed
 * 0..N-1; the queue hands out indices and keeps the rules that make the
 * submit/receive API of j2kc.h safe and ordered:
 *
 *  - One caller thread submits and receives; worker threads run the frames.
 *    An entry moves kFree -> (filled by the caller) -> kQueued -> kRunning ->
 *    kDone -> (read by the caller) -> kFree, and whoever holds it in a state
 *    is the only one touching its payload, so the payload needs no lock.
 *  - reserve() gives the next free entry in ring order, or nothing when all
 *    N are in flight: back-pressure, which submit turns into "false".
 *  - Workers take queued entries in submit order, so frame N+1 never starts
 *    before frame N (its resources, such as streams, are claimed in order).
 *    A worker that waits for other work too (the decoder's launch Tier-1
 *    batches, share a frame's code-blocks and the caller's host copy) polls
 *    with try_take() under its own lock instead of blocking in take().
 *  - Frames may finish out of order, but oldest() only ever hands out the
 *    entry submitted first: receive() returns frames in submit order.
 *  - stop() lets the workers finish what is queued and then return, so that
 *    destroying the coder with frames queued leaves no work half done.
 */
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

namespace j2kc {

class FrameQueue {
public:
    enum class State { kFree, kQueued, kRunning, kDone };

    /** A queue over entries 0..capacity-1 (at least one), all free. */
    explicit FrameQueue(size_t capacity) : states_(capacity, State::kFree) {}
    FrameQueue(const FrameQueue &) = delete;
    FrameQueue &operator=(const FrameQueue &) = delete;

    size_t capacity() const { return states_.size(); }

    /**
     * The entry the next frame goes into, or nothing when every entry is in
     * flight. It stays free (no worker or receive looks at it) until
     * publish(); the caller fills it meanwhile, or just abandons it.
     */
    std::optional<size_t> reserve()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (in_flight_ == states_.size()) return std::nullopt;
        return (head_ + in_flight_) % states_.size();
    }

    /** The reserved entry is filled: it joins the frames in flight and a worker may take it. */
    void publish(size_t entry)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            states_[entry] = State::kQueued;
            ++in_flight_;
        }
        work_ready_.notify_all();
    }

    /**
     * Worker: waits for the oldest entry not yet taken to be queued, and
     * marks it running. Nothing once stop() was called and no queued frame
     * is left, so that stopping still runs every frame already submitted.
     */
    std::optional<size_t> take()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        work_ready_.wait(lock, [&] { return stop_ || states_[start_] == State::kQueued; });
        return take_queued();
    }

    /** Worker: take() without the wait; nothing when the oldest entry not yet taken is not queued. */
    std::optional<size_t> try_take()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return take_queued();
    }

    /** Worker: the entry's frame is finished (or failed; its payload says which). */
    void finish(size_t entry)
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            states_[entry] = State::kDone;
        }
        frame_done_.notify_all();
    }

    /**
     * The entry of the oldest frame in flight once it is done, or nothing
     * when no frame is in flight. When it is not done yet: waits for it if
     * `wait` (a flush), else returns nothing (the caller's loop goes on
     * submitting). The entry stays the caller's until release().
     */
    std::optional<size_t> oldest(bool wait)
    {
        std::unique_lock<std::mutex> lock(mutex_);
        if (in_flight_ == 0) return std::nullopt;
        if (states_[head_] != State::kDone) {
            if (!wait) return std::nullopt;
            frame_done_.wait(lock, [&] { return states_[head_] == State::kDone; });
        }
        return head_;
    }

    /** The oldest frame has been read out: its entry is free for the next submit. */
    void release()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        states_[head_] = State::kFree;
        head_ = (head_ + 1) % states_.size();
        --in_flight_;
    }

    /** Frames in flight: published and not yet released. */
    size_t in_flight()
    {
        std::lock_guard<std::mutex> lock(mutex_);
        return in_flight_;
    }

    /** Every entry is in flight: reserve() gives nothing until a release(). */
    bool full() { return in_flight() == states_.size(); }

    /** Workers return from take() once the queued frames are all taken. */
    void stop()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        work_ready_.notify_all();
    }

private:
    /** The oldest entry not yet taken, marked running, if it is queued (mutex held). */
    std::optional<size_t> take_queued()
    {
        if (states_[start_] != State::kQueued) return std::nullopt;
        const size_t entry = start_;
        states_[entry] = State::kRunning;
        start_ = (start_ + 1) % states_.size();
        return entry;
    }

    std::mutex mutex_;
    std::condition_variable work_ready_, frame_done_;
    std::vector<State> states_;
    // Entries [head_, head_ + in_flight_) hold frames in submit order;
    // start_ is the oldest a worker has not taken yet.
    size_t head_ = 0, in_flight_ = 0, start_ = 0;
    bool stop_ = false;
};

}  // namespace j2kc
