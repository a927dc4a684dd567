// End-to-end tests of TrpcApp and RunInTrpcRuntime (forward_e2e_fixture.h): start from YAML
// and stop gracefully with calls in flight, and the start-up checks of the server and client
// sections (unknown filters and protocols, services not served), each naming its config line.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <memory>
#include <string>

#include "test/e2e/forward_e2e_fixture.h"
#include "trpc/app/trpc_app.h"
#include "trpc/tracing/tracing.h"

namespace trpc::test::forward {
namespace {

// The message lists the registered filters, and suggests the closest one to a misspelt name.
TEST(ForwardConfigTest, UnknownFilterStopsStartWithItsLine) {
  RegisterTestFilters();
  // The framework's own (TrpcApp registers it; here too, so the lists below do not depend on
  // whether a TrpcApp test ran first).
  tracing::RegisterTracingFilters();
  std::string err;
  Config config;
  trpc::testing::ScopedRuntime scoped_runtime;
  ASSERT_TRUE(scoped_runtime.Start(ModelsYaml() + R"(server:
  service:
    - name: svc
      ip: 127.0.0.1
      port: 0
      filter: [no_such_filter]
)",
                                   "bad_filter.yaml", &config));
  {
    Server server(config.server);
    server.RegisterService("svc", std::make_shared<Backend>());
    EXPECT_FALSE(server.Start(&err));
    EXPECT_EQ(err,
              "bad_filter.yaml:9: service 'svc': no server filter named 'no_such_filter' is "
              "registered (registered: test_auth, test_middle_hop, tracing)");
  }
  config.server.service[0].filter = {"test_auht"};
  {
    Server server(config.server);
    server.RegisterService("svc", std::make_shared<Backend>());
    EXPECT_FALSE(server.Start(&err));
    EXPECT_EQ(
        err,
        "bad_filter.yaml:9: service 'svc': no server filter named 'test_auht' is "
        "registered (did you mean 'test_auth'? registered: test_auth, test_middle_hop, tracing)");
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
            "registered (registered: test_client_stamp, tracing)");
  c.filter = {"test_client_stmap"};
  EXPECT_EQ(client.GetProxy<GreeterServiceProxy>("callee", c, &err), nullptr);
  EXPECT_EQ(err,
            "client.yaml:3: client callee: no client filter named 'test_client_stmap' is "
            "registered (did you mean 'test_client_stamp'? registered: test_client_stamp, "
            "tracing)");
  client.Stop();
  scoped_runtime.Stop();
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
  ASSERT_TRUE(LoadConfigFromString(ModelsYaml() + R"(server:
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
  EXPECT_TRUE(LoadConfigFromString(ModelsYaml() + client_section, "app.yaml", &config, &err))
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
                     "test_client_stamp, tracing)"),
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
                     "'no_such_filter' is registered (registered: test_client_stamp, "
                     "tracing)"),
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
