#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/fiber/detail/scheduler.h"
#include "trpc/runtime/detail/thread_model.h"
#include "trpc/runtime/thread_model_config.h"

namespace trpc {

/// The fiber model: a work-stealing fiber scheduler whose worker threads also run one reactor
/// each. A connection lives on one worker's reactor, which is its only reader; the requests it
/// reads run in fibers queued on that same worker, where any idle worker of the group may
/// steal them. A fiber that sleeps or makes a synchronous call parks only itself. Replies go
/// back through the connection's write queue: directly when the fiber runs on the connection's
/// worker, through the reactor's task queue when it was stolen.
///
/// The requests submitted during one iteration of a worker's reactor (a pipelined batch, and
/// those of other connections read in the same wait) form a chain, which starts in one fiber
/// at the iteration's end (Reactor::AtIterationEnd) and runs them in turn while that costs
/// nobody
/// anything: before each next request it hands the rest of the chain to a new fiber if a
/// sibling worker is spinning, or the second half of it if a sibling is parked and that half is
/// long enough (by this worker's recent task times) to be worth waking it for (a sibling then
/// steals it), and when a request parks (sleeps, waits,
/// calls out) the rest moves to a new fiber at that moment (this_fiber::OnNextSuspend). So
/// no request ever waits for another one that is blocked, and an idle worker still gets work
/// at the next request boundary, while a busy worker answering 16 pipelined requests starts
/// one fiber instead of 16. Each request sees fresh FiberLocal values.
class FiberThreadModel final : public ThreadModel {
 public:
  explicit FiberThreadModel(const FiberThreadModelConfig& config);
  ~FiberThreadModel() override;

  std::string_view Type() const override { return "fiber"; }
  const std::string& InstanceName() const override { return name_; }
  bool Start(std::string* err) override;
  /// Runs what is runnable and the sleeps that end within 100 ms, abandons the other sleeping
  /// or blocked fibers (their memory is never freed), and joins the workers.
  void Stop() override;
  size_t ReactorCount() const override { return reactors_.size(); }
  Reactor* GetReactor(size_t index) override { return reactors_[index].get(); }
  int IndexOf(const Reactor* reactor) const override;
  Reactor* NextReactor() override;
  void Submit(Reactor* reactor, Task* task) override;
  bool HandlesInline() const override { return false; }
  void Dispatch(Reactor* owner, std::function<void()> task) override;
  bool MayBlockCurrentThread() const override;
  int RunBlocking(const std::function<int()>& fn) override;
  bool GetFiberStats(FiberStats* out) const override;
  uint64_t ParkedCapacity() const override;

  fiber::Scheduler* scheduler() { return scheduler_.get(); }

 private:
  // The tasks submitted during the current iteration of one reactor; touched only by its loop
  // thread. A non-empty chain means the reactor's iteration-end call is armed.
  struct alignas(64) PendingChain {
    FiberThreadModel* model = nullptr;
    size_t worker = 0;
    TaskChain tasks;
  };
  // Reactor::AtIterationEnd's call: starts the chain `arg` (a PendingChain) in one fiber.
  static void StartPending(void* arg);
  // The body of a chain's fiber: runs `first` and its successors until the chain ends or is
  // handed to another fiber.
  void RunChain(Task* first);
  // Runs RunChain(first) in a new fiber, queued on the calling worker.
  void SpawnChain(Task* first);
  // How many of the tasks after the next one (`rest`, `*rest_n` of them once counted; it
  // counts them when it needs to) a chain running on `worker` hands to a new fiber (the last
  // ones), for an idle sibling to steal: 0 none, kAllOfTheRest all.
  size_t TasksToHandOver(size_t worker, Task* rest, size_t* rest_n) const;
  static constexpr size_t kAllOfTheRest = ~size_t{0};

  // How much work (by the worker's recent average task time) a chain must have to hand over
  // before it wakes a parked sibling for it: a few times what the wake-up costs in CPU.
  static constexpr int64_t kSplitForParkedSiblingNs = 20'000;
  // A worker's recent task run time (a sample of the tasks that had others behind them),
  // written and read by that worker only (RunChain).
  struct alignas(64) TaskCost {
    int64_t avg = 0;    // ns
    uint64_t tick = 0;  // tasks that could have been timed (RunChain samples one in four)
  };
  std::string name_;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::vector<PendingChain> pending_;  // per reactor
  std::vector<TaskCost> task_ns_;      // per worker
  std::unique_ptr<fiber::Scheduler> scheduler_;
  std::atomic<size_t> next_{0};
  bool started_ = false;
};

}  // namespace trpc
