// The process-wide bound on parked work (server.max_parked_requests), end to end in both
// thread models: peers that pipeline far more slow calls than the process can park (fiber:
// handlers asleep in their fibers; merge: replies deferred with SetResponse(false)) get the
// excess refused at once with ret 22, the server never parks more than the bound, keeps
// answering others, and lives. With the default settings the bound comes from
// vm.max_map_count (fiber stacks), which without it a few hundred connections exhaust.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "test/fault/fault_test_util.h"
#include "test/fault/raw_trpc_client.h"
#include "trpc/base/clock.h"

namespace trpc::test::fault {
namespace {

class ParkedWorkTest : public FaultTest {};

// What "within 10x of idle" allows at least: an idle probe on loopback answers in tens of
// microseconds, far below the scheduling noise of a 2-core CI machine running two tests at once.
// This is a check that the server is not stalled behind the parked calls (a stall lasts their
// 2-4 s), not a latency target: those are benchmarks'. With 50 probes the P99 is the second
// slowest, so the floor must hold a probe or two that a loaded machine did not run for a while.
constexpr double kProbeFloorMs = 500.0;

// A call that parks for `us`: asleep in its fiber (fiber), or replied later (merge, where a
// sleep would block the worker instead).
std::string ParkFor(int64_t us) {
  return (ModelUnderTest() == "fiber" ? "sleep:" : "defer:") + std::to_string(us);
}

struct Outcome {
  uint64_t ok = 0;
  uint64_t refused = 0;  // ret 22, max_parked_requests
  uint64_t other = 0;
  uint64_t missing = 0;  // no answer in time, or the connection failed
  int closed = 0;        // connections that closed (or failed) before all their answers came
};

// `conns` connections, each of which writes `per_conn` calls of `msg` in one go, reading
// nothing yet.
std::vector<std::unique_ptr<RawTrpcClient>> Offer(const std::string& addr, int conns,
                                                  uint32_t per_conn, const std::string& msg) {
  std::vector<std::unique_ptr<RawTrpcClient>> clients;
  std::string batch;
  for (int c = 0; c < conns; ++c) {
    clients.push_back(std::make_unique<RawTrpcClient>(addr));
    RawTrpcClient& raw = *clients.back();
    if (!raw.connected()) {
      ADD_FAILURE() << "connection " << c << " failed";
      continue;
    }
    if (batch.empty()) {
      for (uint32_t id = 1; id <= per_conn; ++id) batch += raw.Encode(id, msg, 60'000);
    }
    if (!raw.Write(batch)) ADD_FAILURE() << "write on connection " << c << " failed";
  }
  return clients;
}

// Reads every answer to what Offer() sent (within `read_ms`).
Outcome Collect(const std::vector<std::unique_ptr<RawTrpcClient>>& clients, uint32_t per_conn,
                int read_ms) {
  Outcome out;
  int64_t until = MonotonicNanos() + int64_t{read_ms} * kNanosPerMilli;
  for (auto& raw : clients) {
    std::map<uint32_t, RawReply> replies;
    int left = static_cast<int>(std::max<int64_t>(0, (until - MonotonicNanos()) / kNanosPerMilli));
    if (!raw->connected() || !raw->Read(per_conn, left, &replies)) ++out.closed;
    out.missing += per_conn - replies.size();
    for (const auto& [id, r] : replies) {
      if (r.ret == 0) {
        ++out.ok;
      } else if (r.ret == kServerOverloadErr &&
                 r.msg.find("max_parked_requests") != std::string::npos) {
        ++out.refused;
      } else {
        ++out.other;
      }
    }
  }
  return out;
}

// P99 (ms) of `n` calls of `msg`, one after another, each on `proxy`, whatever they answer
// (after a few unmeasured ones); adds the calls refused for the bound to `*refused`.
double ProbeP99Ms(GreeterServiceProxy* proxy, const std::string& msg, int n,
                  uint64_t* refused = nullptr) {
  for (int i = 0; i < 5; ++i) {
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    if (!proxy->SayHello(MakeClientContext(), req, &rsp).OK() && refused) ++*refused;
  }
  std::vector<double> ms;
  for (int i = 0; i < n; ++i) {
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    auto ctx = MakeClientContext();
    ctx->SetTimeout(5000);
    int64_t start = MonotonicNanos();
    Status s = proxy->SayHello(ctx, req, &rsp);
    ms.push_back(static_cast<double>(MonotonicNanos() - start) / 1e6);
    EXPECT_TRUE(s.OK() || s.GetFrameworkRetCode() == kServerOverloadErr) << s.ToString();
    if (!s.OK() && refused != nullptr) ++*refused;
  }
  std::sort(ms.begin(), ms.end());
  std::printf("probe ms: p50 %.3f p90 %.3f p99 %.3f max %.3f\n", ms[ms.size() / 2],
              ms[ms.size() * 9 / 10], ms[ms.size() * 99 / 100], ms.back());
  return ms[static_cast<size_t>(0.99 * static_cast<double>(ms.size() - 1))];
}

int64_t MaxParked(GreeterServiceProxy* proxy) {
  HelloRequest req;
  req.set_msg("maxparked");
  HelloReply rsp;
  Status s = proxy->SayHello(MakeClientContext(), req, &rsp);
  EXPECT_TRUE(s.OK()) << s.ToString();
  return s.OK() ? std::stoll(rsp.msg()) : -1;
}

TEST_F(ParkedWorkTest, AtMostTheBoundParksTheRestIsRefusedAtOnce) {
  constexpr uint32_t kBound = 500;
  constexpr int kConns = 200;
  constexpr uint32_t kPerConn = 1000;  // 200,000 parked calls offered
  ChildServer server;
  FaultServerOptions o;
  o.server_yaml = fmt::format("  max_parked_requests: {}\n", kBound);
  o.service_yaml = "      timeout: 60000\n";
  std::string addr = StartFaultServer(&server, o);
  ASSERT_FALSE(addr.empty());
  auto probe = Proxy(addr);
  double idle_p99 = ProbeP99Ms(probe.get(), "ping", 50);

  // The calls park for 3 s: the server reads all of them meanwhile.
  int64_t start = MonotonicNanos();
  Outcome out = Collect(Offer(addr, kConns, kPerConn, ParkFor(3'000'000)), kPerConn, 60'000);
  double offer_s = static_cast<double>(MonotonicNanos() - start) / 1e9;
  EXPECT_EQ(out.missing, 0u);
  EXPECT_EQ(out.other, 0u);
  EXPECT_EQ(out.ok + out.refused, uint64_t{kConns} * kPerConn);
  EXPECT_GT(out.refused, 0u);
  EXPECT_GT(out.ok, 0u);
  int64_t max_parked = MaxParked(probe.get());
  EXPECT_LE(max_parked, int64_t{kBound});
  // Parking did fill up to (nearly) the bound: permits threads keep in reserve are few.
  EXPECT_GT(max_parked, int64_t{kBound} / 2);
  std::printf(
      "offered %d x %u parked calls: %lu answered, %lu refused in %.1f s; at most %ld "
      "parked (bound %u)\n",
      kConns, kPerConn, static_cast<unsigned long>(out.ok), static_cast<unsigned long>(out.refused),
      offer_s, static_cast<long>(max_parked), kBound);

  // While the bound is reached, others are still answered at once (refused or not).
  std::vector<std::unique_ptr<RawTrpcClient>> holders;
  for (int c = 0; c < 2; ++c) {
    holders.push_back(std::make_unique<RawTrpcClient>(addr));
    std::string batch;
    for (uint32_t id = 1; id <= kBound; ++id) {
      batch += holders.back()->Encode(id, ParkFor(2'000'000));
    }
    ASSERT_TRUE(holders.back()->Write(batch));
  }
  // Once they are read (the refused ones answered), the probe meets the bound.
  std::map<uint32_t, RawReply> first;
  for (auto& h : holders) h->Read(kBound / 2, 10'000, &first);
  double busy_p99 = ProbeP99Ms(probe.get(), "ping", 50);
  std::printf("probe P99: idle %.2f ms, at the bound %.2f ms\n", idle_p99, busy_p99);
  EXPECT_LT(busy_p99, std::max(10 * idle_p99, kProbeFloorMs));
}

TEST_F(ParkedWorkTest, DefaultSettingsSurviveTwoHundredConnectionsOfParkedCalls) {
  // The case: 200 connections x 1,024 calls that park, against the defaults (before
  // the bound, the fiber server aborted out of memory mappings near 30,000 fibers) with
  // max_buffered_bytes at 64 MiB: the process lives, its memory stays within the buffers' bound
  // plus the parked calls' stacks, others are answered promptly, and the refusals are counted.
  constexpr int kConns = 200;
  constexpr uint32_t kPerConn = 1024;
  ChildServer server;
  FaultServerOptions o;
  o.server_yaml = "  max_buffered_bytes: 67108864\n";
  o.service_yaml = "      timeout: 60000\n";
  std::string admin;
  std::string addr = StartFaultServer(&server, o, &admin);
  ASSERT_FALSE(addr.empty());
  ASSERT_FALSE(admin.empty());
  auto probe = Proxy(addr);
  double idle_p99 = ProbeP99Ms(probe.get(), "ping", 200);
  const std::string greeter = "{service=\"trpc.test.helloworld.Greeter\"";
  double bound = MetricValue(HttpGet(admin, "/metrics"), "trpc_server_parked_requests_limit");
  ASSERT_GT(bound, 0);

  auto clients = Offer(addr, kConns, kPerConn, ParkFor(4'000'000));
  // While they park: wait until every call is admitted or refused, then probe.
  std::string refused_sample = "trpc_server_rejected_total" + greeter + ",reason=\"parked_limit\"}";
  int64_t until = MonotonicNanos() + 30 * kNanosPerSecond;
  while (MonotonicNanos() < until) {
    std::string m = HttpGet(admin, "/metrics");
    double decided = MetricValue(m, refused_sample) + MetricValue(m, "trpc_server_parked_requests");
    if (decided >= double{kConns} * kPerConn) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The refusals counted are still being written out for a moment: let that pass.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  uint64_t probes_refused = 0;
  double busy_p99 = ProbeP99Ms(probe.get(), "ping", 200, &probes_refused);
  uint64_t rss = RssBytes(server.pid());
  Outcome out = Collect(clients, kPerConn, 60'000);
  std::string metrics = HttpGet(admin, "/metrics");
  std::printf(
      "defaults: bound %.0f; %lu answered, %lu refused, %lu missing (%d connections closed); "
      "probe P99 idle %.2f ms, parked %.2f ms; RSS %.1f MiB while parked; %.0f connections "
      "closed over the buffer limit\n",
      bound, static_cast<unsigned long>(out.ok), static_cast<unsigned long>(out.refused),
      static_cast<unsigned long>(out.missing), out.closed, idle_p99, busy_p99,
      static_cast<double>(rss) / (1 << 20),
      MetricValue(metrics, "trpc_server_connections_closed_over_limit_total"));
  EXPECT_EQ(out.missing, 0u);
  EXPECT_EQ(out.other, 0u);
  EXPECT_EQ(out.ok + out.refused, uint64_t{kConns} * kPerConn);
  EXPECT_GT(out.refused, 0u);
  // (Not out.ok <= bound: on a slow build the first calls end before the last are read, and
  // their permits admit more.)
  EXPECT_LE(static_cast<double>(MaxParked(probe.get())), bound);
  EXPECT_EQ(MetricValue(metrics, refused_sample),
            static_cast<double>(out.refused + probes_refused));
#ifndef TRPC_FAULT_SANITIZED
  EXPECT_LT(busy_p99, std::max(10 * idle_p99, kProbeFloorMs));
#else
  // Under ASan a fiber server with ~27,000 parked fibers answers in ~6 ms (not seen in Release):
  // only check that it answers promptly at all.
  EXPECT_LT(busy_p99, 1000.0);
#endif
#ifndef TRPC_FAULT_SANITIZED  // ASan's shadow memory and quarantine are not the server's
  // 64 MiB of buffers + the parked calls' stacks (fiber; 128 KiB and a guard page each) + 64 MiB.
  double stacks = ModelUnderTest() == "fiber" ? bound * (132 << 10) : 0;
  EXPECT_LT(static_cast<double>(rss), (64 << 20) + stacks + (64 << 20));
#endif
}

}  // namespace
}  // namespace trpc::test::fault
