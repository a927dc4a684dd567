#include "trpc/fiber/condition_variable.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using ConditionVariableTest = testing::FiberTest;
using std::chrono::milliseconds;

// Two parties take turns: each waits for its turn, appends its id, and passes the turn on.
struct PingPong {
  static constexpr int kRounds = 10'000;
  Mutex mu;
  ConditionVariable cv;
  int turn = 0;            // guarded by mu
  std::vector<int> trace;  // guarded by mu

  void Play(int me) {
    for (int i = 0; i < kRounds; ++i) {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return turn == me; });
      trace.push_back(me);
      turn = 1 - me;
      lock.unlock();
      cv.notify_one();
    }
  }
  void ExpectStrictAlternation() {
    std::lock_guard lock(mu);
    ASSERT_EQ(trace.size(), size_t{2 * kRounds});
    for (size_t i = 0; i < trace.size(); ++i) ASSERT_EQ(trace[i], static_cast<int>(i % 2)) << i;
  }
};

TEST_F(ConditionVariableTest, PingPongBetweenTwoFibers) {
  Start(2);
  PingPong pp;
  Fiber a(sched_.get(), [&] { pp.Play(0); });
  Fiber b(sched_.get(), [&] { pp.Play(1); });
  a.Join();
  b.Join();
  pp.ExpectStrictAlternation();
}

TEST_F(ConditionVariableTest, PingPongBetweenAFiberAndAPlainThread) {
  Start(2);
  PingPong pp;
  Fiber a(sched_.get(), [&] { pp.Play(0); });
  std::thread b([&] { pp.Play(1); });
  a.Join();
  b.join();
  pp.ExpectStrictAlternation();
}

TEST_F(ConditionVariableTest, WaitForTimesOutWhenNobodyNotifies) {
  Start(2);
  Mutex mu;
  ConditionVariable cv;
  auto check = [&] {
    std::unique_lock lock(mu);
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(cv.wait_for(lock, milliseconds(20)), std::cv_status::timeout);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(20));
    EXPECT_TRUE(lock.owns_lock());
    EXPECT_FALSE(cv.wait_for(lock, milliseconds(1), [] { return false; }));
    EXPECT_FALSE(cv.wait_until(lock, std::chrono::steady_clock::now() - milliseconds(1),
                               [] { return false; }));
    EXPECT_TRUE(cv.wait_for(lock, milliseconds(1), [] { return true; }));
  };
  Fiber f(sched_.get(), check);
  std::thread t(check);
  f.Join();
  t.join();
}

TEST_F(ConditionVariableTest, WaitForReturnsNoTimeoutWhenNotified) {
  Start(2);
  Mutex mu;
  ConditionVariable cv;
  bool fiber_waiting = false;   // guarded by mu
  bool thread_waiting = false;  // guarded by mu
  // Long limits: a timed wait that is notified early drops its worker timer, so the fixture's
  // Stop() is not held up until they expire.
  Fiber f(sched_.get(), [&] {
    std::unique_lock lock(mu);
    fiber_waiting = true;
    EXPECT_EQ(cv.wait_for(lock, std::chrono::seconds(60)), std::cv_status::no_timeout);
  });
  std::thread t([&] {
    std::unique_lock lock(mu);
    thread_waiting = true;
    EXPECT_EQ(cv.wait_for(lock, std::chrono::seconds(60)), std::cv_status::no_timeout);
  });
  // Once a flag is seen under the mutex its setter is queued on cv: wait() queues itself
  // before it releases the mutex.
  ASSERT_TRUE(testing::PollFor([&] {
    std::lock_guard lock(mu);
    return fiber_waiting && thread_waiting;
  }));
  cv.notify_all();
  f.Join();
  t.join();
}

TEST_F(ConditionVariableTest, NotifyOneWakesWaitersInArrivalOrder) {
  Start(2);
  constexpr int kWaiters = 6;
  Mutex mu;
  ConditionVariable cv;
  int queued = 0;           // guarded by mu
  std::vector<int> woken;   // guarded by mu
  std::vector<Fiber> fibers;
  std::vector<std::thread> threads;
  for (int i = 0; i < kWaiters; ++i) {
    auto wait = [&, i] {
      std::unique_lock lock(mu);
      ++queued;
      cv.wait(lock);  // no predicate: this primitive has no spurious wake-ups
      woken.push_back(i);
    };
    // Alternate fibers and plain threads; each is queued before the next one starts.
    if (i % 2 == 0) {
      fibers.emplace_back(sched_.get(), wait);
    } else {
      threads.emplace_back(wait);
    }
    ASSERT_TRUE(testing::PollFor([&] {
      std::lock_guard lock(mu);
      return queued == i + 1;
    }));
  }
  for (int i = 0; i < kWaiters; ++i) {
    cv.notify_one();
    ASSERT_TRUE(testing::PollFor([&] {
      std::lock_guard lock(mu);
      return woken.size() == static_cast<size_t>(i + 1);
    }));
  }
  for (auto& f : fibers) f.Join();
  for (auto& t : threads) t.join();
  std::vector<int> expected;
  for (int i = 0; i < kWaiters; ++i) expected.push_back(i);
  EXPECT_EQ(woken, expected);
}

TEST_F(ConditionVariableTest, NotifyAllWakesEveryWaiter) {
  Start(3);
  constexpr int kFibers = 200;
  constexpr int kThreads = 4;
  Mutex mu;
  ConditionVariable cv;
  int queued = 0;  // guarded by mu
  bool go = false;
  std::atomic<int> woken{0};
  auto wait = [&] {
    std::unique_lock lock(mu);
    ++queued;
    cv.wait(lock, [&] { return go; });
    woken.fetch_add(1);
  };
  std::vector<Fiber> fibers;
  for (int i = 0; i < kFibers; ++i) fibers.emplace_back(sched_.get(), wait);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(wait);
  ASSERT_TRUE(testing::PollFor([&] {
    std::lock_guard lock(mu);
    return queued == kFibers + kThreads;
  }));
  {
    std::lock_guard lock(mu);
    go = true;
  }
  cv.notify_all();
  for (auto& f : fibers) f.Join();
  for (auto& t : threads) t.join();
  EXPECT_EQ(woken.load(), kFibers + kThreads);
}

// Timed waits racing with notifications: every wait must end either notified or timed out, and
// a notification must never be lost to a waiter whose timer fired at the same moment.
TEST_F(ConditionVariableTest, TimedWaitsRacingNotifiesLoseNothing) {
  Start(3);
  constexpr int kItems = 20'000;
  Mutex mu;
  ConditionVariable cv;
  int available = 0;  // guarded by mu
  int consumed = 0;   // guarded by mu
  std::vector<Fiber> consumers;
  for (int c = 0; c < 4; ++c) {
    consumers.emplace_back(sched_.get(), [&, c] {
      std::unique_lock lock(mu);
      auto ready = [&] { return available > 0 || consumed == kItems; };
      while (consumed < kItems) {
        // Half the consumers wait without a limit: a wake-up lost to a timed-out waiter would
        // strand them.
        if (c % 2 == 0) {
          cv.wait(lock, ready);
        } else if (!cv.wait_for(lock, std::chrono::microseconds(50), ready)) {
          continue;
        }
        if (available > 0) {
          --available;
          ++consumed;
        }
      }
      cv.notify_all();  // release the others once everything is consumed
    });
  }
  std::thread producer([&] {
    for (int i = 0; i < kItems; ++i) {
      {
        std::lock_guard lock(mu);
        ++available;
      }
      cv.notify_one();
      if (i % 256 == 0) std::this_thread::yield();
    }
  });
  producer.join();
  for (auto& c : consumers) c.Join();
  std::lock_guard lock(mu);
  EXPECT_EQ(consumed, kItems);
  EXPECT_EQ(available, 0);
}

}  // namespace
}  // namespace trpc::fiber
