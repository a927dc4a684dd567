// ConcurrencyLimiter, fixed and adaptive (max_concurrency: auto), driven by a simulated server:
// one worker serving admitted requests in arrival order with a fixed service time, under
// Poisson arrivals from a seeded generator, on a simulated clock. The adaptive limit must keep
// goodput near capacity at 2x and 3x load for handlers from 10 us to 100 ms, keep the time in
// the server near its no-load latency, not refuse at 80% load, and recover at once when the
// load drops.

#include "trpc/server/detail/concurrency_limiter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <random>

#include "trpc/base/clock.h"

namespace trpc::detail {
namespace {

TEST(ConcurrencyLimiterTest, FixedLimitAdmitsUpToTheLimitAndFreesOnReply) {
  ConcurrencyLimiter limiter(3, false, 1, false);
  int64_t t = MonotonicNanos();
  EXPECT_TRUE(limiter.TryAdmit(0, t));
  EXPECT_TRUE(limiter.TryAdmit(0, t));
  EXPECT_TRUE(limiter.TryAdmit(0, t));
  EXPECT_FALSE(limiter.TryAdmit(0, t));
  EXPECT_EQ(limiter.in_flight(), 3u);
  limiter.OnDone(0, 1000, 1000, t + 1000);
  EXPECT_TRUE(limiter.TryAdmit(0, t + 2000));
  EXPECT_FALSE(limiter.TryAdmit(0, t + 2000));
  EXPECT_EQ(limiter.limit(), 3u);
}

TEST(ConcurrencyLimiterTest, InlinePassesGiveEachWorkerItsShareOfOnePass) {
  // Two workers, limit 4: a worker admits 2 per pass even when nothing else is in flight,
  // since the requests of one pass wait for each other.
  ConcurrencyLimiter limiter(4, false, 2, true);
  int64_t t = MonotonicNanos();
  EXPECT_TRUE(limiter.TryAdmit(0, t));
  limiter.OnDone(0, 10, 10, t);
  EXPECT_TRUE(limiter.TryAdmit(0, t));
  limiter.OnDone(0, 10, 10, t);
  EXPECT_FALSE(limiter.TryAdmit(0, t));
  EXPECT_TRUE(limiter.TryAdmit(0, t + 1));  // a new pass
  EXPECT_TRUE(limiter.TryAdmit(1, t));      // the other worker's own share
}

struct Phase {
  double load;  // offered rate / capacity
  double seconds;
};

struct PhaseResult {
  uint64_t offered = 0;
  uint64_t admitted = 0;
  uint64_t refused = 0;
  double goodput_share = 0;   // admitted and answered within the phase, / (capacity x time)
  double avg_latency_ns = 0;  // of the requests admitted in the phase's second half
  uint32_t min_limit = UINT32_MAX;
};

// One worker, service time `service_ns`, admitted requests served in arrival order.
std::vector<PhaseResult> Simulate(ConcurrencyLimiter* limiter, int64_t service_ns,
                                  const std::vector<Phase>& phases, uint32_t seed = 1) {
  std::mt19937_64 rng(seed);
  const double capacity = 1e9 / static_cast<double>(service_ns);
  int64_t now = MonotonicNanos();
  std::deque<int64_t> queue;  // arrival times of admitted requests not yet finished
  int64_t busy_until = now;   // when the request in service ends (if any)
  std::vector<PhaseResult> results;
  for (const Phase& phase : phases) {
    PhaseResult r;
    std::exponential_distribution<double> gap(capacity * phase.load / 1e9);
    int64_t end = now + static_cast<int64_t>(phase.seconds * 1e9);
    int64_t half = now + (end - now) / 2;
    double latency_sum = 0;
    uint64_t latency_n = 0, answered = 0;
    int64_t next_arrival = now + static_cast<int64_t>(gap(rng));
    while (true) {
      // The next event: a completion (head of the queue) or an arrival.
      int64_t completion =
          queue.empty() ? INT64_MAX : std::max(busy_until, queue.front()) + service_ns;
      int64_t t = std::min(completion, next_arrival);
      if (t >= end) break;
      now = t;
      if (completion <= next_arrival) {
        int64_t arrived = queue.front();
        queue.pop_front();
        busy_until = now;
        limiter->OnDone(0, now - arrived, service_ns, now);
        ++answered;
        if (arrived >= half) {
          latency_sum += static_cast<double>(now - arrived);
          ++latency_n;
        }
      } else {
        ++r.offered;
        if (limiter->TryAdmit(0, now)) {
          ++r.admitted;
          queue.push_back(now);
        } else {
          ++r.refused;
        }
        r.min_limit = std::min(r.min_limit, limiter->limit());
        next_arrival = now + std::max<int64_t>(1, static_cast<int64_t>(gap(rng)));
      }
    }
    now = end;
    r.goodput_share = static_cast<double>(answered) / (capacity * phase.seconds);
    r.avg_latency_ns = latency_n > 0 ? latency_sum / static_cast<double>(latency_n) : 0;
    results.push_back(r);
  }
  return results;
}

class AdaptiveLimitTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(AdaptiveLimitTest, HoldsGoodputAtTwoAndThreeTimesCapacityAndRecovers) {
  const int64_t service_ns = GetParam();
  // Slow handlers need longer phases for the same number of windows' worth of replies.
  const double unit = std::max(1.0, static_cast<double>(service_ns) / 1e6 * 0.2);
  ConcurrencyLimiter limiter(0, true, 1, false);
  auto r = Simulate(&limiter, service_ns,
                    {{0.5, 2 * unit}, {2.0, 6 * unit}, {3.0, 6 * unit}, {0.5, 2 * unit}});
  // Half load: nothing refused, nothing queued beyond chance.
  EXPECT_EQ(r[0].refused, 0u);
  for (int overloaded : {1, 2}) {
    SCOPED_TRACE(overloaded == 1 ? "2x" : "3x");
    EXPECT_GE(r[overloaded].goodput_share, 0.9);
    EXPECT_GT(r[overloaded].refused, 0u);
    // Time in the server stays near the no-load latency: at most 2x it, or it + 0.5 ms.
    double bound =
        std::max(2.0 * static_cast<double>(service_ns), static_cast<double>(service_ns) + 500e3);
    EXPECT_LE(r[overloaded].avg_latency_ns, 1.5 * bound);
    EXPECT_GE(r[overloaded].min_limit, 1u);
  }
  // Back to half load: the first phase's behaviour, at once.
  EXPECT_LE(r[3].refused, r[3].offered / 100);
}

INSTANTIATE_TEST_SUITE_P(HandlerTimes, AdaptiveLimitTest,
                         ::testing::Values(10'000, 100'000, 1'000'000, 100'000'000),
                         [](const auto& info) { return std::to_string(info.param / 1000) + "us"; });

TEST(ConcurrencyLimiterTest, AdaptiveLimitRefusesAlmostNothingAtEightyPercentLoad) {
  for (int64_t service_ns : {10'000, 100'000}) {
    ConcurrencyLimiter limiter(0, true, 1, false);
    auto r = Simulate(&limiter, service_ns, {{0.8, 5}}, /*seed=*/7);
    EXPECT_LE(static_cast<double>(r[0].refused), 0.01 * static_cast<double>(r[0].offered))
        << service_ns << " ns: " << r[0].refused << " of " << r[0].offered;
  }
}

}  // namespace
}  // namespace trpc::detail
