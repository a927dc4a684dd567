#include "trpc/client/detail/outlier_ejection.h"

#include <algorithm>

#include "trpc/base/logging.h"

namespace trpc::detail {

OutlierEjection::OutlierEjection(const OutlierEjectionConfig& config, std::string client_name,
                                 const EndpointSet* peers, Clock clock)
    : config_(config), client_name_(std::move(client_name)), peers_(peers), clock_(clock) {}

bool OutlierEjection::IsEndpointFailure(int ret) {
  // It could not be reached, dropped the connection, failed inside, or did not answer in time.
  return ret == kClientConnectErr || ret == kClientNetworkErr || ret == kServerSystemErr ||
         ret == kClientInvokeTimeoutErr;
}

void OutlierEjection::OnResult(Backend& b, int ret, int64_t now) {
  // A hedge we gave up on says nothing of the endpoint.
  if (!enabled() || ret == kClientCanceledErr) return;
  if (IsEndpointFailure(ret)) {
    if (b.consecutive_failures.fetch_add(1, std::memory_order_relaxed) + 1 >=
        config_.consecutive_failures) {
      MaybeEject(b, now != 0 ? now : clock_());
    }
    return;
  }
  // Healthy: only write when there is something to reset (no shared-line writes per call).
  if (b.consecutive_failures.load(std::memory_order_relaxed) != 0) {
    b.consecutive_failures.store(0, std::memory_order_relaxed);
  }
  if (b.ejections.load(std::memory_order_relaxed) != 0 && !b.Ejected(clock_())) {
    b.ejections.store(0, std::memory_order_relaxed);
  }
}

void OutlierEjection::MaybeEject(Backend& b, int64_t now) {
  if (b.Ejected(now)) return;  // out already
  std::lock_guard lock(mu_);
  if (b.Ejected(now)) return;
  std::shared_ptr<const BackendSet> set = peers_->Latest();
  const size_t n = set->backends.size();
  size_t out = 0;
  for (const auto& other : set->backends) {
    if (other->Ejected(now)) ++out;
  }
  const size_t allowed = std::max<size_t>(1, n * config_.max_ejection_percent / 100);
  if (n <= 1 || out >= allowed) return;
  uint32_t k = std::min<uint32_t>(b.ejections.fetch_add(1, std::memory_order_relaxed), 20);
  int64_t ms =
      std::min<int64_t>(int64_t{config_.base_ejection_time} << k, config_.max_ejection_time);
  b.ejected_until_ns.store(now + ms * kNanosPerMilli, std::memory_order_relaxed);
  b.consecutive_failures.store(0, std::memory_order_relaxed);
  if (ejections_ != nullptr) ejections_->fetch_add(1, std::memory_order_relaxed);
  TRPC_LOG_WARN("client {}: endpoint {} ejected for {} ms after {} failures in a row", client_name_,
                b.name, ms, config_.consecutive_failures);
}

}  // namespace trpc::detail
