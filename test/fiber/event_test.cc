#include "trpc/fiber/event.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using EventTest = testing::FiberTest;
using std::chrono::milliseconds;

TEST_F(EventTest, PlainThreadWaitsForAFiber) {
  Start(2);
  Event ev;
  int value = 0;
  Fiber f(sched_.get(), [&] {
    value = 42;  // published by Set()
    ev.Set();
  });
  ev.Wait();
  EXPECT_EQ(value, 42);
  EXPECT_TRUE(ev.IsSet());
  f.Join();
}

TEST_F(EventTest, FiberWaitsForAPlainThread) {
  Start(1);
  Event ev;
  int value = 0;
  std::atomic<bool> other_ran{false};
  Fiber waiter(sched_.get(), [&] {
    ev.Wait();
    EXPECT_EQ(value, 7);
  });
  // One worker: the parked waiter must not hold it.
  Fiber other(sched_.get(), [&] { other_ran = true; });
  other.Join();
  EXPECT_TRUE(other_ran.load());
  std::thread setter([&] {
    value = 7;
    ev.Set();
  });
  waiter.Join();
  setter.join();
}

TEST_F(EventTest, SetReleasesEveryWaiterNowAndLater) {
  Start(3);
  constexpr int kFibers = 300;
  constexpr int kThreads = 4;
  Event ev;
  std::atomic<int> released{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < kFibers; ++i) {
    fibers.emplace_back(sched_.get(), [&] {
      ev.Wait();
      released.fetch_add(1);
    });
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&] {
      ev.Wait();
      released.fetch_add(1);
    });
  }
  EXPECT_FALSE(ev.IsSet());
  ev.Set();
  ev.Set();  // a second Set() does nothing
  for (auto& f : fibers) f.Join();
  for (auto& t : threads) t.join();
  EXPECT_EQ(released.load(), kFibers + kThreads);
  // Waiting on an event already set returns at once, on either side.
  ev.Wait();
  Fiber late(sched_.get(), [&] { EXPECT_TRUE(ev.WaitFor(milliseconds(0))); });
  late.Join();
}

TEST_F(EventTest, WaitForTimesOutUnlessSet) {
  Start(2);
  Event never;
  Event soon;
  std::atomic<int> waiting{0};
  auto check = [&] {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(never.WaitFor(milliseconds(20)));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(20));
    EXPECT_FALSE(never.WaitUntil(std::chrono::steady_clock::now() - milliseconds(1)));
    waiting.fetch_add(1);
    // Woken early, the wait drops its timer: the long limit does not hold up Stop().
    EXPECT_TRUE(soon.WaitFor(std::chrono::seconds(60)));
  };
  Fiber f(sched_.get(), check);
  std::thread t(check);
  ASSERT_TRUE(testing::PollFor([&] { return waiting.load() == 2; }));
  soon.Set();
  f.Join();
  t.join();
  EXPECT_FALSE(never.IsSet());
}

// The waiter frees the event as soon as Wait() returns, while Set() may still be running on
// the other side: Set() must not touch the event after releasing it (ASan checks this). The
// setter thread is joined only after the delete (it must not outlive the scheduler either:
// waking a fiber touches the scheduler after the wake-up is published).
TEST_F(EventTest, EventMayBeDestroyedAsSoonAsWaitReturns) {
  Start(2);
  constexpr int kRounds = 5000;
  Fiber f(sched_.get(), [&] {
    for (int i = 0; i < kRounds; ++i) {
      auto* ev = new Event;
      std::thread setter;
      if (i % 2 == 0) {
        sched_->Spawn([ev] { ev->Set(); });
      } else {
        setter = std::thread([ev] { ev->Set(); });
      }
      ev->Wait();
      delete ev;
      if (setter.joinable()) setter.join();
    }
  });
  f.Join();
}

}  // namespace
}  // namespace trpc::fiber
