#include "trpc/fiber/fiber.h"

#include <thread>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/worker_timer.h"

namespace trpc::fiber {

bool StartFiberDetached(std::function<void()> fn) {
  Scheduler* s = Scheduler::Current();
  if (s == nullptr) return false;
  s->Spawn(std::move(fn));
  return true;
}

bool IsFiberContext() { return detail::CurrentFiber() != nullptr; }

Fiber::Fiber(std::function<void()> fn) : Fiber(Scheduler::Current(), std::move(fn)) {}

Fiber::Fiber(Scheduler* sched, std::function<void()> fn, int worker_index) {
  TRPC_CHECK(sched != nullptr, "Fiber started with no fiber scheduler running");
  join_ = new detail::JoinState;
  sched->SpawnEntity(std::move(fn), join_, worker_index);
}

Fiber::~Fiber() {
  TRPC_CHECK(join_ == nullptr, "a Fiber was destroyed while joinable (Join() or Detach() it)");
}

Fiber& Fiber::operator=(Fiber&& other) noexcept {
  TRPC_CHECK(join_ == nullptr, "a joinable Fiber was assigned to");
  join_ = other.join_;
  other.join_ = nullptr;
  return *this;
}

void Fiber::Join() {
  TRPC_CHECK(join_ != nullptr, "Join() on a Fiber that is not joinable");
  detail::JoinState* js = join_;
  join_ = nullptr;
  js->lock.lock();
  if (!js->done) {
    detail::Waiter w;
    w.fiber = detail::CurrentFiber();
    js->waiters.PushBack(&w);
    detail::Wait(&w, &js->lock);  // returns with the lock released
  } else {
    js->lock.unlock();
  }
  js->Unref();
}

void Fiber::Detach() {
  TRPC_CHECK(join_ != nullptr, "Detach() on a Fiber that is not joinable");
  join_->Unref();
  join_ = nullptr;
}

namespace this_fiber {

void Yield() {
  if (detail::CurrentFiber() == nullptr) {
    std::this_thread::yield();
    return;
  }
  detail::YieldCurrent();
}

void SleepUntil(std::chrono::steady_clock::time_point deadline) {
  detail::FiberEntity* self = detail::CurrentFiber();
  if (self == nullptr) {
    std::this_thread::sleep_until(deadline);
    return;
  }
  // steady_clock and MonotonicNanos() both read CLOCK_MONOTONIC.
  int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  if (ns <= MonotonicNanos()) {
    detail::YieldCurrent();
    return;
  }
  // The timer runs on this worker's loop only after the fiber has switched out (the loop is
  // busy running it until then), so the resume cannot overtake the halt.
  detail::AddWorkerTimer(ns, [self] { detail::Resume(self); });
  detail::Halt(nullptr);
}

uint64_t GetId() {
  detail::FiberEntity* self = detail::CurrentFiber();
  return self ? self->id : 0;
}

void OnNextSuspend(void (*fn)(void*), void* arg) {
  detail::FiberEntity* self = detail::CurrentFiber();
  if (self == nullptr) return;
  self->on_suspend = fn;
  self->on_suspend_arg = fn != nullptr ? arg : nullptr;
}

void ResetLocals() {
  detail::FiberEntity* self = detail::CurrentFiber();
  if (self == nullptr || self->locals == nullptr) return;
  void* locals = self->locals;
  self->locals = nullptr;
  self->destroy_locals(locals);
}

}  // namespace this_fiber

}  // namespace trpc::fiber
