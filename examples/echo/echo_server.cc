// echo_server --config FILE: the echo service the benchmarks load. Serves
// trpc.test.helloworld.Greeter in the thread model the config chooses; SayHello replies with the
// request's msg unchanged (no "Hello, " prefix, so request and reply bodies are the same bytes).
//
// Long-tail injection: a request whose trans_info has `trpc-bench-tail` is delayed before the
// reply, by the load client's choice of how the time is spent:
//   sleep:<µs>  the handler waits: a fiber sleep in the fiber model (only that request waits);
//               in the merged model it blocks the worker thread and everything queued on it,
//               which is the merged model's weakness this benchmark is meant to show;
//   spin:<µs>   CPU-bound work: busy-spins on the monotonic clock (holds the worker in both).
// Either may end in "@<percent>" (1..100): then the server itself draws, per request, whether
// this one is delayed, so that a request sent twice (a hedged call) is slow on one backend and
// not on another, as a backend's own hiccups are.
// A malformed value is ignored (the request is answered at once) and logged, rate-limited.
//
// Prints "echo_server ready on IP:PORT" once serving (the bound port, so a config may say
// port 0), then runs until SIGINT or SIGTERM.

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/fiber/fiber.h"

namespace {

constexpr std::string_view kServiceName = "trpc.test.helloworld.Greeter";
constexpr std::string_view kTailKey = "trpc-bench-tail";
// Longer delays are refused as malformed: a typo must not park a worker for minutes.
constexpr int64_t kMaxTailMicros = 10'000'000;

enum class TailKind { kNone, kSleep, kSpin };

struct Tail {
  TailKind kind = TailKind::kNone;
  int64_t micros = 0;
  int percent = 100;  // the share of such requests delayed, drawn by the server
};

// Parses "sleep:<µs>[@<percent>]" or "spin:<µs>[@<percent>]" (decimal, 0..kMaxTailMicros,
// 1..100); kNone for anything else.
Tail ParseTail(std::string_view value) {
  Tail tail;
  if (size_t at = value.find('@'); at != std::string_view::npos) {
    std::string_view pct = value.substr(at + 1);
    auto [p, e] = std::from_chars(pct.data(), pct.data() + pct.size(), tail.percent);
    if (pct.empty() || e != std::errc() || p != pct.data() + pct.size() || tail.percent < 1 ||
        tail.percent > 100) {
      return Tail{};
    }
    value = value.substr(0, at);
  }
  std::string_view digits;
  if (value.starts_with("sleep:")) {
    tail.kind = TailKind::kSleep;
    digits = value.substr(6);
  } else if (value.starts_with("spin:")) {
    tail.kind = TailKind::kSpin;
    digits = value.substr(5);
  } else {
    return Tail{};
  }
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, tail.micros);
  if (digits.empty() || ec != std::errc() || ptr != end || tail.micros < 0 ||
      tail.micros > kMaxTailMicros) {
    return Tail{};
  }
  return tail;
}

void SpendTail(const Tail& tail) {
  if (tail.percent < 100) {
    thread_local std::minstd_rand rng(std::random_device{}());
    if (static_cast<int>(rng() % 100) >= tail.percent) return;
  }
  if (tail.kind == TailKind::kSleep) {
    trpc::fiber::this_fiber::SleepFor(std::chrono::microseconds(tail.micros));
  } else if (tail.kind == TailKind::kSpin) {
    int64_t until = trpc::MonotonicNanos() + tail.micros * trpc::kNanosPerMicro;
    while (trpc::MonotonicNanos() < until) {
    }
  }
}

class EchoGreeter final : public trpc::test::helloworld::Greeter {
 public:
  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    const trpc::TransInfo& info = ctx->GetPbReqTransInfo();
    // Untagged requests (nearly all of them) cost one lookup in a usually empty map.
    if (!info.empty()) {
      auto it = info.find(std::string(kTailKey));
      if (it != info.end()) {
        Tail tail = ParseTail(it->second);
        if (tail.kind == TailKind::kNone) {
          TRPC_LOG_EVERY_MS(trpc::log::Level::kWarn, 1000,
                            "echo_server: ignoring malformed {} '{}' (want sleep:<us> or "
                            "spin:<us>, at most {} us, optionally @<percent>)",
                            kTailKey, it->second, kMaxTailMicros);
        }
        SpendTail(tail);
      }
    }
    rsp->set_msg(req->msg());
    return trpc::kSuccStatus;
  }
};

class EchoServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    RegisterService(std::string(kServiceName), std::make_shared<EchoGreeter>());
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  EchoServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  trpc::NetAddress addr;
  if (!app.GetServer()->GetAddress(std::string(kServiceName), &addr)) {
    std::fprintf(stderr, "%s: the config serves no %s\n", argv[0], kServiceName.data());
    app.Terminate();
    app.Wait();
    return 1;
  }
  std::printf("echo_server ready on %s\n", addr.ToString().c_str());
  std::fflush(stdout);
  app.Wait();
  return 0;
}
