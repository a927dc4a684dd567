#include "trpc/admin/detail/prometheus_text.h"

#include <fmt/format.h>

#include <cstdint>

#include "trpc/base/detail/version.h"
#include "trpc/base/logging.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/tracing/tracing.h"
#include "trpc/transport/tls_context.h"

namespace trpc::admin {

namespace {

// Exact decimal seconds from nanoseconds ("0.00005", "2.5", "1"), no float rounding.
std::string Seconds(uint64_t ns) {
  std::string s = fmt::format("{}.{:09d}", ns / 1'000'000'000, ns % 1'000'000'000);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

// Appends families one at a time: the HELP and TYPE lines, then its samples.
class Writer {
 public:
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, help, name,
                   type);
  }
  // `labels` is the rendered label list without braces ("" for none).
  template <typename V>
  void Sample(std::string_view name, std::string_view labels, const V& value) {
    if (labels.empty()) {
      fmt::format_to(std::back_inserter(out_), "{} {}\n", name, value);
    } else {
      fmt::format_to(std::back_inserter(out_), "{}{{{}}} {}\n", name, labels, value);
    }
  }
  // A histogram's cumulative `_bucket` lines, `_sum` (seconds) and `_count`.
  void Histogram(std::string_view name, const std::string& labels,
                 const std::array<uint64_t, kLatencyBuckets>& buckets, uint64_t sum_ns);
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

void Writer::Histogram(std::string_view name, const std::string& labels,
                       const std::array<uint64_t, kLatencyBuckets>& buckets, uint64_t sum_ns) {
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    cumulative += buckets[b];
    Sample(bucket, labels + ",le=\"" + BucketLe(b) + "\"", cumulative);
  }
  Sample(std::string(name) + "_sum", labels, Seconds(sum_ns));
  Sample(std::string(name) + "_count", labels, cumulative);
}

std::string Label(std::string_view name, std::string_view value) {
  return fmt::format("{}=\"{}\"", name, EscapeLabelValue(value));
}

std::string ServiceLabels(const ServiceMetrics& s) { return Label("service", s.name); }

std::string MethodLabels(const ServiceMetrics& s, const MethodMetrics& m) {
  return ServiceLabels(s) + "," + Label("method", m.name);
}

}  // namespace

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string BucketLe(size_t b) {
  if (b >= kLatencyBucketBoundsNs.size()) return "+Inf";
  return Seconds(static_cast<uint64_t>(kLatencyBucketBoundsNs[b]));
}

namespace {

std::string CalleeLabels(const ClientServiceMetrics& c) { return Label("callee", c.name); }

std::string CalleeMethodLabels(const ClientServiceMetrics& c, const ClientMethodMetrics& m) {
  return CalleeLabels(c) + "," + Label("method", m.name);
}

// The client families: per callee and method, then per callee.
void ClientFamilies(const std::vector<ClientServiceMetrics>& clients, Writer& w) {
  w.Family("trpc_client_calls_total", "counter",
           "Calls ended (errors included; attempts and back-offs are one call), by callee and "
           "method.");
  for (const auto& c : clients) {
    for (const auto& m : c.methods) {
      w.Sample("trpc_client_calls_total", CalleeMethodLabels(c, m), m.calls);
    }
  }
  w.Family("trpc_client_errors_total", "counter",
           "Calls ended with an error, by code: the framework's ret, or func for the callee's own "
           "code.");
  for (const auto& c : clients) {
    for (const auto& m : c.methods) {
      for (const auto& [code, n] : m.errors) {
        w.Sample("trpc_client_errors_total", CalleeMethodLabels(c, m) + "," + Label("code", code),
                 n);
      }
    }
  }
  w.Family("trpc_client_call_duration_seconds", "histogram",
           "Time from a call to its end, every attempt and back-off included, by callee and "
           "method.");
  for (const auto& c : clients) {
    for (const auto& m : c.methods) {
      w.Histogram("trpc_client_call_duration_seconds", CalleeMethodLabels(c, m), m.latency_buckets,
                  m.latency_sum_ns);
    }
  }
  struct PerMethod {
    const char* name;
    const char* type;
    const char* help;
    uint64_t ClientMethodMetrics::*field;
  };
  static constexpr PerMethod kPerMethod[] = {
      {"trpc_client_calls_in_flight", "gauge", "Calls begun and not ended yet.",
       &ClientMethodMetrics::in_flight},
      {"trpc_client_attempts_total", "counter",
       "Requests sent: first attempts, retries and hedges.", &ClientMethodMetrics::attempts},
      {"trpc_client_retries_total", "counter", "Extra attempts sent under a retry policy.",
       &ClientMethodMetrics::retries},
      {"trpc_client_hedges_total", "counter", "Extra attempts sent under a hedging policy.",
       &ClientMethodMetrics::hedges},
      {"trpc_client_retry_budget_refusals_total", "counter",
       "Retries and hedges not sent because the retry budget was spent.",
       &ClientMethodMetrics::budget_refusals},
      {"trpc_client_throttle_refusals_total", "counter",
       "Calls and extra attempts refused by the client's overload throttle (ret 123).",
       &ClientMethodMetrics::throttle_refusals},
  };
  for (const PerMethod& f : kPerMethod) {
    w.Family(f.name, f.type, f.help);
    for (const auto& c : clients) {
      for (const auto& m : c.methods) w.Sample(f.name, CalleeMethodLabels(c, m), m.*f.field);
    }
  }
  w.Family("trpc_client_connections", "gauge",
           "Connections open to the callee's endpoints now (connecting included).");
  for (const auto& c : clients) w.Sample("trpc_client_connections", CalleeLabels(c), c.connections);
  w.Family("trpc_client_ejections_total", "counter",
           "Endpoints taken out of the rotation by outlier ejection.");
  for (const auto& c : clients) {
    w.Sample("trpc_client_ejections_total", CalleeLabels(c), c.ejections);
  }
}

// gRPC's method label: the full name without the leading '/' ("pkg.Service/Method"), and
// "other" for what matched no method of the service.
std::string GrpcMethod(const std::string& name) {
  if (name == "unknown" || name == "other" || name.empty()) return "other";
  return name[0] == '/' ? name.substr(1) : name;
}

// One histogram per wire status: `labels` then grpc_status, named by the gRPC codec.
void StatusHistograms(Writer& w, std::string_view name, const std::string& labels,
                      const LatencyByWireStatus& by_status) {
  static const std::shared_ptr<ServerCodec> codec = CodecRegistry::Instance().GetServer("grpc");
  for (const auto& [status, h] : by_status) {
    std::string_view status_name = codec ? codec->WireStatusName(status) : std::string_view();
    std::string label = status_name.empty() ? std::to_string(status) : std::string(status_name);
    w.Histogram(name, labels + "," + Label("grpc_status", label), h.buckets, h.sum_ns);
  }
}

// gRPC's OpenTelemetry metrics (gRFC A66), as its Prometheus exporter names them: dots become
// underscores, the unit is a suffix, counters end in _total. For the gRPC services and callees.
void GrpcFamilies(const ServerMetrics& m, const std::vector<ClientServiceMetrics>& clients,
                  Writer& w) {
  auto grpc_services = [&m](auto&& fn) {
    for (const auto& s : m.services) {
      if (s.protocol != "grpc") continue;
      for (const auto& meth : s.methods) fn(meth, Label("grpc_method", GrpcMethod(meth.name)));
    }
  };
  auto grpc_callees = [&clients](auto&& fn) {
    for (const auto& c : clients) {
      if (c.protocol != "grpc") continue;
      for (const auto& meth : c.methods) {
        fn(meth,
           Label("grpc_method", GrpcMethod(meth.name)) + "," + Label("grpc_target", c.target));
      }
    }
  };
  w.Family("grpc_server_call_started_total", "counter",
           "The total number of calls started, including those that have not completed.");
  grpc_services([&w](const MethodMetrics& meth, const std::string& labels) {
    w.Sample("grpc_server_call_started_total", labels, meth.started);
  });
  w.Family("grpc_server_call_duration_seconds", "histogram",
           "Time from the server reading a call's headers to its sending the status.");
  grpc_services([&w](const MethodMetrics& meth, const std::string& labels) {
    StatusHistograms(w, "grpc_server_call_duration_seconds", labels, meth.by_wire_status);
  });
  w.Family("grpc_client_attempt_started_total", "counter",
           "The total number of call attempts started, including those that have not completed.");
  grpc_callees([&w](const ClientMethodMetrics& meth, const std::string& labels) {
    w.Sample("grpc_client_attempt_started_total", labels, meth.attempts);
  });
  w.Family("grpc_client_attempt_duration_seconds", "histogram",
           "End-to-end time taken to complete a call attempt.");
  grpc_callees([&w](const ClientMethodMetrics& meth, const std::string& labels) {
    StatusHistograms(w, "grpc_client_attempt_duration_seconds", labels,
                     meth.attempt_by_wire_status);
  });
  w.Family("grpc_client_call_duration_seconds", "histogram",
           "Time taken by the gRPC library to complete a call from the application's view.");
  grpc_callees([&w](const ClientMethodMetrics& meth, const std::string& labels) {
    StatusHistograms(w, "grpc_client_call_duration_seconds", labels, meth.call_by_wire_status);
  });
}

}  // namespace

std::string PrometheusText(const ServerMetrics& m, const ProcessMetrics* process,
                           const std::vector<ClientServiceMetrics>& clients, bool grpc_names) {
  Writer w;
  w.Family("trpc_build_info", "gauge",
           "Always 1; the labels say which framework build this server runs.");
  w.Sample("trpc_build_info",
           Label("version", Version()) + "," + Label("commit", BuildCommit()) + "," +
               Label("build_type", BuildType()) + "," + Label("app", m.app) + "," +
               Label("server", m.server),
           1);

  w.Family("trpc_server_requests_total", "counter",
           "Requests answered (replies sent, errors included), by service and method.");
  for (const auto& s : m.services) {
    for (const auto& meth : s.methods) {
      w.Sample("trpc_server_requests_total", MethodLabels(s, meth), meth.requests);
    }
  }
  w.Family("trpc_server_errors_total", "counter",
           "Requests answered with an error, by code: the framework's ret, or func for a "
           "handler's own code.");
  for (const auto& s : m.services) {
    for (const auto& meth : s.methods) {
      for (const auto& [code, n] : meth.errors) {
        w.Sample("trpc_server_errors_total", MethodLabels(s, meth) + "," + Label("code", code), n);
      }
    }
  }
  w.Family("trpc_server_request_duration_seconds", "histogram",
           "Time from reading a request to sending its reply, by service and method.");
  for (const auto& s : m.services) {
    for (const auto& meth : s.methods) {
      w.Histogram("trpc_server_request_duration_seconds", MethodLabels(s, meth),
                  meth.latency_buckets, meth.latency_sum_ns);
    }
  }

  struct PerService {
    const char* name;
    const char* type;
    const char* help;
    uint64_t (*get)(const ServiceMetrics&);
  };
  const PerService per_service[] = {
      {"trpc_server_connections", "gauge", "Connections open now.",
       [](const ServiceMetrics& s) -> uint64_t { return s.connections; }},
      {"trpc_server_connections_accepted_total", "counter", "Connections accepted.",
       [](const ServiceMetrics& s) { return s.connections_accepted; }},
      {"trpc_server_connections_refused_total", "counter",
       "Connections closed because max_conn_num were open: a new one at once, or (admin) the "
       "least recently active one to make room.",
       [](const ServiceMetrics& s) { return s.connections_refused; }},
      {"trpc_server_protocol_errors_total", "counter",
       "Connections closed because their bytes did not parse.",
       [](const ServiceMetrics& s) { return s.protocol_errors; }},
      {"trpc_server_accept_backoffs_total", "counter",
       "Pauses of accepting because accept() failed (out of file descriptors or memory).",
       [](const ServiceMetrics& s) { return s.accept_backoffs; }},
      {"trpc_server_received_bytes_total", "counter", "Bytes read from the service's sockets.",
       [](const ServiceMetrics& s) { return s.bytes_in; }},
      {"trpc_server_sent_bytes_total", "counter", "Bytes written to the service's sockets.",
       [](const ServiceMetrics& s) { return s.bytes_out; }},
      {"trpc_server_concurrency_limit", "gauge",
       "max_concurrency now (adaptive with auto); 0 = no limit.",
       [](const ServiceMetrics& s) -> uint64_t { return s.concurrency_limit; }},
      {"trpc_server_concurrency_in_flight", "gauge",
       "Requests admitted by max_concurrency and not yet answered.",
       [](const ServiceMetrics& s) -> uint64_t { return s.concurrency_in_flight; }},
  };
  for (const PerService& f : per_service) {
    w.Family(f.name, f.type, f.help);
    for (const auto& s : m.services) w.Sample(f.name, ServiceLabels(s), f.get(s));
  }
  w.Family("trpc_server_rejected_total", "counter",
           "Requests refused without running their handler, by reason: overload "
           "(max_concurrency), parked_limit (max_parked_requests), deadline_passed, "
           "deadline_unmeetable.");
  for (const auto& s : m.services) {
    std::string labels = ServiceLabels(s) + ",";
    w.Sample("trpc_server_rejected_total", labels + Label("reason", "overload"),
             s.rejected_overload);
    w.Sample("trpc_server_rejected_total", labels + Label("reason", "parked_limit"),
             s.rejected_parked_limit);
    w.Sample("trpc_server_rejected_total", labels + Label("reason", "deadline_passed"),
             s.rejected_deadline_passed);
    w.Sample("trpc_server_rejected_total", labels + Label("reason", "deadline_unmeetable"),
             s.rejected_deadline_unmeetable);
  }

  // The server's bound on buffered bytes (server.max_buffered_bytes): one sample each.
  struct Whole {
    const char* name;
    const char* type;
    const char* help;
    int64_t value;
  };
  const Whole whole[] = {
      {"trpc_server_buffered_bytes", "gauge",
       "Bytes the server's connections hold buffered (input not handled, replies not written).",
       m.buffers.buffered},
      {"trpc_server_buffered_bytes_limit", "gauge", "server.max_buffered_bytes in effect.",
       static_cast<int64_t>(m.buffers.limit)},
      {"trpc_server_connections_paused_over_limit_total", "counter",
       "Times a connection stopped reading because the buffered bytes were over the limit.",
       static_cast<int64_t>(m.buffers.paused_total)},
      {"trpc_server_connections_closed_over_limit_total", "counter",
       "Connections closed for staying over their share of the limit past "
       "buffered_bytes_timeout.",
       static_cast<int64_t>(m.buffers.closed_over_limit)},
      {"trpc_server_memory_releases_total", "counter",
       "Free memory handed back to the system after a burst of buffered bytes.",
       static_cast<int64_t>(m.buffers.memory_releases)},
      {"trpc_server_parked_requests", "gauge",
       "Requests admitted and not finished (handler running or parked, reply deferred); an "
       "upper bound, counting the permits threads hold in reserve.",
       static_cast<int64_t>(m.parked.taken)},
      {"trpc_server_parked_requests_limit", "gauge",
       "server.max_parked_requests in effect; 0 = no bound.", static_cast<int64_t>(m.parked.limit)},
  };
  for (const Whole& f : whole) {
    w.Family(f.name, f.type, f.help);
    w.Sample(f.name, "", f.value);
  }

  w.Family("trpc_threadmodel_workers", "gauge", "Worker threads of each thread-model instance.");
  for (const auto& t : m.thread_models) {
    w.Sample("trpc_threadmodel_workers", Label("threadmodel", t.name) + "," + Label("type", t.type),
             t.workers);
  }
  // Per thread model, one family each; the fiber ones only where a model runs fibers.
  struct PerModel {
    const char* name;
    const char* type;
    const char* help;
    uint64_t ThreadModelMetrics::*field;
    bool fibers_only;
  };
  static constexpr PerModel kPerModel[] = {
      {"trpc_threadmodel_loop_wakeups_total", "counter",
       "Eventfd writes that woke a worker's reactor from its epoll wait (replies or tasks handed "
       "over by another thread, a fiber queued for a parked worker).",
       &ThreadModelMetrics::loop_wakeups, false},
      {"trpc_threadmodel_cross_thread_replies_total", "counter",
       "Replies produced on a thread other than their connection's reactor and handed to it.",
       &ThreadModelMetrics::cross_thread_replies, false},
      {"trpc_fibers_alive", "gauge",
       "Fibers started and not finished (running, runnable or parked).",
       &ThreadModelMetrics::fibers_alive, true},
      {"trpc_fiber_run_queue_depth", "gauge", "Runnable fibers waiting for a worker.",
       &ThreadModelMetrics::run_queue_depth, true},
      {"trpc_fiber_steals_total", "counter",
       "Fibers an idle worker took from another worker or scheduling group.",
       &ThreadModelMetrics::steals, true},
      {"trpc_fiber_remote_steals_total", "counter",
       "Fibers an idle worker took from another scheduling group (part of the steals).",
       &ThreadModelMetrics::remote_steals, true},
      {"trpc_fiber_stack_waits_total", "counter",
       "Times a fiber could not start for want of a stack (the scheduler's bound from "
       "vm.max_map_count) and was retried a millisecond later.",
       &ThreadModelMetrics::stack_waits, true},
      {"trpc_fiber_parks_total", "counter", "Times a fiber worker went to sleep for want of work.",
       &ThreadModelMetrics::parks, true},
      {"trpc_fiber_wakeups_total", "counter",
       "Wake-up calls to parked fiber workers (each one a futex or eventfd call when the worker "
       "sleeps).",
       &ThreadModelMetrics::wakeups, true},
      {"trpc_fiber_spin_seconds_total", "counter",
       "Time idle fiber workers spent spinning for work before parking.", nullptr, true},
  };
  bool any_fibers = false;
  for (const auto& t : m.thread_models) any_fibers |= t.has_fibers;
  for (const PerModel& f : kPerModel) {
    if (f.fibers_only && !any_fibers) continue;  // absent in the merge model
    w.Family(f.name, f.type, f.help);
    for (const auto& t : m.thread_models) {
      if (f.fibers_only && !t.has_fibers) continue;
      if (f.field != nullptr) {
        w.Sample(f.name, Label("threadmodel", t.name), t.*f.field);
      } else {  // the spin time, in seconds
        w.Sample(f.name, Label("threadmodel", t.name), static_cast<double>(t.spin_ns) / 1e9);
      }
    }
  }

  ClientFamilies(clients, w);
  if (grpc_names) GrpcFamilies(m, clients, w);

  // The log file output (plugins.log.default), process-wide.
  const log::OutputStats ls = log::GetOutputStats();
  w.Family("trpc_log_lines_written_total", "counter", "Log lines written to the log file.");
  w.Sample("trpc_log_lines_written_total", "", ls.lines_written);
  w.Family("trpc_log_lines_dropped_total", "counter",
           "Log lines dropped because the log writer's queue was full (asynchronous mode).");
  w.Sample("trpc_log_lines_dropped_total", "", ls.lines_dropped);
  w.Family("trpc_log_rotations_total", "counter", "Log file rotations (by size, day or hour).");
  w.Sample("trpc_log_rotations_total", "", ls.rotations);
  w.Family("trpc_log_write_errors_total", "counter",
           "Failed writes or opens of the log file (its lines are lost).");
  w.Sample("trpc_log_write_errors_total", "", ls.write_errors);

  // Tracing (plugins.tracing), process-wide.
  const tracing::TracingStats ts = tracing::GetTracingStats();
  w.Family("trpc_tracing_spans_started_total", "counter", "Sampled spans begun.");
  w.Sample("trpc_tracing_spans_started_total", "", ts.spans_started);
  w.Family("trpc_tracing_spans_exported_total", "counter",
           "Spans the OpenTelemetry collector accepted.");
  w.Sample("trpc_tracing_spans_exported_total", "", ts.spans_exported);
  w.Family("trpc_tracing_spans_dropped_total", "counter",
           "Spans lost: the exporter's queue was full, their export failed, or no endpoint is "
           "set.");
  w.Sample("trpc_tracing_spans_dropped_total", "", ts.spans_dropped);
  w.Family("trpc_tracing_export_failures_total", "counter",
           "Export requests to the collector that failed (connect, timeout, an error answer).");
  w.Sample("trpc_tracing_export_failures_total", "", ts.export_failures);

  // TLS, process-wide (every service and callee with ssl.enable).
  const TlsCounters& tls = TlsCounters::Get();
  w.Family("trpc_tls_handshakes_total", "counter",
           "TLS handshakes completed (servers and clients), by whether a session ticket resumed "
           "them.");
  const uint64_t resumed = tls.resumed.load(std::memory_order_relaxed);
  w.Sample("trpc_tls_handshakes_total", Label("resumed", "false"),
           tls.handshakes.load(std::memory_order_relaxed) - resumed);
  w.Sample("trpc_tls_handshakes_total", Label("resumed", "true"), resumed);
  w.Family("trpc_tls_handshake_failures_total", "counter",
           "Connections closed before or during their TLS handshake, by reason (docs/tls.md).");
  for (int f = 0; f < static_cast<int>(TlsFailure::kCount); ++f) {
    w.Sample("trpc_tls_handshake_failures_total",
             Label("reason", TlsFailureName(static_cast<TlsFailure>(f))),
             tls.failures[f].load(std::memory_order_relaxed));
  }
  w.Family("trpc_tls_idle_buffer_releases_total", "counter",
           "Times an idle TLS connection (1 s without traffic) gave OpenSSL's record buffers "
           "(about 34 KiB) back.");
  w.Sample("trpc_tls_idle_buffer_releases_total", "",
           tls.idle_releases.load(std::memory_order_relaxed));
  w.Family("trpc_tls_certificate_reloads_total", "counter",
           "Certificate reloads (SIGHUP, POST /cmds/reload-tls), by result; a failed one keeps "
           "the previous certificate.");
  w.Sample("trpc_tls_certificate_reloads_total", Label("result", "ok"),
           tls.reloads.load(std::memory_order_relaxed));
  w.Sample("trpc_tls_certificate_reloads_total", Label("result", "failed"),
           tls.reload_failures.load(std::memory_order_relaxed));
  if (process != nullptr) {
    w.Family("process_cpu_seconds_total", "counter",
             "Total user and system CPU time spent in seconds.");
    w.Sample("process_cpu_seconds_total", "", process->cpu_seconds);
    w.Family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
    w.Sample("process_resident_memory_bytes", "", process->resident_memory_bytes);
  }
  return w.Take();
}

}  // namespace trpc::admin
