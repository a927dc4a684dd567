#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "trpc/fiber/detail/deadline.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/spinlock.h"

namespace trpc::fiber {

/// A single-use countdown, like std::latch, for fibers and plain threads alike: wait() parks
/// a fiber (or sleeps a thread) until the count reaches zero. Safe from any fiber or thread.
///
/// Memory ordering: every count_down() happens-before the return of every wait() (and timed
/// wait that returns true) and of every try_wait() that returns true.
///
/// Lifetime: the Latch may be destroyed as soon as a wait() or try_wait() returned true while
/// no other call is in progress: the count_down() that reached zero touches nothing observable
/// of it afterwards.
class Latch {
 public:
  /// `expected` >= 0: the number of count_down() units to wait for.
  explicit Latch(ptrdiff_t expected);
  ~Latch();
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  /// Decrements the count by `n` (which must not take it below zero); at zero, wakes every
  /// waiter. Never blocks.
  void count_down(ptrdiff_t n = 1);
  /// True once the count has reached zero (and the waiters are being woken). Never blocks.
  bool try_wait() const noexcept { return done_.load(std::memory_order_acquire); }
  /// Blocks until the count reaches zero.
  void wait() const { WaitImpl(-1); }
  /// count_down(n), then wait().
  void arrive_and_wait(ptrdiff_t n = 1);
  /// As wait(), up to `deadline`; false if the deadline came first.
  template <typename Clock, typename Duration>
  bool wait_until(std::chrono::time_point<Clock, Duration> deadline) const {
    return WaitImpl(detail::ToDeadline(deadline));
  }
  template <typename Rep, typename Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return WaitImpl(detail::DeadlineAfter(timeout));
  }

 private:
  /// `deadline_ns` < 0: no limit. False on timeout.
  bool WaitImpl(int64_t deadline_ns) const;

  std::atomic<ptrdiff_t> count_;
  // The last access to *this of the count_down() that reached zero (what makes early
  // destruction safe); set after the waiters are taken off the list.
  std::atomic<bool> done_;
  mutable detail::Spinlock spin_;
  mutable detail::WaitList waiters_;  // guarded by spin_
};

}  // namespace trpc::fiber
