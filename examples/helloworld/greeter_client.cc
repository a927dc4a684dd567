// helloworld_client --config FILE [--count N] [--msg TEXT]: calls Greeter.SayHello N times
// synchronously and N times asynchronously, prints the first reply, exits non-zero on any error.

#include <atomic>
#include <cstdio>
#include <cstring>
#include <latch>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/config/config.h"
#include "trpc/runtime/runtime.h"

namespace {
// The `client.service[].name` the proxy is configured from.
constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
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
  const trpc::ClientServiceConfig* greeter_config = nullptr;
  for (const auto& s : config.client.service) {
    if (s.name == kGreeterName) greeter_config = &s;
  }
  if (greeter_config == nullptr) {
    std::fprintf(stderr, "%s: no client.service named %s\n", config_path.c_str(), kGreeterName);
    return 1;
  }
  if (!trpc::runtime::Start(config.global.threadmodel, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  int failures = 0;
  {
    auto greeter = std::make_shared<trpc::test::helloworld::GreeterServiceProxy>(
        *greeter_config, trpc::runtime::GetThreadModel());
    if (!greeter->Init(&err)) {
      std::fprintf(stderr, "%s\n", err.c_str());
      trpc::runtime::Stop();
      return 1;
    }

    for (int i = 0; i < count; ++i) {
      trpc::test::helloworld::HelloRequest req;
      req.set_msg(msg);
      trpc::test::helloworld::HelloReply rsp;
      auto ctx = trpc::MakeClientContext();
      trpc::Status st = greeter->SayHello(ctx, req, &rsp);
      if (!st.OK() || rsp.msg() != "Hello, " + msg) {
        std::fprintf(stderr, "sync call %d failed: %s (reply '%s')\n", i, st.ToString().c_str(),
                     rsp.msg().c_str());
        ++failures;
      } else if (i == 0) {
        std::printf("sync reply: %s\n", rsp.msg().c_str());
      }
    }

    std::atomic<int> async_failures{0};
    std::latch done(count);
    std::vector<trpc::ClientContextPtr> ctxs(count);
    for (int i = 0; i < count; ++i) {
      trpc::test::helloworld::HelloRequest req;
      req.set_msg(msg + std::to_string(i));
      ctxs[i] = trpc::MakeClientContext();
      greeter->AsyncSayHello(ctxs[i], req)
          .Then([&, i](trpc::Future<trpc::test::helloworld::HelloReply>&& reply) {
            if (!reply.IsReady() || reply.GetValue().msg() != "Hello, " + msg + std::to_string(i)) {
              async_failures.fetch_add(1);
            }
            done.count_down();
          });
    }
    done.wait();
    failures += async_failures.load();
    std::printf("%d sync + %d async calls, %d failed\n", count, count, failures);
    greeter->Stop();
  }
  trpc::runtime::Stop();
  return failures == 0 ? 0 : 1;
}
