// End-to-end tests of the admin service (admin_e2e_fixture.h): who may call it (the Host
// header, server.admin_allowed_hosts), its connection table and header timeout, and the address
// and port it listens on.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "test/e2e/admin_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

// DNS rebinding: a page of another site whose name now resolves to 127.0.0.1 sends that name as
// Host. The admin answers localhost, numeric addresses and server.admin_allowed_hosts only.
TEST_F(AdminE2eTest, AHostNameNotAllowedGets403) {
  const log::Level saved = log::GetLevel();
  const std::string port = ":" + std::to_string(admin_.port());
  HttpReply r = HttpAs(admin_, "rebind.attacker.example" + port, "PUT", "/cmds/loglevel", "debug");
  EXPECT_EQ(r.status, 403) << r.head << r.body;
  EXPECT_EQ(log::GetLevel(), saved) << "the level changed for a refused Host";
  EXPECT_EQ(HttpAs(admin_, "evil.example", "GET", "/metrics").status, 403);
  EXPECT_EQ(HttpAs(admin_, "localhost.evil.example", "GET", "/health").status, 403);
  for (const std::string& host : {"localhost" + port, std::string("LOCALHOST"),
                                  std::string("localhost."), std::string("app.localhost"),
                                  "127.0.0.1" + port, "[::1]" + port, std::string("10.1.2.3")}) {
    EXPECT_EQ(HttpAs(admin_, host, "GET", "/health").status, 200) << "Host: " << host;
  }
  // Refusals are counted as errors (ret 41) of no method.
  EXPECT_GE(Counter(Metrics(),
                    "trpc_server_errors_total{service=\"trpc.admin\",method=\"unknown\","
                    "code=\"41\"}"),
            3);
}

TEST_F(AdminE2eTest, AdminAllowedHostsFromConfig) {
  server_->Stop();
  std::string yaml = ConfigYaml();
  yaml.replace(yaml.find("server:\n"), 8,
               "server:\n  admin_allowed_hosts: [Admin.Example.Internal, \"*.not-a-wildcard\"]\n");
  Config c;
  std::string err;
  EXPECT_FALSE(LoadConfigFromString(yaml, "admin_hosts.yaml", &c, &err));
  EXPECT_NE(err.find("admin_hosts.yaml:"), std::string::npos) << err;
  EXPECT_NE(err.find("server.admin_allowed_hosts: expected host names"), std::string::npos) << err;
  yaml.replace(yaml.find(", \"*.not-a-wildcard\""), 20, "");
  ASSERT_TRUE(LoadConfigFromString(yaml, "admin_hosts.yaml", &c, &err)) << err;
  ASSERT_EQ(c.server.admin_allowed_hosts, std::vector<std::string>{"admin.example.internal"});
  StartServer(c.server, /*ephemeral_admin=*/true);
  EXPECT_EQ(HttpAs(admin_, "admin.example.internal:8888", "GET", "/health").status, 200);
  EXPECT_EQ(HttpAs(admin_, "Admin.Example.Internal", "GET", "/health").status, 200);
  EXPECT_EQ(HttpAs(admin_, "other.example.internal", "GET", "/health").status, 403);
  EXPECT_EQ(HttpAs(admin_, "localhost", "GET", "/health").status, 200);
}

// The admin's connection table (admin::kMaxConnections) full of silent peers does not lock
// /health out: a new connection takes the place of the least recently active one.
TEST_F(AdminE2eTest, HealthAnswersWhileTheTableIsFullOfSilentConnections) {
  auto admin_connections = [this]() -> uint64_t {
    for (const ServiceMetrics& s : server_->GetMetrics().services) {
      if (s.name == admin::kAdminServiceName) return s.connections;
    }
    return 0;
  };
  std::vector<int> silent;
  for (uint32_t i = 0; i < admin::kMaxConnections; ++i) {
    const int fd = Connect(admin_);
    ASSERT_GE(fd, 0);
    silent.push_back(fd);
  }
  ASSERT_TRUE(WaitFor([&] { return admin_connections() == admin::kMaxConnections; }))
      << admin_connections();
  for (int i = 0; i < 3; ++i) {
    const int64_t start = MonotonicMillis();
    HttpReply r = Http(admin_, "GET", "/health", {}, /*timeout_ms=*/1000);
    EXPECT_EQ(r.status, 200) << "probe " << i << ": no answer while the table was full";
    EXPECT_LT(MonotonicMillis() - start, 1000);
  }
  // The first probe closed the oldest silent connection to make room; a later one found the
  // slot of the probe before it, or (while that one was still closing) closed the next oldest.
  size_t closed = 0;
  for (int fd : silent) {
    pollfd p{fd, POLLIN, 0};
    char c;
    if (::poll(&p, 1, 0) <= 0 || ::recv(fd, &c, 1, MSG_DONTWAIT) != 0) break;
    ++closed;
  }
  EXPECT_GE(closed, 1u) << "the oldest silent connection is still open";
  EXPECT_LE(closed, 3u);
  for (size_t i = closed; i < silent.size(); ++i) {
    pollfd p{silent[i], POLLIN, 0};
    EXPECT_EQ(::poll(&p, 1, 0), 0) << "silent connection " << i << " closed, an older one not";
  }
  EXPECT_GE(Counter(Metrics(), "trpc_server_connections_refused_total{service=\"trpc.admin\"}"),
            static_cast<int64_t>(closed));
  for (int fd : silent) ::close(fd);
}

// A connection that sends nothing is closed at the HTTP header timeout (10 s), not held for
// idle_time (60 s).
TEST_F(AdminE2eTest, ASilentConnectionIsClosedAtTheHeaderTimeout) {
  const int fd = Connect(admin_);
  ASSERT_GE(fd, 0);
  const int64_t start = MonotonicMillis();
  bool closed = false;
  while (!closed && MonotonicMillis() - start < 13'000) {
    pollfd p{fd, POLLIN, 0};
    char c;
    closed = ::poll(&p, 1, 100) > 0 && ::recv(fd, &c, 1, 0) <= 0;
  }
  const int64_t elapsed = MonotonicMillis() - start;
  ::close(fd);
  EXPECT_TRUE(closed) << "still open after " << elapsed << " ms";
  EXPECT_GE(elapsed, 9'000) << "closed before the header timeout";
}

// server.admin_port from the config (rather than EnableAdmin); 0 there means no admin service,
// `auto` one on a port the kernel picks.
TEST_F(AdminE2eTest, AdminPortFromConfig) {
  server_->Stop();
  ServerConfig sc = config_->server;
  EXPECT_EQ(sc.admin_port, 0);
  StartServer(sc, /*ephemeral_admin=*/false);
  NetAddress addr;
  EXPECT_FALSE(admin::GetAdminAddress(*server_, &addr));
  server_->Stop();

  // A port that was free a moment ago (a race with other processes is possible but unlikely).
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  sc.admin_port = ntohs(a.sin_port);
  StartServer(sc, /*ephemeral_admin=*/false);
  ASSERT_TRUE(admin::GetAdminAddress(*server_, &addr));
  EXPECT_EQ(addr.port(), sc.admin_port);
  EXPECT_EQ(Http(addr, "GET", "/version").status, 200);
  server_->Stop();

  // `admin_port: auto`: a port the kernel picks.
  sc.admin_port = 0;
  sc.admin_port_auto = true;
  StartServer(sc, /*ephemeral_admin=*/false);
  ASSERT_TRUE(admin::GetAdminAddress(*server_, &addr));
  EXPECT_NE(addr.port(), 0);
  EXPECT_EQ(addr.ip(), "127.0.0.1");
  EXPECT_EQ(Http(addr, "GET", "/version").status, 200);
}

}  // namespace
}  // namespace trpc::test::helloworld
