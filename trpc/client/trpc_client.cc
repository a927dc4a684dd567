#include "trpc/client/trpc_client.h"

#include <algorithm>
#include <atomic>

#include "trpc/base/logging.h"
#include "trpc/base/suggest.h"
#include "trpc/client/client_filter.h"
#include "trpc/client/detail/codec_options.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/naming/load_balancer.h"
#include "trpc/naming/selector.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/transport/buffer_budget.h"

namespace trpc {

namespace {
std::mutex g_client_mu;
std::shared_ptr<TrpcClient> g_client;            // owner, under g_client_mu
std::atomic<TrpcClient*> g_client_raw{nullptr};  // lock-free reads

// "file:line: " of a config entry, or nothing when it was not loaded from a file.
std::string At(const std::string& origin) { return origin.empty() ? "" : origin + ": "; }
}  // namespace

TrpcClient::TrpcClient(ClientConfig config)
    : config_(std::move(config)),
      budget_(std::make_shared<BufferBudget>(
          config_.max_buffered_bytes != 0 ? config_.max_buffered_bytes : DefaultBufferLimit(),
          int64_t{config_.buffered_bytes_timeout})) {}

bool TrpcClient::CheckProtocols(std::string* err) const {
  for (const ClientServiceConfig& s : config_.service) {
    std::shared_ptr<ClientCodec> codec = CodecRegistry::Instance().GetClient(s.protocol);
    if (!codec) {
      *err = At(s.origin) + "client service '" + s.name + "': unknown protocol '" + s.protocol +
             "'" + RegisteredNamesHint(s.protocol, CodecRegistry::Instance().ClientNames());
      return false;
    }
    if (!s.protocol_options.empty() && !ClientCodecWithOptions(codec, s, err)) return false;
  }
  return true;
}

bool TrpcClient::CheckFilters(std::string* err) const {
  using Chain = detail::ClientFilterChain;
  std::string missing;
  if (!Chain().Build(config_.filter, &missing)) {
    *err = At(config_.filter_origin) + "client.filter: no client filter named '" + missing +
           "' is registered" + Chain::UnknownNameHint(missing);
    return false;
  }
  for (const ClientServiceConfig& s : config_.service) {
    if (!Chain().Build(s.filter, &missing)) {
      *err = At(s.origin) + "client service '" + s.name + "': no client filter named '" + missing +
             "' is registered" + Chain::UnknownNameHint(missing);
      return false;
    }
  }
  return true;
}

bool TrpcClient::CheckNaming(std::string* err) const {
  const std::vector<std::string> selectors = SelectorFactory::Names();
  const std::vector<std::string> balancers = LoadBalancerFactory::Names();
  auto known = [](const std::vector<std::string>& names, const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  for (const ClientServiceConfig& s : config_.service) {
    if (!known(selectors, s.selector_name)) {
      *err = At(s.origin) + "client service '" + s.name + "': no selector named '" +
             s.selector_name + "' is registered" + RegisteredNamesHint(s.selector_name, selectors);
      return false;
    }
    if (!known(balancers, s.load_balance_name)) {
      *err = At(s.origin) + "client service '" + s.name + "': no load balancer named '" +
             s.load_balance_name + "' is registered" +
             RegisteredNamesHint(s.load_balance_name, balancers);
      return false;
    }
  }
  return true;
}

const ClientServiceConfig* TrpcClient::FindService(const std::string& name) const {
  const ClientServiceConfig* found = nullptr;
  for (const auto& s : config_.service) {
    if (s.name == name) found = &s;
  }
  return found;
}

std::shared_ptr<ServiceProxy> TrpcClient::GetOrCreate(const std::string& name,
                                                      const ClientServiceConfig& options,
                                                      const Factory& make, std::string* err) {
  std::lock_guard lock(mu_);
  if (stopped_) return Fail<ServiceProxy>(err, "client stopped");
  if (auto it = proxies_.find(name); it != proxies_.end()) return it->second;
  ThreadModel* model = runtime::GetThreadModel();
  if (model == nullptr) return Fail<ServiceProxy>(err, "no thread model is running");
  ClientServiceConfig cfg = options;
  cfg.name = name;
  // The section's filters wrap the callee's own.
  cfg.filter.insert(cfg.filter.begin(), config_.filter.begin(), config_.filter.end());
  std::shared_ptr<ServiceProxy> proxy = make(std::move(cfg), model);
  proxy->SetBufferBudget(budget_);
  std::string why;
  // Through the base: a generated RPC may be called Init too.
  if (!proxy->ServiceProxy::Init(&why)) return Fail<ServiceProxy>(err, why);
  proxies_.emplace(name, proxy);
  return proxy;
}

void TrpcClient::Stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  for (auto& [name, proxy] : proxies_) proxy->Stop();
  proxies_.clear();
}

void TrpcClient::Report(std::string* err, std::string why) {
  TRPC_LOG_ERROR("GetProxy: {}", why);
  if (err != nullptr) *err = std::move(why);
}

TrpcClient* GetTrpcClient() { return g_client_raw.load(std::memory_order_acquire); }

std::shared_ptr<TrpcClient> SetTrpcClient(std::shared_ptr<TrpcClient> client) {
  std::lock_guard lock(g_client_mu);
  g_client_raw.store(client.get(), std::memory_order_release);
  std::swap(g_client, client);
  return client;
}

}  // namespace trpc
