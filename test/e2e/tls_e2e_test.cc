// TLS end to end, in the thread model TRPC_E2E_THREAD_MODEL names: trpc, gRPC and HTTP/1.1 over
// TLS between our client and server, mutual TLS with the caller's identity in ServerContext,
// real peers (curl, openssl s_client), and the bad cases: a plaintext client on a TLS port, a
// TLS client on a plaintext port, a silent or stalled handshake, a client without (or with the
// wrong) certificate, a name mismatch, garbage after the handshake, TLS 1.1. Each bad case ends
// with its connection closed and its reason counted, and a good client served after it.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/common/loopback_listener.h"
#include "test/common/peer.h"
#include "test/common/shell.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/common/tls_certs.h"
#include "test/common/wait_for.h"
#include "trpc/base/clock.h"
#include "trpc/client/http/http_client.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/http/http_service.h"
#include "trpc/server/server.h"
#include "trpc/server/server_filter.h"
#include "trpc/transport/tls_context.h"

namespace trpc::test::tls {
namespace {

using trpc::http::HttpRequest;
using trpc::http::HttpResponse;
using trpc::http::HttpService;
using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::GreeterServiceProxy;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;
using trpc::testing::FiberModel;
using trpc::testing::RunShell;
using trpc::testing::TestCerts;

constexpr char kClientModel[] = "tls_client";

// Answers with what TLS told it about the caller.
class WhoGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    const TlsPeer* peer = ctx->GetTlsPeer();
    if (peer == nullptr) {
      rsp->set_msg("plaintext " + req->msg());
      return kSuccStatus;
    }
    std::string sans;
    for (const auto& s : peer->sans) sans += s + ";";
    rsp->set_msg(fmt::format("{}|{}|{}|{}|{}|{}", req->msg(), peer->subject, sans, peer->version,
                             peer->alpn, peer->verified ? "verified" : "unverified"));
    return kSuccStatus;
  }
};

// Authorisation by identity: only alice's SPIFFE id may call the service that names it.
class OnlyAlice final : public MessageServerFilter {
 public:
  std::string Name() const override { return "tls_test_only_alice"; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::SERVER_PRE_RPC_INVOKE};
  }
  void operator()(FilterStatus& status, FilterPoint, const ServerContextPtr& ctx) override {
    const TlsPeer* peer = ctx->GetTlsPeer();
    if (peer == nullptr || !peer->verified || !peer->HasSan("URI:spiffe://test/alice")) {
      ctx->SetStatus(Status(kServerAuthErr, "only alice may call"));
      status = FilterStatus::REJECT;
    }
  }
};

uint64_t Failures(TlsFailure f) { return TlsCounters::Get().failures[static_cast<int>(f)].load(); }

// A blocking TCP connection to `addr` (-1 on failure), with 10 s IO timeouts.
int Dial(const NetAddress& addr) {
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (::connect(fd, addr.sockaddr_ptr(), addr.length()) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits until the server closes `fd` (EOF or reset) for up to `ms`; the ms it took, or -1.
int64_t MsUntilClosed(int fd, int64_t ms) {
  const int64_t begin = MonotonicNanos();
  char buf[4096];
  while (MonotonicNanos() - begin < ms * kNanosPerMilli) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return (MonotonicNanos() - begin) / kNanosPerMilli;
  }
  return -1;
}

class TlsE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new TestCerts;
    config_ = new Config;
    RegisterServerFilter(std::make_shared<OnlyAlice>());
    const TestCerts& c = *certs_;
    std::string ssl = fmt::format(
        "      ssl:\n        enable: true\n        cert_path: {}\n        private_key_path: {}\n",
        c.Pem("server"), c.Key("server"));
    std::string mtls =
        ssl + fmt::format("        mutual_auth: true\n        ca_cert_path: {}\n", c.Pem("ca")) +
        "      filter: [tls_test_only_alice]\n";
    auto service = [](const std::string& name, const std::string& protocol,
                      const std::string& extra) {
      return fmt::format(
          "    - name: {}\n      protocol: {}\n      ip: 127.0.0.1\n      port: 0\n"
          "      threadmodel_instance_name: tls_server\n{}",
          name, protocol, extra);
    };
    std::string yaml =
        trpc::testing::ThreadModelYaml(FiberModel(), {{"tls_server", 2}, {kClientModel, 1}}) +
        "server:\n  app: test\n  server: tls_e2e\n  service:\n" +
        service("tls_trpc", "trpc", ssl + "        handshake_timeout: 300\n") +
        service("mtls_trpc", "trpc", mtls) + service("tls_grpc", "grpc", ssl) +
        service("tls_http", "http", ssl) + service("plain_trpc", "trpc", "") +
        service("tls_limited", "trpc", ssl + "        max_handshakes: 1\n") +
        service("tls_idle", "trpc", ssl + "      idle_time: 200\n") +
        "plugins:\n  log:\n    level: error\n";
    ASSERT_TRUE(trpc::testing::StartRuntime(yaml, "tls_e2e.yaml", config_));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
    delete certs_;
  }

  void SetUp() override {
    server_ = std::make_unique<Server>(config_->server);
    for (const char* name :
         {"tls_trpc", "mtls_trpc", "tls_grpc", "plain_trpc", "tls_limited", "tls_idle"}) {
      ASSERT_TRUE(server_->RegisterService(name, std::make_shared<WhoGreeter>()));
    }
    auto http = std::make_shared<HttpService>();
    http->Get("/hello", [](const ServerContextPtr& ctx, const HttpRequest&, HttpResponse* rsp) {
      const TlsPeer* peer = ctx->GetTlsPeer();
      rsp->SetBody(peer != nullptr ? "Hello over " + peer->version : "Hello in plaintext",
                   "text/plain");
    });
    ASSERT_TRUE(server_->RegisterService("tls_http", http));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
  }
  void TearDown() override {
    for (auto& p : proxies_) p->Stop();
    proxies_.clear();
    server_->Stop();
  }

  NetAddress Addr(const std::string& service) {
    NetAddress a;
    EXPECT_TRUE(server_->GetAddress(service, &a));
    return a;
  }
  std::string Port(const std::string& service) { return std::to_string(Addr(service).port()); }
  // The service's open connections (server side).
  uint32_t Connections(const std::string& service) {
    for (const auto& m : server_->GetMetrics().services) {
      if (m.name == service) return m.connections;
    }
    return 0;
  }

  // A proxy to `service` over `protocol`, with TLS as `tweak` sets it (the CA trusted, the
  // client certificate presented).
  std::shared_ptr<GreeterServiceProxy> Proxy(const std::string& service,
                                             const std::string& protocol,
                                             const std::function<void(TlsConfig*)>& tweak = {},
                                             std::string* init_err = nullptr) {
    ClientServiceConfig c;
    c.name = service;
    c.target = Addr(service).ToString();
    c.protocol = protocol;
    c.timeout = 3000;
    c.ssl.enable = true;
    c.ssl.ca_cert_path = certs_->Pem("ca");
    c.ssl.cert_path = certs_->Pem("client");
    c.ssl.private_key_path = certs_->Key("client");
    if (tweak) tweak(&c.ssl);
    auto p = std::make_shared<GreeterServiceProxy>(c, runtime::GetThreadModel(kClientModel));
    std::string err;
    bool ok = p->Init(&err);
    if (init_err != nullptr) *init_err = err;
    if (!ok) return nullptr;
    proxies_.push_back(p);
    return p;
  }

  static Status Hello(GreeterServiceProxy* p, const std::string& msg, std::string* reply) {
    auto ctx = MakeClientContext();
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    Status st = p->SayHello(ctx, req, &rsp);
    *reply = rsp.msg();
    return st;
  }

  // Checks that a good TLS client is still served by `service` (after a bad case).
  void ExpectServing(const std::string& service = "tls_trpc") {
    auto p = Proxy(service, "trpc");
    ASSERT_NE(p, nullptr);
    std::string reply;
    Status st = Hello(p.get(), "still", &reply);
    EXPECT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(reply.rfind("still|", 0), 0u) << reply;
  }

  static inline TestCerts* certs_ = nullptr;
  static inline Config* config_ = nullptr;
  std::unique_ptr<Server> server_;
  std::vector<std::shared_ptr<GreeterServiceProxy>> proxies_;
};

TEST_F(TlsE2eTest, TrpcOverMutualTlsShowsTheCallersIdentity) {
  auto p = Proxy("mtls_trpc", "trpc");
  ASSERT_NE(p, nullptr);
  std::string reply;
  for (int i = 0; i < 3; ++i) {  // the same connection, calls after the first
    Status st = Hello(p.get(), "hi", &reply);
    ASSERT_TRUE(st.OK()) << st.ToString();
  }
  EXPECT_EQ(reply, "hi|CN=alice|URI:spiffe://test/alice;DNS:alice.test;|TLSv1.3||verified");
}

TEST_F(TlsE2eTest, AFilterAuthorisesByTheCertificatesIdentity) {
  auto p = Proxy("mtls_trpc", "trpc", [](TlsConfig* c) {
    c->cert_path = certs_->Pem("bob");
    c->private_key_path = certs_->Key("bob");
  });
  ASSERT_NE(p, nullptr);
  std::string reply;
  Status st = Hello(p.get(), "hi", &reply);  // a valid certificate, but bob's
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerAuthErr) << st.ToString() << " " << reply;
  EXPECT_NE(st.ErrorMessage().find("only alice may call"), std::string::npos) << st.ToString();
}

TEST_F(TlsE2eTest, TrpcOverTlsWithoutAClientCertificate) {
  auto p = Proxy("tls_trpc", "trpc", [](TlsConfig* c) {
    c->cert_path.clear();
    c->private_key_path.clear();
  });
  ASSERT_NE(p, nullptr);
  std::string reply;
  Status st = Hello(p.get(), "anon", &reply);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(reply, "anon|||TLSv1.3||unverified");
}

// An idle connection gives OpenSSL's buffers back after 1 s and takes them again with its next
// call, on both ends.
TEST_F(TlsE2eTest, AnIdleConnectionReleasesItsBuffersAndGoesOn) {
  auto p = Proxy("tls_trpc", "trpc");
  ASSERT_NE(p, nullptr);
  std::string reply;
  ASSERT_TRUE(Hello(p.get(), "before", &reply).OK());
  const uint64_t before = TlsCounters::Get().idle_releases.load();
  EXPECT_TRUE(trpc::testing::WaitFor(
      [&] { return TlsCounters::Get().idle_releases.load() >= before + 2; }, 5000));
  Status st = Hello(p.get(), "after", &reply);
  EXPECT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(reply.rfind("after|", 0), 0u) << reply;
}

// OpenSSL's record buffers count against server.max_buffered_bytes while a connection holds
// them (about 34 KiB each), and stop counting once it has been idle a second.
TEST_F(TlsE2eTest, OpensslBuffersCountAgainstTheBufferBound) {
  const int64_t idle = server_->GetMetrics().buffers.buffered;
  std::vector<std::shared_ptr<GreeterServiceProxy>> proxies;
  for (int i = 0; i < 8; ++i) {  // eight connections, four per worker
    auto p = Proxy("tls_trpc", "trpc");
    ASSERT_NE(p, nullptr);
    std::string reply;
    ASSERT_TRUE(Hello(p.get(), "x", &reply).OK());
    proxies.push_back(p);
  }
  // (Each worker's share reaches the total once its unreported part passes a batch.)
  const int64_t held = server_->GetMetrics().buffers.buffered - idle;
  EXPECT_GE(held, 8 * (34 << 10) - 2 * (64 << 10)) << held;
  EXPECT_TRUE(trpc::testing::WaitFor(
      [&] { return server_->GetMetrics().buffers.buffered - idle < 2 * (64 << 10); }, 5000))
      << server_->GetMetrics().buffers.buffered - idle;
}

TEST_F(TlsE2eTest, LargeMessagesCrossManyRecords) {
  auto p = Proxy("tls_trpc", "trpc");
  ASSERT_NE(p, nullptr);
  std::string big(3'000'000, 'x');
  for (size_t i = 0; i < big.size(); i += 4099) big[i] = static_cast<char>('a' + i % 26);
  std::string reply;
  Status st = Hello(p.get(), big, &reply);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(reply.substr(0, big.size()), big);
}

TEST_F(TlsE2eTest, GrpcOverTlsAgreesOnH2) {
  auto p = Proxy("tls_grpc", "grpc");
  ASSERT_NE(p, nullptr);
  std::string reply;
  Status st = Hello(p.get(), "g", &reply);
  ASSERT_TRUE(st.OK()) << st.ToString();
  // (The service does not ask for a client certificate: none is sent.)
  EXPECT_EQ(reply, "g|||TLSv1.3|h2|unverified");
}

TEST_F(TlsE2eTest, MutualTlsRefusesAClientWithoutACertificate) {
  const uint64_t before = Failures(TlsFailure::kNoCertificate);
  auto p = Proxy("mtls_trpc", "trpc", [](TlsConfig* c) {
    c->cert_path.clear();
    c->private_key_path.clear();
  });
  ASSERT_NE(p, nullptr);
  std::string reply;
  Status st = Hello(p.get(), "x", &reply);
  EXPECT_FALSE(st.OK());
  EXPECT_TRUE(
      trpc::testing::WaitFor([&] { return Failures(TlsFailure::kNoCertificate) > before; }, 5000));
  ExpectServing("mtls_trpc");
}

TEST_F(TlsE2eTest, MutualTlsRefusesAnotherCasClient) {
  const uint64_t before = Failures(TlsFailure::kBadCertificate);
  auto p = Proxy("mtls_trpc", "trpc", [](TlsConfig* c) {
    c->cert_path = certs_->Pem("stranger");
    c->private_key_path = certs_->Key("stranger");
  });
  ASSERT_NE(p, nullptr);
  std::string reply;
  EXPECT_FALSE(Hello(p.get(), "x", &reply).OK());
  EXPECT_TRUE(
      trpc::testing::WaitFor([&] { return Failures(TlsFailure::kBadCertificate) > before; }, 5000));
  ExpectServing("mtls_trpc");
}

TEST_F(TlsE2eTest, TheClientChecksTheServersName) {
  auto p = Proxy("tls_trpc", "trpc", [](TlsConfig* c) { c->sni_name = "elsewhere.test"; });
  ASSERT_NE(p, nullptr);
  std::string reply;
  Status st = Hello(p.get(), "x", &reply);
  EXPECT_FALSE(st.OK());
  // ... unless told not to.
  auto loose = Proxy("tls_trpc", "trpc", [](TlsConfig* c) {
    c->sni_name = "elsewhere.test";
    c->verify_peer_name = false;
  });
  ASSERT_NE(loose, nullptr);
  EXPECT_TRUE(Hello(loose.get(), "y", &reply).OK());
}

TEST_F(TlsE2eTest, TheClientRefusesAServerFromAnotherCa) {
  auto p =
      Proxy("tls_trpc", "trpc", [](TlsConfig* c) { c->ca_cert_path = certs_->Pem("other_ca"); });
  ASSERT_NE(p, nullptr);
  std::string reply;
  EXPECT_FALSE(Hello(p.get(), "x", &reply).OK());
  auto insecure = Proxy("tls_trpc", "trpc", [](TlsConfig* c) {
    c->ca_cert_path = certs_->Pem("other_ca");
    c->insecure = true;
  });
  ASSERT_NE(insecure, nullptr);
  EXPECT_TRUE(Hello(insecure.get(), "y", &reply).OK());
}

TEST_F(TlsE2eTest, APlaintextClientOnATlsPortIsNamedAndClosed) {
  const uint64_t before = Failures(TlsFailure::kPlaintext);
  int fd = Dial(Addr("tls_trpc"));
  ASSERT_GE(fd, 0);
  const char trpc_head[] = "\x09\x30\x00\x00\x00\x00\x00\x20\x00\x00";
  ASSERT_EQ(::send(fd, trpc_head, sizeof(trpc_head) - 1, MSG_NOSIGNAL), 10);
  EXPECT_GE(MsUntilClosed(fd, 5000), 0);
  ::close(fd);
  EXPECT_EQ(Failures(TlsFailure::kPlaintext), before + 1);
  ExpectServing();
}

TEST_F(TlsE2eTest, ATlsClientOnAPlaintextPortIsNamedAndClosed) {
  const uint64_t before = Failures(TlsFailure::kTlsOnPlaintext);
  ClientServiceConfig c;
  c.name = "plain";
  c.target = Addr("plain_trpc").ToString();
  c.ssl.enable = true;
  c.ssl.ca_cert_path = certs_->Pem("ca");
  c.timeout = 3000;
  auto p = std::make_shared<GreeterServiceProxy>(c, runtime::GetThreadModel(kClientModel));
  std::string err;
  ASSERT_TRUE(p->Init(&err)) << err;
  proxies_.push_back(p);
  std::string reply;
  EXPECT_FALSE(Hello(p.get(), "x", &reply).OK());
  EXPECT_TRUE(
      trpc::testing::WaitFor([&] { return Failures(TlsFailure::kTlsOnPlaintext) > before; }, 5000));
}

TEST_F(TlsE2eTest, ASilentClientIsCutAtTheHandshakeTimeout) {
  const uint64_t before = Failures(TlsFailure::kTimeout);
  int fd = Dial(Addr("tls_trpc"));  // handshake_timeout: 300 ms
  ASSERT_GE(fd, 0);
  int64_t ms = MsUntilClosed(fd, 5000);
  ::close(fd);
  EXPECT_GE(ms, 200);
  EXPECT_LT(ms, 3000);
  EXPECT_EQ(Failures(TlsFailure::kTimeout), before + 1);
  ExpectServing();
}

// max_handshakes: 1 per worker (two workers): of four clients that connect and stay silent, two
// are refused at once; the others wait for their handshake_timeout. Once they go, the service
// takes handshakes again.
TEST_F(TlsE2eTest, HandshakesInProgressAreBoundedPerWorker) {
  const uint64_t before = Failures(TlsFailure::kLimit);
  int fds[4];
  for (int& fd : fds) {
    fd = Dial(Addr("tls_limited"));
    ASSERT_GE(fd, 0);
  }
  EXPECT_TRUE(
      trpc::testing::WaitFor([&] { return Failures(TlsFailure::kLimit) == before + 2; }, 5000));
  int closed = 0;
  for (int fd : fds) closed += MsUntilClosed(fd, 100) >= 0 ? 1 : 0;
  EXPECT_EQ(closed, 2);
  for (int fd : fds) ::close(fd);
  // (The server sees the silent ones go at their EOF.)
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ExpectServing("tls_limited");
  EXPECT_EQ(Failures(TlsFailure::kLimit), before + 2);
}

// A handshake under way holds OpenSSL's buffers too: eight clients that stall mid-handshake
// count about 34 KiB each against the bound until they are cut; clients that send nothing
// count nothing.
TEST_F(TlsE2eTest, HandshakesUnderWayCountAgainstTheBufferBound) {
  const int64_t idle = server_->GetMetrics().buffers.buffered;
  std::vector<int> silent;
  for (int i = 0; i < 8; ++i) silent.push_back(Dial(Addr("tls_trpc")));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LT(server_->GetMetrics().buffers.buffered - idle, 2 * (64 << 10));
  for (int fd : silent) ::close(fd);
  std::vector<int> stalled;
  const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
  for (int i = 0; i < 8; ++i) {
    int fd = Dial(Addr("tls_trpc"));
    ASSERT_GE(fd, 0);
    ASSERT_GT(::send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL), 0);
    stalled.push_back(fd);
  }
  // (Each worker's share reaches the total once its unreported part passes a batch.)
  EXPECT_TRUE(trpc::testing::WaitFor(
      [&] {
        return server_->GetMetrics().buffers.buffered - idle >= 8 * (34 << 10) - 2 * (64 << 10);
      },
      2000))
      << server_->GetMetrics().buffers.buffered - idle;
  for (int fd : stalled) MsUntilClosed(fd, 5000);  // cut at the handshake timeout
  for (int fd : stalled) ::close(fd);
  EXPECT_TRUE(trpc::testing::WaitFor(
      [&] { return server_->GetMetrics().buffers.buffered - idle < 2 * (64 << 10); }, 5000))
      << server_->GetMetrics().buffers.buffered - idle;
}

TEST_F(TlsE2eTest, AClientThatStallsMidHandshakeIsCut) {
  const uint64_t before = Failures(TlsFailure::kTimeout);
  int fd = Dial(Addr("tls_trpc"));
  ASSERT_GE(fd, 0);
  // The start of a ClientHello record that promises 512 bytes and sends 6.
  const char hello[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
  ASSERT_GT(::send(fd, hello, sizeof(hello) - 1, MSG_NOSIGNAL), 0);
  int64_t ms = MsUntilClosed(fd, 5000);
  ::close(fd);
  EXPECT_GE(ms, 200);
  EXPECT_LT(ms, 3000);
  EXPECT_EQ(Failures(TlsFailure::kTimeout), before + 1);
}

// A client of our own on OpenSSL: a full handshake on a blocking socket, then bytes that are
// no TLS record.
TEST_F(TlsE2eTest, GarbageAfterTheHandshakeClosesTheConnection) {
  int fd = Dial(Addr("tls_trpc"));
  ASSERT_GE(fd, 0);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX_load_verify_locations(ctx, certs_->Pem("ca").c_str(), nullptr);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  ASSERT_EQ(SSL_connect(ssl), 1);
  const char junk[] = "this is not a TLS record at all";
  ASSERT_GT(::send(fd, junk, sizeof(junk), MSG_NOSIGNAL), 0);
  EXPECT_GE(MsUntilClosed(fd, 5000), 0);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  ::close(fd);
  ExpectServing();
}

TEST_F(TlsE2eTest, CurlOverHttps) {
  if (std::system("curl --version > /dev/null 2>&1") != 0) {
    TRPC_SKIP_WITHOUT_PEER("curl not installed");
  }
  std::string base = "https://127.0.0.1:" + Port("tls_http");
  std::string out;
  // Two requests on one kept-alive connection; curl offers h2 and http/1.1 and gets the latter.
  int rc = RunShell(fmt::format("curl -sS --max-time 10 --cacert {} -w ' %{{http_version}}\\n' "
                                "{}/hello {}/hello",
                                certs_->Pem("ca"), base, base),
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "Hello over TLSv1.3 1.1\nHello over TLSv1.3 1.1\n");
  // Without the CA, curl refuses us (and we count its alert).
  out.clear();
  EXPECT_NE(RunShell("curl -sS --max-time 10 " + base + "/hello", &out), 0);
  EXPECT_NE(out.find("certificate"), std::string::npos) << out;
}

// Our HTTP/1.1 client over TLS (ALPN http/1.1), keep-alive: two requests, one handshake.
TEST_F(TlsE2eTest, OurHttpClientOverTls) {
  ClientServiceConfig c;
  c.name = "https";
  c.target = Addr("tls_http").ToString();
  c.protocol = "http";
  c.max_conn_num = 1;
  c.timeout = 3000;
  c.ssl.enable = true;
  c.ssl.ca_cert_path = certs_->Pem("ca");
  auto p = std::make_shared<ServiceProxy>(c, runtime::GetThreadModel(kClientModel));
  std::string err;
  ASSERT_TRUE(p->Init(&err)) << err;
  const uint64_t handshakes = TlsCounters::Get().handshakes.load();
  for (int i = 0; i < 2; ++i) {
    http::HttpClientResponse rsp;
    Status st = http::HttpGet(*p, MakeClientContext(), "/hello", &rsp);
    ASSERT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(rsp.status, 200);
    EXPECT_EQ(rsp.body.ToString(), "Hello over TLSv1.3");
  }
  // One connection: our client's handshake and the server's.
  EXPECT_EQ(TlsCounters::Get().handshakes.load(), handshakes + 2);
  p->Stop();
}

TEST_F(TlsE2eTest, OpensslSClientSeesH2OnGrpcAndNoAlpnIsRefused) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) {
    TRPC_SKIP_WITHOUT_PEER("openssl not installed");
  }
  std::string out;
  std::string port = Port("tls_grpc");
  int rc = RunShell(fmt::format("echo | timeout 10 openssl s_client -connect 127.0.0.1:{} "
                                "-alpn h2 -CAfile {} -verify_return_error",
                                port, certs_->Pem("ca")),
                    &out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("ALPN protocol: h2"), std::string::npos) << out;
  EXPECT_NE(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;
  // gRPC requires h2: a client that offers no ALPN is refused at the handshake.
  const uint64_t before = Failures(TlsFailure::kAlpn);
  out.clear();
  EXPECT_NE(RunShell(fmt::format("echo | timeout 10 openssl s_client -connect 127.0.0.1:{} "
                                 "-CAfile {} -brief",
                                 port, certs_->Pem("ca")),
                     &out),
            0)
      << out;
  EXPECT_NE(out.find("no application protocol"), std::string::npos) << out;
  EXPECT_EQ(Failures(TlsFailure::kAlpn), before + 1);
}

// A session ticket from one connection resumes the next ones, whichever of the two workers they
// land on (the ticket keys are the service's, not a worker's).
TEST_F(TlsE2eTest, ATicketResumesOnEveryWorker) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) {
    TRPC_SKIP_WITHOUT_PEER("openssl not installed");
  }
  const std::string session = certs_->dir() + "/session.pem";
  const std::string connect =
      fmt::format("timeout 10 openssl s_client -connect 127.0.0.1:{} -CAfile {}", Port("tls_trpc"),
                  certs_->Pem("ca"));
  std::string out;
  // (TLS 1.3 sends the ticket after the handshake: stay a moment to read it.)
  RunShell("sleep 0.5 | " + connect + " -sess_out " + session, &out);
  ASSERT_NE(out.find("New, TLSv1.3"), std::string::npos) << out;
  const uint64_t resumed = TlsCounters::Get().resumed.load();
  for (int i = 0; i < 4; ++i) {  // round robin over the two workers
    out.clear();
    RunShell("sleep 0.1 | " + connect + " -sess_in " + session, &out);
    EXPECT_NE(out.find("Reused, TLSv1.3"), std::string::npos) << i << ": " << out;
  }
  EXPECT_EQ(TlsCounters::Get().resumed.load(), resumed + 4);
}

// Our client resumes: the server closes an idle connection, and the next call's connection
// resumes the session of the one before (its ticket), on both ends; the identity is the same.
TEST_F(TlsE2eTest, OurClientResumesItsLastSession) {
  auto p = Proxy("tls_idle", "trpc");
  ASSERT_NE(p, nullptr);
  std::string first, reply;
  const uint64_t handshakes = TlsCounters::Get().handshakes.load();
  const uint64_t resumed = TlsCounters::Get().resumed.load();
  ASSERT_TRUE(Hello(p.get(), "one", &first).OK());
  EXPECT_EQ(TlsCounters::Get().resumed.load(), resumed);  // a full handshake
  for (int i = 0; i < 2; ++i) {
    // (The server's idle_time is 200 ms: the connection goes, the client connects again.)
    ASSERT_TRUE(trpc::testing::WaitFor([&] { return Connections("tls_idle") == 0; }, 3000));
    ASSERT_TRUE(Hello(p.get(), "one", &reply).OK());
    EXPECT_EQ(reply, first);  // the same subject and SANs from the resumed session
  }
  // Client and server each counted three handshakes, two of them resumed.
  EXPECT_EQ(TlsCounters::Get().handshakes.load(), handshakes + 6);
  EXPECT_EQ(TlsCounters::Get().resumed.load(), resumed + 4);
  // A reload (SIGHUP) forgets the client's sessions: none outlives the files it was checked
  // with, so the next connection makes a full handshake.
  EXPECT_EQ(TlsContext::ReloadAll(), 0u);
  ASSERT_TRUE(trpc::testing::WaitFor([&] { return Connections("tls_idle") == 0; }, 3000));
  ASSERT_TRUE(Hello(p.get(), "one", &reply).OK());
  EXPECT_EQ(TlsCounters::Get().handshakes.load(), handshakes + 8);
  EXPECT_EQ(TlsCounters::Get().resumed.load(), resumed + 4);
}

TEST_F(TlsE2eTest, Tls11IsRefused) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) {
    TRPC_SKIP_WITHOUT_PEER("openssl not installed");
  }
  const uint64_t before = Failures(TlsFailure::kProtocolVersion);
  std::string out;
  // A client that allows TLS 1.1 (OpenSSL 3 refuses it at its default security level).
  EXPECT_NE(RunShell(fmt::format("echo | timeout 10 openssl s_client -connect 127.0.0.1:{} "
                                 "-tls1_1 -cipher DEFAULT@SECLEVEL=0 -brief",
                                 Port("tls_trpc")),
                     &out),
            0)
      << out;
  EXPECT_NE(out.find("alert protocol version"), std::string::npos) << out;
  EXPECT_EQ(Failures(TlsFailure::kProtocolVersion), before + 1);
  ExpectServing();
}

TEST_F(TlsE2eTest, RenegotiationIsRefused) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) {
    TRPC_SKIP_WITHOUT_PEER("openssl not installed");
  }
  std::string out;
  // TLS 1.2 (1.3 has no renegotiation); "R" asks s_client to renegotiate. Refused with a
  // no_renegotiation alert, the connection keeps its first handshake.
  RunShell(fmt::format("(sleep 0.5; echo R; sleep 0.5) | timeout 10 openssl s_client -connect "
                       "127.0.0.1:{} -tls1_2 -CAfile {}",
                       Port("tls_trpc"), certs_->Pem("ca")),
           &out);
  EXPECT_NE(out.find("RENEGOTIATING"), std::string::npos) << out;
  EXPECT_NE(out.find("no renegotiation"), std::string::npos) << out;
  ExpectServing();
}

// nginx in front of us, speaking TLS to us and verifying our certificate: HTTP through
// `proxy_pass https://`, gRPC through `grpc_pass grpcs://` (nginx takes h2c from our client).
TEST_F(TlsE2eTest, NginxProxiesToUsOverTls) {
  std::string probe;
  if (RunShell("command -v nginx", &probe) != 0) {
    TRPC_SKIP_WITHOUT_PEER("nginx not installed (Debian: nginx-light)");
  }
  const std::string dir = certs_->dir() + "/nginx";
  const uint16_t http_port = trpc::testing::FreeLoopbackPort();
  const uint16_t grpc_port = trpc::testing::FreeLoopbackPort();
  std::string out;
  ASSERT_EQ(RunShell("mkdir -p " + dir + "/tmp", &out), 0) << out;
  {
    std::ofstream conf(dir + "/nginx.conf");
    conf << fmt::format(
        "worker_processes 1;\nerror_log {0}/error.log;\npid {0}/nginx.pid;\n"
        "events {{ worker_connections 64; }}\n"
        "http {{\n  access_log off;\n  client_body_temp_path {0}/tmp;\n"
        "  proxy_temp_path {0}/tmp;\n  fastcgi_temp_path {0}/tmp;\n  uwsgi_temp_path {0}/tmp;\n"
        "  scgi_temp_path {0}/tmp;\n"
        "  server {{\n    listen 127.0.0.1:{1};\n    location / {{\n"
        "      proxy_pass https://127.0.0.1:{3};\n      proxy_http_version 1.1;\n"
        "      proxy_ssl_verify on;\n      proxy_ssl_trusted_certificate {5};\n"
        "      proxy_ssl_name localhost;\n      proxy_ssl_server_name on;\n    }}\n  }}\n"
        "  server {{\n    listen 127.0.0.1:{2} http2;\n    location / {{\n"
        "      grpc_pass grpcs://127.0.0.1:{4};\n      grpc_ssl_verify on;\n"
        "      grpc_ssl_trusted_certificate {5};\n      grpc_ssl_name localhost;\n    }}\n  }}\n"
        "}}\n",
        dir, http_port, grpc_port, Addr("tls_http").port(), Addr("tls_grpc").port(),
        certs_->Pem("ca"));
  }
  const std::string nginx = fmt::format("nginx -p {0} -c {0}/nginx.conf", dir);
  ASSERT_EQ(RunShell(nginx, &out), 0) << out;
  struct Stop {
    std::string cmd;
    ~Stop() {
      std::string ignored;
      RunShell(cmd + " -s stop", &ignored);
    }
  } stop{nginx};
  ASSERT_TRUE(trpc::testing::WaitFor(
      [&] {
        NetAddress a;
        NetAddress::FromIpPort("127.0.0.1", http_port, &a);
        int fd = Dial(a);
        if (fd >= 0) ::close(fd);
        return fd >= 0;
      },
      5000));
  out.clear();
  EXPECT_EQ(
      RunShell(fmt::format("curl -sS --max-time 10 http://127.0.0.1:{}/hello", http_port), &out), 0)
      << out;
  // (nginx 1.22 proxies with TLS 1.2 unless proxy_ssl_protocols says otherwise: the 1.2 path.)
  EXPECT_EQ(out, "Hello over TLSv1.2");

  ClientServiceConfig c;
  c.name = "via_nginx";
  c.target = fmt::format("127.0.0.1:{}", grpc_port);
  c.protocol = "grpc";
  c.timeout = 5000;
  auto p = std::make_shared<GreeterServiceProxy>(c, runtime::GetThreadModel(kClientModel));
  std::string err;
  ASSERT_TRUE(p->Init(&err)) << err;
  proxies_.push_back(p);
  std::string reply;
  Status st = Hello(p.get(), "n", &reply);
  EXPECT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(reply, "n|||TLSv1.2|h2|unverified");
}

// Rotation: new files for new connections, established ones go on; a bad file keeps the old.
TEST_F(TlsE2eTest, AReloadServesNewConnectionsWithTheNewCertificate) {
  const std::string cert = certs_->dir() + "/rotating.pem";
  const std::string key = certs_->dir() + "/rotating.key";
  auto copy = [](const std::string& from, const std::string& to) {
    std::string out;
    ASSERT_EQ(RunShell("cp '" + from + "' '" + to + "'", &out), 0) << out;
  };
  copy(certs_->Pem("server"), cert);
  copy(certs_->Key("server"), key);
  ServerConfig sc = config_->server;
  sc.service.resize(1);  // tls_trpc
  sc.service[0].ssl.cert_path = cert;
  sc.service[0].ssl.private_key_path = key;
  server_->Stop();
  server_ = std::make_unique<Server>(sc);
  ASSERT_TRUE(server_->RegisterService("tls_trpc", std::make_shared<WhoGreeter>()));
  std::string err;
  ASSERT_TRUE(server_->Start(&err)) << err;

  auto before = Proxy("tls_trpc", "trpc");  // checks "127.0.0.1" (the endpoint's IP)
  ASSERT_NE(before, nullptr);
  std::string reply;
  ASSERT_TRUE(Hello(before.get(), "1", &reply).OK());

  copy(certs_->Pem("elsewhere"), cert);  // the same key, another name
  const uint64_t reloads = TlsCounters::Get().reloads.load();
  EXPECT_EQ(TlsContext::ReloadAll(), 0u);
  EXPECT_GT(TlsCounters::Get().reloads.load(), reloads);
  auto after = Proxy("tls_trpc", "trpc", [](TlsConfig* c) { c->sni_name = "elsewhere.test"; });
  ASSERT_NE(after, nullptr);
  Status st = Hello(after.get(), "2", &reply);
  EXPECT_TRUE(st.OK()) << st.ToString();
  // The established connection goes on with the old certificate.
  st = Hello(before.get(), "3", &reply);
  EXPECT_TRUE(st.OK()) << st.ToString();

  // A broken file: refused and counted; new connections keep getting the last good one.
  std::string out;
  ASSERT_EQ(RunShell("echo garbage > '" + cert + "'", &out), 0);
  const uint64_t failures = TlsCounters::Get().reload_failures.load();
  EXPECT_GE(TlsContext::ReloadAll(), 1u);
  EXPECT_GT(TlsCounters::Get().reload_failures.load(), failures);
  auto later = Proxy("tls_trpc", "trpc", [](TlsConfig* c) { c->sni_name = "elsewhere.test"; });
  ASSERT_NE(later, nullptr);
  st = Hello(later.get(), "4", &reply);
  EXPECT_TRUE(st.OK()) << st.ToString();
}

// Bad files stop the start with the key's file:line and OpenSSL's reason.
TEST_F(TlsE2eTest, BadFilesStopTheStart) {
  auto start = [&](const std::string& ssl_yaml) {
    Config cfg;
    std::string err;
    std::string yaml = fmt::format(
        "server:\n  app: t\n  server: t\n  service:\n    - name: s\n      protocol: trpc\n"
        "      ip: 127.0.0.1\n      port: 0\n      ssl:\n        enable: true\n{}",
        ssl_yaml);
    if (!LoadConfigFromString(yaml, "bad.yaml", &cfg, &err)) return "config: " + err;
    Server s(cfg.server);
    s.RegisterService("s", std::make_shared<WhoGreeter>());
    if (s.Start(&err)) {
      s.Stop();
      return std::string("started");
    }
    return err;
  };
  const TestCerts& c = *certs_;
  std::string err = start(fmt::format("        cert_path: {}\n        private_key_path: {}\n",
                                      c.Pem("expired"), c.Key("expired")));
  EXPECT_NE(err.find("bad.yaml:11: ssl.cert_path: the certificate in"), std::string::npos) << err;
  EXPECT_NE(err.find("expired"), std::string::npos) << err;
  err = start(fmt::format("        cert_path: {}\n        private_key_path: {}\n", c.Pem("server"),
                          c.Key("lone")));
  EXPECT_NE(err.find("bad.yaml:12: ssl.private_key_path:"), std::string::npos) << err;
  EXPECT_NE(err.find("does not match"), std::string::npos) << err;
  err = start(fmt::format("        cert_path: {}/nope.pem\n        private_key_path: {}\n", c.dir(),
                          c.Key("server")));
  EXPECT_NE(err.find("bad.yaml:11: ssl.cert_path: cannot load"), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  err =
      start(fmt::format("        cert_path: {}\n        private_key_path: {}\n"
                        "        protocols: [TLSv1.1, TLSv1.2]\n",
                        c.Pem("server"), c.Key("server")));
  EXPECT_NE(err.find("bad.yaml:13: ssl.protocols: 'TLSv1.1' is below TLS 1.2"), std::string::npos)
      << err;
  err = start("        private_key_path: x\n");
  EXPECT_NE(err.find("ssl.cert_path: required"), std::string::npos) << err;
  err =
      start(fmt::format("        cert_path: {}\n        private_key_path: {}\n"
                        "        mutual_auth: true\n",
                        c.Pem("server"), c.Key("server")));
  EXPECT_NE(err.find("bad.yaml:13: ssl.mutual_auth: needs ca_cert_path"), std::string::npos) << err;
}

}  // namespace
}  // namespace trpc::test::tls
