#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "trpc/fiber/detail/scheduler_core.h"
#include "trpc/fiber/detail/scheduler_options.h"

namespace trpc::fiber {

namespace detail {
class Worker;
class SchedulingGroup;
class StackPool;
struct FiberEntity;
struct JoinState;
}  // namespace detail

/// The CPUs this process may run on: the affinity mask, capped by the cgroup (v2 or v1) CPU
/// quota rounded up. At least 1.
size_t UsableCpuCount();

/// Counters for observability; summed over workers on read, so approximate while running.
///
/// Memory ordering: each counter is an atomic written by its own worker alone, with relaxed
/// stores (no read-modify-write); Stats() sums relaxed loads of them and may be called from any
/// thread at any time (an admin scrape, a test). Each load is free of data races and sees some
/// recent value, and a counter never goes backwards; but the sum is not a snapshot (the workers
/// are read one after another) and orders nothing with the fibers counted. Within one call,
/// remote_steals <= steals (each worker's remote count is loaded once and added to both).
struct SchedulerStats {
  uint64_t fibers_started = 0;
  uint64_t fibers_finished = 0;
  uint64_t steals = 0;         // fibers an idle worker took from elsewhere: from a sibling's
                               // deque, or from another scheduling group (queue or deque)
  uint64_t remote_steals = 0;  // ... of those, from another scheduling group
  uint64_t parks = 0;          // times a worker went to sleep
  uint64_t wakeups = 0;        // wake-up calls to parked workers (a futex or eventfd call
                               // when the worker sleeps, nothing when it is awake)
  uint64_t spin_ns = 0;        // time idle workers spent spinning for work (ns)
  uint64_t stack_waits = 0;    // times a fiber could not start for want of a stack (max_stacks)
  size_t run_queue_depth = 0;  // fibers queued but not running, now
};

/// M:N fiber scheduler: worker threads in scheduling groups; each worker has a Chase-Lev deque
/// and each group a bounded MPMC queue. An idle worker steals from its siblings, and from other
/// groups every `work_stealing_ratio` idle rounds; then it spins briefly (at most two per
/// group spin at a time) and parks (futex, or its WorkerIo). No global lock on the hot path.
///
/// Wake-up contract: whoever makes a fiber runnable pushes it, issues a seq_cst fence and reads
/// the group's spinning count and parked-worker mask; a worker about to park sets its bit in
/// the mask (seq_cst RMW), re-checks every queue it could be woken for, and only then sleeps on
/// its epoch word. Either the pusher sees the bit (and bumps that worker's epoch, which makes
/// the sleep return at once) or the worker sees the fiber: no lost wake-ups. Stop() follows the
/// same pattern with the stop flag: it stores the flag (seq_cst), then bumps every epoch; a
/// worker about to park loads its epoch as the sleep's token, then the flag (both seq_cst), so
/// either it sees the flag or its token predates the bump.
class Scheduler {
 public:
  explicit Scheduler(SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Starts the workers; returns once all run. False (with *err) if a thread cannot start.
  bool Start(std::string* err);
  /// Lets the workers finish every runnable fiber and pending sleep, then joins them. Fibers
  /// still blocked on something nobody will signal are abandoned (counted in the log). With
  /// `sleep_deadline_ns` >= 0 (a MonotonicNanos() value), a worker whose remaining sleepers
  /// all wake after it abandons them too instead of waiting (a server's stop must not wait for
  /// a handler that sleeps forever). Their stacks and what they hold are never freed.
  void Stop(int64_t sleep_deadline_ns = -1);

  size_t WorkerCount() const { return core_.workers.size(); }
  /// The bound on fiber stacks in force (options' max_stacks, or the one derived at Start()); 0
  /// = none. Valid after Start().
  size_t max_stacks() const { return max_stacks_; }
  size_t GroupCount() const { return core_.groups.size(); }
  const SchedulerOptions& options() const { return core_.options; }
  /// The WorkerIo of worker `index` (null without a factory).
  WorkerIo* worker_io(size_t index) const;
  /// Index of the worker running the calling thread in this scheduler, or -1.
  int CurrentWorkerIndex() const;
  SchedulerStats Stats() const;

  /// Starts `fn` in a new fiber. From a worker of this scheduler it is queued on that worker
  /// (others may steal it); from elsewhere, on a group's shared queue (round-robin).
  void Spawn(std::function<void()> fn);
  /// As Spawn(), onto the group of the worker whose index is given: that worker's own deque
  /// when called on it, else the group's shared queue.
  void SpawnOn(size_t worker_index, std::function<void()> fn);
  /// Spawn() for the fiber API: `join` (may be null) is signalled when the fiber finishes;
  /// `worker_index` < 0 means "wherever Spawn() would put it".
  void SpawnEntity(std::function<void()>&& fn, detail::JoinState* join, int worker_index = -1);

  /// The scheduler of the calling worker thread, else the most recently started one (or null).
  static Scheduler* Current();

 private:
  // What the groups and workers share with the scheduler (they see only this part).
  detail::SchedulerCore core_;
  std::unique_ptr<detail::StackPool> stacks_;
  std::atomic<size_t> next_group_{0};
  std::atomic<uint64_t> external_started_{0};  // fibers spawned from non-worker threads
  bool started_ = false;
  size_t max_stacks_ = 0;
};

}  // namespace trpc::fiber
