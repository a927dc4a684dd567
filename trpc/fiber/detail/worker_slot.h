#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/scheduler_core.h"
#include "trpc/fiber/detail/work_stealing_deque.h"

namespace trpc::fiber::detail {

class SchedulingGroup;

/// What a scheduling group and a worker's siblings see of one worker: who it is (its scheduler,
/// group and place in the group), the deque they steal from, the fiber it runs, and its park
/// word. `Worker` derives from it and adds the loop. The group knows its workers only as slots,
/// so it does not depend on the worker that in turn queues, steals and parks through it.
///
/// Thread contract: the identity fields are set at construction and read-only after;
/// `local_` is pushed by the owner thread and stolen by any (see WorkStealingDeque); `next_` is
/// written and taken by the owner thread only (other threads only count it, relaxed);
/// `running_` is written by the owner thread only (read by others as a hint only through
/// Busy(), on the owner thread); `epoch_` is bumped by wakers (seq_cst) and waited on by the
/// owner (see WorkerIo::Wait for the race it closes); `unparks_` is a relaxed counter any
/// waker bumps, read relaxed by Scheduler::Stats().
class WorkerSlot {
 public:
  WorkerSlot(Scheduler* owner, SchedulingGroup* group, size_t index_in_group, size_t deque_size,
             std::unique_ptr<WorkerIo> io);
  ~WorkerSlot();
  WorkerSlot(const WorkerSlot&) = delete;
  WorkerSlot& operator=(const WorkerSlot&) = delete;

  /// The slot of the calling thread's worker, or null. Not inlined, and opaque to the
  /// optimiser: a fiber can move to another thread across a context switch, so the
  /// thread-local address must be recomputed after every switch, never cached by the compiler.
  static WorkerSlot* Current();

  /// Wakes the worker if it is parked (any thread).
  void Unpark();

  /// Owner thread only: whether the worker has something to do before it would pick a fiber
  /// queued now (it runs a fiber, or its deque is not empty). Size() is exact for the owner or
  /// an over-estimate (a thief's steal not yet seen), which only errs towards "busy".
  bool Busy() { return running_ != nullptr || next() != nullptr || local_.Size() != 0; }

  /// The fiber this worker runs next, which no sibling steals (owner thread only, but for a
  /// relaxed read by QueuedCount()). SchedulingGroup::PushOnWorker() puts a fiber here when the
  /// worker, in its scheduler context, has nothing else queued: the worker runs it as soon as
  /// its reactor returns, so a sibling stealing it in between (a spinner would) only moved the
  /// request, and its reply, to another thread.
  FiberEntity* next() const { return next_.load(std::memory_order_relaxed); }
  void set_next(FiberEntity* f) { next_.store(f, std::memory_order_relaxed); }

  Scheduler* scheduler() const { return owner_; }
  SchedulingGroup* group() const { return group_; }
  size_t index_in_group() const { return index_in_group_; }
  WorkerIo* io() const { return io_.get(); }
  FiberEntity* running() const { return running_; }
  WorkStealingDeque<FiberEntity>& local() { return local_; }

 protected:
  /// Makes `slot` the calling thread's (null: none); the worker thread's first and last step.
  static void SetCurrent(WorkerSlot* slot);

  Scheduler* const owner_;
  SchedulingGroup* const group_;
  const size_t index_in_group_;
  std::unique_ptr<WorkerIo> io_;
  WorkStealingDeque<FiberEntity> local_;
  FiberEntity* running_ = nullptr;
  std::atomic<FiberEntity*> next_{nullptr};

 public:
  // Park word: a waker bumps it, then FutexWake()s it (or calls io_->Wake()).
  alignas(64) std::atomic<uint32_t> epoch_{0};
  // Unpark() calls (any thread; on the epoch's line, which the waker writes anyway).
  std::atomic<uint64_t> unparks_{0};
};

}  // namespace trpc::fiber::detail
