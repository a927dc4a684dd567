// Cancellation travels down a call chain: client -> Relay -> Hang. Relay calls Hang with a
// context made from its own (MakeClientContext), but without its deadline; Hang never answers on
// its own. When the client gives up on Relay (its 300 ms timeout: gRPC resets the stream, a
// short trpc connection closes), Relay's downstream call ends at once with 161 instead of at its
// own 10 s timeout, and over gRPC the cancel reaches Hang as well (RST_STREAM at each hop). Both
// thread models (TRPC_E2E_THREAD_MODEL), trpc and gRPC on either hop.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.pb.h"
#include "fmt/format.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/common/wait_for.h"
#include "test/e2e/rpc_e2e_wire.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"
#include "trpc/server/service.h"

namespace trpc::test::cancel {
namespace {

using helloworld::HelloReply;
using helloworld::HelloRequest;
using trpc::testing::FiberModel;
using trpc::testing::WaitFor;

constexpr char kHang[] = "/trpc.test.helloworld.Greeter/Hang";
constexpr char kRelay[] = "/trpc.test.helloworld.Greeter/Relay";

// Hang: holds its calls unanswered (until TearDown) and counts the ones cancelled.
std::mutex g_mu;
std::vector<ServerContextPtr> g_hung;
std::atomic<int> g_hang_calls{0};
std::atomic<int> g_hang_cancelled{0};
// Relay: where its downstream call goes, and how that call ended (-1: not yet).
std::shared_ptr<ServiceProxy> g_down;
std::atomic<int> g_relay_down_ret{-1};
std::atomic<int> g_relay_down_ended{0};
std::atomic<int> g_relay_down_cancelled{0};
std::string g_relay_down_msg;  // (under g_mu)

class ChainService final : public Service {
 public:
  ChainService() {
    AddUnaryMethod<HelloRequest, HelloReply>(
        kHang, [](const ServerContextPtr& ctx, const HelloRequest*, HelloReply*) {
          ctx->SetResponse(false);
          // (Counts only: the signal lives in the call, so holding the call here would be a
          // cycle.)
          ctx->GetCancelSignal()->Subscribe([](const Status&) { g_hang_cancelled.fetch_add(1); });
          std::lock_guard<std::mutex> lock(g_mu);
          g_hung.push_back(ctx);
          g_hang_calls.fetch_add(1);
          return kSuccStatus;
        });
    AddAsyncUnaryMethod<HelloRequest, HelloReply>(kRelay, [](const ServerContextPtr& ctx,
                                                             const HelloRequest* req) {
      ClientContextPtr down = MakeClientContext(ctx);
      down->SetFuncName(kHang);
      // Without the served call's deadline (the proxy's 10 s instead): the client's timeout
      // would otherwise end this call at the same moment, and only the cancel can end it
      // sooner now.
      down->SetDeadlineNs(0);
      return g_down->AsyncUnaryInvoke<HelloReply>(down, *req).Then([down](Future<HelloReply>&& f) {
        const Status& st = down->GetStatus();
        {
          std::lock_guard<std::mutex> lock(g_mu);
          g_relay_down_msg = st.ErrorMessage();
        }
        g_relay_down_ret.store(st.GetFrameworkRetCode());
        if (st.GetFrameworkRetCode() == kClientCanceledErr) g_relay_down_cancelled.fetch_add(1);
        g_relay_down_ended.fetch_add(1);
        return std::move(f);
      });
    });
  }
};

constexpr char kServerYaml[] = R"(server:
  app: test
  server: cancel_e2e
  service:
    - name: chain_trpc
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: cancel
    - name: chain_grpc
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: cancel
plugins:
  log:
    level: error
)";

class CancelE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    config_ = new Config;
    ASSERT_TRUE(trpc::testing::StartRuntime(
        trpc::testing::ThreadModelYaml(FiberModel(), {{"cancel", 2}, {"cancel_client", 1}}) +
            kServerYaml,
        "cancel_e2e.yaml", config_));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
  }
  void SetUp() override {
    g_hang_calls = 0;
    g_hang_cancelled = 0;
    g_relay_down_ret = -1;
    g_relay_down_ended = 0;
    g_relay_down_cancelled = 0;
    server_ = std::make_unique<Server>(config_->server);
    ASSERT_TRUE(server_->RegisterService("chain_trpc", std::make_shared<ChainService>()));
    ASSERT_TRUE(server_->RegisterService("chain_grpc", std::make_shared<ChainService>()));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      for (auto& ctx : g_hung) ctx->SendUnaryResponse(Status(kServerSystemErr, "test over"));
      g_hung.clear();
    }
    if (g_down) g_down->Stop();
    g_down.reset();
    server_->Stop();
    server_.reset();
  }

  // A proxy to service `service` of our server over `protocol`.
  std::shared_ptr<ServiceProxy> Proxy(const std::string& service, const std::string& protocol,
                                      uint32_t timeout_ms, const std::string& conn_type = "long",
                                      const HedgingConfig& hedging = {}) {
    NetAddress addr;
    EXPECT_TRUE(server_->GetAddress(service, &addr));
    ClientServiceConfig c;
    c.name = service;
    c.target = addr.ToString();
    c.protocol = protocol;
    c.timeout = timeout_ms;
    c.conn_type = conn_type;
    c.hedging = hedging;
    auto p = std::make_shared<ServiceProxy>(c, runtime::GetThreadModel("cancel_client"));
    std::string err;
    EXPECT_TRUE(p->Init(&err)) << err;
    return p;
  }

  // Calls Relay through `upstream` (which gives up after its timeout), with Relay's downstream
  // call going through g_down (10 s timeout). Returns how long after the client's own failure
  // Relay's downstream call ended; the client's failure code goes to `*client_ret`.
  int64_t RelayAndGiveUp(ServiceProxy& upstream, int* client_ret) {
    auto ctx = std::make_shared<ClientContext>();
    ctx->SetFuncName(kRelay);
    HelloRequest req;
    req.set_msg("x");
    HelloReply rsp;
    *client_ret = upstream.UnaryInvoke(ctx, req, &rsp).GetFrameworkRetCode();
    const auto gave_up = std::chrono::steady_clock::now();
    EXPECT_TRUE(WaitFor([] { return g_relay_down_ret.load() != -1; }, 5000))
        << "the downstream call did not end within 5 s of the cancel";
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                 gave_up)
        .count();
  }

  static inline Config* config_ = nullptr;
  std::unique_ptr<Server> server_;
};

// trpc has no per-call cancel: the client's connection closing is the signal (its FIN: a trpc
// client does not half-close). A short connection closes when its call times out.
TEST_F(CancelE2eTest, TrpcCallerGoneCancelsTheDownstreamCall) {
  g_down = Proxy("chain_trpc", "trpc", 10000);
  auto up = Proxy("chain_trpc", "trpc", 300, "short");
  int client_ret = 0;
  RelayAndGiveUp(*up, &client_ret);
  EXPECT_EQ(client_ret, kClientInvokeTimeoutErr);
  EXPECT_EQ(g_relay_down_ret.load(), kClientCanceledErr);
  std::lock_guard<std::mutex> lock(g_mu);
  EXPECT_NE(g_relay_down_msg.find("cancelled with the call it was made for"), std::string::npos)
      << g_relay_down_msg;
  EXPECT_NE(g_relay_down_msg.find("the peer closed the connection"), std::string::npos)
      << g_relay_down_msg;
  up->Stop();
}

// gRPC end to end: the client's timeout resets its stream, Relay's downstream call is cancelled
// and resets its own, and Hang's handler sees the cancel.
TEST_F(CancelE2eTest, GrpcResetTravelsToTheEndOfTheChain) {
  g_down = Proxy("chain_grpc", "grpc", 10000);
  auto up = Proxy("chain_grpc", "grpc", 300);
  int client_ret = 0;
  RelayAndGiveUp(*up, &client_ret);
  EXPECT_EQ(client_ret, kClientInvokeTimeoutErr);
  EXPECT_EQ(g_relay_down_ret.load(), kClientCanceledErr);
  EXPECT_TRUE(WaitFor([] { return g_hang_cancelled.load() == 1; }, 5000))
      << g_hang_cancelled.load();
  up->Stop();
}

// A downstream call under a hedging policy: the group ends with 161 and cancels every attempt in
// flight (each resets its gRPC stream: Hang sees both).
TEST_F(CancelE2eTest, AHedgedDownstreamCallCancelsEveryAttempt) {
  HedgingConfig hedging;
  hedging.methods = {kHang};
  hedging.delay = 20;
  hedging.max_attempts = 2;
  g_down = Proxy("chain_grpc", "grpc", 10000, "long", hedging);
  auto up = Proxy("chain_grpc", "grpc", 300);
  int client_ret = 0;
  RelayAndGiveUp(*up, &client_ret);
  EXPECT_EQ(g_hang_calls.load(), 2);  // the hedge went out after 20 ms
  EXPECT_EQ(g_relay_down_ret.load(), kClientCanceledErr);
  EXPECT_TRUE(WaitFor([] { return g_hang_cancelled.load() == 2; }, 5000))
      << g_hang_cancelled.load();
  up->Stop();
}

// Mixed hops: gRPC in (reset), trpc out (the downstream call is given up on its connection,
// which stays open for other calls); trpc in (connection closed), gRPC out.
TEST_F(CancelE2eTest, MixedProtocolsCancelEachHop) {
  g_down = Proxy("chain_trpc", "trpc", 10000);
  auto up = Proxy("chain_grpc", "grpc", 300);
  int client_ret = 0;
  RelayAndGiveUp(*up, &client_ret);
  EXPECT_EQ(g_relay_down_ret.load(), kClientCanceledErr);
  EXPECT_EQ(g_hang_cancelled.load(), 0);  // trpc cannot tell Hang about one call...
  up->Stop();
  g_down->Stop();
  // ... but Hang learns once Relay's connection to it closes.
  EXPECT_TRUE(WaitFor([] { return g_hang_cancelled.load() == 1; }, 5000))
      << g_hang_cancelled.load();

  g_hang_cancelled = 0;
  g_relay_down_ret = -1;
  g_down = Proxy("chain_grpc", "grpc", 10000);
  up = Proxy("chain_trpc", "trpc", 300, "short");
  RelayAndGiveUp(*up, &client_ret);
  EXPECT_EQ(g_relay_down_ret.load(), kClientCanceledErr);
  EXPECT_TRUE(WaitFor([] { return g_hang_cancelled.load() == 1; }, 5000))
      << g_hang_cancelled.load();
  up->Stop();
}

// A call that ends normally cancels nothing: the chain answers, and the signal of a served call
// on a connection that stays open never fires.
TEST_F(CancelE2eTest, CallsThatEndNormallyCancelNothing) {
  g_down = Proxy("chain_grpc", "grpc", 10000);
  auto up = Proxy("chain_trpc", "trpc", 5000);
  std::vector<std::thread> answer;
  // Relay -> Hang, answered by the test once Hang holds the call.
  auto ctx = std::make_shared<ClientContext>();
  ctx->SetFuncName(kRelay);
  HelloRequest req;
  req.set_msg("x");
  Future<HelloReply> f = up->AsyncUnaryInvoke<HelloReply>(ctx, req);
  ASSERT_TRUE(WaitFor([] { return g_hang_calls.load() == 1; }, 5000));
  {
    std::lock_guard<std::mutex> lock(g_mu);
    HelloReply rsp;
    rsp.set_msg("answered");
    g_hung[0]->SendUnaryResponse(kSuccStatus, rsp);
    g_hung.clear();
  }
  ASSERT_TRUE(WaitFor([&f] { return f.IsReady() || f.IsFailed(); }, 5000));
  ASSERT_TRUE(f.IsReady()) << ctx->GetStatus().ToString();
  EXPECT_EQ(f.GetValue().msg(), "answered");
  EXPECT_EQ(g_relay_down_ret.load(), 0);
  EXPECT_EQ(g_hang_cancelled.load(), 0);
  up->Stop();
}

// Many callers on raw trpc connections send Relay and close at once, most of them before their
// handler has asked for the signal (then it is made already fired): every downstream call ends
// with 161, none waits for its 10 s timeout. Under TSan this races the signal's lazy creation
// against the connection's close.
TEST_F(CancelE2eTest, ManyCallersGoingAwayCancelEveryDownstreamCall) {
  g_down = Proxy("chain_trpc", "trpc", 10000);
  NetAddress addr;
  ASSERT_TRUE(server_->GetAddress("chain_trpc", &addr));
  constexpr int kCallers = 40;
  RpcRequest req;
  req.request_id = 1;
  req.timeout_ms = 0;  // no deadline: only the cancel ends the downstream call early
  req.callee = "chain_trpc";
  req.func = kRelay;
  HelloRequest body;
  body.set_msg("x");
  ChainBuffer out;
  ASSERT_TRUE(helloworld::TrpcClientCodec()->EncodeRequest(&req, &body, &out));
  const std::string frame = out.ToString();
  for (int i = 0; i < kCallers; ++i) {
    helloworld::RawConnection c(addr);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE(c.Send(frame));
    // Half of them wait until their handler has run; the rest close at once.
    if (i % 2 == 0) {
      ASSERT_TRUE(WaitFor([i] { return g_hang_calls.load() >= i / 2 + 1; }, 5000));
    }
  }
  EXPECT_TRUE(WaitFor([] { return g_relay_down_ended.load() == kCallers; }, 5000))
      << g_relay_down_ended.load() << " of " << kCallers << " downstream calls ended; "
      << g_hang_calls.load() << " reached Hang";
  EXPECT_EQ(g_relay_down_cancelled.load(), kCallers);
}

}  // namespace
}  // namespace trpc::test::cancel
