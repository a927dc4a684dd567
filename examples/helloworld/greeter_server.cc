// helloworld_server --config FILE: serves trpc.test.helloworld.Greeter in the thread model the
// config chooses, until SIGINT or SIGTERM (then stops gracefully).

#include <cstdio>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"

namespace {

class GreeterImpl final : public trpc::test::helloworld::Greeter {
 public:
  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg());
    return trpc::kSuccStatus;
  }
};

class HelloWorldServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    // The `server.service[].name` this implementation serves.
    auto greeter = std::make_shared<GreeterImpl>();
    RegisterService("trpc.test.helloworld.Greeter", greeter);
    // The same implementation over gRPC, where the config has this entry (server_grpc.yaml).
    RegisterService("greeter_grpc", greeter);
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  HelloWorldServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  std::printf("helloworld_server ready\n");
  std::fflush(stdout);
  app.Wait();
  return 0;
}
