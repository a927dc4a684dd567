#include "trpc/config/config.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <map>
#include <system_error>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/config/detail/address.h"
#include "trpc/config/detail/yaml_reader.h"
#include "trpc/tracing/detail/exporter.h"

namespace trpc {

namespace {

using config_detail::ErrorSink;
using config_detail::MapReader;
using config_detail::Presence;
using config_detail::UintRule;

constexpr uint64_t kU32Max = UINT32_MAX;

// Limits, one per key; docs/config.md repeats them.
constexpr UintRule kPortRule{0, 65535};
constexpr UintRule kHandshakeTimeoutRule{1, 600000};
constexpr UintRule kMaxHandshakesRule{1, 1000000};
constexpr UintRule kIoThreadNumRule{1, 1024};
constexpr UintRule kConcurrencyHintRule{0, 1024};
constexpr UintRule kSchedulingGroupSizeRule{0, 64};  // the parked-worker mask is one word
constexpr UintRule kFiberStackSizeRule{16384, 64u << 20, 4096};  // Whole pages.
constexpr UintRule kWorkStealingRatioRule{1, 1000000};
constexpr UintRule kRunQueueSizeRule{256, 16u << 20, 1, true};  // Power of two: index by mask.
constexpr UintRule kMaxConnNumRule{1, kU32Max};
constexpr UintRule kIdleTimeRule{0, kU32Max};
constexpr UintRule kReadFrameTimeoutRule{0, kU32Max};
constexpr UintRule kMaxPacketSizeRule{16, kU32Max};  // At least a trpc frame header.
constexpr UintRule kMaxStreamsPerConnectionRule{1, 1000000};
constexpr UintRule kStreamWindowRule{65535, 2147483647};  // trpc's minimum window .. 2^31 - 1
constexpr UintRule kStreamTimeoutRule{0, kU32Max};        // ms; 0 = none
constexpr UintRule kServiceTimeoutRule{0, kU32Max};
constexpr UintRule kMaxPendingWriteBytesRule{4096, UINT64_MAX};
constexpr UintRule kMaxPendingRequestsRule{1, 1000000};
constexpr UintRule kClientTimeoutRule{1, kU32Max};
constexpr UintRule kClientMaxConnNumRule{0, 1024};
constexpr UintRule kPipelineDepthRule{1, 1024};
constexpr UintRule kStopMaxWaitTimeRule{0, 600000};
constexpr UintRule kMaxConcurrencyRule{0, 1u << 20};
constexpr UintRule kMaxBufferedBytesRule{0, UINT64_MAX};   // 0, or >= kMinBufferedBytes
constexpr UintRule kMaxParkedRequestsRule{0, UINT32_MAX};  // 0 = automatic
constexpr uint64_t kMinBufferedBytes = 1u << 20;
constexpr UintRule kBufferedBytesTimeoutRule{1, kU32Max};
constexpr UintRule kDeregisterWaitRule{0, 60000};
constexpr UintRule kWeightRule{1, 10000};
constexpr UintRule kConsecutiveFailuresRule{0, 1000};
constexpr UintRule kEjectionTimeRule{1, 3600000};
constexpr UintRule kPercentRule{0, 100};
constexpr UintRule kRetryAttemptsRule{2, 10};
constexpr UintRule kBackoffRule{0, 10000};
constexpr UintRule kBudgetPercentRule{1, 100};
constexpr UintRule kBudgetMinRule{0, 100000};
constexpr UintRule kHedgeDelayRule{0, 600000};
constexpr UintRule kHedgeAttemptsRule{2, 5};

// Instance name -> path of the entry that declared it.
using InstanceNames = std::map<std::string, std::string, std::less<>>;

void CheckUniqueInstance(MapReader& r, const std::string& name, InstanceNames* names) {
  auto [it, inserted] = names->emplace(name, r.path());
  if (!inserted) {
    r.FailValue("instance_name",
                fmt::format("duplicate thread model instance '{}' (also {})", name, it->second));
  }
}

void ReadThreadModel(const MapReader& global, ThreadModelConfig* out, InstanceNames* names) {
  MapReader tm = global.Map("threadmodel", {"default", "fiber"});
  ThreadModelConfig result;
  result.merge.clear();
  tm.ForEachMap("default", {"instance_name", "io_handle_type", "io_thread_num"},
                [&](MapReader& r, size_t) {
                  MergeThreadModelConfig m;
                  r.NonEmptyString("instance_name", &m.instance_name);
                  std::string type = "merge";
                  r.String("io_handle_type", &type);
                  if (r.ok() && type == "separate") {
                    r.FailValue("io_handle_type", "'separate' is not supported yet (only 'merge')");
                  }
                  r.OneOf("io_handle_type", {"merge"}, &type);
                  r.Uint("io_thread_num", kIoThreadNumRule, &m.io_thread_num);
                  if (r.ok()) CheckUniqueInstance(r, m.instance_name, names);
                  result.merge.push_back(std::move(m));
                });
  tm.ForEachMap("fiber",
                {"instance_name", "concurrency_hint", "scheduling_group_size", "fiber_stack_size",
                 "work_stealing_ratio", "fiber_run_queue_size"},
                [&](MapReader& r, size_t) {
                  FiberThreadModelConfig f;
                  r.NonEmptyString("instance_name", &f.instance_name);
                  r.Uint("concurrency_hint", kConcurrencyHintRule, &f.concurrency_hint);
                  r.Uint("scheduling_group_size", kSchedulingGroupSizeRule,
                         &f.scheduling_group_size);
                  r.Uint("fiber_stack_size", kFiberStackSizeRule, &f.fiber_stack_size);
                  r.Uint("work_stealing_ratio", kWorkStealingRatioRule, &f.work_stealing_ratio);
                  r.Uint("fiber_run_queue_size", kRunQueueSizeRule, &f.fiber_run_queue_size);
                  if (r.ok()) CheckUniqueInstance(r, f.instance_name, names);
                  result.fiber.push_back(std::move(f));
                });
  if (!tm.ok()) return;
  if (!result.merge.empty() && !result.fiber.empty()) {
    // One process runs one thread model; mixing them is not supported (docs/config.md).
    tm.FailMap("give either 'default' (merge) or 'fiber' instances, not both");
    return;
  }
  if (result.merge.empty() && result.fiber.empty()) {
    result.merge.emplace_back();
    names->emplace(result.merge.back().instance_name, "the default merge instance");
  }
  *out = std::move(result);
}

std::string ListNames(const InstanceNames& names) {
  std::string s;
  for (const auto& [name, where] : names) {
    if (!s.empty()) s += ", ";
    s += name;
  }
  return s;
}

// A listening endpoint already claimed, to catch two listeners on one port: with SO_REUSEPORT
// the second bind would succeed and the two would silently share connections.
struct Listener {
  std::string ip;
  uint16_t port;
  std::string owner;
};

void CheckListener(const MapReader& r, std::string_view port_key, Listener listener,
                   std::vector<Listener>* listeners) {
  if (!r.ok() || listener.port == 0) return;
  for (const Listener& other : *listeners) {
    if (other.port == listener.port &&
        config_detail::ListenAddressesOverlap(other.ip, listener.ip)) {
      r.FailValue(port_key, fmt::format("{}:{} collides with {} ({}:{})", listener.ip,
                                        listener.port, other.owner, other.ip, other.port));
      return;
    }
  }
  listeners->push_back(std::move(listener));
}

void ReadIp(MapReader& r, std::string_view key, std::string* out) {
  std::string ip = *out;
  r.String(key, &ip);
  if (r.ok() && !config_detail::IsIpAddress(ip)) {
    r.FailValue(key, fmt::format("expected a numeric IPv4 or IPv6 address, got '{}'", ip));
    return;
  }
  *out = std::move(ip);
}

// max_buffered_bytes and buffered_bytes_timeout, of the server or the client section.
void ReadBufferBound(MapReader& r, uint64_t* limit, uint32_t* timeout) {
  r.Uint("max_buffered_bytes", kMaxBufferedBytesRule, limit);
  if (r.ok() && *limit != 0 && *limit < kMinBufferedBytes) {
    r.FailValue("max_buffered_bytes",
                fmt::format("expected 0 (automatic) or at least {} bytes, got {}",
                            kMinBufferedBytes, *limit));
  }
  r.Uint("buffered_bytes_timeout", kBufferedBytesTimeoutRule, timeout);
}

// A number accepted by `rule`, or `auto` (sets *is_auto and leaves *value).
template <typename T>
void ReadUintOrAuto(MapReader& r, std::string_view key, const UintRule& rule, T* value,
                    bool* is_auto) {
  std::string text;
  r.String(key, &text);
  if (text == "auto") {
    *is_auto = true;
  } else if (!text.empty() && text.find_first_not_of("0123456789") != std::string::npos) {
    r.FailValue(key, fmt::format("expected an integer in {}..{} or 'auto', got '{}'", rule.lo,
                                 rule.hi, text));
  } else {
    r.Uint(key, rule, value);
  }
}

// `ssl:` of a service or a callee (docs/tls.md). Every key is accepted on both sides, as
// tRPC-Cpp's are, so its YAML moves over unchanged; the files are loaded (and their errors
// reported with these origins) when the service or proxy starts.
void ReadTls(MapReader& parent, const std::string& file, TlsConfig* out,
             std::string_view key = "ssl") {
  if (!parent.Has(key)) return;
  MapReader r =
      parent.Map(key, {"enable", "cert_path", "private_key_path", "ca_cert_path", "mutual_auth",
                       "ciphers", "protocols", "dh_param_path", "sni_name", "insecure",
                       "handshake_timeout", "crl_path", "verify_peer_name", "max_handshakes"});
  TlsConfig c;
  c.origin = fmt::format("{}:{}", file, r.line());
  auto flag = [&](std::string_view key, bool* v) {
    std::string text = *v ? "true" : "false";
    r.OneOf(key, {"true", "false"}, &text);
    *v = text == "true";
  };
  flag("enable", &c.enable);
  r.String("cert_path", &c.cert_path);
  r.String("private_key_path", &c.private_key_path);
  r.String("ca_cert_path", &c.ca_cert_path);
  flag("mutual_auth", &c.mutual_auth);
  r.String("ciphers", &c.ciphers);
  r.StringList("protocols", &c.protocols);
  r.String("dh_param_path", &c.dh_param_path);
  r.String("sni_name", &c.sni_name);
  flag("insecure", &c.insecure);
  r.Uint("handshake_timeout", kHandshakeTimeoutRule, &c.handshake_timeout);
  r.Uint("max_handshakes", kMaxHandshakesRule, &c.max_handshakes);
  r.String("crl_path", &c.crl_path);
  flag("verify_peer_name", &c.verify_peer_name);
  for (std::string_view key :
       {"enable", "cert_path", "private_key_path", "ca_cert_path", "mutual_auth", "ciphers",
        "protocols", "dh_param_path", "sni_name", "insecure", "handshake_timeout", "crl_path",
        "verify_peer_name", "max_handshakes"}) {
    if (r.Has(key)) c.key_origin[std::string(key)] = fmt::format("{}:{}", file, r.ValueLine(key));
  }
  if (r.ok()) *out = std::move(c);
}

// The admin service's TLS and token, and the refusal to serve it unauthenticated beyond
// loopback (docs/admin.md).
void ReadAdminAuth(MapReader& r, const std::string& file, ServerConfig* server) {
  ReadTls(r, file, &server->admin_ssl, "admin_ssl");
  r.String("admin_token", &server->admin_token);
  r.String("admin_token_file", &server->admin_token_file);
  std::string unauth = server->admin_allow_unauthenticated ? "true" : "false";
  r.OneOf("admin_allow_unauthenticated", {"true", "false"}, &unauth);
  server->admin_allow_unauthenticated = unauth == "true";
  if (!r.ok()) return;
  if (r.Has("admin_token_file")) {
    server->admin_token_file_origin = fmt::format("{}:{}", file, r.ValueLine("admin_token_file"));
  }
  if (!server->admin_token.empty() && !server->admin_token_file.empty()) {
    r.FailValue("admin_token_file", "set admin_token or admin_token_file, not both");
  } else if (std::string why = AdminTokenProblem(server->admin_token);
             r.Has("admin_token") && !why.empty()) {
    r.FailValue("admin_token", why);
  } else if (server->admin_unauthenticated_beyond_loopback()) {
    r.FailValue("admin_ip", AdminUnauthenticatedRefusal(server->admin_ip));
  }
}

// server.listen_file: a path the server writes at start-up; whether it can be written is
// found out then (the file system may differ between loading and starting).
void ReadListenFile(MapReader& r, const std::string& file, ServerConfig* server) {
  r.String("listen_file", &server->listen_file);
  if (!r.ok() || server->listen_file.empty()) return;
  server->listen_file_origin = fmt::format("{}:{}", file, r.ValueLine("listen_file"));
  const std::string& path = server->listen_file;
  if (std::any_of(path.begin(), path.end(),
                  [](char c) { return std::iscntrl(static_cast<unsigned char>(c)) != 0; })) {
    r.FailValue("listen_file", "expected a file path, got one with control characters");
  } else if (path.back() == '/') {
    r.FailValue("listen_file", fmt::format("expected a file path, got a directory '{}'", path));
  }
}

void ReadServer(const MapReader& root, const std::string& file, const InstanceNames& instances,
                ServerConfig* out) {
  MapReader r = root.Map(
      "server",
      {"app", "server", "admin_port", "admin_ip", "admin_allowed_hosts", "admin_ssl", "admin_token",
       "admin_token_file", "admin_allow_unauthenticated", "admin_grpc_metrics",
       "stop_max_wait_time", "max_buffered_bytes", "buffered_bytes_timeout", "filter", "service",
       "registry_name", "deregister_wait", "max_parked_requests", "listen_file"});
  ServerConfig server;
  if (!r.empty()) server.origin = fmt::format("{}:{}", file, r.line());
  if (r.Has("filter")) server.filter_origin = fmt::format("{}:{}", file, r.ValueLine("filter"));
  r.StringList("filter", &server.filter);
  r.String("app", &server.app);
  r.String("server", &server.server);
  ReadUintOrAuto(r, "admin_port", kPortRule, &server.admin_port, &server.admin_port_auto);
  ReadIp(r, "admin_ip", &server.admin_ip);
  r.StringList("admin_allowed_hosts", &server.admin_allowed_hosts);
  for (std::string& host : server.admin_allowed_hosts) {
    if (!r.ok()) break;
    for (char& c : host) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const bool name =
        host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-.") == std::string::npos &&
        host.front() != '.';
    if (!name && host != "*") {
      r.FailValue("admin_allowed_hosts",
                  fmt::format("expected host names (letters, digits, '-' and '.', without a "
                              "port) or '*', got '{}'",
                              host));
    }
  }
  ReadAdminAuth(r, file, &server);
  std::string grpc_metrics = server.admin_grpc_metrics ? "true" : "false";
  r.OneOf("admin_grpc_metrics", {"true", "false"}, &grpc_metrics);
  server.admin_grpc_metrics = grpc_metrics == "true";
  r.Uint("stop_max_wait_time", kStopMaxWaitTimeRule, &server.stop_max_wait_time);
  ReadBufferBound(r, &server.max_buffered_bytes, &server.buffered_bytes_timeout);
  r.Uint("max_parked_requests", kMaxParkedRequestsRule, &server.max_parked_requests);
  r.String("registry_name", &server.registry_name);
  r.Uint("deregister_wait", kDeregisterWaitRule, &server.deregister_wait);
  ReadListenFile(r, file, &server);

  std::vector<Listener> listeners;
  CheckListener(r, "admin_port", {server.admin_ip, server.admin_port, "server.admin_port"},
                &listeners);
  std::map<std::string, std::string, std::less<>> names;  // Service name -> its path.
  r.ForEachMap(
      "service",
      {"name",
       "protocol",
       "network",
       "ip",
       "port",
       "max_conn_num",
       "idle_time",
       "max_packet_size",
       "timeout",
       "max_pending_write_bytes",
       "max_pending_requests",
       "threadmodel_instance_name",
       "filter",
       "protocol_options",
       "max_concurrency",
       "read_frame_timeout",
       "namespace",
       "weight",
       "advertise_ip",
       "max_streams_per_connection",
       "stream_window",
       "stream_idle_timeout",
       "stream_timeout",
       "ssl",
       "reflection"},
      [&](MapReader& s, size_t) {
        ServiceConfig svc;
        svc.origin = fmt::format("{}:{}", file, s.line());
        s.NonEmptyString("name", &svc.name, Presence::kRequired);
        if (s.ok()) {
          auto [it, inserted] = names.emplace(svc.name, s.path());
          if (!inserted) {
            s.FailValue("name",
                        fmt::format("duplicate service name '{}' (also {})", svc.name, it->second));
          }
        }
        s.NonEmptyString("protocol", &svc.protocol);
        s.OneOf("network", {"tcp"}, &svc.network);
        ReadIp(s, "ip", &svc.ip);
        s.Uint("port", kPortRule, &svc.port, Presence::kRequired);
        s.Uint("max_conn_num", kMaxConnNumRule, &svc.max_conn_num);
        s.Uint("idle_time", kIdleTimeRule, &svc.idle_time);
        s.Uint("read_frame_timeout", kReadFrameTimeoutRule, &svc.read_frame_timeout);
        s.Uint("max_packet_size", kMaxPacketSizeRule, &svc.max_packet_size);
        s.Uint("timeout", kServiceTimeoutRule, &svc.timeout);
        s.Uint("max_pending_write_bytes", kMaxPendingWriteBytesRule, &svc.max_pending_write_bytes);
        s.Uint("max_pending_requests", kMaxPendingRequestsRule, &svc.max_pending_requests);
        ReadUintOrAuto(s, "max_concurrency", kMaxConcurrencyRule, &svc.max_concurrency,
                       &svc.max_concurrency_auto);
        s.Uint("max_streams_per_connection", kMaxStreamsPerConnectionRule,
               &svc.max_streams_per_connection);
        s.Uint("stream_window", kStreamWindowRule, &svc.stream_window);
        s.Uint("stream_idle_timeout", kStreamTimeoutRule, &svc.stream_idle_timeout);
        s.Uint("stream_timeout", kStreamTimeoutRule, &svc.stream_timeout);
        s.String("threadmodel_instance_name", &svc.threadmodel_instance_name);
        if (s.ok() && !svc.threadmodel_instance_name.empty() &&
            instances.find(svc.threadmodel_instance_name) == instances.end()) {
          s.FailValue("threadmodel_instance_name",
                      fmt::format("no thread model instance named '{}' (configured: {})",
                                  svc.threadmodel_instance_name, ListNames(instances)));
        }
        s.StringList("filter", &svc.filter);
        s.NonEmptyString("namespace", &svc.name_space);
        s.Uint("weight", kWeightRule, &svc.weight);
        if (s.Has("advertise_ip")) ReadIp(s, "advertise_ip", &svc.advertise_ip);
        ReadTls(s, file, &svc.ssl);
        if (s.Has("reflection")) {
          std::string on;
          s.OneOf("reflection", {"true", "false"}, &on);
          svc.reflection = on == "true";
        }
        std::map<std::string, int> option_lines;
        s.ScalarMap("protocol_options", &svc.protocol_options, &option_lines);
        for (const auto& [name, line] : option_lines) {
          svc.protocol_option_origin[name] = fmt::format("{}:{}", file, line);
        }
        CheckListener(s, "port", {svc.ip, svc.port, s.path()}, &listeners);
        server.service.push_back(std::move(svc));
      });
  // A section that configures a server must give it something to serve, or the process starts,
  // says it is ready, and serves nothing. A program that serves nothing (a client) leaves the
  // section out; one that only wants the admin service sets admin_port.
  if (r.ok() && !r.empty() && server.service.empty() && !server.admin_enabled()) {
    r.FailMap(
        "no service configured: list them under 'service' (or leave the section out in a "
        "program that serves nothing)");
  }
  if (r.ok()) *out = std::move(server);
}

// A list of framework return codes (`retry.codes`).
void ReadCodes(MapReader& r, std::string_view key, std::vector<uint32_t>* out) {
  std::vector<std::string> codes;
  r.StringList(key, &codes);
  for (const std::string& c : codes) {
    if (!r.ok()) return;
    uint64_t v = 0;
    if (c.size() > 4 || c.find_first_not_of("0123456789") != std::string::npos ||
        (v = std::stoull(c)) == 0) {
      r.FailValue(key, fmt::format("expected framework return codes (1..9999), got '{}'", c));
      return;
    }
    out->push_back(static_cast<uint32_t>(v));
  }
}

// outlier_ejection, retry and hedging of one client service.
void ReadResilience(MapReader& s, ClientServiceConfig* svc) {
  MapReader ej = s.Map("outlier_ejection", {"consecutive_failures", "base_ejection_time",
                                            "max_ejection_time", "max_ejection_percent"});
  OutlierEjectionConfig& o = svc->outlier_ejection;
  ej.Uint("consecutive_failures", kConsecutiveFailuresRule, &o.consecutive_failures);
  ej.Uint("base_ejection_time", kEjectionTimeRule, &o.base_ejection_time);
  ej.Uint("max_ejection_time", kEjectionTimeRule, &o.max_ejection_time);
  ej.Uint("max_ejection_percent", kPercentRule, &o.max_ejection_percent);
  if (ej.ok() && o.max_ejection_time < o.base_ejection_time) {
    ej.FailValue("max_ejection_time",
                 fmt::format("must be at least base_ejection_time ({} ms), got {}",
                             o.base_ejection_time, o.max_ejection_time));
  }
  MapReader rt = s.Map("retry", {"methods", "max_attempts", "codes", "backoff_base", "backoff_max",
                                 "budget_percent", "budget_min"});
  RetryConfig& r = svc->retry;
  rt.StringList("methods", &r.methods);
  rt.Uint("max_attempts", kRetryAttemptsRule, &r.max_attempts);
  ReadCodes(rt, "codes", &r.codes);
  rt.Uint("backoff_base", kBackoffRule, &r.backoff_base);
  rt.Uint("backoff_max", kBackoffRule, &r.backoff_max);
  rt.Uint("budget_percent", kBudgetPercentRule, &r.budget_percent);
  rt.Uint("budget_min", kBudgetMinRule, &r.budget_min);
  if (rt.ok() && r.backoff_max < r.backoff_base) {
    rt.FailValue("backoff_max", fmt::format("must be at least backoff_base ({} ms), got {}",
                                            r.backoff_base, r.backoff_max));
  }
  MapReader hg = s.Map("hedging", {"methods", "delay", "max_attempts"});
  HedgingConfig& h = svc->hedging;
  hg.StringList("methods", &h.methods);
  hg.Uint("delay", kHedgeDelayRule, &h.delay);
  hg.Uint("max_attempts", kHedgeAttemptsRule, &h.max_attempts);
}

void ReadClient(const MapReader& root, const std::string& file, ClientConfig* out) {
  MapReader r =
      root.Map("client", {"filter", "service", "max_buffered_bytes", "buffered_bytes_timeout"});
  ClientConfig client;
  if (r.Has("filter")) client.filter_origin = fmt::format("{}:{}", file, r.ValueLine("filter"));
  ReadBufferBound(r, &client.max_buffered_bytes, &client.buffered_bytes_timeout);
  r.StringList("filter", &client.filter);
  std::map<std::string, std::string, std::less<>> names;
  r.ForEachMap(
      "service",
      {"name", "target", "protocol", "timeout", "conn_type", "max_conn_num", "pipeline_depth",
       "max_packet_size", "connect_timeout", "filter", "overload_throttle", "protocol_options",
       "selector_name", "namespace", "load_balance_name", "outlier_ejection", "retry", "hedging",
       "ssl"},
      [&](MapReader& s, size_t) {
        ClientServiceConfig svc;
        svc.origin = fmt::format("{}:{}", file, s.line());
        s.NonEmptyString("name", &svc.name, Presence::kRequired);
        if (s.ok()) {
          auto [it, inserted] = names.emplace(svc.name, s.path());
          if (!inserted) {
            s.FailValue("name",
                        fmt::format("duplicate service name '{}' (also {})", svc.name, it->second));
          }
        }
        s.String("target", &svc.target, Presence::kRequired);
        s.NonEmptyString("selector_name", &svc.selector_name);
        s.NonEmptyString("namespace", &svc.name_space);
        s.NonEmptyString("load_balance_name", &svc.load_balance_name);
        ReadResilience(s, &svc);
        // Other selectors check their own targets when the proxy is made.
        if (s.ok() && svc.selector_name == "direct") {
          std::vector<config_detail::TargetAddress> addresses;
          std::string bad;
          if (!config_detail::ParseTarget(svc.target, &addresses, &bad)) {
            s.FailValue("target", fmt::format("expected ip:port[,ip:port...] (IPv6 as [addr]:port, "
                                              "port 1..65535), got '{}'",
                                              bad));
          }
        }
        s.NonEmptyString("protocol", &svc.protocol);
        s.Uint("timeout", kClientTimeoutRule, &svc.timeout);
        s.OneOf("conn_type", {"long", "short"}, &svc.conn_type);
        s.Uint("max_conn_num", kClientMaxConnNumRule, &svc.max_conn_num);
        s.Uint("pipeline_depth", kPipelineDepthRule, &svc.pipeline_depth);
        s.Uint("max_packet_size", kMaxPacketSizeRule, &svc.max_packet_size);
        s.Uint("connect_timeout", kServiceTimeoutRule, &svc.connect_timeout);
        s.StringList("filter", &svc.filter);
        std::string throttle = svc.overload_throttle ? "true" : "false";
        s.OneOf("overload_throttle", {"true", "false"}, &throttle);
        svc.overload_throttle = throttle == "true";
        ReadTls(s, file, &svc.ssl);
        std::map<std::string, int> option_lines;
        s.ScalarMap("protocol_options", &svc.protocol_options, &option_lines);
        for (const auto& [name, line] : option_lines) {
          svc.protocol_option_origin[name] = fmt::format("{}:{}", file, line);
        }
        client.service.push_back(std::move(svc));
      });
  if (r.ok()) *out = std::move(client);
}

// `plugins.selector` or `plugins.registry`: settings by plug-in name, checked by the plug-in.
void ReadNamingPlugins(MapReader& plugins, std::string_view key, const std::string& file,
                       std::map<std::string, PluginOptions>* out) {
  plugins.NamedScalarMaps(
      key, [&](const std::string& name, int line, const std::map<std::string, std::string>& values,
               const std::map<std::string, int>& lines) {
        PluginOptions& o = (*out)[name];
        o.values = values;
        o.section_origin = fmt::format("{}:{}", file, line);
        for (const auto& [k, l] : lines) o.origin[k] = fmt::format("{}:{}", file, l);
      });
}

// `plugins.tracing` (docs/observability.md#tracing): present = on.
void ReadTracing(const MapReader& plugins, const std::string& file, tracing::TracingConfig* out) {
  if (!plugins.Has("tracing")) return;
  MapReader r = plugins.Map("tracing", {"sampler_ratio", "endpoint", "queue_size", "batch_size",
                                        "batch_timeout", "export_timeout", "service_name"});
  tracing::TracingConfig c;
  c.enabled = true;
  c.origin = fmt::format("{}:{}", file, plugins.ValueLine("tracing"));
  std::string ratio;
  r.String("sampler_ratio", &ratio);
  if (r.ok() && !ratio.empty()) {
    char* end = nullptr;
    double v = std::strtod(ratio.c_str(), &end);
    if (*end != '\0' || !(v >= 0.0 && v <= 1.0)) {
      r.FailValue("sampler_ratio", fmt::format("expected a number from 0 to 1, got '{}'", ratio));
    } else {
      c.sampler_ratio = v;
    }
  }
  r.String("endpoint", &c.endpoint);
  r.Uint("queue_size", UintRule{2, 1u << 24}, &c.queue_size);
  r.Uint("batch_size", UintRule{1, 1u << 16}, &c.batch_size);
  r.Uint("batch_timeout", UintRule{1, 600'000}, &c.batch_timeout);
  r.Uint("export_timeout", UintRule{1, 600'000}, &c.export_timeout);
  r.String("service_name", &c.service_name);
  if (r.ok() && !c.endpoint.empty()) {
    c.origin = fmt::format("{}:{}", file, r.ValueLine("endpoint"));
    tracing::detail::Endpoint e;
    std::string why;
    if (!tracing::detail::ParseEndpoint(c.endpoint, &e, &why)) r.FailValue("endpoint", why);
  }
  if (r.ok()) *out = std::move(c);
}

// `plugins.log.default[]`, tRPC-Cpp's logger list: the first entry (its `name` is free) sets
// where lines go. min_level is tRPC-Cpp's number (0 trace .. 5 critical) or a level name; mode
// 1 is synchronous, 2 and 3 asynchronous; format `json` gives JSON lines (any other format, a
// tRPC-Cpp pattern, gives our text lines); sinks.local_file names the file and its rotation.
void ReadLogDefault(MapReader& log_reader, LogConfig* out, std::string* level) {
  size_t count = 0;
  log_reader.ForEachMap(
      "default", {"name", "min_level", "mode", "format", "sinks"}, [&](MapReader& r, size_t) {
        if (count++ > 0 || !r.ok()) return;  // the first logger only
        out->has_default = true;
        std::string min_level;
        r.String("min_level", &min_level);
        static constexpr const char* kByNumber[] = {"trace", "debug", "info",
                                                    "warn",  "error", "fatal"};
        if (r.ok() && !min_level.empty()) {
          log::Level parsed;
          if (min_level.size() == 1 && min_level[0] >= '0' && min_level[0] <= '5') {
            *level = kByNumber[min_level[0] - '0'];
          } else if (log::ParseLevel(min_level, &parsed)) {
            *level = min_level;
          } else {
            r.FailValue("min_level",
                        fmt::format("expected 0..5 or a level name, got '{}'", min_level));
          }
        }
        std::string mode = "2";
        r.OneOf("mode", {"1", "2", "3"}, &mode);
        out->output.async = mode != "1";
        std::string format;
        r.String("format", &format);
        out->output.json = format == "json";
        MapReader sinks = r.Map("sinks", {"local_file", "stdout", "stderr"});
        if (!sinks.Has("local_file")) return;
        MapReader f = sinks.Map(
            "local_file", {"filename", "roll_type", "roll_size", "reserve_count", "hour_interval"});
        f.NonEmptyString("filename", &out->output.filename, Presence::kRequired);
        std::string roll = "by_size";
        f.OneOf("roll_type", {"by_size", "by_day", "by_hour"}, &roll);
        out->output.roll = roll == "by_day"    ? log::Output::Roll::kByDay
                           : roll == "by_hour" ? log::Output::Roll::kByHour
                                               : log::Output::Roll::kBySize;
        f.Uint("roll_size", UintRule{4096, uint64_t{1} << 40}, &out->output.roll_size);
        f.Uint("reserve_count", UintRule{0, 100000}, &out->output.reserve_count);
        uint32_t hour_interval = 1;
        f.Uint("hour_interval", UintRule{1, 1}, &hour_interval);
      });
}

void ReadPlugins(const MapReader& root, const std::string& file, PluginsConfig* out) {
  MapReader plugins = root.Map("plugins", {"log", "selector", "registry", "tracing"});
  ReadNamingPlugins(plugins, "selector", file, &out->selector);
  ReadNamingPlugins(plugins, "registry", file, &out->registry);
  ReadTracing(plugins, file, &out->tracing);
  MapReader log_reader = plugins.Map("log", {"level", "default"});
  std::string level = out->log.level;
  log_reader.String("level", &level);
  ReadLogDefault(log_reader, &out->log, &level);
  log::Level parsed;
  if (log_reader.ok() && !log::ParseLevel(level, &parsed)) {
    log_reader.FailValue("level",
                         fmt::format("expected one of trace|debug|info|warn|error|fatal|off, "
                                     "got '{}'",
                                     level));
    return;
  }
  out->log.level = std::move(level);
}

void ReadConfig(const YAML::Node& root_node, ErrorSink* sink, Config* out) {
  MapReader root(root_node, "", 1, sink, {"global", "server", "client", "plugins"});
  // Thread models first: services refer to their instance names.
  MapReader global = root.Map("global", {"threadmodel"});
  InstanceNames instances;
  ReadThreadModel(global, &out->global.threadmodel, &instances);
  ReadServer(root, out->path, instances, &out->server);
  ReadClient(root, out->path, &out->client);
  ReadPlugins(root, out->path, &out->plugins);
}

bool Fail(std::string* error, std::string message) {
  if (error != nullptr) *error = std::move(message);
  return false;
}

}  // namespace

bool LoadConfigFromString(std::string_view yaml, std::string_view name_for_errors, Config* out,
                          std::string* error) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Fail(error,
                fmt::format("{}:{}: {}", name_for_errors, std::max(e.mark.line, 0) + 1, e.msg));
  }
  if (docs.size() > 1) {
    return Fail(error, fmt::format("{}:{}: expected one YAML document, found a second one",
                                   name_for_errors, config_detail::LineOf(docs[1], 1)));
  }
  Config config;
  config.path = std::string(name_for_errors);
  ErrorSink sink;
  try {
    ReadConfig(docs.empty() ? YAML::Node() : docs[0], &sink, &config);
  } catch (const YAML::Exception& e) {
    // The readers only use non-throwing accessors; this is a safety net, not a code path.
    sink.Fail(std::max(e.mark.line, 0) + 1, e.msg);
  }
  if (sink.failed()) {
    return Fail(error, fmt::format("{}:{}: {}", name_for_errors, sink.line(), sink.message()));
  }
  *out = std::move(config);
  return true;
}

bool LoadConfig(const std::string& path, Config* out, std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Fail(error,
                fmt::format("{}: cannot open: {}", path, std::generic_category().message(errno)));
  }
  std::string text;
  char buf[16384];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      text.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      int err = errno;
      ::close(fd);
      return Fail(error,
                  fmt::format("{}: cannot read: {}", path, std::generic_category().message(err)));
    }
  }
  ::close(fd);
  return LoadConfigFromString(text, path, out, error);
}

}  // namespace trpc
