#include "trpc/admin/detail/prometheus_text.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <vector>

#include "trpc/admin/detail/stats_json.h"

namespace trpc::admin {
namespace {

ServerMetrics Sample() {
  ServerMetrics m;
  m.app = "app";
  m.server = "srv";
  ServiceMetrics& s = m.services.emplace_back();
  s.name = "trpc.test.Svc";
  s.protocol = "trpc";
  s.connections = 2;
  s.connections_accepted = 3;
  s.connections_refused = 1;
  s.accept_backoffs = 4;
  s.rejected_overload = 6;
  s.rejected_parked_limit = 11;
  s.rejected_deadline_passed = 7;
  s.rejected_deadline_unmeetable = 8;
  s.concurrency_limit = 9;
  s.concurrency_in_flight = 10;
  s.bytes_in = 100;
  s.bytes_out = 200;
  MethodMetrics& meth = s.methods.emplace_back();
  meth.name = "/p.S/M";
  meth.requests = 3;
  meth.latency_buckets[0] = 1;
  meth.latency_buckets[3] = 2;  // le="0.0005"
  meth.latency_sum_ns = 1'500'000;
  meth.errors = {{"func", 1}};
  s.methods.emplace_back().name = "GET /a \"b\"";
  m.thread_models.push_back({"w", "fiber", 2, true, 5, 1, 9, 4, 12, 14, 15, 2'500'000'000, 16, 17});
  m.buffers = {33554432, 1234, 7, 3, 2};
  m.parked = {26000, 13};
  return m;
}

std::vector<ClientServiceMetrics> ClientSample() {
  std::vector<ClientServiceMetrics> clients(1);
  ClientServiceMetrics& c = clients[0];
  c.name = "trpc.test.Callee";
  c.protocol = "grpc";
  c.connections = 4;
  c.ejections = 2;
  ClientMethodMetrics& m = c.methods.emplace_back();
  m.name = "/p.C/M";
  m.calls = 5;
  m.in_flight = 1;
  m.errors = {{"101", 2}};
  m.latency_buckets[1] = 4;  // le="0.0001"
  m.latency_buckets[kLatencyBuckets - 1] = 1;
  m.latency_sum_ns = 20'000'400'000;
  m.attempts = 8;
  m.retries = 2;
  m.hedges = 1;
  m.budget_refusals = 3;
  m.throttle_refusals = 6;
  return clients;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos;
}

TEST(PrometheusTextTest, FamiliesAndSamples) {
  ProcessMetrics p{1.5, 4096};
  std::string t = PrometheusText(Sample(), &p);
  std::string m = R"(service="trpc.test.Svc",method="/p.S/M")";
  EXPECT_TRUE(Has(t, "# TYPE trpc_server_requests_total counter")) << t;
  EXPECT_TRUE(Has(t, "trpc_server_requests_total{" + m + "} 3")) << t;
  EXPECT_TRUE(Has(t, "trpc_server_errors_total{" + m + R"(,code="func"} 1)")) << t;
  EXPECT_TRUE(Has(t, "# TYPE trpc_server_request_duration_seconds histogram")) << t;
  EXPECT_TRUE(Has(t, "trpc_server_request_duration_seconds_bucket{" + m + R"(,le="0.00005"} 1)"));
  EXPECT_TRUE(Has(t, "trpc_server_request_duration_seconds_bucket{" + m + R"(,le="0.00025"} 1)"));
  EXPECT_TRUE(Has(t, "trpc_server_request_duration_seconds_bucket{" + m + R"(,le="0.0005"} 3)"));
  EXPECT_TRUE(Has(t, "trpc_server_request_duration_seconds_bucket{" + m + R"(,le="+Inf"} 3)"));
  EXPECT_TRUE(Has(t, "trpc_server_request_duration_seconds_sum{" + m + "} 0.0015")) << t;
  EXPECT_TRUE(Has(t, "trpc_server_request_duration_seconds_count{" + m + "} 3"));
  std::string escaped = R"(service="trpc.test.Svc",method="GET /a \"b\"")";
  EXPECT_TRUE(Has(t, "trpc_server_requests_total{" + escaped + "} 0")) << t;
  EXPECT_TRUE(Has(t, R"(trpc_server_connections{service="trpc.test.Svc"} 2)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_connections_refused_total{service="trpc.test.Svc"} 1)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_accept_backoffs_total{service="trpc.test.Svc"} 4)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_rejected_total{service="trpc.test.Svc",reason="overload"} 6)"));
  EXPECT_TRUE(
      Has(t, R"(trpc_server_rejected_total{service="trpc.test.Svc",reason="parked_limit"} 11)"));
  EXPECT_TRUE(
      Has(t, R"(trpc_server_rejected_total{service="trpc.test.Svc",reason="deadline_passed"} 7)"));
  EXPECT_TRUE(Has(
      t, R"(trpc_server_rejected_total{service="trpc.test.Svc",reason="deadline_unmeetable"} 8)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_concurrency_limit{service="trpc.test.Svc"} 9)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_concurrency_in_flight{service="trpc.test.Svc"} 10)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_received_bytes_total{service="trpc.test.Svc"} 100)"));
  EXPECT_TRUE(Has(t, R"(trpc_server_sent_bytes_total{service="trpc.test.Svc"} 200)"));
  EXPECT_TRUE(Has(t, R"(trpc_threadmodel_workers{threadmodel="w",type="fiber"} 2)"));
  EXPECT_TRUE(Has(t, R"(trpc_fibers_alive{threadmodel="w"} 5)"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_run_queue_depth{threadmodel="w"} 1)"));
  EXPECT_TRUE(Has(t, "# TYPE trpc_fiber_steals_total counter"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_steals_total{threadmodel="w"} 9)"));
  EXPECT_TRUE(Has(t, "# TYPE trpc_fiber_remote_steals_total counter"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_remote_steals_total{threadmodel="w"} 4)"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_stack_waits_total{threadmodel="w"} 12)"));
  EXPECT_TRUE(Has(t, "# TYPE trpc_fiber_parks_total counter"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_parks_total{threadmodel="w"} 14)"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_wakeups_total{threadmodel="w"} 15)"));
  EXPECT_TRUE(Has(t, R"(trpc_fiber_spin_seconds_total{threadmodel="w"} 2.5)")) << t;
  EXPECT_TRUE(Has(t, R"(trpc_threadmodel_loop_wakeups_total{threadmodel="w"} 16)"));
  EXPECT_TRUE(Has(t, R"(trpc_threadmodel_cross_thread_replies_total{threadmodel="w"} 17)"));
  EXPECT_TRUE(Has(t, "trpc_server_parked_requests 13"));
  EXPECT_TRUE(Has(t, "trpc_server_parked_requests_limit 26000"));
  EXPECT_TRUE(Has(t, "process_cpu_seconds_total 1.5"));
  EXPECT_TRUE(Has(t, "process_resident_memory_bytes 4096"));
  EXPECT_TRUE(Has(t, "trpc_server_buffered_bytes 1234")) << t;
  EXPECT_TRUE(Has(t, "trpc_server_buffered_bytes_limit 33554432"));
  EXPECT_TRUE(Has(t, "# TYPE trpc_server_connections_paused_over_limit_total counter"));
  EXPECT_TRUE(Has(t, "trpc_server_connections_paused_over_limit_total 7"));
  EXPECT_TRUE(Has(t, "trpc_server_connections_closed_over_limit_total 3"));
  EXPECT_TRUE(Has(t, "trpc_server_memory_releases_total 2"));
  EXPECT_TRUE(t.starts_with("# HELP trpc_build_info "));
}

// Every sample follows its own family's HELP and TYPE lines, and each family comes once.
TEST(PrometheusTextTest, ClientFamilies) {
  std::string t = PrometheusText(Sample(), nullptr, ClientSample());
  std::string m = R"(callee="trpc.test.Callee",method="/p.C/M")";
  EXPECT_TRUE(Has(t, "# TYPE trpc_client_calls_total counter")) << t;
  EXPECT_TRUE(Has(t, "trpc_client_calls_total{" + m + "} 5")) << t;
  EXPECT_TRUE(Has(t, "trpc_client_errors_total{" + m + R"(,code="101"} 2)")) << t;
  EXPECT_TRUE(Has(t, "# TYPE trpc_client_call_duration_seconds histogram")) << t;
  EXPECT_TRUE(Has(t, "trpc_client_call_duration_seconds_bucket{" + m + R"(,le="0.00005"} 0)"));
  EXPECT_TRUE(Has(t, "trpc_client_call_duration_seconds_bucket{" + m + R"(,le="0.0001"} 4)"));
  EXPECT_TRUE(Has(t, "trpc_client_call_duration_seconds_bucket{" + m + R"(,le="10"} 4)"));
  EXPECT_TRUE(Has(t, "trpc_client_call_duration_seconds_bucket{" + m + R"(,le="+Inf"} 5)"));
  EXPECT_TRUE(Has(t, "trpc_client_call_duration_seconds_sum{" + m + "} 20.0004")) << t;
  EXPECT_TRUE(Has(t, "trpc_client_call_duration_seconds_count{" + m + "} 5"));
  EXPECT_TRUE(Has(t, "# TYPE trpc_client_calls_in_flight gauge"));
  EXPECT_TRUE(Has(t, "trpc_client_calls_in_flight{" + m + "} 1"));
  EXPECT_TRUE(Has(t, "trpc_client_attempts_total{" + m + "} 8"));
  EXPECT_TRUE(Has(t, "trpc_client_retries_total{" + m + "} 2"));
  EXPECT_TRUE(Has(t, "trpc_client_hedges_total{" + m + "} 1"));
  EXPECT_TRUE(Has(t, "trpc_client_retry_budget_refusals_total{" + m + "} 3"));
  EXPECT_TRUE(Has(t, "trpc_client_throttle_refusals_total{" + m + "} 6"));
  EXPECT_TRUE(Has(t, "# TYPE trpc_client_connections gauge"));
  EXPECT_TRUE(Has(t, R"(trpc_client_connections{callee="trpc.test.Callee"} 4)"));
  EXPECT_TRUE(Has(t, R"(trpc_client_ejections_total{callee="trpc.test.Callee"} 2)"));
  // Without callees the families are still declared (a dashboard finds them), with no samples.
  std::string none = PrometheusText(Sample(), nullptr);
  EXPECT_TRUE(Has(none, "# TYPE trpc_client_calls_total counter"));
  EXPECT_EQ(none.find("trpc_client_calls_total{"), std::string::npos);
}

// gRPC's OpenTelemetry names, for the gRPC service and callee only, by grpc-status.
TEST(PrometheusTextTest, GrpcNames) {
  ServerMetrics m = Sample();
  ServiceMetrics& g = m.services.emplace_back();
  g.name = "trpc.test.Grpc";
  g.protocol = "grpc";
  MethodMetrics& meth = g.methods.emplace_back();
  meth.name = "/p.G/M";
  meth.started = 4;
  LatencySnapshot ok;
  ok.buckets[0] = 2;
  ok.count = 2;
  ok.sum_ns = 30'000;
  LatencySnapshot deadline;
  deadline.buckets[kLatencyBuckets - 1] = 1;
  deadline.count = 1;
  deadline.sum_ns = 11'000'000'000;
  meth.by_wire_status = {{0, ok}, {4, deadline}};
  g.methods.emplace_back().name = "unknown";  // no calls: no histogram, started 0
  std::vector<ClientServiceMetrics> clients = ClientSample();
  clients[0].target = "dns:///127.0.0.1:50051";
  clients[0].methods[0].call_by_wire_status = {{14, ok}};
  clients[0].methods[0].attempt_by_wire_status = {{0, ok}, {14, ok}};
  ClientServiceMetrics& trpc_callee = clients.emplace_back();
  trpc_callee.name = "trpc.test.Plain";
  trpc_callee.protocol = "trpc";
  trpc_callee.methods.emplace_back().name = "/p.T/M";

  std::string t = PrometheusText(m, nullptr, clients, /*grpc_names=*/true);
  EXPECT_TRUE(Has(t, "# TYPE grpc_server_call_started_total counter")) << t;
  EXPECT_TRUE(Has(t, R"(grpc_server_call_started_total{grpc_method="p.G/M"} 4)")) << t;
  EXPECT_TRUE(Has(t, R"(grpc_server_call_started_total{grpc_method="other"} 0)")) << t;
  EXPECT_TRUE(Has(t, "# TYPE grpc_server_call_duration_seconds histogram"));
  EXPECT_TRUE(Has(t, R"(grpc_server_call_duration_seconds_bucket{grpc_method="p.G/M",)"
                     R"(grpc_status="OK",le="0.00005"} 2)"))
      << t;
  EXPECT_TRUE(Has(t, R"(grpc_server_call_duration_seconds_count{grpc_method="p.G/M",)"
                     R"(grpc_status="DEADLINE_EXCEEDED"} 1)"));
  EXPECT_TRUE(Has(t, R"(grpc_server_call_duration_seconds_sum{grpc_method="p.G/M",)"
                     R"(grpc_status="DEADLINE_EXCEEDED"} 11)"));
  const std::string c = R"(grpc_method="p.C/M",grpc_target="dns:///127.0.0.1:50051")";
  EXPECT_TRUE(Has(t, "grpc_client_attempt_started_total{" + c + "} 8")) << t;
  EXPECT_TRUE(
      Has(t, "grpc_client_call_duration_seconds_count{" + c + R"(,grpc_status="UNAVAILABLE"} 2)"));
  EXPECT_TRUE(
      Has(t, "grpc_client_attempt_duration_seconds_count{" + c + R"(,grpc_status="OK"} 2)"));
  // Neither the trpc service nor the trpc callee has gRPC's names.
  EXPECT_EQ(t.find(R"(grpc_method="p.S/M")"), std::string::npos);
  EXPECT_EQ(t.find(R"(grpc_method="p.T/M")"), std::string::npos);
  // Off by default.
  EXPECT_EQ(PrometheusText(m, nullptr, clients).find("grpc_"), std::string::npos);
}

TEST(PrometheusTextTest, SamplesAreGroupedUnderTheirFamily) {
  ProcessMetrics p{1.5, 4096};
  std::istringstream in(PrometheusText(Sample(), &p, ClientSample()));
  std::string line, family, type;
  std::set<std::string> seen;
  while (std::getline(in, line)) {
    ASSERT_FALSE(line.empty());
    if (line.starts_with("# HELP ")) {
      family = line.substr(7, line.find(' ', 7) - 7);
      EXPECT_TRUE(seen.insert(family).second) << "family twice: " << family;
      continue;
    }
    if (line.starts_with("# TYPE ")) {
      EXPECT_TRUE(line.starts_with("# TYPE " + family + " ")) << line;
      type = line.substr(line.rfind(' ') + 1);
      EXPECT_TRUE(type != "counter" || family.ends_with("_total")) << family;
      continue;
    }
    std::string name = line.substr(0, line.find_first_of("{ "));
    if (type == "histogram") {
      EXPECT_TRUE(name == family + "_bucket" || name == family + "_sum" ||
                  name == family + "_count")
          << line;
    } else {
      EXPECT_EQ(name, family) << line;
    }
  }
}

TEST(PrometheusTextTest, MergeModelHasNoFiberFamiliesAndProcessIsOptional) {
  ServerMetrics m = Sample();
  ThreadModelMetrics merge{"m", "merge", 4};
  merge.loop_wakeups = 3;
  merge.cross_thread_replies = 2;
  m.thread_models = {merge};
  std::string t = PrometheusText(m, nullptr);
  EXPECT_EQ(t.find("trpc_fiber"), std::string::npos);
  // Every model's reactors count what other threads hand them.
  EXPECT_TRUE(Has(t, R"(trpc_threadmodel_loop_wakeups_total{threadmodel="m"} 3)"));
  EXPECT_TRUE(Has(t, R"(trpc_threadmodel_cross_thread_replies_total{threadmodel="m"} 2)"));
  EXPECT_EQ(t.find("process_"), std::string::npos);
  EXPECT_TRUE(Has(t, R"(trpc_threadmodel_workers{threadmodel="m",type="merge"} 4)"));
}

TEST(PrometheusTextTest, LabelEscapesAndBucketBounds) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(BucketLe(0), "0.00005");
  EXPECT_EQ(BucketLe(4), "0.001");
  EXPECT_EQ(BucketLe(13), "1");
  EXPECT_EQ(BucketLe(14), "2.5");
  EXPECT_EQ(BucketLe(kLatencyBuckets - 1), "+Inf");
}

TEST(StatsJsonTest, SameNumbers) {
  ProcessMetrics p{1.5, 4096};
  ServerMetrics m = Sample();
  std::string j = StatsJson(m, &p);
  EXPECT_TRUE(j.starts_with(R"({"app":"app","server":"srv","services":[{"name":"trpc.test.Svc",)"
                            R"("protocol":"trpc","connections":2,"connections_accepted_total":3,)"
                            R"("connections_refused_total":1,"protocol_errors_total":0,)"
                            R"("received_bytes_total":100,"sent_bytes_total":200,)"
                            R"("accept_backoffs_total":4,"rejected_total":{"overload":6,)"
                            R"("parked_limit":11,"deadline_passed":7,"deadline_unmeetable":8},)"
                            R"("concurrency_limit":9,"concurrency_in_flight":10,"methods":[)"
                            R"({"method":"/p.S/M","requests_total":3,"errors_total":{"func":1},)"
                            R"("latency_seconds":{"sum":0.0015,"count":3,"buckets":{"0.00005":1,)"
                            R"("0.0001":1,"0.00025":1,"0.0005":3,)"))
      << j;
  EXPECT_NE(j.find(R"("+Inf":3}}},{"method":"GET /a \"b\"","requests_total":0,)"),
            std::string::npos)
      << j;
  EXPECT_TRUE(j.ends_with(
      R"(],"buffers":{"limit":)" + std::to_string(m.buffers.limit) + R"(,"buffered":)" +
      std::to_string(m.buffers.buffered) + R"(,"paused_total":)" +
      std::to_string(m.buffers.paused_total) + R"(,"closed_over_limit_total":)" +
      std::to_string(m.buffers.closed_over_limit) + R"(,"memory_releases_total":)" +
      std::to_string(m.buffers.memory_releases) +
      R"(},"parked":{"limit":26000,"taken":13},)"
      R"("threadmodels":[{"name":"w","type":"fiber","workers":2,)"
      R"("loop_wakeups":16,"cross_thread_replies":17,)"
      R"("fibers_alive":5,"run_queue_depth":1,"steals":9,"remote_steals":4,)"
      R"("stack_waits":12,"parks":14,"wakeups":15,"spin_ns":2500000000}],)"
      R"("clients":[],"process":{"cpu_seconds_total":1.5,"resident_memory_bytes":4096}})"
      "\n"))
      << j;
  EXPECT_EQ(JsonString("a\"\\\n\x01"), R"("a\"\\\n\u0001")");
}

TEST(StatsJsonTest, Clients) {
  std::string j = StatsJson(Sample(), nullptr, ClientSample());
  EXPECT_NE(j.find(R"("clients":[{"callee":"trpc.test.Callee","protocol":"grpc",)"
                   R"("connections":4,"ejections_total":2,"methods":[{"method":"/p.C/M",)"
                   R"("calls_total":5,"in_flight":1,"attempts_total":8,"retries_total":2,)"
                   R"("hedges_total":1,"retry_budget_refusals_total":3,)"
                   R"("throttle_refusals_total":6,"errors_total":{"101":2},)"
                   R"("latency_seconds":{"sum":20.0004,"count":5,"buckets":{"0.00005":0,)"
                   R"("0.0001":4,)"),
            std::string::npos)
      << j;
  EXPECT_TRUE(j.ends_with(R"("+Inf":5}}}]}]})"
                          "\n"))
      << j;
}

}  // namespace
}  // namespace trpc::admin
