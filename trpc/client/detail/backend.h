#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/naming/load_balancer.h"
#include "trpc/naming/selector.h"
#include "trpc/transport/client_connection.h"
#include "trpc/transport/client_connection_pool.h"

namespace trpc {
class ThreadModel;
}

namespace trpc::detail {

/// One endpoint a client service calls: its connections and its live figures. Shared by the
/// endpoint sets that list it and by the calls made to it; when the last of them lets go (the
/// endpoint left and its calls ended), its connections are closed on their reactors.
///
/// Thread contract: `conns[i]` and `pools[i]` are touched only on reactor i's thread (by
/// CallSender); `weight` only under EndpointSet's update lock; the rest are relaxed atomics
/// (steering figures: a lost or late update changes a choice, never correctness).
struct Backend {
  /// `model` may be null (tests): then the backend has no per-reactor connections.
  Backend(const Endpoint& e, ThreadModel* model, uint32_t conns_per_reactor);
  ~Backend();
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  const NetAddress addr;
  const std::string name;  // "ip:port": the request's authority, the set's key
  uint32_t weight;
  ThreadModel* const model;
  EndpointStats stats;
  // Outlier ejection (OutlierEjection reads and writes these).
  std::atomic<uint32_t> consecutive_failures{0};
  std::atomic<int64_t> ejected_until_ns{0};
  std::atomic<uint32_t> ejections{0};  // in a row: the next ejection lasts 2^ejections longer
  // Round-robin over the multiplexed connections of one reactor.
  std::atomic<uint32_t> next_slot{0};
  // conns[reactor][k] (multiplexed protocols), pools[reactor] (protocols that answer in order).
  std::vector<std::vector<ClientConnectionPtr>> conns;
  std::vector<std::unique_ptr<ClientConnectionPool>> pools;

  bool Ejected(int64_t now) const { return ejected_until_ns.load(std::memory_order_relaxed) > now; }
};

using BackendPtr = std::shared_ptr<Backend>;

}  // namespace trpc::detail
