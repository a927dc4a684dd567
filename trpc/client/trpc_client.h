#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "trpc/client/client_config.h"
#include "trpc/client/service_proxy.h"

namespace trpc {

/// Creates and caches the proxies of a `client:` config section. GetProxy<T>(name) returns the
/// proxy for the `client.service[]` entry called `name`, of generated type T (or plain
/// ServiceProxy), created on first use with the entry's settings and `client.filter` followed by
/// the entry's own filters. Thread-safe. Stop() (or destruction) must come before the runtime
/// stops.
class TrpcClient {
 public:
  /// Its connections are bounded together by `config.max_buffered_bytes`.
  explicit TrpcClient(ClientConfig config);
  ~TrpcClient() { Stop(); }
  TrpcClient(const TrpcClient&) = delete;
  TrpcClient& operator=(const TrpcClient&) = delete;

  /// Null (with the reason in `*err` when given, and logged) if `name` is not configured, its
  /// settings are bad, no thread model runs, or a proxy of another type exists for it.
  template <typename T = ServiceProxy>
  std::shared_ptr<T> GetProxy(const std::string& name, std::string* err = nullptr) {
    const ClientServiceConfig* found = FindService(name);
    if (found == nullptr) {
      return Fail<T>(err, "client service '" + name + "' is not in the client config");
    }
    return GetProxy<T>(name, *found, err);
  }
  /// As above with settings given in code (used when `name` is not cached yet).
  template <typename T = ServiceProxy>
  std::shared_ptr<T> GetProxy(const std::string& name, const ClientServiceConfig& options,
                              std::string* err = nullptr) {
    std::shared_ptr<ServiceProxy> proxy = GetOrCreate(
        name, options,
        [](ClientServiceConfig cfg, ThreadModel* model) {
          return std::shared_ptr<ServiceProxy>(std::make_shared<T>(std::move(cfg), model));
        },
        err);
    if (!proxy) return nullptr;
    auto typed = std::dynamic_pointer_cast<T>(proxy);
    if (!typed) return Fail<T>(err, "client service '" + name + "' has a proxy of another type");
    return typed;
  }
  /// Stops every proxy (pending calls fail with 141). Idempotent.
  void Stop();

  const ClientConfig& config() const { return config_; }
  /// The bound on the bytes its proxies' connections hold (client.max_buffered_bytes).
  const BufferBudget& buffer_budget() const { return *budget_; }

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
  /// CheckNaming: every entry's selector_name and load_balance_name is registered (after the
  /// naming plug-ins and the program's own are: TrpcApp runs it after Initialize()).
  bool CheckNaming(std::string* err) const;

 private:
  using Factory = std::function<std::shared_ptr<ServiceProxy>(ClientServiceConfig, ThreadModel*)>;
  const ClientServiceConfig* FindService(const std::string& name) const;
  // The cached proxy of `name`, or a new one made by `make` with `options`, initialized and
  // cached; null (with the reason, logged) on failure.
  std::shared_ptr<ServiceProxy> GetOrCreate(const std::string& name,
                                            const ClientServiceConfig& options, const Factory& make,
                                            std::string* err);
  // Logs `why` and hands it to `*err` when given.
  static void Report(std::string* err, std::string why);
  template <typename T>
  static std::shared_ptr<T> Fail(std::string* err, std::string why) {
    Report(err, std::move(why));
    return nullptr;
  }

  ClientConfig config_;
  std::shared_ptr<BufferBudget> budget_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<ServiceProxy>> proxies_;
  bool stopped_ = false;
};

/// The process's client, set up by TrpcApp from the config's `client:` section (null before).
TrpcClient* GetTrpcClient();
/// Installs `client` as the process's client (TrpcApp does this); returns the previous one.
std::shared_ptr<TrpcClient> SetTrpcClient(std::shared_ptr<TrpcClient> client);

}  // namespace trpc
