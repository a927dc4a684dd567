#include "benchmark/trpc_bench/report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "fmt/format.h"

namespace trpc::bench {

namespace {

// Percentiles of the "spectrum": dense towards the tail, enough for a latency CDF plot.
constexpr double kSpectrum[] = {0,     10,   20,    30,   40,    50,    60,     70,     75,   80,
                                85,    90,   92.5,  95,   96,    97,    97.5,   98,     98.5, 99,
                                99.25, 99.5, 99.75, 99.9, 99.95, 99.99, 99.995, 99.999, 100};

// Above these the client is probably what limits the run: it says so in its report, so a figure
// it limited is not read as the server's.
constexpr double kCpuBusyShare = 0.9;        // of the cores its threads can use
constexpr double kMinAchievedShare = 0.99;   // of the target rate
constexpr int64_t kMaxLatenessP99Us = 1000;  // send lateness against the plan
// When more requests than this share waited for a free connection, lateness and a short rate
// come from the server (or from --connections x --inflight), not from the client.
constexpr double kSlotWaitShare = 0.01;

int64_t ValueAt(const Histogram& h, double p) {
  if (p <= 0) return h.Min();
  if (p >= 100) return h.Max();
  return h.ValueAtPercentile(p);
}

// Finite numbers only: JSON has no inf or nan.
double Finite(double v) { return std::isfinite(v) ? v : 0; }

// The share of the measured requests the hot connection carried.
double HotShare(const LoadStats& s) {
  return s.requests > 0 ? static_cast<double>(s.hot_requests) / s.requests : 0;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string LatencyJson(const Histogram& h) {
  return fmt::format(
      R"({{"min": {}, "avg": {:.1f}, "p50": {}, "p90": {}, "p99": {}, "p999": {}, "max": {}}})",
      h.Min(), Finite(h.Mean()), h.ValueAtPercentile(50), h.ValueAtPercentile(90),
      h.ValueAtPercentile(99), h.ValueAtPercentile(99.9), h.Max());
}

std::string SpectrumJson(const Histogram& h) {
  std::string out = "[";
  for (double p : kSpectrum) {
    if (out.size() > 1) out += ", ";
    out += fmt::format("[{}, {}]", p, ValueAt(h, p));
  }
  return out + "]";
}

std::string ErrorsText(const LoadStats& s) {
  if (s.errors.empty()) return "none";
  std::string out;
  for (const auto& [code, n] : s.errors) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{}{}: {}", code, code == "101" ? " (timeout)" : "", n);
  }
  return out;
}

void PrintRow(FILE* out, const char* name, const Histogram& h) {
  fmt::print(out, "{:<16} {:>10} {:>9.1f} {:>8} {:>8} {:>8} {:>8} {:>8}\n", name, h.Count(),
             h.Mean(), h.ValueAtPercentile(50), h.ValueAtPercentile(90), h.ValueAtPercentile(99),
             h.ValueAtPercentile(99.9), h.Max());
}

// The cores the client's threads can run on: fewer than the threads when pinned to fewer CPUs.
int UsableCores(const Options& o) {
  if (o.cpus.empty()) return o.threads;
  std::set<int> distinct(o.cpus.begin(), o.cpus.end());
  return std::min<int>(o.threads, static_cast<int>(distinct.size()));
}

}  // namespace

void CheckClientHealth(const Options& o, RunResult* r) {
  const LoadStats& s = r->stats;
  int cores = UsableCores(o);
  if (r->client_cpu_percent > kCpuBusyShare * 100 * cores) {
    r->bottleneck = true;
    r->warnings.push_back(fmt::format(
        "the client used {:.0f}% CPU with {} thread(s) on {} core(s): it is probably the "
        "bottleneck",
        r->client_cpu_percent, o.threads, cores));
  }
  if (o.stream && !s.open_failures.empty()) {
    uint64_t refused = 0;
    for (const auto& [code, n] : s.open_failures) refused += n;
    r->warnings.push_back(fmt::format(
        "{} stream opens failed (each tried again after 100 ms): does the server serve {} as a "
        "bidirectional streaming echo, with room for {} streams per connection?",
        refused, o.func, o.streams_per_connection));
  }
  if (o.stream && s.streams_dropped > 0) {
    r->warnings.push_back(fmt::format(
        "{} streams were dropped after a failure (their messages in flight are counted in errors) "
        "and opened again after 100 ms",
        s.streams_dropped));
  }
  if (!o.open_loop()) return;
  // Expired requests were never sent: the rate the client kept is that of the sent ones.
  bool short_rate = r->sent_qps() < kMinAchievedShare * o.qps;
  int64_t late_p99 = s.lateness.ValueAtPercentile(99);
  bool late = late_p99 > kMaxLatenessP99Us;
  if (!short_rate && !late) return;
  // A request is unsent only if it found no free connection until the window ended (the pacer
  // sends whatever is due while connections are free, however late it runs).
  uint64_t planned = s.requests + s.unsent;
  uint64_t waited = s.slot_waits + s.unsent;
  if (planned > 0 && waited > kSlotWaitShare * planned && o.stream) {
    r->warnings.push_back(fmt::format(
        "{:.1f}% of the messages found every stream with a message in flight and waited for "
        "one: the server (or --connections x --streams-per-connection = {}) limits the rate; "
        "sent {:.0f} of {:.0f} messages/s, {} planned messages expired before a stream was "
        "free, {} never sent, send lateness p99 {} us",
        100.0 * waited / planned, static_cast<int64_t>(o.connections) * o.streams_per_connection,
        r->sent_qps(), o.qps, s.expired, s.unsent, late_p99));
    return;
  }
  if (planned > 0 && waited > kSlotWaitShare * planned) {
    r->warnings.push_back(fmt::format(
        "{:.1f}% of the requests found every connection at --inflight and waited for one: the "
        "server (or --connections x --inflight = {}) limits the rate; sent {:.0f} of {:.0f} "
        "QPS, {} planned requests expired before a connection was free, {} never sent, send "
        "lateness p99 {} us",
        100.0 * waited / planned, static_cast<int64_t>(o.connections) * o.inflight, r->sent_qps(),
        o.qps, s.expired, s.unsent, late_p99));
    return;
  }
  r->bottleneck = true;
  if (short_rate) {
    r->warnings.push_back(fmt::format(
        "sent {:.0f} QPS is below {:.0f}% of the target {:.0f} ({} planned requests expired, {} "
        "never sent): the client could not keep up",
        r->sent_qps(), kMinAchievedShare * 100, o.qps, s.expired, s.unsent));
  }
  if (late) {
    r->warnings.push_back(fmt::format(
        "send lateness p99 {} us exceeds {} us while connections were free: the client could "
        "not keep to the plan",
        late_p99, kMaxLatenessP99Us));
  }
}

void PrintSettings(FILE* out, const Options& o) {
  if (o.http()) {
    fmt::print(out, "trpc_bench: target {}, protocol http, {} {}\n", o.target, o.http_method,
               o.http_path);
  } else {
    fmt::print(out, "trpc_bench: target {}, protocol {}, func {}\n", o.target, o.protocol, o.func);
  }
  if (o.open_loop()) {
    fmt::print(out, "  open loop at {} QPS (latency from the intended send time), ", o.qps);
  } else {
    fmt::print(out, "  closed loop, ");
  }
  std::string cpus = "not pinned";
  if (!o.cpus.empty()) {
    cpus = "CPUs";
    for (int c : o.cpus) cpus += fmt::format(" {}", c);
  }
  if (o.stream) {
    fmt::print(out,
               "{} connections x {} bidirectional streams, one message in flight on each, {} "
               "thread(s), {}\n",
               o.connections, o.streams_per_connection, o.threads, cpus);
  } else {
    fmt::print(out, "{} connections x {} in flight, {} thread(s), {}\n", o.connections, o.inflight,
               o.threads, cpus);
  }
  std::string limit = o.duration_s > 0 ? fmt::format("{} s", o.duration_s) : "";
  if (o.requests > 0) {
    limit += fmt::format("{}{} requests", limit.empty() ? "" : " or ", o.requests);
  }
  fmt::print(out, "  measuring {} after {} s of warm-up; payload {} B; timeout {} ms\n", limit,
             o.warmup_s, o.http() && !o.http_body() ? 0 : o.payload.size(), o.timeout_ms);
  if (o.tail_on()) {
    fmt::print(out, "  tail: {}% of requests tagged, the server delays each {} us ({})\n",
               o.tail_ratio * 100, o.tail_delay_us, o.tail_kind);
  }
  if (o.hot_on()) {
    fmt::print(out, "  hot connection: {}% of requests on one connection, {} in flight at most\n",
               o.hot_share * 100, o.hot_inflight);
  }
  std::fflush(out);
}

void PrintProgress(FILE* out, int second, const IntervalStats& s) {
  fmt::print(out, "[{:>4}s] qps {:>8}  p50 {:>7} us  p99 {:>7} us  errors {}\n", second, s.requests,
             s.latency.ValueAtPercentile(50), s.latency.ValueAtPercentile(99), s.errors);
  std::fflush(out);
}

void PrintReport(FILE* out, const Options& o, const RunResult& r) {
  const LoadStats& s = r.stats;
  if (o.stream) {
    // A request is one message's round trip on a stream.
    fmt::print(out, "\nwindow {:.2f} s: {} messages echoed or failed, {} ok, {:.1f} messages/s",
               r.window_s, s.requests, s.ok, r.qps());
  } else {
    fmt::print(out, "\nwindow {:.2f} s: {} requests, {} ok, {:.1f} QPS", r.window_s, s.requests,
               s.ok, r.qps());
  }
  if (o.open_loop()) fmt::print(out, " (target {})", o.qps);
  fmt::print(out, "\ngoodput {:.1f}/s: {} OK replies within the {} ms deadline", r.goodput(),
             s.good, o.timeout_ms);
  if (o.open_loop()) {
    fmt::print(out,
               " from the intended send time; {} OK but late, {} expired before they could be sent",
               s.late, s.expired);
  }
  fmt::print(out, "\n{:<16} {:>10} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8}\n", "latency (us)", "count",
             "avg", "p50", "p90", "p99", "p999", "max");
  PrintRow(out, o.open_loop() ? "corrected" : "latency", s.latency);
  if (o.open_loop()) PrintRow(out, "uncorrected", s.uncorrected);
  if (o.tail_on()) PrintRow(out, "tail (tagged)", s.tail);
  if (!s.errors.empty()) PrintRow(out, "errors", s.error_latency);
  fmt::print(out, "errors: {}\n", ErrorsText(s));
  if (o.stream) {
    std::string refused;
    for (const auto& [code, n] : s.open_failures) {
      refused += fmt::format("{}{}: {}", refused.empty() ? "" : ", ", code, n);
    }
    fmt::print(out,
               "streams: {} opened ({} asked for), {} dropped after a failure and opened "
               "again; opens refused: {}\n",
               s.streams_opened, o.connections * o.streams_per_connection, s.streams_dropped,
               refused.empty() ? "none" : refused);
  }
  if (o.hot_on()) {
    fmt::print(out,
               "hot connection: {} requests, {:.2f}% of all (asked {}%), {} in flight at most\n",
               s.hot_requests, 100 * HotShare(s), o.hot_share * 100, o.hot_inflight);
  }

  fmt::print(out, "self-check: client CPU {:.0f}% ({} thread(s))", r.client_cpu_percent, o.threads);
  if (o.open_loop()) {
    fmt::print(out,
               "; achieved {:.2f}% of the target rate; send lateness p50 {} us, p99 {} us, "
               "max {} us; {} waited for a connection, {} unsent",
               o.qps > 0 ? 100 * r.qps() / o.qps : 0, s.lateness.ValueAtPercentile(50),
               s.lateness.ValueAtPercentile(99), s.lateness.Max(), s.slot_waits, s.unsent);
  }
  fmt::print(out, "\n");
  if (r.server_cpu_us >= 0) {
    fmt::print(out, "server: {:.2f} us CPU per {}, {:.1f}% CPU (pid {})\n",
               s.requests > 0 ? static_cast<double>(r.server_cpu_us) / s.requests : 0.0,
               o.stream ? "message" : "request",
               r.window_s > 0 ? r.server_cpu_us / r.window_s / 1e4 : 0.0, o.server_pid);
  }
  for (const std::string& w : r.warnings) fmt::print(out, "WARNING: {}\n", w);
  std::fflush(out);
}

std::string ToJson(const Options& o, const RunResult& r) {
  const LoadStats& s = r.stats;
  std::string cpus;
  for (int c : o.cpus) cpus += fmt::format("{}{}", cpus.empty() ? "" : ", ", c);
  std::string j = "{";
  j += fmt::format(
      R"("settings": {{"target": {}, "protocol": {}, "func": {}, "connections": {}, )"
      R"("inflight": {}, "qps": {}, "threads": {}, "duration_s": {}, "requests_limit": {}, )"
      R"("warmup_s": {}, "payload_size": {}, "timeout_ms": {}, "tail_ratio": {}, )"
      R"("tail_delay_us": {}, "tail_kind": {}, "hot_share": {}, "hot_inflight": {}, )"
      R"("cpus": [{}], "http": {}, "stream": {}, "streams_per_connection": {}}},)",
      JsonString(o.target), JsonString(o.protocol), JsonString(o.func), o.connections, o.inflight,
      o.qps, o.threads, o.duration_s, o.requests, o.warmup_s,
      o.http() && !o.http_body() ? 0 : o.payload.size(), o.timeout_ms, o.tail_ratio,
      o.tail_delay_us, JsonString(o.tail_kind), o.hot_share, o.hot_on() ? o.hot_inflight : 0, cpus,
      o.http() ? fmt::format(R"({{"method": {}, "path": {}}})", JsonString(o.http_method),
                             JsonString(o.http_path))
               : std::string("null"),
      o.stream, o.stream ? o.streams_per_connection : 0);
  j += fmt::format(
      "\n \"window_s\": {:.6f}, \"requests\": {}, \"ok\": {}, \"qps\": {:.1f}, "
      "\"target_qps\": {},",
      r.window_s, s.requests, s.ok, Finite(r.qps()), o.qps);
  j += fmt::format(
      "\n \"goodput\": {:.1f}, \"good\": {}, \"late\": {}, \"expired\": {}, \"deadline_ms\": {},",
      Finite(r.goodput()), s.good, s.late, s.expired, o.timeout_ms);
  j += fmt::format("\n \"latency_us\": {},", LatencyJson(s.latency));
  j += fmt::format("\n \"uncorrected_latency_us\": {},",
                   o.open_loop() ? LatencyJson(s.uncorrected) : "null");
  j += fmt::format("\n \"spectrum\": {},", SpectrumJson(s.latency));
  j += fmt::format("\n \"uncorrected_spectrum\": {},",
                   o.open_loop() ? SpectrumJson(s.uncorrected) : "null");
  std::string errors;
  for (const auto& [code, n] : s.errors) {
    errors += fmt::format("{}{}: {}", errors.empty() ? "" : ", ", JsonString(code), n);
  }
  j += fmt::format(
      "\n \"errors\": {{{}}}, \"timeouts\": {}, \"error_latency_us\": {}, "
      "\"unsent\": {},",
      errors, s.timeouts, s.errors.empty() ? "null" : LatencyJson(s.error_latency), s.unsent);
  if (o.tail_on()) {
    j += fmt::format("\n \"tail\": {{\"requests\": {}, \"latency_us\": {}, \"spectrum\": {}}},",
                     s.tail_requests, LatencyJson(s.tail), SpectrumJson(s.tail));
  } else {
    j += "\n \"tail\": null,";
  }
  if (o.hot_on()) {
    j += fmt::format(
        "\n \"hot\": {{\"share\": {}, \"inflight\": {}, \"requests\": {}, "
        "\"carried_share\": {:.4f}}},",
        o.hot_share, o.hot_inflight, s.hot_requests, HotShare(s));
  } else {
    j += "\n \"hot\": null,";
  }
  if (o.stream) {
    std::string refused;
    for (const auto& [code, n] : s.open_failures) {
      refused += fmt::format("{}{}: {}", refused.empty() ? "" : ", ", JsonString(code), n);
    }
    j += fmt::format(
        "\n \"streams\": {{\"asked\": {}, \"opened\": {}, \"dropped\": {}, "
        "\"open_failures\": {{{}}}}},",
        static_cast<int64_t>(o.connections) * o.streams_per_connection, s.streams_opened,
        s.streams_dropped, refused);
  } else {
    j += "\n \"streams\": null,";
  }
  std::string warnings;
  for (const std::string& w : r.warnings) {
    warnings += (warnings.empty() ? "" : ", ") + JsonString(w);
  }
  std::string lateness =
      o.open_loop()
          ? fmt::format(R"({{"p50": {}, "p99": {}, "max": {}}})", s.lateness.ValueAtPercentile(50),
                        s.lateness.ValueAtPercentile(99), s.lateness.Max())
          : "null";
  j += fmt::format(
      "\n \"client\": {{\"cpu_percent\": {:.1f}, \"send_lateness_us\": {}, "
      "\"waited_for_connection\": {}, \"bottleneck\": {}, \"warnings\": [{}]}},",
      Finite(r.client_cpu_percent), lateness, s.slot_waits, r.bottleneck, warnings);
  if (r.server_cpu_us >= 0) {
    j += fmt::format(
        "\n \"server\": {{\"pid\": {}, \"cpu_us_per_request\": {:.3f}, \"cpu_percent\": {:.1f}}}",
        o.server_pid, s.requests > 0 ? static_cast<double>(r.server_cpu_us) / s.requests : 0.0,
        r.window_s > 0 ? r.server_cpu_us / r.window_s / 1e4 : 0.0);
  } else {
    j += "\n \"server\": null";
  }
  return j + "}\n";
}

}  // namespace trpc::bench
