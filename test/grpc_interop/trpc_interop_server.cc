// trpc_interop_server --port P --trpc-port Q --model merge|fiber [--workers N]: our gRPC interop
// TestService (trpc_interop_service.cc: every unary and streaming method, with the interop
// behaviours) served by the framework over gRPC on P and over trpc on Q, for real gRPC clients
// and for our own client. 0 (the default for both ports) picks a free port.
//
// Once both listen it prints one line and serves until SIGTERM or SIGINT (then exits 0):
//   trpc_interop_server ready on grpc 127.0.0.1:41715 trpc 127.0.0.1:40311
// Bad usage exits 2, a failed start 1 (with the reason on stderr).

#include <signal.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "test/common/thread_model_yaml.h"
#include "test/grpc_interop/trpc_interop_service.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/server.h"

namespace {

int Usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(stderr,
               "usage: %s [--port N] [--trpc-port N] [--model merge|fiber] [--workers N]\n"
               "  (ports default to 0: a free port; model to merge; workers to 2)\n",
               argv0);
  return 2;
}

bool ParseInt(std::string_view text, int lo, int hi, int* out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size() && *out >= lo && *out <= hi;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 0;
  int trpc_port = 0;
  int workers = 2;
  std::string model = "merge";
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view name = a.substr(0, a.find('='));
    std::string value;
    if (a.find('=') != std::string_view::npos) {
      value = a.substr(a.find('=') + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage(argv[0], "no value for " + std::string(a));
    }
    if (name == "--port") {
      if (!ParseInt(value, 0, 65535, &port)) return Usage(argv[0], "bad --port " + value);
    } else if (name == "--trpc-port") {
      if (!ParseInt(value, 0, 65535, &trpc_port)) {
        return Usage(argv[0], "bad --trpc-port " + value);
      }
    } else if (name == "--workers") {
      if (!ParseInt(value, 1, 256, &workers)) return Usage(argv[0], "bad --workers " + value);
    } else if (name == "--model") {
      if (value != "merge" && value != "fiber") return Usage(argv[0], "bad --model " + value);
      model = value;
    } else {
      return Usage(argv[0], "unknown option " + std::string(a));
    }
  }
  // Blocked before the runtime starts its threads, so they inherit the mask and only sigwait()
  // below receives the stop signals.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  const std::string yaml =
      trpc::testing::ThreadModelYaml(model == "fiber", {{"interop", workers}}) +
      "server:\n  service:\n"
      "    - name: grpc.testing.TestService\n      protocol: grpc\n      ip: 127.0.0.1\n"
      "      port: " +
      std::to_string(port) +
      "\n      timeout: 10000\n"
      "    - name: interop_over_trpc\n      protocol: trpc\n      ip: 127.0.0.1\n"
      "      port: " +
      std::to_string(trpc_port) + "\n";
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfigFromString(yaml, "trpc_interop_server.yaml", &config, &err) ||
      !trpc::runtime::Start(config.global.threadmodel, &err)) {
    std::fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
    return 1;
  }
  auto service = std::make_shared<trpc::test::interop::TestServiceImpl>();
  auto server = std::make_unique<trpc::Server>(config.server);
  server->RegisterService("grpc.testing.TestService", service);
  server->RegisterService("interop_over_trpc", service);
  if (!server->Start(&err)) {
    std::fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
    trpc::runtime::Stop();
    return 1;
  }
  trpc::NetAddress grpc_addr, trpc_addr;
  server->GetAddress("grpc.testing.TestService", &grpc_addr);
  server->GetAddress("interop_over_trpc", &trpc_addr);
  std::printf("trpc_interop_server ready on grpc %s trpc %s\n", grpc_addr.ToString().c_str(),
              trpc_addr.ToString().c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  server->Stop();
  server.reset();
  trpc::runtime::Stop();
  return 0;
}
