#pragma once

#include <atomic>
#include <cstdint>

#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/spinlock.h"

namespace trpc::fiber {

/// A mutual-exclusion lock for fibers: a fiber that must wait parks (its worker runs other
/// fibers meanwhile); a plain thread that must wait sleeps on a futex. Fibers and threads may
/// share one Mutex. Satisfies Lockable, so std::unique_lock / std::lock_guard / std::scoped_lock
/// work. Not recursive; unlock() must come from the owner (fiber or thread) — a fiber may move
/// to another worker while it holds the lock, which is fine.
///
/// Cost: an uncontended lock() and unlock() are one compare-and-swap each. Contended, waiters
/// queue FIFO on a wait list guarded by a spinlock. Waking does not hand the lock over (a
/// running fiber may take it first, which keeps throughput up under contention), except to a
/// waiter that has already waited kStarvationNanos: it gets the lock handed to it directly,
/// so nobody starves (Go's sync.Mutex "starvation mode", simplified).
///
/// Memory ordering: unlock() is a release and lock()/a successful try_lock() an acquire on the
/// same object, so everything a holder did before unlock() happens-before everything the next
/// holder does after its lock() returns, whichever path (fast CAS, wake-up, hand-off) it took.
class Mutex {
 public:
  Mutex() = default;
  ~Mutex();
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  /// Blocks (parks the fiber, or sleeps the thread) until the lock is ours.
  void lock() {
    uint32_t expected = 0;
    if (__builtin_expect(state_.compare_exchange_strong(expected, kLocked,
                                                        std::memory_order_acquire,
                                                        std::memory_order_relaxed),
                         1)) {
      return;
    }
    LockSlow();
  }

  /// Takes the lock if it is free; never blocks. May take it ahead of parked waiters.
  bool try_lock() {
    uint32_t s = 0;
    while (!state_.compare_exchange_weak(s, s | kLocked, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
      if (s & kLocked) return false;
    }
    return true;
  }

  /// Releases the lock; wakes (or hands the lock to) one waiter if any are parked.
  void unlock() {
    uint32_t expected = kLocked;
    if (__builtin_expect(state_.compare_exchange_strong(expected, 0, std::memory_order_release,
                                                        std::memory_order_relaxed),
                         1)) {
      return;
    }
    UnlockSlow();
  }

  /// A waiter that has waited this long is handed the lock instead of racing for it.
  static constexpr int64_t kStarvationNanos = 1'000'000;

 private:
  // state_ bits. kLocked: owned. kContended: waiters may be queued, so unlock() takes the slow
  // path. kWoken: a woken waiter is on its way to retry, so unlock() need not wake another.
  // Only the fast paths change state_ without holding spin_, and they only set kLocked from a
  // state without it (lock(), try_lock()) or clear it from exactly kLocked (unlock()).
  static constexpr uint32_t kLocked = 1;
  static constexpr uint32_t kContended = 2;
  static constexpr uint32_t kWoken = 4;

  void LockSlow();
  void UnlockSlow();

  std::atomic<uint32_t> state_{0};
  detail::Spinlock spin_;
  detail::WaitList waiters_;  // guarded by spin_
};

}  // namespace trpc::fiber
