// End-to-end tests of the service author's API: client -> Forward -> Greeter over loopback, all
// through generated code, with deadlines that follow the call chain, trans_info, filters, and
// a graceful stop of a TrpcApp with calls in flight. The same tests run in each thread model,
// chosen by config alone: TRPC_E2E_THREAD_MODEL=merge (default) or fiber (ctest runs both).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <latch>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "examples/forward/forward.trpc.pb.h"
#include "examples/forward/forward_service.h"
#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "trpc/app/trpc_app.h"
#include "trpc/client/client_filter.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/http/http_service.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"
#include "trpc/server/server_filter.h"

namespace trpc::test::forward {
namespace {

using helloworld::GreeterServiceProxy;
using helloworld::HelloReply;
using helloworld::HelloRequest;

bool FiberModel() {
  const char* m = std::getenv("TRPC_E2E_THREAD_MODEL");
  return m != nullptr && std::string_view(m) == "fiber";
}

std::string ThreadModelYaml() {
  return FiberModel() ? R"(global:
  threadmodel:
    fiber:
      - instance_name: fwd
        concurrency_hint: 2
        scheduling_group_size: 0
)"
                      : R"(global:
  threadmodel:
    default:
      - instance_name: fwd
        io_handle_type: merge
        io_thread_num: 2
)";
}

std::string ThreadId() {
  std::ostringstream out;
  out << std::this_thread::get_id();
  return out.str();
}

// Sleeps without blocking other requests in the fiber model (a fiber sleep); in the merged model
// it holds the worker, which is what a slow merge handler does.
void SleepMs(int ms) { fiber::this_fiber::SleepFor(std::chrono::milliseconds(ms)); }

// ---------------------------------------------------------------------------------------------
// The backend and the filters under test.

std::atomic<int> g_backend_calls{0};

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
std::atomic<int> g_client_calls_ended{0};
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

void RegisterTestFilters() {
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
    ASSERT_TRUE(LoadConfigFromString(ThreadModelYaml(), "models.yaml", &models, &err)) << err;
    ASSERT_TRUE(runtime::Start(models.global.threadmodel, &err)) << err;

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

TEST_F(ForwardE2eTest, ClientToForwardToGreeter) {
  auto proxy = ForwardProxy();
  ASSERT_NE(proxy, nullptr);
  HelloRequest req;
  req.set_msg("world");
  HelloReply rsp;
  Status st = proxy->Route(MakeClientContext(), req, &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "Hello, world");

  HelloReply both;
  st = proxy->ParallelRoute(MakeClientContext(), req, &both);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(both.msg(), "Hello, world | Hello, world");

  // Async client side too, many at once.
  std::vector<Future<HelloReply>> futures;
  for (int i = 0; i < 50; ++i) {
    HelloRequest r;
    r.set_msg("n" + std::to_string(i));
    futures.push_back(proxy->AsyncRoute(MakeClientContext(), r));
  }
  auto all = BlockingGet(WhenAll(std::move(futures))).GetValue();
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(all[i].IsReady()) << all[i].GetException().ToString();
    EXPECT_EQ(all[i].GetValue().msg(), "Hello, n" + std::to_string(i));
  }
}

TEST_F(ForwardE2eTest, MergedModelRepliesOnTheThreadThatReadTheRequest) {
  auto proxy = ForwardProxy();
  ASSERT_NE(proxy, nullptr);
  for (int i = 0; i < 20; ++i) {
    HelloRequest req;
    req.set_msg("thread");
    HelloReply rsp;
    auto ctx = MakeClientContext();
    Status st = (i % 2 == 0) ? proxy->Route(ctx, req, &rsp) : proxy->ParallelRoute(ctx, req, &rsp);
    ASSERT_TRUE(st.OK()) << st.ToString();
    const TransInfo& info = ctx->GetRspTransInfo();
    ASSERT_EQ(info.count("recv-thread"), 1u);
    ASSERT_EQ(info.count("send-thread"), 1u);
    // The merged model's async handler replies from the continuation of a downstream call made
    // and completed on the same worker. (Fibers may move between workers: no such promise.)
    if (!FiberModel()) {
      EXPECT_EQ(info.at("recv-thread"), info.at("send-thread"));
    }
  }
}

// A synchronous handler that calls the backend through the generated synchronous SayHello.
class SyncCaller final : public helloworld::Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    auto greeter = GetTrpcClient()->GetProxy<GreeterServiceProxy>("trpc.test.helloworld.Greeter");
    if (greeter == nullptr) return Status(kServerSystemErr, "no proxy");
    return greeter->SayHello(MakeClientContext(ctx, greeter), *req, rsp);
  }
};

// In the merged model a synchronous downstream call from a worker is refused (31), and the
// refusal names the generated method to call instead; in the fiber model it just parks.
TEST_F(ForwardE2eTest, SynchronousDownstreamCallFromAMergeWorkerNamesTheAsyncMethod) {
  Config config;
  std::string err;
  ASSERT_TRUE(
      LoadConfigFromString("server:\n  service:\n    - name: sync_caller\n"
                           "      ip: 127.0.0.1\n      port: 0\n",
                           "sync.yaml", &config, &err))
      << err;
  Server server(config.server);
  server.RegisterService("sync_caller", std::make_shared<SyncCaller>());
  ASSERT_TRUE(server.Start(&err)) << err;
  NetAddress addr;
  ASSERT_TRUE(server.GetAddress("sync_caller", &addr));
  ClientServiceConfig c;
  c.name = "sync_caller_client";
  c.target = addr.ToString();
  c.timeout = 5000;
  auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>(c.name, c, &err);
  ASSERT_NE(proxy, nullptr) << err;
  HelloRequest req;
  req.set_msg("sync");
  HelloReply rsp;
  Status st = proxy->SayHello(MakeClientContext(), req, &rsp);
  if (FiberModel()) {
    ASSERT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(rsp.msg(), "Hello, sync");
  } else {
    EXPECT_EQ(st.GetFrameworkRetCode(), kServerSystemErr) << st.ToString();
    EXPECT_NE(st.ErrorMessage().find("GreeterServiceProxy::AsyncSayHello"), std::string::npos)
        << st.ErrorMessage();
  }
  server.Stop();
}

TEST_F(ForwardE2eTest, TransInfoFlowsEndToEnd) {
  auto proxy = ForwardProxy();
  ASSERT_NE(proxy, nullptr);
  HelloRequest req;
  req.set_msg("trans_info:request-tag");
  HelloReply rsp;
  auto ctx = MakeClientContext();
  ctx->AddReqTransInfo("request-tag", "from-the-client");
  Status st = proxy->Route(ctx, req, &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  // The backend, two hops away, saw the client's metadata.
  EXPECT_EQ(rsp.msg(), "from-the-client");
  // And the client filter's stamp too.
  req.set_msg("trans_info:token");
  st = proxy->Route(MakeClientContext(), req, &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "t0k3n");
}

TEST_F(ForwardE2eTest, DeadlineRunningOutInTheMiddleHopIsNotForwarded) {
  // (a) The client's own budget (60 ms) runs out while the middle hop sleeps 120 ms: the client
  // sees 101, and the forward server does not call the backend with nothing left.
  auto proxy = ForwardProxy(/*timeout_ms=*/60);
  ASSERT_NE(proxy, nullptr);
  int before = g_backend_calls.load();
  HelloRequest req;
  req.set_msg("late hop");
  HelloReply rsp;
  auto ctx = MakeClientContext();
  ctx->AddReqTransInfo("test-delay-ms", "120");
  Status st = proxy->Route(ctx, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kClientInvokeTimeoutErr) << st.ToString();

  // (b) The forward service's own budget (150 ms) runs out in the middle hop while the client
  // still waits (5 s): the client gets the server's timeout, 21.
  auto patient = ForwardProxy(/*timeout_ms=*/5000, /*short_budget=*/true);
  ASSERT_NE(patient, nullptr);
  auto ctx2 = MakeClientContext();
  ctx2->AddReqTransInfo("test-delay-ms", "200");
  st = patient->Route(ctx2, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerTimeoutErr) << st.ToString();
  // ParallelRoute too: neither backend call goes out.
  auto ctx3 = MakeClientContext();
  ctx3->AddReqTransInfo("test-delay-ms", "200");
  st = patient->ParallelRoute(ctx3, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerTimeoutErr) << st.ToString();

  // By now (a)'s middle hop has long finished its sleep and given up.
  SleepMs(150);
  EXPECT_EQ(g_backend_calls.load(), before);
}

TEST_F(ForwardE2eTest, FiltersRejectCalls) {
  auto proxy = ForwardProxy();
  ASSERT_NE(proxy, nullptr);
  HelloRequest req;
  req.set_msg("filtered");
  HelloReply rsp;
  int before = g_backend_calls.load();
  int ended_before = g_client_calls_ended.load();

  // Server filter: no token, no call.
  auto ctx = MakeClientContext();
  ctx->AddReqTransInfo("no-token", "1");
  Status st = proxy->Route(ctx, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerAuthErr) << st.ToString();
  EXPECT_EQ(st.ErrorMessage(), "no token");

  // Client filter: rejected before anything is sent.
  auto ctx2 = MakeClientContext();
  ctx2->AddReqTransInfo("client-reject", "1");
  st = proxy->Route(ctx2, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kClientValidateErr) << st.ToString();
  auto f = proxy->AsyncRoute(ctx2, req);
  auto done = BlockingGet(std::move(f));
  ASSERT_TRUE(done.IsFailed());
  EXPECT_EQ(done.GetException().GetFrameworkRetCode(), kClientValidateErr);

  EXPECT_EQ(g_backend_calls.load(), before);
  // POST_RPC_INVOKE ran for the call that was sent (and failed), not for the rejected ones.
  EXPECT_EQ(g_client_calls_ended.load(), ended_before + 1);

  // With the token, the same call goes through.
  st = proxy->Route(MakeClientContext(), req, &rsp);
  EXPECT_TRUE(st.OK()) << st.ToString();
}

// The same Forward implementation calls its Greeter over HTTP/1.1 when the client section says
// `protocol: http` (the backend serves Greeter through an HttpService's REST mapping): no code
// changes, only config.
TEST_F(ForwardE2eTest, ForwardsOverHttpByConfigOnly) {
  std::string err;
  Config backend_config;
  ASSERT_TRUE(LoadConfigFromString(R"(server:
  service:
    - name: greeter_over_http
      protocol: http
      ip: 127.0.0.1
      port: 0
)",
                                   "http_backend.yaml", &backend_config, &err))
      << err;
  auto http = std::make_shared<http::HttpService>();
  http->MapRpc(std::make_shared<Backend>());
  Server backend(backend_config.server);
  backend.RegisterService("greeter_over_http", http);
  ASSERT_TRUE(backend.Start(&err)) << err;
  NetAddress backend_addr;
  ASSERT_TRUE(backend.GetAddress("greeter_over_http", &backend_addr));

  Config forward_config;
  ASSERT_TRUE(LoadConfigFromString(fmt::format(R"(server:
  service:
    - name: trpc.test.forward.Forward
      ip: 127.0.0.1
      port: 0
client:
  service:
    - name: trpc.test.helloworld.Greeter
      target: {0}
      protocol: http
    - name: trpc.test.helloworld.Greeter2
      target: {0}
      protocol: http
      pipeline_depth: 4
)",
                                               backend_addr.ToString()),
                                   "forward_http.yaml", &forward_config, &err))
      << err;
  // The forward service takes its proxies from the process's client: this config's, for now.
  auto http_client = std::make_shared<TrpcClient>(forward_config.client);
  auto suite_client = SetTrpcClient(http_client);
  ServicePtr forward = MakeForwardService(&err);
  SetTrpcClient(suite_client);
  ASSERT_NE(forward, nullptr) << err;
  Server forward_server(forward_config.server);
  forward_server.RegisterService("trpc.test.forward.Forward", forward);
  ASSERT_TRUE(forward_server.Start(&err)) << err;
  NetAddress forward_addr;
  ASSERT_TRUE(forward_server.GetAddress("trpc.test.forward.Forward", &forward_addr));

  ClientServiceConfig c;
  c.target = forward_addr.ToString();
  c.timeout = 5000;
  auto proxy = GetTrpcClient()->GetProxy<ForwardServiceProxy>("forward_over_http", c, &err);
  ASSERT_NE(proxy, nullptr) << err;
  HelloRequest req;
  req.set_msg("over http");
  HelloReply rsp;
  Status st = proxy->Route(MakeClientContext(), req, &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "Hello, over http");
  st = proxy->ParallelRoute(MakeClientContext(), req, &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "Hello, over http | Hello, over http");
  std::vector<Future<HelloReply>> futures;
  for (int i = 0; i < 200; ++i) {
    HelloRequest r;
    r.set_msg("h" + std::to_string(i));
    futures.push_back(i % 2 ? proxy->AsyncRoute(MakeClientContext(), r)
                            : proxy->AsyncParallelRoute(MakeClientContext(), r));
  }
  auto all = BlockingGet(WhenAll(std::move(futures))).GetValue();
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(all[i].IsReady()) << all[i].GetException().ToString();
    const std::string one = "Hello, h" + std::to_string(i);
    EXPECT_EQ(all[i].GetValue().msg(), i % 2 ? one : one + " | " + one);
  }
  forward_server.Stop();
  http_client->Stop();
  backend.Stop();
}

// The message lists the registered filters, and suggests the closest one to a misspelt name.
TEST(ForwardConfigTest, UnknownFilterStopsStartWithItsLine) {
  RegisterTestFilters();
  std::string err;
  Config config;
  ASSERT_TRUE(LoadConfigFromString(ThreadModelYaml() + R"(server:
  service:
    - name: svc
      ip: 127.0.0.1
      port: 0
      filter: [no_such_filter]
)",
                                   "bad_filter.yaml", &config, &err))
      << err;
  ASSERT_TRUE(runtime::Start(config.global.threadmodel, &err)) << err;
  {
    Server server(config.server);
    server.RegisterService("svc", std::make_shared<Backend>());
    EXPECT_FALSE(server.Start(&err));
    EXPECT_EQ(err,
              "bad_filter.yaml:9: service 'svc': no server filter named 'no_such_filter' is "
              "registered (registered: test_auth, test_middle_hop)");
  }
  config.server.service[0].filter = {"test_auht"};
  {
    Server server(config.server);
    server.RegisterService("svc", std::make_shared<Backend>());
    EXPECT_FALSE(server.Start(&err));
    EXPECT_EQ(err,
              "bad_filter.yaml:9: service 'svc': no server filter named 'test_auht' is "
              "registered (did you mean 'test_auth'? registered: test_auth, test_middle_hop)");
  }
  ClientServiceConfig c;
  c.name = "callee";
  c.target = "127.0.0.1:1";
  c.filter = {"no_such_client_filter"};
  c.origin = "client.yaml:3";
  TrpcClient client(ClientConfig{});
  EXPECT_EQ(client.GetProxy<GreeterServiceProxy>("callee", c, &err), nullptr);
  EXPECT_EQ(err,
            "client.yaml:3: client callee: no client filter named 'no_such_client_filter' is "
            "registered (registered: test_client_stamp)");
  c.filter = {"test_client_stmap"};
  EXPECT_EQ(client.GetProxy<GreeterServiceProxy>("callee", c, &err), nullptr);
  EXPECT_EQ(err,
            "client.yaml:3: client callee: no client filter named 'test_client_stmap' is "
            "registered (did you mean 'test_client_stamp'? registered: test_client_stamp)");
  client.Stop();
  runtime::Stop();
}

// ---------------------------------------------------------------------------------------------
// TrpcApp: start from YAML, stop gracefully with calls in flight.

class GreeterApp final : public TrpcApp {
 protected:
  int Initialize() override {
    RegisterService("trpc.test.helloworld.Greeter", std::make_shared<Backend>());
    return 0;
  }
};

TEST(TrpcAppTest, GracefulStopCompletesEveryCallInFlight) {
  RegisterTestFilters();
  std::string err;
  Config config;
  ASSERT_TRUE(LoadConfigFromString(ThreadModelYaml() + R"(server:
  stop_max_wait_time: 5000
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
      timeout: 5000
)",
                                   "app.yaml", &config, &err))
      << err;
  GreeterApp app;
  ASSERT_EQ(app.Start(config), 0);
  NetAddress addr;
  ASSERT_TRUE(app.GetServer()->GetAddress("trpc.test.helloworld.Greeter", &addr));
  ClientServiceConfig c;
  c.target = addr.ToString();
  c.timeout = 5000;
  auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>("greeter", c, &err);
  ASSERT_NE(proxy, nullptr) << err;

  constexpr int kCalls = 100;
  int before = g_backend_calls.load();
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::latch done(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    HelloRequest req;
    req.set_msg("late:300");
    proxy->AsyncSayHello(MakeClientContext(), req).Then([&](Future<HelloReply>&& f) {
      (f.IsReady() && f.GetValue().msg() == "Hello, late:300" ? ok : failed).fetch_add(1);
      done.count_down();
    });
  }
  // Every call has reached the handler (which replies 300 ms later) before the stop begins.
  for (int i = 0; i < 2000 && g_backend_calls.load() - before < kCalls; ++i) SleepMs(1);
  ASSERT_EQ(g_backend_calls.load() - before, kCalls);
  app.Terminate();
  app.Wait();  // stops the server, waiting for the replies, then the client and the runtime
  done.wait();
  EXPECT_EQ(ok.load(), kCalls);
  EXPECT_EQ(failed.load(), 0);
}

// ---------------------------------------------------------------------------------------------
// Start-up checks of the client section: a bad protocol stops TrpcApp before Initialize() and
// RunInTrpcRuntime before its function runs; an unregistered client filter stops TrpcApp after
// Initialize() (where filters are registered). Each names its config line.

class InitRecordingApp final : public TrpcApp {
 public:
  bool initialized = false;

 protected:
  int Initialize() override {
    initialized = true;
    return 0;
  }
};

// Runs `start` with stderr captured; returns what it printed.
std::string StderrOf(const std::function<void()>& start) {
  ::testing::internal::CaptureStderr();
  start();
  return ::testing::internal::GetCapturedStderr();
}

Config ClientConfigYaml(const std::string& client_section) {
  Config config;
  std::string err;
  EXPECT_TRUE(LoadConfigFromString(ThreadModelYaml() + client_section, "app.yaml", &config, &err))
      << err;
  return config;
}

constexpr char kBadProtocolClient[] = R"(client:
  service:
    - name: callee
      target: 127.0.0.1:1
    - name: typo
      target: 127.0.0.1:1
      protocol: htpp
)";
constexpr char kBadProtocolMessage[] =
    "app.yaml:11: client service 'typo': unknown protocol 'htpp' (did you mean 'http'? "
    "registered: grpc, http, trpc)";

TEST(TrpcAppTest, UnknownClientProtocolStopsStartBeforeInitialize) {
  Config config = ClientConfigYaml(kBadProtocolClient);
  InitRecordingApp app;
  int rc = 0;
  std::string out = StderrOf([&] { rc = app.Start(config); });
  EXPECT_EQ(rc, 1);
  EXPECT_FALSE(app.initialized);
  EXPECT_NE(out.find(kBadProtocolMessage), std::string::npos) << out;
  EXPECT_EQ(GetTrpcClient(), nullptr);
}

TEST(TrpcAppTest, UnknownClientFilterStopsStartAfterInitialize) {
  RegisterTestFilters();
  Config config = ClientConfigYaml(R"(client:
  filter: [test_client_stmap]
  service:
    - name: callee
      target: 127.0.0.1:1
)");
  InitRecordingApp app;
  int rc = 0;
  std::string out = StderrOf([&] { rc = app.Start(config); });
  EXPECT_EQ(rc, 1);
  EXPECT_TRUE(app.initialized);
  EXPECT_NE(out.find("app.yaml:8: client.filter: no client filter named 'test_client_stmap' is "
                     "registered (did you mean 'test_client_stamp'? registered: "
                     "test_client_stamp)"),
            std::string::npos)
      << out;

  config = ClientConfigYaml(R"(client:
  service:
    - name: callee
      target: 127.0.0.1:1
      filter: [no_such_filter]
)");
  InitRecordingApp app2;
  out = StderrOf([&] { rc = app2.Start(config); });
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("app.yaml:9: client service 'callee': no client filter named "
                     "'no_such_filter' is registered (registered: test_client_stamp)"),
            std::string::npos)
      << out;
}

// A program that registers services its config does not serve stops at start-up (it would say
// it is ready and serve nothing), naming them; one that serves nothing (a client) starts.
TEST(TrpcAppTest, RegisteredServicesTheConfigDoesNotServeStopStart) {
  Config config = ClientConfigYaml("");  // no server section
  GreeterApp app;
  int rc = 0;
  std::string out = StderrOf([&] { rc = app.Start(config); });
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("app.yaml:1: server.service is empty, so none of the registered services "
                     "is served ('trpc.test.helloworld.Greeter'): configure them under "
                     "server.service"),
            std::string::npos)
      << out;
  EXPECT_EQ(GetTrpcClient(), nullptr);

  config = ClientConfigYaml(R"(server:
  service:
    - name: trpc.test.helloworld.Greter
      ip: 127.0.0.1
      port: 0
)");
  GreeterApp app2;
  out = StderrOf([&] { rc = app2.Start(config); });
  EXPECT_EQ(rc, 1);
  EXPECT_NE(out.find("app.yaml:9: service 'trpc.test.helloworld.Greter' is configured but no "
                     "implementation was registered under that name (did you mean "
                     "'trpc.test.helloworld.Greeter'? registered: trpc.test.helloworld.Greeter)"),
            std::string::npos)
      << out;
}

TEST(TrpcAppTest, AProgramThatServesNothingStarts) {
  Config config =
      ClientConfigYaml("client:\n  service:\n    - {name: callee, target: '127.0.0.1:1'}\n");
  InitRecordingApp app;
  ASSERT_EQ(app.Start(config), 0);
  EXPECT_TRUE(app.initialized);
  EXPECT_NE(GetTrpcClient(), nullptr);
  app.Terminate();
  app.Wait();
}

TEST(RunInTrpcRuntimeTest, UnknownClientProtocolStopsBeforeTheFunctionRuns) {
  Config config = ClientConfigYaml(kBadProtocolClient);
  bool ran = false;
  int rc = 0;
  std::string out = StderrOf([&] {
    rc = RunInTrpcRuntime(config, [&] {
      ran = true;
      return 0;
    });
  });
  EXPECT_EQ(rc, 1);
  EXPECT_FALSE(ran);
  EXPECT_NE(out.find(kBadProtocolMessage), std::string::npos) << out;
  // The runtime was stopped again: a good config runs.
  config = ClientConfigYaml("");
  EXPECT_EQ(RunInTrpcRuntime(config, [&] { return GetTrpcClient() != nullptr ? 7 : 0; }), 7);
}

}  // namespace
}  // namespace trpc::test::forward
