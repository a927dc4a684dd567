// MpscQueue micro-benchmarks: the uncontended cost of a push/pop pair, and throughput with two
// producer threads feeding one consumer.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "trpc/base/detail/mpsc_queue.h"

namespace trpc {
namespace {

constexpr size_t kQueueCapacity = 1024;

void BM_PushPopSingleThread(benchmark::State& state) {
  MpscQueue<uint64_t> q(kQueueCapacity);
  uint64_t v = 0;
  for (auto _ : state) {
    q.TryPush(uint64_t{v});
    q.TryPop(&v);
    benchmark::DoNotOptimize(v);
    ++v;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PushPopSingleThread);

// Each iteration: 2 producers push range(0) items each while this thread pops them all.
// Thread start-up is included; with 100k items per producer it is a small share.
void BM_TwoProducersOneConsumer(benchmark::State& state) {
  constexpr int kProducers = 2;
  const int64_t per_producer = state.range(0);
  MpscQueue<uint64_t> q(kQueueCapacity);
  uint64_t full_spins = 0;
  for (auto _ : state) {
    std::atomic<uint64_t> spins{0};
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.emplace_back([&] {
        uint64_t local_spins = 0;
        for (int64_t i = 0; i < per_producer; ++i) {
          uint64_t x = static_cast<uint64_t>(i);
          while (!q.TryPush(std::move(x))) {
            ++local_spins;
            std::this_thread::yield();
          }
        }
        spins.fetch_add(local_spins, std::memory_order_relaxed);
      });
    }
    int64_t remaining = per_producer * kProducers;
    uint64_t v;
    while (remaining > 0) {
      if (q.TryPop(&v)) {
        --remaining;
      } else {
        std::this_thread::yield();
      }
    }
    for (auto& t : producers) t.join();
    full_spins += spins.load();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * per_producer * kProducers);
  state.counters["push_full_retries"] =
      benchmark::Counter(static_cast<double>(full_spins), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_TwoProducersOneConsumer)->Arg(100000)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace trpc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("queue_capacity", std::to_string(trpc::kQueueCapacity));
  benchmark::AddCustomContext("hardware_threads",
                              std::to_string(std::thread::hardware_concurrency()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
