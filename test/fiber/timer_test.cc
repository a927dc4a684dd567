#include "trpc/fiber/timer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "trpc/base/clock.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using std::chrono::milliseconds;

class TimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerOptions o;
    o.concurrency = 2;
    sched_ = std::make_unique<Scheduler>(o);
    std::string err;
    ASSERT_TRUE(sched_->Start(&err)) << err;
  }
  void TearDown() override { sched_->Stop(); }

  template <typename Pred>
  static bool WaitFor(Pred pred, int64_t timeout_ms = 10'000) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (!pred()) {
      if (MonotonicMillis() > deadline) return pred();
      std::this_thread::sleep_for(milliseconds(1));
    }
    return true;
  }

  std::unique_ptr<Scheduler> sched_;
};

TEST_F(TimerTest, OneShotRunsOnceInAFiberNoEarlierThanAsked) {
  std::atomic<int> runs{0};
  std::atomic<bool> in_fiber{false};
  std::atomic<int64_t> ran_at{0};
  const auto at = std::chrono::steady_clock::now() + milliseconds(5);
  TimerHandle t = SetTimer(at, [&] {
    in_fiber = IsFiberContext();
    ran_at = MonotonicNanos();
    runs.fetch_add(1);
  });
  ASSERT_TRUE(t);
  ASSERT_TRUE(WaitFor([&] { return runs.load() == 1; }));
  EXPECT_TRUE(in_fiber.load());
  EXPECT_GE(ran_at.load(), std::chrono::duration_cast<std::chrono::nanoseconds>(
                               at.time_since_epoch()).count());
  EXPECT_FALSE(KillTimer(t)) << "a fired one-shot timer reported a cancellation";
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(runs.load(), 1);
}

TEST_F(TimerTest, KilledTimerNeverRuns) {
  std::atomic<int> runs{0};
  TimerHandle t = SetTimerAfter(milliseconds(50), [&] { runs.fetch_add(1); });
  EXPECT_TRUE(KillTimer(t));
  EXPECT_FALSE(KillTimer(t)) << "a timer was killed twice";
  // A later timer on the same scheduler fires; by then the killed one is long due.
  std::atomic<bool> later{false};
  SetTimerAfter(milliseconds(100), [&] { later = true; });
  ASSERT_TRUE(WaitFor([&] { return later.load(); }));
  EXPECT_EQ(runs.load(), 0);
}

TEST_F(TimerTest, PeriodicTimerRepeatsUntilKilled) {
  std::atomic<int> runs{0};
  TimerHandle t = SetTimer(std::chrono::steady_clock::now(), [&] { runs.fetch_add(1); },
                           milliseconds(2));
  ASSERT_TRUE(WaitFor([&] { return runs.load() >= 3; }));
  EXPECT_TRUE(KillTimer(t));
  // Runs already started may finish; none starts after that.
  std::this_thread::sleep_for(milliseconds(10));
  int after_kill = runs.load();
  std::this_thread::sleep_for(milliseconds(30));
  EXPECT_EQ(runs.load(), after_kill);
}

TEST_F(TimerTest, SetFromAFiber) {
  std::atomic<int> runs{0};
  Fiber f(sched_.get(), [&] { SetTimerAfter(milliseconds(1), [&] { runs.fetch_add(1); }); });
  f.Join();
  ASSERT_TRUE(WaitFor([&] { return runs.load() == 1; }));
}

}  // namespace
}  // namespace trpc::fiber
