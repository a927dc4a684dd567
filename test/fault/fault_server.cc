// fault_server --config FILE: the server the fault tests run as a child process. Serves
// trpc.test.helloworld.Greeter in the thread model the config chooses; what SayHello does is
// chosen by the request's msg:
//   "hang"          never returns (sleeps in a loop: parks its fiber, or blocks a merge worker)
//   "sleep:<us>"    sleeps that long, then echoes the msg
//   "spin:<us>"     busy-spins that long (CPU-bound work), then echoes the msg
//   "big:<bytes>"   replies with that many 'x' bytes (at most 64 MiB)
//   anything else   echoes the msg
// A malformed number is treated as 0. Prints "fault_server ready on IP:PORT" once serving, then
// runs until SIGINT or SIGTERM.

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"
#include "trpc/base/clock.h"
#include "trpc/fiber/fiber.h"

namespace {

constexpr std::string_view kServiceName = "trpc.test.helloworld.Greeter";
constexpr int64_t kMaxBigBytes = 64 << 20;

int64_t NumberAfter(std::string_view msg, std::string_view prefix) {
  int64_t v = 0;
  std::string_view digits = msg.substr(prefix.size());
  std::from_chars(digits.data(), digits.data() + digits.size(), v);
  return v < 0 ? 0 : v;
}

class FaultGreeter final : public trpc::test::helloworld::Greeter {
 public:
  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    (void)ctx;
    std::string_view msg = req->msg();
    if (msg == "hang") {
      for (;;) trpc::fiber::this_fiber::SleepFor(std::chrono::hours(1));
    } else if (msg.starts_with("sleep:")) {
      trpc::fiber::this_fiber::SleepFor(std::chrono::microseconds(NumberAfter(msg, "sleep:")));
    } else if (msg.starts_with("spin:")) {
      int64_t until = trpc::MonotonicNanos() + NumberAfter(msg, "spin:") * trpc::kNanosPerMicro;
      while (trpc::MonotonicNanos() < until) {
      }
    } else if (msg.starts_with("big:")) {
      rsp->set_msg(std::string(std::min(NumberAfter(msg, "big:"), kMaxBigBytes), 'x'));
      return trpc::kSuccStatus;
    }
    rsp->set_msg(req->msg());
    return trpc::kSuccStatus;
  }
};

class FaultServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    RegisterService(std::string(kServiceName), std::make_shared<FaultGreeter>());
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  FaultServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  trpc::NetAddress addr;
  if (!app.GetServer()->GetAddress(std::string(kServiceName), &addr)) {
    std::fprintf(stderr, "%s: the config serves no %s\n", argv[0], kServiceName.data());
    app.Terminate();
    app.Wait();
    return 1;
  }
  std::printf("fault_server ready on %s\n", addr.ToString().c_str());
  std::fflush(stdout);
  app.Wait();
  return 0;
}
