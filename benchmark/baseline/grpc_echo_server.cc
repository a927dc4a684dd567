// grpc_echo_server [--port P]: the peer users pick instead, serving the same Greeter
// (examples/helloworld/helloworld.proto) over gRPC with Debian's gRPC C++: SayHello replies with
// the request's msg unchanged, like bench_echo_server. Callback API (the one gRPC recommends for
// new servers; gRPC runs it on its own thread pool). Listens on 127.0.0.1:P (default 50051; 0
// picks a free port), prints "grpc_echo_server ready on 127.0.0.1:PORT", and stops on SIGINT or
// SIGTERM. Built only when CMake finds gRPC (TRPC_BUILD_GRPC_PEER, benchmark/baseline/README.md).

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include "helloworld.grpc.pb.h"

namespace {

using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

class EchoGreeter final : public Greeter::CallbackService {
 public:
  grpc::ServerUnaryReactor* SayHello(grpc::CallbackServerContext* ctx, const HelloRequest* req,
                                     HelloReply* rsp) override {
    rsp->set_msg(req->msg());
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

}  // namespace

int main(int argc, char** argv) {
  int port = 50051;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--port P]\n", argv[0]);
      return 2;
    }
  }
  // Blocked before gRPC starts its threads, so they inherit the mask and only sigwait() below
  // receives the stop signals.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  EchoGreeter service;
  int bound_port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(),
                           &bound_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::fprintf(stderr, "%s: cannot listen on 127.0.0.1:%d\n", argv[0], port);
    return 1;
  }
  std::printf("grpc_echo_server ready on 127.0.0.1:%d\n", bound_port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  server->Shutdown();
  return 0;
}
