#include "trpc/runtime/detail/fiber_thread_model.h"

#include <algorithm>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/fiber/fiber.h"
#include "trpc/fiber/thread_bridge.h"

namespace trpc {

namespace {

// How long Stop() still waits for sleeping fibers (see Stop()).
constexpr int64_t kStopSleepWaitNs = 100 * kNanosPerMilli;

// Runs a worker's reactor between its fibers, and parks the worker in epoll_wait (woken by the
// reactor's eventfd) when it has none.
class ReactorWorkerIo final : public fiber::WorkerIo {
 public:
  explicit ReactorWorkerIo(Reactor* reactor) : reactor_(reactor) {}
  void OnStart() override { reactor_->Attach(); }
  void OnStop() override { reactor_->Detach(); }
  void Poll() override { reactor_->RunOnce(0); }
  void Wait(int64_t deadline_ns, const std::atomic<uint32_t>* epoch, uint32_t token) override {
    reactor_->RunOnce(deadline_ns, epoch, token);
  }
  void Wake() override { reactor_->Notify(); }
  bool RunPending() override { return reactor_->RunPending(); }

 private:
  Reactor* reactor_;
};

}  // namespace

FiberThreadModel::FiberThreadModel(const FiberThreadModelConfig& config)
    : name_(config.instance_name) {
  fiber::SchedulerOptions o;
  o.name = config.instance_name;
  o.concurrency = config.concurrency_hint == 0 ? fiber::UsableCpuCount() : config.concurrency_hint;
  o.scheduling_group_size = config.scheduling_group_size;
  o.fiber_stack_size = config.fiber_stack_size;
  o.work_stealing_ratio = config.work_stealing_ratio;
  o.fiber_run_queue_size = config.fiber_run_queue_size;
  pending_.resize(o.concurrency);
  task_ns_.resize(o.concurrency);
  for (size_t i = 0; i < o.concurrency; ++i) {
    reactors_.push_back(std::make_unique<Reactor>());
    reactors_.back()->set_owner(this, static_cast<int>(i));
    pending_[i].model = this;
    pending_[i].worker = i;
  }
  o.worker_io_factory = [this](size_t i) -> std::unique_ptr<fiber::WorkerIo> {
    return std::make_unique<ReactorWorkerIo>(reactors_[i].get());
  };
  scheduler_ = std::make_unique<fiber::Scheduler>(std::move(o));
}

FiberThreadModel::~FiberThreadModel() { Stop(); }

bool FiberThreadModel::Start(std::string* err) {
  if (started_) return true;
  if (!scheduler_->Start(err)) return false;
  started_ = true;
  return true;
}

void FiberThreadModel::Stop() {
  if (!started_) return;
  started_ = false;
  // Fibers asleep beyond this are abandoned rather than waited for: a handler a server's stop
  // gave up on may sleep forever, and the merge model runs no timer after its stop either.
  scheduler_->Stop(MonotonicNanos() + kStopSleepWaitNs);
}

int FiberThreadModel::IndexOf(const Reactor* reactor) const {
  return reactor == nullptr ? -1 : reactor->IndexIn(this);
}

Reactor* FiberThreadModel::NextReactor() {
  return reactors_[next_.fetch_add(1, std::memory_order_relaxed) % reactors_.size()].get();
}

void FiberThreadModel::Dispatch(Reactor* owner, std::function<void()> task) {
  // On the owner's worker (the usual case: the reader dispatches) this queues on its own deque.
  scheduler_->SpawnOn(static_cast<size_t>(std::max(IndexOf(owner), 0)), std::move(task));
}

void FiberThreadModel::Submit(Reactor* reactor, Task* task) {
  int index = IndexOf(reactor);
  if (index < 0 || !reactor->InLoopThread()) {
    // Not from one of our loops (outside the contract, but cheap to honour): a chain of one.
    SpawnChain(task);
    return;
  }
  PendingChain& chain = pending_[static_cast<size_t>(index)];
  if (chain.tasks.Append(task)) reactor->AtIterationEnd(&FiberThreadModel::StartPending, &chain);
}

void FiberThreadModel::StartPending(void* arg) {
  auto* chain = static_cast<PendingChain*>(arg);
  Task* first = chain->tasks.TakeAll();
  FiberThreadModel* self = chain->model;
  // (Two pointers: the closure fits std::function's inline buffer, no allocation per chain.)
  self->scheduler_->SpawnOn(chain->worker, [self, first] { self->RunChain(first); });
}

void FiberThreadModel::SpawnChain(Task* first) {
  scheduler_->Spawn([this, first] { RunChain(first); });
}

namespace {
// What a chain's fiber leaves for its suspend hook while it runs one task: the tasks after it.
struct ChainHandOff {
  FiberThreadModel* model;
  Task* rest;
  bool handed = false;  // the task parked or yielded, and `rest` went to a new fiber then
};
}  // namespace

size_t FiberThreadModel::TasksToHandOver(size_t worker, Task* rest, size_t* rest_n) const {
  // A spinning sibling takes the rest at no cost: all of it (it splits again if it must).
  // Waking a parked one costs a wake-up call here, an epoll return and a context switch
  // there: worth it only for the second half of the rest, and only when that half would take
  // this worker long, by the average of its recent tasks. Short requests arriving a few at a
  // time thus stay on the worker that read them; a long run of them (a busy connection's
  // pipeline) is halved among the idle workers, each of which halves its part again.
  if (fiber::SiblingWorkerSpinning()) return kAllOfTheRest;
  int64_t avg = task_ns_[worker].avg;
  if (avg == 0 || !fiber::SiblingWorkerIdle()) return 0;
  if (*rest_n == 0) *rest_n = TaskChain::Count(rest);  // once per chain fiber at most
  size_t half = *rest_n - *rest_n / 2;
  return avg * static_cast<int64_t>(half) >= kSplitForParkedSiblingNs ? half : 0;
}

void FiberThreadModel::RunChain(Task* t) {
  size_t rest_n = 0;  // the tasks after `t`, once counted (0: not counted)
  while (t != nullptr) {
    Task* rest = TaskChain::Detach(t);
    if (rest == nullptr) {
      // The last task: nothing waits behind it, so nothing to hand over or to time.
      t->Run();
      return;
    }
    // (A chain's fiber runs on a worker of this model: StartPending and SpawnChain queue it
    // there, and only this model's workers steal it.)
    auto worker = static_cast<size_t>(std::max(scheduler_->CurrentWorkerIndex(), 0));
    if (size_t give = TasksToHandOver(worker, rest, &rest_n); give > 0) {
      // Someone could run these now, in parallel with `t`: let them (they steal the fiber).
      if (give == kAllOfTheRest || give >= rest_n) {
        SpawnChain(rest);
        t->Run();
        return;
      }
      Task* last_kept = TaskChain::Advance(rest, rest_n - give - 1);
      SpawnChain(TaskChain::Detach(last_kept));
      rest_n -= give;
    }
    ChainHandOff hand_off{this, rest};
    // If `t` parks, the rest must not wait for it: hand them to a new fiber right then.
    fiber::this_fiber::OnNextSuspend(
        [](void* arg) {
          auto* h = static_cast<ChainHandOff*>(arg);
          h->handed = true;
          h->model->SpawnChain(h->rest);
        },
        &hand_off);
    // Every fourth task with others behind it is timed (two clock reads): the average only
    // steers the hand-off above, and a sample of the tasks that decide it is enough.
    TaskCost& cost = task_ns_[worker];
    int64_t start = (cost.tick++ & 3) == 0 ? MonotonicNanos() : 0;
    t->Run();  // may free `t`
    fiber::this_fiber::OnNextSuspend(nullptr, nullptr);
    if (hand_off.handed) return;
    if (start != 0) {
      // Ran start to end on this worker: CPU time (a task that parked may have moved and its
      // time includes the wait). An average over about the last eight samples.
      cost.avg += (MonotonicNanos() - start - cost.avg) / 8;
    }
    // The next request must not see this one's fiber-locals.
    fiber::this_fiber::ResetLocals();
    t = rest;
    if (rest_n > 0) --rest_n;  // now the tasks after the new `t`
  }
}

int FiberThreadModel::RunBlocking(const std::function<int()>& fn) {
  return fiber::RunInFiber(scheduler_.get(), fn);
}

bool FiberThreadModel::GetFiberStats(FiberStats* out) const {
  fiber::SchedulerStats st = scheduler_->Stats();
  // Relaxed sums over the workers: a fiber's finish may be seen before its start.
  out->alive = st.fibers_started > st.fibers_finished ? st.fibers_started - st.fibers_finished : 0;
  out->run_queue_depth = st.run_queue_depth;
  // Relaxed loads of per-worker counters (Scheduler::Stats()): cheap and race-free from any
  // thread, each monotonic, and remote_steals <= steals within one call.
  out->steals = st.steals;
  out->remote_steals = st.remote_steals;
  out->stack_waits = st.stack_waits;
  out->parks = st.parks;
  out->wakeups = st.wakeups;
  out->spin_ns = st.spin_ns;
  return true;
}

uint64_t FiberThreadModel::ParkedCapacity() const {
  // An eighth of the stacks stays for fibers that serve no request of their own: a chain's
  // hand-off, client callbacks, timers, the application's own.
  uint64_t stacks = scheduler_->max_stacks();
  return stacks == 0 ? 0 : std::max<uint64_t>(1, stacks - stacks / 8);
}

bool FiberThreadModel::MayBlockCurrentThread() const {
  // A fiber parks instead of blocking; a worker between fibers (inside its reactor) must not
  // block; any other thread may.
  return fiber::IsFiberContext() || scheduler_->CurrentWorkerIndex() < 0;
}

}  // namespace trpc
