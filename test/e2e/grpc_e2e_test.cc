// gRPC over HTTP/2 end to end, in the thread model TRPC_E2E_THREAD_MODEL=merge (default) or fiber
// (ctest runs both; TSan runs the fiber one): our client and server through the generated
// Greeter, and each of the HTTP/2 limits and flood mitigations (docs/grpc.md), sent by a raw
// HTTP/2 client while a well-behaved client on another connection keeps being served.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/e2e/raw_h2_client.h"
#include "trpc/client/client_filter.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/grpc/grpc_server.h"
#include "trpc/server/grpc/health.pb.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"

namespace trpc::test::grpc_e2e {
namespace {

using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::GreeterServiceProxy;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

bool FiberModel() {
  const char* m = std::getenv("TRPC_E2E_THREAD_MODEL");
  return m != nullptr && std::string_view(m) == "fiber";
}

class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    if (req->msg() == "fail") return Status::AppError(9, "failed precondition");
    if (req->msg() == "bigmeta") ctx->AddRspTransInfo("x-big", std::string(2000, 'm'));
    if (req->msg() == "budget") {  // what the caller left us, and what its filter stamped
      auto it = ctx->GetPbReqTransInfo().find("x-stamp");
      rsp->set_msg(fmt::format("{} {}", ctx->GetRemainingTimeoutMs(),
                               it == ctx->GetPbReqTransInfo().end() ? "-" : it->second));
      return kSuccStatus;
    }
    rsp->set_msg("Hello, " + req->msg());
    return kSuccStatus;
  }
};

// The front of a chain: served over trpc, it calls the Greeter over gRPC with what is left of
// its own caller's budget (full-link timeout across protocols).
class FrontGreeter final : public trpc::test::helloworld::AsyncGreeter {
 public:
  explicit FrontGreeter(std::shared_ptr<GreeterServiceProxy> backend)
      : backend_(std::move(backend)) {}
  Future<HelloReply> SayHello(const ServerContextPtr& ctx, const HelloRequest* req) override {
    return backend_->AsyncSayHello(MakeClientContext(ctx), *req);
  }

 private:
  std::shared_ptr<GreeterServiceProxy> backend_;
};

// Stamps every gRPC call it sees: client filters run for gRPC callees as for trpc ones.
class StampFilter final : public MessageClientFilter {
 public:
  std::string Name() const override { return "grpc_e2e_stamp"; }
  std::vector<FilterPoint> GetFilterPoint() override { return {FilterPoint::CLIENT_PRE_SEND_MSG}; }
  void operator()(FilterStatus&, FilterPoint, const ClientContextPtr& ctx) override {
    ctx->AddReqTransInfo("x-stamp", "stamped");
  }
};

// ---------------------------------------------------------------------------------------------

using namespace raw_h2;  // NOLINT: the raw client's frames and helpers, throughout

class GrpcE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string err;
    std::string model =
        FiberModel() ? "    fiber:\n      - instance_name: e2e\n        concurrency_hint: 2\n"
                     : "    default:\n      - instance_name: e2e\n        io_handle_type: merge\n"
                       "        io_thread_num: 2\n";
    Config config;
    std::string yaml = "global:\n  threadmodel:\n" + model + R"(server:
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: grpc
      ip: 127.0.0.1
      port: 0
    - name: limited
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      idle_time: 300
      protocol_options:
        max_concurrent_streams: 4
        max_message_size: 1000
        max_header_list_size: 4096
        max_rst_stream_burst: 50
        max_rst_stream_per_second: 10
        max_ping_per_second: 20
        max_settings_per_second: 20
        max_empty_data_per_second: 20
        max_priority_per_second: 20
        max_window_update_per_second: 20
        request_timeout_ms: 300
)";
    ASSERT_TRUE(LoadConfigFromString(yaml, "grpc_e2e.yaml", &config, &err)) << err;
    ASSERT_TRUE(runtime::Start(config.global.threadmodel, &err)) << err;
    server_ = new Server(config.server);
    auto greeter = std::make_shared<TestGreeter>();
    ASSERT_TRUE(server_->RegisterService("trpc.test.helloworld.Greeter", greeter));
    ASSERT_TRUE(server_->RegisterService("limited", greeter));
    grpc::EnableHealth(server_);
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress("trpc.test.helloworld.Greeter", &addr_));
    ASSERT_TRUE(server_->GetAddress("limited", &limited_));
    SetTrpcClient(std::make_shared<TrpcClient>(ClientConfig{}));
  }

  static void TearDownTestSuite() {
    if (auto client = SetTrpcClient(nullptr)) client->Stop();
    if (server_ != nullptr) server_->Stop();
    delete server_;
    runtime::Stop();
  }

  static std::shared_ptr<GreeterServiceProxy> Proxy(
      const NetAddress& addr, uint32_t timeout = 5000,
      std::map<std::string, std::string> protocol_options = {}) {
    ClientServiceConfig c;
    c.target = addr.ToString();
    c.protocol = "grpc";
    c.timeout = timeout;
    c.protocol_options = std::move(protocol_options);
    std::string err;
    auto p = GetTrpcClient()->GetProxy<GreeterServiceProxy>(fmt::format("grpc_e2e_{}", ++made_), c,
                                                            &err);
    EXPECT_NE(p, nullptr) << err;
    return p;
  }

  // A server of a test's own: one service called `name`, `protocol`, on port 0, with the
  // extra keys `more` (indented as under a service entry); not started.
  static std::unique_ptr<Server> OwnServer(const std::string& name, ServicePtr impl,
                                           const std::string& protocol = "grpc",
                                           const std::string& more = "") {
    Config config;
    std::string err;
    std::string yaml = fmt::format(
        "server:\n  service:\n    - name: {}\n      protocol: {}\n      ip: 127.0.0.1\n"
        "      port: 0\n{}",
        name, protocol, more);
    EXPECT_TRUE(LoadConfigFromString(yaml, "own.yaml", &config, &err)) << err;
    auto s = std::make_unique<Server>(config.server);
    EXPECT_TRUE(s->RegisterService(name, std::move(impl)));
    return s;
  }
  // Starts `s` and returns the address of its service `name`.
  static NetAddress StartOwn(Server* s, const std::string& name) {
    std::string err;
    NetAddress a;
    EXPECT_TRUE(s->Start(&err)) << err;
    EXPECT_TRUE(s->GetAddress(name, &a));
    return a;
  }

  static Status Say(GreeterServiceProxy* p, const std::string& msg, HelloReply* rsp) {
    HelloRequest req;
    req.set_msg(msg);
    return p->SayHello(MakeClientContext(), req, rsp);
  }

  // Runs `attack` while a well-behaved client calls the limited service on its own connection;
  // every one of its calls must succeed.
  static void WhileServed(const std::function<void()>& attack) {
    auto good = Proxy(limited_);
    std::atomic<bool> stop{false};
    std::atomic<int> ok{0}, failed{0};
    std::thread t([&] {
      while (!stop.load()) {
        HelloReply rsp;
        Status st = Say(good.get(), "good", &rsp);
        (st.OK() && rsp.msg() == "Hello, good" ? ok : failed).fetch_add(1);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    });
    auto wait_ok = [&](int n) {
      auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (ok.load() < n && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    };
    wait_ok(1);  // served before the attack,
    attack();
    wait_ok(ok.load() + 3);  // and after it
    stop = true;
    t.join();
    EXPECT_GT(ok.load(), 0);
    EXPECT_EQ(failed.load(), 0);
  }

  static inline Server* server_ = nullptr;
  static inline NetAddress addr_, limited_;
  static inline int made_ = 0;
};

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

TEST_F(GrpcE2eTest, MessageOverTheLimitIsResourceExhaustedAndTheConnectionServesOn) {
  WhileServed([] {
    auto p = Proxy(limited_);
    HelloReply rsp;
    Status st = Say(p.get(), std::string(5000, 'y'), &rsp);
    EXPECT_EQ(st.GetFrameworkRetCode(), kServerOverloadErr) << st.ToString();  // RESOURCE_EXHAUSTED
    EXPECT_NE(st.ErrorMessage().find("max_message_size"), std::string::npos) << st.ToString();
    ASSERT_TRUE(Say(p.get(), "again", &rsp).OK());  // the same connection
    EXPECT_EQ(rsp.msg(), "Hello, again");
  });
}

TEST_F(GrpcE2eTest, StreamsOverMaxConcurrentStreamsAreRefused) {
  // 8 requests whose bodies never end (the streams stay open), on a connection that has not
  // acknowledged our SETTINGS yet: the 4 beyond the limit are refused (REFUSED_STREAM, which a
  // client may retry). Once the limit is acknowledged, a client that exceeds it breaks the
  // protocol: GOAWAY(PROTOCOL_ERROR).
  std::string bytes;
  for (uint32_t id = 1; id <= 15; id += 2) {
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
  }
  WhileServed([&] {
    RawH2 raw(limited_);
    raw.Send(bytes);
    int refused = 0;
    raw.ReadUntil(1000, [&](const RawFrame& f) {
      if (f.type == kRstStream && f.ErrorCode() == 7) ++refused;
      return refused == 4;
    });
    EXPECT_EQ(refused, 4);
    EXPECT_FALSE(raw.eof);
  });
  WhileServed([&] {
    RawH2 raw(limited_);
    raw.ReadUntil(1000, [](const RawFrame& f) { return f.type == kSettings && f.flags == 0; });
    raw.Send(Frame(kSettings, 1, 0, ""));  // ACK theirs
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 1u);
  });
}

TEST_F(GrpcE2eTest, HeaderListOverTheLimitResetsTheStream) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string h = RequestHeaders();
    Literal(&h, "x-big", std::string(5000, 'b'));
    raw.Send(Frame(kHeaders, kEndHeaders | kEndStream, 1, h));
    auto frames = raw.ReadUntil(
        1000, [](const RawFrame& f) { return f.type == kRstStream && f.stream == 1; });
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().type, kRstStream);
    EXPECT_FALSE(raw.eof);  // one strike: the connection stays
  });
}

TEST_F(GrpcE2eTest, HpackBombEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    // A 3000-byte header added to the dynamic table (literal with incremental indexing), then
    // requests that reference it (index 62: one byte each) until their lists decode past the
    // limit.
    std::string first = RequestHeaders();
    first += '\x40';
    HpackString(&first, "x-bomb");
    HpackString(&first, std::string(3000, 'z'));
    raw.Send(Frame(kHeaders, kEndHeaders | kEndStream, 1, first));
    std::string bytes;
    for (uint32_t id = 3; id <= 11; id += 2) {
      std::string h = RequestHeaders();
      for (int i = 0; i < 40; ++i) h += static_cast<char>(0x80 | 62);  // 40 x 3 KB decoded
      bytes += Frame(kHeaders, kEndHeaders | kEndStream, id, h);
    }
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 0xbu);  // ENHANCE_YOUR_CALM
  });
}

TEST_F(GrpcE2eTest, RapidResetEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string bytes;
    const std::string rst = std::string("\0\0\0\x08", 4);  // CANCEL
    for (uint32_t id = 1; id < 2 * 500; id += 2) {
      bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
      bytes += Frame(kRstStream, 0, id, rst);
    }
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    EXPECT_TRUE(HasGoaway(frames, &code) || raw.eof);
  });
}

TEST_F(GrpcE2eTest, PingFloodEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string bytes;
    for (int i = 0; i < 2000; ++i)
      bytes += Frame(kPing, 0, 0, std::string(8, static_cast<char>(i)));
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 0xbu);
  });
}

TEST_F(GrpcE2eTest, SettingsFloodEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string bytes;
    for (int i = 0; i < 2000; ++i) bytes += Frame(kSettings, 0, 0, "");
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 0xbu);
  });
}

// Sends `bytes` on a new connection to `addr`; the connection must end with GOAWAY(`code`).
void ExpectGoaway(const NetAddress& addr, const std::string& bytes, uint32_t code) {
  RawH2 raw(addr);
  raw.Send(bytes);
  uint32_t got = 0;
  auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
  ASSERT_TRUE(HasGoaway(frames, &got));
  EXPECT_EQ(got, code);
}

TEST_F(GrpcE2eTest, EmptyDataFloodEndsTheConnection) {
  WhileServed([] {
    // On an open stream, padded or not, and on a stream that never opened (nghttp2 drops that
    // DATA without a callback: the count is ours).
    std::string open = Frame(kHeaders, kEndHeaders, 1, RequestHeaders());
    std::string padded = open, unknown = Frame(kHeaders, kEndHeaders, 5, RequestHeaders());
    for (int i = 0; i < 2000; ++i) {
      open += Frame(kData, 0, 1, "");
      padded += Frame(kData, kPadded, 1, std::string("\x03\0\0\0", 4));
      unknown += Frame(kData, 0, 3, "");
    }
    ExpectGoaway(limited_, open, 0xb);  // ENHANCE_YOUR_CALM
    ExpectGoaway(limited_, padded, 0xb);
    ExpectGoaway(limited_, unknown, 0xb);
  });
  // An empty DATA that ends its stream is how some clients end a request: not a flood.
  RawH2 raw(limited_);
  std::string bytes;
  for (uint32_t id = 1; id <= 199; id += 2) {
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders()) + Frame(kData, kEndStream, id, "");
  }
  raw.Send(bytes);
  auto frames = raw.ReadUntil(1000, [](const RawFrame& f) { return f.type == kGoaway; });
  uint32_t code = 0;
  EXPECT_FALSE(HasGoaway(frames, &code)) << code;
}

TEST_F(GrpcE2eTest, PriorityFloodEndsTheConnection) {
  WhileServed([] {
    std::string bytes;
    const std::string spec("\0\0\0\0\x10", 5);  // depends on nothing, weight 17
    for (uint32_t i = 0; i < 2000; ++i) bytes += Frame(kPriority, 0, 1 + 2 * (i % 50), spec);
    ExpectGoaway(limited_, bytes, 0xb);
  });
}

TEST_F(GrpcE2eTest, WindowUpdateFloodEndsTheConnection) {
  WhileServed([] {
    std::string bytes;
    const std::string one("\0\0\0\x01", 4);  // +1
    for (int i = 0; i < 2000; ++i) bytes += Frame(kWindowUpdate, 0, 0, one);
    ExpectGoaway(limited_, bytes, 0xb);
  });
}

// A client that reads large replies through small windows sends a WINDOW_UPDATE per window's
// half: many, but each earned by our DATA, so not counted as a flood.
TEST_F(GrpcE2eTest, WindowUpdatesForLargeRepliesAreNotAFlood) {
  auto p =
      Proxy(addr_, 5000, {{"initial_window_size", "65535"}, {"connection_window_size", "65535"}});
  HelloReply rsp;
  std::string big(3u << 20, 'x');  // ~200 WINDOW_UPDATEs per reply, over the default 100/s
  for (int i = 0; i < 3; ++i) {
    Status st = Say(p.get(), big, &rsp);
    ASSERT_TRUE(st.OK()) << st.ToString();
  }
}

TEST_F(GrpcE2eTest, NewStreamWithAnIdNotAboveTheLastIsAConnectionError) {
  WhileServed([] {
    const std::string request = RequestHeaders();
    auto call = [&](uint32_t id) {  // SayHello("x")
      return Frame(kHeaders, kEndHeaders, id, request) +
             Frame(kData, kEndStream, id, std::string("\0\0\0\0\x03\x0a\x01x", 8));
    };
    auto answer = [](uint32_t id) {
      return [id](const RawFrame& f) {
        return f.type == kGoaway || (f.stream == id && (f.flags & kEndStream) != 0);
      };
    };
    // Lower: stream 3 after stream 5 (never used: it was closed when 5 opened).
    RawH2 lower(limited_);
    lower.Send(call(5));
    lower.ReadUntil(1000, answer(5));
    lower.Send(call(3));
    uint32_t code = 0;
    ASSERT_TRUE(HasGoaway(lower.ReadUntil(2000, answer(99)), &code));
    EXPECT_EQ(code, 1u);  // PROTOCOL_ERROR
    // Equal: stream 1 again after it ended.
    RawH2 again(limited_);
    again.Send(call(1));
    again.ReadUntil(1000, answer(1));
    again.Send(call(1));
    ASSERT_TRUE(HasGoaway(again.ReadUntil(2000, answer(99)), &code));
    EXPECT_EQ(code, 1u);
    // But the trailers of a stream we reset may still come (sent before our RST_STREAM
    // arrived): ignored, the connection serves on.
    RawH2 late(limited_);
    std::string big = request;
    Literal(&big, "x-big", std::string(5000, 'b'));  // over max_header_list_size: reset
    late.Send(Frame(kHeaders, kEndHeaders, 1, big));
    late.ReadUntil(1000, [](const RawFrame& f) { return f.type == kRstStream && f.stream == 1; });
    std::string trailers;
    Literal(&trailers, "x-trailer", "t");
    late.Send(Frame(kHeaders, kEndHeaders | kEndStream, 1, trailers));
    late.Send(call(3));
    auto frames = late.ReadUntil(2000, answer(3));
    EXPECT_FALSE(HasGoaway(frames, &code)) << code;
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().stream, 3u);
    // Nor those of a stream refused (over max_concurrent_streams, our SETTINGS not yet
    // acknowledged) in the same read, before the RST_STREAM went out.
    RawH2 refused(limited_);
    std::string burst;
    for (uint32_t id = 1; id <= 11; id += 2) burst += Frame(kHeaders, kEndHeaders, id, request);
    refused.Send(burst + Frame(kHeaders, kEndHeaders | kEndStream, 11, trailers));
    frames = refused.ReadUntil(500, [](const RawFrame& f) { return f.type == kGoaway; });
    EXPECT_FALSE(HasGoaway(frames, &code)) << code;
  });
}

// A response's header list over the client's own max_header_list_size: the client resets the
// stream and says so (before, a reset in the trailers went unnoticed: the call was OK).
TEST_F(GrpcE2eTest, ClientsOwnHeaderListResetIsReportedAsSuch) {
  auto p = Proxy(addr_, 5000, {{"max_header_list_size", "1024"}});
  HelloReply rsp;
  Status st = Say(p.get(), "bigmeta", &rsp);  // trailers with 2000 bytes of metadata
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerOverloadErr) << st.ToString();  // RESOURCE_EXHAUSTED
  EXPECT_NE(st.ErrorMessage().find("max_header_list_size (1024 bytes): the client reset"),
            std::string::npos)
      << st.ToString();
  ASSERT_TRUE(Say(p.get(), "small", &rsp).OK());  // the connection serves on
}

// Open streams count against max_buffered_bytes (an estimate of their state, and their headers):
// past a connection's share of the bound, new streams are refused (REFUSED_STREAM, which a
// client may retry) instead of held, and other clients are served.
TEST_F(GrpcE2eTest, StalledStreamsCountAgainstTheBufferBound) {
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(
      "server:\n  max_buffered_bytes: 1048576\n  service:\n    - name: bounded\n"
      "      protocol: grpc\n      ip: 127.0.0.1\n      port: 0\n",
      "bounded.yaml", &config, &err))
      << err;
  Server s(config.server);
  ASSERT_TRUE(s.RegisterService("bounded", std::make_shared<TestGreeter>()));
  NetAddress a = StartOwn(&s, "bounded");
  // 24 connections x 100 requests whose bodies never come: ~3 MiB of stream state if all were
  // held.
  std::string bytes;
  for (uint32_t id = 1; id < 200; id += 2) {
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
  }
  std::vector<std::unique_ptr<RawH2>> conns;
  int refused = 0;
  for (int i = 0; i < 24; ++i) {
    conns.push_back(std::make_unique<RawH2>(a));
    conns.back()->Send(bytes);
    conns.back()->ReadUntil(100, [&](const RawFrame& f) {
      refused += f.type == kRstStream && f.ErrorCode() == 7;
      return false;
    });
  }
  EXPECT_GT(refused, 0);
  auto good = Proxy(a);
  HelloReply rsp;
  Status st = Say(good.get(), "good", &rsp);
  EXPECT_TRUE(st.OK()) << st.ToString();
  conns.clear();
  s.Stop();
}

TEST_F(GrpcE2eTest, GarbageGetsGoawayAndOthersAreServed) {
  WhileServed([] {
    RawH2 raw(limited_);
    raw.Send(Frame(kData, 0, 0, "stream 0 may not carry DATA"));
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 1u);  // PROTOCOL_ERROR
  });
}

TEST_F(GrpcE2eTest, RequestThatNeverEndsIsAnsweredAndTheConnectionServesOn) {
  WhileServed([] {
    RawH2 raw(limited_);
    raw.Send(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()));  // no body, no END_STREAM
    // The peer keeps the connection busy (never idle), below the PING limit.
    bool answered = false;
    for (int i = 0; i < 20 && !answered; ++i) {
      raw.Send(Frame(kPing, 0, 0, std::string(8, 'p')));
      auto frames = raw.ReadUntil(100, [](const RawFrame& f) {
        return f.type == kHeaders && f.stream == 1 && (f.flags & kEndStream) != 0;
      });
      answered = !frames.empty() && frames.back().type == kHeaders;
    }
    EXPECT_TRUE(answered);  // DEADLINE_EXCEEDED, Trailers-Only, at ~300 ms
    EXPECT_FALSE(raw.eof);
  });
}

// Requests not yet complete are held only up to the connection's flow-control window: a client
// that keeps sending past it without finishing a request breaks the protocol and is cut off.
TEST_F(GrpcE2eTest, PartialRequestsAreBoundedByTheConnectionWindow) {
  auto own =
      OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>(), "grpc",
                "      protocol_options:\n        max_message_size: 60000\n"
                "        initial_window_size: 65535\n        connection_window_size: 65535\n");
  Server& s = *own;
  NetAddress a = StartOwn(&s, "trpc.test.helloworld.Greeter");
  std::string err;
  {
    // Whole requests get their bytes back: far more than the window goes through one
    // connection.
    ClientServiceConfig c;
    c.target = a.ToString();
    c.protocol = "grpc";
    c.timeout = 5000;
    auto p = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_e2e_window", c, &err);
    ASSERT_NE(p, nullptr) << err;
    for (int i = 0; i < 20; ++i) {
      HelloReply rsp;
      ASSERT_TRUE(Say(p.get(), std::string(50000, 'w'), &rsp).OK()) << i;
    }
  }
  RawH2 raw(a);
  std::string bytes;
  const std::string chunk(16000, 'd');
  for (uint32_t id = 1; id <= 9; id += 2) {  // 5 streams x 20000 bytes > 65535, none finished
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
    bytes += Frame(kData, 0, id, chunk) + Frame(kData, 0, id, std::string(4000, 'e'));
  }
  raw.Send(bytes);
  uint32_t code = 0;
  auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
  ASSERT_TRUE(HasGoaway(frames, &code));
  EXPECT_EQ(code, 3u);  // FLOW_CONTROL_ERROR
  s.Stop();
}

TEST_F(GrpcE2eTest, IdleConnectionIsClosed) {
  RawH2 raw(limited_);
  auto t0 = std::chrono::steady_clock::now();
  raw.ReadUntil(3000, nullptr);
  EXPECT_TRUE(raw.eof);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500));
}

}  // namespace
}  // namespace trpc::test::grpc_e2e
