// End-to-end tests of the service author's API (forward_e2e_fixture.h): client -> Forward ->
// Greeter with deadlines that follow the call chain, trans_info, filters that reject calls, the
// thread a merge worker replies on, and the same Forward calling Greeter over HTTP by config.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "test/e2e/forward_e2e_fixture.h"
#include "trpc/server/http/http_service.h"

namespace trpc::test::forward {
namespace {

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

}  // namespace
}  // namespace trpc::test::forward
