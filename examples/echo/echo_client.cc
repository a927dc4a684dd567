// echo_client --config FILE [--count N] [--msg TEXT] [--tail sleep:<us>[@<pct>]]: calls
// echo_server's Greeter.SayHello N times synchronously and N times asynchronously (all in flight
// at once) and checks that every reply's msg equals the request's. With --tail every request
// carries trans_info `trpc-bench-tail` = the value given (sleep:<us> or spin:<us>, optionally
// @<percent>), which echo_server honours by delaying the reply; the client prints how long the
// calls took. Exits non-zero on any failed call or mismatched reply.
// In the fiber model the calls are made from a fiber (RunInTrpcRuntime).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/run_in_trpc_runtime.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"

namespace {

using trpc::test::helloworld::GreeterServiceProxy;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

constexpr char kTailKey[] = "trpc-bench-tail";

// A client context, tagged for echo_server's delay when `tail` is not empty.
trpc::ClientContextPtr MakeContext(const std::string& tail) {
  trpc::ClientContextPtr ctx = trpc::MakeClientContext();
  if (!tail.empty()) ctx->AddReqTransInfo(kTailKey, tail);
  return ctx;
}

double MillisSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

int CallEcho(int count, const std::string& msg, const std::string& tail) {
  // Created from the `client.service[]` entry of that name.
  auto echo = trpc::GetTrpcClient()->GetProxy<GreeterServiceProxy>("trpc.test.helloworld.Greeter");
  if (!echo) return 1;
  int failures = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < count; ++i) {
    HelloRequest req;
    req.set_msg(msg + std::to_string(i));
    HelloReply rsp;
    trpc::Status st = echo->SayHello(MakeContext(tail), req, &rsp);
    if (!st.OK() || rsp.msg() != req.msg()) {
      std::fprintf(stderr, "sync call %d failed: %s (sent '%s', got '%s')\n", i,
                   st.ToString().c_str(), req.msg().c_str(), rsp.msg().c_str());
      ++failures;
    }
  }
  double sync_ms = MillisSince(start);
  // All asynchronous calls in flight at once, then one wait for all of them.
  start = std::chrono::steady_clock::now();
  std::vector<trpc::Future<HelloReply>> replies;
  for (int i = 0; i < count; ++i) {
    HelloRequest req;
    req.set_msg(msg + std::to_string(count + i));
    replies.push_back(echo->AsyncSayHello(MakeContext(tail), req));
  }
  auto all = trpc::BlockingGet(trpc::WhenAll(std::move(replies))).GetValue();
  double async_ms = MillisSince(start);
  for (int i = 0; i < count; ++i) {
    std::string want = msg + std::to_string(count + i);
    if (!all[i].IsReady()) {
      std::fprintf(stderr, "async call %d failed: %s\n", i,
                   all[i].GetException().ToString().c_str());
      ++failures;
    } else if (all[i].GetValue().msg() != want) {
      std::fprintf(stderr, "async call %d: sent '%s', got '%s'\n", i, want.c_str(),
                   all[i].GetValue().msg().c_str());
      ++failures;
    }
  }
  std::printf("%d sync calls in %.1f ms, %d async calls in %.1f ms%s%s, %d failed\n", count,
              sync_ms, count, async_ms, tail.empty() ? "" : ", tagged ", tail.c_str(), failures);
  return failures == 0 ? 0 : 1;
}

// The shapes echo_server accepts: sleep:<us> or spin:<us>, optionally @<1..100>. Checked here
// only so that a typo is a usage error rather than silently undelayed calls.
bool ValidTail(const std::string& tail) {
  std::string rest;
  if (tail.starts_with("sleep:")) {
    rest = tail.substr(6);
  } else if (tail.starts_with("spin:")) {
    rest = tail.substr(5);
  } else {
    return false;
  }
  size_t at = rest.find('@');
  std::string micros = rest.substr(0, at);
  auto all_digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 8 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!all_digits(micros) || std::atol(micros.c_str()) > 10'000'000) return false;
  if (at == std::string::npos) return true;
  std::string pct = rest.substr(at + 1);
  return all_digits(pct) && std::atoi(pct.c_str()) >= 1 && std::atoi(pct.c_str()) <= 100;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string msg = "echo";
  std::string tail;
  int count = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config_path = argv[++i];
    } else if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--msg") == 0 && i + 1 < argc) {
      msg = argv[++i];
    } else if (std::strcmp(argv[i], "--tail") == 0 && i + 1 < argc) {
      tail = argv[++i];
    } else {
      config_path.clear();
      break;
    }
  }
  if (config_path.empty() || count < 1 || (!tail.empty() && !ValidTail(tail))) {
    std::fprintf(stderr,
                 "usage: %s --config FILE [--count N] [--msg TEXT] "
                 "[--tail sleep:<us>[@<pct>] | spin:<us>[@<pct>]]\n",
                 argv[0]);
    return 2;
  }
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfig(config_path, &config, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return trpc::RunInTrpcRuntime(config, [&] { return CallEcho(count, msg, tail); });
}
