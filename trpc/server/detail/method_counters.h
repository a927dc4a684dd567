#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/status.h"
#include "trpc/server/server_metrics.h"

namespace trpc::detail {

/// The error codes a method's counters keep apart (`code` label). Slot 0 is "func" (a handler's
/// own code), slot i+1 is kCountedRetCodes[i], the last slot is "other".
inline constexpr std::array<int32_t, 24> kCountedRetCodes = {
    kServerDecodeErr,          kServerEncodeErr,  kServerNoServiceErr, kServerNoFuncErr,
    kServerTimeoutErr,         kServerOverloadErr, kServerLimitedErr,  kServerFullLinkTimeoutErr,
    kServerSystemErr,          kServerAuthErr,    kServerValidateErr,  kClientInvokeTimeoutErr,
    kClientFullLinkTimeoutErr, kClientConnectErr, kClientEncodeErr,    kClientDecodeErr,
    kClientLimitedErr,         kClientOverloadErr, kClientRouterErr,   kClientNetworkErr,
    kClientValidateErr,        kClientCanceledErr, kClientReadFrameErr, kUnknownErr};
inline constexpr size_t kErrorSlots = kCountedRetCodes.size() + 2;

/// The `code` label of error slot `slot`.
std::string ErrorSlotName(size_t slot);

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
  std::array<std::atomic<uint64_t>, kLatencyBuckets> latency_buckets{};  // non-cumulative
  std::atomic<uint64_t> latency_sum_ns{0};
  std::array<std::atomic<uint64_t>, kErrorSlots> errors{};

  /// Counts one reply: its latency (ns) and, if it is an error, its code.
  void Record(int64_t latency_ns, int32_t ret, int32_t func_ret) {
    size_t b = 0;
    while (b < kLatencyBucketBoundsNs.size() && latency_ns > kLatencyBucketBoundsNs[b]) ++b;
    latency_buckets[b].fetch_add(1, std::memory_order_relaxed);
    latency_sum_ns.fetch_add(latency_ns > 0 ? static_cast<uint64_t>(latency_ns) : 0,
                             std::memory_order_relaxed);
    if (ret != 0 || func_ret != 0) [[unlikely]] {
      errors[ErrorSlot(ret)].fetch_add(1, std::memory_order_relaxed);
    }
  }

  /// Adds this reactor's counts to `out`, and its error counts to `error_counts` (by slot), with
  /// relaxed loads (see above). FinishErrors() then names the non-zero slots in `out`.
  void AddTo(MethodMetrics* out, std::array<uint64_t, kErrorSlots>* error_counts) const;
  static void FinishErrors(const std::array<uint64_t, kErrorSlots>& error_counts,
                           MethodMetrics* out);

  static size_t ErrorSlot(int32_t ret);
};

}  // namespace trpc::detail
