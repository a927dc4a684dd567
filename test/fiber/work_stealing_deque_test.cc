#include "trpc/fiber/detail/work_stealing_deque.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace trpc::fiber::detail {
namespace {

TEST(WorkStealingDequeTest, OwnerPopsNewestThievesStealOldest) {
  WorkStealingDeque<int> d(8);
  int v[4] = {0, 1, 2, 3};
  for (int& x : v) ASSERT_TRUE(d.Push(&x));
  EXPECT_EQ(d.Size(), 4u);
  EXPECT_EQ(d.Steal(), &v[0]);
  EXPECT_EQ(d.Pop(), &v[3]);
  EXPECT_EQ(d.Steal(), &v[1]);
  EXPECT_EQ(d.Pop(), &v[2]);
  EXPECT_EQ(d.Pop(), nullptr);
  EXPECT_EQ(d.Steal(), nullptr);
}

TEST(WorkStealingDequeTest, PushRefusesWhenFull) {
  WorkStealingDeque<int> d(4);
  int v[5];
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(d.Push(&v[i]));
  EXPECT_FALSE(d.Push(&v[4])) << "a full deque overwrote a slot a thief may still claim";
  EXPECT_EQ(d.Steal(), &v[0]);
  EXPECT_TRUE(d.Push(&v[4]));  // room again after a steal, wrapping around
}

// The owner pushes and pops (LIFO) while three thieves steal (FIFO): every element is taken
// exactly once, including the contested last element.
TEST(WorkStealingDequeTest, OwnerAndThievesTakeEachElementExactlyOnce) {
  constexpr int kItems = 400'000;
  WorkStealingDeque<int> d(256);
  std::vector<int> items(kItems);
  std::vector<std::atomic<int>> taken(kItems);
  std::atomic<int> total{0};
  std::atomic<bool> done{false};
  auto take = [&](int* p) {
    taken[static_cast<size_t>(p - items.data())].fetch_add(1, std::memory_order_relaxed);
    total.fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> thieves;
  for (int t = 0; t < 3; ++t) {
    thieves.emplace_back([&] {
      while (!done.load(std::memory_order_acquire)) {
        if (int* p = d.Steal()) take(p);
      }
      while (int* p = d.Steal()) take(p);
    });
  }
  int next = 0;
  while (next < kItems) {
    // Push a few, pop one: keeps the deque short so owner and thieves meet at the last element.
    for (int k = 0; k < 3 && next < kItems; ++k) {
      if (!d.Push(&items[next])) break;
      ++next;
    }
    if (int* p = d.Pop()) take(p);
  }
  while (int* p = d.Pop()) take(p);
  done.store(true, std::memory_order_release);
  for (auto& t : thieves) t.join();
  EXPECT_EQ(total.load(), kItems);
  for (int i = 0; i < kItems; ++i) ASSERT_EQ(taken[i].load(), 1) << "item " << i;
}

}  // namespace
}  // namespace trpc::fiber::detail
