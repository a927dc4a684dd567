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
/// Start(). Serves over TLS with server.admin_ssl, and asks for a bearer token with
/// server.admin_token or admin_token_file. False, with the reason in *err (if given) and the
/// log, if the server has one already, if the token file cannot be read, or if the address is
/// beyond loopback with neither TLS nor a token and server.admin_allow_unauthenticated is not
/// set.
bool EnableAdmin(Server* server, std::string* err = nullptr);
/// The same on `ip:port`, whatever the config says; port 0 binds a port the kernel picks,
/// which GetAdminAddress(), the log line and the listen file then tell.
bool EnableAdmin(Server* server, std::string ip, uint16_t port, std::string* err = nullptr);
/// The admin service's bound address; false when it does not run.
bool GetAdminAddress(const Server& server, NetAddress* out);

}  // namespace trpc::admin
