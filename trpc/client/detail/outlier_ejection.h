#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "trpc/base/clock.h"
#include "trpc/client/client_config.h"
#include "trpc/client/detail/backend.h"
#include "trpc/client/detail/endpoint_set.h"

namespace trpc::detail {

/// Outlier ejection for one client service (`outlier_ejection` in its config): an endpoint
/// that fails `consecutive_failures` attempts in a row (connect failure, lost connection, a
/// server system error, a timeout) is left out of the choice for base_ejection_time, doubled at
/// each ejection in a row up to max_ejection_time, while at most max_ejection_percent of the
/// endpoints (at least one) are out. A success after the ejection ended resets the doubling.
///
/// Thread contract: OnResult from any thread. The per-endpoint figures are relaxed atomics
/// (steering figures); the share check and the ejection itself happen under one mutex, or
/// reactors failing at once would all eject.
class OutlierEjection {
 public:
  using Clock = int64_t (*)();
  /// `peers` is the set whose share max_ejection_percent bounds; `clock` is replaced in tests.
  OutlierEjection(const OutlierEjectionConfig& config, std::string client_name,
                  const EndpointSet* peers, Clock clock = &MonotonicNanos);

  bool enabled() const { return config_.consecutive_failures != 0; }
  /// Every ejection is also counted here (relaxed; must outlive this). Before the first result.
  void CountInto(std::atomic<uint64_t>* ejections) { ejections_ = ejections; }
  /// An attempt on `b` ended with framework code `ret` (0 for success). `now` is the clock's
  /// reading when the caller has one, else 0 (read here only when needed).
  void OnResult(Backend& b, int ret, int64_t now);

  /// The failures that say something about the endpoint itself.
  static bool IsEndpointFailure(int ret);

 private:
  void MaybeEject(Backend& b, int64_t now);

  const OutlierEjectionConfig config_;
  const std::string client_name_;
  const EndpointSet* const peers_;
  const Clock clock_;
  std::atomic<uint64_t>* ejections_ = nullptr;
  std::mutex mu_;  // one ejection decision at a time
};

}  // namespace trpc::detail
