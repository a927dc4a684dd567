// What the server's per-method metrics add to each request (docs/admin.md): one MonotonicNanos()
// at the reply and MethodCounters::Record() (a bucket and the sum: two relaxed fetch_adds).
//
//   BM_ClockOnly       the clock read alone (the reply path reads it anyway when the request
//                      has a deadline, which every request of a service with a timeout has)
//   BM_Record          Record() alone, one thread (the merge model's case: a worker writes
//                      counters no other worker writes)
//   BM_ClockAndRecord  both: the whole per-request cost when there is no deadline
//   BM_RecordShared    Record() from N threads on ONE method's counters of ONE reactor: the
//                      fiber model's worst case, when stolen fibers of one connection's worker
//                      reply from every worker at once (cache-line contention)
//   BM_RecordPerThread Record() from N threads, each on its own reactor's counters (merge)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/server/detail/method_counters.h"

namespace trpc::detail {
namespace {

// Server-side latencies of a loopback echo: mostly 10-200 us. Pre-drawn; 4096 cycle.
std::vector<int64_t> Latencies() {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(10.5, 0.8);  // median e^10.5 ns ~ 36 us
  std::vector<int64_t> v(4096);
  for (auto& x : v) x = static_cast<int64_t>(dist(rng));
  return v;
}

void BM_ClockOnly(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(MonotonicNanos());
}
BENCHMARK(BM_ClockOnly);

void BM_Record(benchmark::State& state) {
  std::vector<int64_t> lat = Latencies();
  auto c = std::make_unique<MethodCounters>();
  size_t i = 0;
  for (auto _ : state) c->Record(lat[i++ & 4095], 0, 0);
  benchmark::DoNotOptimize(c->latency.sum_ns.load());
}
BENCHMARK(BM_Record);

void BM_ClockAndRecord(benchmark::State& state) {
  auto c = std::make_unique<MethodCounters>();
  int64_t recv = MonotonicNanos();
  for (auto _ : state) {
    int64_t now = MonotonicNanos();
    c->Record(now - recv, 0, 0);
    recv = now - 30'000;  // a plausible latency, so the bucket search is not trivial
  }
  benchmark::DoNotOptimize(c->latency.sum_ns.load());
}
BENCHMARK(BM_ClockAndRecord);

MethodCounters g_shared;
MethodCounters g_per_thread[64];

void BM_RecordShared(benchmark::State& state) {
  std::vector<int64_t> lat = Latencies();
  size_t i = 0;
  for (auto _ : state) g_shared.Record(lat[i++ & 4095], 0, 0);
}
BENCHMARK(BM_RecordShared)->Threads(1)->Threads(2)->UseRealTime();

void BM_RecordPerThread(benchmark::State& state) {
  std::vector<int64_t> lat = Latencies();
  MethodCounters& c = g_per_thread[state.thread_index() % 64];
  size_t i = 0;
  for (auto _ : state) c.Record(lat[i++ & 4095], 0, 0);
}
BENCHMARK(BM_RecordPerThread)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace trpc::detail

BENCHMARK_MAIN();
