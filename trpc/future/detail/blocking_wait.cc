#include "trpc/future/detail/blocking_wait.h"

#include <atomic>
#include <cassert>

#include "trpc/base/clock.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/spinlock.h"

namespace trpc::future_detail {

namespace {

using fiber::detail::Spinlock;
using fiber::detail::Waiter;
using fiber::detail::WaitList;

// What the state's callback and the waiter share. The callback may run before the waiter has
// linked itself (then `done` tells it not to sleep) or after (then it pops and wakes it).
struct WaitSync {
  Spinlock lock;
  WaitList waiters;          // guarded by lock; at most one
  bool done = false;         // guarded by lock
  std::atomic<int> refs{2};  // heap-allocated (timed) waits: the waiter and the callback
};

void Unref(WaitSync* s) {
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete s;
}

// Touches nothing of `s` after the unlock when no waiter is linked: an untimed waiter may then
// find `done`, return and destroy its stack-allocated WaitSync at once.
void MarkDoneAndWake(WaitSync* s) {
  s->lock.lock();
  s->done = true;
  Waiter* w = s->waiters.PopFront();
  s->lock.unlock();
  if (w != nullptr) fiber::detail::Wake(w);
}

void OnResolvedStack(void* arg, StateBase* /*src*/) {
  MarkDoneAndWake(static_cast<WaitSync*>(arg));
}

void OnResolvedHeap(void* arg, StateBase* /*src*/) {
  auto* s = static_cast<WaitSync*>(arg);
  MarkDoneAndWake(s);
  Unref(s);
}

}  // namespace

bool WaitResolved(StateBase* state, int64_t deadline_ns) {
  if (state->Resolved()) return true;
  Waiter w;
  w.fiber = fiber::detail::CurrentFiber();

  if (deadline_ns < 0) {
    // Untimed: the callback always runs before we return, so the WaitSync can live here.
    WaitSync sync;
    if (!state->Subscribe(&OnResolvedStack, &sync)) return true;
    sync.lock.lock();
    if (sync.done) {
      sync.lock.unlock();
    } else {
      sync.waiters.PushBack(&w);
      fiber::detail::Wait(&w, &sync.lock);  // returns with the lock released
    }
    assert(state->Resolved());
    return true;
  }

  if (MonotonicNanos() >= deadline_ns) return false;
  // Timed: on a timeout the callback still runs later, so the WaitSync is shared with it.
  auto* sync = new WaitSync;
  if (!state->Subscribe(&OnResolvedHeap, sync)) {
    delete sync;
    return true;
  }
  bool woken = true;
  sync->lock.lock();
  if (sync->done) {
    sync->lock.unlock();
  } else {
    sync->waiters.PushBack(&w);
    woken = fiber::detail::WaitUntil(&w, &sync->waiters, &sync->lock, deadline_ns);
  }
  Unref(sync);
  // A result that arrived as the deadline passed still counts (acquire: it is readable).
  return woken || state->Resolved();
}

int64_t DeadlineAfter(int64_t timeout_ns) { return MonotonicNanos() + timeout_ns; }

}  // namespace trpc::future_detail
