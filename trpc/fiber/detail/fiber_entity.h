#pragma once

#include <atomic>
#include <cstdint>
#include <functional>

#include "trpc/fiber/detail/context.h"
#include "trpc/fiber/detail/spinlock.h"
#include "trpc/fiber/detail/stack.h"

namespace trpc::fiber::detail {

class SchedulingGroup;
struct JoinState;

/// A fiber's descriptor: what a run queue holds. Small while queued; the stack is taken from
/// the running worker's cache on first run and returned when the fiber finishes.
struct FiberEntity {
  ctx::fcontext_t ctx = nullptr;  // saved context; null until first run
  Stack stack;
  std::function<void()> fn;
  SchedulingGroup* group = nullptr;  // where a wake-up from outside the scheduler queues it
  uint64_t id = 0;
  JoinState* join = nullptr;  // set for joinable fibers (Fiber); refcounted
  void* locals = nullptr;     // FiberLocal storage, created on first use
  void (*destroy_locals)(void*) = nullptr;
  SanitizerContext san;
  void* asan_fake_stack = nullptr;
  // this_fiber::OnNextSuspend(): called once, on the fiber, right before it next parks or
  // yields; cleared before the call.
  void (*on_suspend)(void*) = nullptr;
  void* on_suspend_arg = nullptr;
};

struct Waiter;
class WaitList;
/// Where a waiting fiber or thread is parked. Lives on the waiter's stack; linked into the wait
/// list of the primitive it waits on, under that primitive's Spinlock.
struct Waiter {
  FiberEntity* fiber = nullptr;    // null: a plain thread, which sleeps on `futex`
  std::atomic<uint32_t> futex{0};  // thread waiters: becomes 1 when woken
  Waiter* prev = nullptr;
  Waiter* next = nullptr;
  bool linked = false;  // guarded by the list's lock
  uintptr_t tag = 0;    // free for the primitive (e.g. a mutex handoff flag)
};

/// An intrusive FIFO of waiters. Not synchronised: the owning primitive's lock guards it.
class WaitList {
 public:
  bool Empty() const { return head_ == nullptr; }
  void PushBack(Waiter* w) {
    w->next = nullptr;
    w->prev = tail_;
    if (tail_) {
      tail_->next = w;
    } else {
      head_ = w;
    }
    tail_ = w;
    w->linked = true;
  }
  Waiter* PopFront() {
    Waiter* w = head_;
    if (w) Unlink(w);
    return w;
  }
  /// False if `w` is not in the list (already popped by a waker).
  bool Remove(Waiter* w) {
    if (!w->linked) return false;
    Unlink(w);
    return true;
  }

 private:
  void Unlink(Waiter* w) {
    (w->prev ? w->prev->next : head_) = w->next;
    (w->next ? w->next->prev : tail_) = w->prev;
    w->prev = w->next = nullptr;
    w->linked = false;
  }
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

/// What a Fiber handle shares with its fiber: set when the fiber has finished. Refcounted by
/// the handle and the fiber.
struct JoinState {
  std::atomic<int> refs{2};
  Spinlock lock;
  bool done = false;  // guarded by lock
  WaitList waiters;   // guarded by lock
  void Unref() {
    if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
};

/// The fiber running on the calling thread, or null on a plain thread (or a worker's own
/// scheduling context).
FiberEntity* CurrentFiber();

/// Parks the calling fiber. `lock`, if given, is held by the caller and is released only after
/// the fiber's context has been saved (on the scheduler's stack), so a waker that takes the
/// same lock can never resume a fiber that is still running. Returns once Resume() is called.
void Halt(Spinlock* lock);

/// Makes a halted fiber runnable. Any thread.
void Resume(FiberEntity* fiber);

/// Switches out the running fiber and queues it behind the runnable ones.
void YieldCurrent();

/// A fiber's last steps on its own stack: destroy its fiber-locals and wake its joiners.
void FinishFiber(FiberEntity* self);

/// Blocks the caller, fiber or plain thread, until Wake(w). `lock` guards the list `w` was
/// linked into and is held on entry; it is released (fibers: after the context is saved).
void Wait(Waiter* w, Spinlock* lock);

/// As Wait() with a deadline (MonotonicNanos(); negative = none, then simply Wait()). On a
/// timeout `w` is removed from `list` (under `lock`) and false is returned; true if woken.
/// `lock` is not held on return.
bool WaitUntil(Waiter* w, WaitList* list, Spinlock* lock, int64_t deadline_ns);

/// Wakes a waiter already removed from its list. May be called with or without the list's lock
/// held; touches nothing of `w` after the wake-up is published.
void Wake(Waiter* w);

}  // namespace trpc::fiber::detail
