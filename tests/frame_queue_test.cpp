// FrameQueue: the frames in flight of the asynchronous encoder and decoder
// (submit order, back-pressure, flush, frames finished out of order received
// in order, workers that poll for frames beside other work).
#include "pipeline/frame_queue.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace j2kc {
namespace {

TEST(FrameQueue, ReservesEntriesInRingOrderUntilFull)
{
    FrameQueue q(3);
    for (size_t i = 0; i < 3; ++i) {
        const auto e = q.reserve();
        ASSERT_TRUE(e);
        EXPECT_EQ(*e, i);
        q.publish(*e);
    }
    EXPECT_FALSE(q.reserve());  // back-pressure: every entry in flight
}

TEST(FrameQueue, AnAbandonedReservationTakesNoRoom)
{
    FrameQueue q(2);
    ASSERT_EQ(q.reserve(), 0u);
    EXPECT_EQ(q.reserve(), 0u);    // not published: the same entry again
    EXPECT_FALSE(q.oldest(true));  // nothing in flight, so a flush does not wait
}

TEST(FrameQueue, OldestWaitsOnlyWhenAsked)
{
    FrameQueue q(2);
    q.publish(*q.reserve());
    EXPECT_FALSE(q.oldest(false));  // queued, not done
    ASSERT_EQ(q.take(), 0u);
    EXPECT_FALSE(q.oldest(false));  // running, not done
    q.finish(0);
    EXPECT_EQ(q.oldest(false), 0u);
}

TEST(FrameQueue, FramesFinishedOutOfOrderAreReceivedInSubmitOrder)
{
    FrameQueue q(3);
    for (int i = 0; i < 3; ++i) q.publish(*q.reserve());
    for (size_t i = 0; i < 3; ++i) ASSERT_EQ(q.take(), i);  // taken in submit order
    q.finish(2);
    q.finish(1);
    EXPECT_FALSE(q.oldest(false));  // entry 0 still runs: 1 and 2 wait behind it
    q.finish(0);
    for (size_t i = 0; i < 3; ++i) {
        ASSERT_EQ(q.oldest(false), i);
        q.release();
    }
    EXPECT_FALSE(q.oldest(true));
}

TEST(FrameQueue, ReleaseMakesRoomAndTheRingWrapsAround)
{
    FrameQueue q(2);
    for (int i = 0; i < 2; ++i) q.publish(*q.reserve());
    ASSERT_EQ(q.take(), 0u);
    q.finish(0);
    ASSERT_EQ(q.oldest(false), 0u);
    q.release();
    ASSERT_EQ(q.reserve(), 0u);  // after entry 1, the ring starts over
    q.publish(0);
    EXPECT_FALSE(q.reserve());
    ASSERT_EQ(q.take(), 1u);
    ASSERT_EQ(q.take(), 0u);
}

TEST(FrameQueue, TryTakeGivesQueuedEntriesInOrderWithoutWaiting)
{
    FrameQueue q(3);
    EXPECT_FALSE(q.try_take());  // nothing queued: returns at once
    const size_t e0 = *q.reserve();
    EXPECT_FALSE(q.try_take());  // reserved, not yet published
    q.publish(e0);
    q.publish(*q.reserve());
    EXPECT_EQ(q.try_take(), 0u);
    EXPECT_EQ(q.take(), 1u);  // the two ways of taking share one order
    EXPECT_FALSE(q.try_take());
    q.finish(1);
    EXPECT_FALSE(q.oldest(false));  // entry 0 still runs
    q.finish(0);
    EXPECT_EQ(q.oldest(false), 0u);
}

TEST(FrameQueue, CountsWhatIsInFlight)
{
    FrameQueue q(2);
    EXPECT_EQ(q.in_flight(), 0u);
    EXPECT_FALSE(q.full());
    const size_t e = *q.reserve();
    EXPECT_EQ(q.in_flight(), 0u);  // a reservation is not in flight
    q.publish(e);
    q.publish(*q.reserve());
    EXPECT_EQ(q.in_flight(), 2u);
    EXPECT_TRUE(q.full());
    ASSERT_EQ(q.take(), 0u);
    q.finish(0);
    ASSERT_EQ(q.oldest(false), 0u);
    q.release();
    EXPECT_EQ(q.in_flight(), 1u);
    EXPECT_FALSE(q.full());
}

TEST(FrameQueue, StopLetsWorkersRunWhatIsQueuedFirst)
{
    FrameQueue q(2);
    q.publish(*q.reserve());
    q.stop();
    EXPECT_EQ(q.take(), 0u);  // queued before the stop: still run
    EXPECT_FALSE(q.take());   // then the worker returns
}

TEST(FrameQueue, StopWakesAnIdleWorker)
{
    FrameQueue q(2);
    std::optional<size_t> taken = 7;
    std::thread worker([&] { taken = q.take(); });
    q.stop();
    worker.join();
    EXPECT_FALSE(taken);
}

// A submit/receive loop against several workers that finish frames in
// whatever order the threads run: every frame comes back once, in order.
TEST(FrameQueue, ManyWorkersDeliverEveryFrameInSubmitOrder)
{
    constexpr size_t kEntries = 4, kFrames = 2000;
    FrameQueue q(kEntries);
    std::vector<size_t> frame_in(kEntries), result(kEntries);
    std::vector<std::thread> workers;
    for (int w = 0; w < 4; ++w)
        workers.emplace_back([&] {
            while (const auto e = q.take()) {
                result[*e] = frame_in[*e] * 3;  // the "work", on the entry's payload only
                q.finish(*e);
            }
        });
    size_t submitted = 0, received = 0;
    auto receive = [&](bool flush) {
        const auto e = q.oldest(flush);
        if (!e) return false;
        EXPECT_EQ(result[*e], received * 3);
        ++received;
        q.release();
        return true;
    };
    while (submitted < kFrames) {
        if (const auto e = q.reserve()) {
            frame_in[*e] = submitted++;
            q.publish(*e);
        } else {
            receive(true);  // full: a flush waits for the oldest
        }
        receive(false);
    }
    while (receive(true)) {}
    EXPECT_EQ(received, kFrames);
    q.stop();
    for (std::thread &t : workers) t.join();
}

// Workers as the decoder's: each polls try_take() under a lock of its own
// beside other work (here a counter of side jobs), woken through its own
// condition variable; every frame still comes back once, in order.
TEST(FrameQueue, PollingWorkersBesideOtherWorkDeliverInOrder)
{
    constexpr size_t kEntries = 3, kFrames = 1000;
    FrameQueue q(kEntries);
    std::mutex m;
    std::condition_variable wake;
    bool stop = false;
    size_t side_jobs = 0;
    std::vector<size_t> frame_in(kEntries), result(kEntries);
    std::vector<std::thread> workers;
    for (int w = 0; w < 3; ++w)
        workers.emplace_back([&] {
            for (;;) {
                std::optional<size_t> e;
                bool side = false;
                {
                    std::unique_lock<std::mutex> lock(m);
                    wake.wait(lock, [&] {
                        if (stop) return true;
                        if (side_jobs) {
                            --side_jobs;
                            side = true;
                            return true;
                        }
                        e = q.try_take();
                        return e.has_value();
                    });
                    if (!e && !side) return;
                }
                if (e) {
                    result[*e] = frame_in[*e] + 1;
                    q.finish(*e);
                }
            }
        });
    size_t submitted = 0, received = 0;
    while (received < kFrames) {
        if (submitted < kFrames) {
            if (const auto e = q.reserve()) {
                frame_in[*e] = submitted++;
                {
                    std::lock_guard<std::mutex> lock(m);  // publish under the workers' lock: no lost wake-up
                    q.publish(*e);
                    ++side_jobs;
                }
                wake.notify_all();
                continue;
            }
        }
        const auto e = q.oldest(true);
        ASSERT_TRUE(e);
        EXPECT_EQ(result[*e], received + 1);
        ++received;
        q.release();
    }
    {
        std::lock_guard<std::mutex> lock(m);
        stop = true;
    }
    wake.notify_all();
    for (std::thread &t : workers) t.join();
    EXPECT_FALSE(q.oldest(true));
}

}  // namespace
}  // namespace j2kc
