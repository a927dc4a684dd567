// trpc_bench: a closed-loop load client for trpc echo servers, built on the framework's reactor,
// client connections and codec. Each worker thread owns a reactor and its share of the
// connections; every connection keeps --inflight calls outstanding and sends the next one as
// soon as a reply arrives. Latency is measured per call with the monotonic clock into a
// per-thread HDR-style histogram (µs), merged at the end. Warm-up calls are not counted.
//
// (The load-client issue extends this with open-loop rates, JSON output and tail injection.)

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.pb.h"
#include "trpc/base/clock.h"
#include "trpc/base/histogram.h"
#include "trpc/codec/codec.h"
#include "trpc/reactor/reactor.h"
#include "trpc/transport/client_connection.h"

namespace {

struct Options {
  std::string target = "127.0.0.1:12345";
  std::string func = "/trpc.test.helloworld.Greeter/SayHello";
  int connections = 100;
  int inflight = 1;
  int threads = 1;
  double duration_s = 10;
  double warmup_s = 1;
  int payload_size = 10;
  int timeout_ms = 1000;
  int server_pid = 0;
  std::vector<int> cpus;
};

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--target ip:port] [--connections N] [--inflight N] [--threads N]\n"
               "          [--duration S] [--warmup S] [--payload-size BYTES] [--timeout MS]\n"
               "          [--func /pkg.Service/Method] [--cpus 0,1] [--server-pid PID]\n",
               argv0);
}

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--help" || a == "-h") return false;
    v = next();
    if (v == nullptr) return false;
    if (a == "--target") o->target = v;
    else if (a == "--func") o->func = v;
    else if (a == "--connections") o->connections = std::atoi(v);
    else if (a == "--inflight") o->inflight = std::atoi(v);
    else if (a == "--threads") o->threads = std::atoi(v);
    else if (a == "--duration") o->duration_s = std::atof(v);
    else if (a == "--warmup") o->warmup_s = std::atof(v);
    else if (a == "--payload-size") o->payload_size = std::atoi(v);
    else if (a == "--timeout") o->timeout_ms = std::atoi(v);
    else if (a == "--server-pid") o->server_pid = std::atoi(v);
    else if (a == "--cpus") {
      for (char* p = std::strtok(const_cast<char*>(v), ","); p; p = std::strtok(nullptr, ",")) {
        o->cpus.push_back(std::atoi(p));
      }
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return false;
    }
  }
  return o->connections > 0 && o->inflight > 0 && o->threads > 0 && o->duration_s > 0 &&
         o->payload_size >= 0 && o->threads <= o->connections;
}

// utime + stime of a process in microseconds, from /proc/PID/stat.
int64_t ProcessCpuMicros(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return -1;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may contain spaces
  if (!p) return -1;
  unsigned long utime = 0, stime = 0;
  // Fields after ')': state(3) ... utime is field 14, stime 15.
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                  &stime) != 2) {
    return -1;
  }
  return static_cast<int64_t>(utime + stime) * 1'000'000 / sysconf(_SC_CLK_TCK);
}

class Worker {
 public:
  Worker(const Options& o, int index, int conns, std::shared_ptr<trpc::ClientCodec> codec)
      : o_(o), index_(index), conns_(conns), codec_(std::move(codec)) {
    req_.set_msg(std::string(o.payload_size, 'x'));
    // One request header reused for every call; only the id changes.
    header_.timeout_ms = static_cast<uint32_t>(o.timeout_ms);
    header_.callee = "trpc.test.helloworld.Greeter";
    header_.func = o.func;
  }

  void Run(int64_t measure_start_ns, int64_t measure_end_ns) {
    if (!o_.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(o_.cpus[index_ % o_.cpus.size()], &set);
      sched_setaffinity(0, sizeof(set), &set);
    }
    trpc::NetAddress addr;
    trpc::NetAddress::Parse(o_.target, &addr);
    measure_start_ns_ = measure_start_ns;
    measure_end_ns_ = measure_end_ns;
    reactor_.Post([this, addr] {
      trpc::ConnectionOptions copts;
      copts.idle_timeout_ms = 0;
      copts.max_packet_size = 0xFFFFFFFFu;
      for (int i = 0; i < conns_; ++i) {
        auto c = std::make_shared<trpc::ClientConnection>(&reactor_, addr, codec_.get(), copts);
        std::string err;
        if (!c->Connect(&err)) {
          std::fprintf(stderr, "%s\n", err.c_str());
          continue;
        }
        clients_.push_back(c);
        for (int k = 0; k < o_.inflight; ++k) SendNext(c.get());
      }
      reactor_.AddTimer(measure_end_ns_, [this] { stopping_ = true; });
      // Give outstanding calls their timeout to finish, then stop.
      reactor_.AddTimer(measure_end_ns_ + o_.timeout_ms * trpc::kNanosPerMilli + 1, [this] {
        for (auto& c : clients_) c->Close("bench done");
        reactor_.Stop();
      });
    });
    reactor_.Run();
  }

  const trpc::Histogram& histogram() const { return hist_; }
  const std::map<int, uint64_t>& errors() const { return errors_; }
  uint64_t completed() const { return completed_.load(std::memory_order_relaxed); }

 private:
  void SendNext(trpc::ClientConnection* c) {
    if (stopping_ || !c->usable()) return;
    header_.request_id = c->NextRequestId();
    trpc::ChainBuffer buf;
    codec_->EncodeRequest(&header_, &req_, &buf);
    int64_t start = trpc::MonotonicNanos();
    c->Call(header_.request_id, std::move(buf), start + o_.timeout_ms * trpc::kNanosPerMilli,
            [this, c, start](trpc::Status st, trpc::ChainBuffer&& frame) {
              int64_t now = trpc::MonotonicNanos();
              // Counted by start time only: a slow call that started in the window counts even
              // if it ends after it (the run waits out the timeout before closing).
              bool measured = start >= measure_start_ns_ && start < measure_end_ns_;
              int code = st.GetFrameworkRetCode();
              if (st.OK()) {
                trpc::RpcResponse rsp;
                std::string err;
                if (!codec_->DecodeResponse(std::move(frame), &rsp, &err)) {
                  code = trpc::kClientDecodeErr;
                } else {
                  code = rsp.ret != 0 ? rsp.ret : rsp.func_ret;
                }
              }
              if (measured) {
                if (code == 0) {
                  hist_.Record((now - start) / 1000);
                  completed_.fetch_add(1, std::memory_order_relaxed);
                } else {
                  ++errors_[code];
                }
              }
              SendNext(c);
            });
  }

  const Options& o_;
  int index_;
  int conns_;
  std::shared_ptr<trpc::ClientCodec> codec_;
  trpc::test::helloworld::HelloRequest req_;
  trpc::RpcRequest header_;
  trpc::Reactor reactor_;
  std::vector<std::shared_ptr<trpc::ClientConnection>> clients_;
  trpc::Histogram hist_;
  std::map<int, uint64_t> errors_;
  std::atomic<uint64_t> completed_{0};
  int64_t measure_start_ns_ = 0;
  int64_t measure_end_ns_ = 0;
  bool stopping_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    Usage(argv[0]);
    return 2;
  }
  trpc::NetAddress addr;
  if (!trpc::NetAddress::Parse(o.target, &addr)) {
    std::fprintf(stderr, "bad --target %s\n", o.target.c_str());
    return 2;
  }
  auto codec = trpc::CodecRegistry::Instance().GetClient("trpc");
  if (!codec) {
    std::fprintf(stderr, "trpc codec not linked\n");
    return 1;
  }
  std::printf("trpc_bench: target=%s func=%s connections=%d inflight=%d threads=%d "
              "payload=%dB duration=%.1fs warmup=%.1fs timeout=%dms\n",
              o.target.c_str(), o.func.c_str(), o.connections, o.inflight, o.threads,
              o.payload_size, o.duration_s, o.warmup_s, o.timeout_ms);
  int64_t start = trpc::MonotonicNanos();
  int64_t measure_start = start + static_cast<int64_t>(o.warmup_s * 1e9);
  int64_t measure_end = measure_start + static_cast<int64_t>(o.duration_s * 1e9);
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    int conns = o.connections / o.threads + (t < o.connections % o.threads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(o, t, conns, codec));
  }
  for (auto& w : workers) {
    threads.emplace_back([&w, measure_start, measure_end] { w->Run(measure_start, measure_end); });
  }
  // Per-second progress, and the server's CPU over exactly the measured window.
  std::this_thread::sleep_for(std::chrono::nanoseconds(measure_start - trpc::MonotonicNanos()));
  int64_t server_cpu_start = o.server_pid ? ProcessCpuMicros(o.server_pid) : -1;
  int64_t self_cpu_start = ProcessCpuMicros(getpid());
  uint64_t last = 0;
  for (int sec = 1; trpc::MonotonicNanos() < measure_end; ++sec) {
    int64_t wake = std::min<int64_t>(measure_start + sec * trpc::kNanosPerSecond, measure_end);
    std::this_thread::sleep_for(std::chrono::nanoseconds(wake - trpc::MonotonicNanos()));
    uint64_t done = 0;
    for (auto& w : workers) done += w->completed();
    std::printf("[%3ds] qps %" PRIu64 "\n", sec, done - last);
    std::fflush(stdout);
    last = done;
  }
  int64_t server_cpu_end = o.server_pid ? ProcessCpuMicros(o.server_pid) : -1;
  int64_t self_cpu_end = ProcessCpuMicros(getpid());
  for (auto& t : threads) t.join();

  trpc::Histogram all;
  std::map<int, uint64_t> errors;
  for (auto& w : workers) {
    all.Merge(w->histogram());
    for (auto [code, n] : w->errors()) errors[code] += n;
  }
  double qps = all.Count() / o.duration_s;
  std::printf("\n%-10s %-9s %-9s %-9s %-9s %-9s %-9s %s\n", "QPS", "avg(us)", "P50", "P90", "P99",
              "P999", "max", "errors");
  std::string err_text;
  for (auto [code, n] : errors) err_text += std::to_string(code) + ":" + std::to_string(n) + " ";
  std::printf("%-10.0f %-9.1f %-9" PRId64 " %-9" PRId64 " %-9" PRId64 " %-9" PRId64 " %-9" PRId64
              " %s\n",
              qps, all.Mean(), all.ValueAtPercentile(50), all.ValueAtPercentile(90),
              all.ValueAtPercentile(99), all.ValueAtPercentile(99.9), all.Max(),
              err_text.empty() ? "0" : err_text.c_str());
  double self_cpu = (self_cpu_end - self_cpu_start) / 1e6 / o.duration_s;
  std::printf("client cpu: %.0f%% of one core\n", self_cpu * 100);
  if (o.server_pid && server_cpu_start >= 0 && server_cpu_end >= 0 && all.Count() > 0) {
    std::printf("server cpu: %.2f us/request (%.0f%% of one core)\n",
                static_cast<double>(server_cpu_end - server_cpu_start) / all.Count(),
                (server_cpu_end - server_cpu_start) / 1e6 / o.duration_s * 100);
  }
  if (self_cpu > 0.9 * o.threads) {
    std::printf("warning: the client used %.0f%% of its %d thread(s): it may be the bottleneck\n",
                self_cpu * 100, o.threads);
  }
  return 0;
}
