#include "trpc/fiber/mutex.h"

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc::fiber {

namespace {

// Waiter::tag values (the mutex owns the tag of its waiters).
constexpr uintptr_t kStarving = 1;   // set by the waiter: hand the lock to me
constexpr uintptr_t kHandedOff = 2;  // set by the unlocker: the lock is yours

// Tries before parking while the owner may be about to release. Short: if the owner is a fiber
// parked on this very worker, spinning cannot help at all.
constexpr int kSpinTries = 16;

}  // namespace

Mutex::~Mutex() {
  TRPC_CHECK(state_.load(std::memory_order_relaxed) == 0 && waiters_.Empty(),
             "a fiber::Mutex was destroyed while locked or waited on");
}

void Mutex::LockSlow() {
  for (int i = 0; i < kSpinTries; ++i) {
    detail::CpuRelax();
    uint32_t s = state_.load(std::memory_order_relaxed);
    if (s & kContended) break;  // others are queued already: do not spin past them
    if (!(s & kLocked) && state_.compare_exchange_weak(s, s | kLocked, std::memory_order_acquire,
                                                       std::memory_order_relaxed)) {
      return;
    }
  }

  detail::Waiter w;
  w.fiber = detail::CurrentFiber();
  int64_t first_wait_ns = 0;
  bool woken = false;  // we were woken (and so own the kWoken bit), not handed the lock
  spin_.lock();
  for (;;) {
    uint32_t s = state_.load(std::memory_order_relaxed);
    for (;;) {
      if (!(s & kLocked)) {
        // Free: take it. kContended stays only if others are queued; kWoken is dropped if it is
        // ours and kept if another woken waiter is still on its way.
        uint32_t n = kLocked | (waiters_.Empty() ? 0 : kContended) | (woken ? 0 : (s & kWoken));
        if (state_.compare_exchange_weak(s, n, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          spin_.unlock();
          return;
        }
        continue;
      }
      // Held: announce a waiter before queueing, so the owner's unlock() CAS fails and it comes
      // to spin_, which it can take only after we are on the list.
      uint32_t n = (s | kContended) & ~(woken ? kWoken : 0u);
      if (state_.compare_exchange_weak(s, n, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
        break;
      }
    }
    if (!woken) {
      first_wait_ns = MonotonicNanos();
    } else if (MonotonicNanos() - first_wait_ns >= kStarvationNanos) {
      w.tag = kStarving;
    }
    w.futex.store(0, std::memory_order_relaxed);
    waiters_.PushBack(&w);
    detail::Wait(&w, &spin_);  // releases spin_
    // Wake() happens after the unlocker's critical section on spin_, so tag is settled.
    if (w.tag == kHandedOff) return;
    woken = true;
    spin_.lock();
  }
}

void Mutex::UnlockSlow() {
  spin_.lock();
  // We still own the lock, so nothing but code under spin_ changes state_ until we store.
  uint32_t s = state_.load(std::memory_order_relaxed);
  detail::Waiter* w = nullptr;
  if (!(s & kWoken)) w = waiters_.PopFront();
  uint32_t rest = waiters_.Empty() ? 0 : kContended;
  if (w == nullptr) {
    state_.store((s & kWoken) | rest, std::memory_order_release);
  } else if (w->tag == kStarving) {
    w->tag = kHandedOff;  // the lock stays held, now by `w`
    state_.store(kLocked | rest, std::memory_order_relaxed);
  } else {
    state_.store(kWoken | rest, std::memory_order_release);
  }
  spin_.unlock();
  if (w != nullptr) detail::Wake(w);
}

}  // namespace trpc::fiber
