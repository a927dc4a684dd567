#include "trpc/fiber/thread_bridge.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using ThreadBridgeTest = testing::FiberTest;

TEST_F(ThreadBridgeTest, RunOnThreadReturnsTheResultFromAnotherThread) {
  Start(2);
  Fiber f(sched_.get(), [] {
    std::thread::id fiber_thread = std::this_thread::get_id();
    std::thread::id ran_on;
    std::string s = RunOnThread([&] {
      ran_on = std::this_thread::get_id();
      EXPECT_FALSE(IsFiberContext());
      return std::string("hello");
    });
    EXPECT_EQ(s, "hello");
    EXPECT_NE(ran_on, fiber_thread);

    int x = 1;
    int& ref = RunOnThread([&]() -> int& { return x; });
    EXPECT_EQ(&ref, &x);

    bool ran = false;
    RunOnThread([&] { ran = true; });  // void
    EXPECT_TRUE(ran);

    EXPECT_THROW(RunOnThread([]() -> int { throw std::runtime_error("boom"); }),
                 std::runtime_error);
  });
  f.Join();
}

TEST_F(ThreadBridgeTest, RunOnThreadRunsInlineOnAPlainThread) {
  std::thread::id ran_on;
  int v = RunOnThread([&] {
    ran_on = std::this_thread::get_id();
    return 3;
  });
  EXPECT_EQ(v, 3);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

// One worker. Fiber A's call blocks its thread until fiber B has run; B can only run if A's
// worker is free, i.e. if A parked instead of blocking. (If it blocked, the call gives up after
// a long bound and the test fails rather than hangs.)
TEST_F(ThreadBridgeTest, OtherFibersRunWhileTheCallBlocks) {
  Start(1);
  std::mutex mu;
  std::condition_variable cv;
  bool b_ran = false;  // guarded by mu
  std::vector<std::string> order;  // touched by the fibers only (one worker) and after joins
  Fiber a(sched_.get(), [&] {
    // B is queued behind A on this worker: it can run only once A gives the worker up.
    Fiber b([&] {
      order.push_back("b: ran");
      {
        std::lock_guard lock(mu);
        b_ran = true;
      }
      cv.notify_all();
    });
    order.push_back("a: call");
    bool saw_b = RunOnThread([&] {
      std::unique_lock lock(mu);
      return cv.wait_for(lock, std::chrono::seconds(30), [&] { return b_ran; });
    });
    EXPECT_TRUE(saw_b);
    order.push_back("a: returned");
    b.Join();
  });
  a.Join();
  EXPECT_EQ(order, (std::vector<std::string>{"a: call", "b: ran", "a: returned"}));
}

// Calls that can only finish together (they meet at a barrier) need a thread each: the pool
// must grow rather than queue them behind each other.
TEST_F(ThreadBridgeTest, ConcurrentCallsRunConcurrently) {
  Start(2);
  constexpr int kCalls = 8;
  std::latch barrier(kCalls);
  std::atomic<int> done{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < kCalls; ++i) {
    fibers.emplace_back(sched_.get(), [&] {
      RunOnThread([&] { barrier.arrive_and_wait(); });
      done.fetch_add(1);
    });
  }
  for (auto& f : fibers) f.Join();
  EXPECT_EQ(done.load(), kCalls);
}

TEST_F(ThreadBridgeTest, ManyCallsFromManyFibers) {
  Start(2);
  constexpr int kFibers = 50;
  constexpr int kCallsEach = 40;
  std::atomic<int> sum{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < kFibers; ++i) {
    fibers.emplace_back(sched_.get(), [&, i] {
      for (int k = 0; k < kCallsEach; ++k) sum.fetch_add(RunOnThread([=] { return i; }));
    });
  }
  for (auto& f : fibers) f.Join();
  EXPECT_EQ(sum.load(), kCallsEach * (kFibers - 1) * kFibers / 2);
}

TEST_F(ThreadBridgeTest, RunInFiberBlocksAPlainThreadUntilTheFiberReturns) {
  Start(2);
  std::thread::id caller = std::this_thread::get_id();
  int v = RunInFiber(sched_.get(), [&] {
    EXPECT_TRUE(IsFiberContext());
    EXPECT_NE(std::this_thread::get_id(), caller);
    this_fiber::SleepFor(std::chrono::milliseconds(1));  // fiber-only API
    return 11;
  });
  EXPECT_EQ(v, 11);
  EXPECT_THROW(RunInFiber(sched_.get(), [] { throw std::logic_error("x"); }), std::logic_error);
  // On a fiber it runs inline.
  Fiber f(sched_.get(), [] {
    uint64_t id = this_fiber::GetId();
    EXPECT_EQ(RunInFiber(nullptr, [] { return this_fiber::GetId(); }), id);
  });
  f.Join();
}

}  // namespace
}  // namespace trpc::fiber
