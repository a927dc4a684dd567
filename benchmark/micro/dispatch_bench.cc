// What the fiber thread model spends to start a request's handler: N tasks dispatched one fiber
// each (ThreadModel::Dispatch) against the same N submitted in one reactor iteration
// (ThreadModel::Submit: one chain, one fiber that runs them in turn while none parks), as the
// service adapter does with the requests of one read. The timing loop runs in a fiber on the
// model's only worker; each iteration posts a task to the worker's reactor that starts N empty
// tasks, as a reader would, and waits until they have run. Run pinned:
//   taskset -c 1 build/benchmark/micro/dispatch_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "trpc/config/config.h"
#include "trpc/fiber/latch.h"
#include "trpc/fiber/thread_bridge.h"
#include "trpc/runtime/detail/fiber_thread_model.h"

namespace trpc {
namespace {

void SetTimePerTask(benchmark::State& state, double per_iteration) {
  state.counters["per_task"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * per_iteration,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Starts a one-worker fiber model, runs `body(model)` in a fiber on it, stops it.
template <typename Body>
void InModel(benchmark::State& state, Body body) {
  FiberThreadModelConfig c;
  c.instance_name = "bench";
  c.concurrency_hint = 1;
  FiberThreadModel model(c);
  std::string err;
  if (!model.Start(&err)) {
    state.SkipWithError(err.c_str());
    return;
  }
  fiber::RunInFiber(model.scheduler(), [&] { body(model); });
  model.Stop();
}

struct CountDown final : Task {
  fiber::Latch* latch = nullptr;
  void Run() override { latch->count_down(); }
};

void BM_DispatchEach(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  InModel(state, [&](FiberThreadModel& m) {
    Reactor* owner = m.GetReactor(0);
    for (auto _ : state) {
      fiber::Latch done(n);
      // From a task on the reactor, as a connection's reader dispatches.
      owner->Post([&] {
        for (int i = 0; i < n; ++i) m.Dispatch(owner, [&done] { done.count_down(); });
      });
      done.wait();
    }
  });
  SetTimePerTask(state, n);
}
BENCHMARK(BM_DispatchEach)->Arg(1)->Arg(16)->UseRealTime();

void BM_SubmitChain(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  InModel(state, [&](FiberThreadModel& m) {
    Reactor* owner = m.GetReactor(0);
    std::vector<CountDown> tasks(static_cast<size_t>(n));
    for (auto _ : state) {
      fiber::Latch done(n);
      // From a task on the reactor, as a connection's reader submits: the chain starts at the
      // end of that same iteration.
      owner->Post([&] {
        for (CountDown& t : tasks) {
          t.latch = &done;
          m.Submit(owner, &t);
        }
      });
      done.wait();
    }
  });
  SetTimePerTask(state, n);
}
BENCHMARK(BM_SubmitChain)->Arg(1)->Arg(16)->UseRealTime();

}  // namespace
}  // namespace trpc

BENCHMARK_MAIN();
