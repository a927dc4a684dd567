#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "trpc/fiber/detail/deadline.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/spinlock.h"

namespace trpc::fiber {

/// A one-shot event: Set() once, and every waiter — fiber or plain thread, now or later — is
/// released. There is no reset. Safe from any fiber or thread.
///
/// Memory ordering: everything done before the first Set() happens-before the return of any
/// Wait()/WaitFor()/WaitUntil() that returns true and of any IsSet() that returns true. (A later
/// Set() does nothing, and publishes nothing.)
///
/// Lifetime: the Event may be destroyed as soon as a Wait() returned true or IsSet() did —
/// Set() touches nothing of it after that can be observed — while no other call is in progress.
class Event {
 public:
  Event() = default;
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  /// Sets the event and wakes every waiter. Calls after the first do nothing.
  void Set();
  bool IsSet() const { return set_.load(std::memory_order_acquire); }
  /// Blocks (parks the fiber, or sleeps the thread) until Set().
  void Wait() { WaitImpl(-1); }
  /// As Wait(), up to `deadline`; false if the deadline came first.
  template <typename Clock, typename Duration>
  bool WaitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    return WaitImpl(detail::ToDeadline(deadline));
  }
  template <typename Rep, typename Period>
  bool WaitFor(std::chrono::duration<Rep, Period> timeout) {
    return WaitImpl(detail::DeadlineAfter(timeout));
  }

 private:
  /// `deadline_ns` < 0: no limit. False on timeout.
  bool WaitImpl(int64_t deadline_ns);

  // set_ is Set()'s last access to *this (what makes early destruction safe). A waiter that
  // finds setting_ but not yet set_ waits the few instructions in between.
  std::atomic<bool> set_{false};
  detail::Spinlock spin_;
  bool setting_ = false;      // guarded by spin_
  detail::WaitList waiters_;  // guarded by spin_
};

}  // namespace trpc::fiber
