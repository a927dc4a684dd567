#pragma once

// Shared by the hedging tests (test/e2e/resilience_e2e_test.cc, test/naming/naming_e2e_test.cc):
// the P99 of a run of calls, and the check that hedging cut a 50 ms tail.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "trpc/base/clock.h"

namespace trpc::test {

// The P99 in ms of `calls` calls of `call`, made one after another; each must succeed.
inline double P99Ms(int calls, const std::function<bool()>& call) {
  std::vector<int64_t> lat;
  for (int i = 0; i < calls; ++i) {
    int64_t t0 = MonotonicNanos();
    EXPECT_TRUE(call()) << "call " << i;
    lat.push_back(MonotonicNanos() - t0);
  }
  std::sort(lat.begin(), lat.end());
  return static_cast<double>(lat[lat.size() * 99 / 100]) / 1e6;
}

// A backend whose slow calls take 50 ms shows them in its P99 without hedging; with a 5 ms
// hedge the P99 is under 10 ms.
inline void ExpectHedgingCutsTheTail(double plain, double hedged) {
  EXPECT_GE(plain, 45.0);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  // A sanitizer slows every call several times over: the hedge must still cut the tail.
  EXPECT_LT(hedged, plain / 2) << "plain P99 " << plain << " ms";
#else
  EXPECT_LT(hedged, 10.0) << "plain P99 " << plain << " ms";
#endif
}

}  // namespace trpc::test
