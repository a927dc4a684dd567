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
        subscribers_.emplace_back(next_id_, std::move(cb));
        return next_id_++;
      }
    }
    cb(why_);  // (why_ never changes once cancelled_ is set)
    return 0;
  }
  void Unsubscribe(uint64_t id) {
    if (id == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = subscribers_.begin(); it != subscribers_.end(); ++it) {
      if (it->first == id) {
        subscribers_.erase(it);
        return;
      }
    }
  }
  /// Fires once (later calls are ignored), with `why`.
  void Cancel(const Status& why) {
    std::vector<std::pair<uint64_t, Callback>> run;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (cancelled_) return;
      cancelled_ = true;
      fired_.store(true, std::memory_order_release);
      why_ = why;
      run.swap(subscribers_);
    }
    for (auto& [id, cb] : run) cb(why);
  }
  /// Whether it has fired (no lock: a polling handler may ask per message).
  bool cancelled() const { return fired_.load(std::memory_order_acquire); }

 private:
  mutable std::mutex mu_;
  bool cancelled_ = false;
  std::atomic<bool> fired_{false};
  Status why_;
  uint64_t next_id_ = 1;
  std::vector<std::pair<uint64_t, Callback>> subscribers_;
};

}  // namespace trpc
