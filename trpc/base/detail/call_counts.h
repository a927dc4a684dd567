#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trpc/base/latency_buckets.h"
#include "trpc/base/status.h"

namespace trpc::detail {

/// The error codes that per-method counters keep apart (the `code` label), server and client.
/// Slot 0 is "func" (a handler's own code), slot i+1 is kCountedRetCodes[i], the last slot is
/// "other".
inline constexpr std::array<int32_t, 24> kCountedRetCodes = {
    kServerDecodeErr,          kServerEncodeErr,   kServerNoServiceErr, kServerNoFuncErr,
    kServerTimeoutErr,         kServerOverloadErr, kServerLimitedErr,   kServerFullLinkTimeoutErr,
    kServerSystemErr,          kServerAuthErr,     kServerValidateErr,  kClientInvokeTimeoutErr,
    kClientFullLinkTimeoutErr, kClientConnectErr,  kClientEncodeErr,    kClientDecodeErr,
    kClientLimitedErr,         kClientOverloadErr, kClientRouterErr,    kClientNetworkErr,
    kClientValidateErr,        kClientCanceledErr, kClientReadFrameErr, kUnknownErr};
inline constexpr size_t kErrorSlots = kCountedRetCodes.size() + 2;

/// The slot of an error with framework code `ret` (0: a handler's own code).
size_t ErrorSlotOf(int32_t ret);
/// The `code` label of error slot `slot`.
std::string ErrorSlotName(size_t slot);
/// The non-zero slots of `counts`, named, in slot order.
std::vector<std::pair<std::string, uint64_t>> NamedErrors(
    const std::array<uint64_t, kErrorSlots>& counts);

/// One shard of a latency histogram with the fixed buckets kLatencyBucketBoundsNs (its count is
/// the number of values recorded) and the sum of the values.
///
/// Memory ordering: relaxed fetch_adds and relaxed loads. A reader's snapshot orders nothing: it
/// may see a value in its bucket and not yet in the sum. Every count only grows.
struct LatencyCounts {
  std::array<std::atomic<uint64_t>, kLatencyBuckets> buckets{};  // non-cumulative
  std::atomic<uint64_t> sum_ns{0};

  void Record(int64_t ns) {
    size_t b = 0;
    while (b < kLatencyBucketBoundsNs.size() && ns > kLatencyBucketBoundsNs[b]) ++b;
    buckets[b].fetch_add(1, std::memory_order_relaxed);
    sum_ns.fetch_add(ns > 0 ? static_cast<uint64_t>(ns) : 0, std::memory_order_relaxed);
  }
  /// Adds this shard to `out` and `*sum_ns_out`; returns its count.
  uint64_t AddTo(std::array<uint64_t, kLatencyBuckets>* out, uint64_t* sum_ns_out) const;
};

/// Latency histograms by a protocol's own status code (ServerCodec/ClientCodec::WireStatus:
/// gRPC's grpc-status), each made on the first value with its status and kept for the life of
/// this object. For the protocol's standard metric names (gRPC's grpc.server.call.duration).
///
/// Memory ordering: a histogram is published by a compare-exchange (acq_rel) of its slot and
/// found by acquire loads; its counts are LatencyCounts' relaxed atomics.
class LatencyByStatus {
 public:
  LatencyByStatus() = default;
  ~LatencyByStatus();
  LatencyByStatus(const LatencyByStatus&) = delete;
  LatencyByStatus& operator=(const LatencyByStatus&) = delete;

  /// Records `ns` under `status`; a status outside [0, kWireStatuses) is not recorded.
  void Record(int status, int64_t ns) {
    if (status < 0 || static_cast<size_t>(status) >= kWireStatuses) return;
    LatencyCounts* h = slots_[status].load(std::memory_order_acquire);
    if (h == nullptr) [[unlikely]]
      h = Make(status);
    h->Record(ns);
  }
  /// Adds every status's numbers to `out` (index = status).
  void AddTo(std::array<LatencySnapshot, kWireStatuses>* out) const;
  /// The statuses with a count, from `sums` (as filled by AddTo).
  static LatencyByWireStatus Seen(const std::array<LatencySnapshot, kWireStatuses>& sums);

 private:
  LatencyCounts* Make(int status);
  std::array<std::atomic<LatencyCounts*>, kWireStatuses> slots_{};
};

}  // namespace trpc::detail
