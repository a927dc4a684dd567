#include "trpc/fiber/scheduler.h"

#include <pthread.h>
#include <unistd.h>

#include <latch>
#include <new>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/fiber/detail/futex.h"
#include "trpc/fiber/detail/scheduling_group.h"
#include "trpc/fiber/detail/stack_overflow.h"
#include "trpc/fiber/detail/worker_timer.h"
#include "trpc/fiber/fiber.h"

#ifdef TRPC_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace trpc::fiber {

using detail::AfterRun;
using detail::FiberEntity;
using detail::SchedulingGroup;
using detail::Worker;

namespace {

thread_local Worker* tls_worker = nullptr;
std::atomic<Scheduler*> g_last_started{nullptr};
std::atomic<uint64_t> g_next_fiber_id{1};

// Fibers run between two polls of a busy worker's IO: bounds how long ready sockets wait while
// the worker has fibers to run. Each poll is an epoll_wait(2) and runs the posted reply
// flushes, so a short interval costs syscalls: at 16, a worker serving 16-deep pipelined HTTP
// polled once and sent about twice per batch (a poll fell inside most batches); at 64 it
// polls once per four batches and sends about once per batch.
constexpr int kFibersPerIoPoll = 64;
// How long a worker spins looking for work before it parks.
constexpr int64_t kSpinNanos = 20'000;
constexpr int kMaxSpinners = 2;
constexpr size_t kLocalQueueSize = 4096;
constexpr size_t kPooledStacksPerWorker = 256;
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

namespace detail {

// ---- Worker -----------------------------------------------------------------------------------

Worker::Worker(Scheduler* sched, SchedulingGroup* group, size_t index, size_t index_in_group,
               StackPool* stacks, std::unique_ptr<WorkerIo> io)
    : sched_(sched),
      group_(group),
      index_(index),
      index_in_group_(index_in_group),
      stacks_(stacks),
      io_(std::move(io)),
      local_(kLocalQueueSize),
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

__attribute__((noinline)) Worker* Worker::Current() {
  asm volatile("" ::: "memory");
  return tls_worker;
}

void Worker::Start() {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(),
                       fmt::format("{}_{}", sched_->options().name.substr(0, 8), index_).c_str());
    tls_worker = this;
    alt_stack_.Install();
#ifdef TRPC_FIBER_TSAN
    sched_san_.tsan_fiber = __tsan_get_current_fiber();
#endif
    if (io_) io_->OnStart();
    Loop();
    if (io_) io_->OnStop();
    alt_stack_.Remove();
    tls_worker = nullptr;
  });
}

void Worker::Join() {
  if (thread_.joinable()) thread_.join();
}

void Worker::PushLocal(FiberEntity* f) {
  if (!local_.Push(f)) group_->PushShared(f);
}

void Worker::PushLocalAndWake(FiberEntity* f) {
  // In the scheduler's own context (the reactor dispatching what it just read, a reply or a
  // timer waking a fiber) with nothing queued, this worker runs the new fiber itself as soon
  // as that returns. Waking a parked sibling for it only has the sibling find nothing, spin
  // and park again, which costs CPU per request without improving latency. A second fiber
  // queued behind it, a fiber spawning another, or a full deque still wakes a sibling to steal.
  // Size() is exact for the owner or an over-estimate (a thief's steal not yet seen), which
  // only errs towards waking. The only worker of its scheduler has no one to wake (and would
  // pay for SignalWork's fence for nothing).
  bool wake = (running_ != nullptr || local_.Size() != 0) && sched_->workers_.size() > 1;
  PushLocal(f);
  // `f` may be stolen and finished by now: only our own fields from here.
  if (wake) group_->SignalWork();
}

void Worker::Unpark() {
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  if (io_) {
    io_->Wake();
  } else {
    FutexWake(&epoch_, 1);
  }
}

FiberEntity* Worker::FindWork(bool allow_remote) {
  // FIFO from our own deque (a steal from the top, not a LIFO pop): request fibers run in
  // arrival order, which is what keeps the tail short under load. Every 61st look starts at
  // the shared queue so a worker busy with its own deque cannot starve it.
  if (shared_first_ || ++find_calls_ % 61 == 0) {
    shared_first_ = false;
    if (FiberEntity* f = group_->PopShared()) return f;
  }
  if (FiberEntity* f = local_.Steal()) return f;
  if (FiberEntity* f = group_->PopShared()) return f;
  if (FiberEntity* f = group_->StealFromWorkers(this, NextRandom(&rng_))) {
    Bump(steals_);
    return f;
  }
  if (allow_remote && sched_->groups_.size() > 1) {
    size_t n = sched_->groups_.size();
    size_t start = NextRandom(&rng_) % n;
    for (size_t i = 0; i < n; ++i) {
      SchedulingGroup* g = sched_->groups_[(start + i) % n].get();
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

bool Worker::SpinForWork(FiberEntity** out) {
  // With more workers than CPUs a spinner only steals CPU time from the worker it waits for.
  // A lone worker has no sibling whose work it could pick up while spinning (its own IO is not
  // polled here; other threads' pushes wake it anyway): spinning would only burn the CPU time
  // a request costs at moderate load.
  if (sched_->oversubscribed_ || (group_->workers().size() == 1 && sched_->groups_.size() == 1)) {
    return false;
  }
  if (sched_->groups_.size() == 1) {
    // Every sibling asleep too: no running fiber can queue work for us soon, and what their
    // reactors read wakes us (SignalWork) if they cannot take it themselves. Spinning then
    // only burns CPU.
    size_t n = group_->workers().size();
    uint64_t all = n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1;
    uint64_t self = uint64_t{1} << index_in_group_;
    if ((group_->parked_mask_.load(std::memory_order_relaxed) | self) == all) return false;
  }
  int spinning = group_->spinning_.load(std::memory_order_relaxed);
  do {
    if (spinning >= kMaxSpinners) return false;
  } while (
      !group_->spinning_.compare_exchange_weak(spinning, spinning + 1, std::memory_order_seq_cst));
  int64_t until = MonotonicNanos() + kSpinNanos;
  FiberEntity* f = nullptr;
  for (int i = 0;; ++i) {
    f = FindWork(/*allow_remote=*/true);
    if (f != nullptr) break;
    if ((i & 15) == 15 && MonotonicNanos() >= until) break;
    for (int k = 0; k < 32; ++k) CpuRelax();
  }
  group_->spinning_.fetch_sub(1, std::memory_order_seq_cst);
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
  // (Stopping: Loop() gets here only with timers pending, so the wait below is bounded by the
  // next one; a Stop() that began after the check in Loop() has bumped our epoch.)
  Bump(parks_);
  int64_t deadline = timers_.NextDeadline();
  if (io_) {
    io_->Wait(deadline, &epoch_, token);
  } else {
    FutexWait(&epoch_, token, deadline);
  }
  group_->parked_mask_.fetch_and(~bit, std::memory_order_seq_cst);
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
    if (f == nullptr && ++idle_rounds_ % sched_->options_.work_stealing_ratio == 0) {
      f = FindWork(/*allow_remote=*/true);
    }
    if (f != nullptr) {
      RunFiber(f);
      continue;
    }
    if (io_) {
      // Idle: before spinning or sleeping, see whether IO has work for us.
      io_->Poll();
      since_poll = 0;
      if ((f = FindWork(false)) != nullptr) {
        RunFiber(f);
        continue;
      }
    }
    if (SpinForWork(&f)) {
      RunFiber(f);
      continue;
    }
    ApplyTimerCancels();
    if (group_->stopping_.load(std::memory_order_acquire) && timers_.size() == 0) {
      // Drain: exit once nothing is runnable and nothing is left to wake up on this worker.
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
    TRPC_CHECK(f->stack.base != nullptr,
               "cannot map a fiber stack: out of memory, or out of memory mappings (each stack "
               "takes two; see vm.max_map_count)");
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

// ---- SchedulingGroup --------------------------------------------------------------------------

SchedulingGroup::SchedulingGroup(Scheduler* sched, size_t index, size_t run_queue_size)
    : sched_(sched), index_(index), shared_(run_queue_size) {}

SchedulingGroup::~SchedulingGroup() = default;

void SchedulingGroup::Ready(FiberEntity* f) {
  Worker* w = Worker::Current();
  if (w != nullptr && w->scheduler() == sched_) {
    w->PushLocalAndWake(f);
    return;
  }
  PushShared(f);
}

void SchedulingGroup::PushShared(FiberEntity* f) {
  // A thread outside this scheduler keeps touching the group (SignalWork) after `f` is queued,
  // when `f` may already have finished and the scheduler may be stopping: Stop() waits for it.
  Worker* self = Worker::Current();
  bool outsider = self == nullptr || self->scheduler() != sched_;
  if (outsider) sched_->outside_wakers_.fetch_add(1, std::memory_order_acq_rel);
  PushSharedInner(f);
  if (outsider) sched_->outside_wakers_.fetch_sub(1, std::memory_order_acq_rel);
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

FiberEntity* SchedulingGroup::StealFromWorkers(const Worker* thief, uint64_t rand) {
  size_t n = workers_.size();
  if (n == 0) return nullptr;
  size_t start = rand % n;
  for (size_t i = 0; i < n; ++i) {
    Worker* v = workers_[(start + i) % n].get();
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
  if (Worker* w = Worker::Current(); w != nullptr && w->group() == this) {
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
  for (auto& w : workers_) w->Unpark();
}

size_t SchedulingGroup::QueuedCount() const {
  size_t n = shared_.Size();
  for (const auto& w : workers_) n += w->local().Size();
  return n;
}

}  // namespace detail

// ---- Scheduler --------------------------------------------------------------------------------

Scheduler::Scheduler(SchedulerOptions options) : options_(std::move(options)) {
  if (options_.concurrency == 0) options_.concurrency = UsableCpuCount();
  if (options_.scheduling_group_size == 0 || options_.scheduling_group_size > 64) {
    // Equal groups of at most 64 (the parked-worker mask is one word).
    size_t groups = (options_.concurrency + 63) / 64;
    options_.scheduling_group_size = (options_.concurrency + groups - 1) / groups;
  }
  if (options_.work_stealing_ratio == 0) options_.work_stealing_ratio = 1;
  oversubscribed_ = options_.concurrency > UsableCpuCount();
}

Scheduler::~Scheduler() {
  Stop();
  workers_.clear();
  groups_.clear();  // the workers' stack caches go back to stacks_, so before it
  stacks_.reset();
}

bool Scheduler::Start(std::string* err) {
  if (started_) return true;
  TRPC_CHECK(groups_.empty(), "a Scheduler cannot be restarted");
  detail::InstallStackOverflowReporter();
  stacks_ = std::make_unique<detail::StackPool>(options_.fiber_stack_size,
                                                kPooledStacksPerWorker * options_.concurrency);
  size_t n = options_.concurrency;
  size_t gsize = options_.scheduling_group_size;
  for (size_t i = 0; i < n; ++i) {
    if (i % gsize == 0) {
      groups_.push_back(
          std::make_unique<SchedulingGroup>(this, groups_.size(), options_.fiber_run_queue_size));
    }
    SchedulingGroup* g = groups_.back().get();
    std::unique_ptr<WorkerIo> io;
    if (options_.worker_io_factory) io = options_.worker_io_factory(i);
    g->workers().push_back(
        std::make_unique<Worker>(this, g, i, g->workers().size(), stacks_.get(), std::move(io)));
    workers_.push_back(g->workers().back().get());
  }
  started_ = true;
  try {
    for (Worker* w : workers_) w->Start();
  } catch (const std::system_error& e) {
    *err = fmt::format("cannot start fiber worker threads: {}", e.what());
    Stop();
    return false;
  }
  g_last_started.store(this, std::memory_order_release);
  return true;
}

void Scheduler::Stop() {
  if (!started_) return;
  started_ = false;
  for (auto& g : groups_) g->stopping_.store(true, std::memory_order_release);
  for (auto& g : groups_) g->WakeAll();
  for (Worker* w : workers_) w->Join();
  while (outside_wakers_.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  SchedulerStats s = Stats();
  if (s.fibers_started != s.fibers_finished) {
    TRPC_LOG_WARN("fiber scheduler {} stopped with {} fibers still blocked", options_.name,
                  s.fibers_started - s.fibers_finished);
  }
  Scheduler* self = this;
  g_last_started.compare_exchange_strong(self, nullptr);
}

WorkerIo* Scheduler::worker_io(size_t index) const { return workers_[index]->io(); }

bool SiblingWorkerIdle() {
  Worker* w = Worker::Current();
  if (w == nullptr) return false;
  SchedulingGroup* g = w->group();
  if (g->workers().size() == 1) return false;
  // Relaxed: a hint. A sibling that parks just after this read is woken by the push that
  // follows a "false" anyway (the wake-up contract), only later.
  uint64_t self = uint64_t{1} << w->index_in_group();
  return g->spinning_.load(std::memory_order_relaxed) > 0 ||
         (g->parked_mask_.load(std::memory_order_relaxed) & ~self) != 0;
}

int Scheduler::CurrentWorkerIndex() const {
  Worker* w = Worker::Current();
  return w != nullptr && w->scheduler() == this ? static_cast<int>(w->index()) : -1;
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats s;
  s.fibers_started = external_started_.load(std::memory_order_relaxed);
  for (Worker* w : workers_) {
    s.fibers_started += w->started_.load(std::memory_order_relaxed);
    s.fibers_finished += w->finished_.load(std::memory_order_relaxed);
    s.steals += w->steals_.load(std::memory_order_relaxed);
    s.remote_steals += w->remote_steals_.load(std::memory_order_relaxed);
    s.parks += w->parks_.load(std::memory_order_relaxed);
  }
  for (const auto& g : groups_) s.run_queue_depth += g->QueuedCount();
  return s;
}

Scheduler* Scheduler::Current() {
  Worker* w = Worker::Current();
  if (w != nullptr) return w->scheduler();
  return g_last_started.load(std::memory_order_acquire);
}

namespace {
// Fiber ids come from a global counter a block at a time, so spawning does not bounce one
// cache line between workers.
uint64_t NextFiberId() {
  constexpr uint64_t kBlock = 1024;
  thread_local uint64_t next = 0;
  thread_local uint64_t end = 0;
  if (next == end) {
    next = g_next_fiber_id.fetch_add(kBlock, std::memory_order_relaxed);
    end = next + kBlock;
  }
  return next++;
}
}  // namespace

void Scheduler::SpawnEntity(std::function<void()>&& fn, detail::JoinState* join, int worker_index) {
  TRPC_CHECK(started_ || Worker::Current() != nullptr,
             "Spawn() on a scheduler that is not running");
  Worker* w = Worker::Current();
  bool on_worker = w != nullptr && w->scheduler() == this;
  FiberEntity* f = on_worker ? w->NewEntity() : new FiberEntity;
  f->fn = std::move(fn);
  f->id = NextFiberId();
  f->join = join;
  if (worker_index >= 0) {
    Worker* target = workers_[static_cast<size_t>(worker_index) % workers_.size()];
    f->group = target->group();
    if (on_worker) {
      Worker::Bump(w->started_);
    } else {
      external_started_.fetch_add(1, std::memory_order_relaxed);
    }
    // Once queued, `f` may be stolen, run and freed at once: touch only locals after the push.
    SchedulingGroup* g = f->group;
    if (w == target) {
      w->PushLocalAndWake(f);
    } else {
      g->PushShared(f);
    }
    return;
  }
  if (on_worker) {
    f->group = w->group();
    Worker::Bump(w->started_);
    w->PushLocalAndWake(f);
    return;
  }
  external_started_.fetch_add(1, std::memory_order_relaxed);
  SchedulingGroup* g =
      groups_[next_group_.fetch_add(1, std::memory_order_relaxed) % groups_.size()].get();
  f->group = g;
  g->PushShared(f);
}

void Scheduler::Spawn(std::function<void()> fn) { SpawnEntity(std::move(fn), nullptr); }

void Scheduler::SpawnOn(size_t worker_index, std::function<void()> fn) {
  SpawnEntity(std::move(fn), nullptr, static_cast<int>(worker_index));
}

}  // namespace trpc::fiber
