#include "trpc/server/detail/run_on_reactors.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "trpc/base/clock.h"
#include "trpc/reactor/reactor.h"
#include "trpc/runtime/detail/thread_model.h"

namespace trpc::detail {

namespace {
// One RunOnReactorsUntil() call, shared with the tasks it posts: a task that has not started
// by the deadline must find out, whenever its loop gets to it, that it must not run (what fn
// refers to may be gone by then).
struct ReactorJob {
  enum : int { kPending, kRunning, kDone, kAbandoned };
  ReactorJob(size_t n, std::function<void(size_t)> f) : fn(std::move(f)), state(n) {}
  std::function<void(size_t)> fn;
  std::vector<std::atomic<int>> state;  // per reactor index
  std::mutex mu;
  std::condition_variable cv;
};
}  // namespace

std::vector<bool> RunOnReactorsUntil(ThreadModel* model, const std::vector<size_t>& which,
                                     const std::function<void(size_t)>& fn, int64_t deadline_ns) {
  auto job = std::make_shared<ReactorJob>(model->ReactorCount(), fn);
  for (size_t i : which) {
    model->GetReactor(i)->RunInLoop([job, i] {
      // pending -> running here, pending -> abandoned by the waiter at the deadline: exactly
      // one of them happens (acq_rel: the waiter sees what fn wrote once it sees kDone).
      int pending = ReactorJob::kPending;
      if (!job->state[i].compare_exchange_strong(pending, ReactorJob::kRunning,
                                                 std::memory_order_acq_rel)) {
        return;
      }
      job->fn(i);
      std::lock_guard lock(job->mu);
      job->state[i].store(ReactorJob::kDone, std::memory_order_release);
      job->cv.notify_all();
    });
  }
  std::vector<bool> ran(model->ReactorCount(), false);
  std::unique_lock lock(job->mu);
  for (size_t i : which) {
    for (;;) {
      int st = job->state[i].load(std::memory_order_acquire);
      if (st == ReactorJob::kDone) break;
      if (st == ReactorJob::kPending && deadline_ns >= 0 && MonotonicNanos() >= deadline_ns &&
          job->state[i].compare_exchange_strong(st, ReactorJob::kAbandoned,
                                                std::memory_order_acq_rel)) {
        break;
      }
      // (Running: fn never blocks, so this wait is short even past the deadline.)
      job->cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    ran[i] = job->state[i].load(std::memory_order_acquire) == ReactorJob::kDone;
  }
  return ran;
}

}  // namespace trpc::detail
