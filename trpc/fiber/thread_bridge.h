#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/fiber/detail/await_flag.h"
#include "trpc/fiber/detail/scheduler.h"
#include "trpc/fiber/event.h"
#include "trpc/fiber/fiber.h"

namespace trpc::fiber {

/// Bridges between fibers and plain threads.
///
/// Waiting the other way needs no bridge: every primitive here (Fiber::Join, Mutex,
/// ConditionVariable, Event, Latch, BlockingQueue) blocks a plain thread on a futex and parks a
/// fiber, whichever side signals.

/// Threads that RunOnThread() uses at most; calls beyond it queue for a free thread. Threads are
/// started on demand and exit after kBlockingThreadIdleMs without work.
inline constexpr size_t kMaxBlockingThreads = 256;
inline constexpr int64_t kBlockingThreadIdleMs = 10'000;

namespace detail {

/// Runs `fn` on a thread of the blocking pool: plain threads, started when no idle one is left
/// (up to kMaxBlockingThreads). Any thread.
void RunOnBlockingThread(std::function<void()> fn);

/// The value or exception of a call, handed from the thread that ran it to the one that waits.
template <typename R>
class CallResult {
 public:
  template <typename F>
  void Run(F& f) noexcept {
    try {
      if constexpr (std::is_void_v<R>) {
        std::invoke(f);
      } else if constexpr (std::is_reference_v<R>) {
        value_.emplace(&std::invoke(f));
      } else {
        value_.emplace(std::invoke(f));
      }
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  R Take() {
    if (error_) std::rethrow_exception(error_);
    if constexpr (std::is_void_v<R>) {
      return;
    } else if constexpr (std::is_reference_v<R>) {
      return static_cast<R>(**value_);
    } else {
      return std::move(*value_);
    }
  }

 private:
  using Stored = std::conditional_t<std::is_reference_v<R>, std::remove_reference_t<R>*, R>;
  std::optional<std::conditional_t<std::is_void_v<R>, char, Stored>> value_;
  std::exception_ptr error_;
};

}  // namespace detail

/// Runs `f()` on a plain thread and returns its result (or rethrows its exception), parking
/// the calling fiber meanwhile — its worker keeps running other fibers. For calls that block
/// the thread: blocking syscalls, third-party clients, std::mutex-heavy code. On a plain thread
/// `f()` simply runs inline.
///
/// Memory ordering: the call to RunOnThread() happens-before `f()` starts, and `f()` returning
/// happens-before RunOnThread() returns.
template <typename F>
std::invoke_result_t<F&> RunOnThread(F&& f) {
  using R = std::invoke_result_t<F&>;
  if (!IsFiberContext()) return std::invoke(f);
  detail::CallResult<R> result;
  Event done;
  std::atomic<bool> returned{false};
  detail::RunOnBlockingThread([&] {
    result.Run(f);
    done.Set();
    // Set() still touches the scheduler after the wake-up is published (it queues the fiber
    // and may wake a worker): hold the fiber until it is through, so that a caller who stops
    // the scheduler as soon as this fiber ends cannot pull it from under the pool thread.
    returned.store(true, std::memory_order_release);  // the last touch of the fiber's frame
  });
  done.Wait();
  detail::AwaitImminent(returned);
  return result.Take();
}

/// Runs `f()` in a new fiber on `sched` (null: Scheduler::Current(), which must exist) and
/// blocks the calling plain thread until it returns; returns its result or rethrows its
/// exception. On a fiber, `f()` runs inline. For code on plain threads that needs a fiber
/// context (e.g. to use fiber-only APIs, or to run on a given scheduler's workers). Not from a
/// worker thread outside any fiber (a timer callback): it would block that worker while the
/// new fiber may need it.
///
/// Memory ordering: as RunOnThread().
template <typename F>
std::invoke_result_t<F&> RunInFiber(Scheduler* sched, F&& f) {
  using R = std::invoke_result_t<F&>;
  if (IsFiberContext()) return std::invoke(f);
  if (sched == nullptr) sched = Scheduler::Current();
  TRPC_CHECK(sched != nullptr, "RunInFiber() with no fiber scheduler running");
  detail::CallResult<R> result;
  Event done;
  sched->Spawn([&] {
    result.Run(f);
    done.Set();
  });
  done.Wait();
  return result.Take();
}

}  // namespace trpc::fiber
