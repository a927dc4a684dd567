#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trpc/admin/detail/process_metrics.h"
#include "trpc/client/client_metrics.h"
#include "trpc/server/server_metrics.h"

namespace trpc::admin {

/// The numbers of PrometheusText() as one JSON object (the admin's /cmds/stats): services with
/// their methods (requests, errors by code, latency sum/count and cumulative buckets keyed by
/// their `le`), thread models, the callees (`clients`, per method) and the process (when
/// `process` is not null). docs/admin.md shows its shape.
std::string StatsJson(const ServerMetrics& m, const ProcessMetrics* process,
                      const std::vector<ClientServiceMetrics>& clients = {});

/// `s` as a JSON string literal, quotes included (", \ and control characters escaped).
std::string JsonString(std::string_view s);

}  // namespace trpc::admin
