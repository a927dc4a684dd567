#include "trpc/fiber/mutex.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using MutexTest = testing::FiberTest;

TEST_F(MutexTest, HundredThousandFibersCountExactly) {
  Start(4);
  constexpr int kFibers = testing::ScaledForSanitizer(100'000);
  constexpr int kSpawners = 100;
  constexpr size_t kBatch = 50;
  Mutex mu;
  int counter = 0;  // plain int: the mutex is the only thing ordering the increments
  std::vector<Fiber> spawners;
  for (int s = 0; s < kSpawners; ++s) {
    spawners.emplace_back(sched_.get(), [&] {
      // In batches: every fiber parked on the mutex holds a stack (two memory mappings), and
      // 100k at once would exceed vm.max_map_count.
      std::vector<Fiber> children;
      for (int i = 0; i < kFibers / kSpawners; ++i) {
        children.emplace_back([&, i] {
          std::lock_guard lock(mu);
          int v = counter;
          // Now and then hold the lock across a context switch, so waiters really park.
          if (i % 64 == 0) this_fiber::Yield();
          counter = v + 1;
        });
        if (children.size() == kBatch) {
          for (auto& c : children) c.Join();
          children.clear();
        }
      }
      for (auto& c : children) c.Join();
    });
  }
  for (auto& s : spawners) s.Join();
  std::lock_guard lock(mu);
  EXPECT_EQ(counter, kFibers);
}

TEST_F(MutexTest, FibersAndPlainThreadsShareOneMutex) {
  Start(4);
  constexpr int kFibers = 8;
  constexpr int kThreads = 3;
  constexpr int kRounds = 20'000;
  Mutex mu;
  int64_t counter = 0;
  std::vector<Fiber> fibers;
  for (int f = 0; f < kFibers; ++f) {
    fibers.emplace_back(sched_.get(), [&] {
      for (int i = 0; i < kRounds; ++i) {
        std::unique_lock lock(mu);
        ++counter;
        if (i % 128 == 0) this_fiber::Yield();
      }
    });
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::lock_guard lock(mu);
        ++counter;
        if (i % 128 == 0) std::this_thread::yield();
      }
    });
  }
  for (auto& f : fibers) f.Join();
  for (auto& t : threads) t.join();
  std::lock_guard lock(mu);
  EXPECT_EQ(counter, int64_t{kFibers + kThreads} * kRounds);
}

TEST_F(MutexTest, TryLockFailsWhileHeldAndSucceedsWhenFree) {
  Start(1);
  Mutex mu;
  EXPECT_TRUE(mu.try_lock());
  Fiber f(sched_.get(), [&] { EXPECT_FALSE(mu.try_lock()); });
  f.Join();
  mu.unlock();
  Fiber g(sched_.get(), [&] {
    EXPECT_TRUE(mu.try_lock());
    mu.unlock();
  });
  g.Join();
  std::scoped_lock lock(mu);  // Lockable: the std helpers work
}

TEST_F(MutexTest, PlainThreadWaitsForAFiberThatHoldsTheLock) {
  Start(2);
  Mutex mu;
  std::atomic<bool> fiber_locked{false};
  int value = 0;
  Fiber holder(sched_.get(), [&] {
    mu.lock();
    fiber_locked = true;
    // Give the thread time to block (only to exercise the futex path; not needed for the
    // assertion below).
    this_fiber::SleepFor(std::chrono::milliseconds(5));
    value = 1;
    mu.unlock();
  });
  ASSERT_TRUE(testing::PollFor([&] { return fiber_locked.load(); }));
  mu.lock();  // the fiber locked first, so this returns only after its unlock()
  EXPECT_EQ(value, 1);
  mu.unlock();
  holder.Join();
}

TEST_F(MutexTest, FiberWaitsForAPlainThreadThatHoldsTheLock) {
  Start(1);
  Mutex mu;
  std::atomic<bool> fiber_started{false};
  std::atomic<bool> other_fiber_ran{false};
  int value = 0;
  mu.lock();
  Fiber waiter(sched_.get(), [&] {
    fiber_started = true;
    mu.lock();
    EXPECT_EQ(value, 1);
    mu.unlock();
  });
  ASSERT_TRUE(testing::PollFor([&] { return fiber_started.load(); }));
  // One worker: if the waiter blocked its thread, this fiber could not run.
  Fiber other(sched_.get(), [&] { other_fiber_ran = true; });
  other.Join();
  EXPECT_TRUE(other_fiber_ran.load());
  value = 1;
  mu.unlock();
  waiter.Join();
}

// Fibers that re-lock as soon as they unlock must not keep a waiter out for good: after
// Mutex::kStarvationNanos the waiter is handed the lock. (A liveness check: without it the
// hammering fibers would never stop; ctest's timeout fails the test.)
TEST_F(MutexTest, AWaiterIsNotStarvedByFibersThatRelockAtOnce) {
  Start(3);
  Mutex mu;
  std::atomic<bool> waiter_done{false};
  std::atomic<int> hammer_rounds{0};
  std::vector<Fiber> hammers;
  for (int h = 0; h < 2; ++h) {
    hammers.emplace_back(sched_.get(), [&] {
      while (!waiter_done.load(std::memory_order_relaxed)) {
        std::lock_guard lock(mu);
        hammer_rounds.fetch_add(1, std::memory_order_relaxed);
        for (int k = 0; k < 200; ++k) detail::CpuRelax();
      }
    });
  }
  ASSERT_TRUE(testing::PollFor([&] { return hammer_rounds.load() > 1000; }));
  Fiber waiter(sched_.get(), [&] {
    for (int i = 0; i < 100; ++i) {
      std::lock_guard lock(mu);
    }
    waiter_done = true;
  });
  waiter.Join();
  for (auto& h : hammers) h.Join();
  EXPECT_TRUE(waiter_done.load());
}

// The fast paths must leave the state clean for the destructor's check, whichever path the
// last unlock took.
TEST_F(MutexTest, ContendedMutexesCanBeDestroyedRightAfterUse) {
  Start(2);
  for (int round = 0; round < 200; ++round) {
    auto mu = std::make_unique<Mutex>();
    int n = 0;
    std::vector<Fiber> fs;
    for (int f = 0; f < 4; ++f) {
      fs.emplace_back(sched_.get(), [&] {
        for (int i = 0; i < 50; ++i) {
          std::lock_guard lock(*mu);
          ++n;
          if (i % 8 == 0) this_fiber::Yield();
        }
      });
    }
    for (auto& f : fs) f.Join();
    mu->lock();
    EXPECT_EQ(n, 200);
    mu->unlock();
    mu.reset();
  }
}

}  // namespace
}  // namespace trpc::fiber
