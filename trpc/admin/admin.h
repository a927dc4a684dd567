#pragma once

#include <cstdint>
#include <string>

#include "trpc/base/net_address.h"
#include "trpc/server/server.h"

namespace trpc::admin {

/// The admin service's name among a server's services (metrics label `service="trpc.admin"`).
inline constexpr char kAdminServiceName[] = "trpc.admin";
/// Its limits: a few operators and scrapers, small requests.
inline constexpr uint32_t kMaxConnections = 64;
inline constexpr uint32_t kMaxPacketSize = 1 << 20;

/// Adds the admin endpoints (docs/admin.md) to `server` as a side service on
/// `server.admin_ip:admin_port` from its config, served over HTTP on a thread of its own from
/// Server::Start() on; `admin_port: auto` binds a port the kernel picks. Does nothing when
/// admin_port is 0. TrpcApp calls it; a program that drives a Server itself calls it before
/// Start(). False if the server has one already.
bool EnableAdmin(Server* server);
/// The same on `ip:port`, whatever the config says; port 0 binds a port the kernel picks,
/// which GetAdminAddress(), the log line and the listen file then tell.
bool EnableAdmin(Server* server, std::string ip, uint16_t port);
/// The admin service's bound address; false when it does not run.
bool GetAdminAddress(const Server& server, NetAddress* out);

}  // namespace trpc::admin
