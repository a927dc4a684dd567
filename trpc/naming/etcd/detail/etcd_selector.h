#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trpc/client/selector.h"
#include "trpc/naming/etcd/detail/etcd_client.h"

namespace trpc::naming::etcd::detail {

/// Turns one key's value ({"host","port","weight","meta"}) into an Endpoint; false for a value
/// that is not one (the caller skips it).
bool ParseInstanceValue(std::string_view value, Endpoint* out, std::string* err);

/// The "etcd" selector: a subscription follows the keys under `<prefix>/<namespace>/<target>/`
/// (etcd_naming.h) with a read, then a watch from the read's revision + 1.
///
/// Thread contract: as Selector. Init before Subscribe; the selector keeps no per-subscription
/// state, so Subscribe runs concurrently without locking.
class EtcdSelector final : public Selector {
 public:
  std::string_view Name() const override { return "etcd"; }
  bool Init(const PluginOptions& options, std::string* err) override;
  std::unique_ptr<SelectorSubscription> Subscribe(const SelectorTarget& target,
                                                  uint32_t first_wait_ms, OnUpdate on_update,
                                                  std::string* err) override;

 private:
  EtcdOptions options_;
  bool initialized_ = false;
};

/// One followed service: a thread that reads the prefix, delivers the list, then watches from
/// the read's revision + 1, applying events and delivering the whole list after each watch
/// response that changed it. When the stream breaks it keeps the last list (delivers nothing),
/// reconnects with jittered exponential back-off (100 ms .. backoff_max) and resumes the watch
/// after the last revision seen; a watch cancelled by compaction makes it read again.
///
/// Thread contract: constructed and destroyed by one owner; the callback runs only on the
/// subscription's thread. The destructor cancels the thread's etcd calls (its own EtcdClient)
/// and joins it, so the callback never runs once it has returned; it must not be called from
/// inside the callback. `mu_` guards stop_ and the first-list flag (the thread's state is its
/// own).
class EtcdSubscription final : public SelectorSubscription {
 public:
  EtcdSubscription(const EtcdOptions& options, std::string key_prefix,
                   Selector::OnUpdate on_update);
  ~EtcdSubscription() override;

  /// Waits up to `ms` for the first list; true when it came.
  bool WaitFirst(uint32_t ms);

 private:
  void Loop();
  // Sleeps up to `ms` (false when stopping meanwhile).
  bool SleepFor(uint32_t ms);
  bool Stopping();
  void Deliver(const std::map<std::string, Endpoint>& eps);
  // A key's new value: an upsert, or a removal when the value cannot be read.
  void Apply(const std::string& key, const std::string& value,
             std::map<std::string, Endpoint>* eps);

  const EtcdOptions options_;
  const std::string prefix_;
  const Selector::OnUpdate on_update_;
  EtcdClient client_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool delivered_ = false;  // the first list has been delivered

  std::vector<Endpoint> last_;  // the thread's: the list last delivered
  std::thread thread_;
};

}  // namespace trpc::naming::etcd::detail
