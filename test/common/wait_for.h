#pragma once

// Waiting on a condition with a deadline, instead of sleeping and hoping (STYLE.md 15).

#include <chrono>
#include <cstdint>
#include <thread>

#include "trpc/base/clock.h"

namespace trpc::testing {

/// Polls `pred` every millisecond until it holds or `timeout_ms` passes; returns its final
/// value. Blocks the calling thread (not a fiber: call it from the test's own thread).
template <typename Pred>
bool WaitFor(Pred pred, int64_t timeout_ms = 10'000) {
  int64_t deadline = MonotonicMillis() + timeout_ms;
  while (!pred()) {
    if (MonotonicMillis() > deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace trpc::testing
