#pragma once

// What the forward_e2e tests share: client -> Forward -> Greeter over loopback, all through
// generated code, with filters on both sides; the same tests run in each thread model, chosen by
// config alone: TRPC_E2E_THREAD_MODEL=merge (default) or fiber (ctest runs both). The tests, by
// topic: forward_e2e_calls_test.cc (the call chain: deadlines, trans_info, filters, HTTP by
// config) and forward_e2e_app_test.cc (TrpcApp and RunInTrpcRuntime: start-up checks, a graceful
// stop with calls in flight).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "examples/forward/forward.trpc.pb.h"
#include "examples/forward/forward_service.h"
#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/client/client_filter.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"
#include "trpc/server/server_filter.h"

namespace trpc::test::forward {

using helloworld::GreeterServiceProxy;
using helloworld::HelloReply;
using helloworld::HelloRequest;

using trpc::testing::FiberModel;

// One thread-model instance with two workers, which the servers and the client share.
inline std::string ModelsYaml() { return trpc::testing::ThreadModelYaml({{"fwd", 2}}); }

inline std::string ThreadId() {
  std::ostringstream out;
  out << std::this_thread::get_id();
  return out.str();
}

// Sleeps without blocking other requests in the fiber model (a fiber sleep); in the merged model
// it holds the worker, which is what a slow merge handler does.
inline void SleepMs(int ms) { fiber::this_fiber::SleepFor(std::chrono::milliseconds(ms)); }

// ---------------------------------------------------------------------------------------------
// The backend and the filters under test.

inline std::atomic<int> g_backend_calls{0};

// Greeter backend: "Hello, " + msg; "trans_info:KEY" replies with the request's trans_info
// value for KEY; "late:N" replies N ms later from another thread (SetResponse(false)).
class Backend final : public helloworld::Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    g_backend_calls.fetch_add(1);
    const std::string& msg = req->msg();
    if (msg.starts_with("trans_info:")) {
      const auto& info = ctx->GetPbReqTransInfo();
      auto it = info.find(msg.substr(11));
      rsp->set_msg(it == info.end() ? "<missing>" : it->second);
      return kSuccStatus;
    }
    if (msg.starts_with("late:")) {
      int ms = std::stoi(msg.substr(5));
      ctx->SetResponse(false);
      std::thread([ctx, ms, msg] {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
        HelloReply late;
        late.set_msg("Hello, " + msg);
        ctx->SendUnaryResponse(kSuccStatus, late);
      }).detach();
      return kSuccStatus;
    }
    rsp->set_msg("Hello, " + msg);
    return kSuccStatus;
  }
};

// On Forward: before the handler, sleeps "test-delay-ms" from the trans_info (spends the
// request's time budget in the middle hop); records the threads that received the request and
// sent the reply in the reply's trans_info.
class MiddleHopFilter final : public MessageServerFilter {
 public:
  std::string Name() const override { return "test_middle_hop"; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::SERVER_POST_RECV_MSG, FilterPoint::SERVER_PRE_RPC_INVOKE,
            FilterPoint::SERVER_PRE_SEND_MSG};
  }
  void operator()(FilterStatus& status, FilterPoint point, const ServerContextPtr& ctx) override {
    if (point == FilterPoint::SERVER_POST_RECV_MSG) {
      ctx->AddRspTransInfo("recv-thread", ThreadId());
    } else if (point == FilterPoint::SERVER_PRE_SEND_MSG) {
      ctx->AddRspTransInfo("send-thread", ThreadId());
    } else {
      auto it = ctx->GetPbReqTransInfo().find("test-delay-ms");
      if (it != ctx->GetPbReqTransInfo().end()) SleepMs(std::stoi(it->second));
    }
  }
};

// On Forward: rejects requests whose trans_info has no "token", with ret 41.
class AuthFilter final : public MessageServerFilter {
 public:
  std::string Name() const override { return "test_auth"; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::SERVER_PRE_RPC_INVOKE};
  }
  void operator()(FilterStatus& status, FilterPoint, const ServerContextPtr& ctx) override {
    if (ctx->GetPbReqTransInfo().count("token") == 0) {
      ctx->SetStatus(Status(kServerAuthErr, "no token"));
      status = FilterStatus::REJECT;
    }
  }
};

// Client side: stamps every request with a token; rejects calls whose message asks for it
// before anything is sent, and counts the calls that ended (POST_RPC_INVOKE).
inline std::atomic<int> g_client_calls_ended{0};
class ClientStampFilter final : public MessageClientFilter {
 public:
  std::string Name() const override { return "test_client_stamp"; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::CLIENT_PRE_RPC_INVOKE, FilterPoint::CLIENT_PRE_SEND_MSG,
            FilterPoint::CLIENT_POST_RPC_INVOKE};
  }
  void operator()(FilterStatus& status, FilterPoint point, const ClientContextPtr& ctx) override {
    if (point == FilterPoint::CLIENT_PRE_RPC_INVOKE) {
      if (ctx->GetReqTransInfo().count("client-reject")) {
        ctx->SetStatus(Status(kClientValidateErr, "rejected by the client filter"));
        status = FilterStatus::REJECT;
      }
    } else if (point == FilterPoint::CLIENT_PRE_SEND_MSG) {
      if (ctx->GetReqTransInfo().count("no-token") == 0) ctx->AddReqTransInfo("token", "t0k3n");
    } else {
      g_client_calls_ended.fetch_add(1);
    }
  }
};

inline void RegisterTestFilters() {
  static bool once = [] {
    RegisterServerFilter(std::make_shared<MiddleHopFilter>());
    RegisterServerFilter(std::make_shared<AuthFilter>());
    RegisterClientFilter(std::make_shared<ClientStampFilter>());
    return true;
  }();
  (void)once;
}

// ---------------------------------------------------------------------------------------------
// client -> Forward -> Greeter, in one process: the backend starts first (port 0), then the
// forward server's client section points at it.

class ForwardE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RegisterTestFilters();
    std::string err;
    Config models;
    ASSERT_TRUE(trpc::testing::StartRuntime(ModelsYaml(), "models.yaml", &models));

    Config backend_config;
    ASSERT_TRUE(LoadConfigFromString(R"(server:
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
)",
                                     "backend.yaml", &backend_config, &err))
        << err;
    backend_ = new Server(backend_config.server);
    backend_->RegisterService("trpc.test.helloworld.Greeter", std::make_shared<Backend>());
    ASSERT_TRUE(backend_->Start(&err)) << err;
    NetAddress backend_addr;
    ASSERT_TRUE(backend_->GetAddress("trpc.test.helloworld.Greeter", &backend_addr));

    // The forward server: the filters and both callees pointing at the backend. The same
    // Forward implementation is served twice: with a roomy service timeout, and with a 150 ms
    // one (the middle hop's budget in the deadline test; a slow sanitizer build must not hit it
    // elsewhere).
    std::string forward_yaml = fmt::format(R"(server:
  filter: [test_middle_hop]
  service:
    - name: trpc.test.forward.Forward
      ip: 127.0.0.1
      port: 0
      timeout: 10000
      filter: [test_auth]
    - name: forward_short_budget
      ip: 127.0.0.1
      port: 0
      timeout: 150
      filter: [test_auth]
client:
  service:
    - name: trpc.test.helloworld.Greeter
      target: {0}
      timeout: 1000
    - name: trpc.test.helloworld.Greeter2
      target: {0}
      timeout: 1000
)",
                                           backend_addr.ToString());
    ASSERT_TRUE(LoadConfigFromString(forward_yaml, "forward.yaml", &forward_config_, &err)) << err;
    SetTrpcClient(std::make_shared<TrpcClient>(forward_config_.client));
    ServicePtr forward = MakeForwardService(&err);
    ASSERT_NE(forward, nullptr) << err;
    forward_ = new Server(forward_config_.server);
    forward_->RegisterService("trpc.test.forward.Forward", forward);
    forward_->RegisterService("forward_short_budget", forward);
    ASSERT_TRUE(forward_->Start(&err)) << err;
    ASSERT_TRUE(forward_->GetAddress("trpc.test.forward.Forward", &forward_addr_));
    ASSERT_TRUE(forward_->GetAddress("forward_short_budget", &forward_short_addr_));
  }

  static void TearDownTestSuite() {
    if (forward_ != nullptr) forward_->Stop();
    if (auto client = SetTrpcClient(nullptr)) client->Stop();
    if (backend_ != nullptr) backend_->Stop();
    delete forward_;
    delete backend_;
    forward_ = backend_ = nullptr;
    runtime::Stop();
  }

  // A proxy to Forward with the client filter, as a caller of the forward server would have.
  std::shared_ptr<ForwardServiceProxy> ForwardProxy(uint32_t timeout_ms = 5000,
                                                    bool short_budget = false) {
    ClientServiceConfig c;
    c.name = fmt::format("forward_caller_{}", ++proxies_made_);
    c.target = (short_budget ? forward_short_addr_ : forward_addr_).ToString();
    c.timeout = timeout_ms;
    c.filter = {"test_client_stamp"};
    std::string err;
    auto proxy = GetTrpcClient()->GetProxy<ForwardServiceProxy>(c.name, c, &err);
    EXPECT_NE(proxy, nullptr) << err;
    return proxy;
  }

  static inline Server* backend_ = nullptr;
  static inline Server* forward_ = nullptr;
  static inline Config forward_config_;
  static inline NetAddress forward_addr_;
  static inline NetAddress forward_short_addr_;
  static inline int proxies_made_ = 0;
};

}  // namespace trpc::test::forward
