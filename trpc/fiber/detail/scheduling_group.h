#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "trpc/base/detail/mpmc_queue.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/scheduler_core.h"
#include "trpc/fiber/detail/worker_slot.h"

namespace trpc::fiber::detail {

/// Workers that share a run queue and steal from each other first.
class SchedulingGroup {
 public:
  /// `owner` identifies the scheduler (whose worker is the caller?); `core` is its shared part.
  SchedulingGroup(Scheduler* owner, SchedulerCore* core, size_t index, size_t run_queue_size);
  ~SchedulingGroup();

  /// Queues a runnable fiber: on the calling worker's deque when the caller is a worker of
  /// this scheduler, else on this group's shared queue; then wakes a worker if none spins.
  void Ready(FiberEntity* f);
  /// On `w`'s own thread, `w` a worker of this group: queues a new or woken fiber on `w`'s deque
  /// and wakes a parked sibling to steal it, unless `w` will run it next anyway.
  void PushOnWorker(WorkerSlot* w, FiberEntity* f);
  /// Queues on this group's shared queue (any thread), then wakes a worker.
  void PushShared(FiberEntity* f);
  /// Wakes one parked worker unless one is spinning (and so will find the work).
  void SignalWork();
  void WakeAll();

  FiberEntity* PopShared();
  /// Steals one fiber from a worker of this group other than `thief` (null: any), starting at
  /// a pseudo-random victim.
  FiberEntity* StealFromWorkers(const WorkerSlot* thief, uint64_t rand);

  size_t index() const { return index_; }
  /// The group's workers (owned by the SchedulerCore), in index_in_group() order; filled by
  /// Scheduler::Start() before any worker runs, read-only after.
  std::vector<WorkerSlot*>& workers() { return workers_; }
  size_t QueuedCount() const;

  std::atomic<int> spinning_{0};
  std::atomic<uint64_t> parked_mask_{0};  // bit i: workers_[i] is parked or about to park
  std::atomic<bool> stopping_{false};

 private:
  void PushSharedInner(FiberEntity* f);

  Scheduler* owner_;
  SchedulerCore* core_;
  size_t index_;
  std::vector<WorkerSlot*> workers_;
  MpmcQueue<FiberEntity> shared_;
  // Used only when the bounded queue is full: correctness over speed in overload.
  std::mutex overflow_mu_;
  std::deque<FiberEntity*> overflow_;
  std::atomic<bool> has_overflow_{false};
};

}  // namespace trpc::fiber::detail
