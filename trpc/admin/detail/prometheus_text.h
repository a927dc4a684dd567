#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trpc/admin/detail/process_metrics.h"
#include "trpc/client/client_metrics.h"
#include "trpc/server/server_metrics.h"

namespace trpc::admin {

/// The Content-Type of the Prometheus text exposition format, version 0.0.4.
inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

/// Renders `m` (and `process`, when not null) in the Prometheus text exposition format: every
/// family with its HELP and TYPE lines, names in snake_case with the `trpc_` prefix (the
/// standard `process_` names for process figures), `_total` on counters, histograms as
/// cumulative `_bucket{le=...}` lines plus `_sum` and `_count`. docs/admin.md lists the
/// families. `clients` are the process's callees (CollectClientMetrics()). With `grpc_names`,
/// the gRPC services and callees also get gRPC's OpenTelemetry metrics in their Prometheus form
/// (grpc_server_call_duration_seconds, ...; docs/observability.md).
std::string PrometheusText(const ServerMetrics& m, const ProcessMetrics* process,
                           const std::vector<ClientServiceMetrics>& clients = {},
                           bool grpc_names = false);

/// A label value escaped for the text format: backslash, double quote and newline.
std::string EscapeLabelValue(std::string_view v);

/// The `le` label of latency bucket `b` (seconds, or "+Inf" for the last).
std::string BucketLe(size_t b);

}  // namespace trpc::admin
