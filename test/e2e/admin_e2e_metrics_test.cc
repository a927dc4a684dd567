// End-to-end tests of the admin service (admin_e2e_fixture.h): /metrics numbers and format
// (promtool when installed), /cmds/stats, /version, /health and /cmds/loglevel.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "test/e2e/admin_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

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

// The client's families and gRPC's metric names (server.admin_grpc_metrics: true here), counted
// by both ends of gRPC calls between our own client and server.
TEST_F(AdminE2eTest, ClientMetricsAndGrpcNames) {
  auto trpc_proxy = NewProxy();
  auto grpc_proxy = NewGrpcProxy();
  const std::string text0 = Metrics();
  const std::string callee =
      std::string("callee=\"") + kGreeterName + "\",method=\"" + kSayHello + "\"";
  const double calls0 = std::max(0.0, Sample(text0, "trpc_client_calls_total{" + callee + "}"));
  ASSERT_TRUE(Call(*trpc_proxy, "hi").OK());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(Call(*grpc_proxy, "hi").OK());
  EXPECT_EQ(Call(*grpc_proxy, "fail").GetFuncRetCode(), 7);
  std::string text = Metrics();
  // The trpc callee: its calls and a connection of this test's proxy at least.
  EXPECT_EQ(Sample(text, "trpc_client_calls_total{" + callee + "}") - calls0, 1) << text;
  EXPECT_GE(Sample(text, std::string("trpc_client_connections{callee=\"") + kGreeterName + "\"}"),
            1);
  EXPECT_EQ(Sample(text, "trpc_client_calls_in_flight{" + callee + "}"), 0);
  // gRPC's names: this server's gRPC service (a fresh server per test), and the gRPC callee.
  const std::string method = "grpc_method=\"trpc.test.helloworld.Greeter/SayHello\"";
  EXPECT_EQ(Sample(text, "grpc_server_call_started_total{" + method + "}"), 3) << text;
  EXPECT_EQ(
      Sample(text, "grpc_server_call_duration_seconds_count{" + method + ",grpc_status=\"OK\"}"), 2)
      << text;
  // The handler's own code 7 goes out as grpc-status 7.
  EXPECT_EQ(Sample(text, "grpc_server_call_duration_seconds_count{" + method +
                             ",grpc_status=\"PERMISSION_DENIED\"}"),
            1)
      << text;
  EXPECT_EQ(Sample(text, "grpc_server_call_duration_seconds_bucket{" + method +
                             ",grpc_status=\"OK\",le=\"+Inf\"}"),
            2);
  const std::string target = "grpc_target=\"dns:///" + grpc_greeter_.ToString() + "\"";
  const std::string client = method + "," + target;
  EXPECT_GE(Sample(text, "grpc_client_attempt_started_total{" + client + "}"), 3) << text;
  EXPECT_GE(
      Sample(text, "grpc_client_call_duration_seconds_count{" + client + ",grpc_status=\"OK\"}"), 2)
      << text;
  EXPECT_GE(Sample(text, "grpc_client_attempt_duration_seconds_count{" + client +
                             ",grpc_status=\"PERMISSION_DENIED\"}"),
            1)
      << text;
  // The trpc service and callee have none of gRPC's names.
  EXPECT_EQ(
      text.find("grpc_method=\"trpc.test.helloworld.Greeter/SayHello\",grpc_target=\"dns:///" +
                greeter_.ToString()),
      std::string::npos);
}

TEST_F(AdminE2eTest, MetricsPassPromtool) {
  auto proxy = NewProxy();
  ASSERT_TRUE(Call(*proxy, "hi").OK());
  EXPECT_EQ(Call(*proxy, "fail").GetFuncRetCode(), 7);
  // gRPC calls too: the client's families and gRPC's names are in the text promtool checks.
  auto grpc_proxy = NewGrpcProxy();
  ASSERT_TRUE(Call(*grpc_proxy, "hi").OK());
  EXPECT_EQ(Call(*grpc_proxy, "fail").GetFuncRetCode(), 7);
  HttpReply r = Http(admin_, "GET", "/nope");  // the admin's "unknown" method gets a count
  EXPECT_EQ(r.status, 404);
  std::string text = Metrics();
  EXPECT_NE(text.find("\ntrpc_client_calls_total{"), std::string::npos) << text;
  EXPECT_NE(text.find("\ngrpc_server_call_duration_seconds_bucket{"), std::string::npos) << text;
  EXPECT_NE(text.find("\ngrpc_client_attempt_duration_seconds_bucket{"), std::string::npos);
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

}  // namespace
}  // namespace trpc::test::helloworld
