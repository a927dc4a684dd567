// Future/Promise micro-benchmarks, single thread: the cost of the shared state (one allocation
// and a few atomic RMWs per pair) and of continuations (one allocation per Then()). Cross-thread
// wake-ups (a futex wake or a fiber switch) are not measured here.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "trpc/future/future.h"

namespace trpc {
namespace {

// A Promise/Future pair: allocate, set, read, free.
void BM_PromiseSetGet(benchmark::State& state) {
  int v = 0;
  for (auto _ : state) {
    Promise<int> p;
    Future<int> f = p.GetFuture();
    p.SetValue(++v);
    benchmark::DoNotOptimize(f.GetValue());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PromiseSetGet);

// The common async-call shape: Then() on a pending future, then the value arrives and runs it.
void BM_ThenOnPendingThenSet(benchmark::State& state) {
  int v = 0;
  for (auto _ : state) {
    Promise<int> p;
    Future<int> f = p.GetFuture().Then([](int x) { return x + 1; });
    p.SetValue(++v);
    benchmark::DoNotOptimize(f.GetValue());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ThenOnPendingThenSet);

// Then() on a ready future: the continuation runs inline.
void BM_ThenOnReady(benchmark::State& state) {
  int v = 0;
  for (auto _ : state) {
    Future<int> f = MakeReadyFuture(++v).Then([](int x) { return x + 1; });
    benchmark::DoNotOptimize(f.GetValue());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_ThenOnReady);

// Eight continuations chained on a pending future, resolved in one go.
void BM_ThenChain8(benchmark::State& state) {
  int v = 0;
  for (auto _ : state) {
    Promise<int> p;
    Future<int> f = p.GetFuture();
    for (int i = 0; i < 8; ++i) f = std::move(f).Then([](int x) { return x + 1; });
    p.SetValue(++v);
    benchmark::DoNotOptimize(f.GetValue());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 8);
}
BENCHMARK(BM_ThenChain8);

// WhenAll over range(0) pending futures, resolved one by one.
void BM_WhenAll(benchmark::State& state) {
  const auto n = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    std::vector<Promise<int>> ps(n);
    std::vector<Future<int>> fs;
    fs.reserve(n);
    for (auto& p : ps) fs.push_back(p.GetFuture());
    auto all = WhenAll(std::move(fs));
    for (size_t i = 0; i < n; ++i) ps[i].SetValue(static_cast<int>(i));
    benchmark::DoNotOptimize(all.GetValue().size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_WhenAll)->Arg(16);

}  // namespace
}  // namespace trpc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("threads", "1 (no contention; continuations run inline)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
