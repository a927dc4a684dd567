#include "trpc/naming/etcd/detail/etcd_selector.h"

#include <algorithm>
#include <chrono>

#include "trpc/base/clock.h"
#include "trpc/base/detail/escape.h"
#include "trpc/base/logging.h"
#include "trpc/naming/etcd/detail/backoff.h"
#include "trpc/naming/etcd/detail/etcd_gateway.pb.h"

namespace trpc::naming::etcd::detail {

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
  watch_thread_ = std::thread([this] { WatchLoop(); });
  deliver_thread_ = std::thread([this] { DeliverLoop(); });
}

EtcdSubscription::~EtcdSubscription() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  client_.Cancel();  // a blocked read or connect returns at once
  watch_thread_.join();
  deliver_thread_.join();
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

void EtcdSubscription::MarkChangedLocked() {
  if (changed_) return;  // the delivery thread has been told already
  changed_ = true;
  cv_.notify_all();
}

void EtcdSubscription::DeliverLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || changed_; });
    if (stop_) return;
    changed_ = false;
    std::vector<Endpoint> list;
    list.reserve(eps_.size());
    for (const auto& [key, ep] : eps_) list.push_back(ep);
    const bool first = !delivered_;
    const bool send = first || list != last_;
    lock.unlock();
    if (send) {
      last_ = list;
      on_update_(std::move(list));
    }
    lock.lock();
    if (first) {
      delivered_ = true;
      cv_.notify_all();
    }
    // The changes of the next update_interval wait for its end and go out together.
    if (send && options_.update_interval_ms > 0) {
      cv_.wait_for(lock, std::chrono::milliseconds(options_.update_interval_ms),
                   [this] { return stop_; });
    }
  }
}

bool EtcdSubscription::ApplyLocked(const std::string& key, const std::string& value) {
  Endpoint ep;
  std::string err;
  if (ParseInstanceValue(value, &ep, &err)) {
    auto [it, added] = eps_.try_emplace(key, ep);
    if (added) return true;
    if (it->second == ep) return false;
    it->second = std::move(ep);
    return true;
  }
  TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd selector: skipping key {}: {}",
                    EscapeBytes(key), EscapeBytes(err));
  return eps_.erase(key) > 0;
}

void EtcdSubscription::WatchLoop() {
  Backoff backoff(kBackoffMinMs, options_.backoff_max_ms);
  const std::string range_end = PrefixRangeEnd(prefix_);
  int64_t revision = 0;  // everything up to here is in `eps_`
  bool need_read = true;
  for (bool first = true; !Stopping(); first = false) {
    // Every attempt but the first waits its step, whatever ended the one before (a failed
    // read, a broken or compacted watch): a registry that fails at once is not hammered.
    if (!first && !SleepFor(backoff.Next())) break;
    std::string err;
    if (need_read) {
      RangeRequest req;
      req.set_key(prefix_);
      req.set_range_end(range_end);
      RangeResponse rsp;
      if (client_.Call("/v3/kv/range", req, &rsp, &err) != EtcdClient::Result::kOk) {
        TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd selector {}: read: {}", prefix_,
                          EscapeBytes(err));
        continue;
      }
      std::lock_guard<std::mutex> lock(mu_);
      eps_.clear();
      for (const KeyValue& kv : rsp.kvs()) ApplyLocked(kv.key(), kv.value());
      revision = rsp.header().revision();
      need_read = false;
      MarkChangedLocked();
    }
    WatchRequest req;
    WatchCreateRequest* create = req.mutable_create_request();
    create->set_key(prefix_);
    create->set_range_end(range_end);
    create->set_start_revision(revision + 1);
    std::string watch_err;
    const int64_t opened_ns = MonotonicNanos();
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
          // "created" proves nothing (a broken gateway may say it and close): only events on
          // a watch that has stayed up a while end the back-off.
          if (w.canceled()) {
            if (w.compact_revision() > 0) {
              // What we missed is compacted away: read everything again (after a step).
              need_read = true;
              watch_err = "watch revision " + std::to_string(revision + 1) +
                          " compacted (compact_revision " + std::to_string(w.compact_revision()) +
                          "); reading again";
            } else {
              watch_err = "watch cancelled: " + w.cancel_reason();
            }
            return false;
          }
          if (w.events_size() == 0) return !Stopping();
          std::lock_guard<std::mutex> lock(mu_);
          bool changed = false;
          for (const Event& ev : w.events()) {
            // PUT is the enum's default, absent from the JSON: anything else that is not DELETE
            // is read as PUT.
            if (ev.type() == Event::DELETE) {
              changed |= eps_.erase(ev.kv().key()) > 0;
            } else {
              changed |= ApplyLocked(ev.kv().key(), ev.kv().value());
            }
            revision = std::max(revision, ev.kv().mod_revision());
          }
          if (changed) MarkChangedLocked();
          if (MonotonicNanos() - opened_ns >= int64_t{kBackoffMinMs} * kNanosPerMilli) {
            backoff.Reset();
          }
          return !stop_;
        },
        &err);
    if (Stopping()) break;
    if (MonotonicNanos() - opened_ns >= int64_t{options_.backoff_max_ms} * kNanosPerMilli) {
      backoff.Reset();  // a watch that lasted: its end is news, not a failing registry
    }
    if (!watch_err.empty()) {
      TRPC_LOG_EVERY_MS(log::Level::kInfo, 10000, "etcd selector {}: {}", prefix_,
                        EscapeBytes(watch_err));
    } else if (r != EtcdClient::Result::kOk) {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd selector {}: watch: {}", prefix_,
                        EscapeBytes(err));
    }
  }
}

}  // namespace trpc::naming::etcd::detail
