#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "trpc/base/logging.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/runtime/runtime.h"

namespace trpc {

/// Creates and caches the proxies of a `client:` config section. GetProxy<T>(name) returns the
/// proxy for the `client.service[]` entry called `name`, of generated type T (or plain
/// ServiceProxy), created on first use with the entry's settings and `client.filter` followed by
/// the entry's own filters. Thread-safe. Stop() (or destruction) must come before the runtime
/// stops.
class TrpcClient {
 public:
  explicit TrpcClient(ClientConfig config) : config_(std::move(config)) {}
  ~TrpcClient() { Stop(); }
  TrpcClient(const TrpcClient&) = delete;
  TrpcClient& operator=(const TrpcClient&) = delete;

  /// Null (with the reason in `*err` when given, and logged) if `name` is not configured, its
  /// settings are bad, no thread model runs, or a proxy of another type exists for it.
  template <typename T = ServiceProxy>
  std::shared_ptr<T> GetProxy(const std::string& name, std::string* err = nullptr) {
    const ClientServiceConfig* found = nullptr;
    for (const auto& s : config_.service) {
      if (s.name == name) found = &s;
    }
    if (found == nullptr) {
      return Fail<T>(err, "client service '" + name + "' is not in the client config");
    }
    return GetProxy<T>(name, *found, err);
  }

  /// As above with settings given in code (used when `name` is not cached yet).
  template <typename T = ServiceProxy>
  std::shared_ptr<T> GetProxy(const std::string& name, const ClientServiceConfig& options,
                              std::string* err = nullptr) {
    std::lock_guard lock(mu_);
    if (stopped_) return Fail<T>(err, "client stopped");
    auto it = proxies_.find(name);
    if (it != proxies_.end()) {
      auto typed = std::dynamic_pointer_cast<T>(it->second);
      if (!typed) return Fail<T>(err, "client service '" + name + "' has a proxy of another type");
      return typed;
    }
    ThreadModel* model = runtime::GetThreadModel();
    if (model == nullptr) return Fail<T>(err, "no thread model is running");
    ClientServiceConfig cfg = options;
    cfg.name = name;
    // The section's filters wrap the callee's own.
    cfg.filter.insert(cfg.filter.begin(), config_.filter.begin(), config_.filter.end());
    auto proxy = std::make_shared<T>(std::move(cfg), model);
    std::string why;
    // Through the base: a generated RPC may be called Init too.
    if (!static_cast<ServiceProxy*>(proxy.get())->Init(&why)) return Fail<T>(err, why);
    proxies_.emplace(name, proxy);
    return proxy;
  }

  /// Stops every proxy (pending calls fail with 141). Idempotent.
  void Stop() {
    std::lock_guard lock(mu_);
    stopped_ = true;
    for (auto& [name, proxy] : proxies_) proxy->Stop();
    proxies_.clear();
  }

  const ClientConfig& config() const { return config_; }

  /// Start-up checks of the `client:` section against what is registered, so that a typo stops
  /// start-up with "file:line: ..." of its entry instead of failing the first GetProxy(). False
  /// with the first problem in `*err`.
  ///
  /// CheckProtocols: every `client.service[]` entry's `protocol` is a registered client codec
  /// (codecs register during static initialization, so this can run at once).
  bool CheckProtocols(std::string* err) const;
  /// CheckFilters: every name in `client.filter` and in the entries' `filter` lists is a
  /// registered client filter. Run it once the filters are registered (TrpcApp: after
  /// Initialize()).
  bool CheckFilters(std::string* err) const;

 private:
  template <typename T>
  static std::shared_ptr<T> Fail(std::string* err, std::string why) {
    TRPC_LOG_ERROR("GetProxy: {}", why);
    if (err != nullptr) *err = std::move(why);
    return nullptr;
  }

  ClientConfig config_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<ServiceProxy>> proxies_;
  bool stopped_ = false;
};

/// The process's client, set up by TrpcApp from the config's `client:` section (null before).
TrpcClient* GetTrpcClient();
/// Installs `client` as the process's client (TrpcApp does this); returns the previous one.
std::shared_ptr<TrpcClient> SetTrpcClient(std::shared_ptr<TrpcClient> client);

}  // namespace trpc
