#include "trpc/admin/detail/stats_json.h"

#include <fmt/format.h>

#include <iterator>

#include "trpc/admin/detail/prometheus_text.h"

namespace trpc::admin {

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

namespace {

// `"errors_total":{...},"latency_seconds":{...}` of a method, server or client.
void AppendErrorsAndLatency(const std::vector<std::pair<std::string, uint64_t>>& errors,
                            const std::array<uint64_t, kLatencyBuckets>& buckets, uint64_t sum_ns,
                            uint64_t count, std::string* out) {
  auto it = std::back_inserter(*out);
  *out += R"("errors_total":{)";
  for (size_t k = 0; k < errors.size(); ++k) {
    fmt::format_to(it, "{}{}:{}", k ? "," : "", JsonString(errors[k].first), errors[k].second);
  }
  fmt::format_to(it, R"(}},"latency_seconds":{{"sum":{},"count":{},"buckets":{{)",
                 static_cast<double>(sum_ns) / 1e9, count);
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    cumulative += buckets[b];
    fmt::format_to(it, "{}{}:{}", b ? "," : "", JsonString(BucketLe(b)), cumulative);
  }
  *out += "}}";
}

void AppendMethod(const MethodMetrics& m, std::string* out) {
  fmt::format_to(std::back_inserter(*out), R"({{"method":{},"requests_total":{},)",
                 JsonString(m.name), m.requests);
  AppendErrorsAndLatency(m.errors, m.latency_buckets, m.latency_sum_ns, m.requests, out);
  *out += '}';
}

void AppendClient(const ClientServiceMetrics& c, std::string* out) {
  auto it = std::back_inserter(*out);
  fmt::format_to(it,
                 R"({{"callee":{},"protocol":{},"connections":{},"ejections_total":{},)"
                 R"("methods":[)",
                 JsonString(c.name), JsonString(c.protocol), c.connections, c.ejections);
  for (size_t j = 0; j < c.methods.size(); ++j) {
    const ClientMethodMetrics& m = c.methods[j];
    fmt::format_to(it,
                   R"({}{{"method":{},"calls_total":{},"in_flight":{},"attempts_total":{},)"
                   R"("retries_total":{},"hedges_total":{},"retry_budget_refusals_total":{},)"
                   R"("throttle_refusals_total":{},)",
                   j ? "," : "", JsonString(m.name), m.calls, m.in_flight, m.attempts, m.retries,
                   m.hedges, m.budget_refusals, m.throttle_refusals);
    AppendErrorsAndLatency(m.errors, m.latency_buckets, m.latency_sum_ns, m.calls, out);
    *out += '}';
  }
  *out += "]}";
}

void AppendService(const ServiceMetrics& s, std::string* out) {
  fmt::format_to(std::back_inserter(*out),
                 R"({{"name":{},"protocol":{},"connections":{},"connections_accepted_total":{},)"
                 R"("connections_refused_total":{},"protocol_errors_total":{},)"
                 R"("received_bytes_total":{},"sent_bytes_total":{},"accept_backoffs_total":{},)"
                 R"("rejected_total":{{"overload":{},"parked_limit":{},"deadline_passed":{},)"
                 R"("deadline_unmeetable":{}}},)"
                 R"("concurrency_limit":{},"concurrency_in_flight":{},"methods":[)",
                 JsonString(s.name), JsonString(s.protocol), s.connections, s.connections_accepted,
                 s.connections_refused, s.protocol_errors, s.bytes_in, s.bytes_out,
                 s.accept_backoffs, s.rejected_overload, s.rejected_parked_limit,
                 s.rejected_deadline_passed, s.rejected_deadline_unmeetable, s.concurrency_limit,
                 s.concurrency_in_flight);
  for (size_t j = 0; j < s.methods.size(); ++j) {
    if (j > 0) *out += ',';
    AppendMethod(s.methods[j], out);
  }
  *out += "]}";
}

}  // namespace

std::string StatsJson(const ServerMetrics& m, const ProcessMetrics* process,
                      const std::vector<ClientServiceMetrics>& clients) {
  std::string out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, R"({{"app":{},"server":{},"services":[)", JsonString(m.app),
                 JsonString(m.server));
  for (size_t i = 0; i < m.services.size(); ++i) {
    if (i > 0) out += ',';
    AppendService(m.services[i], &out);
  }
  const BufferMetrics& b = m.buffers;
  fmt::format_to(it,
                 R"(],"buffers":{{"limit":{},"buffered":{},"paused_total":{},)"
                 R"("closed_over_limit_total":{},"memory_releases_total":{}}},)"
                 R"("parked":{{"limit":{},"taken":{}}},"threadmodels":[)",
                 b.limit, b.buffered, b.paused_total, b.closed_over_limit, b.memory_releases,
                 m.parked.limit, m.parked.taken);
  for (size_t i = 0; i < m.thread_models.size(); ++i) {
    const ThreadModelMetrics& t = m.thread_models[i];
    fmt::format_to(it, R"({}{{"name":{},"type":{},"workers":{})", i ? "," : "", JsonString(t.name),
                   JsonString(t.type), t.workers);
    fmt::format_to(it, R"(,"loop_wakeups":{},"cross_thread_replies":{})", t.loop_wakeups,
                   t.cross_thread_replies);
    if (t.has_fibers) {
      fmt::format_to(it,
                     R"(,"fibers_alive":{},"run_queue_depth":{},"steals":{},"remote_steals":{},)"
                     R"("stack_waits":{},"parks":{},"wakeups":{},"spin_ns":{})",
                     t.fibers_alive, t.run_queue_depth, t.steals, t.remote_steals, t.stack_waits,
                     t.parks, t.wakeups, t.spin_ns);
    }
    out += '}';
  }
  out += R"(],"clients":[)";
  for (size_t i = 0; i < clients.size(); ++i) {
    if (i > 0) out += ',';
    AppendClient(clients[i], &out);
  }
  out += ']';
  if (process != nullptr) {
    fmt::format_to(it, R"(,"process":{{"cpu_seconds_total":{},"resident_memory_bytes":{}}})",
                   process->cpu_seconds, process->resident_memory_bytes);
  }
  out += "}\n";
  return out;
}

}  // namespace trpc::admin
