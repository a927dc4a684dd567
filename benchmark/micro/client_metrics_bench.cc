// What the client's per-callee metrics add to each call (docs/observability.md): finding the
// method's counters by name, and the counts of a call that starts, sends one attempt and ends
// (three relaxed fetch_adds on the thread's shard, plus the latency's bucket and sum).
//
//   BM_Lookup          ClientCounters::Method() alone, for a typical wire name
//   BM_CallCounts      lookup + start + one attempt + end: the whole per-call cost but the
//                      clock read the end shares with the proxy
//   BM_CallCountsMT    the same from N threads on one method: each thread writes its own shard
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "trpc/client/detail/client_counters.h"

namespace trpc::detail {
namespace {

const std::string kFunc = "/trpc.test.helloworld.Greeter/SayHello";

void BM_Lookup(benchmark::State& state) {
  ClientCounters c("callee", "trpc");
  for (int i = 0; i < 8; ++i) c.Method("/trpc.test.helloworld.Greeter/Other" + std::to_string(i));
  for (auto _ : state) benchmark::DoNotOptimize(c.Method(kFunc));
}
BENCHMARK(BM_Lookup);

void OneCall(ClientCounters& c, int64_t latency) {
  ClientMethodCounters* m = c.Method(kFunc);
  m->Start();
  ClientMethodCounters::Add(m->Local().attempts);
  m->End(latency, 0, 0);
}

void BM_CallCounts(benchmark::State& state) {
  ClientCounters c("callee", "trpc");
  int64_t latency = 30'000;
  for (auto _ : state) OneCall(c, latency++ & 0xfffff);
}
BENCHMARK(BM_CallCounts);

ClientCounters g_shared("shared", "trpc");

void BM_CallCountsMT(benchmark::State& state) {
  int64_t latency = 30'000;
  for (auto _ : state) OneCall(g_shared, latency++ & 0xfffff);
}
BENCHMARK(BM_CallCountsMT)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace trpc::detail

BENCHMARK_MAIN();
