#include "trpc/fiber/latch.h"

#include "trpc/base/logging.h"
#include "trpc/fiber/detail/await_flag.h"
#include "trpc/fiber/detail/wake_batch.h"

namespace trpc::fiber {

Latch::Latch(ptrdiff_t expected) : count_(expected), done_(expected == 0) {
  TRPC_CHECK(expected >= 0, "fiber::Latch with a negative count {}", expected);
}

Latch::~Latch() { TRPC_CHECK(waiters_.Empty(), "a fiber::Latch was destroyed with waiters"); }

void Latch::count_down(ptrdiff_t n) {
  // acq_rel: the decrement that reaches zero acquires every earlier one (they form one release
  // sequence) and republishes them through done_ and the wake-ups.
  ptrdiff_t prev = count_.fetch_sub(n, std::memory_order_acq_rel);
  TRPC_CHECK(prev >= n && n >= 0, "fiber::Latch::count_down({}) with only {} left", n, prev);
  if (prev != n) return;
  detail::WakeBatch batch;
  spin_.lock();
  batch.TakeAll(&waiters_);
  spin_.unlock();
  done_.store(true, std::memory_order_release);
  batch.WakeAll();
}

void Latch::arrive_and_wait(ptrdiff_t n) {
  count_down(n);
  wait();
}

bool Latch::WaitImpl(int64_t deadline_ns) const {
  if (done_.load(std::memory_order_acquire)) return true;
  detail::Waiter w;
  w.fiber = detail::CurrentFiber();
  spin_.lock();
  // Checked under spin_: the count_down() that reaches zero takes spin_ after its decrement,
  // so either we see zero here or it finds us on the list.
  if (count_.load(std::memory_order_acquire) == 0) {
    spin_.unlock();
    detail::AwaitImminent(done_);
    return true;
  }
  waiters_.PushBack(&w);
  return detail::WaitUntil(&w, &waiters_, &spin_, deadline_ns);  // negative: no deadline
}

}  // namespace trpc::fiber
