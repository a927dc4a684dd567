// gRPC end to end (grpc_e2e_fixture.h): our client and server through the generated Greeter:
// sync and async calls, status codes, health checks, GOAWAY on stop, a trpc -> gRPC chain
// keeping one budget, and the client's protocol options.

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "test/common/wait_for.h"
#include "test/e2e/grpc_e2e_fixture.h"
#include "trpc/server/grpc/health.pb.h"

namespace trpc::test::grpc_e2e {
namespace {

TEST_F(GrpcE2eTest, SyncAndAsyncCalls) {
  auto p = Proxy(addr_);
  HelloReply rsp;
  ASSERT_TRUE(Say(p.get(), "world", &rsp).OK());
  EXPECT_EQ(rsp.msg(), "Hello, world");
  // Many calls in flight at once share the connection (one stream each).
  std::vector<Future<HelloReply>> futs;
  for (int i = 0; i < 200; ++i) {
    HelloRequest req;
    req.set_msg(std::to_string(i));
    futs.push_back(p->AsyncSayHello(MakeClientContext(), req));
  }
  auto all = BlockingGet(WhenAll(std::move(futs))).GetValue();
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(all[i].IsReady()) << all[i].GetException().ToString();
    EXPECT_EQ(all[i].GetValue().msg(), "Hello, " + std::to_string(i));
  }
}

TEST_F(GrpcE2eTest, StatusAndUnknownMethod) {
  auto p = Proxy(addr_);
  HelloReply rsp;
  Status st = Say(p.get(), "fail", &rsp);
  EXPECT_EQ(st.GetFuncRetCode(), 9);
  EXPECT_EQ(st.ErrorMessage(), "failed precondition");
  auto ctx = MakeClientContext();
  ctx->SetFuncName("/trpc.test.helloworld.Greeter/NoSuch");
  HelloRequest req;
  ClientContextPtr c2 = MakeClientContext();
  ServiceProxy* base = p.get();
  HelloReply r2;
  st = base->UnaryInvoke(ctx, req, &r2);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerNoFuncErr) << st.ToString();
}

TEST_F(GrpcE2eTest, HealthCheckFollowsReadiness) {
  auto p = Proxy(addr_);
  auto check = [&](const std::string& service, grpc_health::HealthCheckResponse* rsp) {
    auto ctx = MakeClientContext();
    ctx->SetFuncName(grpc::kHealthCheckMethod);
    grpc_health::HealthCheckRequest req;
    req.set_service(service);
    ServiceProxy* base = p.get();
    return base->UnaryInvoke(ctx, req, rsp);
  };
  grpc_health::HealthCheckResponse rsp;
  ASSERT_TRUE(check("", &rsp).OK());
  EXPECT_EQ(rsp.status(), grpc_health::HealthCheckResponse::SERVING);
  ASSERT_TRUE(check("trpc.test.helloworld.Greeter", &rsp).OK());
  EXPECT_EQ(rsp.status(), grpc_health::HealthCheckResponse::SERVING);
  EXPECT_EQ(check("no.such.Service", &rsp).GetFuncRetCode(), 5);  // NOT_FOUND
  // The state behind it: not serving before Start() and from Stop() on.
  auto own = OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>());
  Server& s = *own;
  EXPECT_EQ(s.readiness(), Server::Readiness::kStarting);
  StartOwn(&s, "trpc.test.helloworld.Greeter");
  EXPECT_EQ(s.readiness(), Server::Readiness::kServing);
  s.Stop();
  EXPECT_EQ(s.readiness(), Server::Readiness::kStopping);
}

using HealthWatchStream =
    stream::ClientReaderWriter<grpc_health::HealthCheckRequest, grpc_health::HealthCheckResponse>;

// Opens grpc.health.v1.Health/Watch for `service` on `proxy` and sends the request. With `st`,
// a failure to open is returned there (not a test failure) and the stream is not valid.
HealthWatchStream OpenWatch(GreeterServiceProxy* proxy, const std::string& service,
                            Status* st = nullptr) {
  ClientContextPtr ctx = MakeClientContext();
  ctx->SetTimeout(10000);
  ctx->SetFuncName(grpc::kHealthWatchMethod);
  stream::ClientStream opened;
  Status open = proxy->OpenStream(ctx, &opened);
  if (st != nullptr) {
    *st = open;
    if (!open.OK()) return HealthWatchStream();
  } else {
    EXPECT_TRUE(open.OK()) << open.ToString();
  }
  HealthWatchStream rw(std::move(opened));
  grpc_health::HealthCheckRequest req;
  req.set_service(service);
  Status wrote = rw.Write(req);
  if (st == nullptr) {
    EXPECT_TRUE(wrote.OK());
  }
  rw.WritesDone();
  return rw;
}

TEST_F(GrpcE2eTest, HealthWatchPushesTheStatusUntilTheServerStops) {
  auto own = OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>());
  Server& s = *own;
  grpc::EnableHealth(&s);
  NetAddress a = StartOwn(&s, "trpc.test.helloworld.Greeter");
  auto p = Proxy(a);
  using Rsp = grpc_health::HealthCheckResponse;
  auto whole = OpenWatch(p.get(), "");
  auto named = OpenWatch(p.get(), "trpc.test.helloworld.Greeter");
  auto unknown = OpenWatch(p.get(), "no.such.Service");
  auto cancelled = OpenWatch(p.get(), "");
  Rsp rsp;
  for (auto* w : {&whole, &named, &cancelled}) {
    ASSERT_TRUE(w->Read(&rsp, 5000).OK());
    EXPECT_EQ(rsp.status(), Rsp::SERVING);
  }
  // An unknown service: SERVICE_UNKNOWN, and the call stays open (the protocol's rule).
  ASSERT_TRUE(unknown.Read(&rsp, 5000).OK());
  EXPECT_EQ(rsp.status(), Rsp::SERVICE_UNKNOWN);
  EXPECT_EQ(unknown.Read(&rsp, 200).GetFrameworkRetCode(), 354);  // nothing more meanwhile
  // A client that gives up: its watch ends at the server (the stop below does not wait for it).
  cancelled.Cancel();
  // Stop: every open watch gets NOT_SERVING, then its call ends with UNAVAILABLE, at once (a stop
  // with watchers does not wait out stop_max_wait_time).
  const auto t0 = std::chrono::steady_clock::now();
  std::thread stopper([&] { s.Stop(); });
  for (auto* w : {&whole, &named}) {
    ASSERT_TRUE(w->Read(&rsp, 5000).OK());
    EXPECT_EQ(rsp.status(), Rsp::NOT_SERVING);
    EXPECT_TRUE(w->Read(&rsp, 5000).StreamEof());
    // UNAVAILABLE on the wire, which our client reads as a network error (retry elsewhere).
    Status end = w->Finish();
    EXPECT_EQ(end.GetFrameworkRetCode(), kClientNetworkErr) << end.ToString();
  }
  EXPECT_TRUE(unknown.Read(&rsp, 5000).StreamEof());
  Status end = unknown.Finish();
  EXPECT_EQ(end.GetFrameworkRetCode(), kClientNetworkErr) << end.ToString();
  stopper.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_EQ(s.stop_outcome().calls_cut, 0u);
}

// Many watchers opened, cancelled and dropped from several threads while the server stops under
// them: every call ends (none is left for the stop to cut), nothing races (TSan runs the fiber
// model), and no watch outlives the server. Bounded: 4 threads x 25 watchers, 10 s at most.
TEST_F(GrpcE2eTest, HealthWatchersComeAndGoWhileTheServerStops) {
  auto own = OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>());
  Server& s = *own;
  grpc::EnableHealth(&s);
  NetAddress a = StartOwn(&s, "trpc.test.helloworld.Greeter");
  auto p = Proxy(a);
  std::atomic<int> opened{0}, ended{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::vector<HealthWatchStream> held;
      while (!go.load()) std::this_thread::yield();
      for (int i = 0; i < 25; ++i) {
        // (Past the stop, opening fails, which is no error here.)
        Status st;
        HealthWatchStream w =
            OpenWatch(p.get(), i % 3 == 0 ? "" : "trpc.test.helloworld.Greeter", &st);
        if (!st.OK()) {
          ended.fetch_add(1);
          continue;
        }
        opened.fetch_add(1);
        if ((i + t) % 2 == 0) {
          w.Cancel();  // gone at once, maybe before its first status
          ended.fetch_add(1);
        } else {
          held.push_back(std::move(w));  // kept open: read to its end after the stop
        }
      }
      for (auto& w : held) {
        grpc_health::HealthCheckResponse rsp;
        while (w.Read(&rsp, 10'000).OK()) {
        }
        (void)w.Finish();
        ended.fetch_add(1);
      }
    });
  }
  go.store(true);
  // Stop once some watchers are open and others are still being opened.
  EXPECT_TRUE(trpc::testing::WaitFor([&] { return opened.load() >= 20; }, 10'000));
  s.Stop();
  for (auto& th : threads) th.join();
  EXPECT_EQ(ended.load(), 100);
  EXPECT_EQ(s.stop_outcome().calls_cut, 0u);
}

TEST_F(GrpcE2eTest, StopSendsGoawayBeforeClosing) {
  auto own = OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>());
  Server& s = *own;
  NetAddress a = StartOwn(&s, "trpc.test.helloworld.Greeter");
  RawH2 raw(a);
  raw.ReadUntil(1000, [](const RawFrame& f) { return f.type == kSettings && f.flags == 0; });
  s.Stop();
  uint32_t code = 99;
  auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
  ASSERT_TRUE(HasGoaway(frames, &code));
  EXPECT_EQ(code, 0u);  // NO_ERROR: a graceful goodbye, the client may retry elsewhere
}

TEST_F(GrpcE2eTest, TrpcToGrpcChainKeepsOneBudgetAndRunsFilters) {
  static bool registered = RegisterClientFilter(std::make_shared<StampFilter>());
  (void)registered;
  ClientServiceConfig c;
  c.target = addr_.ToString();
  c.protocol = "grpc";
  c.timeout = 5000;
  c.filter = {"grpc_e2e_stamp"};
  std::string err;
  auto backend = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_e2e_chain_backend", c, &err);
  ASSERT_NE(backend, nullptr) << err;
  auto own =
      OwnServer("front", std::make_shared<FrontGreeter>(backend), "trpc", "      timeout: 10000\n");
  Server& front = *own;
  NetAddress a = StartOwn(&front, "front");
  ClientServiceConfig fc;
  fc.target = a.ToString();
  fc.timeout = 300;  // the whole chain's budget
  auto caller = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_e2e_chain_front", fc, &err);
  ASSERT_NE(caller, nullptr) << err;
  HelloReply rsp;
  Status st = Say(caller.get(), "budget", &rsp);
  front.Stop();
  ASSERT_TRUE(st.OK()) << st.ToString();
  int left = 0;
  char stamp[32] = {};
  ASSERT_EQ(std::sscanf(rsp.msg().c_str(), "%d %31s", &left, stamp), 2) << rsp.msg();
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 300);  // the backend got the caller's 300 ms, less what was spent, not 5000
  EXPECT_STREQ(stamp, "stamped");
}

TEST_F(GrpcE2eTest, ClientProtocolOptionsBoundWhatTheClientTakes) {
  ClientServiceConfig c;
  c.target = addr_.ToString();
  c.protocol = "grpc";
  c.timeout = 5000;
  c.protocol_options = {{"max_message_size", "100"}, {"initial_window_size", "1048576"}};
  std::string err;
  auto p = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_e2e_small_client", c, &err);
  ASSERT_NE(p, nullptr) << err;
  HelloReply rsp;
  Status st = Say(p.get(), std::string(200, 'x'), &rsp);  // the reply is over 100 bytes
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerOverloadErr) << st.ToString();
  EXPECT_NE(st.ErrorMessage().find("max_message_size"), std::string::npos) << st.ToString();
  ASSERT_TRUE(Say(p.get(), "small", &rsp).OK());  // the connection serves on
  EXPECT_EQ(rsp.msg(), "Hello, small");
  // A key the client does not know (a server-only one) is refused with its name.
  c.protocol_options = {{"max_ping_per_second", "5"}};
  c.origin = "client.yaml:7";
  c.protocol_option_origin = {{"max_ping_per_second", "client.yaml:9"}};
  c.name = "grpc_e2e_bad_client";
  auto bad = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_e2e_bad_client", c, &err);
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(err.find("client.yaml:9: client service 'grpc_e2e_bad_client': "
                     "protocol_options.max_ping_per_second: unknown grpc client option"),
            std::string::npos)
      << err;
}

TEST_F(GrpcE2eTest, LargeMessagesPassTheDefaultWindows) {
  auto p = Proxy(addr_);
  HelloReply rsp;
  std::string big(4u << 20, 'x');
  big.resize(big.size() - 64);  // under max_message_size (4 MiB) with the protobuf framing
  ASSERT_TRUE(Say(p.get(), big, &rsp).OK());
  EXPECT_EQ(rsp.msg().size(), big.size() + 7);
}

}  // namespace
}  // namespace trpc::test::grpc_e2e
