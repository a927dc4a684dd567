#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "trpc/runtime/detail/thread_model.h"
#include "trpc/server/detail/in_flight.h"
#include "trpc/server/detail/server_call.h"
#include "trpc/server/detail/service_listener.h"

namespace trpc::detail {

/// The stop of one service within a time limit (server.stop_max_wait_time): closes its
/// connections gracefully, and at the limit answers the calls still in handlers with
/// kServerSystemErr, taking over the workers stuck in one (the contract is in
/// detail/in_flight.h).
///
/// Thread contract: Run from the control thread, after the listener stopped accepting.
class BoundedStop {
 public:
  /// Stops `listener`'s connections; the calls it answers are those `calls_of` runs.
  BoundedStop(const std::string& service_name, ThreadModel* model, ServiceListener* listener,
              const CallRunner* calls_of)
      : service_name_(service_name), model_(model), listener_(listener), calls_of_(calls_of) {}

  /// Closes every connection gracefully: no more requests are read, queued replies are
  /// written. At `deadline_ns` each worker answers its connections' calls still in handlers
  /// ("server stopped before the handler finished") and closes them. A merge worker that does
  /// not come back within a few ms because it is stuck in a handler is taken over: this thread
  /// answers its calls, writes what its connections have queued and shuts their sockets down,
  /// while the worker waits. False when some worker did not come back: its connections (and
  /// what they call) must then outlive the process's stop, and its thread may never be
  /// joinable.
  bool Run(int64_t deadline_ns);

  /// Calls the stop answered at its deadline, and workers it took over (or found stuck).
  uint64_t calls_cut() const { return calls_cut_.load(std::memory_order_relaxed); }
  uint32_t workers_stuck() const { return workers_stuck_; }

 private:
  // The limit, on reactor i's loop: answers the calls still in handlers, closes.
  void CutAndClose(size_t i);
  // The same for a reactor whose loop did not come back (control thread); false if it could
  // not be taken over by `until_ns` (the worker is not in a handler).
  bool TakeOver(size_t i, int64_t until_ns);
  // Answers this service's calls in `calls` (and, in a takeover, the one in its slot).
  void AnswerCalls(InFlightCalls* calls, bool takeover);

  const std::string& service_name_;
  ThreadModel* model_;
  ServiceListener* listener_;
  const CallRunner* calls_of_;
  std::atomic<uint64_t> calls_cut_{0};
  uint32_t workers_stuck_ = 0;
};

}  // namespace trpc::detail
