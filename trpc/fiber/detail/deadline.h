#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "trpc/base/clock.h"

namespace trpc::fiber::detail {

/// Timed waits take an absolute MonotonicNanos() deadline. steady_clock reads the same clock
/// (CLOCK_MONOTONIC), so its time points convert by value. Conversions saturate instead of
/// overflowing, so time_point::max() or duration::max() mean "practically never".
template <typename Duration>
int64_t DeadlineNanos(std::chrono::time_point<std::chrono::steady_clock, Duration> tp) {
  auto d = tp.time_since_epoch();
  if (d <= Duration::zero()) return 0;
  if (std::chrono::duration<double, std::nano>(d).count() >=
      static_cast<double>(std::numeric_limits<int64_t>::max())) {
    return std::numeric_limits<int64_t>::max();
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

/// MonotonicNanos() + d, saturated; a negative `d` means "now".
template <typename Rep, typename Period>
int64_t DeadlineAfter(std::chrono::duration<Rep, Period> d) {
  int64_t now = MonotonicNanos();
  if (d <= d.zero()) return now;
  if (std::chrono::duration<double, std::nano>(d).count() >=
      static_cast<double>(std::numeric_limits<int64_t>::max() - now)) {
    return std::numeric_limits<int64_t>::max();
  }
  return now + std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

/// Any clock's time point as a monotonic deadline: steady_clock by value, others (e.g.
/// system_clock) by the time left until it, measured now.
template <typename Clock, typename Duration>
int64_t ToDeadline(std::chrono::time_point<Clock, Duration> tp) {
  if constexpr (std::is_same_v<Clock, std::chrono::steady_clock>) {
    return DeadlineNanos(tp);
  } else {
    return DeadlineAfter(tp - Clock::now());
  }
}

}  // namespace trpc::fiber::detail
