#include "trpc/server/detail/method_counters.h"

namespace trpc::detail {

void MethodCounters::AddTo(MethodMetrics* out, std::array<uint64_t, kErrorSlots>* error_counts,
                           std::array<LatencySnapshot, kWireStatuses>* by_status) const {
  out->requests += latency.AddTo(&out->latency_buckets, &out->latency_sum_ns);
  out->started += started.load(std::memory_order_relaxed);
  by_wire_status.AddTo(by_status);
  for (size_t slot = 0; slot < kErrorSlots; ++slot) {
    (*error_counts)[slot] += errors[slot].load(std::memory_order_relaxed);
  }
}

}  // namespace trpc::detail
