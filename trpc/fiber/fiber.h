#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "trpc/fiber/detail/scheduler.h"

namespace trpc::fiber {

/// Starts `fn` in a new fiber on the current scheduler (Scheduler::Current()). False if no
/// scheduler is running.
bool StartFiberDetached(std::function<void()> fn);

/// True on a fiber (not on a plain thread, nor on a worker between fibers).
bool IsFiberContext();

/// True when another worker of the calling worker's scheduling group is idle (spinning or
/// parked), so a fiber queued now would be picked up at once elsewhere. False off a worker and
/// for a worker with no sibling. A hint: the answer may be stale by the time it is used.
bool SiblingWorkerIdle();
/// True when another worker of the calling worker's group is spinning for work: a fiber
/// queued now would be taken without a wake-up call. False where SiblingWorkerIdle() is. A hint.
bool SiblingWorkerSpinning();

/// A joinable fiber, like std::thread: it must be joined or detached before destruction.
class Fiber {
 public:
  Fiber() = default;
  /// Starts `fn` on Scheduler::Current(), which must exist.
  explicit Fiber(std::function<void()> fn);
  /// Starts `fn` on `sched`; `worker_index` >= 0 queues it on that worker's group.
  Fiber(Scheduler* sched, std::function<void()> fn, int worker_index = -1);
  ~Fiber();
  Fiber(Fiber&& other) noexcept : join_(other.join_) { other.join_ = nullptr; }
  Fiber& operator=(Fiber&& other) noexcept;
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  bool Joinable() const { return join_ != nullptr; }
  /// Waits for the fiber to finish: parks the calling fiber, or blocks a plain thread.
  void Join();
  void Detach();

 private:
  detail::JoinState* join_ = nullptr;
};

namespace this_fiber {

/// Lets the other runnable fibers run; the caller is queued behind them. On a plain thread,
/// std::this_thread::yield().
void Yield();
/// Parks the calling fiber until `deadline` (its worker runs other fibers meanwhile). On a
/// plain thread, sleeps the thread.
void SleepUntil(std::chrono::steady_clock::time_point deadline);
template <typename Rep, typename Period>
void SleepFor(std::chrono::duration<Rep, Period> d) {
  SleepUntil(std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(d));
}
/// The calling fiber's id (unique in the process), or 0 on a plain thread.
uint64_t GetId();

/// Runs `fn(arg)` on the calling fiber right before it next parks (waits on a primitive,
/// sleeps, joins) or yields, once: it is cleared before the call, and a later call replaces
/// it (null `fn` clears it). A fiber that runs several tasks in turn uses it to hand the tasks
/// still waiting to a new fiber when one of them blocks. `fn` runs on the fiber's stack and
/// may spawn fibers, but must not park. Fiber context only (ignored elsewhere).
void OnNextSuspend(void (*fn)(void*), void* arg);

/// Destroys the calling fiber's FiberLocal values now, as its end would: the next task run by
/// the same fiber starts with fresh ones. No-op off a fiber.
void ResetLocals();

}  // namespace this_fiber

}  // namespace trpc::fiber
