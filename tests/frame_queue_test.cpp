// FrameQueue: the frames in flight of the asynchronous encoder (submit order,
// back-pressure, flush, frames finished out of order received in order).
#include "pipeline/frame_queue.h"

#include <gtest/gtest.h>

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
    EXPECT_EQ(q.reserve(), 0u);  // not published: the same entry again
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
    while (receive(true)) {
    }
    EXPECT_EQ(received, kFrames);
    q.stop();
    for (std::thread &t : workers) t.join();
}

}  // namespace
}  // namespace j2kc
