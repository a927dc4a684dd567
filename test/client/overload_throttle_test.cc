// The client-side overload throttle (overload_throttle: true) on a simulated clock: it refuses
// nothing while the callee accepts, refuses most calls while the callee answers only
// "overloaded", lets through about what the callee accepts (twice that, as the formula allows),
// and forgets an overload once its two-second window has passed.

#include "trpc/client/detail/overload_throttle.h"

#include <gtest/gtest.h>

#include "trpc/base/clock.h"

namespace trpc::detail {
namespace {

constexpr int64_t kMs = kNanosPerMilli;

// `calls` calls spread evenly over `ms` from `*now`; the callee accepts at most `capacity`
// calls per 100 ms (-1: all) and answers the others "overloaded". Returns how many calls the
// throttle refused.
int Drive(OverloadThrottle* t, int64_t* now, int calls, int64_t ms, int capacity) {
  int refused = 0, accepted_this_period = 0;
  int64_t period = *now / (100 * kMs);
  for (int i = 0; i < calls; ++i) {
    *now += ms * kMs / calls;
    if (*now / (100 * kMs) != period) {
      period = *now / (100 * kMs);
      accepted_this_period = 0;
    }
    if (t->ShouldRefuse(*now)) {
      ++refused;
      continue;
    }
    bool accepted = capacity < 0 || accepted_this_period < capacity;
    accepted_this_period += accepted ? 1 : 0;
    t->OnResult(*now, accepted);
  }
  return refused;
}

TEST(OverloadThrottleTest, RefusesNothingWhileTheCalleeAccepts) {
  OverloadThrottle t;
  int64_t now = MonotonicNanos();
  EXPECT_EQ(Drive(&t, &now, 10000, 3000, -1), 0);
  EXPECT_EQ(t.RefuseProbability(now), 0.0);
}

TEST(OverloadThrottleTest, RefusesNothingWhileTheCalleeAcceptsHalf) {
  // 1000 calls/s offered, 500/s accepted: requests - 2 x accepts stays at or below 0.
  OverloadThrottle t;
  int64_t now = MonotonicNanos();
  EXPECT_LE(Drive(&t, &now, 3000, 3000, 50), 30);
}

TEST(OverloadThrottleTest, RefusesMostCallsWhileTheCalleeAcceptsNothingThenForgets) {
  OverloadThrottle t;
  int64_t now = MonotonicNanos();
  Drive(&t, &now, 1000, 1000, 0);  // the window fills with refusals by the callee
  int refused = Drive(&t, &now, 1000, 1000, 0);
  EXPECT_GT(refused, 900);
  EXPECT_GT(t.RefuseProbability(now), 0.9);
  // The callee recovers: the throttle stops refusing within a few windows.
  int64_t recovered_at = now;
  while (t.RefuseProbability(now) > 0 && now - recovered_at < 20'000 * kMs) {
    Drive(&t, &now, 100, 100, -1);
  }
  EXPECT_LE(now - recovered_at, 8'000 * kMs);
  EXPECT_EQ(Drive(&t, &now, 1000, 1000, -1), 0);
}

TEST(OverloadThrottleTest, SendsAboutTwiceWhatTheCalleeAccepts) {
  // 2000 calls/s offered, 250/s accepted: the throttle settles where what is sent is about
  // twice what is accepted (500/s), i.e. it refuses about three calls in four.
  OverloadThrottle t;
  int64_t now = MonotonicNanos();
  Drive(&t, &now, 4000, 2000, 25);
  int refused = Drive(&t, &now, 4000, 2000, 25);
  EXPECT_GT(refused, 4000 * 65 / 100);
  EXPECT_LT(refused, 4000 * 85 / 100);
}

}  // namespace
}  // namespace trpc::detail
