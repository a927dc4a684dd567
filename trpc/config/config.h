#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

/// The framework's YAML configuration as typed structs. Key names follow tRPC-Cpp where it has
/// them; docs/config.md lists every key with its default, unit and valid range. Durations are in
/// milliseconds. Default-constructed structs hold the documented defaults, so `Config{}` equals
/// the result of loading an empty file.

namespace trpc {

/// One naming plug-in's settings (`plugins.selector.<name>`, `plugins.registry.<name>`): scalar
/// values by key as written, checked by the plug-in when it starts (docs/naming.md).
struct PluginOptions {
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> origin;  // key -> "file:line" of its value
  std::string section_origin;                 // "file:line" of the section ("" = not in a file)

  /// "file:line: " of `key`'s value (or of the section), for error messages.
  std::string At(const std::string& key) const {
    auto it = origin.find(key);
    if (it != origin.end()) return it->second + ": ";
    return section_origin.empty() ? "" : section_origin + ": ";
  }
  bool operator==(const PluginOptions&) const = default;
};

/// One merge thread-model instance (`global.threadmodel.default[]`, io_handle_type: merge): N
/// worker threads, each owning a reactor and running handlers inline.
struct MergeThreadModelConfig {
  std::string instance_name = "default_instance";
  uint32_t io_thread_num = 1;  // Worker (reactor) threads, 1..1024.

  bool operator==(const MergeThreadModelConfig&) const = default;
};

/// One fiber thread-model instance (`global.threadmodel.fiber[]`): M:N fibers on worker threads
/// grouped into scheduling groups.
struct FiberThreadModelConfig {
  std::string instance_name = "fiber_instance";
  uint32_t concurrency_hint = 0;       // Worker threads, 0..1024; 0 = CPUs usable.
  uint32_t scheduling_group_size = 0;  // Workers per group, 0..64; 0 = automatic (groups of <= 64).
  uint32_t fiber_stack_size = 131072;  // Bytes; 16 KiB..64 MiB, a multiple of 4096.
  uint32_t work_stealing_ratio = 16;   // 1..1000000: idle rounds per cross-group steal.
  uint32_t fiber_run_queue_size = 65536;  // Group run-queue slots; power of 2, 256..16 Mi.

  bool operator==(const FiberThreadModelConfig&) const = default;
};

/// `global.threadmodel`. Exactly one of the lists is non-empty after loading: a file that gives
/// neither gets one merge instance with the defaults above; giving both is an error.
struct ThreadModelConfig {
  std::vector<MergeThreadModelConfig> merge{MergeThreadModelConfig{}};  // Key: `default`.
  std::vector<FiberThreadModelConfig> fiber;

  bool operator==(const ThreadModelConfig&) const = default;
};

struct GlobalConfig {
  ThreadModelConfig threadmodel;

  bool operator==(const GlobalConfig&) const = default;
};

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
  bool max_concurrency_auto = false;      // `max_concurrency: auto`: an adaptive limit instead
  std::string threadmodel_instance_name;  // "" = the first configured instance.
  std::vector<std::string> filter;        // Server filters for this service, after server.filter.
  /// Registration (with server.registry_name): the namespace and weight callers see, and the IP
  /// to publish when `ip` is a wildcard ("" = refuse to register a wildcard address).
  std::string name_space = "default";  // Key: `namespace`.
  uint32_t weight = 100;               // 1..10000.
  std::string advertise_ip;
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

  /// Whether an admin service is asked for (a port, or `auto`).
  bool admin_enabled() const { return admin_port != 0 || admin_port_auto; }
  bool operator==(const ServerConfig&) const = default;
};

/// Outlier ejection per client service (docs/naming.md): an endpoint with `consecutive_failures`
/// failures in a row (connect failures, lost connections, 5xx-class codes) is left out for
/// base_ejection_time, doubling with each repeated ejection up to max_ejection_time.
struct OutlierEjectionConfig {
  uint32_t consecutive_failures = 5;   // 0 = never eject; 1..1000.
  uint32_t base_ejection_time = 1000;  // ms, 1..3600000.
  uint32_t max_ejection_time = 30000;  // ms, >= base_ejection_time.
  uint32_t max_ejection_percent = 50;  // Share of endpoints out at once, 0..100 (>= 1 endpoint).

  bool operator==(const OutlierEjectionConfig&) const = default;
};

/// Retries per client service, opt-in per method (docs/naming.md).
struct RetryConfig {
  /// Methods safe to repeat: a wire name "/pkg.Service/Method", a bare method name, or "*".
  /// Empty = no retries.
  std::vector<std::string> methods;
  uint32_t max_attempts = 3;  // Attempts in all (the first included), 2..10.
  /// Codes retried besides connect failures (111), lost connections (141) and overload (22).
  std::vector<uint32_t> codes;
  uint32_t backoff_base = 5;   // ms before the first retry (jittered), 0..10000.
  uint32_t backoff_max = 100;  // ms, cap of the doubling back-off.
  /// Retries may add at most this share of the calls (per cent, 1..100), plus budget_min per
  /// second, so they cannot multiply an overload.
  uint32_t budget_percent = 10;
  uint32_t budget_min = 10;  // retries per second always allowed, 0..100000.

  bool operator==(const RetryConfig&) const = default;
};

/// Hedging per client service, opt-in per method (docs/naming.md): after `delay` without a
/// reply a second attempt goes to another endpoint; the first success wins.
struct HedgingConfig {
  std::vector<std::string> methods;  // As RetryConfig::methods. Empty = no hedging.
  uint32_t delay = 0;                // ms; 0 = the method's observed P95.
  uint32_t max_attempts = 2;         // Attempts in all, 2..5.

  bool operator==(const HedgingConfig&) const = default;
};

/// One callee (`client.service[]`).
struct ClientServiceConfig {
  std::string name;  // Required, unique within the client section.
  /// Required. For the "direct" selector "ip:port[,ip:port...]" (IPv6 as "[::1]:port"); for
  /// "dns" "host:port"; for "etcd" the registered service name.
  std::string target;
  std::string selector_name = "direct";           // A registered selector (docs/naming.md).
  std::string name_space = "default";             // Key: `namespace`; for registry selectors.
  std::string load_balance_name = "round_robin";  // A registered load balancer.
  OutlierEjectionConfig outlier_ejection;
  RetryConfig retry;
  HedgingConfig hedging;
  std::string protocol = "trpc";   // A registered codec; checked when the proxy is created.
  uint32_t timeout = 1000;         // ms per call, >= 1: every call has a deadline.
  std::string conn_type = "long";  // "long" (kept) or "short" (one per call).
  /// Long connections per backend (per reactor), 0..1024. 0 = the protocol's default: 1 for a
  /// multiplexing protocol (trpc), 64 for one that answers in order (http), whose connections
  /// are a pool carrying one call (or pipeline_depth calls) each.
  uint32_t max_conn_num = 0;
  /// Protocols that answer in order (http): requests outstanding per connection, 1..1024;
  /// 1 = no pipelining. Multiplexing protocols (trpc) ignore it.
  uint32_t pipeline_depth = 1;
  uint32_t max_packet_size = 10000000;  // Bytes per response frame, >= 16.
  uint32_t connect_timeout = 3000;      // ms to establish a connection; 0 = no limit.
  std::vector<std::string> filter;      // Client filters for this callee, after client.filter.
  /// Refuse calls locally (ret 123) with a probability that grows while the callee answers
  /// "overloaded" (ret 22): an adaptive throttle (docs/overload.md). Off by default.
  bool overload_throttle = false;
  /// The protocol's own client settings (`protocol_options:` — for grpc: max_message_size,
  /// windows), checked by the codec when the proxy is made and at start-up; each value's
  /// "file:line" is in protocol_option_origin.
  std::map<std::string, std::string> protocol_options;
  std::map<std::string, std::string> protocol_option_origin;
  std::string origin;  // "file:line" of this entry, for errors found after loading.

  bool operator==(const ClientServiceConfig&) const = default;
};

struct ClientConfig {
  std::vector<std::string> filter;  // Client filters run for every callee, by registered name.
  /// Bytes all the client's connections together may hold buffered (responses read but not yet
  /// complete or delivered, requests not yet written); 0 = as server.max_buffered_bytes' default
  /// (a quarter of the usable memory, 64 MiB..4 GiB). Else >= 1 MiB.
  uint64_t max_buffered_bytes = 0;
  uint32_t buffered_bytes_timeout = 10000;  // ms a connection may stay over its share; >= 1.
  std::vector<ClientServiceConfig> service;
  std::string filter_origin;  // "file:line" of client.filter, for errors found after loading.

  bool operator==(const ClientConfig&) const = default;
};

struct LogConfig {
  std::string level = "info";  // trace|debug|info|warn|error|fatal|off.

  bool operator==(const LogConfig&) const = default;
};

struct PluginsConfig {
  LogConfig log;
  std::map<std::string, PluginOptions> selector;  // `plugins.selector.<name>`
  std::map<std::string, PluginOptions> registry;  // `plugins.registry.<name>`

  bool operator==(const PluginsConfig&) const = default;
};

struct Config {
  GlobalConfig global;
  ServerConfig server;
  ClientConfig client;
  PluginsConfig plugins;
  std::string path;  // The file it was loaded from (or the name given for a string).

  bool operator==(const Config&) const = default;
};

/// Loads and validates the YAML file at `path`. On any problem (unreadable file, YAML syntax,
/// unknown or duplicate key, wrong type, value out of range, inconsistent settings) returns false,
/// leaves `*out` unchanged and sets `*error` to "FILE:LINE: what is wrong" (LINE 1-based), or to
/// "FILE: cannot open: <reason>". Safe to call from any thread.
bool LoadConfig(const std::string& path, Config* out, std::string* error);

/// As LoadConfig, from text in memory; `name_for_errors` takes the place of FILE.
bool LoadConfigFromString(std::string_view yaml, std::string_view name_for_errors, Config* out,
                          std::string* error);

}  // namespace trpc
