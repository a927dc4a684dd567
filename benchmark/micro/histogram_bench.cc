// Histogram micro-benchmarks: what trpc_bench pays per call (Record) and per report
// (ValueAtPercentile, Merge of the per-thread histograms, Reset of a progress interval).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "trpc/base/detail/histogram.h"

namespace trpc {
namespace {

// Latencies shaped like a loopback run: mostly 20-200 us, a tail to ~100 ms. Pre-drawn, so the
// random generator is not measured; 4096 of them cycle (a power of two: the index is a mask).
std::vector<int64_t> Latencies() {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(4.5, 1.0);  // median e^4.5 ~ 90 us
  std::vector<int64_t> v(4096);
  for (auto& x : v) x = static_cast<int64_t>(dist(rng));
  return v;
}

Histogram Filled(size_t n) {
  Histogram h;
  std::vector<int64_t> lat = Latencies();
  for (size_t i = 0; i < n; ++i) h.Record(lat[i % lat.size()]);
  return h;
}

// Recording one latency: the per-call cost on the load client's hot path.
void BM_Record(benchmark::State& state) {
  std::vector<int64_t> lat = Latencies();
  Histogram h;
  size_t i = 0;
  for (auto _ : state) {
    h.Record(lat[i++ & 4095]);
  }
  benchmark::DoNotOptimize(h.Count());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_Record);

// One percentile of a histogram holding a million values (a scan of the buckets up to it):
// P50 stops early, P99.9 scans further.
void BM_ValueAtPercentile(benchmark::State& state) {
  Histogram h = Filled(1'000'000);
  double p = static_cast<double>(state.range(0)) / 10;
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.ValueAtPercentile(p));
  }
  state.SetLabel("P" + std::to_string(state.range(0) / 10) + "." +
                 std::to_string(state.range(0) % 10));
}
BENCHMARK(BM_ValueAtPercentile)->Arg(500)->Arg(990)->Arg(999);

// Merging one thread's histogram into the total (done once per thread per report or second).
void BM_Merge(benchmark::State& state) {
  Histogram part = Filled(100'000);
  Histogram total;
  for (auto _ : state) {
    total.Merge(part);
  }
  benchmark::DoNotOptimize(total.Count());
}
BENCHMARK(BM_Merge);

// Clearing a progress interval (once per second per thread).
void BM_Reset(benchmark::State& state) {
  Histogram h = Filled(1000);
  for (auto _ : state) {
    h.Reset();
    benchmark::DoNotOptimize(h.Count());
  }
}
BENCHMARK(BM_Reset);

}  // namespace
}  // namespace trpc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
#ifdef NDEBUG
  benchmark::AddCustomContext("trpc_build", "NDEBUG");
#else
  benchmark::AddCustomContext("trpc_build", "debug (asserts on): numbers not representative");
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
