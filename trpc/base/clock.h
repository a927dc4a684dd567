#pragma once

#include <time.h>

#include <cstdint>

namespace trpc {

/// Monotonic clock helpers. All framework deadlines and timers use CLOCK_MONOTONIC nanoseconds,
/// so wall-clock jumps never fire or delay a timer. Safe from any thread.
inline int64_t MonotonicNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
inline int64_t MonotonicMicros() { return MonotonicNanos() / 1000; }
inline int64_t MonotonicMillis() { return MonotonicNanos() / 1'000'000; }

inline constexpr int64_t kNanosPerMilli = 1'000'000;
inline constexpr int64_t kNanosPerMicro = 1'000;
inline constexpr int64_t kNanosPerSecond = 1'000'000'000;

/// Wall clock in milliseconds since the epoch, for logs only.
inline int64_t RealtimeMillis() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace trpc
