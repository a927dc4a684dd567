#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/net_address.h"

namespace trpc {

/// Live figures of one endpoint that a balancer may read (p2c), kept by the service proxy for as
/// long as the endpoint is in its list (an endpoint that stays across list changes keeps them),
/// while the list's picker says it uses them (Picker::UsesEndpointStats).
///
/// Memory-ordering contract: every field is a relaxed atomic. The figures only steer choices;
/// nothing else is published through them, and a stale value costs at most one worse choice.
struct EndpointStats {
  std::atomic<int32_t> in_flight{0};        // calls sent and not yet answered
  std::atomic<int64_t> ewma_latency_ns{0};  // smoothed reply latency; 0 = no sample yet

  void OnStart() { in_flight.fetch_add(1, std::memory_order_relaxed); }
  /// A call that started with OnStart() ended after `latency_ns` (the latency of a failure
  /// counts too: a backend that fails slowly is slow).
  void OnEnd(int64_t latency_ns) {
    in_flight.fetch_sub(1, std::memory_order_relaxed);
    // EWMA with weight 1/8 on the new sample; a lost update between two racing writers costs
    // one sample, which is fine for a steering figure.
    int64_t old = ewma_latency_ns.load(std::memory_order_relaxed);
    int64_t next = old == 0 ? latency_ns : old + (latency_ns - old) / 8;
    ewma_latency_ns.store(next > 0 ? next : 1, std::memory_order_relaxed);
  }
};

/// One endpoint as a picker sees it.
struct BalancerEndpoint {
  NetAddress addr;
  std::string name;       // addr.ToString(): "ip:port" (the consistent-hash ring hashes it)
  uint32_t weight = 100;  // relative, >= 1
  EndpointStats* stats = nullptr;  // outlives every picker built over it; never null
};

/// What a call asks of the picker.
struct PickInput {
  /// consistent_hash: the call's key (ClientContext::SetHashKey); others ignore it.
  uint64_t hash_key = 0;
  bool has_hash_key = false;
  /// 0 for the first choice. When the proxy cannot use a choice (the endpoint is ejected, or a
  /// retry already tried it) it asks again with attempt 1, 2, ...: the picker then returns its
  /// next alternative (round robin: the next endpoint; consistent hash: the next distinct
  /// endpoint clockwise on the ring; p2c: another pair). Alternatives 0..n-1 need not all be
  /// distinct, but a picker should cover as many distinct endpoints as it cheaply can.
  uint32_t attempt = 0;
  /// With attempt > 0: the index the picker returned for attempt 0 of this choice.
  size_t first_index = 0;
};

/// Chooses an endpoint for a call from a fixed, non-empty endpoint list. Built for each new list
/// (off the call path, see LoadBalancerFactory) and then immutable apart from its own atomic
/// cursors.
///
/// Thread contract: Pick() is called from many threads at once; it must be lock-free, must not
/// allocate, and must return an index < the list's size.
class Picker {
 public:
  virtual ~Picker() = default;
  virtual size_t Pick(const PickInput& in) = 0;
  /// True when Pick reads the endpoints' EndpointStats: the proxy keeps them up to date only
  /// then (two atomic updates and a clock read per call that other pickers need not pay).
  virtual bool UsesEndpointStats() const { return false; }
};

/// Makes a picker over a non-empty endpoint list. The picker copies what it needs from the list.
using PickerMaker = std::function<std::unique_ptr<Picker>(const std::vector<BalancerEndpoint>&)>;

/// Load balancers by name (`client.service[].load_balance_name`). Built in: "round_robin" (the
/// default). The naming plug-ins add "weighted_round_robin", "consistent_hash" and "p2c"
/// (trpc/app/detail/naming_plugins.h). Thread-safe; register before the proxies that use a name
/// are made.
class LoadBalancerFactory {
 public:
  static void Register(std::string name, PickerMaker make);
  /// Null when no balancer of that name is registered.
  static PickerMaker Find(std::string_view name);
  static std::vector<std::string> Names();
};

/// The 64-bit hash ClientContext::SetHashKey(string) applies to a key (also used for the
/// consistent-hash ring's points, so that both sides spread alike).
uint64_t HashKey(std::string_view key);

}  // namespace trpc
