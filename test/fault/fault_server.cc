// fault_server --config FILE: the server the fault tests run as a child process. Serves
// trpc.test.helloworld.Greeter in the thread model the config chooses; what SayHello does is
// chosen by the request's msg:
//   "hang"          never returns (sleeps in a loop: parks its fiber, or blocks a merge worker)
//   "sleep:<us>"    sleeps that long, then echoes the msg
//   "spin:<us>"     busy-spins that long (CPU-bound work), then echoes the msg
//   "big:<bytes>"   replies with that many 'x' bytes (at most 64 MiB)
//   "defer:<us>"    returns at once, replying that long later from another thread
//                   (SetResponse(false): parked work in either model)
//   "maxparked"     the most "sleep:" and "defer:" calls that were ever unfinished at once
//   anything else   echoes the msg
// A malformed number is treated as 0. Prints "fault_server ready on IP:PORT" once serving, then
// runs until SIGINT or SIGTERM.

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

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

// Calls parked now ("sleep:" and "defer:" not yet answered), and the most ever.
std::atomic<int64_t> g_parked{0};
std::atomic<int64_t> g_parked_max{0};

void ParkedBegin() {
  int64_t now = g_parked.fetch_add(1) + 1;
  int64_t max = g_parked_max.load();
  while (now > max && !g_parked_max.compare_exchange_weak(max, now)) {
  }
}

// Answers deferred calls at their time, from one thread of its own.
class DelayedReplier {
 public:
  DelayedReplier() : thread_([this] { Loop(); }) {}
  ~DelayedReplier() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }
  void Add(int64_t due_ns, trpc::ServerContextPtr ctx, std::string msg) {
    {
      std::lock_guard lock(mu_);
      due_.emplace(due_ns, Pending{std::move(ctx), std::move(msg)});
    }
    cv_.notify_one();
  }

 private:
  struct Pending {
    trpc::ServerContextPtr ctx;
    std::string msg;
  };
  void Loop() {
    std::unique_lock lock(mu_);
    while (!stop_) {
      if (due_.empty()) {
        cv_.wait(lock);
        continue;
      }
      int64_t now = trpc::MonotonicNanos();
      if (due_.begin()->first > now) {
        cv_.wait_for(lock, std::chrono::nanoseconds(due_.begin()->first - now));
        continue;
      }
      Pending p = std::move(due_.begin()->second);
      due_.erase(due_.begin());
      lock.unlock();
      trpc::test::helloworld::HelloReply rsp;
      rsp.set_msg(p.msg);
      g_parked.fetch_sub(1);
      p.ctx->SendUnaryResponse(trpc::kSuccStatus, rsp);
      p.ctx = nullptr;
      lock.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::multimap<int64_t, Pending> due_;
  bool stop_ = false;
  std::thread thread_;
};

class FaultGreeter final : public trpc::test::helloworld::Greeter {
 public:
  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    std::string_view msg = req->msg();
    if (msg == "hang") {
      for (;;) trpc::fiber::this_fiber::SleepFor(std::chrono::hours(1));
    } else if (msg.starts_with("sleep:")) {
      ParkedBegin();
      trpc::fiber::this_fiber::SleepFor(std::chrono::microseconds(NumberAfter(msg, "sleep:")));
      g_parked.fetch_sub(1);
    } else if (msg.starts_with("defer:")) {
      ParkedBegin();
      ctx->SetResponse(false);
      replier_.Add(trpc::MonotonicNanos() + NumberAfter(msg, "defer:") * trpc::kNanosPerMicro, ctx,
                   req->msg());
      return trpc::kSuccStatus;
    } else if (msg == "maxparked") {
      rsp->set_msg(std::to_string(g_parked_max.load()));
      return trpc::kSuccStatus;
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

 private:
  DelayedReplier replier_;
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
