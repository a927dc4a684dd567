#pragma once

#include <string>

#include "trpc/config/config.h"

namespace trpc::naming {

/// Registers the naming plug-ins (docs/naming.md) by name: the selectors "dns" and "etcd", the
/// registry "etcd", and the load balancers "weighted_round_robin", "consistent_hash" and "p2c"
/// ("direct" and "round_robin" are built into the client). Idempotent; TrpcApp and
/// RunInTrpcRuntime call it before the client starts.
void RegisterNamingPlugins();

/// Hands the `plugins.selector` and `plugins.registry` sections to the plug-in tables, after
/// checking that each names a registered plug-in (false with "file:line: ..." otherwise).
bool ConfigureNamingPlugins(const PluginsConfig& plugins, std::string* err);

/// Stops every selector and registry made so far (a registry revokes what it still holds).
void StopNamingPlugins();

}  // namespace trpc::naming
