// helloworld_client --config FILE [--count N] [--msg TEXT]: calls Greeter.SayHello N times
// synchronously and N times asynchronously, prints the first reply, exits non-zero on any error.
// In the fiber model the calls are made from a fiber (RunInTrpcRuntime).

#include <cstdio>
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

int CallGreeter(int count, const std::string& msg) {
  // Created from the `client.service[]` entry of that name.
  auto greeter =
      trpc::GetTrpcClient()->GetProxy<GreeterServiceProxy>("trpc.test.helloworld.Greeter");
  if (!greeter) return 1;
  int failures = 0;
  for (int i = 0; i < count; ++i) {
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    trpc::Status st = greeter->SayHello(trpc::MakeClientContext(), req, &rsp);
    if (!st.OK() || rsp.msg() != "Hello, " + msg) {
      std::fprintf(stderr, "sync call %d failed: %s (reply '%s')\n", i, st.ToString().c_str(),
                   rsp.msg().c_str());
      ++failures;
    } else if (i == 0) {
      std::printf("sync reply: %s\n", rsp.msg().c_str());
    }
  }
  // All asynchronous calls in flight at once, then one wait for all of them.
  std::vector<trpc::Future<HelloReply>> replies;
  for (int i = 0; i < count; ++i) {
    HelloRequest req;
    req.set_msg(msg + std::to_string(i));
    replies.push_back(greeter->AsyncSayHello(trpc::MakeClientContext(), req));
  }
  auto all = trpc::BlockingGet(trpc::WhenAll(std::move(replies))).GetValue();
  for (int i = 0; i < count; ++i) {
    if (!all[i].IsReady()) {
      std::fprintf(stderr, "async call %d failed: %s\n", i,
                   all[i].GetException().ToString().c_str());
      ++failures;
    } else if (all[i].GetValue().msg() != "Hello, " + msg + std::to_string(i)) {
      ++failures;
    }
  }
  std::printf("%d sync + %d async calls, %d failed\n", count, count, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string msg = "world";
  int count = 10;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config_path = argv[++i];
    } else if (std::strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--msg") == 0 && i + 1 < argc) {
      msg = argv[++i];
    }
  }
  if (config_path.empty() || count < 1) {
    std::fprintf(stderr, "usage: %s --config FILE [--count N] [--msg TEXT]\n", argv[0]);
    return 2;
  }
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfig(config_path, &config, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return trpc::RunInTrpcRuntime(config, [&] { return CallGreeter(count, msg); });
}
