// The admin service's authentication (docs/admin.md): a bearer token (server.admin_token or a
// token file that rotates), TLS (server.admin_ssl), and the refusal to start beyond loopback
// with neither.

#include <fmt/format.h>

#include <fstream>

#include "test/common/tls_certs.h"
#include "test/e2e/admin_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

constexpr char kToken[] = "s3cret-Token_0123456789";
constexpr char kOtherToken[] = "another.token/0123456789+=";

std::string Bearer(std::string_view token) {
  return "Authorization: Bearer " + std::string(token) + "\r\n";
}

// Replaces `path` atomically (as a secret manager does): a new file renamed over the old.
void WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".new";
  std::ofstream(tmp) << text;
  ASSERT_EQ(std::rename(tmp.c_str(), path.c_str()), 0);
}

// What EnableAdmin on `ip` did with config `sc`: whether it succeeded, its error and what it
// logged.
struct EnableResult {
  bool ok = false;
  std::string err, logged;
};
EnableResult EnableOn(const ServerConfig& sc, const char* ip) {
  Server other(sc);
  EnableResult r;
  ::testing::internal::CaptureStderr();
  r.ok = admin::EnableAdmin(&other, ip, 0, &r.err);
  r.logged = ::testing::internal::GetCapturedStderr();
  return r;
}

// Beyond loopback, start-up wants TLS or a token, unless told otherwise; on loopback nothing.
TEST_F(AdminE2eTest, AnAdminIpBeyondLoopbackNeedsTlsOrAToken) {
  ServerConfig sc = config_->server;
  sc.origin = "app.yaml:3";
  for (const char* ip : {"0.0.0.0", "::", "192.0.2.1"}) {
    EnableResult r = EnableOn(sc, ip);
    EXPECT_FALSE(r.ok) << ip;
    EXPECT_TRUE(r.err.starts_with("app.yaml:3: server.admin_ip: the admin service on ")) << r.err;
    EXPECT_NE(r.err.find("beyond loopback with no authentication"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("server.admin_token"), std::string::npos) << r.err;
  }
  ServerConfig open = sc;
  open.admin_allow_unauthenticated = true;
  EnableResult r = EnableOn(open, "0.0.0.0");
  EXPECT_TRUE(r.ok);
  EXPECT_NE(r.logged.find("admin service on 0.0.0.0: beyond loopback with no authentication"),
            std::string::npos)
      << r.logged;
  // TLS without client certificates passes, with a warning: it encrypts, it checks nobody.
  ServerConfig tls_only = sc;
  tls_only.admin_ssl.enable = true;
  r = EnableOn(tls_only, "0.0.0.0");
  EXPECT_TRUE(r.ok);
  EXPECT_NE(r.logged.find("neither client certificates (admin_ssl.mutual_auth) nor a token"),
            std::string::npos)
      << r.logged;
  // A program's own config gets the loader's checks.
  ServerConfig weak = sc;
  weak.admin_token = "short";
  r = EnableOn(weak, "127.0.0.1");
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.err,
            "app.yaml:3: server.admin_token: expected a token of at least 16 characters, got 5");
  ServerConfig with_token = sc;
  with_token.admin_token = kToken;
  r = EnableOn(with_token, "0.0.0.0");
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.logged, "");
  for (const char* ip : {"127.0.0.1", "127.1.2.3", "::1"}) {
    r = EnableOn(sc, ip);
    EXPECT_TRUE(r.ok) << ip;
    EXPECT_EQ(r.logged, "") << ip;
  }
}

// With a token, every path but /health asks for it; a wrong or missing one gets 401 with the
// challenge, runs no handler, and is counted.
TEST_F(AdminE2eTest, ABearerTokenIsAskedForEverywhereButHealth) {
  server_->Stop();
  ServerConfig sc = config_->server;
  sc.admin_token = kToken;
  StartServer(sc, true);
  HttpReply r = Http(admin_, "GET", "/metrics");
  EXPECT_EQ(r.status, 401) << r.head << r.body;
  EXPECT_NE(r.head.find("WWW-Authenticate: Bearer"), std::string::npos) << r.head;
  EXPECT_NE(r.body.find("\"code\":41"), std::string::npos) << r.body;
  r = Http(admin_, "PUT", "/cmds/loglevel", "error", kIoTimeoutMs, Bearer(kOtherToken));
  EXPECT_EQ(r.status, 401) << r.head << r.body;
  EXPECT_NE(log::GetLevel(), log::Level::kError) << "a refused request ran its handler";
  r = Http(admin_, "GET", "/version", {}, kIoTimeoutMs, "Authorization: Basic dXNlcjpwYXNz\r\n");
  EXPECT_EQ(r.status, 401) << r.head << r.body;
  r = Http(admin_, "GET", "/health");
  EXPECT_EQ(r.status, 200) << r.head << r.body;
  // The scheme is case-insensitive.
  r = Http(admin_, "GET", "/metrics", {}, kIoTimeoutMs,
           std::string("authorization: bearer  ") + kToken + "\r\n");
  ASSERT_EQ(r.status, 200) << r.head << r.body;
  EXPECT_EQ(Counter(r.body, "trpc_admin_auth_failures_total"), 3) << r.body;
}

// A token file is read again when it changes; a bad new file keeps the previous token.
TEST_F(AdminE2eTest, ATokenFileRotatesAndABadOneKeepsThePrevious) {
  server_->Stop();
  const std::string path = TempFile("admin_token");
  WriteFileAtomically(path, std::string(kToken) + "\n");
  ServerConfig sc = config_->server;
  sc.admin_token_file = path;
  StartServer(sc, true);
  EXPECT_EQ(Http(admin_, "GET", "/version", {}, kIoTimeoutMs, Bearer(kToken)).status, 200);
  WriteFileAtomically(path, kOtherToken);
  EXPECT_EQ(Http(admin_, "GET", "/version", {}, kIoTimeoutMs, Bearer(kToken)).status, 401);
  EXPECT_EQ(Http(admin_, "GET", "/version", {}, kIoTimeoutMs, Bearer(kOtherToken)).status, 200);
  ::testing::internal::CaptureStderr();
  WriteFileAtomically(path, "short\n");
  EXPECT_EQ(Http(admin_, "GET", "/version", {}, kIoTimeoutMs, Bearer(kOtherToken)).status, 200);
  EXPECT_EQ(Http(admin_, "GET", "/version", {}, kIoTimeoutMs, Bearer("short")).status, 401);
  std::remove(path.c_str());
  EXPECT_EQ(Http(admin_, "GET", "/version", {}, kIoTimeoutMs, Bearer(kOtherToken)).status, 200);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(logged.find("token file changed but is refused"), std::string::npos) << logged;
  EXPECT_NE(logged.find("is gone"), std::string::npos) << logged;
}

TEST_F(AdminE2eTest, AnUnreadableTokenFileStopsStartUp) {
  ServerConfig sc = config_->server;
  sc.admin_token_file = "/nonexistent/admin_token";
  sc.admin_token_file_origin = "app.yaml:7";
  Server other(sc);
  std::string err;
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(admin::EnableAdmin(&other, "127.0.0.1", 0, &err));
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "app.yaml:7: server.admin_token_file: cannot read '/nonexistent/admin_token': No such "
            "file or directory");
}

// admin_ssl: curl reaches the admin over HTTPS (with the token), plaintext gets nothing.
TEST_F(AdminE2eTest, TheAdminServesOverTls) {
  if (!HaveTool("curl")) TRPC_SKIP_WITHOUT_PEER("curl not installed");
  server_->Stop();
  trpc::testing::TestCerts certs;
  ServerConfig sc = config_->server;
  sc.admin_ssl.enable = true;
  sc.admin_ssl.cert_path = certs.Pem("server");
  sc.admin_ssl.private_key_path = certs.Key("server");
  sc.admin_token = kToken;
  StartServer(sc, true);
  const std::string url = fmt::format("https://127.0.0.1:{}", admin_.port());
  int rc = 0;
  std::string out = RunCommand(
      fmt::format("curl -sS --max-time 10 --cacert {} -H 'Authorization: Bearer {}' {}/version",
                  certs.Pem("ca"), kToken, url),
      &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("\"version\":"), std::string::npos) << out;
  out =
      RunCommand(fmt::format("curl -sS --max-time 10 --cacert {} -o /dev/null -w '%{{http_code}}' "
                             "{}/version",
                             certs.Pem("ca"), url),
                 &rc);
  EXPECT_EQ(out, "401");
  // Plaintext on the TLS port: no HTTP answer, the connection is closed.
  EXPECT_EQ(Http(admin_, "GET", "/health", {}, 3000).status, 0);
}

}  // namespace
}  // namespace trpc::test::helloworld
