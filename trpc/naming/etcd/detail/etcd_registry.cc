#include "trpc/naming/etcd/detail/etcd_registry.h"

#include <chrono>

#include "trpc/base/clock.h"
#include "trpc/base/detail/escape.h"
#include "trpc/base/logging.h"
#include "trpc/naming/etcd/detail/backoff.h"
#include "trpc/naming/etcd/detail/etcd_gateway.pb.h"

namespace trpc::naming::etcd::detail {

namespace {

bool BadName(const std::string& s) { return s.empty() || s.find('/') != std::string::npos; }

bool IsLeaseNotFound(const std::string& err) {
  return err.find("requested lease not found") != std::string::npos;
}

}  // namespace

EtcdRegistry::EtcdRegistry() = default;

EtcdRegistry::~EtcdRegistry() { Stop(); }

bool EtcdRegistry::Init(const PluginOptions& options, std::string* err) {
  if (!ParseEtcdOptions(options, "registry", &options_, err)) return false;
  client_ = std::make_unique<EtcdClient>(options_);
  bg_client_ = std::make_unique<EtcdClient>(options_);
  return true;
}

bool EtcdRegistry::KeyOf(const EtcdOptions& options, const RegistryInstance& inst, std::string* key,
                         std::string* value, std::string* err) {
  if (BadName(inst.name_space) || BadName(inst.service)) {
    *err = "etcd registry: namespace and service must be non-empty and without '/', got '" +
           inst.name_space + "' and '" + inst.service + "'";
    return false;
  }
  if (inst.addr.length() == 0 || inst.addr.IsUnspecified() || inst.addr.port() == 0) {
    *err =
        "etcd registry: cannot register address '" + inst.addr.ToString() + "' of " + inst.service;
    return false;
  }
  *key = ServiceKeyPrefix(options, inst.name_space, inst.service) + inst.addr.ToString();
  InstanceValue v;
  v.set_host(inst.addr.ip());
  v.set_port(inst.addr.port());
  v.set_weight(inst.weight == 0 ? 100 : inst.weight);
  for (const auto& [k, val] : inst.meta) (*v.mutable_meta())[k] = val;
  *value = ToJson(v);
  return true;
}

bool EtcdRegistry::PutLocked(EtcdClient* client, const std::string& key, const std::string& value,
                             EtcdClient::Result* result, std::string* err) {
  PutRequest put;
  put.set_key(key);
  put.set_value(value);
  put.set_lease(lease_);
  PutResponse rsp;
  *result = client->Call("/v3/kv/put", put, &rsp, err);
  return *result == EtcdClient::Result::kOk;
}

bool EtcdRegistry::RegrantLocked(EtcdClient* client, std::string* err) {
  LeaseGrantRequest grant;
  grant.set_ttl(options_.ttl_s);
  LeaseGrantResponse rsp;
  if (client->Call("/v3/lease/grant", grant, &rsp, err) != EtcdClient::Result::kOk) return false;
  if (rsp.id() == 0 || !rsp.error().empty()) {
    *err = "etcd lease grant refused: " + (rsp.error().empty() ? "no lease ID" : rsp.error());
    return false;
  }
  const int64_t old = lease_;
  lease_ = rsp.id();
  lease_lost_ = true;  // until every key is on the new lease
  for (const auto& [key, value] : keys_) {
    EtcdClient::Result r;
    if (!PutLocked(client, key, value, &r, err)) return false;
  }
  lease_lost_ = false;
  if (old != 0) {
    // The old lease may still hold keys put before it was thought lost: revoking it would delete
    // them, but they now carry the new lease. Revoke it, best effort, only to free it in etcd.
    LeaseRevokeRequest revoke;
    revoke.set_id(old);
    PutResponse ignored;
    std::string ignored_err;
    (void)client->Call("/v3/lease/revoke", revoke, &ignored, &ignored_err);
  }
  return true;
}

bool EtcdRegistry::Register(const RegistryInstance& inst, std::string* err) {
  if (!client_) {
    *err = "etcd registry: not initialized";
    return false;
  }
  std::string key, value;
  if (!KeyOf(options_, inst, &key, &value, err)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    *err = "etcd registry: stopped";
    return false;
  }
  if (lease_ == 0 || lease_lost_) {
    if (!RegrantLocked(client_.get(), err)) return false;
  }
  EtcdClient::Result r;
  if (!PutLocked(client_.get(), key, value, &r, err)) {
    // The lease expired behind our back (e.g. etcd was down for longer than the TTL): a new one,
    // and every key again.
    if (r != EtcdClient::Result::kEtcdError || !IsLeaseNotFound(*err)) return false;
    if (!RegrantLocked(client_.get(), err) || !PutLocked(client_.get(), key, value, &r, err)) {
      return false;
    }
  }
  keys_[key] = value;
  if (!thread_.joinable()) thread_ = std::thread([this] { KeepAliveLoop(); });
  return true;
}

bool EtcdRegistry::Deregister(const RegistryInstance& inst, std::string* err) {
  if (!client_) {
    *err = "etcd registry: not initialized";
    return false;
  }
  std::string key, value;
  if (!KeyOf(options_, inst, &key, &value, err)) return false;
  std::lock_guard<std::mutex> lock(mu_);
  keys_.erase(key);
  DeleteRangeRequest del;
  del.set_key(key);
  DeleteRangeResponse rsp;
  return client_->Call("/v3/kv/deleterange", del, &rsp, err) == EtcdClient::Result::kOk;
}

void EtcdRegistry::AbandonForTest() {
  if (bg_client_) bg_client_->Cancel();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    abandoned_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t EtcdRegistry::lease_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lease_;
}

void EtcdRegistry::Stop() {
  if (!client_) return;
  bg_client_->Cancel();  // first: the thread may be in a call, holding mu_
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (lease_ != 0 && !abandoned_) {
    LeaseRevokeRequest revoke;
    revoke.set_id(lease_);
    PutResponse rsp;
    std::string err;
    if (client_->Call("/v3/lease/revoke", revoke, &rsp, &err) != EtcdClient::Result::kOk &&
        !IsLeaseNotFound(err)) {
      TRPC_LOG_WARN(
          "etcd registry: revoking lease {} at stop failed ({}): its {} keys stay "
          "until it expires",
          lease_, EscapeBytes(err), keys_.size());
    }
  }
  lease_ = 0;
  keys_.clear();
}

void EtcdRegistry::KeepAliveLoop() {
  const auto interval = std::chrono::milliseconds(options_.ttl_s * 1000 / 3);
  // While something is wrong, sooner, so that a restarted etcd finds us again quickly: a step
  // of jittered back-off, never longer than the renewal interval (the lease must not expire
  // while etcd answers), started over once a keep-alive or a re-registration succeeds.
  Backoff backoff(kBackoffMinMs, options_.backoff_max_ms);
  int64_t last_ok_ns = MonotonicNanos();
  bool healthy = true;
  bool wait = true;  // false right after finding the lease gone: re-register at once
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (healthy) backoff.Reset();
    const auto pause =
        healthy ? interval : std::min(interval, std::chrono::milliseconds(backoff.Next()));
    if (wait) cv_.wait_for(lock, pause, [this] { return stopping_; });
    wait = true;
    if (stopping_) break;
    std::string err;
    if (lease_lost_) {
      healthy = RegrantLocked(bg_client_.get(), &err);
      if (healthy) {
        last_ok_ns = MonotonicNanos();
        TRPC_LOG_INFO("etcd registry: new lease {} for {} keys", lease_, keys_.size());
      } else {
        TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd registry: re-registering: {}",
                          EscapeBytes(err));
      }
      continue;
    }
    const int64_t id = lease_;
    LeaseKeepAliveRequest req;
    req.set_id(id);
    KeepAliveStreamItem rsp;
    lock.unlock();
    // One request body, one answer: the gateway's stream ends with the request (checked against
    // etcd 3.4).
    const EtcdClient::Result r = bg_client_->Call("/v3/lease/keepalive", req, &rsp, &err);
    lock.lock();
    if (stopping_) break;
    if (id != lease_) continue;  // a Register granted a new lease meanwhile
    const bool gone = (r == EtcdClient::Result::kOk && rsp.result().ttl() <= 0) ||
                      (r == EtcdClient::Result::kOk && rsp.has_error()) ||
                      (r == EtcdClient::Result::kEtcdError && IsLeaseNotFound(err));
    if (r == EtcdClient::Result::kOk && !gone) {
      last_ok_ns = MonotonicNanos();
      healthy = true;
      continue;
    }
    healthy = false;
    if (gone || MonotonicNanos() - last_ok_ns > int64_t{options_.ttl_s} * kNanosPerSecond) {
      TRPC_LOG_WARN("etcd registry: lease {} lost ({}); registering {} keys again", id,
                    gone ? "etcd forgot it" : "etcd unreachable for longer than the TTL",
                    keys_.size());
      lease_lost_ = true;
      wait = false;
    } else {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "etcd registry: keepalive: {}", EscapeBytes(err));
    }
  }
}

}  // namespace trpc::naming::etcd::detail
