#include "trpc/base/detail/mpsc_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace trpc {
namespace {

TEST(MpscQueueTest, CapacityAndEmpty) {
  MpscQueue<int> q(8);
  EXPECT_EQ(q.Capacity(), 8u);
  EXPECT_TRUE(q.Empty());
  int out = -1;
  EXPECT_FALSE(q.TryPop(&out));
  EXPECT_EQ(out, -1);  // untouched on failure
}

TEST(MpscQueueTest, FifoSingleThread) {
  MpscQueue<int> q(16);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(q.TryPush(int{i}));
  EXPECT_FALSE(q.Empty());
  for (int i = 0; i < 10; ++i) {
    int v = -1;
    ASSERT_TRUE(q.TryPop(&v));
    EXPECT_EQ(v, i);
  }
  int v;
  EXPECT_FALSE(q.TryPop(&v));
  EXPECT_TRUE(q.Empty());
}

TEST(MpscQueueTest, FullThenDrain) {
  MpscQueue<int> q(4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(q.TryPush(int{i}));
  EXPECT_FALSE(q.TryPush(99));  // full
  int v = -1;
  ASSERT_TRUE(q.TryPop(&v));
  EXPECT_EQ(v, 0);
  EXPECT_TRUE(q.TryPush(4));  // one cell freed
  EXPECT_FALSE(q.TryPush(5));
  for (int want = 1; want <= 4; ++want) {
    ASSERT_TRUE(q.TryPop(&v));
    EXPECT_EQ(v, want);
  }
  EXPECT_FALSE(q.TryPop(&v));
}

TEST(MpscQueueTest, SmallestCapacityWrapsManyLaps) {
  MpscQueue<uint64_t> q(2);
  uint64_t next_push = 0;
  uint64_t next_pop = 0;
  for (int round = 0; round < 10000; ++round) {
    // Alternate between filling completely and pushing one, to hit every phase of the ring.
    int n = (round % 3 == 0) ? 2 : 1;
    for (int i = 0; i < n; ++i) ASSERT_TRUE(q.TryPush(uint64_t{next_push++}));
    if (n == 2) {
      uint64_t x = 0;
      EXPECT_FALSE(q.TryPush(std::move(x)));
    }
    uint64_t v;
    while (q.TryPop(&v)) ASSERT_EQ(v, next_pop++);
  }
  EXPECT_EQ(next_pop, next_push);
}

TEST(MpscQueueTest, FailedPushLeavesValueIntact) {
  MpscQueue<std::unique_ptr<int>> q(2);
  ASSERT_TRUE(q.TryPush(std::make_unique<int>(1)));
  ASSERT_TRUE(q.TryPush(std::make_unique<int>(2)));
  auto p = std::make_unique<int>(3);
  EXPECT_FALSE(q.TryPush(std::move(p)));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(*p, 3);
}

TEST(MpscQueueTest, MoveOnlyUniquePtr) {
  MpscQueue<std::unique_ptr<std::string>> q(8);
  ASSERT_TRUE(q.TryPush(std::make_unique<std::string>("a")));
  ASSERT_TRUE(q.TryPush(std::make_unique<std::string>("b")));
  std::unique_ptr<std::string> out;
  ASSERT_TRUE(q.TryPop(&out));
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(*out, "a");
  ASSERT_TRUE(q.TryPop(&out));  // move-assign over a non-null pointer frees the old one
  EXPECT_EQ(*out, "b");
}

TEST(MpscQueueTest, StdFunctionClosures) {
  MpscQueue<std::function<void()>> q(8);
  int sum = 0;
  auto owned = std::make_unique<int>(40);
  ASSERT_TRUE(q.TryPush([&sum] { sum += 1; }));
  // A closure capturing a move-only value through a shared_ptr wrapper.
  auto holder = std::make_shared<std::unique_ptr<int>>(std::move(owned));
  ASSERT_TRUE(q.TryPush([&sum, holder] { sum += **holder; }));
  std::function<void()> fn;
  while (q.TryPop(&fn)) fn();
  EXPECT_EQ(sum, 41);
}

// Counts live instances, to check that the destructor destroys queued elements exactly once.
struct Counted {
  static inline std::atomic<int> live{0};
  Counted() { live.fetch_add(1); }
  Counted(Counted&&) noexcept { live.fetch_add(1); }
  Counted& operator=(Counted&&) noexcept { return *this; }
  ~Counted() { live.fetch_sub(1); }
};

TEST(MpscQueueTest, DestructorDestroysQueuedElements) {
  Counted::live = 0;
  {
    MpscQueue<Counted> q(8);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(q.TryPush(Counted()));
    Counted out;
    ASSERT_TRUE(q.TryPop(&out));
    EXPECT_EQ(Counted::live.load(), 4 + 1);  // 4 queued + `out`
  }
  EXPECT_EQ(Counted::live.load(), 0);
}

// Runs `producers` threads that each push `per_producer` values (producer id << 32 | sequence)
// and one consumer (this thread) that checks each value arrives once and in per-producer order.
// Fails instead of hanging when the whole exchange takes longer than `deadline`.
void RunStress(int producers, uint64_t per_producer, size_t capacity,
               std::chrono::seconds deadline) {
  MpscQueue<uint64_t> q(capacity);
  std::atomic<bool> abort{false};
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (uint64_t i = 0; i < per_producer; ++i) {
        uint64_t v = (static_cast<uint64_t>(p) << 32) | i;
        while (!q.TryPush(std::move(v))) {
          if (abort.load(std::memory_order_relaxed)) return;
          std::this_thread::yield();
        }
      }
    });
  }
  while (ready.load() < producers) std::this_thread::yield();
  go.store(true, std::memory_order_release);

  std::vector<uint64_t> next(producers, 0);
  const uint64_t total = per_producer * producers;
  uint64_t received = 0;
  bool order_ok = true;
  std::string first_error;
  auto end = std::chrono::steady_clock::now() + deadline;
  uint32_t spins = 0;
  while (received < total) {
    uint64_t v;
    if (q.TryPop(&v)) {
      uint64_t p = v >> 32;
      uint64_t seq = v & 0xffffffffu;
      if (p >= static_cast<uint64_t>(producers) || seq != next[p]) {
        if (order_ok) {
          first_error = "producer " + std::to_string(p) + " sent " + std::to_string(seq) +
                        ", expected " + std::to_string(p < next.size() ? next[p] : 0);
        }
        order_ok = false;
      } else {
        ++next[p];
      }
      ++received;
      continue;
    }
    if ((++spins & 1023) == 0 && std::chrono::steady_clock::now() > end) break;
    std::this_thread::yield();
  }
  abort.store(true);
  for (auto& t : threads) t.join();

  ASSERT_EQ(received, total) << "timed out after " << deadline.count() << " s";
  EXPECT_TRUE(order_ok) << first_error;
  for (int p = 0; p < producers; ++p) EXPECT_EQ(next[p], per_producer) << "producer " << p;
  uint64_t extra;
  EXPECT_FALSE(q.TryPop(&extra));
  EXPECT_TRUE(q.Empty());
}

TEST(MpscQueueStressTest, FourProducersExactlyOnceInOrder) {
  RunStress(/*producers=*/4, /*per_producer=*/200000, /*capacity=*/1024, std::chrono::seconds(20));
}

TEST(MpscQueueStressTest, TinyQueueHighContention) {
  RunStress(/*producers=*/4, /*per_producer=*/20000, /*capacity=*/2, std::chrono::seconds(20));
}

// Heap objects handed from producers to the consumer: under ASan this checks that the element
// written by the producer is fully visible to (and owned by) the consumer.
TEST(MpscQueueStressTest, MoveOnlyAcrossThreads) {
  constexpr int kProducers = 2;
  constexpr int kPerProducer = 20000;
  MpscQueue<std::unique_ptr<std::vector<int>>> q(64);
  std::atomic<bool> abort{false};
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        auto item = std::make_unique<std::vector<int>>(std::vector<int>{p, i, p + i});
        while (!q.TryPush(std::move(item))) {
          if (abort.load(std::memory_order_relaxed)) return;
          std::this_thread::yield();
        }
      }
    });
  }
  int received = 0;
  std::vector<int> next(kProducers, 0);
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::unique_ptr<std::vector<int>> item;
  while (received < kProducers * kPerProducer && std::chrono::steady_clock::now() < end) {
    if (!q.TryPop(&item)) {
      std::this_thread::yield();
      continue;
    }
    // No ASSERT here: returning early would destroy joinable threads.
    if (item == nullptr || item->size() != 3u || (*item)[0] < 0 || (*item)[0] >= kProducers) {
      ADD_FAILURE() << "corrupt item";
      break;
    }
    int p = (*item)[0];
    EXPECT_EQ((*item)[1], next[p]);
    EXPECT_EQ((*item)[2], p + next[p]);
    ++next[p];
    ++received;
  }
  abort.store(true);
  for (auto& t : threads) t.join();
  EXPECT_EQ(received, kProducers * kPerProducer);
}

}  // namespace
}  // namespace trpc
