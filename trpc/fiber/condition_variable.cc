#include "trpc/fiber/condition_variable.h"

#include "trpc/base/logging.h"
#include "trpc/fiber/detail/wake_batch.h"

namespace trpc::fiber {

ConditionVariable::~ConditionVariable() {
  TRPC_CHECK(waiters_.Empty(), "a fiber::ConditionVariable was destroyed with waiters");
}

void ConditionVariable::notify_one() noexcept {
  spin_.lock();
  detail::Waiter* w = waiters_.PopFront();
  spin_.unlock();
  if (w != nullptr) detail::Wake(w);
}

void ConditionVariable::notify_all() noexcept {
  detail::WakeBatch batch;
  spin_.lock();
  batch.TakeAll(&waiters_);
  spin_.unlock();
  batch.WakeAll();
}

void ConditionVariable::wait(std::unique_lock<Mutex>& lock) {
  TRPC_CHECK(lock.owns_lock(), "ConditionVariable::wait() without the lock held");
  detail::Waiter w;
  w.fiber = detail::CurrentFiber();
  spin_.lock();
  waiters_.PushBack(&w);
  // spin_ stays held from queueing until Wait() releases it (for a fiber, once its context is
  // saved), so no notifier can wake us while we still run; and the mutex is released only once
  // we are queued, so a notify issued after it is free always finds us.
  lock.mutex()->unlock();
  detail::Wait(&w, &spin_);  // releases spin_ (for a fiber, once its context is saved)
  lock.mutex()->lock();
}

bool ConditionVariable::WaitUntilNanos(std::unique_lock<Mutex>& lock, int64_t deadline_ns) {
  TRPC_CHECK(lock.owns_lock(), "ConditionVariable::wait_until() without the lock held");
  detail::Waiter w;
  w.fiber = detail::CurrentFiber();
  spin_.lock();
  waiters_.PushBack(&w);
  lock.mutex()->unlock();
  bool woken = detail::WaitUntil(&w, &waiters_, &spin_, deadline_ns);
  lock.mutex()->lock();
  return woken;
}

}  // namespace trpc::fiber
