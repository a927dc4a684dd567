#pragma once

#include <algorithm>
#include <cstdint>
#include <random>

namespace trpc::naming::etcd::detail {

/// The first step of every back-off of the etcd plug-in, ms.
inline constexpr uint32_t kBackoffMinMs = 100;

/// Jittered exponential back-off between attempts to reach etcd: each Next() is a wait drawn
/// from [step/2, step], the step starting at `min_ms` and doubling up to `max_ms`, so that
/// many clients that lost etcd together do not all come back at once. Reset() starts over; its
/// callers reset only after etcd has been seen to work (events flowed, a keep-alive answered),
/// never merely because a connection opened.
///
/// Thread contract: one thread (no internal locking).
class Backoff {
 public:
  Backoff(uint32_t min_ms, uint32_t max_ms)
      : min_ms_(std::max<uint32_t>(min_ms, 2)),
        max_ms_(std::max(max_ms, min_ms_)),
        step_ms_(min_ms_),
        rng_(std::random_device{}()) {}

  /// The wait before the next attempt, ms; the step after it doubles.
  uint32_t Next() {
    const uint32_t ms = std::uniform_int_distribution<uint32_t>(step_ms_ / 2, step_ms_)(rng_);
    step_ms_ = std::min(step_ms_ * 2, max_ms_);
    return ms;
  }
  void Reset() { step_ms_ = min_ms_; }
  /// The current step: the longest wait the next Next() can return.
  uint32_t step_ms() const { return step_ms_; }

 private:
  const uint32_t min_ms_;
  const uint32_t max_ms_;
  uint32_t step_ms_;
  std::mt19937 rng_;
};

}  // namespace trpc::naming::etcd::detail
