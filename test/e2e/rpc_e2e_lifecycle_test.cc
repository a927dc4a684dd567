// End-to-end tests of the trpc protocol over loopback (rpc_e2e_fixture.h): a server's start and
// stop with calls in flight, and a start that fails half way. Each thread model:
// TRPC_E2E_THREAD_MODEL=merge (default) or fiber.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "test/e2e/rpc_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

using ::testing::HasSubstr;

// 13. -----------------------------------------------------------------------------------------

// The inodes of this process's TCP sockets in LISTEN state (from /proc), so a test can tell
// whether a server left one behind without knowing its port.
std::vector<std::string> ListeningSocketInodes() {
  std::vector<std::string> listening;  // every LISTEN socket on the host
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    FILE* f = std::fopen(table, "r");
    if (f == nullptr) continue;
    char line[512];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      char state[8] = {0};
      char inode[32] = {0};
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line, " %*s %*s %*s %7s %*s %*s %*s %*s %*s %31s", state, inode) == 2 &&
          std::strcmp(state, "0A") == 0) {
        listening.push_back(inode);
      }
    }
    std::fclose(f);
  }
  std::vector<std::string> mine;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || !target.starts_with("socket:[")) continue;
    std::string inode = target.substr(8, target.size() - 9);
    if (std::find(listening.begin(), listening.end(), inode) != listening.end()) {
      mine.push_back(inode);
    }
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

struct PendingHello {
  ClientContextPtr ctx = MakeClientContext();
  HelloReply rsp;
  std::promise<Status> done;
};

// Server::Stop while a call is inside its handler: the call completes normally, reply included,
// and afterwards nothing listens on the service's address.
TEST_F(RpcE2eTest, StopLetsAnInFlightCallFinish) {
  const std::vector<std::string> listening_before = ListeningSocketInodes();
  StartServer();
  ASSERT_EQ(ListeningSocketInodes().size(), listening_before.size() + 1)
      << "ListeningSocketInodes() does not see the server's listening socket";
  auto call = std::make_shared<PendingHello>();
  call->ctx->SetTimeout(kIoTimeoutMs);
  const int started_before = g_sleeps_started.load();
  HelloRequest req;
  req.set_msg("sleep:300");
  AsyncHello(call->ctx, req, &call->rsp, [call](const Status& st) { call->done.set_value(st); });
  ASSERT_TRUE(WaitFor([&] { return g_sleeps_started.load() == started_before + 1; }))
      << "the handler never started";
  server_->Stop();

  auto result = call->done.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::milliseconds(kIoTimeoutMs)), std::future_status::ready);
  Status st = result.get();
  EXPECT_TRUE(st.OK()) << "the in-flight call failed: " << st.ToString();
  EXPECT_EQ(call->rsp.msg(), "Hello, sleep:300");
  EXPECT_EQ(ListeningSocketInodes(), listening_before) << "the stopped server still listens";
}

// As above with a 12 MB reply, which the socket cannot take in one write: Stop must keep the
// connection until the whole reply has been written, not close it with the rest still queued.
TEST_F(RpcE2eTest, StopWritesAnInFlightCallsWholeReply) {
  constexpr size_t kReplyBytes = 12'000'000;
  StartServer();
  auto call = std::make_shared<PendingHello>();
  call->ctx->SetTimeout(30'000);
  const int started_before = g_sleeps_started.load();
  HelloRequest req;
  req.set_msg("sleep:300:big:" + std::to_string(kReplyBytes));
  AsyncHello(call->ctx, req, &call->rsp, [call](const Status& st) { call->done.set_value(st); });
  ASSERT_TRUE(WaitFor([&] { return g_sleeps_started.load() == started_before + 1; }))
      << "the handler never started";
  server_->Stop();

  auto result = call->done.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::milliseconds(30'000)), std::future_status::ready);
  Status st = result.get();
  EXPECT_TRUE(st.OK()) << "the in-flight call failed: " << st.ToString();
  EXPECT_EQ(call->rsp.msg().size(), kReplyBytes);
  EXPECT_EQ(call->rsp.msg().find_first_not_of('x'), std::string::npos);
}

// 14. -----------------------------------------------------------------------------------------
// A config whose second service names an unknown protocol: Start fails with an error that points
// at the config entry, and the first service, already listening by then, is closed again.
TEST_F(RpcE2eTest, StartFailureNamesTheEntryAndLeavesNothingListening) {
  const std::string kYaml = ModelsYaml() + R"(server:
  app: test
  server: e2e
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: e2e_server
    - name: trpc.test.helloworld.Greeter2
      protocol: nope
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: e2e_server
)";
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(kYaml, "t.yaml", &config, &err)) << err;
  ASSERT_EQ(config.server.service.size(), 2u);
  const std::vector<std::string> listening_before = ListeningSocketInodes();

  Server server(config.server);
  ASSERT_TRUE(server.RegisterService(kGreeterName, std::make_shared<TestGreeter>()));
  ASSERT_TRUE(
      server.RegisterService("trpc.test.helloworld.Greeter2", std::make_shared<TestGreeter>()));
  err.clear();
  EXPECT_FALSE(server.Start(&err));
  EXPECT_TRUE(err.starts_with("t.yaml:")) << err;
  EXPECT_THAT(err, HasSubstr("'nope'"));

  NetAddress first;
  if (server.GetAddress(kGreeterName, &first)) {
    RawConnection raw(first);
    EXPECT_FALSE(raw.ok()) << "the first service still accepts connections on " << first.ToString();
  }
  EXPECT_EQ(ListeningSocketInodes(), listening_before)
      << "the failed Start left a listening socket behind";
}

}  // namespace
}  // namespace trpc::test::helloworld
