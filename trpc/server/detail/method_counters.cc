#include "trpc/server/detail/method_counters.h"

namespace trpc::detail {

size_t MethodCounters::ErrorSlot(int32_t ret) {
  if (ret == 0) return 0;  // a handler's own code
  for (size_t i = 0; i < kCountedRetCodes.size(); ++i) {
    if (kCountedRetCodes[i] == ret) return i + 1;
  }
  return kErrorSlots - 1;
}

std::string ErrorSlotName(size_t slot) {
  if (slot == 0) return "func";
  if (slot <= kCountedRetCodes.size()) return std::to_string(kCountedRetCodes[slot - 1]);
  return "other";
}

void MethodCounters::AddTo(MethodMetrics* out,
                           std::array<uint64_t, kErrorSlots>* error_counts) const {
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    uint64_t n = latency_buckets[b].load(std::memory_order_relaxed);
    out->latency_buckets[b] += n;
    out->requests += n;
  }
  out->latency_sum_ns += latency_sum_ns.load(std::memory_order_relaxed);
  for (size_t slot = 0; slot < kErrorSlots; ++slot) {
    (*error_counts)[slot] += errors[slot].load(std::memory_order_relaxed);
  }
}

void MethodCounters::FinishErrors(const std::array<uint64_t, kErrorSlots>& error_counts,
                                  MethodMetrics* out) {
  out->errors.clear();
  for (size_t slot = 0; slot < kErrorSlots; ++slot) {
    if (error_counts[slot] != 0) out->errors.emplace_back(ErrorSlotName(slot), error_counts[slot]);
  }
}

}  // namespace trpc::detail
