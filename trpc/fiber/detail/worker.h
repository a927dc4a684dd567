#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "trpc/base/detail/mpsc_queue.h"
#include "trpc/base/detail/timer_queue.h"
#include "trpc/fiber/detail/context.h"
#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/scheduler_core.h"
#include "trpc/fiber/detail/spinlock.h"
#include "trpc/fiber/detail/stack.h"
#include "trpc/fiber/detail/stack_overflow.h"
#include "trpc/fiber/detail/worker_slot.h"

namespace trpc::fiber::detail {

/// What the scheduler does once the fiber it switched to has switched back.
enum class AfterRun : uint8_t { kNone, kYield, kHalt, kExit };

/// One worker thread: runs fibers from its deque, its group's queue, and what it steals. Its
/// part that the group and siblings touch is the WorkerSlot base (see its thread contract);
/// everything here but the counters read by Stats() is touched by the worker's own thread only.
class Worker : public WorkerSlot {
 public:
  /// `owner` identifies the scheduler; `core` is its part the workers share.
  Worker(Scheduler* owner, SchedulerCore* core, SchedulingGroup* group, size_t index,
         size_t index_in_group, StackPool* stacks, std::unique_ptr<WorkerIo> io);
  ~Worker();

  void Start();
  void Join();

  /// The worker of the calling thread, or null (see WorkerSlot::Current()). Every slot is a
  /// Worker.
  static Worker* Current() { return static_cast<Worker*>(WorkerSlot::Current()); }

  /// A FiberEntity in its initial state, from this worker's free list when it has one (owner
  /// thread only); FreeEntity() gives a finished one back (deleted when the list is full).
  FiberEntity* NewEntity();
  void FreeEntity(FiberEntity* f);

  /// Queues a runnable fiber on this worker (owner thread only).
  void PushLocal(FiberEntity* f);
  /// Any thread: asks this worker to cancel timer `id` (see CancelWorkerTimer()).
  void PostTimerCancel(uint64_t id);

  size_t index() const { return index_; }
  TimerQueue& timers() { return timers_; }

  /// Called by a fiber on this worker to give the thread back to the scheduler.
  void SwitchToScheduler(AfterRun action, Spinlock* lock);
  /// A fiber's first frame.
  static void FiberMain(ctx::transfer_t t);

  // Counters (written by this worker only, read relaxed by Stats()). One writer needs no
  // read-modify-write: Bump() is a plain load and store, where fetch_add would be a locked
  // instruction on every fiber started and finished. A reader sees some recent value.
  static void Bump(std::atomic<uint64_t>& c) {
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::atomic<uint64_t> started_{0};
  std::atomic<uint64_t> finished_{0};
  std::atomic<uint64_t> steals_{0};         // from a sibling's deque (this group)
  std::atomic<uint64_t> remote_steals_{0};  // from another group (not in steals_)
  std::atomic<uint64_t> parks_{0};
  std::atomic<uint64_t> spin_ns_{0};      // time spent spinning for work
  std::atomic<uint64_t> stack_waits_{0};  // fibers put off for want of a stack

 private:
  void Loop();
  // Stopping: whether a sleeping fiber of this worker is still to be waited for (one wakes
  // before Scheduler::Stop()'s sleep deadline).
  bool WaitsForSleepersAtStop();
  void RunFiber(FiberEntity* f);
  FiberEntity* FindWork(bool allow_remote);
  // Whether spinning for work could pay off now (not oversubscribed, a sibling awake to queue
  // work); SpinForWork() is called only when it could, and also caps the spinners.
  bool MaySpin();
  bool SpinForWork(FiberEntity** out);
  void ParkUntilWork();
  void RunTimers();
  void ApplyTimerCancels();

  SchedulerCore* core_;
  size_t index_;
  StackPool* stacks_pool_;
  StackCache stacks_;
  // Finished fibers' entities, reset, for the next spawn on this thread: saves the allocator a
  // new/delete pair per fiber.
  std::vector<FiberEntity*> free_entities_;
  TimerQueue timers_;
  MpscQueue<uint64_t> timer_cancels_{1024};
  std::thread thread_;

  // The context switch state (owner thread only; running_ is in the slot).
  ctx::fcontext_t sched_ctx_ = nullptr;
  SanitizerContext sched_san_;
  void* sched_fake_stack_ = nullptr;
  AfterRun after_run_ = AfterRun::kNone;
  Spinlock* after_run_lock_ = nullptr;

  uint64_t idle_rounds_ = 0;
  uint32_t spin_misses_ = 0;  // spins in a row that found nothing (MaySpin's back-off)
  uint64_t spin_skips_ = 0;   // idle turns counted while backing off
  uint64_t find_calls_ = 0;
  bool shared_first_ = false;  // set by a yield: the next pick tries the group queue first
  uint64_t rng_;
  AltSignalStack alt_stack_;
};

}  // namespace trpc::fiber::detail
