#include "trpc/fiber/fiber_local.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using FiberLocalTest = testing::FiberTest;

std::atomic<int> g_constructed{0};
std::atomic<int> g_destroyed{0};

struct Counted {
  Counted() { g_constructed.fetch_add(1); }
  ~Counted() { g_destroyed.fetch_add(1); }
  uint64_t owner = 0;
};

void ResetCounts() {
  g_constructed = 0;
  g_destroyed = 0;
}

TEST_F(FiberLocalTest, EachFiberSeesItsOwnValueAcrossSwitches) {
  Start(4);
  constexpr int kFibers = 1000;
  FiberLocal<uint64_t> local;
  std::atomic<int> ok{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < kFibers; ++i) {
    fibers.emplace_back(sched_.get(), [&] {
      EXPECT_EQ(*local, 0u);  // fresh, value-initialised
      uint64_t me = this_fiber::GetId();
      *local = me;
      for (int k = 0; k < 5; ++k) {
        this_fiber::Yield();  // may resume on another worker
        if (*local != me) return;
      }
      ok.fetch_add(1);
    });
  }
  for (auto& f : fibers) f.Join();
  EXPECT_EQ(ok.load(), kFibers);
}

TEST_F(FiberLocalTest, CreatedOnFirstUseAndDestroyedWhenTheFiberEnds) {
  Start(4);
  ResetCounts();
  constexpr int kFibers = 500;
  FiberLocal<Counted> local;
  std::vector<Fiber> fibers;
  for (int i = 0; i < kFibers; ++i) {
    fibers.emplace_back(sched_.get(), [&, i] {
      if (i % 5 == 0) return;  // never touches it: nothing is created
      local->owner = this_fiber::GetId();
      EXPECT_EQ(local->owner, this_fiber::GetId());  // the same object on every access
    });
  }
  for (auto& f : fibers) f.Join();
  EXPECT_EQ(g_constructed.load(), kFibers - kFibers / 5);
  EXPECT_EQ(g_destroyed.load(), g_constructed.load());
}

TEST_F(FiberLocalTest, DestroyedBeforeJoinReturns) {
  Start(2);
  ResetCounts();
  FiberLocal<Counted> local;
  for (int i = 0; i < 100; ++i) {
    Fiber f(sched_.get(), [&] { local.get(); });
    f.Join();
    EXPECT_EQ(g_destroyed.load(), i + 1);
  }
}

TEST_F(FiberLocalTest, SeveralLocalsAreIndependent) {
  Start(2);
  FiberLocal<int> a;
  FiberLocal<int> b;
  FiberLocal<std::vector<int>> c;
  Fiber f(sched_.get(), [&] {
    *a = 1;
    *b = 2;
    c->push_back(3);
    this_fiber::Yield();
    EXPECT_EQ(*a, 1);
    EXPECT_EQ(*b, 2);
    EXPECT_EQ(*c, std::vector<int>{3});
  });
  f.Join();
}

// These run on fresh threads: a thread's values live as long as the thread.
TEST_F(FiberLocalTest, PlainThreadsFallBackToThreadLocalStorage) {
  ResetCounts();
  FiberLocal<Counted> local;
  Counted* first = nullptr;
  Counted* second = nullptr;
  std::thread t1([&] {
    first = local.get();
    EXPECT_EQ(local.get(), first);
  });
  t1.join();
  EXPECT_EQ(g_destroyed.load(), 1);  // at the thread's exit
  std::thread t2([&] { second = local.get(); });
  t2.join();
  EXPECT_NE(second, nullptr);
  EXPECT_EQ(g_constructed.load(), 2);
  EXPECT_EQ(g_destroyed.load(), 2);
}

TEST_F(FiberLocalTest, AReusedSlotStartsFresh) {
  ResetCounts();
  std::thread t([] {
    auto first = std::make_unique<FiberLocal<Counted>>();
    (*first)->owner = 99;
    first.reset();  // the thread's value stays until the slot is reused (or the thread ends)
    EXPECT_EQ(g_destroyed.load(), 0);
    FiberLocal<Counted> second;  // takes the freed slot
    EXPECT_EQ(second->owner, 0u);
    EXPECT_EQ(g_destroyed.load(), 1);  // the stale value went when the slot was reused
  });
  t.join();
  EXPECT_EQ(g_destroyed.load(), 2);
}

// A destructor that touches another fiber-local while the fiber ends: the value it creates is
// destroyed too (in a later round), not leaked.
FiberLocal<Counted>* g_other = nullptr;
struct TouchesOtherOnDestruction {
  ~TouchesOtherOnDestruction() { (*g_other)->owner = 1; }
};

TEST_F(FiberLocalTest, DestructorsMayUseOtherFiberLocals) {
  Start(1);
  ResetCounts();
  FiberLocal<Counted> other;
  g_other = &other;
  FiberLocal<TouchesOtherOnDestruction> toucher;
  Fiber f(sched_.get(), [&] { toucher.get(); });
  f.Join();
  EXPECT_EQ(g_constructed.load(), 1);
  EXPECT_EQ(g_destroyed.load(), 1);
  g_other = nullptr;
}

}  // namespace
}  // namespace trpc::fiber
