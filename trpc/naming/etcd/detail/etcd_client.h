#pragma once

#include <google/protobuf/message.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/base/tls_config.h"
#include "trpc/client/http/http_stream.h"
#include "trpc/naming/plugin_options.h"

namespace trpc::naming::etcd::detail {

/// The settings of `plugins.selector.etcd` and `plugins.registry.etcd` (the same keys).
struct EtcdOptions {
  std::vector<NetAddress> endpoints;   // `endpoints`: tried in turn on failure
  std::string prefix = "/trpc";        // `prefix`: no trailing '/'
  uint32_t ttl_s = 10;                 // `ttl`: the registry's lease, 2..3600 s
  uint32_t request_timeout_ms = 3000;  // `request_timeout`: one unary call, all endpoints
  uint32_t backoff_max_ms = 2000;      // `backoff_max`: cap of the reconnect back-off
  uint32_t update_interval_ms = 100;   // `update_interval`: least time between two lists
  /// `ssl:`: TLS to etcd (a callee's keys, docs/tls.md); the endpoints' certificates must name
  /// their IPs unless `sni_name` says otherwise.
  TlsConfig ssl;
  std::shared_ptr<const TlsContext> tls;  // made from `ssl` when enabled
};

/// Reads `options` (`kind` is "selector" or "registry", for messages). False with
/// "file:line: plugins.<kind>.etcd.<key>: what is wrong" on an unknown key or a bad value.
bool ParseEtcdOptions(const PluginOptions& options, std::string_view kind, EtcdOptions* out,
                      std::string* err);

/// `<prefix>/<namespace>/<service>/`: the keys of one service's instances.
std::string ServiceKeyPrefix(const EtcdOptions& options, std::string_view name_space,
                             std::string_view service);
/// The end of the key range that starts with `prefix` (its last byte plus one).
std::string PrefixRangeEnd(std::string prefix);

/// Messages to and from the gateway's JSON (proto3 JSON mapping, etcd's field names).
std::string ToJson(const google::protobuf::Message& msg);
bool FromJson(std::string_view json, google::protobuf::Message* msg, std::string* err);

/// Calls etcd's v3 gRPC-gateway JSON API (POST /v3/...) over HTTP/1.1, one connection per call
/// (HttpStream): unary calls and streams (watch). The endpoints are tried in turn: a call starts
/// at the last one that answered and moves on when one cannot be reached.
///
/// Thread contract: every method from any thread. Cancel is sticky: calls in progress return
/// promptly ("cancelled") and later calls fail at once; the active calls' streams are kept in a
/// set under `mu_`, and Cancel flags them all under it, so no call can start uncancelled after.
class EtcdClient {
 public:
  enum class Result {
    kOk,
    kEtcdError,    // etcd answered with an error (`*err` holds its message)
    kUnreachable,  // no endpoint answered (or the answer was not one), or cancelled
  };
  using OnObject = std::function<bool(std::string_view json_object)>;

  explicit EtcdClient(const EtcdOptions& options);

  /// A unary call: `path` like "/v3/kv/range". The whole call (every endpoint) is bounded by
  /// request_timeout.
  Result Call(std::string_view path, const google::protobuf::Message& req,
              google::protobuf::Message* rsp, std::string* err);
  /// A streaming call on the current endpoint (the next one after a connection failure): each
  /// JSON object of the response body goes to `on_object` as it arrives; false from it ends the
  /// call (kOk). kOk when the response ended; no read timeout applies.
  Result Stream(std::string_view path, const google::protobuf::Message& req,
                const OnObject& on_object, std::string* err);

  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

 private:
  // Registers `s` as active; false when already cancelled.
  bool Enter(http::HttpStream* s);
  void Leave(http::HttpStream* s);
  size_t Endpoint() const {
    return current_.load(std::memory_order_relaxed) % options_.endpoints.size();
  }
  void NextEndpoint(size_t failed);

  const EtcdOptions options_;
  std::atomic<size_t> current_{0};  // index of the endpoint to try first (a hint: relaxed)
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::set<http::HttpStream*> active_;  // guarded by mu_
};

}  // namespace trpc::naming::etcd::detail
