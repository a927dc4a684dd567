#include "trpc/fiber/blocking_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "test/fiber/fiber_test_util.h"
#include "trpc/base/clock.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {
namespace {

using BlockingQueueTest = testing::FiberTest;
using std::chrono::milliseconds;

TEST_F(BlockingQueueTest, FifoWithinCapacity) {
  BlockingQueue<std::string> q(3);
  EXPECT_EQ(q.capacity(), 3u);
  EXPECT_TRUE(q.TryPush("a"));
  EXPECT_TRUE(q.Push(std::string("b")));
  EXPECT_TRUE(q.TryPush("c"));
  std::string d = "d";
  EXPECT_FALSE(q.TryPush(std::move(d)));  // full
  EXPECT_EQ(d, "d");                      // not moved from on failure
  EXPECT_EQ(q.size(), 3u);
  EXPECT_EQ(q.Pop(), "a");
  EXPECT_EQ(q.TryPop(), "b");
  EXPECT_EQ(q.PopFor(milliseconds(1)), "c");
  EXPECT_EQ(q.TryPop(), std::nullopt);
  // Wraps around the ring.
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(q.TryPush(std::to_string(i)));
    EXPECT_EQ(q.TryPop(), std::to_string(i));
  }
}

TEST_F(BlockingQueueTest, MoveOnlyItems) {
  BlockingQueue<std::unique_ptr<int>> q(2);
  EXPECT_TRUE(q.Push(std::make_unique<int>(5)));
  auto v = q.Pop();
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(**v, 5);
}

TEST_F(BlockingQueueTest, PopForTimesOutWhenEmptyAndReturnsAPushedItem) {
  Start(2);
  BlockingQueue<int> q(1);
  std::atomic<int> timed_out{0};
  auto check = [&] {
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(q.PopFor(milliseconds(20)), std::nullopt);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, milliseconds(20));
    timed_out.fetch_add(1);
    // A long limit: the wake-up must come from the push, and a timed wait that ends early
    // drops its timer, so this does not hold up the scheduler's Stop().
    auto v = q.PopFor(std::chrono::seconds(60));
    EXPECT_TRUE(v.has_value());
  };
  Fiber f(sched_.get(), check);
  std::thread t(check);
  ASSERT_TRUE(testing::PollFor([&] { return timed_out.load() == 2; }));
  EXPECT_TRUE(q.Push(1));
  EXPECT_TRUE(q.Push(2));  // capacity 1: waits until one of them took the first
  f.Join();
  t.join();
}

TEST_F(BlockingQueueTest, PushBlocksWhileFull) {
  Start(1);
  BlockingQueue<int> q(2);
  std::vector<int> log;  // one worker, fibers only: no race
  Fiber producer(sched_.get(), [&] {
    for (int i = 0; i < 4; ++i) {
      q.Push(i);
      log.push_back(i);
    }
  });
  Fiber consumer(sched_.get(), [&] {
    // The producer filled the queue and parked on its third push before we ran.
    EXPECT_EQ(log, (std::vector<int>{0, 1}));
    for (int i = 0; i < 4; ++i) EXPECT_EQ(q.Pop(), i);
  });
  producer.Join();
  consumer.Join();
  EXPECT_EQ(log, (std::vector<int>{0, 1, 2, 3}));
}

TEST_F(BlockingQueueTest, CloseWakesEveryoneAndPopsDrainFirst) {
  Start(2);
  BlockingQueue<int> empty(4);
  BlockingQueue<int> full(1);
  ASSERT_TRUE(full.Push(0));
  std::atomic<int> blocked{0};
  std::atomic<int> returned{0};
  std::vector<Fiber> fibers;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    auto pop = [&] {
      blocked.fetch_add(1);
      EXPECT_EQ(empty.Pop(), std::nullopt);
      returned.fetch_add(1);
    };
    auto push = [&] {
      blocked.fetch_add(1);
      EXPECT_FALSE(full.Push(1));
      returned.fetch_add(1);
    };
    if (i % 2 == 0) {
      fibers.emplace_back(sched_.get(), pop);
      fibers.emplace_back(sched_.get(), push);
    } else {
      threads.emplace_back(pop);
      threads.emplace_back(push);
    }
  }
  ASSERT_TRUE(testing::PollFor([&] { return blocked.load() == 8; }));
  empty.Close();
  full.Close();
  for (auto& f : fibers) f.Join();
  for (auto& t : threads) t.join();
  EXPECT_EQ(returned.load(), 8);
  EXPECT_TRUE(full.closed());
  EXPECT_FALSE(full.TryPush(2));
  EXPECT_EQ(full.Pop(), 0);  // what was queued before Close() is still delivered
  EXPECT_EQ(full.Pop(), std::nullopt);
  EXPECT_EQ(full.PopFor(milliseconds(1)), std::nullopt);
}

// Several producers and consumers, fibers and plain threads, through a small queue so both
// sides block all the time, for about a second. A lost wake-up strands a party (the ctest
// timeout fails the test); a lost or duplicated item fails the count.
TEST_F(BlockingQueueTest, ProducersAndConsumersLoseNothing) {
  Start(4);
  constexpr int kProducerFibers = 3;
  constexpr int kProducerThreads = 2;
  constexpr int kProducers = kProducerFibers + kProducerThreads;
  constexpr int kConsumerFibers = 3;
  constexpr int kConsumerThreads = 2;
  constexpr uint64_t kMaxPerProducer = 400'000;  // bounds the run if the machine is fast
  const int64_t stop_at = MonotonicNanos() + 1'000 * kNanosPerMilli;
  BlockingQueue<uint64_t> q(8);
  std::vector<std::unique_ptr<std::atomic<uint8_t>[]>> seen;
  std::vector<uint64_t> produced(kProducers, 0);
  for (int p = 0; p < kProducers; ++p) {
    seen.emplace_back(new std::atomic<uint8_t>[kMaxPerProducer]());
  }

  auto produce = [&](int p) {
    uint64_t n = 0;
    while (n < kMaxPerProducer && (n % 64 != 0 || MonotonicNanos() < stop_at)) {
      ASSERT_TRUE(q.Push(uint64_t(p) * kMaxPerProducer + n));
      ++n;
    }
    produced[p] = n;
  };
  std::atomic<uint64_t> consumed{0};
  auto consume = [&](int c) {
    for (;;) {
      // One consumer of each kind uses PopFor with a tiny timeout, so timed waits race with
      // wake-ups all the time.
      std::optional<uint64_t> v;
      if (c == 0) {
        v = q.PopFor(std::chrono::microseconds(100));
        if (!v && !q.closed()) continue;
      } else {
        v = q.Pop();
      }
      if (!v) return;
      uint64_t p = *v / kMaxPerProducer;
      uint64_t n = *v % kMaxPerProducer;
      seen[p][n].fetch_add(1, std::memory_order_relaxed);
      consumed.fetch_add(1, std::memory_order_relaxed);
    }
  };

  std::vector<Fiber> consumer_fibers;
  std::vector<std::thread> consumer_threads;
  for (int c = 0; c < kConsumerFibers; ++c) {
    consumer_fibers.emplace_back(sched_.get(), [&, c] { consume(c); });
  }
  for (int c = 0; c < kConsumerThreads; ++c) consumer_threads.emplace_back(consume, c);
  std::vector<Fiber> producer_fibers;
  std::vector<std::thread> producer_threads;
  for (int p = 0; p < kProducerFibers; ++p) {
    producer_fibers.emplace_back(sched_.get(), [&, p] { produce(p); });
  }
  for (int p = kProducerFibers; p < kProducers; ++p) producer_threads.emplace_back(produce, p);

  for (auto& f : producer_fibers) f.Join();
  for (auto& t : producer_threads) t.join();
  q.Close();
  for (auto& f : consumer_fibers) f.Join();
  for (auto& t : consumer_threads) t.join();

  uint64_t total = 0;
  for (int p = 0; p < kProducers; ++p) {
    total += produced[p];
    for (uint64_t n = 0; n < kMaxPerProducer; ++n) {
      uint8_t expected = n < produced[p] ? 1 : 0;
      ASSERT_EQ(seen[p][n].load(), expected) << "producer " << p << " item " << n;
    }
  }
  EXPECT_EQ(consumed.load(), total);
  EXPECT_GT(total, 0u);
  RecordProperty("items", std::to_string(total));
}

}  // namespace
}  // namespace trpc::fiber
