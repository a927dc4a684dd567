// Parking and waking fibers and plain threads: the calls declared in fiber_entity.h.

#include <memory>
#include <mutex>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/futex.h"
#include "trpc/fiber/detail/scheduling_group.h"
#include "trpc/fiber/detail/worker.h"
#include "trpc/fiber/detail/worker_timer.h"

namespace trpc::fiber::detail {

FiberEntity* CurrentFiber() {
  Worker* w = Worker::Current();
  return w ? w->running() : nullptr;
}

void Halt(Spinlock* lock) {
  Worker* w = Worker::Current();
  TRPC_CHECK(w != nullptr && w->running() != nullptr, "Halt() outside a fiber");
  w->SwitchToScheduler(AfterRun::kHalt, lock);
}

void Resume(FiberEntity* f) { f->group->Ready(f); }

void Wait(Waiter* w, Spinlock* lock) {
  if (w->fiber != nullptr) {
    Halt(lock);
    return;
  }
  lock->unlock();
  while (w->futex.load(std::memory_order_acquire) == 0) FutexWait(&w->futex, 0, -1);
}

namespace {
// Shared by a timed-out fiber wait and its timer; the timer may outlive the wait.
struct TimedWait {
  Spinlock lock;
  bool done = false;  // the waiter has returned: the timer must not touch it
  bool timed_out = false;
  Waiter* w;
  WaitList* list;
  Spinlock* list_lock;
};
}  // namespace

bool WaitUntil(Waiter* w, WaitList* list, Spinlock* lock, int64_t deadline_ns) {
  if (deadline_ns < 0) {
    Wait(w, lock);
    return true;
  }
  if (w->fiber != nullptr) {
    auto tw = std::make_shared<TimedWait>();
    tw->w = w;
    tw->list = list;
    tw->list_lock = lock;
    WorkerTimer timer = AddWorkerTimer(deadline_ns, [tw] {
      std::lock_guard g(tw->lock);
      if (tw->done) return;
      tw->list_lock->lock();
      bool mine = tw->list->Remove(tw->w);
      tw->list_lock->unlock();
      if (mine) {
        tw->timed_out = true;
        Resume(tw->w->fiber);
      }
    });
    Halt(lock);
    bool timed_out;
    {
      std::lock_guard g(tw->lock);
      tw->done = true;
      timed_out = tw->timed_out;
    }
    // Woken early: drop the timer so it neither lingers in the heap nor holds up Stop().
    if (!timed_out) CancelWorkerTimer(timer);
    return !timed_out;
  }
  lock->unlock();
  while (w->futex.load(std::memory_order_acquire) == 0) {
    if (MonotonicNanos() >= deadline_ns) {
      lock->lock();
      bool mine = list->Remove(w);
      lock->unlock();
      if (mine) return false;
      // A waker popped us first and is about to publish the wake-up: wait for it, since it
      // will still write to `w`.
      while (w->futex.load(std::memory_order_acquire) == 0) FutexWait(&w->futex, 0, -1);
      return true;
    }
    FutexWait(&w->futex, 0, deadline_ns);
  }
  return true;
}

void Wake(Waiter* w) {
  if (w->fiber != nullptr) {
    Resume(w->fiber);
    return;
  }
  w->futex.store(1, std::memory_order_release);
  // `w` may be gone once the store is visible; the futex word's address is only a key here.
  FutexWake(&w->futex, 1);
}

void YieldCurrent() {
  Worker* w = Worker::Current();
  TRPC_CHECK(w != nullptr && w->running() != nullptr, "Yield() outside a fiber");
  w->SwitchToScheduler(AfterRun::kYield, nullptr);
}

void FinishFiber(FiberEntity* self) {
  self->fn = nullptr;  // captures die on the fiber's own stack, as they would in a thread
  if (self->locals != nullptr) {
    self->destroy_locals(self->locals);
    self->locals = nullptr;
  }
  if (JoinState* js = self->join) {
    WaitList woken;
    js->lock.lock();
    js->done = true;
    while (Waiter* w = js->waiters.PopFront()) woken.PushBack(w);
    js->lock.unlock();
    while (Waiter* w = woken.PopFront()) Wake(w);
    self->join = nullptr;
    js->Unref();
  }
}

}  // namespace trpc::fiber::detail
