#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trpc/base/latency_buckets.h"

namespace trpc {

/// One method of one callee, as the process's clients counted it (docs/observability.md).
struct ClientMethodMetrics {
  /// The function called ("/package.Service/Method", or what the call named); "other" for the
  /// methods past the cap of distinct names per callee.
  std::string name;
  uint64_t calls = 0;      // calls ended (= the histogram's count)
  uint64_t in_flight = 0;  // calls begun and not ended yet
  /// Calls that ended with an error, by code: the framework ret ("101", "111", ...), "func" for
  /// the callee's own code, "other" for a ret without a slot of its own. Only codes seen.
  std::vector<std::pair<std::string, uint64_t>> errors;
  /// Time from the call to its end (every attempt and back-off included): non-cumulative
  /// counts per bucket of kLatencyBucketBoundsNs, the last one for what is above the last bound.
  std::array<uint64_t, kLatencyBuckets> latency_buckets{};
  uint64_t latency_sum_ns = 0;
  uint64_t attempts = 0;           // requests sent (first attempts, retries and hedges)
  uint64_t retries = 0;            // attempts sent after a failed one
  uint64_t hedges = 0;             // attempts sent beside one still in flight
  uint64_t budget_refusals = 0;    // retries and hedges the retry budget did not allow
  uint64_t throttle_refusals = 0;  // calls and extra attempts the overload throttle refused
  /// Protocols with a status of their own (gRPC): the calls' and the attempts' latencies by
  /// that status (the attempts' from sending to the end of each). Empty for the others.
  LatencyByWireStatus call_by_wire_status;
  LatencyByWireStatus attempt_by_wire_status;
};

/// One callee: a `client.service[]` name. Every proxy of that name counts into it.
struct ClientServiceMetrics {
  std::string name;      // the callee ("other" past the cap of distinct callees)
  std::string protocol;  // of its first proxy
  /// Its first proxy's target as a URI: "dns:///host:port" for the dns and direct selectors,
  /// "<selector>:///<target>" for the others (gRPC's grpc.target).
  std::string target;
  int64_t connections = 0;  // open now (connecting included)
  uint64_t ejections = 0;   // endpoints taken out of the rotation by outlier ejection
  std::vector<ClientMethodMetrics> methods;
};

/// The counts of every callee the process has called, in name order. Counters live as long as
/// the process (a proxy stopped and made again counts on). One-way calls and streams are not
/// counted; calls a client filter rejected before they reached the proxy are not either.
std::vector<ClientServiceMetrics> CollectClientMetrics();

}  // namespace trpc
