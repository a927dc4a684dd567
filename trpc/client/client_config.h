#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trpc/base/tls_config.h"

/// The callees (`client`). Part of the framework's YAML configuration
/// (trpc/config/config.h loads it; docs/config.md lists every key with its default, unit and
/// valid range). Default-constructed structs hold the documented defaults.

namespace trpc {

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
  /// TLS to the callee (`ssl:`, docs/tls.md): off unless ssl.enable.
  TlsConfig ssl;
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

}  // namespace trpc
