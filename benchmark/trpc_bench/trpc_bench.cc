// trpc_bench: the load client (docs/benchmark.md). Closed loop (--connections x
// --inflight) or open loop at a fixed rate (--qps) with coordinated-omission correction, on the
// framework's reactor, ClientConnection and codec registry. Worker threads (worker.h) do the
// calls; this file parses the options, starts and times the workers, prints progress, and
// assembles the report (report.h). Usage and JSON keys: benchmark/trpc_bench/README.md.

#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benchmark/trpc_bench/coordinator.h"
#include "benchmark/trpc_bench/cpu_time.h"
#include "benchmark/trpc_bench/options.h"
#include "benchmark/trpc_bench/report.h"
#include "benchmark/trpc_bench/share_gate.h"
#include "benchmark/trpc_bench/worker.h"
#include "examples/helloworld/helloworld.pb.h"
#include "fmt/format.h"
#include "trpc/base/clock.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/transport/socket.h"
#include "trpc/transport/tls_context.h"

namespace trpc::bench {
namespace {

constexpr int kExitConnectFailed = 1;
constexpr int kExitBadUsage = 2;
// Workers get this long to connect, and this lead before the plan starts so that every thread
// has its start task in hand by then.
constexpr int64_t kReadyTimeoutNs = 10 * kNanosPerSecond;
constexpr int64_t kStartLeadNs = 5 * kNanosPerMilli;
// How long a progress round waits for the workers' snapshots.
constexpr int64_t kProgressWaitNs = 200 * kNanosPerMilli;

// One blocking connect, so that "nothing listens there" is a clear error and exit code before
// any load starts.
bool ProbeConnect(const NetAddress& addr, int timeout_ms, std::string* err) {
  int fd = socket_ops::Connect(addr);
  if (fd < 0) {
    *err = std::strerror(-fd);
    return false;
  }
  pollfd p{fd, POLLOUT, 0};
  int n = ::poll(&p, 1, timeout_ms);
  int so_error = n > 0 ? socket_ops::GetSocketError(fd) : 0;
  ::close(fd);
  if (n <= 0) {
    *err = n == 0 ? fmt::format("no answer within {} ms", timeout_ms) : std::strerror(errno);
    return false;
  }
  if (so_error != 0) {
    *err = std::strerror(so_error);
    return false;
  }
  return true;
}

// Many connections need many fds: take the hard limit.
void RaiseFdLimit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

void SleepUntil(int64_t deadline_ns) {
  int64_t left = deadline_ns - MonotonicNanos();
  if (left > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(left));
}

int Main(int argc, char** argv) {
  Options o;
  std::string err;
  switch (ParseOptions(argc, argv, &o, &err)) {
    case ParseResult::kHelp:
      std::fputs(UsageText(argv[0]).c_str(), stdout);
      return 0;
    case ParseResult::kBadUsage:
      std::fprintf(stderr, "trpc_bench: %s (see --help)\n", err.c_str());
      return kExitBadUsage;
    case ParseResult::kRun:
      break;
  }
  if (!o.payload_file.empty()) {
    std::ifstream in(o.payload_file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "trpc_bench: cannot read --payload-file %s\n", o.payload_file.c_str());
      return kExitBadUsage;
    }
    o.payload.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } else {
    o.payload.assign(o.payload_size, 'x');
  }
  std::shared_ptr<ClientCodec> codec = CodecRegistry::Instance().GetClient(o.protocol);
  if (!codec) {
    std::fprintf(stderr, "trpc_bench: protocol %s is not linked in\n", o.protocol.c_str());
    return kExitBadUsage;
  }
  if (o.tls) {
    TlsConfig tls;
    tls.enable = true;
    tls.ca_cert_path = o.tls_ca;
    tls.cert_path = o.tls_cert;
    tls.private_key_path = o.tls_key;
    tls.sni_name = o.tls_sni;
    tls.insecure = o.tls_insecure;
    tls.origin = "trpc_bench --tls";
    o.tls_context = TlsContext::Create(tls, TlsRole::kClient, codec->Alpn(), &err);
    if (o.tls_context == nullptr) {
      std::fprintf(stderr, "trpc_bench: %s\n", err.c_str());
      return kExitBadUsage;
    }
  }
  {
    // Encode one request here: a --func or payload the codec refuses is a usage error.
    RpcRequest req;
    req.callee = o.Callee();
    req.func = o.func;
    test::helloworld::HelloRequest body;
    body.set_msg(o.payload);
    ChainBuffer frame;
    bool encoded = o.http() ? Worker::EncodeHttpRequest(o, codec.get(), nullptr, &frame)
                            : codec->EncodeRequest(&req, &body, &frame);
    if (!encoded) {
      std::fprintf(stderr, "trpc_bench: cannot encode a request for %s\n",
                   o.http() ? o.http_path.c_str() : o.func.c_str());
      return kExitBadUsage;
    }
  }
  // With the JSON on stdout, the human-readable report goes to stderr.
  FILE* out = o.json_path == "-" ? stderr : stdout;
  NetAddress addr;
  NetAddress::Parse(o.target, &addr);
  if (!ProbeConnect(addr, std::min(o.timeout_ms, 5000), &err)) {
    std::fprintf(stderr, "trpc_bench: cannot connect to %s: %s\n", o.target.c_str(), err.c_str());
    return kExitConnectFailed;
  }
  RaiseFdLimit();
  PrintSettings(out, o);

  Coordinator coordinator;
  // --hot-share in the closed loop: the gate that holds the share. Its windows (how far a side
  // may run ahead) are each side's calls in flight at most, so neither waits while the other
  // still has its own calls to send.
  std::unique_ptr<ShareGate> gate;
  if (o.hot_on() && !o.open_loop()) {
    gate = std::make_unique<ShareGate>(o.hot_share, o.hot_inflight,
                                       (o.connections - 1) * o.inflight, o.threads);
  }
  // --requests: the hot connection's share of them is its own; the rest are split as usual.
  uint64_t hot_quota = UINT64_MAX;
  uint64_t rest = o.requests;
  if (o.requests > 0 && o.hot_on()) {
    hot_quota = std::llround(o.requests * o.hot_share);
    rest = o.requests - hot_quota;
  }
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) {
    int conns = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    uint64_t quota = UINT64_MAX;
    if (o.requests > 0) quota = rest / o.threads + (t < int(rest % o.threads) ? 1 : 0);
    workers.push_back(
        std::make_unique<Worker>(o, t, conns, quota, hot_quota, codec, &coordinator, gate.get()));
    if (gate) gate->SetWaker(t, [w = workers.back().get()] { w->WakeParked(); });
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&w] { w->Run(); });
  if (!coordinator.WaitReady(o.threads, MonotonicNanos() + kReadyTimeoutNs)) {
    std::fprintf(stderr, "trpc_bench: the worker threads did not start\n");
    std::_Exit(kExitConnectFailed);
  }

  Schedule sched;
  sched.start_ns = MonotonicNanos() + kStartLeadNs;
  sched.measure_start_ns = sched.start_ns + static_cast<int64_t>(o.warmup_s * 1e9);
  sched.measure_end_ns = o.duration_s > 0
                             ? sched.measure_start_ns + static_cast<int64_t>(o.duration_s * 1e9)
                             : INT64_MAX;
  for (auto& w : workers) w->Start(sched);

  // The measured window: CPU times at both ends, a progress line every second. It ends at the
  // duration, or (with --requests) once every worker has had its last measured reply.
  SleepUntil(sched.measure_start_ns);
  int64_t self_cpu_start = SelfCpuMicros();
  int64_t server_cpu_start = o.server_pid > 0 ? ProcessCpuMicros(o.server_pid) : -1;
  if (o.server_pid > 0 && server_cpu_start < 0) {
    std::fprintf(stderr, "trpc_bench: cannot read /proc/%d/stat: no server CPU figures\n",
                 o.server_pid);
  }
  bool finished_early = false;
  for (int second = 1;; ++second) {
    int64_t tick = sched.measure_start_ns + second * kNanosPerSecond;
    int64_t wake = std::min(tick, sched.measure_end_ns);
    // Only a --requests run ends before its duration; a timed one runs the whole window even if
    // the open-loop plan is sent and answered a little before its end.
    if (o.requests > 0 && coordinator.WaitFinished(o.threads, wake)) {
      finished_early = true;
      break;
    }
    SleepUntil(wake);
    if (wake == tick && !o.quiet) {
      coordinator.BeginRound(second);
      for (auto& w : workers) w->SnapshotInterval(second);
      IntervalStats interval;
      coordinator.CollectRound(second, o.threads, MonotonicNanos() + kProgressWaitNs, &interval);
      PrintProgress(out, second, interval);
    }
    if (wake >= sched.measure_end_ns) break;
  }
  int64_t window_end = finished_early ? coordinator.last_done_ns() : sched.measure_end_ns;
  int64_t self_cpu_end = SelfCpuMicros();
  int64_t server_cpu_end = server_cpu_start >= 0 ? ProcessCpuMicros(o.server_pid) : -1;

  // Calls in flight at the end of the window still count: wait for them (each completes within
  // its timeout), then stop.
  int64_t drain_deadline = MonotonicNanos() + o.timeout_ms * kNanosPerMilli + kNanosPerSecond;
  if (!coordinator.WaitFinished(o.threads, drain_deadline)) {
    std::fprintf(stderr, "trpc_bench: calls still in flight after the timeout; not counted\n");
  }
  for (auto& w : workers) w->Stop();
  for (auto& t : threads) t.join();

  RunResult r;
  for (auto& w : workers) r.stats.Merge(w->stats());
  r.window_s = std::max<int64_t>(0, window_end - sched.measure_start_ns) / 1e9;
  r.client_cpu_percent = r.window_s > 0 ? (self_cpu_end - self_cpu_start) / r.window_s / 1e4 : 0;
  if (server_cpu_start >= 0 && server_cpu_end >= 0) {
    r.server_cpu_us = server_cpu_end - server_cpu_start;
  }
  CheckClientHealth(o, &r);
  PrintReport(out, o, r);
  if (!o.json_path.empty()) {
    std::string json = ToJson(o, r);
    if (o.json_path == "-") {
      std::fputs(json.c_str(), stdout);
    } else {
      std::ofstream f(o.json_path, std::ios::binary | std::ios::trunc);
      f << json;
      if (!f.good()) {
        std::fprintf(stderr, "trpc_bench: cannot write %s\n", o.json_path.c_str());
        return kExitBadUsage;
      }
    }
  }
  // Nothing ever answered and the connections failed: the server was never reachable.
  if (r.stats.responses == 0 && r.stats.errors.count(std::to_string(kClientConnectErr)) > 0) {
    return kExitConnectFailed;
  }
  return 0;
}

}  // namespace
}  // namespace trpc::bench

int main(int argc, char** argv) { return trpc::bench::Main(argc, argv); }
