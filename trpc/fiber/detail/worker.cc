#include "trpc/fiber/detail/worker.h"

#include <pthread.h>

#include <algorithm>
#include <new>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/fiber/detail/futex.h"
#include "trpc/fiber/detail/scheduling_group.h"

#ifdef TRPC_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace trpc::fiber::detail {

namespace {

// Fibers run between two polls of a busy worker's IO: bounds how long ready sockets wait while
// the worker has fibers to run. Each poll is an epoll_wait(2) and runs the posted reply
// flushes, so a short interval costs syscalls: at 16, a worker serving 16-deep pipelined HTTP
// polled once and sent about twice per batch (a poll fell inside most batches); at 64 it
// polls once per four batches and sends about once per batch.
constexpr int kFibersPerIoPoll = 64;
// How long a worker spins looking for work before it parks.
constexpr int64_t kSpinNanos = 20'000;
constexpr int kMaxSpinners = 2;
// Spins in a row that found nothing before a worker backs off: it then spins on one idle turn
// in 2, 4, ... up to 2^kMaxSpinBackOff (see MaySpin()).
constexpr uint32_t kSpinMissesBeforeBackOff = 2;
constexpr uint32_t kMaxSpinBackOff = 6;
constexpr size_t kLocalQueueSize = 4096;
// How long a fiber that found no stack waits before it tries again.
constexpr int64_t kStackRetryNanos = 1'000'000;
#ifdef TRPC_FIBER_ASAN
constexpr size_t kPooledEntitiesPerWorker = 0;  // ASan then sees a use after a fiber's end
#else
constexpr size_t kPooledEntitiesPerWorker = 256;
#endif

uint64_t NextRandom(uint64_t* s) {  // xorshift64*
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

}  // namespace

Worker::Worker(Scheduler* owner, SchedulerCore* core, SchedulingGroup* group, size_t index,
               size_t index_in_group, StackPool* stacks, std::unique_ptr<WorkerIo> io)
    : WorkerSlot(owner, group, index_in_group, kLocalQueueSize, std::move(io)),
      core_(core),
      index_(index),
      stacks_pool_(stacks),
      stacks_(stacks),
      rng_(0x9E3779B97F4A7C15ULL * (index + 1)) {}

Worker::~Worker() {
  for (FiberEntity* f : free_entities_) delete f;
}

FiberEntity* Worker::NewEntity() {
  if (free_entities_.empty()) return new FiberEntity;
  FiberEntity* f = free_entities_.back();
  free_entities_.pop_back();
  return f;
}

void Worker::FreeEntity(FiberEntity* f) {
  if (free_entities_.size() >= kPooledEntitiesPerWorker) {
    delete f;
    return;
  }
  // Reset in place: the next fiber starts from the same state as a new entity.
  f->~FiberEntity();
  new (f) FiberEntity;
  free_entities_.push_back(f);
}

void Worker::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(),
                       fmt::format("{}_{}", core_->options.name.substr(0, 8), index_).c_str());
    SetCurrent(this);
    alt_stack_.Install();
#ifdef TRPC_FIBER_TSAN
    sched_san_.tsan_fiber = __tsan_get_current_fiber();
#endif
    if (io_) io_->OnStart();
    Loop();
    if (io_) io_->OnStop();
    alt_stack_.Remove();
    SetCurrent(nullptr);
  });
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::PushLocal(FiberEntity* f) {
  if (!local_.Push(f)) group_->PushShared(f);
}

FiberEntity* Worker::FindWork(bool allow_remote) {
  // FIFO from our own deque (a steal from the top, not a LIFO pop): request fibers run in
  // arrival order, which is what keeps the tail short under load. Every 61st look starts at
  // the shared queue so a worker busy with its own deque cannot starve it.
  if (shared_first_ || ++find_calls_ % 61 == 0) {
    shared_first_ = false;
    if (FiberEntity* f = group_->PopShared()) return f;
  }
  if (FiberEntity* f = next()) {
    set_next(nullptr);
    return f;
  }
  if (FiberEntity* f = local_.Steal()) return f;
  if (FiberEntity* f = group_->PopShared()) return f;
  if (FiberEntity* f = group_->StealFromWorkers(this, NextRandom(&rng_))) {
    Bump(steals_);
    return f;
  }
  if (allow_remote && core_->groups.size() > 1) {
    size_t n = core_->groups.size();
    size_t start = NextRandom(&rng_) % n;
    for (size_t i = 0; i < n; ++i) {
      SchedulingGroup* g = core_->groups[(start + i) % n].get();
      if (g == group_) continue;
      FiberEntity* f = g->PopShared();
      if (f == nullptr) f = g->StealFromWorkers(nullptr, NextRandom(&rng_));
      if (f != nullptr) {
        Bump(remote_steals_);
        return f;
      }
    }
  }
  return nullptr;
}

bool Worker::MaySpin() {
  // With more workers than CPUs a spinner only steals CPU time from the worker it waits for.
  // A lone worker has no sibling whose work it could pick up while spinning (its own IO is not
  // polled here; other threads' pushes wake it anyway): spinning would only burn the CPU time
  // a request costs at moderate load.
  if (core_->oversubscribed || (group_->workers().size() == 1 && core_->groups.size() == 1)) {
    return false;
  }
  if (core_->groups.size() == 1) {
    // Every sibling asleep too: no running fiber can queue work for us soon, and what their
    // reactors read wakes us (SignalWork) if they cannot take it themselves. Spinning then
    // only burns CPU.
    size_t n = group_->workers().size();
    uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    uint64_t self = uint64_t{1} << index_in_group_;
    if ((group_->parked_mask_.load(std::memory_order_relaxed) | self) == all) return false;
  }
  // A spin pays only when it finds work before the wake-up it saves would have cost (a
  // waker's eventfd or futex call, our return from epoll and a context switch). Below
  // saturation, with work spread evenly, most spins find nothing and all they do is burn a
  // CPU per spinner. So a worker whose recent spins missed spins on ever fewer idle turns;
  // one hit (work queued behind a busy sibling: uneven load) brings it back at once.
  if (spin_misses_ >= kSpinMissesBeforeBackOff) {
    uint32_t shift = std::min(spin_misses_ - kSpinMissesBeforeBackOff + 1, kMaxSpinBackOff);
    if ((++spin_skips_ & ((uint64_t{1} << shift) - 1)) != 0) return false;
  }
  return true;
}

bool Worker::SpinForWork(FiberEntity** out) {
  int spinning = group_->spinning_.load(std::memory_order_relaxed);
  do {
    if (spinning >= kMaxSpinners) return false;
  } while (
      !group_->spinning_.compare_exchange_weak(spinning, spinning + 1, std::memory_order_seq_cst));
  int64_t start = MonotonicNanos();
  int64_t until = start + kSpinNanos;
  int64_t now = start;
  FiberEntity* f = nullptr;
  for (int i = 0;; ++i) {
    f = FindWork(/*allow_remote=*/true);
    if (f != nullptr) break;
    if ((i & 15) == 15 && (now = MonotonicNanos()) >= until) break;
    for (int k = 0; k < 32; ++k) CpuRelax();
  }
  group_->spinning_.fetch_sub(1, std::memory_order_seq_cst);
  if (f != nullptr) now = MonotonicNanos();
  spin_ns_.store(spin_ns_.load(std::memory_order_relaxed) + static_cast<uint64_t>(now - start),
                 std::memory_order_relaxed);
  spin_misses_ = f != nullptr ? 0 : spin_misses_ + 1;
  if (f != nullptr) {
    // We were the spinner that wakers counted on; there may be more work behind this fiber.
    group_->SignalWork();
    *out = f;
    return true;
  }
  return false;
}

void Worker::ParkUntilWork() {
  uint32_t token = epoch_.load(std::memory_order_seq_cst);
  // Stop() sets the flag, then bumps every epoch. If it did both between Loop()'s look at the
  // flag and the load above, the token already holds the bump and the wait below would sleep
  // through the wake-up (for ever, with no timer). Looking again after the load closes that:
  // both sides are seq_cst, so a flag still read as false means the bump comes after the load.
  if (group_->stopping_.load(std::memory_order_seq_cst) && !WaitsForSleepersAtStop()) return;
  uint64_t bit = uint64_t{1} << index_in_group_;
  group_->parked_mask_.fetch_or(bit, std::memory_order_seq_cst);
  // Re-check after announcing: a fiber pushed before the announcement is seen here; one pushed
  // after it finds our bit and bumps the epoch, so the wait below returns at once.
  FiberEntity* f = FindWork(/*allow_remote=*/true);
  if (f != nullptr) {
    uint64_t prev = group_->parked_mask_.fetch_and(~bit, std::memory_order_seq_cst);
    if (!(prev & bit)) group_->SignalWork();  // a waker chose us; pass its wake-up on
    RunFiber(f);
    return;
  }
  // (Stopping: we get here only with timers pending, so the wait below is bounded by the next
  // one; a Stop() that began after the check above bumps the epoch past our token.)
  Bump(parks_);
  int64_t deadline = timers_.NextDeadline();
  if (io_) {
    io_->Wait(deadline, &epoch_, token);
  } else {
    FutexWait(&epoch_, token, deadline);
  }
  group_->parked_mask_.fetch_and(~bit, std::memory_order_seq_cst);
}

bool Worker::WaitsForSleepersAtStop() {
  if (timers_.size() == 0) return false;
  int64_t limit = core_->stop_sleep_deadline_ns.load(std::memory_order_relaxed);
  return limit < 0 || timers_.NextDeadline() <= limit;
}

void Worker::Loop() {
  int since_poll = 0;
  for (;;) {
    RunTimers();
    if (io_ && ++since_poll >= kFibersPerIoPoll) {
      since_poll = 0;
      io_->Poll();
    }
    FiberEntity* f = FindWork(/*allow_remote=*/false);
    if (f == nullptr && ++idle_rounds_ % core_->options.work_stealing_ratio == 0) {
      f = FindWork(/*allow_remote=*/true);
    }
    if (f != nullptr) {
      RunFiber(f);
      continue;
    }
    // Idle. A worker about to spin first sees whether IO has work for it (the spin does not
    // poll IO). One that will not spin parks at once: its IO wait takes what is ready and
    // returns without blocking, so a non-blocking poll first would be a second epoll call
    // for every idle turn.
    bool may_spin = MaySpin();
    if (io_ && may_spin) {
      io_->Poll();
      since_poll = 0;
      if ((f = FindWork(false)) != nullptr) {
        RunFiber(f);
        continue;
      }
    }
    if (may_spin && SpinForWork(&f)) {
      RunFiber(f);
      continue;
    }
    // What this worker's fibers queued on its reactor (a stream write's follow-up, the chain
    // of requests read): run it here, then park. Parking with it queued costs an epoll_wait(0)
    // that finds nothing before the one that blocks. The park still polls IO, so tasks that
    // keep coming cannot starve it.
    if (io_ && io_->RunPending() && (f = FindWork(false)) != nullptr) {
      RunFiber(f);
      continue;
    }
    ApplyTimerCancels();
    if (stacks_pool_->wanted()) stacks_.Flush();
    if (group_->stopping_.load(std::memory_order_acquire) && !WaitsForSleepersAtStop()) {
      // Drain: exit once nothing is runnable and nothing is left to wake up on this worker (in
      // time).
      if ((f = FindWork(true)) == nullptr) break;
      RunFiber(f);
      continue;
    }
    ParkUntilWork();
  }
}

void Worker::RunFiber(FiberEntity* f) {
  if (f->ctx == nullptr) {
    f->stack = stacks_.Get();
    if (f->stack.base == nullptr) [[unlikely]] {
      // No stack to be had (max_stacks reached, or mmap failed): the fiber starts later, when
      // finished fibers have given theirs back. Never an abort: peers' requests can get here.
      Bump(stack_waits_);
      timers_.Add(MonotonicNanos() + kStackRetryNanos, [this, f] { PushLocal(f); });
      if (stacks_pool_->MarkWanted()) {
        // Idle workers may hold free stacks in their caches: wake them to give those back
        // (they do before parking again).
        for (auto& g : core_->groups) g->WakeAll();
      }
      return;
    }
    f->ctx = ctx::make_fcontext(f->stack.top(), f->stack.size, &Worker::FiberMain);
    f->san.stack_bottom = f->stack.bottom();
    f->san.stack_size = f->stack.size;
#ifdef TRPC_FIBER_TSAN
    f->san.tsan_fiber = __tsan_create_fiber(0);
#endif
  }
  running_ = f;
  after_run_ = AfterRun::kNone;
  BeforeSwitch(f->san, &sched_fake_stack_);
  ctx::transfer_t t = ctx::jump_fcontext(f->ctx, f);
  AfterSwitch(sched_fake_stack_, nullptr);
  running_ = nullptr;
  switch (after_run_) {
    case AfterRun::kYield:
      // Behind this worker's deque, and the next pick looks at the group's queue first, so a
      // yield lets both kinds of waiting fiber go ahead. No wake-up: this worker is busy
      // anyway and will run it (a spinning sibling may steal it).
      f->ctx = t.fctx;
      if (local_.Push(f)) {
        shared_first_ = true;
      } else {
        group_->PushShared(f);
      }
      break;
    case AfterRun::kHalt:
      f->ctx = t.fctx;
      // Only now may a waker resume it: its context is saved.
      if (after_run_lock_ != nullptr) after_run_lock_->unlock();
      break;
    case AfterRun::kExit:
#ifdef TRPC_FIBER_TSAN
      __tsan_destroy_fiber(f->san.tsan_fiber);
#endif
#ifdef TRPC_FIBER_ASAN
      // The finished fiber's frames stay poisoned; the next fiber on this stack must not trip
      // over them.
      __asan_unpoison_memory_region(f->stack.bottom(), f->stack.size);
#endif
      stacks_.Put(f->stack);
      FreeEntity(f);
      Bump(finished_);
      break;
    case AfterRun::kNone:
      TRPC_CHECK(false, "a fiber switched back without saying why");
  }
}

void Worker::SwitchToScheduler(AfterRun action, Spinlock* lock) {
  FiberEntity* self = running_;
  if (self->on_suspend != nullptr && action != AfterRun::kExit) {
    // this_fiber::OnNextSuspend(): still on the fiber, before anything is saved. One-shot.
    void (*fn)(void*) = self->on_suspend;
    self->on_suspend = nullptr;
    fn(self->on_suspend_arg);
  }
  after_run_ = action;
  after_run_lock_ = lock;
  BeforeSwitch(sched_san_, action == AfterRun::kExit ? nullptr : &self->asan_fake_stack);
  ctx::transfer_t t = ctx::jump_fcontext(sched_ctx_, nullptr);
  // Resumed, possibly by another worker: `this` is stale, use the current thread's worker.
  Worker* now = Worker::Current();
  now->sched_ctx_ = t.fctx;
  AfterSwitch(self->asan_fake_stack, &now->sched_san_);
}

void Worker::FiberMain(ctx::transfer_t t) {
  Worker* w = Worker::Current();
  w->sched_ctx_ = t.fctx;
  AfterSwitch(nullptr, &w->sched_san_);
  auto* self = static_cast<FiberEntity*>(t.data);
  try {
    self->fn();
  } catch (const std::exception& e) {
    TRPC_CHECK(false, "an exception escaped fiber #{}: {}", self->id, e.what());
  } catch (...) {
    TRPC_CHECK(false, "an exception escaped fiber #{}", self->id);
  }
  FinishFiber(self);
  Worker::Current()->SwitchToScheduler(AfterRun::kExit, nullptr);
  __builtin_unreachable();
}

}  // namespace trpc::fiber::detail
