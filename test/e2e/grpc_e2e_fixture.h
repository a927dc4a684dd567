#pragma once

// What the grpc_e2e tests share: gRPC over HTTP/2 end to end, in the thread model
// TRPC_E2E_THREAD_MODEL=merge (default) or fiber (ctest runs both; TSan runs the fiber one), with
// a server of two gRPC services (one with tight limits) and our gRPC client. The tests, by topic:
// grpc_e2e_calls_test.cc (our client and server through the generated Greeter),
// grpc_e2e_streams_test.cc (streams, many at once: TSan's look at the stream state machines),
// grpc_e2e_reflection_test.cc (server reflection over gRPC and trpc) and grpc_e2e_limits_test.cc
// (each HTTP/2 limit and flood mitigation, docs/grpc.md, sent by a raw HTTP/2 client while a
// well-behaved client on another connection keeps being served).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/e2e/raw_h2_client.h"
#include "trpc/client/client_filter.h"
#include "trpc/client/client_stream.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/future/loop.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/grpc/grpc_server.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"
#include "trpc/server/server_stream.h"

namespace trpc::test::grpc_e2e {

using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::GreeterServiceProxy;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

using trpc::testing::FiberModel;

// BidiStream's echo and ServerStream's "N:S" replies (N of S bytes), non-blocking, so both
// thread models serve them (grpc_e2e_streams_test.cc).
using EchoStream = stream::AsyncStreamReaderWriter<HelloRequest, HelloReply>;
inline Future<> EchoAll(EchoStream s) {
  return DoWhile([s] {
    return s.Read().Then([s](std::optional<HelloRequest>&& req) {
      if (!req) return MakeReadyFuture<bool>(false);
      HelloReply rsp;
      rsp.set_msg(req->msg());
      return s.Write(rsp).Then([] { return true; });
    });
  });
}
inline Future<> WriteN(stream::AsyncStreamWriter<HelloReply> w, int n, size_t size) {
  auto next = std::make_shared<int>(0);
  return DoWhile([w, n, size, next] {
    if (*next == n) return MakeReadyFuture<bool>(false);
    HelloReply rsp;
    rsp.set_msg(std::to_string((*next)++) + ":" + std::string(size, 'r'));
    return w.Write(rsp).Then([] { return true; });
  });
}

class TestGreeter final : public Greeter {
 public:
  TestGreeter() {
    AddAsyncBidiStreamMethod<HelloRequest, HelloReply>(
        "/trpc.test.helloworld.Greeter/BidiStream",
        [](const ServerContextPtr&, const EchoStream& s) { return EchoAll(s); });
    AddAsyncServerStreamMethod<HelloRequest, HelloReply>(
        "/trpc.test.helloworld.Greeter/ServerStream",
        [](const ServerContextPtr&, const HelloRequest& req,
           const stream::AsyncStreamWriter<HelloReply>& w) {
          const size_t colon = req.msg().find(':');
          const int n = std::stoi(req.msg().substr(0, colon));
          const size_t size = std::stoul(req.msg().substr(colon + 1));
          return WriteN(w, n, size);
        });
  }

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
    Config config;
    std::string yaml = trpc::testing::ThreadModelYaml({{"e2e", 2}}) + R"(server:
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
    ASSERT_TRUE(trpc::testing::StartRuntime(yaml, "grpc_e2e.yaml", &config));
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
      std::map<std::string, std::string> protocol_options = {},
      const std::string& protocol = "grpc") {
    ClientServiceConfig c;
    c.target = addr.ToString();
    c.protocol = protocol;
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

}  // namespace trpc::test::grpc_e2e
