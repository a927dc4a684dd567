#include "trpc/reactor/reactor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "trpc/base/clock.h"

namespace trpc {
namespace {

class ReactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_ = std::thread([this] { reactor_.Run(); });
  }
  void TearDown() override {
    reactor_.Stop();
    thread_.join();
  }
  // Waits (bounded) until `pred` holds.
  template <typename Pred>
  bool WaitFor(Pred pred, int64_t timeout_ms = 10000) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (!pred()) {
      if (MonotonicMillis() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }

  Reactor reactor_{1024};  // small queue: the overflow path gets exercised too
  std::thread thread_;
};

TEST_F(ReactorTest, TasksFromManyThreadsAllRunOnTheLoopThread) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50000;
  std::atomic<int> ran{0};
  std::atomic<int> off_thread{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        reactor_.Post([&] {
          if (!reactor_.InLoopThread()) off_thread.fetch_add(1);
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
    });
  }
  for (auto& t : posters) t.join();
  ASSERT_TRUE(WaitFor([&] { return ran.load() == kThreads * kPerThread; }));
  EXPECT_EQ(off_thread.load(), 0);
}

// A lost wake-up would leave a task posted to a sleeping loop unrun: post one at a time and wait
// for each, many times, so the loop is asleep (or about to be) at every post.
TEST_F(ReactorTest, NoLostWakeUps) {
  for (int i = 0; i < 20000; ++i) {
    std::atomic<bool> done{false};
    reactor_.Post([&] { done.store(true, std::memory_order_release); });
    ASSERT_TRUE(WaitFor([&] { return done.load(std::memory_order_acquire); }, 5000))
        << "task " << i << " never ran";
  }
}

TEST_F(ReactorTest, TimersFireInOrderAndCancelWorks) {
  std::vector<int> order;
  std::atomic<bool> done{false};
  reactor_.Post([&] {
    int64_t now = MonotonicNanos();
    reactor_.AddTimer(now + 30 * kNanosPerMilli, [&] {
      order.push_back(3);
      done = true;
    });
    reactor_.AddTimer(now + 10 * kNanosPerMilli, [&] { order.push_back(1); });
    TimerId c = reactor_.AddTimer(now + 20 * kNanosPerMilli, [&] { order.push_back(2); });
    reactor_.CancelTimer(c);
  });
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
}

TEST_F(ReactorTest, TimerDoesNotFireEarly) {
  std::atomic<int64_t> fired_at{0};
  int64_t deadline = 0;
  reactor_.Post([&] {
    deadline = MonotonicNanos() + 5 * kNanosPerMilli;
    reactor_.AddTimer(deadline, [&] { fired_at = MonotonicNanos(); });
  });
  ASSERT_TRUE(WaitFor([&] { return fired_at.load() != 0; }));
  EXPECT_GE(fired_at.load(), deadline);
}

TEST_F(ReactorTest, RunInLoopIsInlineOnTheLoopThread) {
  std::atomic<bool> inline_ran{false};
  std::atomic<bool> done{false};
  reactor_.Post([&] {
    bool after = false;
    reactor_.RunInLoop([&] { inline_ran = !after; });
    after = true;
    done = true;
  });
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  EXPECT_TRUE(inline_ran.load());
  EXPECT_EQ(Reactor::Current(), nullptr);  // not on a loop thread here
}

TEST(ReactorStopTest, TasksPostedBeforeStopStillRun) {
  Reactor r;
  std::atomic<int> ran{0};
  std::thread t([&] { r.Run(); });
  for (int i = 0; i < 1000; ++i) r.Post([&] { ran.fetch_add(1); });
  r.Stop();
  t.join();
  EXPECT_EQ(ran.load(), 1000);
}

}  // namespace
}  // namespace trpc
