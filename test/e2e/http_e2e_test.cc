// End-to-end tests of the HTTP/1.1 plug-in over loopback: an HttpService with plain routes and the
// REST mapping of Greeter, driven through raw sockets (pipelining split at every byte, limits,
// malformed and smuggling requests, slowloris) and through curl. The same tests run in each
// thread model: TRPC_E2E_THREAD_MODEL=merge (default) or fiber (ctest runs both).

#include <errno.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/peer.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/http/http_service.h"
#include "trpc/server/server.h"
#include "trpc/server/server_filter.h"

namespace trpc::http {
namespace {

using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

constexpr char kServiceName[] = "trpc.test.http.Http";
constexpr int64_t kIoTimeoutMs = 10'000;

constexpr char kMergeModels[] = R"(global:
  threadmodel:
    default:
      - instance_name: http_server
        io_handle_type: merge
        io_thread_num: 2
)";
constexpr char kFiberModels[] = R"(global:
  threadmodel:
    fiber:
      - instance_name: http_server
        concurrency_hint: 2
)";
constexpr char kServerYaml[] = R"(server:
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

bool FiberModel() {
  const char* m = std::getenv("TRPC_E2E_THREAD_MODEL");
  return m != nullptr && std::string_view(m) == "fiber";
}

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
    std::string err;
    config_ = new Config;
    std::string yaml = std::string(FiberModel() ? kFiberModels : kMergeModels) + kServerYaml;
    ASSERT_TRUE(LoadConfigFromString(yaml, "http_e2e_test.yaml", config_, &err)) << err;
    log::SetLevel(log::Level::kError);
    ASSERT_TRUE(runtime::Start(config_->global.threadmodel, &err)) << err;
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

  static Config* config_;
  std::unique_ptr<Server> server_;
  NetAddress addr_;
  std::mutex later_mu_;
  std::vector<std::thread> later_;  // the "/later" repliers
};

Config* HttpE2eTest::config_ = nullptr;

const char kGet[] = "GET / HTTP/1.1\r\nHost: t\r\n\r\n";

TEST_F(HttpE2eTest, PlainRoutesAnswerWithHeadersAndBody) {
  Response r = RoundTrip(kGet);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");
  EXPECT_TRUE(r.Has("Content-Type: application/json"));
  EXPECT_TRUE(r.Has("Content-Length: 2"));
  EXPECT_NE(r.head.find("Date: "), std::string::npos);
  EXPECT_FALSE(r.Has("Connection: close"));

  r = RoundTrip("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.body, "Hello, World!");
  r = RoundTrip("GET /users/7/posts/abc?x=1&q=yes HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.body, "7/abc?yes");
  r = RoundTrip("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(r.Has("X-Echo-Method: POST"));
}

TEST_F(HttpE2eTest, ChunkedBodyIsDeChunked) {
  Response r = RoundTrip(
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "abcde");
}

TEST_F(HttpE2eTest, HeadHasLengthButNoBody) {
  RawClient c(addr_);
  ASSERT_TRUE(c.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kGet)));
  Response r;
  // The HEAD reply carries Content-Length: 13 but no body: reading it as if it had one would
  // swallow the next reply, so parse by hand.
  ASSERT_TRUE(c.Read(&r));  // reads 13 bytes of the next reply as "body"
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Has("Content-Length: 13"));
  EXPECT_EQ(r.body.substr(0, 8), "HTTP/1.1") << "HEAD must not send a body";
}

TEST_F(HttpE2eTest, NotFoundAndMethodNotAllowed) {
  // The error body carries the framework code (docs/http.md): 12 for no route or no such
  // method on the path, 1 for a body type the REST mapping cannot decode.
  Response r = RoundTrip("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"code":12,"func_code":0,"message":"no route for this path"})");
  EXPECT_TRUE(r.Has("Content-Type: application/json"));
  r = RoundTrip("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_TRUE(r.Has("Allow: GET, HEAD"));
  EXPECT_EQ(r.body, R"({"code":12,"func_code":0,"message":"method not allowed on this path"})");
  r = RoundTrip("GET /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_TRUE(r.Has("Allow: POST"));
  EXPECT_NE(r.body.find(R"("code":12,)"), std::string::npos) << r.body;
  r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find(R"("code":1,)"), std::string::npos) << r.body;
  EXPECT_FALSE(r.Has("Allow: POST"));
  r = RoundTrip("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 500);
}

TEST_F(HttpE2eTest, RestMappingWithJson) {
  std::string body = R"({"msg":"json"})";
  Response r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json; charset=utf-8\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Has("Content-Type: application/json"));
  EXPECT_EQ(r.body, R"({"msg":"Hello, json"})");

  body = R"({"msg":"fail"})";
  r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("\"func_code\":7"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("the handler said no"), std::string::npos);

  body = R"({"nope":1})";
  r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 400) << r.body;
}

// POST /trpc.test.helloworld.Greeter/SayHello with a JSON body.
std::string SayHelloJson(std::string_view body) {
  return "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

// Status::AppError: ret 0, the service's code in func_code, HTTP 500.
TEST_F(HttpE2eTest, RestMappingCarriesAnApplicationError) {
  Response r = RoundTrip(SayHelloJson(R"({"msg":"app_error"})"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, R"({"code":0,"func_code":-404,"message":"no such greeting"})");
}

// protocol_options.json_emit_defaults: fields at their default value are left out of JSON
// replies unless it is true.
TEST_F(HttpE2eTest, JsonEmitDefaultsOption) {
  const std::string req = SayHelloJson(R"({"msg":"empty"})");
  Response r = RoundTrip(req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");

  ServerConfig with_defaults = config_->server;
  with_defaults.service[0].protocol_options["json_emit_defaults"] = "true";
  StartServer(with_defaults);
  r = RoundTrip(req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"msg":""})");

  ServerConfig bad = config_->server;
  bad.service[0].protocol_options["json_emit_defaults"] = "yes";
  bad.service[0].protocol_option_origin["json_emit_defaults"] = "t.yaml:7";
  Server server(bad);
  ASSERT_TRUE(server.RegisterService(kServiceName, std::make_shared<HttpService>()));
  std::string err;
  EXPECT_FALSE(server.Start(&err));
  EXPECT_EQ(err,
            "t.yaml:7: service 'trpc.test.http.Http': protocol_options.json_emit_defaults: "
            "expected true or false, got 'yes'");
}

// The server's own 404/405/415 answers are framework errors: a filter sees their code at
// SERVER_POST_RPC_INVOKE, and the metrics count them as errors of method "unknown".
class StatusRecorder final : public MessageServerFilter {
 public:
  std::string Name() const override { return "http_e2e_status_recorder"; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::SERVER_POST_RPC_INVOKE};
  }
  void operator()(FilterStatus&, FilterPoint, const ServerContextPtr& ctx) override {
    std::lock_guard lock(mu);
    seen.push_back(ctx->GetStatus().GetFrameworkRetCode());
  }
  std::mutex mu;
  std::vector<int32_t> seen;
};

TEST_F(HttpE2eTest, RefusalsAreErrorsForFiltersAndMetrics) {
  static auto* recorder = [] {
    auto f = std::make_shared<StatusRecorder>();
    RegisterServerFilter(f);
    return f.get();
  }();
  {
    std::lock_guard lock(recorder->mu);
    recorder->seen.clear();
  }
  ServerConfig filtered = config_->server;
  filtered.service[0].filter = {"http_e2e_status_recorder"};
  StartServer(filtered);
  EXPECT_EQ(RoundTrip("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n").status, 404);
  EXPECT_EQ(RoundTrip("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n").status, 405);
  EXPECT_EQ(RoundTrip("POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
                      "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi")
                .status,
            415);
  EXPECT_EQ(RoundTrip(kGet).status, 200);
  {
    std::lock_guard lock(recorder->mu);
    EXPECT_EQ(recorder->seen, (std::vector<int32_t>{kServerNoFuncErr, kServerNoFuncErr,
                                                    kServerDecodeErr, kSuccess}));
  }
  ServerMetrics m = server_->GetMetrics();
  const MethodMetrics* unknown = nullptr;
  for (const auto& svc : m.services) {
    if (svc.name != kServiceName) continue;
    for (const auto& method : svc.methods) {
      if (method.name == "unknown") unknown = &method;
    }
  }
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->requests, 3u);
  using Errors = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(Errors(unknown->errors.begin(), unknown->errors.end()), (Errors{{"1", 1}, {"12", 2}}));
}

TEST_F(HttpE2eTest, RestMappingWithProtobuf) {
  HelloRequest req;
  req.set_msg("pb");
  std::string body = req.SerializeAsString();
  Response r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/x-protobuf\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Has("Content-Type: application/x-protobuf"));
  HelloReply rsp;
  ASSERT_TRUE(rsp.ParseFromString(r.body));
  EXPECT_EQ(rsp.msg(), "Hello, pb");
}

// Three pipelined requests (one with a chunked body) sent in two pieces split at every byte
// offset: every split gives the same three replies, in order.
TEST_F(HttpE2eTest, PipelinedRequestsSplitAtEveryOffset) {
  const std::string stream =
      "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n"
      "GET /users/1/posts/2 HTTP/1.1\r\nHost: t\r\n\r\n";
  RawClient c(addr_);
  ASSERT_TRUE(c.ok());
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    ASSERT_TRUE(c.Send(stream.substr(0, cut)));
    if (cut % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_TRUE(c.Send(stream.substr(cut)));
    Response a, b, d;
    ASSERT_TRUE(c.Read(&a) && c.Read(&b) && c.Read(&d)) << "split at " << cut;
    ASSERT_EQ(a.body, "Hello, World!") << cut;
    ASSERT_EQ(b.body, "body") << cut;
    ASSERT_EQ(d.body, "1/2?") << cut;
  }
}

// A slow request first, fast ones after it, all in one write: the fast replies are held back
// until the slow one has gone out (fiber model: they finish first).
TEST_F(HttpE2eTest, PipelinedRepliesKeepRequestOrderBehindASlowHandler) {
  RawClient c(addr_);
  std::string batch = "GET /sleep/150 HTTP/1.1\r\nHost: t\r\n\r\n";
  for (int i = 0; i < 8; ++i) batch += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_TRUE(c.Send(batch));
  Response r;
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.body, "slept 150");
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.Read(&r));
    EXPECT_EQ(r.body, "Hello, World!");
  }
}

// Fiber model: the requests of one read start in one fiber, but a request that parks hands
// the rest over at once, so eight pipelined sleeps overlap instead of queueing (merge: they
// run one after another on the worker, by design).
TEST_F(HttpE2eTest, PipelinedSleepsOverlapInTheFiberModel) {
  if (!FiberModel()) GTEST_SKIP() << "the merge model runs a connection's requests in turn";
  RawClient c(addr_);
  std::string batch;
  for (int i = 0; i < 8; ++i) batch += "GET /sleep/100 HTTP/1.1\r\nHost: t\r\n\r\n";
  auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send(batch));
  Response r;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.Read(&r));
    EXPECT_EQ(r.body, "slept 100");
  }
  auto took = std::chrono::steady_clock::now() - begin;
  // In turn they would take 800 ms (about 500 with a sibling worker taking some); overlapped,
  // one sleep (slack for sanitizer builds).
  EXPECT_LT(took, std::chrono::milliseconds(350));
}

// A handler that takes the reply over (SetResponse(false)) answers later from another thread;
// a pipelined request behind it still gets its reply second.
TEST_F(HttpE2eTest, DeferredReplyFromAnotherThread) {
  Response r = RoundTrip("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, "later");
  RawClient c(addr_);
  ASSERT_TRUE(c.Send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kGet)));
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.body, "later");
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.body, "{}");
}

TEST_F(HttpE2eTest, KeepAliveRules) {
  {  // HTTP/1.0 without keep-alive: answer, then close.
    RawClient c(addr_);
    c.Send("GET / HTTP/1.0\r\n\r\n");
    Response r;
    ASSERT_TRUE(c.Read(&r));
    EXPECT_TRUE(r.Has("Connection: close"));
    EXPECT_TRUE(c.ReadsEof());
  }
  {  // HTTP/1.0 with keep-alive: stays open, says so.
    RawClient c(addr_);
    Response r;
    for (int i = 0; i < 3; ++i) {
      c.Send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
      ASSERT_TRUE(c.Read(&r));
      EXPECT_TRUE(r.Has("Connection: keep-alive"));
    }
  }
  {  // Connection: close in a pipeline: its reply is the last; what follows is ignored.
    RawClient c(addr_);
    c.Send(std::string(kGet) + "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" +
           kGet);
    Response a, b;
    ASSERT_TRUE(c.Read(&a));
    ASSERT_TRUE(c.Read(&b));
    EXPECT_EQ(b.body, "Hello, World!");
    EXPECT_TRUE(b.Has("Connection: close"));
    EXPECT_TRUE(c.ReadsEof());
  }
}

TEST_F(HttpE2eTest, ExpectContinueGetsAnInterimAnswer) {
  RawClient c(addr_);
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
             "Expect: 100-continue\r\n\r\n"));
  Response r;
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.status, 100);
  ASSERT_TRUE(c.Send("abc"));
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "abc");
}

TEST_F(HttpE2eTest, LimitsGetTheirStatus) {
  ExpectRefusedAndClosed("GET /" + std::string(1100, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", 414);
  ExpectRefusedAndClosed(
      "GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(5000, 'b') + "\r\n\r\n", 431);
  std::string many = "GET / HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 25; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  ExpectRefusedAndClosed(many + "\r\n", 431);
  ExpectRefusedAndClosed("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 70000\r\n\r\n", 413);
}

TEST_F(HttpE2eTest, MalformedAndSmugglingRequestsGet400AndClose) {
  const char* bad[] = {
      "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "GET / HTTP/1.1\nHost: t\n\n",
      "GET / HTTP/1.1\r\nHost : t\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",
      "GARBAGE\r\n\r\n",
  };
  for (const char* req : bad) {
    SCOPED_TRACE(req);
    ExpectRefusedAndClosed(req, 400);
  }
}

// A good request, then garbage, in one write: the good one is answered first.
TEST_F(HttpE2eTest, ErrorAnswerComesAfterEarlierReplies) {
  RawClient c(addr_);
  c.Send("GET /sleep/50 HTTP/1.1\r\nHost: t\r\n\r\nBAD REQUEST\r\n\r\n");
  Response a, b;
  ASSERT_TRUE(c.Read(&a));
  EXPECT_EQ(a.body, "slept 50");
  ASSERT_TRUE(c.Read(&b));
  EXPECT_EQ(b.status, 400);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpE2eTest, SlowlorisGets408AndIsClosed) {
  RawClient c(addr_);
  int64_t start = MonotonicMillis();
  // A byte every 50 ms keeps the connection active but never finishes the head (limit 300 ms).
  std::string head = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ";
  Response r;
  bool answered = false;
  for (size_t i = 0; i < head.size() + 100 && MonotonicMillis() - start < 5000; ++i) {
    if (!c.Send(i < head.size() ? head.substr(i, 1) : "x")) break;
    if (c.Read(&r, 50)) {
      answered = true;
      break;
    }
  }
  ASSERT_TRUE(answered || c.Read(&r, 2000));
  EXPECT_EQ(r.status, 408);
  EXPECT_LT(MonotonicMillis() - start, 3000);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpE2eTest, OtherConnectionsKeepBeingServedWhileOneMisbehaves) {
  RawClient bad(addr_);
  bad.Send("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n");
  RawClient good(addr_);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(good.Send(kGet));
    Response r;
    ASSERT_TRUE(good.Read(&r));
    EXPECT_EQ(r.status, 200);
  }
}

TEST_F(HttpE2eTest, BadProtocolOptionStopsStartWithFileAndLine) {
  const std::string yaml = std::string(FiberModel() ? kFiberModels : kMergeModels) +
                           "server:\n"
                           "  service:\n"
                           "    - name: trpc.test.http.Http\n"
                           "      protocol: http\n"
                           "      ip: 127.0.0.1\n"
                           "      port: 0\n"
                           "      protocol_options:\n"
                           "        max_body_bytes: lots\n";
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(yaml, "bad.yaml", &config, &err)) << err;
  Server server(config.server);
  ASSERT_TRUE(server.RegisterService(kServiceName, std::make_shared<HttpService>()));
  EXPECT_FALSE(server.Start(&err));
  // The offending value is on the last line.
  std::string line = std::to_string(std::count(yaml.begin(), yaml.end(), '\n'));
  EXPECT_NE(err.find("bad.yaml:" + line + ": "), std::string::npos) << err;
  EXPECT_NE(err.find("protocol_options.max_body_bytes: expected an integer"), std::string::npos)
      << err;
}

// Interop: curl (when installed) gets the right answers, with keep-alive across requests.
TEST_F(HttpE2eTest, CurlGetsCorrectAnswers) {
  if (std::system("curl --version > /dev/null 2>&1") != 0)
    TRPC_SKIP_WITHOUT_PEER("curl not installed");
  std::string base = "http://" + addr_.ToString();
  auto run = [](const std::string& c) {
    std::string out;
    FILE* p = ::popen(c.c_str(), "r");
    if (p == nullptr) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
  };
  EXPECT_EQ(run("curl -s -S --max-time 10 " + base + "/hello " + base + "/ 2>&1"),
            "Hello, World!{}");
  EXPECT_EQ(run("curl -s -S --max-time 10 '" + base + "/users/9/posts/8?q=z' 2>&1"), "9/8?z");
  EXPECT_EQ(run("curl -s -S --max-time 10 -H 'Content-Type: application/json' -d "
                "'{\"msg\":\"curl\"}' " +
                base + "/trpc.test.helloworld.Greeter/SayHello 2>&1"),
            R"({"msg":"Hello, curl"})");
  EXPECT_EQ(run("curl -s -S --max-time 10 -o /dev/null -w '%{http_code}' " + base + "/nope 2>&1"),
            "404");
  // The router's refusals as curl sees them: the framework code in the JSON body, and a 405's
  // Allow header.
  EXPECT_EQ(run("curl -s -S --max-time 10 " + base + "/nope 2>&1"),
            R"({"code":12,"func_code":0,"message":"no route for this path"})");
  std::string head = run("curl -s -S --max-time 10 -D - -o /dev/null " + base +
                         "/trpc.test.helloworld.Greeter/SayHello 2>&1");
  EXPECT_NE(head.find("HTTP/1.1 405"), std::string::npos) << head;
  EXPECT_NE(head.find("Allow: POST"), std::string::npos) << head;
}

}  // namespace
}  // namespace trpc::http
