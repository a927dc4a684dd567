// Port 0 for scripts and tests, end to end: a TrpcApp with two services on port 0 and
// `admin_port: auto` writes every bound address to server.listen_file (and logs it), each
// address there answers, and the file is gone after the stop. A listen file that cannot be
// written stops start-up with its config line, leaving nothing listening. Both thread models
// (TRPC_E2E_THREAD_MODEL=merge|fiber).

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/listen_file.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/admin/admin.h"
#include "trpc/app/trpc_app.h"
#include "trpc/config/config.h"

namespace trpc::test::helloworld {
namespace {

using trpc::testing::ReadListenFile;

constexpr char kGreeter[] = "trpc.test.helloworld.Greeter";
constexpr char kGreeterV6[] = "greeter_v6";

std::string ModelsYaml() { return trpc::testing::ThreadModelYaml({{"lf", 1}}); }

class EchoGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg());
    return kSuccStatus;
  }
};

// Serves the Greeter under both configured names.
class TwoGreetersApp final : public TrpcApp {
 protected:
  int Initialize() override {
    auto greeter = std::make_shared<EchoGreeter>();
    return RegisterService(kGreeter, greeter) && RegisterService(kGreeterV6, greeter) ? 0 : 1;
  }
};

// Lines 7.. of the config (after either model's six lines): the server section.
Config AppConfig(const std::string& listen_file) {
  Config config;
  std::string err;
  EXPECT_TRUE(LoadConfigFromString(ModelsYaml() + R"(server:
  admin_port: auto
  listen_file: ')" + listen_file + R"('
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
    - name: greeter_v6
      ip: '::1'
      port: 0
)",
                                   "app.yaml", &config, &err))
      << err;
  return config;
}

std::string StderrOf(const std::function<void()>& fn) {
  ::testing::internal::CaptureStderr();
  fn();
  return ::testing::internal::GetCapturedStderr();
}

// Whether a TCP connection to `addr` ("ip:port") is accepted.
bool Connects(const std::string& addr) {
  NetAddress a;
  if (!NetAddress::Parse(addr, &a)) return false;
  int fd = ::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  bool ok = fd >= 0 && ::connect(fd, a.sockaddr_ptr(), a.length()) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

// The body of an HTTP/1.1 GET `path` from `addr`, with the status line; "" on failure.
std::string HttpGet(const std::string& addr, const std::string& path) {
  NetAddress a;
  if (!NetAddress::Parse(addr, &a)) return "";
  int fd = ::socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  std::string rsp;
  if (::connect(fd, a.sockaddr_ptr(), a.length()) == 0) {
    std::string req =
        "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n";
    if (::write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof(buf))) > 0;) rsp.append(buf, n);
    }
  }
  ::close(fd);
  return rsp;
}

class ListenFileE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "listen_file_e2e_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

TEST_F(ListenFileE2eTest, ListsEveryBoundAddressWhileServingAndIsGoneAfterTheStop) {
  const std::string path = dir_ + "/listen";
  std::ofstream(path) << "stale 127.0.0.1:1\n";  // left by a run that did not stop cleanly
  TwoGreetersApp app;
  int rc = -1;
  std::string log = StderrOf([&] { rc = app.Start(AppConfig(path)); });
  ASSERT_EQ(rc, 0) << log;

  auto lines = ReadListenFile(path);
  ASSERT_EQ(lines.size(), 3u) << log;
  // The configured services in the config's order, then the admin service.
  EXPECT_EQ(lines[0].first, kGreeter);
  EXPECT_EQ(lines[1].first, kGreeterV6);
  EXPECT_EQ(lines[2].first, "admin");
  NetAddress greeter, greeter_v6, admin;
  ASSERT_TRUE(app.GetServer()->GetAddress(kGreeter, &greeter));
  ASSERT_TRUE(app.GetServer()->GetAddress(kGreeterV6, &greeter_v6));
  ASSERT_TRUE(admin::GetAdminAddress(*app.GetServer(), &admin));
  EXPECT_EQ(lines[0].second, greeter.ToString());
  EXPECT_EQ(lines[1].second, greeter_v6.ToString());
  EXPECT_EQ(lines[2].second, admin.ToString());
  EXPECT_EQ(lines[1].second.rfind("[::1]:", 0), 0u) << lines[1].second;
  for (const auto& [name, addr] : lines) {
    NetAddress a;
    ASSERT_TRUE(NetAddress::Parse(addr, &a)) << addr;
    EXPECT_NE(a.port(), 0) << name;
    // Each log line names the bound address with its real port.
    std::string said = " " + (name == "admin" ? std::string(admin::kAdminServiceName) : name) +
                       " listening on " + addr + " ";
    EXPECT_NE(log.find(said), std::string::npos) << said << " not in:\n" << log;
    EXPECT_TRUE(Connects(addr)) << name << " " << addr;
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  // Each address serves what it should.
  for (const auto& [name, addr] : {lines[0], lines[1]}) {
    ClientServiceConfig c;
    c.target = addr;
    c.timeout = 5000;
    std::string err;
    auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>("lf_" + name, c, &err);
    ASSERT_NE(proxy, nullptr) << err;
    HelloRequest req;
    req.set_msg(name);
    HelloReply rsp;
    Status st = proxy->SayHello(MakeClientContext(), req, &rsp);
    EXPECT_TRUE(st.OK()) << name << ": " << st.ToString();
    EXPECT_EQ(rsp.msg(), "Hello, " + name);
  }
  EXPECT_EQ(HttpGet(lines[2].second, "/health").rfind("HTTP/1.1 200", 0), 0u);

  app.Terminate();
  app.Wait();
  EXPECT_FALSE(std::filesystem::exists(path)) << "the listen file outlived the stop";
  for (const auto& [name, addr] : lines) EXPECT_FALSE(Connects(addr)) << name << " " << addr;
}

TEST_F(ListenFileE2eTest, UnwritableListenFileStopsStartUpLeavingNothingListening) {
  const std::string path = dir_ + "/no_such_dir/listen";
  TwoGreetersApp app;
  int rc = 0;
  std::string log = StderrOf([&] { rc = app.Start(AppConfig(path)); });
  EXPECT_EQ(rc, 1);
  EXPECT_NE(log.find("app.yaml:9: server.listen_file: cannot write '" + path +
                     ".tmp': No such file or directory"),
            std::string::npos)
      << log;
  // Everything that had started listening is closed again.
  int listened = 0;
  for (size_t at = 0; (at = log.find(" listening on ", at)) != std::string::npos; ++listened) {
    at += 14;
    std::string addr = log.substr(at, log.find(' ', at) - at);
    EXPECT_FALSE(Connects(addr)) << addr;
  }
  EXPECT_EQ(listened, 3) << log;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

}  // namespace
}  // namespace trpc::test::helloworld
