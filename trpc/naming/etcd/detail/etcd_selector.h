#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trpc/naming/etcd/detail/etcd_client.h"
#include "trpc/naming/selector.h"

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

/// One followed service, on two threads of its own. The watch thread reads the prefix, then
/// watches from the read's revision + 1, applying each event to the endpoint map. When the
/// stream breaks it keeps the map (delivers nothing) and resumes the watch after the last
/// revision seen; a watch cancelled by compaction makes it read again. Every attempt after the
/// first waits a step of jittered exponential back-off (Backoff: 100 ms .. backoff_max), which
/// starts over only once etcd has been seen to work: an event batch or a progress report came,
/// or the watch stayed up at least backoff_max. A registry that breaks every watch at once
/// (compacted, "created" then closed, garbage) so costs one read or watch per step.
///
/// The delivery thread hands the map to the callback, as a list, at most once per
/// update_interval: the first change after a quiet spell goes at once, the changes of a burst
/// are coalesced into the latest list. An event flood so costs the proxy (and its log) a few
/// updates a second, not one per event; a list equal to the last one delivered is dropped.
///
/// Thread contract: constructed and destroyed by one owner; the callback runs only on the
/// delivery thread. The destructor cancels the watch thread's etcd calls (its own EtcdClient)
/// and joins both threads, so the callback never runs once it has returned; it must not be
/// called from inside the callback. `mu_` guards the state below it.
class EtcdSubscription final : public SelectorSubscription {
 public:
  EtcdSubscription(const EtcdOptions& options, std::string key_prefix,
                   Selector::OnUpdate on_update);
  ~EtcdSubscription() override;

  /// Waits up to `ms` for the first list; true when it came.
  bool WaitFirst(uint32_t ms);

 private:
  void WatchLoop();
  void DeliverLoop();
  // Sleeps up to `ms` (false when stopping meanwhile).
  bool SleepFor(uint32_t ms);
  bool Stopping();
  // Under mu_: a key's new value (an upsert, or a removal when the value cannot be read).
  // True when the map changed.
  bool ApplyLocked(const std::string& key, const std::string& value);
  // Under mu_: the map changed; wakes the delivery thread.
  void MarkChangedLocked();

  const EtcdOptions options_;
  const std::string prefix_;
  const Selector::OnUpdate on_update_;
  EtcdClient client_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool delivered_ = false;               // the first list has been delivered
  bool changed_ = false;                 // eps_ changed since the delivery thread last read it
  std::map<std::string, Endpoint> eps_;  // by key: the registry's view

  std::vector<Endpoint> last_;  // the delivery thread's: the list last delivered
  std::thread watch_thread_;
  std::thread deliver_thread_;
};

}  // namespace trpc::naming::etcd::detail
