// End-to-end tests of the admin service (docs/admin.md): a Server serving Greeter over trpc with
// its admin endpoints on an ephemeral port (admin::EnableAdmin), driven by a generated proxy and
// a minimal HTTP client. Checks /metrics numbers and format (promtool when installed),
// /cmds/stats, /version, /cmds/loglevel, a CPU profile (google-pprof when installed), and that
// the admin answers while every worker is blocked in a handler. The same tests run in each
// thread model: TRPC_E2E_THREAD_MODEL=merge (default) or fiber (ctest runs both).

#include <errno.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#if __has_include(<gperftools/profiler.h>)
constexpr bool kHaveProfiler = true;
#else
constexpr bool kHaveProfiler = false;
#endif

#if defined(__SANITIZE_THREAD__)
// gperftools' profiler is not built with TSan: its SIGPROF handler fills the sample buffer on
// whichever thread the signal lands, under a spin lock TSan cannot see, and ProfilerStop then
// write(2)s that buffer from the profile thread. TSan checks the write's source bytes against
// the handler's stores and reports a race that the library's own lock prevents (CI, fiber
// model). Ignore what the library's calls touch; our own code stays fully checked.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libprofiler.so\n"
         "race:libprofiler.so\n";
}
#endif

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/peer.h"
#include "trpc/admin/admin.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/base/version.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/server.h"

namespace trpc::test::helloworld {
namespace {

constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
constexpr char kSayHello[] = "/trpc.test.helloworld.Greeter/SayHello";
constexpr char kClientModel[] = "admin_client";
constexpr int64_t kIoTimeoutMs = 10'000;
constexpr int kServerWorkers = 2;

constexpr char kMergeModels[] = R"(global:
  threadmodel:
    default:
      - instance_name: admin_server
        io_handle_type: merge
        io_thread_num: 2
      - instance_name: admin_client
        io_handle_type: merge
        io_thread_num: 1
)";
constexpr char kFiberModels[] = R"(global:
  threadmodel:
    fiber:
      - instance_name: admin_server
        concurrency_hint: 2
      - instance_name: admin_client
        concurrency_hint: 1
)";
constexpr char kServerYaml[] = R"(server:
  app: test
  server: admin_e2e
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      timeout: 10000
      threadmodel_instance_name: admin_server
plugins:
  log:
    level: warn
)";

bool FiberModel() {
  const char* m = std::getenv("TRPC_E2E_THREAD_MODEL");
  return m != nullptr && std::string_view(m) == "fiber";
}

std::atomic<int> g_blocked{0};
std::atomic<bool> g_release{false};

// "steal" (fiber model): queues a fiber on the handler's own worker, then blocks that worker's
// thread until the fiber has run: only another worker can run it, by stealing it. Ret 8 when
// it did not run within 10 s.
Status QueueAFiberAndBlockUntilItRuns() {
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

// SayHello by message: "fail" answers with the handler's own code 7; "throw" throws (ret 31);
// "block" holds its worker thread (not just its fiber) until g_release; others say hello.
class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
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
int Connect(const NetAddress& addr) {
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
HttpReply HttpAs(const NetAddress& addr, std::string_view host, std::string_view method,
                 std::string_view target, std::string_view body = {},
                 int64_t timeout_ms = kIoTimeoutMs) {
  HttpReply r;
  int fd = Connect(addr);
  if (fd < 0) return r;
  std::string req = std::string(method) + " " + std::string(target) +
                    " HTTP/1.1\r\nHost: " + std::string(host) +
                    "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) +
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
HttpReply Http(const NetAddress& addr, std::string_view method, std::string_view target,
               std::string_view body = {}, int64_t timeout_ms = kIoTimeoutMs) {
  return HttpAs(addr, addr.ToString(), method, target, body, timeout_ms);
}

// The value of the sample line `series` ("name{labels}") in a Prometheus text, or -1.
double Sample(const std::string& text, const std::string& series) {
  std::string prefix = "\n" + series + " ";
  size_t at = ("\n" + text).find(prefix);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + prefix.size() - 1, nullptr);
}

// The decimal digits at `pos` of `s` up to `end` (a newline or a JSON delimiter) as a
// non-negative integer, or -1 when there are none or something else is there.
int64_t Digits(const std::string& s, size_t pos, std::string_view ends) {
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
int64_t Counter(const std::string& text, const std::string& series) {
  std::string prefix = "\n" + series + " ";
  std::string t = "\n" + text;
  size_t at = t.find(prefix);
  return at == std::string::npos ? -1 : Digits(t, at + prefix.size(), "\n");
}

// The value of `"key":` in the JSON object starting at `from` of `j` (first occurrence) as a
// non-negative integer, or -1.
int64_t JsonCount(const std::string& j, size_t from, const std::string& key) {
  std::string k = "\"" + key + "\":";
  size_t at = from == std::string::npos ? from : j.find(k, from);
  return at == std::string::npos ? -1 : Digits(j, at + k.size(), ",}");
}

// The fiber figures of thread model `name` in /cmds/stats's JSON.
size_t ThreadModelEntry(const std::string& j, const std::string& name) {
  return j.find(R"({"name":")" + name + R"(","type":)");
}

std::string MethodLabels(const std::string& method) {
  return std::string("service=\"") + kGreeterName + "\",method=\"" + method + "\"";
}

std::string RunCommand(const std::string& cmd, int* rc) {
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
std::string TempFile(const std::string& name) {
  return ::testing::TempDir() + std::to_string(::getpid()) + "_" + name;
}

bool HaveTool(const char* name) {
  return std::system((std::string("command -v ") + name + " > /dev/null 2>&1").c_str()) == 0;
}

template <typename Pred>
bool WaitFor(Pred pred, int64_t timeout_ms = kIoTimeoutMs) {
  int64_t deadline = MonotonicMillis() + timeout_ms;
  while (!pred()) {
    if (MonotonicMillis() > deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class AdminE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string err;
    config_ = new Config;
    std::string yaml = std::string(FiberModel() ? kFiberModels : kMergeModels) + kServerYaml;
    ASSERT_TRUE(LoadConfigFromString(yaml, "admin_e2e_test.yaml", config_, &err)) << err;
    log::SetLevel(log::Level::kWarn);
    // Before any thread starts: setenv is not thread-safe.
    tmp_dir_ = new std::string(::testing::TempDir() + "admin_e2e_" + std::to_string(::getpid()));
    std::filesystem::create_directories(*tmp_dir_);
    ::setenv("TMPDIR", tmp_dir_->c_str(), 1);
    ASSERT_TRUE(runtime::Start(config_->global.threadmodel, &err)) << err;
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
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kGreeterName, &greeter_));
    if (admin::GetAdminAddress(*server_, &admin_)) {
      ASSERT_NE(admin_.port(), 0);
    }
  }

  // A proxy of its own, so of its own connection (the client model has one reactor).
  std::shared_ptr<ServiceProxy> NewProxy() {
    ClientServiceConfig c;
    c.name = kGreeterName;
    c.target = greeter_.ToString();
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

  static Config* config_;
  static std::string* tmp_dir_;
  std::unique_ptr<Server> server_;
  std::vector<std::shared_ptr<ServiceProxy>> proxies_;
  NetAddress greeter_;
  NetAddress admin_;
};

Config* AdminE2eTest::config_ = nullptr;
std::string* AdminE2eTest::tmp_dir_ = nullptr;

TEST_F(AdminE2eTest, MetricsCountRequestsErrorsAndLatency) {
  auto proxy = NewProxy();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Call(*proxy, "hi").OK());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(Call(*proxy, "fail").GetFuncRetCode(), 7);
  EXPECT_EQ(Call(*proxy, "throw").GetFrameworkRetCode(), kServerSystemErr);
  EXPECT_EQ(Call(*proxy, "x", "/trpc.test.helloworld.Greeter/Nope").GetFrameworkRetCode(),
            kServerNoFuncErr);

  std::string text = Metrics();
  std::string say = MethodLabels(kSayHello);
  std::string unknown = MethodLabels("unknown");
  EXPECT_EQ(Sample(text, "trpc_server_requests_total{" + say + "}"), 8) << text;
  EXPECT_EQ(Sample(text, "trpc_server_errors_total{" + say + ",code=\"func\"}"), 2) << text;
  EXPECT_EQ(Sample(text, "trpc_server_errors_total{" + say + ",code=\"31\"}"), 1) << text;
  EXPECT_EQ(Sample(text, "trpc_server_errors_total{" + say + ",code=\"12\"}"), -1) << text;
  EXPECT_EQ(Sample(text, "trpc_server_requests_total{" + unknown + "}"), 1) << text;
  EXPECT_EQ(Sample(text, "trpc_server_errors_total{" + unknown + ",code=\"12\"}"), 1) << text;
  // The histogram: cumulative buckets ending in +Inf = count = requests; a positive sum.
  EXPECT_EQ(Sample(text, "trpc_server_request_duration_seconds_count{" + say + "}"), 8);
  EXPECT_EQ(Sample(text, "trpc_server_request_duration_seconds_bucket{" + say + ",le=\"+Inf\"}"),
            8);
  EXPECT_EQ(Sample(text, "trpc_server_request_duration_seconds_bucket{" + say + ",le=\"10\"}"), 8);
  EXPECT_GT(Sample(text, "trpc_server_request_duration_seconds_sum{" + say + "}"), 0);
  double previous = 0;
  for (const char* le : {"0.00005", "0.0001", "0.001", "0.01", "0.1", "1", "10"}) {
    double v =
        Sample(text, "trpc_server_request_duration_seconds_bucket{" + say + ",le=\"" + le + "\"}");
    EXPECT_GE(v, previous) << le;
    previous = v;
  }
  // Per service: one connection now, traffic both ways.
  std::string service = std::string("service=\"") + kGreeterName + "\"";
  EXPECT_EQ(Sample(text, "trpc_server_connections{" + service + "}"), 1);
  EXPECT_EQ(Sample(text, "trpc_server_connections_accepted_total{" + service + "}"), 1);
  EXPECT_GT(Sample(text, "trpc_server_received_bytes_total{" + service + "}"), 9 * 16);
  EXPECT_GT(Sample(text, "trpc_server_sent_bytes_total{" + service + "}"), 9 * 16);
  // Per process and per thread model.
  EXPECT_GE(Sample(text, "process_cpu_seconds_total"), 0);  // clock ticks: 0 early on
  EXPECT_GT(Sample(text, "process_resident_memory_bytes"), 1 << 20);
  std::string model = FiberModel() ? "fiber" : "merge";
  EXPECT_EQ(
      Sample(text, "trpc_threadmodel_workers{threadmodel=\"admin_server\",type=\"" + model + "\"}"),
      kServerWorkers);
  EXPECT_EQ(Sample(text, "trpc_threadmodel_workers{threadmodel=\"trpc_admin\",type=\"merge\"}"), 1);
  if (FiberModel()) {
    EXPECT_GE(Sample(text, "trpc_fibers_alive{threadmodel=\"admin_server\"}"), 0);
    EXPECT_GE(Sample(text, "trpc_fiber_run_queue_depth{threadmodel=\"admin_server\"}"), 0);
    // Counters since the model started: present with a whole value (0 is possible here).
    EXPECT_NE(text.find("# TYPE trpc_fiber_steals_total counter\n"), std::string::npos) << text;
    int64_t steals = Counter(text, "trpc_fiber_steals_total{threadmodel=\"admin_server\"}");
    int64_t remote = Counter(text, "trpc_fiber_remote_steals_total{threadmodel=\"admin_server\"}");
    EXPECT_GE(steals, 0) << text;
    EXPECT_GE(remote, 0) << text;
    EXPECT_LE(remote, steals) << text;  // a part of them (one group here: 0)
  } else {
    EXPECT_EQ(text.find("trpc_fibers_alive"), std::string::npos);
    EXPECT_EQ(text.find("trpc_fiber_steals_total"), std::string::npos);
    EXPECT_EQ(text.find("trpc_fiber_remote_steals_total"), std::string::npos);
  }
  // The admin service counts itself: this scrape is not in yet, the next one sees it.
  std::string admin_metrics = "service=\"trpc.admin\",method=\"GET /metrics\"";
  EXPECT_EQ(Sample(Metrics(), "trpc_server_requests_total{" + admin_metrics + "}"), 1);
}

TEST_F(AdminE2eTest, MetricsPassPromtool) {
  auto proxy = NewProxy();
  ASSERT_TRUE(Call(*proxy, "hi").OK());
  EXPECT_EQ(Call(*proxy, "fail").GetFuncRetCode(), 7);
  HttpReply r = Http(admin_, "GET", "/nope");  // the admin's "unknown" method gets a count
  EXPECT_EQ(r.status, 404);
  std::string text = Metrics();
  // The router's 404 is an error with framework code 12 (docs/admin.md, "Methods").
  EXPECT_EQ(Sample(text,
                   "trpc_server_errors_total{service=\"trpc.admin\",method=\"unknown\","
                   "code=\"12\"}"),
            1)
      << text;
  if (!HaveTool("promtool")) TRPC_SKIP_WITHOUT_PEER("promtool not installed (Debian: prometheus)");
  std::string path = TempFile("admin_e2e_metrics.txt");
  std::ofstream(path) << text;
  int rc = 0;
  std::string out = RunCommand("promtool check metrics < " + path + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out << "\n---\n" << text;
  EXPECT_EQ(out, "") << out;
  std::remove(path.c_str());
}

TEST_F(AdminE2eTest, StatsJsonHasTheSameNumbers) {
  auto proxy = NewProxy();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Call(*proxy, "hi").OK());
  EXPECT_EQ(Call(*proxy, "fail").GetFuncRetCode(), 7);
  HttpReply r = Http(admin_, "GET", "/cmds/stats");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos);
  const std::string& j = r.body;
  EXPECT_TRUE(j.starts_with(R"({"app":"test","server":"admin_e2e","services":[)")) << j;
  EXPECT_NE(j.find(std::string(R"({"method":")") + kSayHello +
                   R"(","requests_total":4,"errors_total":{"func":1},"latency_seconds":{"sum":)"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find(R"("count":4,"buckets":{"0.00005":)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("+Inf":4}})"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("connections":1,"connections_accepted_total":1,)"), std::string::npos) << j;
  EXPECT_NE(j.find(R"("process":{"cpu_seconds_total":)"), std::string::npos) << j;
  EXPECT_EQ(j.find("fibers_alive") != std::string::npos, FiberModel()) << j;
  EXPECT_EQ(j.find("\"steals\":") != std::string::npos, FiberModel()) << j;
  if (FiberModel()) {
    size_t server = ThreadModelEntry(j, "admin_server");
    ASSERT_NE(server, std::string::npos) << j;
    EXPECT_GE(JsonCount(j, server, "run_queue_depth"), 0) << j;
    EXPECT_GE(JsonCount(j, server, "steals"), 0) << j;
    EXPECT_GE(JsonCount(j, server, "remote_steals"), 0) << j;
    EXPECT_LE(JsonCount(j, server, "remote_steals"), JsonCount(j, server, "steals")) << j;
  }
  if (HaveTool("python3")) {  // well-formed JSON
    std::string path = TempFile("admin_e2e_stats.json");
    std::ofstream(path) << j;
    int rc = 0;
    std::string out = RunCommand("python3 -m json.tool " + path + " > /dev/null 2>&1", &rc);
    EXPECT_EQ(rc, 0) << j;
    std::remove(path.c_str());
  }
}

TEST_F(AdminE2eTest, VersionAndIndex) {
  HttpReply r = Http(admin_, "GET", "/version");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"version\":\"" + std::string(Version()) + "\",\"build_type\":\"" +
                        std::string(BuildType()) + "\",\"commit\":\"" + std::string(BuildCommit()) +
                        "\"}\n");
  EXPECT_FALSE(Version().empty());
  r = Http(admin_, "GET", "/");
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(r.body.find("/cmds/profile/cpu"), std::string::npos);
}

TEST_F(AdminE2eTest, HealthSaysServingWhileTheServerRuns) {
  HttpReply r = Http(admin_, "GET", "/health");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "SERVING\n");
}

TEST_F(AdminE2eTest, LogLevelGetPutAndBadLevel) {
  log::Level saved = log::GetLevel();
  HttpReply r = Http(admin_, "GET", "/cmds/loglevel");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{\"level\":\"warn\"}\n");

  r = Http(admin_, "PUT", "/cmds/loglevel", R"({"level": "error"})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.body, "{\"level\":\"error\",\"previous\":\"warn\"}\n");
  EXPECT_EQ(log::GetLevel(), log::Level::kError);
  EXPECT_EQ(Http(admin_, "GET", "/cmds/loglevel").body, "{\"level\":\"error\"}\n");

  r = Http(admin_, "PUT", "/cmds/loglevel", "fatal\n");  // plain form
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(log::GetLevel(), log::Level::kFatal);

  for (const char* bad : {"loud", R"({"level":"loud"})", R"({"lvl":"info"})", "", "{}"}) {
    r = Http(admin_, "PUT", "/cmds/loglevel", bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_TRUE(r.body.starts_with("{\"error\":")) << r.body;
    EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos);
  }
  EXPECT_EQ(log::GetLevel(), log::Level::kFatal);
  EXPECT_EQ(Http(admin_, "POST", "/cmds/loglevel", "info").status, 405);
  log::SetLevel(saved);
}

// The profile's bytes: gperftools' binary CPU profile starts with five native words
// {0, 3 (header words), 0 (version), sampling period in us, 0}.
void ExpectCpuProfile(const std::string& bytes) {
  ASSERT_GE(bytes.size(), 5 * sizeof(uintptr_t));
  uintptr_t w[5];
  std::memcpy(w, bytes.data(), sizeof(w));
  EXPECT_EQ(w[0], 0u);
  EXPECT_EQ(w[1], 3u);
  EXPECT_EQ(w[2], 0u);
  EXPECT_GT(w[3], 0u);
  EXPECT_EQ(w[4], 0u);
}

// The profiler writes into $TMPDIR, which SetUpTestSuite points at a directory of this test's
// own: a profile file there means a profile has begun (its slot is taken; a second request
// gets 409). Asking gperftools itself (ProfilerGetCurrentState) would read its state under a
// lock TSan cannot see.
bool ProfileFileExists() {
  for (const auto& e : std::filesystem::directory_iterator(std::getenv("TMPDIR"))) {
    if (e.path().filename().string().starts_with("trpc_cpu_profile_")) return true;
  }
  return false;
}

TEST_F(AdminE2eTest, CpuProfile) {
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=0").status, 400);
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=61").status, 400);
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1x").status, 400);
  if (!kHaveProfiler) {
    EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1").status, 501);
    GTEST_SKIP() << "built without gperftools' profiler";
  }

  auto profile = std::async(std::launch::async,
                            [this] { return Http(admin_, "GET", "/cmds/profile/cpu?seconds=1"); });
  ASSERT_TRUE(WaitFor(ProfileFileExists));
  // While it runs: another profile is refused, and the admin thread keeps answering.
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1").status, 409);
  EXPECT_EQ(Http(admin_, "GET", "/version").status, 200);
  // Some work for the profiler to see.
  auto proxy = NewProxy();
  int64_t until = MonotonicMillis() + 700;
  while (MonotonicMillis() < until) ASSERT_TRUE(Call(*proxy, "hi").OK());

  HttpReply r = profile.get();
  ASSERT_EQ(r.status, 200) << r.head << r.body;
  EXPECT_NE(r.head.find("Content-Type: application/octet-stream"), std::string::npos);
  ExpectCpuProfile(r.body);
  // The next profile may start once the first has answered.
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1").status, 200);
  // google-pprof reads the first one.
  if (!HaveTool("google-pprof"))
    TRPC_SKIP_WITHOUT_PEER("google-pprof not installed (Debian: google-perftools)");
  std::string path = TempFile("admin_e2e_cpu.prof");
  std::ofstream(path, std::ios::binary) << r.body;
  int rc = 0;
  std::string exe = "/proc/" + std::to_string(::getpid()) + "/exe";
  std::string out = RunCommand("google-pprof --text " + exe + " " + path + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  std::remove(path.c_str());
}

// A server stopping while a long profile runs does not wait for it: the profile ends early
// and its caller gets 503.
TEST_F(AdminE2eTest, StopCutsAProfileShort) {
  if (!kHaveProfiler) GTEST_SKIP() << "built without gperftools' profiler";
  auto profile = std::async(std::launch::async,
                            [this] { return Http(admin_, "GET", "/cmds/profile/cpu?seconds=60"); });
  ASSERT_TRUE(WaitFor(ProfileFileExists));
  int64_t start = MonotonicMillis();
  server_->Stop();
  EXPECT_LT(MonotonicMillis() - start, 5000);
  EXPECT_FALSE(ProfileFileExists());  // stopped, read and removed
  HttpReply r = profile.get();
  EXPECT_EQ(r.status, 503) << r.head << r.body;
}

// The admin service has a thread of its own: it answers while every worker of the services is
// blocked in a handler (the thread itself, not only a fiber).
TEST_F(AdminE2eTest, AnswersWhileEveryWorkerIsBlocked) {
  // One connection per worker (consecutive connections land on different workers), all
  // connected before any worker blocks: the service accepts on its first worker.
  std::vector<std::shared_ptr<ServiceProxy>> proxies;
  for (int i = 0; i < kServerWorkers; ++i) {
    proxies.push_back(NewProxy());
    ASSERT_TRUE(Call(*proxies.back(), "hi").OK());
  }
  std::vector<std::future<Status>> calls;
  for (auto& proxy : proxies) {
    calls.push_back(
        std::async(std::launch::async, [this, proxy] { return Call(*proxy, "block"); }));
  }
  ASSERT_TRUE(WaitFor([] { return g_blocked.load() == kServerWorkers; }))
      << g_blocked.load() << " of " << kServerWorkers << " workers blocked";

  HttpReply r = Http(admin_, "GET", "/metrics", {}, /*timeout_ms=*/3000);
  ASSERT_EQ(r.status, 200) << "the admin did not answer while the workers were blocked";
  std::string service = std::string("service=\"") + kGreeterName + "\"";
  EXPECT_EQ(Sample(r.body, "trpc_server_connections{" + service + "}"), kServerWorkers);
  if (FiberModel()) {
    EXPECT_GE(Sample(r.body, "trpc_fibers_alive{threadmodel=\"admin_server\"}"), kServerWorkers)
        << r.body;
  }
  EXPECT_EQ(Http(admin_, "GET", "/cmds/stats", {}, 3000).status, 200);

  g_release.store(true);
  g_release.notify_all();
  for (auto& c : calls) EXPECT_TRUE(c.get().OK());
  std::string text = Metrics();
  EXPECT_EQ(Sample(text, "trpc_server_requests_total{" + MethodLabels(kSayHello) + "}"),
            2 * kServerWorkers);
}

// trpc_fiber_steals_total and /cmds/stats's "steals" count a fiber that only a steal could run:
// a handler queues one on its own worker and blocks that worker's thread until it has run.
// Then a burst of calls on two connections; the counters never go backwards.
TEST_F(AdminE2eTest, FiberStealsAreCounted) {
  if (!FiberModel()) GTEST_SKIP() << "fiber model only";
  const std::string steals_series = "trpc_fiber_steals_total{threadmodel=\"admin_server\"}";
  const std::string remote_series = "trpc_fiber_remote_steals_total{threadmodel=\"admin_server\"}";
  std::string text = Metrics();
  int64_t before = Counter(text, steals_series);
  int64_t remote_before = Counter(text, remote_series);
  ASSERT_GE(before, 0) << text;
  ASSERT_GE(remote_before, 0) << text;

  auto proxy = NewProxy();
  Status st = Call(*proxy, "steal");
  ASSERT_TRUE(st.OK()) << st.ToString();
  text = Metrics();
  int64_t after = Counter(text, steals_series);
  EXPECT_GT(after, before) << text;
  EXPECT_GE(Counter(text, remote_series), remote_before) << text;  // one group: 0 both times
  EXPECT_LE(Counter(text, remote_series), after) << text;

  auto other = NewProxy();
  std::vector<std::future<bool>> burst;
  for (auto& p : {proxy, other}) {
    burst.push_back(std::async(std::launch::async, [this, p] {
      for (int i = 0; i < 200; ++i) {
        if (!Call(*p, "hi").OK()) return false;
      }
      return true;
    }));
  }
  for (auto& b : burst) EXPECT_TRUE(b.get());

  HttpReply r = Http(admin_, "GET", "/cmds/stats");
  ASSERT_EQ(r.status, 200);
  size_t server = ThreadModelEntry(r.body, "admin_server");
  ASSERT_NE(server, std::string::npos) << r.body;
  int64_t json_steals = JsonCount(r.body, server, "steals");
  int64_t json_remote = JsonCount(r.body, server, "remote_steals");
  EXPECT_GE(json_steals, after) << r.body;
  EXPECT_GE(json_remote, 0) << r.body;
  EXPECT_LE(json_remote, json_steals) << r.body;
  EXPECT_GE(Counter(Metrics(), steals_series), json_steals);
}

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
  std::string yaml = std::string(FiberModel() ? kFiberModels : kMergeModels) + kServerYaml;
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

// An admin_ip beyond loopback is served, with a warning: it has no authentication.
TEST_F(AdminE2eTest, AnAdminIpBeyondLoopbackIsWarnedAbout) {
  ServerConfig sc = config_->server;
  for (const char* ip : {"0.0.0.0", "::", "192.0.2.1"}) {
    Server other(sc);
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(admin::EnableAdmin(&other, ip, 0));
    const std::string logged = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(logged.find(std::string("admin service on ") + ip + ": beyond loopback"),
              std::string::npos)
        << ip << ": " << logged;
    EXPECT_NE(logged.find("no authentication"), std::string::npos) << logged;
  }
  for (const char* ip : {"127.0.0.1", "127.1.2.3", "::1"}) {
    Server other(sc);
    ::testing::internal::CaptureStderr();
    ASSERT_TRUE(admin::EnableAdmin(&other, ip, 0));
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << ip;
  }
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
