#pragma once

#include <cstdint>

#include "trpc/fiber/detail/fiber_entity.h"

namespace trpc::fiber::detail {

/// Waiters taken off a WaitList under its lock and woken after the lock is released, so a
/// wake-all never holds a spinlock across futex syscalls or run-queue pushes.
///
/// The batch is chained through Waiter::tag, not through prev/next: a taken waiter must look
/// unlinked (`linked == false`), because the timer of a timed wait (detail::WaitUntil) calls
/// WaitList::Remove() on it and would corrupt the primitive's list if the waiter sat in another
/// one. A primitive that uses a batch must not use `tag` for anything else.
///
/// Not synchronised: one owner, usually a local variable of the waking call.
class WakeBatch {
 public:
  /// Moves every waiter of `list` into the batch, in FIFO order. The list's lock is held.
  void TakeAll(WaitList* list) {
    while (Waiter* w = list->PopFront()) Add(w);
  }
  void Add(Waiter* w) {
    w->tag = 0;
    if (tail_ != nullptr) {
      tail_->tag = reinterpret_cast<uintptr_t>(w);
    } else {
      head_ = w;
    }
    tail_ = w;
  }
  bool Empty() const { return head_ == nullptr; }
  /// Wakes every waiter of the batch. Call without the list's lock. A woken waiter may return
  /// and free itself at once, so its successor is read before it is woken.
  void WakeAll() {
    Waiter* w = head_;
    head_ = tail_ = nullptr;
    while (w != nullptr) {
      auto* next = reinterpret_cast<Waiter*>(w->tag);
      Wake(w);
      w = next;
    }
  }

 private:
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

}  // namespace trpc::fiber::detail
