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

// A backend whose slow calls take 50 ms shows them in its P99 without hedging; a 5 ms hedge
// cuts the P99 to under half of that. Half, not a few ms: each stall of a loaded machine (or the
// slowdown of a sanitizer) delays one call of the run, and it takes 1% of the calls each delayed by
// 25 ms to lift the hedged P99 that far, while without the hedge 5% of the calls are slow.
inline void ExpectHedgingCutsTheTail(double plain, double hedged) {
  EXPECT_GE(plain, 45.0);
  EXPECT_LT(hedged, plain / 2) << "plain P99 " << plain << " ms";
}

}  // namespace trpc::test
