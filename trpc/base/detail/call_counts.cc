#include "trpc/base/detail/call_counts.h"

namespace trpc::detail {

size_t ErrorSlotOf(int32_t ret) {
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

std::vector<std::pair<std::string, uint64_t>> NamedErrors(
    const std::array<uint64_t, kErrorSlots>& counts) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (size_t slot = 0; slot < kErrorSlots; ++slot) {
    if (counts[slot] != 0) out.emplace_back(ErrorSlotName(slot), counts[slot]);
  }
  return out;
}

uint64_t LatencyCounts::AddTo(std::array<uint64_t, kLatencyBuckets>* out,
                              uint64_t* sum_ns_out) const {
  uint64_t count = 0;
  for (size_t b = 0; b < kLatencyBuckets; ++b) {
    uint64_t n = buckets[b].load(std::memory_order_relaxed);
    (*out)[b] += n;
    count += n;
  }
  *sum_ns_out += sum_ns.load(std::memory_order_relaxed);
  return count;
}

LatencyByStatus::~LatencyByStatus() {
  for (auto& slot : slots_) delete slot.load(std::memory_order_relaxed);
}

LatencyCounts* LatencyByStatus::Make(int status) {
  auto* made = new LatencyCounts;
  LatencyCounts* expected = nullptr;
  if (slots_[status].compare_exchange_strong(expected, made, std::memory_order_acq_rel)) {
    return made;
  }
  delete made;  // another thread made it first
  return expected;
}

void LatencyByStatus::AddTo(std::array<LatencySnapshot, kWireStatuses>* out) const {
  for (size_t s = 0; s < kWireStatuses; ++s) {
    if (const LatencyCounts* h = slots_[s].load(std::memory_order_acquire)) {
      LatencySnapshot& o = (*out)[s];
      o.count += h->AddTo(&o.buckets, &o.sum_ns);
    }
  }
}

LatencyByWireStatus LatencyByStatus::Seen(const std::array<LatencySnapshot, kWireStatuses>& sums) {
  LatencyByWireStatus seen;
  for (size_t s = 0; s < kWireStatuses; ++s) {
    if (sums[s].count != 0) seen.emplace_back(static_cast<int>(s), sums[s]);
  }
  return seen;
}

}  // namespace trpc::detail
