// Service discovery end to end: servers register with a real etcd (started by the test on
// loopback ports, with a temporary data dir), a client finds them through the etcd selector and
// balances, retries and hedges across them. In-process servers for the balancing cases; child
// processes (examples/echo's echo_server) where a server must die or stop on its own.
//
// Skipped, saying so, when etcd is not installed (third_party/setup.sh --with-test-tools
// installs it).

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/child_server.h"
#include "test/common/hedging_check.h"
#include "test/common/peer.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/naming/etcd/etcd_process.h"
#include "trpc/app/detail/naming_plugins.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/config/config.h"
#include "trpc/naming/registry.h"
#include "trpc/naming/selector.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/server.h"

namespace trpc::test::helloworld {
namespace {

using ::trpc::test::ExpectHedgingCutsTheTail;
using ::trpc::test::P99Ms;

using ::trpc::test::ChildServer;
using ::trpc::testing::EtcdProcess;

constexpr char kGreeter[] = "trpc.test.helloworld.Greeter";

class EchoGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    rsp->set_msg(req->msg());
    return kSuccStatus;
  }
};

// Per-backend counts of a batch of calls, and the failures.
struct Tally {
  std::map<std::string, int> by_backend;
  int failed = 0;
  std::vector<int> failed_codes;
};

class NamingE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log::SetLevel(log::Level::kError);
    naming::RegisterNamingPlugins();
    Config c;
    ASSERT_TRUE(trpc::testing::StartRuntime(
        trpc::testing::ThreadModelYaml(/*fiber=*/true,
                                       {{"naming_server", 2}, {"naming_client", 2}}),
        "naming_e2e_test.yaml", &c));
  }
  static void TearDownTestSuite() { runtime::Stop(); }

  void SetUp() override {
    if (!EtcdProcess::Installed())
      TRPC_SKIP_WITHOUT_PEER("etcd not installed (Debian: etcd-server)");
    ASSERT_TRUE(etcd_.Start()) << "etcd did not start";
    PluginOptions o;
    o.values = {{"endpoints", etcd_.endpoint()}, {"ttl", "2"}, {"backoff_max", "300"}};
    SelectorFactory::SetOptions({{"etcd", o}});
    RegistryFactory::SetOptions({{"etcd", o}});
  }
  void TearDown() override {
    if (proxy_) proxy_->Stop();
    proxy_.reset();
    for (auto& s : servers_) s->Stop();
    servers_.clear();
    children_.clear();
    naming::StopNamingPlugins();
  }

  // An in-process server registered with etcd under `weight`; returns its "ip:port".
  std::string StartServer(uint32_t weight = 100) {
    ServerConfig sc;
    sc.registry_name = "etcd";
    sc.deregister_wait = 0;
    ServiceConfig svc;
    svc.name = kGreeter;
    svc.ip = "127.0.0.1";
    svc.port = 0;
    svc.weight = weight;
    svc.threadmodel_instance_name = "naming_server";
    sc.service.push_back(svc);
    auto server = std::make_unique<Server>(sc);
    EXPECT_TRUE(server->RegisterService(kGreeter, std::make_shared<EchoGreeter>()));
    std::string err;
    EXPECT_TRUE(server->Start(&err)) << err;
    NetAddress a;
    server->GetAddress(kGreeter, &a);
    servers_.push_back(std::move(server));
    return a.ToString();
  }

  // An echo_server child registered with etcd (fiber model); returns its "ip:port".
  std::string StartChild(const std::string& extra_server_keys = "") {
    std::string path = etcd_.dir() + "/child" + std::to_string(children_.size()) + ".yaml";
    std::ofstream(path) << trpc::testing::ThreadModelYaml(/*fiber=*/true, {{"f", 1}})
                        << "server:\n  registry_name: etcd\n  deregister_wait: 500\n"
                        << extra_server_keys
                        << "  service:\n    - name: trpc.test.helloworld.Greeter\n"
                           "      ip: 127.0.0.1\n      port: 0\n"
                           "plugins:\n  log: {level: error}\n  registry:\n    etcd:\n"
                           "      endpoints: \""
                        << etcd_.endpoint() << "\"\n      ttl: 2\n";
    auto child = std::make_unique<ChildServer>();
    child->set_accept_any_exit(true);
    std::string addr = child->Start({BENCH_ECHO_SERVER_PATH, "--config", path});
    children_.push_back(std::move(child));
    return addr;
  }

  void MakeProxy(const std::function<void(ClientServiceConfig*)>& tweak = {}) {
    ClientServiceConfig c;
    c.name = kGreeter;
    c.target = kGreeter;
    c.selector_name = "etcd";
    c.timeout = 2000;
    if (tweak) tweak(&c);
    proxy_ = std::make_shared<GreeterServiceProxy>(c, runtime::GetThreadModel("naming_client"));
    std::string err;
    ASSERT_TRUE(proxy_->Init(&err)) << err;
  }

  Status Hello(std::string* backend = nullptr, const std::string& hash_key = "",
               const std::string& tail = "") {
    auto ctx = MakeClientContext();
    if (!hash_key.empty()) ctx->SetHashKey(hash_key);
    if (!tail.empty()) ctx->AddReqTransInfo("trpc-bench-tail", tail);
    HelloRequest req;
    req.set_msg("hi");
    HelloReply rsp;
    Status st = proxy_->SayHello(ctx, req, &rsp);
    if (backend) *backend = ctx->GetBackend().ToString();
    return st;
  }

  Tally Calls(int n) {
    Tally t;
    for (int i = 0; i < n; ++i) {
      std::string b;
      if (Hello(&b).OK()) {
        ++t.by_backend[b];
      } else {
        ++t.failed;
      }
    }
    return t;
  }

  // Waits up to `ms` for `pred`.
  static bool WaitFor(int ms, const std::function<bool()>& pred) {
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (std::chrono::steady_clock::now() < until) {
      if (pred()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
  }

  // Calls at `rate` per second from a fiber-free thread for `seconds`, asynchronously (a call
  // in flight to a dying server does not hold up the others); counts outcomes by backend.
  struct Load {
    std::mutex mu;
    Tally tally;
    std::map<std::string, int64_t> last_call_ns;  // by backend, when the call was sent
    std::atomic<int> outstanding{0};
  };
  void RunLoad(Load* load, int rate, int millis) {
    const int64_t start = MonotonicNanos();
    const int64_t step = kNanosPerSecond / rate;
    for (int64_t i = 0; MonotonicNanos() - start < millis * kNanosPerMilli; ++i) {
      int64_t at = start + i * step;
      while (MonotonicNanos() < at) std::this_thread::sleep_for(std::chrono::microseconds(200));
      auto ctx = MakeClientContext();
      HelloRequest req;
      req.set_msg("load");
      load->outstanding.fetch_add(1);
      const int64_t sent = MonotonicNanos();
      proxy_->AsyncSayHello(ctx, req).Then([load, ctx, sent](Future<HelloReply>&& f) {
        std::lock_guard lock(load->mu);
        std::string b = ctx->GetBackend().ToString();
        if (f.IsReady()) {
          ++load->tally.by_backend[b];
        } else {
          ++load->tally.failed;
          load->tally.failed_codes.push_back(ctx->GetStatus().GetFrameworkRetCode());
        }
        load->last_call_ns[b] = std::max(load->last_call_ns[b], sent);
        load->outstanding.fetch_sub(1);
      });
    }
    WaitFor(5000, [load] { return load->outstanding.load() == 0; });
  }

  EtcdProcess etcd_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::vector<std::unique_ptr<ChildServer>> children_;
  std::shared_ptr<GreeterServiceProxy> proxy_;
};

TEST_F(NamingE2eTest, RoundRobinOverThreeRegisteredServers) {
  for (int i = 0; i < 3; ++i) StartServer();
  MakeProxy();
  Tally t = Calls(3000);
  EXPECT_EQ(t.failed, 0);
  ASSERT_EQ(t.by_backend.size(), 3u);
  for (const auto& [b, n] : t.by_backend) {
    EXPECT_GE(n, 900) << b;
    EXPECT_LE(n, 1100) << b;
  }
}

TEST_F(NamingE2eTest, WeightedRoundRobinFollowsRegisteredWeights) {
  std::string a = StartServer(100), b = StartServer(200), c = StartServer(300);
  MakeProxy([](ClientServiceConfig* cfg) { cfg->load_balance_name = "weighted_round_robin"; });
  Tally t = Calls(3000);
  EXPECT_EQ(t.failed, 0);
  EXPECT_NEAR(t.by_backend[a], 500, 50);
  EXPECT_NEAR(t.by_backend[b], 1000, 100);
  EXPECT_NEAR(t.by_backend[c], 1500, 150);
}

TEST_F(NamingE2eTest, ConsistentHashKeepsKeysAndMovesFewWhenOneJoins) {
  for (int i = 0; i < 3; ++i) StartServer();
  MakeProxy([](ClientServiceConfig* cfg) { cfg->load_balance_name = "consistent_hash"; });
  constexpr int kKeys = 1000;
  std::vector<std::string> before(kKeys);
  for (int k = 0; k < kKeys; ++k) {
    ASSERT_TRUE(Hello(&before[k], "user-" + std::to_string(k)).OK());
    std::string again;
    ASSERT_TRUE(Hello(&again, "user-" + std::to_string(k)).OK());
    ASSERT_EQ(again, before[k]) << "a key must stay on one instance";
  }
  std::string fourth = StartServer();
  ASSERT_TRUE(WaitFor(1000, [&] {
    std::string b;
    for (int k = 0; k < 200; ++k) {
      if (Hello(&b, "user-" + std::to_string(k)).OK() && b == fourth) return true;
    }
    return false;
  }));
  int moved = 0;
  for (int k = 0; k < kKeys; ++k) {
    std::string now;
    ASSERT_TRUE(Hello(&now, "user-" + std::to_string(k)).OK());
    if (now != before[k]) {
      ++moved;
      EXPECT_EQ(now, fourth) << "a key may only move to the new instance";
    }
  }
  EXPECT_LE(moved, kKeys * 40 / 100);
  EXPECT_GE(moved, kKeys * 10 / 100);
}

TEST_F(NamingE2eTest, ANewServerGetsCallsWithinASecond) {
  StartServer();
  MakeProxy();
  std::string added = StartServer();
  const int64_t registered = MonotonicNanos();
  bool reached = WaitFor(1000, [&] {
    std::string b;
    return Hello(&b).OK() && b == added;
  });
  EXPECT_TRUE(reached) << "after " << (MonotonicNanos() - registered) / 1000000 << " ms";
  std::printf("a new server got its first call %.1f ms after registering\n",
              (MonotonicNanos() - registered) / 1e6);
}

TEST_F(NamingE2eTest, WhenEveryInstanceLeavesCallsFailAtOnceWithTheRouterCode) {
  StartServer();
  StartServer();
  MakeProxy();
  ASSERT_TRUE(Hello().OK());
  for (auto& server : servers_) server->Stop();  // deregisters first
  bool empty = WaitFor(1000, [&] { return Hello().GetFrameworkRetCode() == kClientRouterErr; });
  EXPECT_TRUE(empty);
  const int64_t t0 = MonotonicNanos();
  Status st = Hello();
  EXPECT_EQ(st.GetFrameworkRetCode(), kClientRouterErr) << st.ToString();
  // Waiting would take the call's 2 s timeout; the bound is a stall check.
  EXPECT_LT(MonotonicNanos() - t0, 500 * kNanosPerMilli) << "no endpoint must not wait";
  // One coming back is found again.
  std::string back = StartServer();
  EXPECT_TRUE(WaitFor(1000, [&] {
    std::string b;
    return Hello(&b).OK() && b == back;
  }));
}

TEST_F(NamingE2eTest, TheDnsSelectorFindsAServerByName) {
  std::string addr = StartServer();
  std::string port = addr.substr(addr.rfind(':') + 1);
  MakeProxy([&](ClientServiceConfig* cfg) {
    cfg->selector_name = "dns";
    cfg->target = "localhost:" + port;
  });
  // localhost may resolve to ::1 first, where nothing listens: retries and ejection step
  // around it, and at least the IPv4 address answers.
  int ok = 0;
  for (int i = 0; i < 20; ++i) ok += Hello().OK() ? 1 : 0;
  EXPECT_GE(ok, 10);
}

TEST_F(NamingE2eTest, SigkillUnderLoadWithRetriesFailsNoCall) {
  for (int i = 0; i < 3; ++i) ASSERT_FALSE(StartChild().empty());
  MakeProxy([](ClientServiceConfig* cfg) {
    cfg->retry.methods = {"SayHello"};
    cfg->timeout = 1000;
  });
  Load load;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    children_[0]->Signal(SIGKILL);
  });
  RunLoad(&load, 200, 3000);
  killer.join();
  EXPECT_EQ(load.tally.failed, 0);
  std::printf("SIGKILL with retries: %d calls failed\n", load.tally.failed);
}

TEST_F(NamingE2eTest, SigkillUnderLoadWithoutRetriesFailsOnlyCallsToIt) {
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) addrs.push_back(StartChild());
  MakeProxy([](ClientServiceConfig* cfg) { cfg->timeout = 1000; });
  Load load;
  int64_t killed_at = 0;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    killed_at = MonotonicNanos();
    children_[0]->Signal(SIGKILL);
  });
  RunLoad(&load, 200, 4000);
  killer.join();
  // Failures: calls in flight to it, and the few sent before ejection (5 failures in a row).
  EXPECT_LE(load.tally.failed, 10);
  for (int code : load.tally.failed_codes) EXPECT_TRUE(code == 111 || code == 141) << code;
  // Within the TTL (2 s), or sooner by ejection, nothing goes to it any more.
  EXPECT_LT(load.last_call_ns[addrs[0]], killed_at + 2000 * kNanosPerMilli);
  std::printf("SIGKILL without retries: %d calls failed; the last call to it %.1f ms after\n",
              load.tally.failed, (load.last_call_ns[addrs[0]] - killed_at) / 1e6);
}

TEST_F(NamingE2eTest, AGracefulStopLosesNoCall) {
  std::vector<std::string> addrs;
  for (int i = 0; i < 3; ++i) addrs.push_back(StartChild());
  MakeProxy([](ClientServiceConfig* cfg) { cfg->timeout = 1000; });
  Load load;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    children_[0]->Signal(SIGTERM);
  });
  RunLoad(&load, 200, 2500);
  stopper.join();
  EXPECT_EQ(load.tally.failed, 0);
  EXPECT_GT(load.tally.by_backend[addrs[0]], 0);
}

TEST_F(NamingE2eTest, EtcdDownKeepsEndpointsAndAWatchResumesAfterARestart) {
  std::string first = StartServer();
  MakeProxy();
  etcd_.Kill();
  Tally t = Calls(100);
  EXPECT_EQ(t.failed, 0);
  EXPECT_EQ(t.by_backend[first], 100);
  ASSERT_TRUE(etcd_.Start());
  std::string second = StartServer();  // registered after the restart
  bool reached = WaitFor(3000, [&] {
    std::string b;
    return Hello(&b).OK() && b == second;
  });
  EXPECT_TRUE(reached);
}

TEST_F(NamingE2eTest, HedgingCutsTheP99OfASlowTail) {
  ASSERT_FALSE(StartChild().empty());
  auto p99 = [this](int calls) {
    return P99Ms(calls, [this] { return Hello(nullptr, "", "sleep:50000@5").OK(); });
  };
  MakeProxy();
  double plain = p99(500);
  proxy_->Stop();
  MakeProxy([](ClientServiceConfig* cfg) {
    cfg->hedging.methods = {"SayHello"};
    cfg->hedging.delay = 5;
    cfg->retry.budget_min = 100;
  });
  double hedged = p99(500);
  ExpectHedgingCutsTheTail(plain, hedged);
  std::printf("P99 without hedging %.2f ms, with hedging (5 ms) %.2f ms\n", plain, hedged);
}

}  // namespace
}  // namespace trpc::test::helloworld
