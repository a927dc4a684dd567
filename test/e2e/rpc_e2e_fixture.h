#pragma once

// What the rpc_e2e tests share: the service under test, its config in the thread model
// TRPC_E2E_THREAD_MODEL names, and the fixture that starts a server and a proxy per test. The
// tests, by topic: rpc_e2e_calls_test.cc (call kinds, errors, sizes, order),
// rpc_e2e_connection_test.cc (bad input and per-connection limits), rpc_e2e_lifecycle_test.cc
// (start and stop).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/common/wait_for.h"
#include "test/e2e/rpc_e2e_wire.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/detail/service_adapter.h"
#include "trpc/server/server.h"

namespace trpc::test::helloworld {

inline constexpr char kClientModel[] = "e2e_client";

inline constexpr char kServerYaml[] = R"(server:
  app: test
  server: e2e
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      network: tcp
      ip: 127.0.0.1
      port: 0
      max_conn_num: 100
      idle_time: 60000
      max_packet_size: 10000000
      timeout: 1000
      threadmodel_instance_name: e2e_server
plugins:
  log:
    level: warn
)";

using trpc::testing::FiberModel;

// Two thread-model instances: the server's (2 workers) and the client's (1 worker, so a proxy
// with one backend uses exactly one connection).
inline std::string ModelsYaml() {
  return trpc::testing::ThreadModelYaml({{"e2e_server", 2}, {"e2e_client", 1}});
}
inline std::string ConfigYaml() { return ModelsYaml() + kServerYaml; }

// ---------------------------------------------------------------------------------------------
// The service under test.

inline std::atomic<int> g_count{0};            // "count" requests handled
inline std::atomic<int> g_blocks_started{0};   // "block:N" handlers that have begun
inline std::atomic<int> g_sleeps_started{0};   // "sleep:N" handlers that have begun
inline std::atomic<int> g_sleeps_finished{0};  // "sleep:N" handlers that have returned

// SayHello by message: "throw" throws; "sleep:N" sleeps N ms (a fiber sleep in the fiber model,
// which parks only the handler's fiber; a thread sleep in the merge model); "sleep:N:big:M" sleeps
// N ms, then replies with M bytes of 'x'; "count" bumps g_count; "big:N" replies with N bytes of
// 'x'; "attachment" replies with the request's attachment reversed; "app_error" answers Status::AppError(-404, ...); "framework_ret" answers Status(-404, ...)
// (a framework code no caller knows);
// everything else (and sleep/count) replies "Hello, " + msg.
class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    const std::string& msg = req->msg();
    if (msg == "throw") throw std::runtime_error("the handler threw on purpose");
    if (msg == "app_error") return Status::AppError(-404, "no such greeting");
    if (msg == "framework_ret") return Status(-404, "no such greeting");
    if (msg.starts_with("big:")) {
      rsp->set_msg(std::string(std::stoul(msg.substr(4)), 'x'));
      return kSuccStatus;
    }
    if (msg.starts_with("block:")) {  // holds the worker thread in either model
      g_blocks_started.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(msg.substr(6))));
    } else if (msg.starts_with("sleep:")) {
      g_sleeps_started.fetch_add(1);
      fiber::this_fiber::SleepFor(std::chrono::milliseconds(std::stoi(msg.substr(6))));
      g_sleeps_finished.fetch_add(1);
      if (size_t big = msg.find(":big:"); big != std::string::npos) {
        rsp->set_msg(std::string(std::stoul(msg.substr(big + 5)), 'x'));
        return kSuccStatus;
      }
    } else if (msg == "count") {
      g_count.fetch_add(1);
    } else if (msg == "attachment") {  // replies with the request's attachment reversed
      std::string a = ctx->GetRequestAttachment().ToString();
      ChainBuffer reversed;
      reversed.Append(std::string(a.rbegin(), a.rend()));
      ctx->SetResponseAttachment(std::move(reversed));
    }
    rsp->set_msg("Hello, " + msg);
    return kSuccStatus;
  }
};

using trpc::testing::WaitFor;

// Letters in a position-dependent order (a proto3 string must be valid UTF-8).
inline std::string Letters(size_t n) {
  std::string s(n, 'a');
  uint32_t x = 7;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>('a' + (x >> 24) % 26);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Fixture: the runtime lives for the whole suite; each test starts its own server (so it can
// change the service's limits) and a proxy to it.

class RpcE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    config_ = new Config;
    ASSERT_TRUE(trpc::testing::StartRuntime(ConfigYaml(), "rpc_e2e_test.yaml", config_,
                                            /*apply_log_level=*/true));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
    config_ = nullptr;
  }

  void TearDown() override {
    if (proxy_) proxy_->Stop();
    proxy_.reset();
    if (server_) server_->Stop();
    server_.reset();
  }

  // Starts a server from the suite's config with its service changed by `tweak`, and a proxy
  // (client model, one backend, its config changed by `client_tweak`) whose target is the
  // server's bound address.
  void StartServer(const std::function<void(ServiceConfig*)>& tweak = {},
                   const std::function<void(ClientServiceConfig*)>& client_tweak = {}) {
    ASSERT_NE(config_, nullptr);
    ServerConfig server_config = config_->server;
    ASSERT_EQ(server_config.service.size(), 1u);
    if (tweak) tweak(&server_config.service[0]);
    server_ = std::make_unique<Server>(server_config);
    ASSERT_TRUE(server_->RegisterService(kGreeterName, std::make_shared<TestGreeter>()));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kGreeterName, &address_));
    ASSERT_NE(address_.port(), 0);

    ClientServiceConfig client_config;
    client_config.name = kGreeterName;
    client_config.target = address_.ToString();
    client_config.protocol = "trpc";
    client_config.max_packet_size = 16'000'000;  // room for the 10 MB reply
    if (client_tweak) client_tweak(&client_config);
    ThreadModel* model = runtime::GetThreadModel(kClientModel);
    ASSERT_NE(model, nullptr);
    proxy_ = std::make_shared<GreeterServiceProxy>(client_config, model);
    ASSERT_TRUE(proxy_->Init(&err)) << err;
  }

  const detail::ServiceAdapter& adapter() const { return *server_->GetAdapter(kGreeterName); }
  detail::ServiceStats stats() const { return adapter().stats(); }

  // A synchronous SayHello through the proxy.
  Status Hello(const std::string& msg, std::string* reply = nullptr, uint32_t timeout_ms = 0) {
    auto ctx = MakeClientContext();
    if (timeout_ms > 0) ctx->SetTimeout(timeout_ms);
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    Status st = proxy_->SayHello(ctx, req, &rsp);
    if (reply) *reply = rsp.msg();
    return st;
  }
  // An asynchronous SayHello through the proxy, in callback form: `done` gets the call's status
  // once the reply (if any) is in `*rsp`.
  void AsyncHello(const ClientContextPtr& ctx, const HelloRequest& req, HelloReply* rsp,
                  std::function<void(const Status&)> done) {
    proxy_->AsyncSayHello(ctx, req).Then([rsp, done = std::move(done)](Future<HelloReply>&& reply) {
      if (reply.IsFailed()) {
        done(reply.GetException());
        return;
      }
      *rsp = reply.GetValue();
      done(kSuccStatus);
    });
  }
  // Checks that an ordinary call through the proxy succeeds.
  void ExpectServing(const std::string& msg = "are you there") {
    std::string reply;
    Status st = Hello(msg, &reply);
    EXPECT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(reply, "Hello, " + msg);
  }

  static inline Config* config_ = nullptr;
  std::unique_ptr<Server> server_;
  NetAddress address_;
  std::shared_ptr<GreeterServiceProxy> proxy_;
};

}  // namespace trpc::test::helloworld
