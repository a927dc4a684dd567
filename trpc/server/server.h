#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "trpc/config/config.h"
#include "trpc/server/server_metrics.h"
#include "trpc/server/service.h"
#include "trpc/base/net_address.h"

namespace trpc {

class ThreadModel;
namespace detail {
class ServiceAdapter;
}

/// A server: the services of `server.service[]` in the config, each on its own address, run by
/// the thread model the config names. Register an implementation for every configured service
/// name, then Start().
///
/// With `server.admin_port` (or EnableAdmin()), it also serves the admin endpoints (metrics,
/// stats, version, log level, CPU profile: docs/admin.md) over HTTP on a thread of its own, so
/// they answer while every worker is busy.
///
/// Thread contract: all methods from one control thread, except GetMetrics(). The runtime
/// (thread models) must be started before Start() and stopped after Stop().
class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  /// Binds `service` to the configured service called `name`.
  bool RegisterService(const std::string& name, ServicePtr service);
  /// Starts every configured service. Fails (with "file:line: ..." of the service's config entry
  /// when known) if one has no implementation, names an unknown protocol or thread model, or
  /// cannot listen; then nothing is left listening.
  bool Start(std::string* err);
  /// Stops accepting, lets in-flight calls finish and their replies go out (bounded wait), then
  /// closes all connections. Idempotent. Must run before the runtime stops.
  void Stop();

  /// The bound address of service `name` (useful with port 0). False if unknown.
  bool GetAddress(const std::string& name, NetAddress* out) const;
  const detail::ServiceAdapter* GetAdapter(const std::string& name) const;

  /// Serves the admin endpoints on `ip:port` whatever server.admin_port says; port 0 binds an
  /// ephemeral port (tests), which GetAdminAddress() then tells. Before Start().
  void EnableAdmin(std::string ip, uint16_t port);
  /// The admin service's bound address; false when it does not run.
  bool GetAdminAddress(NetAddress* out) const;
  /// A snapshot of every service's counters and of the thread models they run on. Safe from
  /// any thread between Start() and Stop(); reads relaxed atomics only, so it neither waits for
  /// the workers nor orders anything (a snapshot, not a barrier).
  ServerMetrics GetMetrics() const;
  const ServerConfig& config() const { return config_; }

 private:
  bool StartServices(std::string* err);
  bool StartAdmin(std::string* err);
  void StopAdmin();

  ServerConfig config_;
  std::map<std::string, ServicePtr> services_;
  std::map<std::string, std::unique_ptr<detail::ServiceAdapter>> adapters_;
  // The admin service: its own one-thread merge model (not in the runtime's registry), its
  // adapter, and the plug-in's stop hook.
  bool admin_forced_ = false;
  std::string admin_ip_;
  uint16_t admin_port_ = 0;
  std::unique_ptr<ThreadModel> admin_model_;
  std::unique_ptr<detail::ServiceAdapter> admin_adapter_;
  std::function<void()> admin_before_stop_;
};

}  // namespace trpc
