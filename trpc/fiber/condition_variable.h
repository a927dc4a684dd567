#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "trpc/fiber/detail/deadline.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/spinlock.h"
#include "trpc/fiber/mutex.h"

namespace trpc::fiber {

/// A condition variable for fiber::Mutex: a waiting fiber parks, a waiting plain thread sleeps
/// on a futex; either may be notified by a fiber or a thread. The std::condition_variable API,
/// with timeouts on steady_clock (other clocks are converted to a steady deadline when called).
///
/// Waiters are woken in FIFO order. Spurious wake-ups do not happen, but — as with any condition
/// variable — a woken waiter competes for the mutex and must re-check its condition: use the
/// predicate forms.
///
/// Timed waits on a fiber arm a timer on the fiber's worker (cancelled when the wait ends
/// early); on a plain thread they are futex timeouts.
///
/// Memory ordering: a wait() that returns because of a notify_one()/notify_all() synchronizes
/// with that call (the wait list's spinlock orders them); and since the waiter then re-locks the
/// mutex, whatever the notifier did under the mutex before unlocking it is visible to it.
///
/// Lifetime: destroy only when no waiter is inside a wait call (not merely notified: a timed
/// waiter's timer may still touch the wait list until the waiter returns).
class ConditionVariable {
 public:
  ConditionVariable() = default;
  ~ConditionVariable();
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  /// Wakes the longest waiter, if any.
  void notify_one() noexcept;
  /// Wakes every waiter now waiting.
  void notify_all() noexcept;

  /// Atomically releases `lock` and parks until notified; re-acquires `lock` before returning.
  /// `lock` must be owned by the caller.
  void wait(std::unique_lock<Mutex>& lock);

  template <typename Predicate>
  void wait(std::unique_lock<Mutex>& lock, Predicate pred) {
    while (!pred()) wait(lock);
  }

  /// As wait(), up to `deadline`. std::cv_status::timeout if the deadline passed first.
  template <typename Clock, typename Duration>
  std::cv_status wait_until(std::unique_lock<Mutex>& lock,
                            std::chrono::time_point<Clock, Duration> deadline) {
    return WaitUntilNanos(lock, detail::ToDeadline(deadline)) ? std::cv_status::no_timeout
                                                               : std::cv_status::timeout;
  }

  /// Waits until `pred()` or the deadline; returns `pred()` as last evaluated (under the lock).
  template <typename Clock, typename Duration, typename Predicate>
  bool wait_until(std::unique_lock<Mutex>& lock, std::chrono::time_point<Clock, Duration> deadline,
                  Predicate pred) {
    return WaitUntilNanos(lock, detail::ToDeadline(deadline), pred);
  }

  template <typename Rep, typename Period>
  std::cv_status wait_for(std::unique_lock<Mutex>& lock,
                          std::chrono::duration<Rep, Period> timeout) {
    return WaitUntilNanos(lock, detail::DeadlineAfter(timeout)) ? std::cv_status::no_timeout
                                                                : std::cv_status::timeout;
  }

  template <typename Rep, typename Period, typename Predicate>
  bool wait_for(std::unique_lock<Mutex>& lock, std::chrono::duration<Rep, Period> timeout,
                Predicate pred) {
    return WaitUntilNanos(lock, detail::DeadlineAfter(timeout), pred);
  }

 private:
  /// Waits until `pred()` or `deadline_ns`; returns `pred()` as last evaluated.
  template <typename Predicate>
  bool WaitUntilNanos(std::unique_lock<Mutex>& lock, int64_t deadline_ns, Predicate& pred) {
    while (!pred()) {
      if (!WaitUntilNanos(lock, deadline_ns)) return pred();
    }
    return true;
  }
  /// False on timeout. `deadline_ns` is a MonotonicNanos() time.
  bool WaitUntilNanos(std::unique_lock<Mutex>& lock, int64_t deadline_ns);

  detail::Spinlock spin_;
  detail::WaitList waiters_;  // guarded by spin_
};

}  // namespace trpc::fiber
