#include "trpc/fiber/latch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using LatchTest = testing::FiberTest;
using std::chrono::milliseconds;

TEST_F(LatchTest, ThreadAndFibersWaitForEveryCountDown) {
  Start(3);
  constexpr int kWorkers = 100;
  Latch done(kWorkers);
  std::vector<int> results(kWorkers, 0);
  for (int i = 0; i < kWorkers; ++i) {
    sched_->Spawn([&, i] {
      results[i] = i + 1;  // published by count_down()
      done.count_down();
    });
  }
  std::atomic<int> fiber_checks{0};
  std::vector<Fiber> waiters;
  for (int w = 0; w < 10; ++w) {
    waiters.emplace_back(sched_.get(), [&] {
      done.wait();
      for (int i = 0; i < kWorkers; ++i) EXPECT_EQ(results[i], i + 1);
      fiber_checks.fetch_add(1);
    });
  }
  done.wait();
  EXPECT_TRUE(done.try_wait());
  for (int i = 0; i < kWorkers; ++i) EXPECT_EQ(results[i], i + 1);
  for (auto& w : waiters) w.Join();
  EXPECT_EQ(fiber_checks.load(), 10);
}

TEST_F(LatchTest, TryWaitAndZeroCount) {
  Latch zero(0);
  EXPECT_TRUE(zero.try_wait());
  zero.wait();
  Latch two(2);
  EXPECT_FALSE(two.try_wait());
  two.count_down();
  EXPECT_FALSE(two.try_wait());
  two.count_down();
  EXPECT_TRUE(two.try_wait());
  Latch three(3);
  three.count_down(3);
  EXPECT_TRUE(three.try_wait());
}

TEST_F(LatchTest, ArriveAndWaitIsABarrierForFibersAndThreads) {
  Start(2);
  constexpr int kFibers = 50;
  constexpr int kThreads = 2;
  Latch barrier(kFibers + kThreads);
  std::atomic<int> arrived{0};
  auto party = [&] {
    arrived.fetch_add(1);
    barrier.arrive_and_wait();
    EXPECT_EQ(arrived.load(), kFibers + kThreads);  // nobody passes before all arrived
  };
  std::vector<Fiber> fibers;
  for (int i = 0; i < kFibers; ++i) fibers.emplace_back(sched_.get(), party);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(party);
  for (auto& f : fibers) f.Join();
  for (auto& t : threads) t.join();
}

TEST_F(LatchTest, TimedWaitTimesOutUntilTheCountIsZero) {
  Start(2);
  Latch latch(1);
  std::atomic<int> timed_out{0};
  auto check = [&] {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(latch.wait_for(milliseconds(20)));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(20));
    timed_out.fetch_add(1);
    EXPECT_TRUE(latch.wait_for(std::chrono::seconds(60)));  // see EventTest
  };
  Fiber f(sched_.get(), check);
  std::thread t(check);
  ASSERT_TRUE(testing::PollFor([&] { return timed_out.load() == 2; }));
  latch.count_down();
  f.Join();
  t.join();
}

// As for Event: count_down() must not touch the latch once the waiter may have freed it.
TEST_F(LatchTest, LatchMayBeDestroyedAsSoonAsWaitReturns) {
  Start(2);
  constexpr int kRounds = 3000;
  Fiber f(sched_.get(), [&] {
    for (int i = 0; i < kRounds; ++i) {
      auto* latch = new Latch(2);
      sched_->Spawn([latch] { latch->count_down(); });
      std::thread other([latch] { latch->count_down(); });
      latch->wait();
      delete latch;
      other.join();  // after the delete: the point is that count_down() may still be running
    }
  });
  f.Join();
}

}  // namespace
}  // namespace trpc::fiber
