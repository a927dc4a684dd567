#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trpc/server/detail/method_counters.h"
#include "trpc/server/rpc_method_handler.h"
#include "trpc/server/server_metrics.h"
#include "trpc/server/service.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// A snapshot of one listening service's counters.
struct ServiceStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  uint64_t protocol_errors = 0;
  uint64_t accept_backoffs = 0;  // accept() failed (e.g. out of fds): paused
  uint64_t requests = 0;
  uint64_t failed_requests = 0;
  uint64_t rejected_overload = 0;
  uint64_t rejected_parked_limit = 0;
  uint64_t rejected_deadline_passed = 0;
  uint64_t rejected_deadline_unmeetable = 0;
};

/// One listening service's statistics: its connections, its requests per reactor, its traffic
/// per reactor, and its per-method counters. Written by the reactors (relaxed atomics, each
/// reactor on its own cache lines); summed from any thread, even while every worker is busy (a
/// snapshot, not a barrier).
class ServiceCounters {
 public:
  // Request counters of one reactor, on its own cache line: the merge model's workers never
  // write a line another worker writes.
  struct alignas(64) Requests {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> failed_requests{0};
    // Requests refused without running their handler, by reason.
    std::atomic<uint64_t> rejected_overload{0};
    std::atomic<uint64_t> rejected_parked_limit{0};
    std::atomic<uint64_t> rejected_deadline_passed{0};
    std::atomic<uint64_t> rejected_deadline_unmeetable{0};
  };

  /// Counts for `service`'s methods (Service::ForEachMethod) on `reactors` reactors.
  ServiceCounters(const Service& service, size_t reactors);

  Requests& requests(size_t reactor) { return requests_[reactor]; }
  /// Connections add their bytes here (ConnectionOptions::traffic).
  TrafficCounters* traffic(size_t reactor) { return &traffic_[reactor]; }
  /// The counters of `method` (null or not ours: "unknown") on reactor `reactor`. They live as
  /// long as the process: a reply sent after a stop gave up waiting still records.
  MethodCounters* MethodOf(size_t reactor, const RpcMethodHandler* method) const {
    uint32_t id = method != nullptr ? method->id() - first_handler_id_ : UINT32_MAX;
    size_t slot = id < slot_of_handler_.size() ? slot_of_handler_[id] : 0;
    return &method_counters_[reactor * method_names_.size() + slot];
  }

  // Written by the accepting thread or on close; rare, so shared.
  void CountAccepted() { connections_accepted_.fetch_add(1, std::memory_order_relaxed); }
  void CountRefused() { connections_refused_.fetch_add(1, std::memory_order_relaxed); }
  void CountProtocolError() { protocol_errors_.fetch_add(1, std::memory_order_relaxed); }

  /// The sums (all but accept_backoffs, which the acceptor counts).
  ServiceStats Sum() const;
  /// Adds the traffic and the per-method counters to `out`.
  void CollectTraffic(ServiceMetrics* out) const;

 private:
  std::vector<Requests> requests_;
  std::vector<TrafficCounters> traffic_;
  // Per-method statistics. Slot 0 is "unknown" (no method matched); the others are the
  // service's methods, found from a handler by its id: the id minus the smallest id among them
  // indexes slot_of_handler_ (0 where no method has that id). method_counters_ holds
  // reactors x method_names_.size() entries, reactor-major.
  std::vector<std::string> method_names_;
  uint32_t first_handler_id_ = 0;
  std::vector<uint32_t> slot_of_handler_;
  MethodCounters* method_counters_ = nullptr;
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<uint64_t> connections_refused_{0};
  std::atomic<uint64_t> protocol_errors_{0};
};

}  // namespace trpc::detail
