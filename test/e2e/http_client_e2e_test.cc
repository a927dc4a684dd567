// End-to-end tests of the HTTP/1.1 client over loopback: a generated GreeterServiceProxy with
// protocol "http" calling an HttpService that maps Greeter (the REST mapping), with and without
// pipelining, errors mapped back to framework codes, timeouts, idle connections the server
// closes, a raw server that closes connections in the middle of a pipeline (with
// "Connection: close" and with a bare EOF), and plain requests (HttpGet, HEAD, POST) on the same
// pool. The same tests run in each thread model:
// TRPC_E2E_THREAD_MODEL=merge (default) or fiber (ctest runs both).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <latch>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/client/http/http_client.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/http/http_service.h"
#include "trpc/server/server.h"

namespace trpc::http {
namespace {

using test::helloworld::Greeter;
using test::helloworld::GreeterServiceProxy;
using test::helloworld::HelloReply;
using test::helloworld::HelloRequest;

constexpr char kServiceName[] = "trpc.test.http.Http";

using trpc::testing::FiberModel;

std::string ModelsYaml() { return trpc::testing::ThreadModelYaml({{"http_client", 2}}); }

void SleepMs(int ms) {
  if (FiberModel()) {
    fiber::this_fiber::SleepFor(std::chrono::milliseconds(ms));
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
}

std::atomic<int> g_calls{0};

// "fail" -> the handler's own code 7; "deny" -> framework code 41; "throw" -> a throw (31);
// "sleep:N" -> answers N ms later; else "Hello, " + msg.
class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    g_calls.fetch_add(1);
    const std::string& msg = req->msg();
    if (msg == "fail") return Status(0, 7, "the handler said no");
    if (msg == "deny") return Status(kServerAuthErr, "denied");
    if (msg == "throw") throw std::runtime_error("on purpose");
    if (msg.starts_with("sleep:")) SleepMs(std::stoi(msg.substr(6)));
    rsp->set_msg("Hello, " + msg);
    return kSuccStatus;
  }
};

// A raw HTTP/1.1 responder on its own thread that misbehaves on purpose: it answers the
// Greeter's REST mapping ("Hello, " + msg, protobuf), but after `last` requests of a
// connection it stops: with "Connection: close" on the last answer (`announce`), or by just
// closing its side (FIN). Requests pipelined behind the last one are never answered; they are
// read and dropped until the client closes too (a close with unread input would be a reset,
// which may destroy answers the client has not read yet).
class ClosingServer {
 public:
  ClosingServer(int last, bool announce) : last_(last), announce_(announce) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(listen_fd_, 128) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      ADD_FAILURE() << "cannot listen";
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~ClosingServer() {
    stop_.store(true);
    thread_.join();
    for (auto& [fd, c] : conns_) ::close(fd);
    ::close(listen_fd_);
  }
  std::string target() const { return fmt::format("127.0.0.1:{}", port_); }
  int accepted() const { return accepted_.load(); }
  int answered() const { return answered_.load(); }

 private:
  struct Conn {
    std::string in;
    int served = 0;
    bool draining = false;  // FIN sent: read and drop until the client's FIN
  };

  void Run() {
    while (!stop_.load()) {
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& [fd, c] : conns_) fds.push_back({fd, POLLIN, 0});
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd >= 0) {
          conns_[fd];
          accepted_.fetch_add(1);
        }
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        if (!Serve(fds[i].fd)) {
          ::close(fds[i].fd);
          conns_.erase(fds[i].fd);
        }
      }
    }
  }

  // Reads and answers what is complete; false when the connection is to be closed.
  bool Serve(int fd) {
    Conn& c = conns_[fd];
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return false;
    if (c.draining) return true;
    c.in.append(buf, static_cast<size_t>(n));
    std::string out;
    bool keep = true;
    for (;;) {
      size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) break;
      size_t length = 0;
      size_t cl = FindCi(c.in.substr(0, end), "content-length:");
      if (cl != std::string::npos) length = std::stoul(c.in.substr(cl + 15));
      if (c.in.size() < end + 4 + length) break;
      HelloRequest req;
      req.ParseFromString(c.in.substr(end + 4, length));
      c.in.erase(0, end + 4 + length);
      HelloReply rsp;
      rsp.set_msg("Hello, " + req.msg());
      std::string body = rsp.SerializeAsString();
      const bool last = ++c.served == last_;
      out += fmt::format(
          "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n{}"
          "\r\n{}",
          body.size(), last && announce_ ? "Connection: close\r\n" : "", body);
      answered_.fetch_add(1);
      if (last) {
        keep = false;
        break;
      }
    }
    if (!out.empty()) ::send(fd, out.data(), out.size(), MSG_NOSIGNAL);
    if (!keep) {
      ::shutdown(fd, SHUT_WR);
      c.draining = true;
    }
    return true;
  }

  static size_t FindCi(const std::string& s, std::string_view what) {
    for (size_t i = 0; i + what.size() <= s.size(); ++i) {
      if (strncasecmp(s.data() + i, what.data(), what.size()) == 0) return i;
    }
    return std::string::npos;
  }

  const int last_;
  const bool announce_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> answered_{0};
  std::map<int, Conn> conns_;  // server thread only
};

class HttpClientE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string err;
    Config config;
    log::SetLevel(log::Level::kError);
    ASSERT_TRUE(trpc::testing::StartRuntime(ModelsYaml() + R"(server:
  service:
    - name: trpc.test.http.Http
      protocol: http
      ip: 127.0.0.1
      port: 0
      idle_time: 60000
      timeout: 5000
    - name: short_idle
      protocol: http
      ip: 127.0.0.1
      port: 0
      idle_time: 100
      timeout: 5000
)",
                                            "http_client_e2e.yaml", &config));
    auto http = std::make_shared<HttpService>();
    http->MapRpc(std::make_shared<TestGreeter>());
    http->Get("/hello", [](const ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
      const std::string* who = req.Header("X-Who");
      rsp->SetBody("Hello, " + (who ? *who : std::string("World")) + "!", "text/plain");
    });
    http->Post("/echo", [](const ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
      rsp->set_status(201);
      rsp->AddHeader("X-Length", std::to_string(req.body().size()));
      rsp->SetBody(req.body(), "application/octet-stream");
    });
    server_ = new Server(config.server);
    ASSERT_TRUE(server_->RegisterService(kServiceName, http));
    ASSERT_TRUE(server_->RegisterService("short_idle", http));
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kServiceName, &addr_));
    ASSERT_TRUE(server_->GetAddress("short_idle", &short_idle_addr_));
    client_ = new TrpcClient(ClientConfig{});
  }
  static void TearDownTestSuite() {
    if (client_ != nullptr) client_->Stop();
    if (server_ != nullptr) server_->Stop();
    delete client_;
    delete server_;
    client_ = nullptr;
    server_ = nullptr;
    runtime::Stop();
  }

  // A Greeter proxy speaking HTTP to `target` (default: the HttpService).
  static std::shared_ptr<GreeterServiceProxy> Proxy(uint32_t max_conn_num, uint32_t depth,
                                                    std::string target = "",
                                                    uint32_t timeout_ms = 5000) {
    ClientServiceConfig c;
    c.target = target.empty() ? addr_.ToString() : target;
    c.protocol = "http";
    c.timeout = timeout_ms;
    c.max_conn_num = max_conn_num;
    c.pipeline_depth = depth;
    std::string err;
    auto proxy =
        client_->GetProxy<GreeterServiceProxy>(fmt::format("greeter_http_{}", ++proxies_), c, &err);
    EXPECT_NE(proxy, nullptr) << err;
    return proxy;
  }

  // `n` asynchronous calls at once; returns the messages replied (or "error <status>").
  static std::vector<std::string> CallMany(GreeterServiceProxy* proxy, int n,
                                           const std::string& prefix) {
    std::vector<Future<HelloReply>> futures;
    for (int i = 0; i < n; ++i) {
      HelloRequest req;
      req.set_msg(prefix + std::to_string(i));
      futures.push_back(proxy->AsyncSayHello(MakeClientContext(), req));
    }
    auto all = BlockingGet(WhenAll(std::move(futures))).GetValue();
    std::vector<std::string> out;
    for (auto& f : all) {
      out.push_back(f.IsReady() ? f.GetValue().msg() : "error " + f.GetException().ToString());
    }
    return out;
  }

  static Status Call(GreeterServiceProxy* proxy, const std::string& msg, HelloReply* rsp,
                     uint32_t timeout_ms = 0) {
    HelloRequest req;
    req.set_msg(msg);
    auto ctx = MakeClientContext();
    if (timeout_ms > 0) ctx->SetTimeout(timeout_ms);
    return proxy->SayHello(ctx, req, rsp);
  }

  static inline Server* server_ = nullptr;
  static inline TrpcClient* client_ = nullptr;
  static inline NetAddress addr_;
  static inline NetAddress short_idle_addr_;
  static inline int proxies_ = 0;
};

TEST_F(HttpClientE2eTest, UnaryCallOverTheRestMapping) {
  auto proxy = Proxy(0, 1);
  ASSERT_NE(proxy, nullptr);
  HelloReply rsp;
  Status st = Call(proxy.get(), "world", &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "Hello, world");
  // Async, and a large body.
  HelloRequest big;
  big.set_msg(std::string(200'000, 'b'));
  auto f = BlockingGet(proxy->AsyncSayHello(MakeClientContext(), big));
  ASSERT_TRUE(f.IsReady()) << f.GetException().ToString();
  EXPECT_EQ(f.GetValue().msg().size(), 200'007u);
}

TEST_F(HttpClientE2eTest, ManyConcurrentCallsWithoutPipelining) {
  auto proxy = Proxy(/*max_conn_num=*/8, /*depth=*/1);
  ASSERT_NE(proxy, nullptr);
  std::vector<std::string> got = CallMany(proxy.get(), 2000, "p1-");
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(got[i], "Hello, p1-" + std::to_string(i));
}

TEST_F(HttpClientE2eTest, ManyConcurrentCallsPipelined) {
  auto proxy = Proxy(/*max_conn_num=*/2, /*depth=*/16);
  ASSERT_NE(proxy, nullptr);
  std::vector<std::string> got = CallMany(proxy.get(), 2000, "p16-");
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(got[i], "Hello, p16-" + std::to_string(i));
  // Pipelined behind a slow call: the ones behind it wait for it, and all get their own reply.
  std::vector<Future<HelloReply>> futures;
  for (int i = 0; i < 20; ++i) {
    HelloRequest req;
    req.set_msg(i % 5 == 0 ? "sleep:30" : "fast" + std::to_string(i));
    futures.push_back(proxy->AsyncSayHello(MakeClientContext(), req));
  }
  auto all = BlockingGet(WhenAll(std::move(futures))).GetValue();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(all[i].IsReady()) << all[i].GetException().ToString();
    EXPECT_EQ(all[i].GetValue().msg(),
              i % 5 == 0 ? "Hello, sleep:30" : "Hello, fast" + std::to_string(i));
  }
}

TEST_F(HttpClientE2eTest, ErrorsMapBackToFrameworkCodes) {
  auto proxy = Proxy(0, 1);
  ASSERT_NE(proxy, nullptr);
  HelloReply rsp;
  Status st = Call(proxy.get(), "fail", &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), 0) << st.ToString();
  EXPECT_EQ(st.GetFuncRetCode(), 7);
  EXPECT_EQ(st.ErrorMessage(), "the handler said no");
  st = Call(proxy.get(), "deny", &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerAuthErr) << st.ToString();
  EXPECT_EQ(st.ErrorMessage(), "denied");
  st = Call(proxy.get(), "throw", &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerSystemErr) << st.ToString();
  // No such method: the router's 404.
  ServiceProxy* base = proxy.get();
  auto ctx = MakeClientContext();
  ctx->SetFuncName("/trpc.test.helloworld.Greeter/NoSuchMethod");
  HelloRequest req;
  st = base->UnaryInvoke(ctx, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerNoFuncErr) << st.ToString();
  // And the connection is still fine.
  st = Call(proxy.get(), "after errors", &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "Hello, after errors");
}

TEST_F(HttpClientE2eTest, TimeoutThenTheNextCallsWork) {
  auto proxy = Proxy(/*max_conn_num=*/1, /*depth=*/1);
  ASSERT_NE(proxy, nullptr);
  HelloReply rsp;
  int64_t start = MonotonicMillis();
  Status st = Call(proxy.get(), "sleep:300", &rsp, /*timeout_ms=*/80);
  EXPECT_EQ(st.GetFrameworkRetCode(), kClientInvokeTimeoutErr) << st.ToString();
  EXPECT_LT(MonotonicMillis() - start, 280);
  // The late reply is never taken for another call's.
  for (int i = 0; i < 5; ++i) {
    st = Call(proxy.get(), "next" + std::to_string(i), &rsp);
    ASSERT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(rsp.msg(), "Hello, next" + std::to_string(i));
  }
}

// The server closes idle keep-alive connections (idle_time 100 ms); the pool notices the EOF
// and the next calls go out on new connections.
TEST_F(HttpClientE2eTest, IdleConnectionsClosedByTheServerAreReplaced) {
  auto proxy = Proxy(4, 1, short_idle_addr_.ToString());
  ASSERT_NE(proxy, nullptr);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::string> got = CallMany(proxy.get(), 50, fmt::format("r{}-", round));
    for (int i = 0; i < 50; ++i) {
      ASSERT_EQ(got[i], fmt::format("Hello, r{}-{}", round, i)) << "round " << round;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

// Keep-alive: sequential calls reuse one connection per reactor.
TEST_F(HttpClientE2eTest, SequentialCallsReuseTheConnection) {
  ClosingServer raw(/*last=*/1'000'000, /*announce=*/false);
  auto proxy = Proxy(8, 1, raw.target());
  ASSERT_NE(proxy, nullptr);
  HelloReply rsp;
  for (int i = 0; i < 100; ++i) {
    Status st = Call(proxy.get(), "seq" + std::to_string(i), &rsp);
    ASSERT_TRUE(st.OK()) << st.ToString();
    ASSERT_EQ(rsp.msg(), "Hello, seq" + std::to_string(i));
  }
  EXPECT_LE(raw.accepted(), static_cast<int>(runtime::GetThreadModel()->ReactorCount()));
  proxy->Stop();
}

// A server that ends each connection after 3 answers, in the middle of pipelines of 8: every
// call either gets its own reply or fails with 141 (never another call's reply), the answered
// ones are exactly the server's count, and the pool keeps replacing the connections.
TEST_F(HttpClientE2eTest, ServerClosingMidPipelineFailsOnlyItsCalls) {
  for (bool announce : {true, false}) {
    SCOPED_TRACE(announce ? "Connection: close" : "bare EOF");
    ClosingServer raw(/*last=*/3, announce);
    auto proxy = Proxy(/*max_conn_num=*/2, /*depth=*/8, raw.target());
    ASSERT_NE(proxy, nullptr);
    int ok = 0, lost = 0;
    for (int round = 0; round < 5; ++round) {
      std::vector<std::string> got = CallMany(proxy.get(), 40, fmt::format("m{}-", round));
      for (int i = 0; i < 40; ++i) {
        if (got[i].starts_with("error ")) {
          EXPECT_NE(got[i].find("framework error 141"), std::string::npos) << got[i];
          ++lost;
        } else {
          EXPECT_EQ(got[i], fmt::format("Hello, m{}-{}", round, i));
          ++ok;
        }
      }
    }
    EXPECT_EQ(ok, raw.answered());
    EXPECT_GT(ok, 0);
    EXPECT_GT(lost, 0);
    EXPECT_GT(raw.accepted(), 2);  // connections were replaced
    proxy->Stop();
  }
}

// Plain HTTP on the same proxy and pool as the RPCs: GET with a header, HEAD (its answer has a
// Content-Length but no body), POST with a body, a 404 that is a completed call, interleaved with
// RPCs on pipelined connections.
TEST_F(HttpClientE2eTest, PlainRequestsShareThePool) {
  auto proxy = Proxy(/*max_conn_num=*/2, /*depth=*/4);
  ASSERT_NE(proxy, nullptr);
  HttpClientResponse rsp;
  Status st = HttpGet(*proxy, MakeClientContext(), "/hello", &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.status, 200);
  EXPECT_EQ(rsp.body.ToString(), "Hello, World!");
  ASSERT_NE(rsp.Header("content-type"), nullptr);
  EXPECT_EQ(*rsp.Header("content-type"), "text/plain");

  st = HttpCall(*proxy, MakeClientContext(), HttpMethod::kGet, "/hello", {}, {{"X-Who", "you"}},
                &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.body.ToString(), "Hello, you!");

  st = HttpCall(*proxy, MakeClientContext(), HttpMethod::kHead, "/hello", {}, {}, &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.status, 200);
  EXPECT_EQ(rsp.body.size(), 0u);
  ASSERT_NE(rsp.Header("Content-Length"), nullptr);
  EXPECT_EQ(*rsp.Header("Content-Length"), "13");

  st = HttpPost(*proxy, MakeClientContext(), "/echo", std::string(100'000, 'e'),
                "application/octet-stream", &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.status, 201);
  EXPECT_EQ(*rsp.Header("X-Length"), "100000");
  EXPECT_EQ(rsp.body.size(), 100'000u);

  st = HttpGet(*proxy, MakeClientContext(), "/no/such/page", &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.status, 404);

  // A target that would split the request is refused before anything is sent.
  st = HttpGet(*proxy, MakeClientContext(), "/a b", &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kClientEncodeErr) << st.ToString();

  // Mixed with RPCs, HEAD among them, pipelined: every reply is its own request's.
  std::vector<Future<HttpClientResponse>> plain;
  std::vector<Future<HelloReply>> rpcs;
  for (int i = 0; i < 300; ++i) {
    plain.push_back(AsyncHttpCall(*proxy, MakeClientContext(),
                                  i % 3 == 0 ? HttpMethod::kHead : HttpMethod::kGet, "/hello", {},
                                  {{"X-Who", std::to_string(i)}}));
    HelloRequest req;
    req.set_msg("mix" + std::to_string(i));
    rpcs.push_back(proxy->AsyncSayHello(MakeClientContext(), req));
  }
  auto plain_done = BlockingGet(WhenAll(std::move(plain))).GetValue();
  auto rpcs_done = BlockingGet(WhenAll(std::move(rpcs))).GetValue();
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(plain_done[i].IsReady()) << plain_done[i].GetException().ToString();
    const HttpClientResponse& r = plain_done[i].GetValue();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body.ToString(), i % 3 == 0 ? "" : "Hello, " + std::to_string(i) + "!");
    ASSERT_TRUE(rpcs_done[i].IsReady()) << rpcs_done[i].GetException().ToString();
    EXPECT_EQ(rpcs_done[i].GetValue().msg(), "Hello, mix" + std::to_string(i));
  }
}

}  // namespace
}  // namespace trpc::http
