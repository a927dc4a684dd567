#include "trpc/fiber/detail/scheduler.h"

#include <atomic>
#include <memory>
#include <system_error>
#include <thread>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/fiber/detail/scheduling_group.h"
#include "trpc/fiber/detail/stack.h"
#include "trpc/fiber/detail/stack_overflow.h"
#include "trpc/fiber/detail/worker.h"

namespace trpc::fiber {

using detail::FiberEntity;
using detail::SchedulingGroup;
using detail::Worker;

namespace {

std::atomic<Scheduler*> g_last_started{nullptr};
std::atomic<uint64_t> g_next_fiber_id{1};

constexpr size_t kPooledStacksPerWorker = 256;

}  // namespace

detail::SchedulerCore::SchedulerCore(SchedulerOptions o) : options(std::move(o)) {}
detail::SchedulerCore::~SchedulerCore() = default;

Scheduler::Scheduler(SchedulerOptions options) : core_(std::move(options)) {
  if (core_.options.concurrency == 0) core_.options.concurrency = UsableCpuCount();
  if (core_.options.scheduling_group_size == 0 || core_.options.scheduling_group_size > 64) {
    // Equal groups of at most 64 (the parked-worker mask is one word).
    size_t groups = (core_.options.concurrency + 63) / 64;
    core_.options.scheduling_group_size = (core_.options.concurrency + groups - 1) / groups;
  }
  if (core_.options.work_stealing_ratio == 0) core_.options.work_stealing_ratio = 1;
  core_.oversubscribed = core_.options.concurrency > UsableCpuCount();
}

Scheduler::~Scheduler() {
  Stop();
  core_.groups.clear();
  core_.workers.clear();  // the workers' stack caches go back to stacks_, so before it
  stacks_.reset();
}

bool Scheduler::Start(std::string* err) {
  if (started_) return true;
  TRPC_CHECK(core_.groups.empty(), "a Scheduler cannot be restarted");
  detail::InstallStackOverflowReporter();
  max_stacks_ =
      core_.options.max_stacks != 0 ? core_.options.max_stacks : detail::StacksLeftByMapCount();
  stacks_ = std::make_unique<detail::StackPool>(core_.options.fiber_stack_size,
                                                kPooledStacksPerWorker * core_.options.concurrency,
                                                max_stacks_);
  size_t n = core_.options.concurrency;
  size_t gsize = core_.options.scheduling_group_size;
  for (size_t i = 0; i < n; ++i) {
    if (i % gsize == 0) {
      core_.groups.push_back(std::make_unique<SchedulingGroup>(this, &core_, core_.groups.size(),
                                                               core_.options.fiber_run_queue_size));
    }
    SchedulingGroup* g = core_.groups.back().get();
    std::unique_ptr<WorkerIo> io;
    if (core_.options.worker_io_factory) io = core_.options.worker_io_factory(i);
    core_.workers.push_back(std::make_unique<Worker>(this, &core_, g, i, g->workers().size(),
                                                     stacks_.get(), std::move(io)));
    g->workers().push_back(core_.workers.back().get());
  }
  started_ = true;
  try {
    for (auto& w : core_.workers) w->Start();
  } catch (const std::system_error& e) {
    *err = fmt::format("cannot start fiber worker threads: {}", e.what());
    Stop();
    return false;
  }
  g_last_started.store(this, std::memory_order_release);
  return true;
}

void Scheduler::Stop(int64_t sleep_deadline_ns) {
  if (!started_) return;
  started_ = false;
  core_.stop_sleep_deadline_ns.store(sleep_deadline_ns, std::memory_order_relaxed);
  // seq_cst, like the epoch bumps in WakeAll(): a worker about to park reads its epoch and
  // then this flag (Worker::ParkUntilWork), so it sees one or the other.
  for (auto& g : core_.groups) g->stopping_.store(true, std::memory_order_seq_cst);
  for (auto& g : core_.groups) g->WakeAll();
  for (auto& w : core_.workers) w->Join();
  while (core_.outside_wakers.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  SchedulerStats s = Stats();
  if (s.fibers_started != s.fibers_finished) {
    TRPC_LOG_WARN("fiber scheduler {} stopped with {} fibers still blocked", core_.options.name,
                  s.fibers_started - s.fibers_finished);
  }
  Scheduler* self = this;
  g_last_started.compare_exchange_strong(self, nullptr);
}

WorkerIo* Scheduler::worker_io(size_t index) const { return core_.workers[index]->io(); }

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

bool SiblingWorkerSpinning() {
  Worker* w = Worker::Current();
  if (w == nullptr) return false;
  SchedulingGroup* g = w->group();
  // Relaxed: a hint (as above). The caller itself is not spinning: it runs a fiber.
  return g->workers().size() > 1 && g->spinning_.load(std::memory_order_relaxed) > 0;
}

int Scheduler::CurrentWorkerIndex() const {
  Worker* w = Worker::Current();
  return w != nullptr && w->scheduler() == this ? static_cast<int>(w->index()) : -1;
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats s;
  s.fibers_started = external_started_.load(std::memory_order_relaxed);
  for (auto& w : core_.workers) {
    s.fibers_started += w->started_.load(std::memory_order_relaxed);
    s.fibers_finished += w->finished_.load(std::memory_order_relaxed);
    // A worker counts its steals within the group and from other groups apart; `steals` is
    // both, so that `remote_steals` is a part of it (summed here, not on the steal path).
    uint64_t remote = w->remote_steals_.load(std::memory_order_relaxed);
    s.steals += w->steals_.load(std::memory_order_relaxed) + remote;
    s.remote_steals += remote;
    s.parks += w->parks_.load(std::memory_order_relaxed);
    s.wakeups += w->unparks_.load(std::memory_order_relaxed);
    s.spin_ns += w->spin_ns_.load(std::memory_order_relaxed);
    s.stack_waits += w->stack_waits_.load(std::memory_order_relaxed);
  }
  for (const auto& g : core_.groups) s.run_queue_depth += g->QueuedCount();
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
    Worker* target = core_.workers[static_cast<size_t>(worker_index) % core_.workers.size()].get();
    f->group = target->group();
    if (on_worker) {
      Worker::Bump(w->started_);
    } else {
      external_started_.fetch_add(1, std::memory_order_relaxed);
    }
    // Once queued, `f` may be stolen, run and freed at once: touch only locals after the push.
    SchedulingGroup* g = f->group;
    if (w == target) {
      g->PushOnWorker(w, f);
    } else {
      g->PushShared(f);
    }
    return;
  }
  if (on_worker) {
    f->group = w->group();
    Worker::Bump(w->started_);
    w->group()->PushOnWorker(w, f);
    return;
  }
  external_started_.fetch_add(1, std::memory_order_relaxed);
  SchedulingGroup* g =
      core_.groups[next_group_.fetch_add(1, std::memory_order_relaxed) % core_.groups.size()].get();
  f->group = g;
  g->PushShared(f);
}

void Scheduler::Spawn(std::function<void()> fn) { SpawnEntity(std::move(fn), nullptr); }

void Scheduler::SpawnOn(size_t worker_index, std::function<void()> fn) {
  SpawnEntity(std::move(fn), nullptr, static_cast<int>(worker_index));
}

}  // namespace trpc::fiber
