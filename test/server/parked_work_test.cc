#include "trpc/server/detail/parked_work.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace trpc::detail {
namespace {

// Decrements `*n` if it is positive; says whether it did.
bool TakeOne(std::atomic<int64_t>* n) {
  int64_t v = n->load();
  while (v > 0 && !n->compare_exchange_weak(v, v - 1)) {
  }
  return v > 0;
}

// The instance is process-wide: each test sets its limit and leaves it at 0 (no bound).
class ParkedWorkTest : public ::testing::Test {
 protected:
  void TearDown() override { ParkedWork::Instance().SetLimit(0); }
};

TEST_F(ParkedWorkTest, NoBoundTakesNothing) {
  ParkedWork& p = ParkedWork::Instance();
  p.SetLimit(0);
  EXPECT_EQ(p.TryAcquire(), ParkedWork::Result::kUnbounded);
  EXPECT_EQ(p.Taken(), 0u);
}

TEST_F(ParkedWorkTest, ExactlyTheLimitFromOneThreadThenRefusedUntilOneIsGivenBack) {
  ParkedWork& p = ParkedWork::Instance();
  p.SetLimit(100);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(p.TryAcquire(), ParkedWork::Result::kTaken) << i;
  EXPECT_EQ(p.TryAcquire(), ParkedWork::Result::kRefused);
  EXPECT_EQ(p.Taken(), 100u);
  p.Release();
  EXPECT_EQ(p.TryAcquire(), ParkedWork::Result::kTaken);
  for (int i = 0; i < 100; ++i) p.Release();
  EXPECT_LE(p.Taken(), 2u);  // at most two batches (of 1) kept by this thread
}

TEST_F(ParkedWorkTest, LoweringTheLimitBelowWhatIsHeldRefusesUntilEnoughAreBack) {
  ParkedWork& p = ParkedWork::Instance();
  p.SetLimit(10);
  for (int i = 0; i < 10; ++i) ASSERT_EQ(p.TryAcquire(), ParkedWork::Result::kTaken);
  p.SetLimit(5);
  for (int i = 0; i < 4; ++i) p.Release();
  // 6 held against 5: refused, even with permits cached by this thread given back.
  std::thread([&] { EXPECT_EQ(p.TryAcquire(), ParkedWork::Result::kRefused); }).join();
  for (int i = 0; i < 6; ++i) p.Release();
}

TEST_F(ParkedWorkTest, ThreadsNeverHoldMoreThanTheLimitAndGiveBackAllAtExit) {
  // Stress: threads take and give back permits, some given back by another thread than took
  // them (a fiber stolen, a reply from a pool thread); a shared count of the holders must never
  // pass the limit, and once every thread has exited nothing is left out of the pool.
  constexpr uint64_t kLimit = 3000;
  ParkedWork& p = ParkedWork::Instance();
  p.SetLimit(kLimit);
  std::atomic<int64_t> held{0}, most{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<int64_t> handed{0};  // taken by one thread, to be given back by another
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::vector<int> mine;
      uint64_t rng = 0x9E3779B97F4A7C15ULL * (t + 1);
      while (std::chrono::steady_clock::now() < deadline) {
        for (int i = 0; i < 256; ++i) {
          rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
          if (rng % 3 != 0) {
            if (p.TryAcquire() == ParkedWork::Result::kTaken) {
              int64_t now = held.fetch_add(1) + 1;
              int64_t m = most.load();
              while (now > m && !most.compare_exchange_weak(m, now)) {
              }
              if (rng % 7 == 0) {
                handed.fetch_add(1);
              } else {
                mine.push_back(1);
              }
            } else {
              refused.fetch_add(1);
            }
          } else if (!mine.empty()) {
            mine.pop_back();
            held.fetch_sub(1);
            p.Release();
          } else if (TakeOne(&handed)) {
            held.fetch_sub(1);
            p.Release();
          }
        }
      }
      for (size_t i = 0; i < mine.size(); ++i) {
        held.fetch_sub(1);
        p.Release();
      }
    });
  }
  for (auto& t : threads) t.join();
  while (handed.load() > 0) {
    handed.fetch_sub(1);
    held.fetch_sub(1);
    p.Release();
  }
  EXPECT_LE(most.load(), int64_t{kLimit});
  EXPECT_GT(refused.load(), 0u);  // the limit was reached
  EXPECT_EQ(held.load(), 0);
  // Every worker thread has exited (its cache went back); only this thread may keep a few.
  EXPECT_LE(p.Taken(), 2u * 32);
}

}  // namespace
}  // namespace trpc::detail
