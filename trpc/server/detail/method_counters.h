#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/detail/call_counts.h"
#include "trpc/server/server_metrics.h"

namespace trpc::detail {

/// The counters of one method on one reactor: a latency histogram with fixed buckets
/// (kLatencyBucketBoundsNs; its count is the method's request count) and errors by code. A
/// service keeps one per (reactor, method) — the reactor of the request's connection — each on
/// its own cache lines, so in the merge model a worker writes lines no other worker writes.
///
/// Memory ordering: every update is a relaxed fetch_add (a reply may be sent from any thread in
/// the fiber model, or from the thread a handler handed its context to); reads are relaxed
/// loads. A scrape is a snapshot, not a barrier: it orders nothing, and it may see a reply in
/// its latency bucket but not yet in the sum or in its error code. Every counter only grows,
/// and the histogram's count is the sum of its buckets, so within one scrape they agree.
struct alignas(64) MethodCounters {
  LatencyCounts latency;
  std::array<std::atomic<uint64_t>, kErrorSlots> errors{};
  std::atomic<uint64_t> started{0};  // requests routed to the method (replied or not yet)
  LatencyByStatus by_wire_status;    // protocols with a status of their own (gRPC) only

  /// Counts one request routed to the method.
  void Start() { started.fetch_add(1, std::memory_order_relaxed); }
  /// Counts one reply: its latency (ns) and, if it is an error, its code; and under the
  /// protocol's own status `wire_status` (ServerCodec::WireStatus; -1: none).
  void Record(int64_t latency_ns, int32_t ret, int32_t func_ret, int wire_status = -1) {
    latency.Record(latency_ns);
    if (ret != 0 || func_ret != 0) [[unlikely]] {
      errors[ErrorSlotOf(ret)].fetch_add(1, std::memory_order_relaxed);
    }
    if (wire_status >= 0) by_wire_status.Record(wire_status, latency_ns);
  }

  /// Adds this reactor's counts to `out`, its error counts to `error_counts` (by slot) and its
  /// wire-status histograms to `by_status`, with relaxed loads (see above). NamedErrors() and
  /// LatencyByStatus::Seen() then keep the non-zero ones.
  void AddTo(MethodMetrics* out, std::array<uint64_t, kErrorSlots>* error_counts,
             std::array<LatencySnapshot, kWireStatuses>* by_status) const;
};

}  // namespace trpc::detail
