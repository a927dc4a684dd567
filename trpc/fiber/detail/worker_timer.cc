#include "trpc/fiber/detail/worker_timer.h"

#include <utility>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/fiber/detail/scheduling_group.h"
#include "trpc/fiber/detail/worker.h"

namespace trpc::fiber::detail {

WorkerTimer AddWorkerTimer(int64_t deadline_ns, std::function<void()> cb) {
  Worker* w = Worker::Current();
  TRPC_CHECK(w != nullptr, "AddWorkerTimer() outside a fiber worker");
  return WorkerTimer{w, w->timers().Add(deadline_ns, std::move(cb))};
}

void CancelWorkerTimer(const WorkerTimer& timer) {
  if (timer.worker == nullptr) return;
  if (Worker::Current() == timer.worker) {
    timer.worker->timers().Cancel(timer.id);
  } else {
    timer.worker->PostTimerCancel(timer.id);
  }
}

void Worker::PostTimerCancel(uint64_t id) {
  // A full inbox only delays the cleanup: the callback is written to tolerate running late.
  if (!timer_cancels_.TryPush(uint64_t{id})) return;
  // A stopping worker may be sleeping until this very timer: let it re-check now.
  if (group_->stopping_.load(std::memory_order_acquire)) Unpark();
}

void Worker::ApplyTimerCancels() {
  if (timer_cancels_.Empty()) return;
  uint64_t id;
  while (timer_cancels_.TryPop(&id)) timers_.Cancel(id);
}

void Worker::RunTimers() {
  ApplyTimerCancels();
  if (timers_.size() == 0) return;
  int64_t next = timers_.NextDeadline();
  if (next < 0) return;
  int64_t now = MonotonicNanos();
  if (now >= next) timers_.RunExpired(now);
}

}  // namespace trpc::fiber::detail
