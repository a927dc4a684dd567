#include "trpc/fiber/timer.h"

#include <atomic>

#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/scheduler.h"
#include "trpc/fiber/detail/worker_timer.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {

namespace detail {
// Shared by the handle and the armed worker timer. Cancellation is a flag the timer checks
// when it fires (the heap entry is not removed: that would need the owning worker's thread).
struct TimerState {
  std::function<void()> cb;
  std::chrono::nanoseconds interval{0};
  std::atomic<bool> killed{false};
  std::atomic<bool> fired{false};
  Scheduler* sched = nullptr;
  Spinlock lock;
  WorkerTimer armed;  // guarded by lock; the heap entry to cancel on KillTimer()
};
}  // namespace detail

namespace {

int64_t ToNanos(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void Arm(const std::shared_ptr<detail::TimerState>& st, int64_t at_ns) {
  std::lock_guard lock(st->lock);
  if (st->killed.load(std::memory_order_acquire)) return;
  st->armed = detail::AddWorkerTimer(at_ns, [st, at_ns] {
    if (st->killed.load(std::memory_order_acquire)) return;
    if (st->interval.count() == 0) st->fired.store(true, std::memory_order_release);
    // Each run in its own fiber, so a slow callback holds up neither the worker's other timers
    // nor the next period.
    st->sched->Spawn([st] {
      if (!st->killed.load(std::memory_order_acquire)) st->cb();
    });
    if (st->interval.count() > 0) Arm(st, at_ns + st->interval.count());
  });
}

}  // namespace

TimerHandle SetTimer(std::chrono::steady_clock::time_point at, std::function<void()> cb,
                     std::chrono::nanoseconds interval) {
  Scheduler* sched = Scheduler::Current();
  if (sched == nullptr) return nullptr;
  auto st = std::make_shared<detail::TimerState>();
  st->cb = std::move(cb);
  st->interval = interval;
  st->sched = sched;
  int64_t at_ns = ToNanos(at);
  if (sched->CurrentWorkerIndex() >= 0) {
    Arm(st, at_ns);
  } else {
    // Timer heaps belong to workers: arm it from one.
    sched->Spawn([st, at_ns] { Arm(st, at_ns); });
  }
  return st;
}

bool KillTimer(const TimerHandle& timer) {
  if (!timer) return false;
  if (timer->killed.exchange(true, std::memory_order_acq_rel)) return false;
  {
    // Remove the heap entry too, so a killed timer does not hold its worker (or Stop()) until
    // its deadline.
    std::lock_guard lock(timer->lock);
    detail::CancelWorkerTimer(timer->armed);
  }
  return !timer->fired.load(std::memory_order_acquire);
}

}  // namespace trpc::fiber
