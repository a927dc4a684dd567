#pragma once

#include <cstdint>
#include <string>

#include "trpc/tracing/tracing_config.h"

namespace trpc::tracing {

/// The name of the tracing filters (server and client) in `server.filter` / `client.filter`.
inline constexpr char kTracingFilterName[] = "tracing";

/// Starts tracing with `config` (plugins.tracing): the exporter thread, and the sampler the
/// `tracing` filters use. `service_name` is OpenTelemetry's service.name when the config names
/// none. False with `*err` ("file:line: ...") for a bad endpoint. Replaces a previous start
/// (stopping it first). TrpcApp calls it at start-up when the section is present.
bool StartTracing(const TracingConfig& config, const std::string& service_name, std::string* err);
/// Exports what is queued and stops the exporter; the filters then make no more spans (they
/// still pass traceparent on). Idempotent.
void StopTracing();

/// Registers the server and client filters named "tracing" (idempotent; TrpcApp does it).
void RegisterTracingFilters();

/// The process's tracing counters (the admin's /metrics).
struct TracingStats {
  bool enabled = false;
  uint64_t spans_started = 0;    // sampled spans begun
  uint64_t spans_exported = 0;   // accepted by the collector
  uint64_t spans_dropped = 0;    // lost: the exporter's queue full, a failed export, no endpoint
  uint64_t export_failures = 0;  // export requests that failed
};
TracingStats GetTracingStats();

}  // namespace trpc::tracing
