// Compiles the code protoc-gen-trpc generates for test/tools/codegen/*.proto (two services in a
// file, a nested package, an import, a method whose request and reply come from the imported
// file) and checks what it does: the wire names it registers, the default handlers' ret 12, and
// that its proxies reach its server classes over loopback.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/tools/codegen/services.trpc.pb.h"
#include "test/tools/codegen/streaming.trpc.pb.h"
#include "trpc/base/logging.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/server.h"

namespace trpc::test::codegen {
namespace {

constexpr char kGreeterName[] = "trpc.test.codegen.Greeter";
constexpr char kCounterName[] = "trpc.test.codegen.Counter";

// The proxies are ServiceProxies with one call of each kind per method, typed by the methods'
// messages (those of Ping from the imported file's package).
static_assert(std::is_base_of_v<ServiceProxy, GreeterServiceProxy>);
static_assert(std::is_base_of_v<ServiceProxy, CounterServiceProxy>);
static_assert(std::is_same_v<decltype(std::declval<GreeterServiceProxy&>().AsyncPing(
                                 ClientContextPtr(), std::declval<const inner::Ping&>())),
                             Future<inner::Pong>>);
static_assert(std::is_same_v<decltype(std::declval<GreeterServiceProxy&>().Ping(
                                 ClientContextPtr(), std::declval<const inner::Ping&>(),
                                 static_cast<inner::Pong*>(nullptr))),
                             Status>);
static_assert(std::is_same_v<decltype(std::declval<GreeterServiceProxy&>().Ping(
                                 ClientContextPtr(), std::declval<const inner::Ping&>())),
                             Status>);
static_assert(std::is_base_of_v<Service, Greeter> && std::is_base_of_v<Service, AsyncGreeter>);

TEST(CodegenTest, ServerClassesRegisterEveryMethodUnderItsWireName) {
  Greeter greeter;
  AsyncGreeter async_greeter;
  for (const Service* s :
       {static_cast<const Service*>(&greeter), static_cast<const Service*>(&async_greeter)}) {
    EXPECT_NE(s->FindMethod("/trpc.test.codegen.Greeter/SayHello"), nullptr);
    EXPECT_NE(s->FindMethod("/trpc.test.codegen.Greeter/Ping"), nullptr);
    EXPECT_EQ(s->FindMethod("/trpc.test.codegen.Counter/Add"), nullptr);
    EXPECT_EQ(s->FindMethod("/trpc.test.codegen.inner.Greeter/Ping"), nullptr);
    EXPECT_EQ(s->FindMethod("SayHello"), nullptr);
  }
  Counter counter;
  AsyncCounter async_counter;
  EXPECT_NE(counter.FindMethod("/trpc.test.codegen.Counter/Add"), nullptr);
  EXPECT_NE(async_counter.FindMethod("/trpc.test.codegen.Counter/Add"), nullptr);
  EXPECT_EQ(counter.FindMethod("/trpc.test.codegen.Greeter/SayHello"), nullptr);
}

// streaming.proto, generated with skip_streaming (trpc_proto_library's OPTIONS): its unary method
// is there, its three streaming ones are not.
TEST(CodegenTest, SkipStreamingKeepsTheUnaryMethodsOnly) {
  streaming::Chat chat;
  EXPECT_NE(chat.FindMethod("/trpc.test.codegen.streaming.Chat/Say"), nullptr);
  for (const char* left_out : {"Listen", "Upload", "Talk"}) {
    EXPECT_EQ(chat.FindMethod(std::string("/trpc.test.codegen.streaming.Chat/") + left_out),
              nullptr)
        << left_out;
  }
  streaming::Line line;
  streaming::Line reply;
  EXPECT_EQ(chat.Say(nullptr, &line, &reply).GetFrameworkRetCode(), kServerNoFuncErr);
  static_assert(std::is_same_v<decltype(std::declval<streaming::ChatServiceProxy&>().AsyncSay(
                                   ClientContextPtr(), std::declval<const streaming::Line&>())),
                               Future<streaming::Line>>);
}

TEST(CodegenTest, DefaultHandlersAnswerNotImplemented) {
  Greeter greeter;
  HelloRequest req;
  HelloReply rsp;
  Status st = greeter.SayHello(nullptr, &req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), 12);
  EXPECT_EQ(st.ErrorMessage(), "/trpc.test.codegen.Greeter/SayHello is not implemented");
  inner::Ping ping;
  inner::Pong pong;
  st = greeter.Ping(nullptr, &ping, &pong);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerNoFuncErr);
  EXPECT_EQ(st.ErrorMessage(), "/trpc.test.codegen.Greeter/Ping is not implemented");

  AsyncGreeter async_greeter;
  Future<inner::Pong> fut = async_greeter.Ping(nullptr, &ping);
  ASSERT_TRUE(fut.IsFailed());
  EXPECT_EQ(fut.GetException().GetFrameworkRetCode(), 12);
  EXPECT_EQ(fut.GetException().ErrorMessage(),
            "/trpc.test.codegen.Greeter/Ping is not implemented");

  AsyncCounter async_counter;
  Future<HelloReply> added = async_counter.Add(nullptr, &req);
  ASSERT_TRUE(added.IsFailed());
  EXPECT_EQ(added.GetException().GetFrameworkRetCode(), 12);
}

// ---------------------------------------------------------------------------------------------
// Over loopback: generated proxies calling generated server classes.

std::atomic<int> g_one_way_calls{0};

// Overrides SayHello only: Ping keeps its default.
class GreeterImpl final : public Greeter {
 public:
  Status SayHello(ServerContextPtr context, const HelloRequest* request,
                  HelloReply* response) override {
    if (request->msg() == "one-way") g_one_way_calls.fetch_add(1);
    response->set_msg("Hello, " + request->msg() + " from " + context->GetFuncName());
    return kSuccStatus;
  }
};

class AsyncCounterImpl final : public AsyncCounter {
 public:
  Future<HelloReply> Add(const ServerContextPtr& context, const HelloRequest* request) override {
    HelloReply reply;
    reply.set_msg(request->msg() + "+1");
    return MakeReadyFuture<HelloReply>(std::move(reply));
  }
};

constexpr char kServerConfig[] = R"(server:
  app: test
  server: codegen
  service:
    - name: trpc.test.codegen.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
    - name: trpc.test.codegen.Counter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
plugins:
  log:
    level: warn
)";

// A proxy of type P to the service `name` of `server`.
template <typename P>
std::shared_ptr<P> MakeProxy(const Server& server, const std::string& name) {
  NetAddress address;
  if (!server.GetAddress(name, &address)) {
    ADD_FAILURE() << "the server has no address for " << name;
    return nullptr;
  }
  ClientServiceConfig config;
  config.name = name;
  config.target = address.ToString();
  config.timeout = 10'000;
  auto proxy = std::make_shared<P>(config, runtime::GetThreadModel());
  std::string err;
  if (!proxy->Init(&err)) {
    ADD_FAILURE() << err;
    return nullptr;
  }
  return proxy;
}

TEST(CodegenTest, GeneratedProxiesCallGeneratedServicesOverLoopback) {
  Config config;
  std::string err;
  trpc::testing::ScopedRuntime scoped_runtime;
  ASSERT_TRUE(scoped_runtime.Start(
      trpc::testing::ThreadModelYaml(/*fiber=*/false, {{"codegen", 1}}) + kServerConfig,
      "codegen_test.yaml", &config, /*apply_log_level=*/true));
  auto server = std::make_unique<Server>(config.server);
  ASSERT_TRUE(server->RegisterService(kGreeterName, std::make_shared<GreeterImpl>()));
  ASSERT_TRUE(server->RegisterService(kCounterName, std::make_shared<AsyncCounterImpl>()));
  ASSERT_TRUE(server->Start(&err)) << err;
  auto greeter = MakeProxy<GreeterServiceProxy>(*server, kGreeterName);
  auto counter = MakeProxy<CounterServiceProxy>(*server, kCounterName);

  if (greeter && counter) {
    HelloRequest req;
    req.set_msg("sync");
    HelloReply rsp;
    Status st = greeter->SayHello(MakeClientContext(), req, &rsp);
    EXPECT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(rsp.msg(), "Hello, sync from /trpc.test.codegen.Greeter/SayHello");

    req.set_msg("async");
    Future<HelloReply> reply = BlockingGet(greeter->AsyncSayHello(MakeClientContext(), req));
    ASSERT_TRUE(reply.IsReady()) << reply.GetException().ToString();
    EXPECT_EQ(reply.GetValue().msg(), "Hello, async from /trpc.test.codegen.Greeter/SayHello");

    req.set_msg("one-way");
    st = greeter->SayHello(MakeClientContext(), req);
    EXPECT_TRUE(st.OK()) << st.ToString();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (g_one_way_calls.load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    EXPECT_EQ(g_one_way_calls.load(), 1) << "the one-way call never reached the handler";

    // Not overridden: the default handler's ret 12 comes back over the wire.
    inner::Ping ping;
    inner::Pong pong;
    st = greeter->Ping(MakeClientContext(), ping, &pong);
    EXPECT_EQ(st.GetFrameworkRetCode(), 12) << st.ToString();
    EXPECT_EQ(st.ErrorMessage(), "/trpc.test.codegen.Greeter/Ping is not implemented");

    req.set_msg("1");
    reply = BlockingGet(counter->AsyncAdd(MakeClientContext(), req));
    ASSERT_TRUE(reply.IsReady()) << reply.GetException().ToString();
    EXPECT_EQ(reply.GetValue().msg(), "1+1");
    st = counter->Add(MakeClientContext(), req, &rsp);
    EXPECT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(rsp.msg(), "1+1");
  }

  if (greeter) greeter->Stop();
  if (counter) counter->Stop();
  server->Stop();
  server.reset();
  scoped_runtime.Stop();
}

}  // namespace
}  // namespace trpc::test::codegen
