#include "trpc/base/detail/mpmc_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace trpc {
namespace {

TEST(MpmcQueueTest, FifoAndBounded) {
  MpmcQueue<int> q(4);
  int v[5] = {0, 1, 2, 3, 4};
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(q.TryPush(&v[i]));
  EXPECT_FALSE(q.TryPush(&v[4])) << "a full queue took a fifth element";
  EXPECT_EQ(q.Size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(q.TryPop(), &v[i]);
  EXPECT_EQ(q.TryPop(), nullptr);
  EXPECT_TRUE(q.TryPush(&v[4]));  // wraps around
  EXPECT_EQ(q.TryPop(), &v[4]);
}

// Four producers and four consumers: every element is taken exactly once, and the elements of
// one producer come out in its order for any single consumer.
TEST(MpmcQueueTest, ManyProducersManyConsumersLoseNothing) {
  constexpr int kProducers = 4, kConsumers = 4, kPerProducer = 200'000;
  MpmcQueue<uintptr_t> q(1024);
  std::vector<std::atomic<int>> seen(kProducers * kPerProducer);
  std::atomic<int> taken{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        // Encode (producer, sequence) + 1 so no element is the null "empty" marker.
        auto* v = reinterpret_cast<uintptr_t*>(static_cast<uintptr_t>(p * kPerProducer + i + 1));
        while (!q.TryPush(v)) std::this_thread::yield();
      }
    });
  }
  std::atomic<bool> order_ok{true};
  for (int c = 0; c < kConsumers; ++c) {
    threads.emplace_back([&] {
      std::vector<int> last(kProducers, -1);
      while (taken.load(std::memory_order_relaxed) < kProducers * kPerProducer) {
        uintptr_t* v = q.TryPop();
        if (v == nullptr) continue;
        int id = static_cast<int>(reinterpret_cast<uintptr_t>(v)) - 1;
        int p = id / kPerProducer, i = id % kPerProducer;
        if (i <= last[p]) order_ok = false;
        last[p] = i;
        seen[id].fetch_add(1, std::memory_order_relaxed);
        taken.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(order_ok.load()) << "a consumer saw one producer's elements out of order";
  for (int i = 0; i < kProducers * kPerProducer; ++i) {
    ASSERT_EQ(seen[i].load(), 1) << "element " << i;
  }
}

}  // namespace
}  // namespace trpc
