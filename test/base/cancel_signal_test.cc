#include "trpc/base/cancel_signal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace trpc {
namespace {

TEST(CancelSignalTest, FiresEachSubscriberOnceWithTheReason) {
  CancelSignal s;
  int a = 0, b = 0, gone = 0;
  Status seen;
  s.Subscribe([&](const Status& why) {
    ++a;
    seen = why;
  });
  s.Subscribe([&](const Status&) { ++b; });
  uint64_t id = s.Subscribe([&](const Status&) { ++gone; });
  s.Unsubscribe(id);
  EXPECT_FALSE(s.cancelled());
  s.Cancel(Status(161, "cut"));
  s.Cancel(Status(21, "again"));  // ignored
  EXPECT_TRUE(s.cancelled());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(gone, 0);
  EXPECT_EQ(seen.GetFrameworkRetCode(), 161);
  // Too late to wait: runs at once, with the first reason, and has no id.
  int late = 0;
  EXPECT_EQ(s.Subscribe([&](const Status& why) { late = why.GetFrameworkRetCode(); }), 0u);
  EXPECT_EQ(late, 161);
  s.Unsubscribe(0);  // (harmless)
}

// A freed place is reused; the old id no longer names it, so a late or repeated Unsubscribe
// cannot remove the new tenant's subscription.
TEST(CancelSignalTest, AStaleIdDoesNotRemoveTheNextSubscription) {
  CancelSignal s;
  int first = 0, second = 0;
  uint64_t a = s.Subscribe([&](const Status&) { ++first; });
  s.Unsubscribe(a);
  uint64_t b = s.Subscribe([&](const Status&) { ++second; });
  EXPECT_NE(a, b);
  s.Unsubscribe(a);  // stale: the place is b's now
  s.Unsubscribe(a);
  s.Cancel(Status(161, "cut"));
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, 1);
  s.Unsubscribe(b);  // after the cancel: harmless
}

// Subscribers come and go on several threads while another cancels: each callback of a
// subscription still in place at the cancel runs exactly once, and none runs after it was
// removed (run it under TSan: build-tsan has it).
TEST(CancelSignalStressTest, SubscribeUnsubscribeAndCancelRace) {
  constexpr int kRounds = 200;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50;
  for (int round = 0; round < kRounds; ++round) {
    CancelSignal s;
    std::vector<std::atomic<int>> hits(kThreads * kPerThread);
    std::vector<char> kept(kThreads * kPerThread, 0);  // each slot written by its own thread
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          const int slot = t * kPerThread + i;
          uint64_t id = s.Subscribe([&hits, slot](const Status&) { hits[slot].fetch_add(1); });
          if ((i + t) % 2 == 0) {
            kept[slot] = 1;
          } else {
            s.Unsubscribe(id);  // fires only if the cancel came first
          }
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(round % 50));
    s.Cancel(Status(161, "cut"));
    for (auto& th : threads) th.join();
    for (int slot = 0; slot < kThreads * kPerThread; ++slot) {
      if (kept[slot]) {
        ASSERT_EQ(hits[slot].load(), 1) << "round " << round << " slot " << slot;
      } else {
        ASSERT_LE(hits[slot].load(), 1) << "round " << round << " slot " << slot;
      }
    }
  }
}

}  // namespace
}  // namespace trpc
