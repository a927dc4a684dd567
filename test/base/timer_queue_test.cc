#include "trpc/base/detail/timer_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
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

// The lanes and the heap against a plain model: random adds (mostly "now + a fixed duration"
// of a few kinds, some anywhere), cancels, and runs; every pass must fire exactly the live
// timers due, in (deadline, add) order.
TEST(TimerQueueTest, MatchesAReferenceModelUnderRandomUse) {
  std::mt19937_64 rng(12345);
  TimerQueue q;
  struct Model {
    int64_t deadline;
    uint64_t order;
    TimerId id;
    bool live;
  };
  std::vector<Model> model;
  std::vector<uint64_t> fired;
  uint64_t next_order = 0;
  int64_t now = 0;
  auto add = [&](int64_t deadline) {
    uint64_t order = next_order++;
    TimerId id = q.Add(deadline, [&fired, order] { fired.push_back(order); });
    model.push_back({deadline, order, id, true});
  };
  for (int step = 0; step < 200000; ++step) {
    uint64_t r = rng() % 100;
    if (r < 30) {
      add(now + 1000);  // the per-call timeout shape: in order
    } else if (r < 40) {
      add(now + 60000);  // a second kind (idle timers): its own lane
    } else if (r < 50) {
      add(now + 50);  // a third
    } else if (r < 55) {
      add(now + 5 * static_cast<int64_t>(rng() % 7));  // more kinds than lanes: some to the heap
    } else if (r < 65) {
      add(now + static_cast<int64_t>(rng() % 2000));  // anywhere
    } else if (r < 90 && !model.empty()) {
      Model& m = model[rng() % model.size()];
      EXPECT_EQ(q.Cancel(m.id), m.live);
      m.live = false;
    } else if (r < 93) {
      // The earliest deadline between changes (it is cached until the next one): asked twice,
      // so that the second answer and the next RunExpired come from the cache.
      int64_t want = -1;
      for (const Model& m : model) {
        if (m.live) want = want < 0 ? m.deadline : std::min(want, m.deadline);
      }
      ASSERT_EQ(q.NextDeadline(), want) << "step " << step;
      ASSERT_EQ(q.NextDeadline(), want) << "step " << step;
    } else {
      now += static_cast<int64_t>(rng() % 300);
      std::vector<std::pair<int64_t, uint64_t>> due;
      for (Model& m : model) {
        if (m.live && m.deadline <= now) {
          due.emplace_back(m.deadline, m.order);
          m.live = false;
        }
      }
      std::sort(due.begin(), due.end());
      fired.clear();
      q.RunExpired(now);
      ASSERT_EQ(fired.size(), due.size()) << "step " << step;
      for (size_t i = 0; i < due.size(); ++i) ASSERT_EQ(fired[i], due[i].second) << "step " << step;
      std::erase_if(model, [](const Model& m) { return !m.live; });
      int64_t want = -1;
      for (const Model& m : model) want = want < 0 ? m.deadline : std::min(want, m.deadline);
      ASSERT_EQ(q.NextDeadline(), want);
      ASSERT_EQ(q.size(), model.size());
      ASSERT_GE(q.queued(), q.size());
      ASSERT_LE(q.queued(), 4 * q.size() + 64 + 1);
    }
  }
}

TEST(TimerQueueTest, CancelledInOrderTimersBehindALiveOneDoNotAccumulate) {
  TimerQueue q;
  int fired = 0;
  q.Add(500, [&] { ++fired; });  // a slow call holding the front of the FIFO lane
  for (int i = 0; i < 100000; ++i) {
    q.Cancel(q.Add(1000 + i, [] {}));
    ASSERT_LE(q.queued(), 4 * q.size() + 64);  // compacted as they pile up behind it
  }
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.NextDeadline(), 500);
  q.RunExpired(1'000'000);
  EXPECT_EQ(fired, 1);
}

}  // namespace
}  // namespace trpc
