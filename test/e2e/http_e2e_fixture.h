#pragma once

// What the http_e2e tests share: an HttpService with plain routes and the REST mapping of
// Greeter over loopback, a raw-socket HTTP/1.1 client, and the fixture that starts the server
// per test, in the thread model TRPC_E2E_THREAD_MODEL names (merge, the default, or fiber; ctest
// runs both). The tests, by topic: http_e2e_routes_test.cc (routes, the REST mapping, refusals)
// and http_e2e_connection_test.cc (pipelining, keep-alive, limits, malformed and smuggling
// requests, slowloris, curl).

#include <errno.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/peer.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/http/http_service.h"
#include "trpc/server/server.h"

namespace trpc::http::e2e {

using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

inline constexpr char kServiceName[] = "trpc.test.http.Http";
inline constexpr int64_t kIoTimeoutMs = 10'000;

inline constexpr char kServerYaml[] = R"(server:
  app: test
  server: http_e2e
  service:
    - name: trpc.test.http.Http
      protocol: http
      ip: 127.0.0.1
      port: 0
      idle_time: 60000
      timeout: 5000
      protocol_options:
        max_request_line: 1024
        max_header_bytes: 4096
        max_header_count: 20
        max_body_bytes: 65536
        header_timeout_ms: 300
plugins:
  log:
    level: error
)";

using trpc::testing::FiberModel;

inline std::string ModelsYaml() { return trpc::testing::ThreadModelYaml({{"http_server", 2}}); }

class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    if (req->msg() == "fail") return Status(0, 7, "the handler said no");
    if (req->msg() == "app_error") return Status::AppError(-404, "no such greeting");
    if (req->msg() == "empty") return kSuccStatus;  // every field at its default
    rsp->set_msg("Hello, " + req->msg());
    return kSuccStatus;
  }
};

// One parsed response: enough of HTTP/1.1 for these tests (Content-Length bodies only).
struct Response {
  int status = 0;
  std::string head;  // status line and headers
  std::string body;
  bool Has(std::string_view header_line) const {
    return head.find(std::string(header_line) + "\r\n") != std::string::npos;
  }
};

class RawClient {
 public:
  explicit RawClient(const NetAddress& addr) {
    fd_ = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && ::connect(fd_, addr.sockaddr_ptr(), addr.length()) != 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads one response; false on close or timeout before it is complete.
  bool Read(Response* r, int64_t timeout_ms = kIoTimeoutMs) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (true) {
      size_t end = buf_.find("\r\n\r\n");
      if (end != std::string::npos) {
        std::string head = buf_.substr(0, end + 2);
        size_t len = 0;
        size_t cl = head.find("Content-Length: ");
        if (cl != std::string::npos) len = std::stoul(head.substr(cl + 16));
        if (buf_.size() >= end + 4 + len) {
          r->head = head;
          r->status = std::stoi(head.substr(9, 3));
          r->body = buf_.substr(end + 4, len);
          buf_.erase(0, end + 4 + len);
          return true;
        }
      }
      if (!Fill(deadline)) return false;
    }
  }

  // True when the server closed the connection (EOF) with nothing more to read.
  bool ReadsEof(int64_t timeout_ms = kIoTimeoutMs) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (buf_.empty()) {
      if (!Fill(deadline)) return eof_;
    }
    return false;
  }

  const std::string& pending() const { return buf_; }

 private:
  bool Fill(int64_t deadline) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char tmp[65536];
    ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  std::string buf_;
  bool eof_ = false;
};

class HttpE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log::SetLevel(log::Level::kError);
    config_ = new Config;
    ASSERT_TRUE(
        trpc::testing::StartRuntime(ModelsYaml() + kServerYaml, "http_e2e_test.yaml", config_));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
    config_ = nullptr;
  }

  void SetUp() override { StartServer(config_->server); }

  // (Re)starts server_ with `server_config` (the suite's, or a variant of it).
  void StartServer(const ServerConfig& server_config) {
    if (server_) server_->Stop();
    auto svc = std::make_shared<HttpService>();
    svc->Get("/", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
      rsp->SetBody("{}", "application/json");
    });
    svc->Get("/hello", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
      rsp->SetBody("Hello, World!", "text/plain");
    });
    svc->Get("/users/{id}/posts/{post}",
             [](const ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
               rsp->SetBody(*req.PathParam("id") + "/" + *req.PathParam("post") + "?" +
                            std::string(req.QueryParam("q")));
             });
    svc->Post("/echo", [](const ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
      rsp->set_status(201);
      rsp->AddHeader("X-Echo-Method", std::string(HttpMethodName(req.method())));
      rsp->SetBody(req.body(), "application/octet-stream");
    });
    // "/sleep/N" waits N ms (a fiber sleep in the fiber model, so later pipelined requests of
    // the same connection finish first and must be held back to keep the order).
    svc->Get("/sleep/{ms}", [](const ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
      int ms = std::stoi(*req.PathParam("ms"));
      if (FiberModel()) {
        fiber::this_fiber::SleepFor(std::chrono::milliseconds(ms));
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      }
      rsp->SetBody("slept " + *req.PathParam("ms"));
    });
    svc->Get("/throw", [](const ServerContextPtr&, const HttpRequest&, HttpResponse*) {
      throw std::runtime_error("on purpose");
    });
    // "/later" replies from another thread, 20 ms after its handler returned.
    svc->Get("/later", [this](const ServerContextPtr& ctx, const HttpRequest&, HttpResponse*) {
      ctx->SetResponse(false);
      std::lock_guard lock(later_mu_);
      later_.emplace_back([ctx] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        auto rsp = std::make_unique<HttpResponse>();
        rsp->set_status(202);
        rsp->SetBody("later", "text/plain");
        ctx->SetProtocolResponse(std::move(rsp));
        ctx->SendUnaryResponse(Status());
      });
    });
    svc->MapRpc(std::make_shared<TestGreeter>());
    server_ = std::make_unique<Server>(server_config);
    ASSERT_TRUE(server_->RegisterService(kServiceName, svc));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kServiceName, &addr_));
  }
  void TearDown() override {
    {
      std::lock_guard lock(later_mu_);
      for (auto& t : later_) t.join();
    }
    if (server_) server_->Stop();
  }

  // Sends `req` on a fresh connection and reads one response.
  Response RoundTrip(std::string_view req) {
    RawClient c(addr_);
    EXPECT_TRUE(c.ok());
    EXPECT_TRUE(c.Send(req));
    Response r;
    EXPECT_TRUE(c.Read(&r)) << "no response to: " << req;
    return r;
  }

  // Sends `req`, expects `status` and then the connection closed by the server.
  void ExpectRefusedAndClosed(std::string_view req, int status) {
    RawClient c(addr_);
    ASSERT_TRUE(c.ok());
    c.Send(req);
    Response r;
    ASSERT_TRUE(c.Read(&r)) << "no answer to a bad request";
    EXPECT_EQ(r.status, status) << r.head << r.body;
    EXPECT_TRUE(r.Has("Connection: close"));
    EXPECT_TRUE(c.ReadsEof()) << "the connection stayed open after " << status;
  }

  static inline Config* config_ = nullptr;
  std::unique_ptr<Server> server_;
  NetAddress addr_;
  std::mutex later_mu_;
  std::vector<std::thread> later_;  // the "/later" repliers
};

inline constexpr char kGet[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

}  // namespace trpc::http::e2e
