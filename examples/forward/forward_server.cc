// forward_server --config FILE: serves trpc.test.forward.Forward, which calls Greeter through
// the callees of the config's client section, in the thread model the config chooses, until
// SIGINT or SIGTERM.

#include <cstdio>

#include "examples/forward/forward_service.h"
#include "trpc/app/trpc_app.h"

namespace {

class ForwardServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    std::string err;
    trpc::ServicePtr forward = trpc::test::forward::MakeForwardService(&err);
    if (!forward) {
      std::fprintf(stderr, "%s: %s\n", GetConfig().path.c_str(), err.c_str());
      return 1;
    }
    RegisterService("trpc.test.forward.Forward", std::move(forward));
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  ForwardServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  std::printf("forward_server ready\n");
  std::fflush(stdout);
  app.Wait();
  return 0;
}
