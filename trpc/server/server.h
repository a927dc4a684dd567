#pragma once

#include <map>
#include <memory>
#include <string>

#include "trpc/config/config.h"
#include "trpc/server/service.h"
#include "trpc/base/net_address.h"

namespace trpc {

namespace detail {
class ServiceAdapter;
}

/// A server: the services of `server.service[]` in the config, each on its own address, run by
/// the thread model the config names. Register an implementation for every configured service
/// name, then Start().
///
/// Thread contract: all methods from one control thread. The runtime (thread models) must be
/// started before Start() and stopped after Stop().
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

 private:
  bool StartServices(std::string* err);

  ServerConfig config_;
  std::map<std::string, ServicePtr> services_;
  std::map<std::string, std::unique_ptr<detail::ServiceAdapter>> adapters_;
};

}  // namespace trpc
