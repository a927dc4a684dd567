#include "trpc/base/timer_queue.h"

#include <gtest/gtest.h>

#include <vector>

namespace trpc {
namespace {

TEST(TimerQueueTest, RunsInDeadlineOrderThenFifo) {
  TimerQueue q;
  std::vector<int> order;
  q.Add(30, [&] { order.push_back(3); });
  q.Add(10, [&] { order.push_back(1); });
  q.Add(20, [&] { order.push_back(2); });
  q.Add(20, [&] { order.push_back(22); });
  EXPECT_EQ(q.NextDeadline(), 10);
  q.RunExpired(20);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 22}));
  EXPECT_EQ(q.size(), 1u);
  q.RunExpired(100);
  EXPECT_EQ(order.back(), 3);
  EXPECT_EQ(q.NextDeadline(), -1);
}

TEST(TimerQueueTest, CancelStopsCallbackAndStaleIdsAreRejected) {
  TimerQueue q;
  int fired = 0;
  TimerId a = q.Add(10, [&] { ++fired; });
  TimerId b = q.Add(20, [&] { ++fired; });
  EXPECT_TRUE(q.Cancel(a));
  EXPECT_FALSE(q.Cancel(a));  // already cancelled
  EXPECT_FALSE(q.Cancel(0));
  EXPECT_EQ(q.NextDeadline(), 20);
  // The slot of `a` is reused; the old id must not cancel the new timer.
  TimerId c = q.Add(15, [&] { fired += 10; });
  EXPECT_FALSE(q.Cancel(a));
  q.RunExpired(100);
  EXPECT_EQ(fired, 11);
  EXPECT_FALSE(q.Cancel(b));  // already fired
  EXPECT_FALSE(q.Cancel(c));
}

TEST(TimerQueueTest, CallbacksMayAddAndCancelTimers) {
  TimerQueue q;
  std::vector<int> order;
  TimerId later = 0;
  q.Add(10, [&] {
    order.push_back(1);
    q.Add(5, [&] { order.push_back(2); });  // already due: runs in the same pass
    q.Cancel(later);
  });
  later = q.Add(12, [&] { order.push_back(99); });
  q.RunExpired(20);
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(TimerQueueTest, ManyCancelledTimersDoNotAccumulate) {
  TimerQueue q;
  for (int i = 0; i < 100000; ++i) {
    TimerId id = q.Add(1000 + i, [] {});
    q.Cancel(id);
  }
  EXPECT_EQ(q.size(), 0u);
  EXPECT_EQ(q.NextDeadline(), -1);
}

}  // namespace
}  // namespace trpc
