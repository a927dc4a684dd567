#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "trpc/naming/etcd/detail/etcd_client.h"
#include "trpc/naming/registry.h"

namespace trpc::naming::etcd::detail {

/// The "etcd" registry. Each registered instance is the key `<prefix>/<namespace>/<service>/
/// <ip:port>` with the JSON value {"host","port","weight","meta"} (etcd_naming.h), attached to
/// one lease per registry (granted at the first Register, `ttl` seconds). One background thread
/// keeps the lease alive every ttl/3; when the lease is found gone (etcd forgot it, or etcd was
/// unreachable for longer than the TTL) it grants a new one and puts every registered key again.
/// Deregister deletes the key at once; Stop revokes the lease, so whatever is left goes at once.
///
/// Thread contract: as Registry. `mu_` guards the state below it and serializes every change
/// made to etcd (grant, put, delete, revoke), so the thread's re-put never races a Deregister;
/// the keepalive call itself runs without it. Stop cancels the thread's calls first (its own
/// EtcdClient), so it never waits for a call to time out.
class EtcdRegistry final : public Registry {
 public:
  EtcdRegistry();
  ~EtcdRegistry() override;

  std::string_view Name() const override { return "etcd"; }
  bool Init(const PluginOptions& options, std::string* err) override;
  bool Register(const RegistryInstance& inst, std::string* err) override;
  bool Deregister(const RegistryInstance& inst, std::string* err) override;
  void Stop() override;

  /// Test hook: the keepalive thread stops and the lease is left to expire, as when the
  /// process dies (Stop then revokes nothing).
  void AbandonForTest();
  /// The current lease (0 = none), for tests.
  int64_t lease_id() const;

  /// The key and value `inst` is registered under. False with `*err` for an instance that
  /// cannot be one (wildcard address, empty or '/' in namespace or service).
  static bool KeyOf(const EtcdOptions& options, const RegistryInstance& inst, std::string* key,
                    std::string* value, std::string* err);

 private:
  void KeepAliveLoop();
  // Under mu_: a new lease and every key put again with it, through `client`.
  bool RegrantLocked(EtcdClient* client, std::string* err);
  bool PutLocked(EtcdClient* client, const std::string& key, const std::string& value,
                 EtcdClient::Result* result, std::string* err);

  EtcdOptions options_;
  std::unique_ptr<EtcdClient> client_;     // Register, Deregister, Stop
  std::unique_ptr<EtcdClient> bg_client_;  // the keepalive thread's; cancelled by Stop

  mutable std::mutex mu_;
  std::condition_variable cv_;  // wakes the thread for Stop
  int64_t lease_ = 0;           // 0 = none granted yet
  bool lease_lost_ = false;     // the thread must grant a new lease and put the keys again
  std::map<std::string, std::string> keys_;  // registered key -> value
  bool stopping_ = false;
  bool abandoned_ = false;
  std::thread thread_;  // started by the first Register; joined by Stop
};

}  // namespace trpc::naming::etcd::detail
