// helloworld_server --config FILE: serves trpc.test.helloworld.Greeter in the thread model the
// config chooses, until SIGINT or SIGTERM.

#include <signal.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/base/logging.h"
#include "trpc/config/config.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/server.h"

namespace {

// The `server.service[].name` this implementation is registered under.
constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";

class GreeterImpl final : public trpc::test::helloworld::Greeter {
 public:
  trpc::Status SayHello(trpc::ServerContextPtr ctx,
                        const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg());
    return trpc::kSuccStatus;
  }
};

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) config_path = argv[++i];
  }
  if (config_path.empty()) {
    std::fprintf(stderr, "usage: %s --config FILE\n", argv[0]);
    return 2;
  }
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfig(config_path, &config, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  trpc::log::Level level;
  if (trpc::log::ParseLevel(config.plugins.log.level, &level)) trpc::log::SetLevel(level);

  // Block the stop signals before any thread starts, so only sigwait() below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  if (!trpc::runtime::Start(config.global.threadmodel, &err)) {
    std::fprintf(stderr, "%s: %s\n", config_path.c_str(), err.c_str());
    return 1;
  }
  trpc::Server server(config.server);
  server.RegisterService(kGreeterName, std::make_shared<GreeterImpl>());
  if (!server.Start(&err)) {
    std::fprintf(stderr, "%s: %s\n", config_path.c_str(), err.c_str());
    trpc::runtime::Stop();
    return 1;
  }
  std::printf("helloworld_server ready\n");
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  TRPC_LOG_INFO("signal {}: stopping", sig);
  server.Stop();
  trpc::runtime::Stop();
  return 0;
}
