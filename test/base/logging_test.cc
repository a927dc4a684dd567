#include "trpc/base/logging.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace trpc::log {
namespace {

// Restores the process-wide level after each test.
class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = GetLevel(); }
  void TearDown() override { SetLevel(saved_); }

 private:
  Level saved_ = Level::kInfo;
};

TEST_F(LoggingTest, ParseLevelAcceptsEveryName) {
  const Level all[] = {Level::kTrace, Level::kDebug, Level::kInfo, Level::kWarn,
                       Level::kError, Level::kFatal, Level::kOff};
  for (Level l : all) {
    Level parsed = Level::kTrace;
    ASSERT_TRUE(ParseLevel(LevelName(l), &parsed)) << LevelName(l);
    EXPECT_EQ(parsed, l);
  }
  Level out = Level::kWarn;
  EXPECT_TRUE(ParseLevel("debug", &out));
  EXPECT_EQ(out, Level::kDebug);
}

TEST_F(LoggingTest, ParseLevelRejectsOthers) {
  for (const char* bad : {"", "INFO", "information", "warning", " info", "err"}) {
    Level out = Level::kError;
    EXPECT_FALSE(ParseLevel(bad, &out)) << '"' << bad << '"';
    EXPECT_EQ(out, Level::kError) << "output changed on failure";
  }
}

TEST_F(LoggingTest, SetAndGetLevel) {
  SetLevel(Level::kWarn);
  EXPECT_EQ(GetLevel(), Level::kWarn);
  EXPECT_FALSE(Enabled(Level::kInfo));
  EXPECT_TRUE(Enabled(Level::kWarn));
  EXPECT_TRUE(Enabled(Level::kError));
  SetLevel(Level::kTrace);
  EXPECT_TRUE(Enabled(Level::kTrace));
  SetLevel(Level::kOff);
  EXPECT_FALSE(Enabled(Level::kFatal));
  TRPC_LOG_ERROR("not written: level is off ({})", 1);
}

TEST(RateLimiterTest, FirstCallAdmittedThenSuppressed) {
  RateLimiter limiter(3600 * kNanosPerSecond);
  uint64_t suppressed = 123;
  ASSERT_TRUE(limiter.Admit(&suppressed));
  EXPECT_EQ(suppressed, 0u);
  for (int i = 0; i < 10; ++i) EXPECT_FALSE(limiter.Admit(&suppressed));
}

TEST(RateLimiterTest, AdmitsAgainAfterIntervalAndReportsSuppressedCount) {
  constexpr int64_t kInterval = 20 * kNanosPerMilli;
  RateLimiter limiter(kInterval);
  uint64_t suppressed = 0;
  int64_t start = MonotonicNanos();
  ASSERT_TRUE(limiter.Admit(&suppressed));
  // Poll until the next admission (with a deadline, not a fixed sleep); every refusal counts.
  uint64_t refused = 0;
  bool admitted = false;
  int64_t deadline = start + 10 * kNanosPerSecond;
  while (MonotonicNanos() < deadline) {
    if (limiter.Admit(&suppressed)) {
      admitted = true;
      break;
    }
    ++refused;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(admitted);
  EXPECT_GE(MonotonicNanos() - start, kInterval);
  EXPECT_EQ(suppressed, refused);
  // The count was reset by the admission.
  EXPECT_FALSE(limiter.Admit(&suppressed));
}

TEST(RateLimiterTest, OneAdmissionAmongConcurrentCallers) {
  RateLimiter limiter(3600 * kNanosPerSecond);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        uint64_t suppressed;
        if (limiter.Admit(&suppressed)) admitted.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(admitted.load(), 1);
}

TEST(RateLimiterTest, EveryMsMacroCompilesAndRuns) {
  for (int i = 0; i < 3; ++i) {
    TRPC_LOG_EVERY_MS(Level::kError, 60000, "rate-limited test line {}", i);  // written once
  }
}

}  // namespace
}  // namespace trpc::log
