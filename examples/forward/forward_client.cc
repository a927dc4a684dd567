// forward_client --config FILE [--count N]: calls Forward.Route and Forward.ParallelRoute N
// times each through a running forward_server; exits non-zero on any error.

#include <cstdio>
#include <cstring>
#include <string>

#include "examples/forward/forward.trpc.pb.h"
#include "trpc/app/run_in_trpc_runtime.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"

int main(int argc, char** argv) {
  std::string config_path;
  int count = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config_path = argv[++i];
    } else if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    }
  }
  trpc::Config config;
  std::string err;
  if (config_path.empty() || count < 1 || !trpc::LoadConfig(config_path, &config, &err)) {
    std::fprintf(stderr, "usage: %s --config FILE [--count N]\n%s\n", argv[0], err.c_str());
    return 2;
  }
  return trpc::RunInTrpcRuntime(config, [&] {
    using trpc::test::forward::ForwardServiceProxy;
    auto forward =
        trpc::GetTrpcClient()->GetProxy<ForwardServiceProxy>("trpc.test.forward.Forward");
    if (!forward) return 1;
    int failures = 0;
    for (int i = 0; i < count; ++i) {
      trpc::test::helloworld::HelloRequest req;
      req.set_msg("forward " + std::to_string(i));
      trpc::test::helloworld::HelloReply route, parallel;
      trpc::Status a = forward->Route(trpc::MakeClientContext(), req, &route);
      trpc::Status b = forward->ParallelRoute(trpc::MakeClientContext(), req, &parallel);
      if (!a.OK() || !b.OK()) {
        std::fprintf(stderr, "call %d failed: %s / %s\n", i, a.ToString().c_str(),
                     b.ToString().c_str());
        ++failures;
      } else if (i == 0) {
        std::printf("Route: %s\nParallelRoute: %s\n", route.msg().c_str(), parallel.msg().c_str());
      }
    }
    std::printf("%d Route + %d ParallelRoute calls, %d failed\n", count, count, failures);
    return failures == 0 ? 0 : 1;
  });
}
