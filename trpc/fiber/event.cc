#include "trpc/fiber/event.h"

#include "trpc/base/logging.h"
#include "trpc/fiber/detail/await_flag.h"
#include "trpc/fiber/detail/wake_batch.h"

namespace trpc::fiber {

Event::~Event() {
  TRPC_CHECK(waiters_.Empty(), "a fiber::Event was destroyed with waiters");
}

void Event::Set() {
  detail::WakeBatch batch;
  spin_.lock();
  if (setting_) {
    spin_.unlock();
    return;
  }
  setting_ = true;
  batch.TakeAll(&waiters_);
  spin_.unlock();
  set_.store(true, std::memory_order_release);
  // Only the waiters are touched from here on; they cannot return before they are woken.
  batch.WakeAll();
}

bool Event::WaitImpl(int64_t deadline_ns) {
  if (set_.load(std::memory_order_acquire)) return true;
  detail::Waiter w;
  w.fiber = detail::CurrentFiber();
  spin_.lock();
  if (setting_) {
    spin_.unlock();
    detail::AwaitImminent(set_);
    return true;
  }
  waiters_.PushBack(&w);
  return detail::WaitUntil(&w, &waiters_, &spin_, deadline_ns);  // negative: no deadline
}

}  // namespace trpc::fiber
