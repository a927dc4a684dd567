#pragma once

#include <chrono>
#include <functional>
#include <memory>

namespace trpc::fiber {

namespace detail {
struct TimerState;
}

/// Identifies a fiber timer for KillTimer(). Copyable; empty when default-constructed.
using TimerHandle = std::shared_ptr<detail::TimerState>;

/// Runs `cb` in a new fiber at `at` (and then every `interval`, if it is non-zero) on the
/// current scheduler (Scheduler::Current()). Timers live on a worker's timer heap: no lock, no
/// timer thread. Returns an empty handle if no scheduler runs.
TimerHandle SetTimer(std::chrono::steady_clock::time_point at, std::function<void()> cb,
                     std::chrono::nanoseconds interval = std::chrono::nanoseconds(0));
template <typename Rep, typename Period>
TimerHandle SetTimerAfter(std::chrono::duration<Rep, Period> after, std::function<void()> cb) {
  return SetTimer(std::chrono::steady_clock::now() + after, std::move(cb));
}

/// Cancels `timer`: its callback does not start again after this returns (a run already
/// started finishes). Any thread. False if it had already fired (one-shot) or was killed.
bool KillTimer(const TimerHandle& timer);

}  // namespace trpc::fiber
