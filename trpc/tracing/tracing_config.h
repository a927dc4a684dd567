#pragma once

#include <cstdint>
#include <string>

namespace trpc::tracing {

/// `plugins.tracing` (docs/observability.md#tracing): spans of calls, sampled and exported in
/// OpenTelemetry's model. The section's presence turns tracing on; the `tracing` filter, named
/// in `server.filter` and `client.filter` (or a service's own list), makes the spans.
struct TracingConfig {
  bool enabled = false;
  /// The share of new traces (calls that come with no traceparent) that are sampled, 0..1. A
  /// call that comes with one follows its caller's decision (parent-based sampling).
  double sampler_ratio = 1.0;
  /// Where spans go: an OTLP/HTTP traces URL, `http://host:port/v1/traces` (JSON encoding).
  /// Empty: spans are made and propagated but not exported (counted as dropped).
  std::string endpoint;
  uint32_t queue_size = 2048;      // spans waiting for the exporter; more are dropped (counted)
  uint32_t batch_size = 512;       // spans per export request at most
  uint32_t batch_timeout = 500;    // ms: how long a span may wait for its batch to fill
  uint32_t export_timeout = 3000;  // ms: connect + send + answer of one export request
  /// OpenTelemetry's service.name; empty: "<server.app>.<server.server>".
  std::string service_name;
  std::string origin;  // "file:line" of the section, for start-up errors

  bool operator==(const TracingConfig&) const = default;
};

}  // namespace trpc::tracing
