#include "trpc/server/detail/method_counters.h"

namespace trpc::detail {

void MethodCounters::AddTo(MethodMetrics* out,
                           std::array<uint64_t, kErrorSlots>* error_counts) const {
  out->requests += latency.AddTo(&out->latency_buckets, &out->latency_sum_ns);
  for (size_t slot = 0; slot < kErrorSlots; ++slot) {
    (*error_counts)[slot] += errors[slot].load(std::memory_order_relaxed);
  }
}

}  // namespace trpc::detail
