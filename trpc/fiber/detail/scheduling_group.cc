#include "trpc/fiber/detail/scheduling_group.h"

#include "trpc/base/logging.h"

namespace trpc::fiber::detail {

SchedulingGroup::SchedulingGroup(Scheduler* owner, SchedulerCore* core, size_t index,
                                 size_t run_queue_size)
    : owner_(owner), core_(core), index_(index), shared_(run_queue_size) {}

SchedulingGroup::~SchedulingGroup() = default;

void SchedulingGroup::Ready(FiberEntity* f) {
  WorkerSlot* w = WorkerSlot::Current();
  if (w != nullptr && w->scheduler() == owner_) {
    w->group()->PushOnWorker(w, f);
    return;
  }
  PushShared(f);
}

void SchedulingGroup::PushOnWorker(WorkerSlot* w, FiberEntity* f) {
  // In the scheduler's own context (the reactor dispatching what it just read, a reply or a
  // timer waking a fiber) with nothing queued, the worker runs the new fiber itself as soon as
  // that returns: it goes in the worker's `next` slot, where no sibling steals it. Waking a
  // parked sibling for it only has the sibling find nothing, spin and park again, and a
  // spinner stealing it moves the request and its reply to another thread; both cost CPU per
  // request without improving latency. A second fiber queued behind it, a fiber spawning
  // another, or a full deque still wakes a sibling to steal. The only worker of its scheduler
  // has no one to wake (and would pay for SignalWork's fence for nothing).
  if (!w->Busy()) {
    w->set_next(f);
    return;
  }
  bool wake = core_->workers.size() > 1;
  if (!w->local().Push(f)) PushShared(f);
  // `f` may be stolen and finished by now: only our own fields from here.
  if (wake) SignalWork();
}

void SchedulingGroup::PushShared(FiberEntity* f) {
  // A thread outside this scheduler keeps touching the group (SignalWork) after `f` is queued,
  // when `f` may already have finished and the scheduler may be stopping: Stop() waits for it.
  WorkerSlot* self = WorkerSlot::Current();
  bool outsider = self == nullptr || self->scheduler() != owner_;
  if (outsider) core_->outside_wakers.fetch_add(1, std::memory_order_acq_rel);
  PushSharedInner(f);
  if (outsider) core_->outside_wakers.fetch_sub(1, std::memory_order_acq_rel);
}

void SchedulingGroup::PushSharedInner(FiberEntity* f) {
  if (has_overflow_.load(std::memory_order_acquire) || !shared_.TryPush(f)) {
    std::lock_guard lock(overflow_mu_);
    overflow_.push_back(f);
    has_overflow_.store(true, std::memory_order_release);
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "fiber run queue of group {} is full ({} slots): fibers spill into a "
                      "locked list; raise fiber_run_queue_size",
                      index_, shared_.Capacity());
  }
  SignalWork();
}

FiberEntity* SchedulingGroup::PopShared() {
  if (FiberEntity* f = shared_.TryPop()) return f;
  if (has_overflow_.load(std::memory_order_acquire)) {
    std::lock_guard lock(overflow_mu_);
    if (!overflow_.empty()) {
      FiberEntity* f = overflow_.front();
      overflow_.pop_front();
      if (overflow_.empty()) has_overflow_.store(false, std::memory_order_release);
      return f;
    }
  }
  return nullptr;
}

FiberEntity* SchedulingGroup::StealFromWorkers(const WorkerSlot* thief, uint64_t rand) {
  size_t n = workers_.size();
  if (n == 0) return nullptr;
  size_t start = rand % n;
  for (size_t i = 0; i < n; ++i) {
    WorkerSlot* v = workers_[(start + i) % n];
    if (v == thief) continue;
    if (FiberEntity* f = v->local().Steal()) return f;
  }
  return nullptr;
}

void SchedulingGroup::SignalWork() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (spinning_.load(std::memory_order_relaxed) > 0) return;
  // A worker of this group signalling from inside its own IO wait (a reactor dispatching what
  // it read while "parked") still has its bit set: waking itself would be lost on a sibling
  // that could take the work. It is awake; it will look at the queues anyway.
  uint64_t self = 0;
  if (WorkerSlot* w = WorkerSlot::Current(); w != nullptr && w->group() == this) {
    self = uint64_t{1} << w->index_in_group();
  }
  uint64_t mask = parked_mask_.load(std::memory_order_relaxed);
  while ((mask & ~self) != 0) {
    int i = __builtin_ctzll(mask & ~self);
    uint64_t bit = uint64_t{1} << i;
    if (parked_mask_.compare_exchange_weak(mask, mask & ~bit, std::memory_order_seq_cst,
                                           std::memory_order_relaxed)) {
      workers_[static_cast<size_t>(i)]->Unpark();
      return;
    }
  }
}

void SchedulingGroup::WakeAll() {
  for (WorkerSlot* w : workers_) w->Unpark();
}

size_t SchedulingGroup::QueuedCount() const {
  size_t n = shared_.Size();
  for (WorkerSlot* w : workers_) n += w->local().Size() + (w->next() != nullptr ? 1 : 0);
  return n;
}

}  // namespace trpc::fiber::detail
