// Load balancer micro-benchmarks: the cost of one Pick() over 100 endpoints for round_robin,
// weighted_round_robin (random weights 1..100), consistent_hash (random precomputed keys) and
// p2c, on one thread and on two threads sharing one picker (as a service proxy's callers do:
// the shared cursors of the round robins then bounce between cores).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trpc/naming/lb/detail/load_balancers.h"
#include "trpc/naming/load_balancer.h"

namespace trpc::naming {
namespace {

constexpr int kEndpoints = 100;
constexpr size_t kKeys = 4096;  // a power of 2: the key index is a mask

// One picker of each kind over the same 100 endpoints, made once and shared by every
// benchmark thread (a function-local static: made before any thread picks).
struct Fixture {
  Fixture() : stats(new EndpointStats[kEndpoints]) {
    RegisterLoadBalancers();
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<uint32_t> weight(1, 100);
    for (int i = 0; i < kEndpoints; ++i) {
      BalancerEndpoint ep;
      NetAddress::FromIpPort("10.1." + std::to_string(i / 250) + "." + std::to_string(i % 250 + 1),
                             8000, &ep.addr);
      ep.name = ep.addr.ToString();
      ep.weight = weight(rng);
      ep.stats = &stats[i];
      // Live-looking figures for p2c: a few calls in flight, latencies around 1 ms.
      stats[i].in_flight.store(static_cast<int32_t>(rng() % 4));
      stats[i].ewma_latency_ns.store(static_cast<int64_t>(500000 + rng() % 1000000));
      endpoints.push_back(ep);
    }
    for (size_t i = 0; i < kKeys; ++i) keys.push_back(rng());
    for (const char* name : {"round_robin", "weighted_round_robin", "consistent_hash", "p2c"}) {
      pickers.push_back(LoadBalancerFactory::Find(name)(endpoints));
    }
  }
  std::unique_ptr<EndpointStats[]> stats;
  std::vector<BalancerEndpoint> endpoints;
  std::vector<uint64_t> keys;
  std::vector<std::unique_ptr<Picker>> pickers;  // in the order of the names above
};

Fixture& Get() {
  static Fixture fixture;
  return fixture;
}

void PickLoop(benchmark::State& state, Picker* picker, bool keyed) {
  const std::vector<uint64_t>& keys = Get().keys;
  PickInput in;
  in.has_hash_key = keyed;
  size_t i = static_cast<size_t>(state.thread_index()) * 997;
  for (auto _ : state) {
    in.hash_key = keys[i++ & (kKeys - 1)];
    benchmark::DoNotOptimize(picker->Pick(in));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_RoundRobin(benchmark::State& state) { PickLoop(state, Get().pickers[0].get(), false); }
void BM_WeightedRoundRobin(benchmark::State& state) {
  PickLoop(state, Get().pickers[1].get(), false);
}
void BM_ConsistentHash(benchmark::State& state) { PickLoop(state, Get().pickers[2].get(), true); }
void BM_P2c(benchmark::State& state) { PickLoop(state, Get().pickers[3].get(), false); }

BENCHMARK(BM_RoundRobin)->Threads(1)->Threads(2);
BENCHMARK(BM_WeightedRoundRobin)->Threads(1)->Threads(2);
BENCHMARK(BM_ConsistentHash)->Threads(1)->Threads(2);
BENCHMARK(BM_P2c)->Threads(1)->Threads(2);

}  // namespace
}  // namespace trpc::naming

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("endpoints", std::to_string(trpc::naming::kEndpoints));
  benchmark::AddCustomContext("hardware_threads",
                              std::to_string(std::thread::hardware_concurrency()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
