#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "trpc/base/status.h"

namespace trpc {

/// A one-shot cancellation that work done on behalf of something subscribes to: a server call's
/// context carries one (ServerContext::GetCancelSignal), and the client calls and streams made
/// with a context made from it (MakeClientContext) are cancelled when it fires.
///
/// Thread contract: any thread may Subscribe, Unsubscribe or Cancel. Callbacks run once, on the
/// thread that cancels, outside the lock; one subscribed after the cancel runs at once, on the
/// subscribing thread. A callback may still be running when Unsubscribe returns, so it must
/// hold (weakly) what it touches. Memory ordering: mu_ guards every field but fired_, so a
/// callback sees everything done before Cancel(); fired_ is also stored with release, under
/// mu_, so that cancelled() can read it without the lock (acquire).
class CancelSignal {
 public:
  using Callback = std::function<void(const Status&)>;

  /// Runs `cb` when the signal fires. Returns the id for Unsubscribe(), or 0 when it had fired
  /// already (then `cb` has run, here).
  uint64_t Subscribe(Callback cb) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!cancelled_) {
        uint32_t index;
        if (!free_.empty()) {
          index = free_.back();
          free_.pop_back();
        } else {
          index = static_cast<uint32_t>(slots_.size());
          slots_.emplace_back();
        }
        slots_[index].cb = std::move(cb);
        return (static_cast<uint64_t>(slots_[index].generation) << 32) | (index + 1);
      }
    }
    cb(why_);  // (why_ never changes once cancelled_ is set)
    return 0;
  }
  /// O(1): a signal shared by every call on a connection may hold many subscriptions.
  void Unsubscribe(uint64_t id) {
    if (id == 0) return;
    const uint32_t index = static_cast<uint32_t>(id) - 1;
    const uint32_t generation = static_cast<uint32_t>(id >> 32);
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= slots_.size() || slots_[index].generation != generation || !slots_[index].cb) {
      return;  // fired (the slots are gone then) or unsubscribed already
    }
    slots_[index].cb = nullptr;
    ++slots_[index].generation;  // (an old id can no longer name the slot's next tenant)
    free_.push_back(index);
  }
  /// Fires once (later calls are ignored), with `why`.
  void Cancel(const Status& why) {
    std::vector<Slot> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_) return;
      cancelled_ = true;
      fired_.store(true, std::memory_order_release);
      why_ = why;
      run.swap(slots_);
      free_.clear();
    }
    for (Slot& s : run) {
      if (s.cb) s.cb(why);
    }
  }
  /// Whether it has fired (no lock: a polling handler may ask per message).
  bool cancelled() const { return fired_.load(std::memory_order_acquire); }

 private:
  // A subscription's place; `cb` empty: free. Ids are (generation << 32) | (index + 1).
  struct Slot {
    uint32_t generation = 0;
    Callback cb;
  };
  mutable std::mutex mu_;
  bool cancelled_ = false;
  std::atomic<bool> fired_{false};
  Status why_;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_;
};

}  // namespace trpc
