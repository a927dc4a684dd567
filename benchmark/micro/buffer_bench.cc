// ChainBuffer micro-benchmarks: the hot paths of a connection's read and write sides.
#include <benchmark/benchmark.h>
#include <sys/uio.h>

#include <string>

#include "trpc/base/chain_buffer.h"

namespace trpc {
namespace {

using detail::kBlockCapacity;

// Appending a small field (a header, a length prefix): a memcpy into the thread's write block
// plus a merge into the last ref. The buffer is dropped every 1 MiB so memory stays bounded.
void BM_Append10Bytes(benchmark::State& state) {
  const char data[10] = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'};
  ChainBuffer buf;
  for (auto _ : state) {
    buf.Append(data, sizeof(data));
    if (buf.size() >= (1u << 20)) buf.Clear();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 10);
}
BENCHMARK(BM_Append10Bytes);

// A framer's loop: bytes arrive, whole 95-byte frames are cut off the front without copying.
void BM_AppendCutFrames95(benchmark::State& state) {
  std::string frame(95, 'f');
  ChainBuffer in;
  for (auto _ : state) {
    in.Append(frame);
    ChainBuffer one = in.Cut(frame.size());
    benchmark::DoNotOptimize(one.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * frame.size()));
}
BENCHMARK(BM_AppendCutFrames95);

// Building a writev() list for a buffer of range(0) bytes.
void BM_ExportIovecs(benchmark::State& state) {
  std::string chunk(static_cast<size_t>(state.range(0)), 'x');
  ChainBuffer buf;
  buf.Append(chunk);
  iovec iov[64];
  size_t n = 0;
  for (auto _ : state) {
    n = buf.ExportIovecs(iov, 64);
    benchmark::DoNotOptimize(iov[0].iov_base);
  }
  state.counters["iovecs"] = static_cast<double>(n);
}
BENCHMARK(BM_ExportIovecs)->Arg(100)->Arg(16 * 1024)->Arg(256 * 1024);

}  // namespace
}  // namespace trpc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("block_capacity", std::to_string(trpc::detail::kBlockCapacity));
#ifdef NDEBUG
  benchmark::AddCustomContext("trpc_build", "NDEBUG");
#else
  benchmark::AddCustomContext("trpc_build", "debug (asserts on): numbers not representative");
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
