#include "trpc/naming/etcd/detail/etcd_selector.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "trpc/base/logging.h"
#include "trpc/naming/etcd/detail/etcd_gateway.pb.h"

namespace trpc::naming::etcd::detail {

namespace {
constexpr uint32_t kBackoffMinMs = 100;
}  // namespace

bool ParseInstanceValue(std::string_view value, Endpoint* out, std::string* err) {
  InstanceValue v;
  if (!FromJson(value, &v, err)) return false;
  if (v.port() == 0 || v.port() > 65535) {
    *err = "port missing or out of range";
    return false;
  }
  Endpoint ep;
  if (!NetAddress::FromIpPort(v.host(), static_cast<uint16_t>(v.port()), &ep.addr)) {
    *err = "host '" + v.host() + "' is not a numeric IP address";
    return false;
  }
  ep.weight = v.weight() == 0 ? 100 : v.weight();
  for (const auto& [k, val] : v.meta()) ep.meta[k] = val;
  *out = std::move(ep);
  return true;
}

bool EtcdSelector::Init(const PluginOptions& options, std::string* err) {
  if (!ParseEtcdOptions(options, "selector", &options_, err)) return false;
  initialized_ = true;
  return true;
}

std::unique_ptr<SelectorSubscription> EtcdSelector::Subscribe(const SelectorTarget& target,
                                                              uint32_t first_wait_ms,
                                                              OnUpdate on_update,
                                                              std::string* err) {
  const std::string where = target.origin.empty() ? "" : target.origin + ": ";
  if (!initialized_) {
    *err = where + "etcd selector: not initialized";
    return nullptr;
  }
  auto bad = [](const std::string& s) { return s.empty() || s.find('/') != std::string::npos; };
  if (bad(target.target) || bad(target.name_space)) {
    *err = where + "client " + target.service +
           ": the etcd selector's target is a registered service name and the namespace a "
           "name, both without '/'; got target '" +
           target.target + "', namespace '" + target.name_space + "'";
    return nullptr;
  }
  auto sub = std::make_unique<EtcdSubscription>(
      options_, ServiceKeyPrefix(options_, target.name_space, target.target), std::move(on_update));
  sub->WaitFirst(first_wait_ms);
  return sub;
}

EtcdSubscription::EtcdSubscription(const EtcdOptions& options, std::string key_prefix,
                                   Selector::OnUpdate on_update)
    : options_(options),
      prefix_(std::move(key_prefix)),
      on_update_(std::move(on_update)),
      client_(options) {
  thread_ = std::thread([this] { Loop(); });
}

EtcdSubscription::~EtcdSubscription() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  client_.Cancel();  // a blocked read or connect returns at once
  thread_.join();
}

bool EtcdSubscription::WaitFirst(uint32_t ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] {
    return delivered_ || stop_;
  }) && delivered_;
}

bool EtcdSubscription::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

bool EtcdSubscription::SleepFor(uint32_t ms) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_; });
}

void EtcdSubscription::Deliver(const std::map<std::string, Endpoint>& eps) {
  std::vector<Endpoint> list;
  list.reserve(eps.size());
  for (const auto& [key, ep] : eps) list.push_back(ep);
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = !delivered_;
  }
  if (!first && list == last_) return;
  last_ = list;
  on_update_(std::move(list));
  if (first) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      delivered_ = true;
    }
    cv_.notify_all();
  }
}

void EtcdSubscription::Apply(const std::string& key, const std::string& value,
                             std::map<std::string, Endpoint>* eps) {
  Endpoint ep;
  std::string err;
  if (ParseInstanceValue(value, &ep, &err)) {
    (*eps)[key] = std::move(ep);
    return;
  }
  eps->erase(key);
  TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd selector: skipping key {}: {}", key, err);
}

void EtcdSubscription::Loop() {
  std::mt19937 rng(std::random_device{}());
  uint32_t backoff = kBackoffMinMs;
  auto back_off = [&] {
    // Jittered: somewhere in [backoff/2, backoff], so that many clients do not come back at once.
    const uint32_t ms = std::uniform_int_distribution<uint32_t>(backoff / 2, backoff)(rng);
    backoff = std::min(backoff * 2, options_.backoff_max_ms);
    return SleepFor(ms);
  };
  const std::string range_end = PrefixRangeEnd(prefix_);
  std::map<std::string, Endpoint> eps;  // by key
  int64_t revision = 0;                 // everything up to here is in `eps`
  bool need_read = true;
  while (!Stopping()) {
    std::string err;
    if (need_read) {
      RangeRequest req;
      req.set_key(prefix_);
      req.set_range_end(range_end);
      RangeResponse rsp;
      if (client_.Call("/v3/kv/range", req, &rsp, &err) != EtcdClient::Result::kOk) {
        TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd selector {}: read: {}", prefix_, err);
        if (!back_off()) break;
        continue;
      }
      eps.clear();
      for (const KeyValue& kv : rsp.kvs()) Apply(kv.key(), kv.value(), &eps);
      revision = rsp.header().revision();
      need_read = false;
      Deliver(eps);
    }
    WatchRequest req;
    WatchCreateRequest* create = req.mutable_create_request();
    create->set_key(prefix_);
    create->set_range_end(range_end);
    create->set_start_revision(revision + 1);
    std::string watch_err;
    const EtcdClient::Result r = client_.Stream(
        "/v3/watch", req,
        [&](std::string_view object) {
          WatchStreamItem item;
          if (!FromJson(object, &item, &watch_err)) return false;
          if (item.has_error()) {
            watch_err = "watch failed: " + item.error().message();
            return false;
          }
          const WatchResponse& w = item.result();
          if (w.created()) backoff = kBackoffMinMs;  // connected: the next failure starts over
          if (w.canceled()) {
            if (w.compact_revision() > 0) {
              // What we missed is compacted away: read everything again.
              need_read = true;
              watch_err = "watch revision " + std::to_string(revision + 1) +
                          " compacted (compact_revision " + std::to_string(w.compact_revision()) +
                          "); reading again";
            } else {
              watch_err = "watch cancelled: " + w.cancel_reason();
            }
            return false;
          }
          bool changed = false;
          for (const Event& ev : w.events()) {
            // PUT is the enum's default, absent from the JSON: anything else that is not DELETE
            // is read as PUT.
            if (ev.type() == Event::DELETE) {
              changed |= eps.erase(ev.kv().key()) > 0;
            } else {
              Apply(ev.kv().key(), ev.kv().value(), &eps);
              changed = true;
            }
            revision = std::max(revision, ev.kv().mod_revision());
          }
          if (changed) Deliver(eps);  // Deliver drops a list equal to the last one
          return !Stopping();
        },
        &err);
    if (Stopping()) break;
    if (!watch_err.empty()) {
      TRPC_LOG_EVERY_MS(log::Level::kInfo, 10000, "etcd selector {}: {}", prefix_, watch_err);
    } else if (r != EtcdClient::Result::kOk) {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd selector {}: watch: {}", prefix_, err);
    }
    if (need_read) continue;  // compacted: read at once
    if (!back_off()) break;
  }
}

}  // namespace trpc::naming::etcd::detail
