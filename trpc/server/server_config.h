#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/base/tls_config.h"

/// The server and its services (`server`). Part of the framework's YAML configuration
/// (trpc/config/config.h loads it; docs/config.md lists every key with its default, unit and
/// valid range). Default-constructed structs hold the documented defaults.

namespace trpc {

/// One served service (`server.service[]`).
struct ServiceConfig {
  std::string name;                     // Required, unique within the server.
  std::string protocol = "trpc";        // A registered codec; checked when the server starts.
  std::string network = "tcp";          // Only "tcp" for now.
  std::string ip = "0.0.0.0";           // Numeric IPv4 or IPv6 address to listen on.
  uint16_t port = 0;                    // Required; 0 = an ephemeral port.
  uint32_t max_conn_num = 10000;        // Connections open at once, >= 1.
  uint32_t idle_time = 60000;           // ms without traffic before closing; 0 = never.
  uint32_t read_frame_timeout = 10000;  // ms from a frame's first bytes to its last; 0 = none.
  uint32_t max_packet_size = 10000000;  // Bytes per request frame, >= 16.
  uint32_t timeout = 1000;              // ms per request; 0 = no service timeout.
  uint64_t max_pending_write_bytes = 64ull << 20;  // Unsent reply bytes per connection, >= 4096.
  uint32_t max_pending_requests = 1024;  // Requests handed to handlers, not yet replied, per conn.
  /// Requests in the server at once (admitted, not yet replied); one more is answered with ret
  /// 22 at once. 0 = no limit. docs/overload.md.
  uint32_t max_concurrency = 0;
  bool max_concurrency_auto = false;  // `max_concurrency: auto`: an adaptive limit instead
  /// Streams (docs/streaming.md): open at once per connection (an open past it gets ret 22), and
  /// the window each reads with, in bytes of messages (the protocol's minimum is 65535).
  uint32_t max_streams_per_connection = 1000;  // 1..1000000
  uint32_t stream_window = 65535;              // 65535..2147483647
  /// A stream with no message in either direction for this long, or open this long in all, is
  /// reset with ret 21 (gRPC: DEADLINE_EXCEEDED). ms; 0 = no limit. A gRPC client's
  /// grpc-timeout bounds its stream too.
  uint32_t stream_idle_timeout = 0;
  uint32_t stream_timeout = 0;
  std::string threadmodel_instance_name;  // "" = the first configured instance.
  std::vector<std::string> filter;        // Server filters for this service, after server.filter.
  /// Registration (with server.registry_name): the namespace and weight callers see, and the IP
  /// to publish when `ip` is a wildcard ("" = refuse to register a wildcard address).
  std::string name_space = "default";  // Key: `namespace`.
  uint32_t weight = 100;               // 1..10000.
  std::string advertise_ip;
  /// TLS (`ssl:`, docs/tls.md): off unless ssl.enable.
  TlsConfig ssl;
  /// Server reflection on this service (`reflection: true|false`, gRPC and trpc services):
  /// unset = on where the server has an admin service (server.admin_port), off otherwise.
  std::optional<bool> reflection;
  /// The protocol's own settings (`protocol_options:` — for http: max_body_bytes, ...), checked
  /// by the codec when the server starts; each value's "file:line" is in protocol_option_origin.
  std::map<std::string, std::string> protocol_options;
  std::map<std::string, std::string> protocol_option_origin;
  std::string origin;  // "file:line" of this entry, for errors found after loading.

  bool operator==(const ServiceConfig&) const = default;
};

struct ServerConfig {
  std::string app;
  std::string server;
  uint16_t admin_port = 0;       // 0 = no admin service (unless admin_port_auto).
  bool admin_port_auto = false;  // `admin_port: auto`: on a port the kernel picks.
  std::string admin_ip = "127.0.0.1";
  /// Host names the admin service answers besides localhost and numeric addresses (lower
  /// case; "*" = any); other Host headers get 403 (docs/admin.md).
  std::vector<std::string> admin_allowed_hosts;
  /// TLS for the admin service (`admin_ssl:`, the keys of a service's `ssl:`); off by default.
  TlsConfig admin_ssl;
  /// A bearer token every admin request but GET /health must carry (docs/admin.md); "" = none.
  /// `admin_token_file` names a file holding it instead (read at start-up and at a TLS
  /// reload); at most one of the two is set.
  std::string admin_token;
  std::string admin_token_file;
  std::string admin_token_file_origin;  // "file:line" of admin_token_file, for start-up errors.
  /// The admin service refuses to start on an address beyond loopback with neither TLS nor a
  /// token, unless this says so.
  bool admin_allow_unauthenticated = false;
  /// `admin_grpc_metrics: true`: /metrics also has gRPC's OpenTelemetry metrics
  /// (grpc_server_call_duration_seconds, grpc_client_attempt_duration_seconds, ...) for the gRPC
  /// services and callees (docs/observability.md). Off by default.
  bool admin_grpc_metrics = false;
  uint32_t stop_max_wait_time = 3000;  // ms a graceful stop waits for in-flight calls, 0..600000.
  /// Bytes all connections together may hold buffered (input not yet handled, replies not yet
  /// written); 0 = a quarter of the memory this process may use, 64 MiB..4 GiB. Else >= 1 MiB.
  uint64_t max_buffered_bytes = 0;
  uint32_t buffered_bytes_timeout = 10000;  // ms a connection may stay over its share; >= 1.
  /// Requests the process holds admitted and unfinished at once (handlers running or parked,
  /// replies deferred); one more is refused with ret 22. 0 = automatic (Server::Start():
  /// from vm.max_map_count in the fiber model, and from memory). docs/overload.md.
  uint32_t max_parked_requests = 0;
  std::vector<std::string> filter;  // Server filters run for every service, by registered name.
  /// A registry plug-in (docs/naming.md) every service is registered with while the server
  /// runs; "" = none.
  std::string registry_name;
  /// ms between deregistering at a graceful stop and closing the listeners, so that callers
  /// learn of it before connections go; 0..60000.
  uint32_t deregister_wait = 1000;
  /// Once every listener is bound, the server writes "<service> <ip>:<port>" per listener
  /// ("admin <ip>:<port>" for the admin service) to this file, and removes it at Stop(), so
  /// that scripts can use port 0 (docs/config.md, "Ports for scripts and tests"); "" = none.
  std::string listen_file;
  std::string listen_file_origin;  // "file:line" of listen_file, for errors at start-up.
  std::vector<ServiceConfig> service;
  std::string filter_origin;  // "file:line" of server.filter, for errors found after loading.
  /// "file:line" of the server section when it has keys, for errors found after loading (a
  /// program registered services the section does not list); "" when there is none.
  std::string origin;

  /// Whether the admin service, bound to `admin_ip`, would serve beyond loopback with neither
  /// TLS nor a token and without `admin_allow_unauthenticated`: start-up refuses that.
  bool admin_unauthenticated_beyond_loopback() const {
    NetAddress a;
    return admin_enabled() && !(NetAddress::FromIpPort(admin_ip, 0, &a) && a.IsLoopback()) &&
           !admin_ssl.enable && admin_token.empty() && admin_token_file.empty() &&
           !admin_allow_unauthenticated;
  }
  /// Whether the admin service is asked for (a port, or `auto`).
  bool admin_enabled() const { return admin_port != 0 || admin_port_auto; }
  bool operator==(const ServerConfig&) const = default;
};

/// Why `token` cannot be an admin bearer token ("" when it can): at least 16 characters, all
/// of them a bearer token's (letters, digits, -._~+/=).
std::string AdminTokenProblem(std::string_view token);
/// The start-up error for an admin service on `ip`, beyond loopback, with neither TLS nor a
/// token (ServerConfig::admin_unauthenticated_beyond_loopback()).
std::string AdminUnauthenticatedRefusal(std::string_view ip);

}  // namespace trpc
