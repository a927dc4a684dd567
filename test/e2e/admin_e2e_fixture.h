#pragma once

// What the admin_e2e tests share (docs/admin.md): a Server serving Greeter over trpc with its
// admin endpoints on an ephemeral port (admin::EnableAdmin), driven by a generated proxy and a
// minimal HTTP client, in the thread model TRPC_E2E_THREAD_MODEL names (merge, the default, or
// fiber; ctest runs both). The tests, by topic: admin_e2e_metrics_test.cc (/metrics,
// /cmds/stats, /version, /health, /cmds/loglevel), admin_e2e_profile_test.cc (CPU profiles),
// admin_e2e_workers_test.cc (answers while every worker is blocked; fiber steals),
// admin_e2e_access_test.cc (allowed hosts, connection table, admin address and port),
// admin_e2e_auth_test.cc (bearer token, TLS, the refusal to serve beyond loopback without them).

#include <errno.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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
#include "test/common/wait_for.h"
#include "trpc/admin/admin.h"
#include "trpc/base/clock.h"
#include "trpc/base/detail/version.h"
#include "trpc/base/logging.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/server.h"

namespace trpc::test::helloworld {

inline constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
inline constexpr char kSayHello[] = "/trpc.test.helloworld.Greeter/SayHello";
// The same Greeter over gRPC, for gRPC's metric names (server.admin_grpc_metrics).
inline constexpr char kGrpcGreeterName[] = "trpc.test.helloworld.GrpcGreeter";
inline constexpr char kClientModel[] = "admin_client";
inline constexpr int64_t kIoTimeoutMs = 10'000;
inline constexpr int kServerWorkers = 2;

inline constexpr char kServerYaml[] = R"(server:
  app: test
  server: admin_e2e
  admin_grpc_metrics: true
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      timeout: 10000
      threadmodel_instance_name: admin_server
    - name: trpc.test.helloworld.GrpcGreeter
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      timeout: 10000
      threadmodel_instance_name: admin_server
plugins:
  log:
    level: warn
)";

using trpc::testing::FiberModel;
using trpc::testing::WaitFor;

inline std::string ConfigYaml() {
  return trpc::testing::ThreadModelYaml({{"admin_server", kServerWorkers}, {"admin_client", 1}}) +
         kServerYaml;
}

inline std::atomic<int> g_blocked{0};
inline std::atomic<bool> g_release{false};

// "steal" (fiber model): queues a fiber on the handler's own worker, then blocks that worker's
// thread until the fiber has run: only another worker can run it, by stealing it. Ret 8 when
// it did not run within 10 s.
inline Status QueueAFiberAndBlockUntilItRuns() {
  auto ran = std::make_shared<std::atomic<bool>>(false);
  if (!fiber::StartFiberDetached([ran] {
        ran->store(true);
        ran->notify_all();
      })) {
    return Status(0, 8, "no scheduler");
  }
  int64_t deadline = MonotonicMillis() + 10'000;
  while (!ran->load() && MonotonicMillis() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the thread, not the fiber
  }
  return ran->load() ? kSuccStatus : Status(0, 8, "the queued fiber did not run");
}

// The threads "later" replies from; joined by the fixture's TearDown().
inline std::mutex g_later_mu;
inline std::vector<std::thread> g_later;

// SayHello by message: "fail" answers with the handler's own code 7; "throw" throws (ret 31);
// "block" holds its worker thread (not just its fiber) until g_release; "later" replies from a
// thread of its own after the handler returned; others say hello.
class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    if (req->msg() == "later") {
      ctx->SetResponse(false);
      std::lock_guard lock(g_later_mu);
      g_later.emplace_back([ctx] {
        HelloReply later;
        later.set_msg("later");
        ctx->SendUnaryResponse(kSuccStatus, later);
      });
      return kSuccStatus;
    }
    if (req->msg() == "fail") return Status(0, 7, "no");
    if (req->msg() == "throw") throw std::runtime_error("on purpose");
    if (req->msg() == "steal") return QueueAFiberAndBlockUntilItRuns();
    if (req->msg() == "block") {
      g_blocked.fetch_add(1);
      g_release.wait(false);  // a futex wait: the thread itself blocks
    }
    rsp->set_msg("Hello, " + req->msg());
    return kSuccStatus;
  }
};

struct HttpReply {
  int status = 0;
  std::string head;
  std::string body;
};

// A connected blocking socket to `addr`, or -1.
inline int Connect(const NetAddress& addr) {
  int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, addr.sockaddr_ptr(), addr.length()) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// One request with the Host header `host` on a fresh connection ("Connection: close"), read to
// EOF. Status 0 when there was no complete answer within `timeout_ms`.
// `headers` are extra header lines, each ending in "\r\n".
inline HttpReply HttpAs(const NetAddress& addr, std::string_view host, std::string_view method,
                        std::string_view target, std::string_view body = {},
                        int64_t timeout_ms = kIoTimeoutMs, std::string_view headers = {}) {
  HttpReply r;
  int fd = Connect(addr);
  if (fd < 0) return r;
  std::string req = std::string(method) + " " + std::string(target) +
                    " HTTP/1.1\r\nHost: " + std::string(host) + "\r\nConnection: close\r\n" +
                    std::string(headers) + "Content-Length: " + std::to_string(body.size()) +
                    "\r\n\r\n" + std::string(body);
  std::string in;
  bool ok = ::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
  int64_t deadline = MonotonicMillis() + timeout_ms;
  while (ok) {
    int64_t left = deadline - MonotonicMillis();
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[65536];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      size_t end = in.find("\r\n\r\n");
      if (end != std::string::npos && in.starts_with("HTTP/1.1 ")) {
        r.status = std::atoi(in.c_str() + 9);
        r.head = in.substr(0, end + 2);
        r.body = in.substr(end + 4);
      }
      break;
    }
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return r;
}

// HttpAs with the admin's own address as Host, as curl and Prometheus send it.
inline HttpReply Http(const NetAddress& addr, std::string_view method, std::string_view target,
                      std::string_view body = {}, int64_t timeout_ms = kIoTimeoutMs,
                      std::string_view headers = {}) {
  return HttpAs(addr, addr.ToString(), method, target, body, timeout_ms, headers);
}

// The value of the sample line `series` ("name{labels}") in a Prometheus text, or -1.
inline double Sample(const std::string& text, const std::string& series) {
  std::string prefix = "\n" + series + " ";
  size_t at = ("\n" + text).find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + prefix.size() - 1, nullptr);
}

// The decimal digits at `pos` of `s` up to `end` (a newline or a JSON delimiter) as a
// non-negative integer, or -1 when there are none or something else is there.
inline int64_t Digits(const std::string& s, size_t pos, std::string_view ends) {
  if (pos >= s.size()) return -1;
  size_t stop = s.find_first_of(ends, pos);
  if (stop == std::string::npos) stop = s.size();
  if (stop == pos || stop - pos > 18) return -1;
  int64_t v = 0;
  for (size_t i = pos; i < stop; ++i) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// The value of a counter's sample line `series` as a non-negative integer; -1 when the line is
// missing or its value is not one.
inline int64_t Counter(const std::string& text, const std::string& series) {
  std::string prefix = "\n" + series + " ";
  std::string t = "\n" + text;
  size_t at = t.find(prefix);
  return at == std::string::npos ? -1 : Digits(t, at + prefix.size(), "\n");
}

// The value of `"key":` in the JSON object starting at `from` of `j` (first occurrence) as a
// non-negative integer, or -1.
inline int64_t JsonCount(const std::string& j, size_t from, const std::string& key) {
  std::string k = "\"" + key + "\":";
  size_t at = from == std::string::npos ? from : j.find(k, from);
  return at == std::string::npos ? -1 : Digits(j, at + k.size(), ",}");
}

// The fiber figures of thread model `name` in /cmds/stats's JSON.
inline size_t ThreadModelEntry(const std::string& j, const std::string& name) {
  return j.find(R"({"name":")" + name + R"(","type":)");
}

inline std::string MethodLabels(const std::string& method) {
  return std::string("service=\"") + kGreeterName + "\",method=\"" + method + "\"";
}

inline std::string RunCommand(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A file name of this process's own (the merge and fiber runs of this test may run at once).
inline std::string TempFile(const std::string& name) {
  return ::testing::TempDir() + std::to_string(::getpid()) + "_" + name;
}

inline bool HaveTool(const char* name) {
  return std::system((std::string("command -v ") + name + " > /dev/null 2>&1").c_str()) == 0;
}

class AdminE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log::SetLevel(log::Level::kWarn);
    // Before any thread starts: setenv is not thread-safe.
    tmp_dir_ = new std::string(::testing::TempDir() + "admin_e2e_" + std::to_string(::getpid()));
    std::filesystem::create_directories(*tmp_dir_);
    ::setenv("TMPDIR", tmp_dir_->c_str(), 1);
    config_ = new Config;
    ASSERT_TRUE(trpc::testing::StartRuntime(ConfigYaml(), "admin_e2e_test.yaml", config_));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    std::filesystem::remove_all(*tmp_dir_);
    delete tmp_dir_;
    delete config_;
    config_ = nullptr;
  }

  void SetUp() override { StartServer(config_->server, /*ephemeral_admin=*/true); }

  void TearDown() override {
    g_release.store(true);
    g_release.notify_all();
    {
      std::lock_guard lock(g_later_mu);
      for (auto& t : g_later) t.join();
      g_later.clear();
    }
    for (auto& p : proxies_) p->Stop();
    proxies_.clear();
    if (server_) server_->Stop();
    server_.reset();
    g_release.store(false);
    g_blocked.store(0);
  }

  void StartServer(const ServerConfig& sc, bool ephemeral_admin) {
    server_ = std::make_unique<Server>(sc);
    // As TrpcApp does: the admin service on server.admin_port, or on an ephemeral port.
    if (ephemeral_admin) {
      ASSERT_TRUE(admin::EnableAdmin(server_.get(), "127.0.0.1", 0));
    } else {
      ASSERT_TRUE(admin::EnableAdmin(server_.get()));
    }
    ASSERT_TRUE(server_->RegisterService(kGreeterName, std::make_shared<TestGreeter>()));
    if (sc.service.size() > 1) {
      ASSERT_TRUE(server_->RegisterService(kGrpcGreeterName, std::make_shared<TestGreeter>()));
    }
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kGreeterName, &greeter_));
    if (sc.service.size() > 1) {
      ASSERT_TRUE(server_->GetAddress(kGrpcGreeterName, &grpc_greeter_));
    }
    if (admin::GetAdminAddress(*server_, &admin_)) {
      ASSERT_NE(admin_.port(), 0);
    }
  }

  // A proxy of its own, so of its own connection (the client model has one reactor).
  std::shared_ptr<ServiceProxy> NewProxy() { return NewProxy(kGreeterName, "trpc", greeter_); }
  // The same over gRPC, to the gRPC service.
  std::shared_ptr<ServiceProxy> NewGrpcProxy() {
    return NewProxy(kGrpcGreeterName, "grpc", grpc_greeter_);
  }
  std::shared_ptr<ServiceProxy> NewProxy(const std::string& name, const std::string& protocol,
                                         const NetAddress& addr) {
    ClientServiceConfig c;
    c.name = name;
    c.protocol = protocol;
    c.target = addr.ToString();
    c.timeout = 10'000;
    auto proxy = std::make_shared<ServiceProxy>(c, runtime::GetThreadModel(kClientModel));
    std::string err;
    EXPECT_TRUE(proxy->Init(&err)) << err;
    proxies_.push_back(proxy);
    return proxy;
  }

  Status Call(ServiceProxy& proxy, const std::string& msg, const std::string& func = kSayHello) {
    auto ctx = MakeClientContext();
    ctx->SetFuncName(func);
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    return proxy.UnaryInvoke(ctx, req, &rsp);
  }

  std::string Metrics() {
    HttpReply r = Http(admin_, "GET", "/metrics");
    EXPECT_EQ(r.status, 200) << r.head << r.body;
    EXPECT_NE(r.head.find("Content-Type: text/plain; version=0.0.4"), std::string::npos) << r.head;
    return r.body;
  }

  static inline Config* config_ = nullptr;
  static inline std::string* tmp_dir_ = nullptr;
  std::unique_ptr<Server> server_;
  std::vector<std::shared_ptr<ServiceProxy>> proxies_;
  NetAddress greeter_;
  NetAddress grpc_greeter_;
  NetAddress admin_;
};

}  // namespace trpc::test::helloworld
