#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trpc/client/client_context.h"
#include "trpc/client/detail/backend.h"
#include "trpc/naming/load_balancer.h"

namespace trpc {
class ThreadModel;
}

namespace trpc::detail {

/// An endpoint list and the picker over it. Immutable once published.
struct BackendSet {
  std::vector<BackendPtr> backends;
  std::unique_ptr<Picker> picker;  // null when the list is empty
  bool track_stats = false;        // the picker reads EndpointStats
};

/// Chooses the endpoint for one attempt from `set` (not empty): the picker's choice, skipping
/// ejected endpoints and those in `tried` (null: none) while the picker offers alternatives; an
/// ejected or tried endpoint when nothing else is left, rather than failing the call.
BackendPtr ChooseBackend(const BackendSet& set, const ClientContext& ctx,
                         const std::vector<BackendPtr>* tried, int64_t now);

/// The endpoints one client service calls, as its selector lists them: replaced whole on each
/// new list, keeping the Backend (connections, figures) of every endpoint that stays.
///
/// Thread contract: Update from the selector's thread (serialized by a mutex); Current from any
/// thread. Readers on one of the model's reactor threads read that reactor's copy without any
/// lock or atomic (the common case: a handler's downstream call); the copy is refreshed by a
/// task posted to the reactor after each update, so it lags by at most one loop iteration.
/// Other threads take a reference under `read_mu_`, held only for the count's increment. A
/// plain mutex rather than std::atomic<std::shared_ptr>: libstdc++ implements that with a lock
/// bit too, whose unlocked read ThreadSanitizer reports as a race.
class EndpointSet {
 public:
  /// `client_name` names the service in logs; `conns_per_backend` sizes each new Backend's
  /// connection slots.
  EndpointSet(ThreadModel* model, std::string client_name, PickerMaker make_picker,
              uint32_t conns_per_backend);

  /// The selector's new list.
  void Update(const std::vector<Endpoint>& list);
  /// The set a call made on this thread chooses from: the reactor's copy on one of the model's
  /// reactor threads, else the latest (then `*hold` keeps it alive).
  const BackendSet* Current(std::shared_ptr<const BackendSet>* hold) const;
  /// The latest set, from any thread.
  std::shared_ptr<const BackendSet> Latest() const {
    std::lock_guard lock(read_mu_);
    return set_;
  }

  /// Stops the reactor copies from being refreshed; returns every backend still alive (in a
  /// set or held by a call), for closing their connections.
  std::vector<BackendPtr> Stop();
  /// On reactor `index`'s thread, after Stop(): drops that reactor's copy.
  void DropCopyOnLoop(size_t index) { copies_[index].set.reset(); }
  /// After every DropCopyOnLoop: the set becomes empty.
  void Clear() { Store(std::make_shared<const BackendSet>()); }

 private:
  void Store(std::shared_ptr<const BackendSet> next);

  ThreadModel* const model_;
  const std::string client_name_;
  const PickerMaker make_picker_;
  const uint32_t conns_per_backend_;
  mutable std::mutex read_mu_;
  std::shared_ptr<const BackendSet> set_;  // under read_mu_
  // Each reactor's copy of set_: touched only on that reactor's thread.
  struct alignas(64) Copy {
    std::shared_ptr<const BackendSet> set;
  };
  std::vector<Copy> copies_;
  std::mutex update_mu_;  // serializes Update and Stop; guards all_backends_, stopped_
  std::vector<std::weak_ptr<Backend>> all_backends_;  // every backend still alive, for Stop
  // Written under update_mu_, read by the copies' refresh tasks (acquire): once set, a task
  // still queued does not bring a copy back after DropCopyOnLoop.
  std::atomic<bool> stopped_{false};
};

}  // namespace trpc::detail
