// The client's resilience over several endpoints, end to end over loopback: load balancing
// across in-process servers, outlier ejection, retries (and their budget) and hedging. The
// endpoints are a fixed list (the "direct" selector); the registry-driven cases are in
// test/naming/. Both thread models: TRPC_E2E_THREAD_MODEL=merge (default) or fiber.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/hedging_check.h"
#include "test/common/loopback_listener.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/app/detail/naming_plugins.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/client/client_metrics.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/server.h"

namespace trpc::test::helloworld {
namespace {

using ::trpc::test::ExpectHedgingCutsTheTail;
using ::trpc::test::P99Ms;

constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
constexpr char kClientModel[] = "e2e_client";

constexpr char kServerYaml[] = R"(server:
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: e2e_server
plugins:
  log:
    level: error
)";

using trpc::testing::FiberModel;

// Counts the calls it serves. "overload" answers 22; "maybe_slow" sleeps 50 ms in 5% of calls,
// drawn here (so a hedged copy of a slow call is usually fast); anything else echoes.
class CountingGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    calls.fetch_add(1);
    if (req->msg() == "overload") return Status(kServerOverloadErr, "overloaded on purpose");
    if (req->msg() == "system_error") return Status(kServerSystemErr, "failed on purpose");
    if (req->msg() == "slow") fiber::this_fiber::SleepFor(std::chrono::milliseconds(50));
    if (req->msg() == "maybe_slow") {
      thread_local std::minstd_rand rng(std::random_device{}());
      if (rng() % 100 < 5) fiber::this_fiber::SleepFor(std::chrono::milliseconds(50));
    }
    rsp->set_msg(req->msg());
    return kSuccStatus;
  }
  std::atomic<int> calls{0};
};

constexpr char kSayHello[] = "/trpc.test.helloworld.Greeter/SayHello";

// The client counts of callee kGreeterName (every test's proxies count there: tests compare
// before and after).
ClientServiceMetrics CalleeCounts() {
  for (auto& s : CollectClientMetrics()) {
    if (s.name == kGreeterName) return s;
  }
  return {};
}
ClientMethodMetrics SayHelloCounts() {
  for (auto& m : CalleeCounts().methods) {
    if (m.name == kSayHello) return m;
  }
  return {};
}
uint64_t ErrorsWithCode(const ClientMethodMetrics& m, const std::string& code) {
  for (const auto& [c, n] : m.errors) {
    if (c == code) return n;
  }
  return 0;
}

// A loopback port nobody listens on: connecting to it is refused at once.
uint16_t DeadPort() { return trpc::testing::FreeLoopbackPort(); }

class ResilienceE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log::SetLevel(log::Level::kError);
    naming::RegisterNamingPlugins();  // p2c
    config_ = new Config;
    std::string yaml =
        trpc::testing::ThreadModelYaml({{"e2e_server", 2}, {"e2e_client", 1}}) + kServerYaml;
    ASSERT_TRUE(trpc::testing::StartRuntime(yaml, "resilience_e2e_test.yaml", config_));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
    config_ = nullptr;
  }
  void TearDown() override {
    if (proxy_) proxy_->Stop();
    proxy_.reset();
    for (auto& s : servers_) s->Stop();
    servers_.clear();
  }

  // Starts `n` servers; returns their "ip:port" list.
  std::string StartServers(int n) {
    std::string list;
    for (int i = 0; i < n; ++i) {
      auto greeter = std::make_shared<CountingGreeter>();
      auto server = std::make_unique<Server>(config_->server);
      EXPECT_TRUE(server->RegisterService(kGreeterName, greeter));
      std::string err;
      EXPECT_TRUE(server->Start(&err)) << err;
      NetAddress addr;
      EXPECT_TRUE(server->GetAddress(kGreeterName, &addr));
      list += (list.empty() ? "" : ",") + addr.ToString();
      greeters_.push_back(greeter);
      servers_.push_back(std::move(server));
    }
    return list;
  }

  void MakeProxy(const std::string& target,
                 const std::function<void(ClientServiceConfig*)>& tweak) {
    ClientServiceConfig c;
    c.name = kGreeterName;
    c.target = target;
    c.timeout = 2000;
    if (tweak) tweak(&c);
    proxy_ = std::make_shared<GreeterServiceProxy>(c, runtime::GetThreadModel(kClientModel));
    std::string err;
    ASSERT_TRUE(proxy_->Init(&err)) << err;
  }

  Status Hello(const std::string& msg) {
    auto ctx = MakeClientContext();
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    return proxy_->SayHello(ctx, req, &rsp);
  }

  static Config* config_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<std::shared_ptr<CountingGreeter>> greeters_;
  std::shared_ptr<GreeterServiceProxy> proxy_;
};

Config* ResilienceE2eTest::config_ = nullptr;

TEST_F(ResilienceE2eTest, RoundRobinSpreadsCallsEvenly) {
  MakeProxy(StartServers(3), {});
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE(Hello("x").OK());
  for (const auto& g : greeters_) {
    EXPECT_GE(g->calls.load(), 900);
    EXPECT_LE(g->calls.load(), 1100);
  }
}

TEST_F(ResilienceE2eTest, RetriesStepAroundAnEndpointThatRefuses) {
  std::string target = StartServers(2) + ",127.0.0.1:" + std::to_string(DeadPort());
  MakeProxy(target, [](ClientServiceConfig* c) {
    c->retry.methods = {"SayHello"};
    c->retry.budget_min = 1000;
    c->outlier_ejection.consecutive_failures = 0;  // retries alone must do it
  });
  const ClientMethodMetrics before = SayHelloCounts();
  for (int i = 0; i < 300; ++i) {
    Status st = Hello("x");
    ASSERT_TRUE(st.OK()) << "call " << i << ": " << st.ToString();
  }
  EXPECT_EQ(greeters_[0]->calls.load() + greeters_[1]->calls.load(), 300);
  // The client's counts: 300 calls, no error; every refused attempt was retried once (retries
  // move the round-robin too, so a third to a half of the first attempts meet the dead
  // endpoint), and each attempt is one request sent.
  const ClientMethodMetrics after = SayHelloCounts();
  EXPECT_EQ(after.calls - before.calls, 300u);
  EXPECT_EQ(after.in_flight, 0u);
  EXPECT_EQ(ErrorsWithCode(after, "111"), ErrorsWithCode(before, "111"));
  const uint64_t retries = after.retries - before.retries;
  EXPECT_GE(retries, 80u);
  EXPECT_LE(retries, 170u);
  EXPECT_EQ(after.attempts - before.attempts, 300u + retries);
  EXPECT_EQ(after.hedges, before.hedges);
}

TEST_F(ResilienceE2eTest, WithoutRetriesAnEjectedEndpointStopsFailingCalls) {
  std::string target = StartServers(2) + ",127.0.0.1:" + std::to_string(DeadPort());
  MakeProxy(target, [](ClientServiceConfig* c) {
    c->outlier_ejection.consecutive_failures = 3;
    c->outlier_ejection.base_ejection_time = 60000;
  });
  const uint64_t ejections = CalleeCounts().ejections;
  const ClientMethodMetrics before = SayHelloCounts();
  int failed = 0;
  for (int i = 0; i < 300; ++i) failed += Hello("x").OK() ? 0 : 1;
  // Every third call goes to the dead endpoint until its third failure ejects it.
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(CalleeCounts().ejections - ejections, 1u);
  const ClientMethodMetrics after = SayHelloCounts();
  EXPECT_EQ(ErrorsWithCode(after, "111") - ErrorsWithCode(before, "111"), 3u);
  EXPECT_EQ(after.calls - before.calls, 300u);
  EXPECT_EQ(after.retries, before.retries);
}

TEST_F(ResilienceE2eTest, AnUnmarkedMethodIsNotRetried) {
  std::string target = StartServers(1) + ",127.0.0.1:" + std::to_string(DeadPort());
  MakeProxy(target, [](ClientServiceConfig* c) {
    c->retry.methods = {"/trpc.test.helloworld.Greeter/SomethingElse"};
    c->outlier_ejection.consecutive_failures = 0;
  });
  int failed = 0;
  for (int i = 0; i < 100; ++i) failed += Hello("x").OK() ? 0 : 1;
  EXPECT_EQ(failed, 50);
}

TEST_F(ResilienceE2eTest, TheRetryBudgetBoundsTheExtraLoad) {
  MakeProxy(StartServers(2), [](ClientServiceConfig* c) {
    c->retry.methods = {"*"};
    c->retry.max_attempts = 5;
    c->retry.budget_percent = 10;
    c->retry.budget_min = 0;
    c->retry.backoff_base = 0;
    c->retry.backoff_max = 0;
  });
  const ClientMethodMetrics before = SayHelloCounts();
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(Hello("overload").GetFrameworkRetCode(), 22);
  int served = greeters_[0]->calls.load() + greeters_[1]->calls.load();
  // 1000 first attempts earn 100 retries; without the budget there would be 4000.
  EXPECT_GE(served, 1000 + 90);
  EXPECT_LE(served, 1000 + 100);
  // Counted as such: the retries sent, and a refusal for every call that wanted one more.
  const ClientMethodMetrics after = SayHelloCounts();
  EXPECT_EQ(after.retries - before.retries, static_cast<uint64_t>(served - 1000));
  EXPECT_EQ(after.attempts - before.attempts, static_cast<uint64_t>(served));
  EXPECT_GE(after.budget_refusals - before.budget_refusals, 1000u - 100u);
  EXPECT_EQ(ErrorsWithCode(after, "22") - ErrorsWithCode(before, "22"), 1000u);
}

TEST_F(ResilienceE2eTest, HedgingCutsTheTail) {
  if (!FiberModel()) {
    GTEST_SKIP() << "the merge model's slow handler blocks its worker, and with it the hedge";
  }
  auto p99 = [this](int calls) {
    return P99Ms(calls, [this] { return Hello("maybe_slow").OK(); });
  };
  std::string target = StartServers(2);
  MakeProxy(target, {});
  double plain = p99(600);
  proxy_->Stop();
  MakeProxy(target, [](ClientServiceConfig* c) {
    c->hedging.methods = {"SayHello"};
    c->hedging.delay = 5;
    c->retry.budget_min = 1000;
  });
  double hedged = p99(600);
  ExpectHedgingCutsTheTail(plain, hedged);
}

TEST_F(ResilienceE2eTest, AHedgedCallThatFailsForGoodEndsAtOnce) {
  MakeProxy(StartServers(2), [](ClientServiceConfig* c) {
    c->hedging.methods = {"SayHello"};
    c->hedging.delay = 1000;
  });
  const int64_t t0 = MonotonicNanos();
  EXPECT_EQ(Hello("system_error").GetFrameworkRetCode(), kServerSystemErr);
  // Not repeated (31 is not retryable) and not held until the hedge's delay. (The delay is long
  // so that the bound, half of it, is far above what a loaded machine adds to one call.)
  EXPECT_LT(MonotonicNanos() - t0, 500 * kNanosPerMilli);
  EXPECT_EQ(greeters_[0]->calls.load() + greeters_[1]->calls.load(), 1);
}

TEST_F(ResilienceE2eTest, AHedgedCallEndsWhenTheBudgetRefusesTheNextAttempt) {
  MakeProxy(StartServers(2), [](ClientServiceConfig* c) {
    c->hedging.methods = {"SayHello"};
    c->hedging.delay = 1000;
    c->retry.budget_percent = 1;
    c->retry.budget_min = 0;
  });
  for (int i = 0; i < 20; ++i) {
    const int64_t t0 = MonotonicNanos();
    EXPECT_EQ(Hello("overload").GetFrameworkRetCode(), kServerOverloadErr);
    EXPECT_LT(MonotonicNanos() - t0, 500 * kNanosPerMilli) << "call " << i;  // half the delay
  }
}

TEST_F(ResilienceE2eTest, StopEndsACallWaitingToRetry) {
  MakeProxy("127.0.0.1:" + std::to_string(DeadPort()), [](ClientServiceConfig* c) {
    c->retry.methods = {"SayHello"};
    c->retry.backoff_base = 5000;
    c->retry.backoff_max = 5000;
    c->timeout = 20000;
    c->outlier_ejection.consecutive_failures = 0;
  });
  std::atomic<int> code{-1};
  {
    auto ctx = MakeClientContext();
    HelloRequest req;
    req.set_msg("x");
    proxy_->AsyncSayHello(ctx, req).Then([&code, ctx](Future<HelloReply>&& f) {
      code.store(f.IsFailed() ? f.GetException().GetFrameworkRetCode() : 0);
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // refused; waiting to retry
  EXPECT_EQ(code.load(), -1);
  proxy_->Stop();
  EXPECT_EQ(code.load(), kClientNetworkErr);
  proxy_.reset();  // nothing of it may run after this (ASan)
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST_F(ResilienceE2eTest, HedgesGoToAnotherEndpointAndCountApartFromRetries) {
  if (!FiberModel()) {
    GTEST_SKIP() << "the merge model's slow handler blocks its worker, and with it the hedge";
  }
  MakeProxy(StartServers(2), [](ClientServiceConfig* c) {
    c->load_balance_name = "p2c";
    c->hedging.methods = {"SayHello"};
    c->hedging.delay = 5;
    c->retry.methods = {"SayHello"};
    c->retry.max_attempts = 3;
    c->retry.budget_min = 1000;
  });
  const ClientMethodMetrics before = SayHelloCounts();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(Hello("slow").OK());
  // Every call is slow: one hedge each (hedging.max_attempts 2, not retry's 3), always to the
  // endpoint the first attempt did not use.
  EXPECT_EQ(greeters_[0]->calls.load(), 20);
  EXPECT_EQ(greeters_[1]->calls.load(), 20);
  const ClientMethodMetrics after = SayHelloCounts();
  EXPECT_EQ(after.hedges - before.hedges, 20u);
  EXPECT_EQ(after.retries, before.retries);
  EXPECT_EQ(after.attempts - before.attempts, 40u);
  EXPECT_EQ(after.calls - before.calls, 20u);
  // Every call took the slow handler's 50 ms at least.
  EXPECT_EQ(after.latency_buckets[0] + after.latency_buckets[1] + after.latency_buckets[2] +
                after.latency_buckets[3] + after.latency_buckets[4] + after.latency_buckets[5] +
                after.latency_buckets[6] + after.latency_buckets[7] + after.latency_buckets[8],
            before.latency_buckets[0] + before.latency_buckets[1] + before.latency_buckets[2] +
                before.latency_buckets[3] + before.latency_buckets[4] + before.latency_buckets[5] +
                before.latency_buckets[6] + before.latency_buckets[7] + before.latency_buckets[8]);
}

TEST_F(ResilienceE2eTest, ThrottleRefusalsAndConnectionsAreCounted) {
  MakeProxy(StartServers(2), [](ClientServiceConfig* c) { c->overload_throttle = true; });
  const ClientMethodMetrics before = SayHelloCounts();
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    refused += Hello("overload").GetFrameworkRetCode() == kClientLimitedErr ? 1 : 0;
  }
  // A callee that only answers "overloaded" is soon refused at the client, and each refusal is
  // counted both as a throttle refusal and as a call that ended with 123.
  EXPECT_GT(refused, 100);
  const ClientMethodMetrics after = SayHelloCounts();
  EXPECT_EQ(after.throttle_refusals - before.throttle_refusals, static_cast<uint64_t>(refused));
  EXPECT_EQ(ErrorsWithCode(after, "123") - ErrorsWithCode(before, "123"),
            static_cast<uint64_t>(refused));
  EXPECT_EQ(after.attempts - before.attempts, static_cast<uint64_t>(300 - refused));
  // One connection per endpoint (one client reactor); none once the proxy stops.
  EXPECT_EQ(CalleeCounts().connections, 2);
  proxy_->Stop();
  EXPECT_EQ(CalleeCounts().connections, 0);
}

TEST_F(ResilienceE2eTest, ABadDirectTargetIsAnInitError) {
  ClientServiceConfig c;
  c.name = kGreeterName;
  c.target = "not-an-address";
  GreeterServiceProxy bad(c, runtime::GetThreadModel(kClientModel));
  std::string err;
  EXPECT_FALSE(bad.Init(&err));
  EXPECT_NE(err.find("bad target 'not-an-address'"), std::string::npos) << err;
}

}  // namespace
}  // namespace trpc::test::helloworld
