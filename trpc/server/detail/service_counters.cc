#include "trpc/server/detail/service_counters.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <utility>

namespace trpc::detail {

namespace {
// Method counters live as long as the process (see service_counters.h): a few hundred bytes per
// method and reactor, per service start.
MethodCounters* KeepMethodCounters(size_t n) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::unique_ptr<MethodCounters[]>>();
  std::lock_guard lock(mu);
  kept->push_back(std::make_unique<MethodCounters[]>(n));
  return kept->back().get();
}
}  // namespace

ServiceCounters::ServiceCounters(const Service& service, size_t reactors)
    : requests_(reactors), traffic_(reactors) {
  std::vector<std::pair<std::string, const RpcMethodHandler*>> methods;
  service.ForEachMethod([&](const std::string& name, const RpcMethodHandler* handler) {
    if (handler != nullptr) methods.emplace_back(name, handler);
  });
  method_names_ = {"unknown"};
  if (!methods.empty()) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (const auto& [name, h] : methods) {
      lo = std::min(lo, h->id());
      hi = std::max(hi, h->id());
    }
    first_handler_id_ = lo;
    slot_of_handler_.assign(hi - lo + 1, 0);
    for (const auto& [name, h] : methods) {
      uint32_t& slot = slot_of_handler_[h->id() - lo];
      if (slot != 0) continue;  // one handler under two names: the first counts
      slot = static_cast<uint32_t>(method_names_.size());
      method_names_.push_back(name);
    }
  }
  method_counters_ = KeepMethodCounters(reactors * method_names_.size());
}

ServiceStats ServiceCounters::Sum() const {
  ServiceStats s;
  s.connections_accepted = connections_accepted_.load(std::memory_order_relaxed);
  s.connections_refused = connections_refused_.load(std::memory_order_relaxed);
  s.protocol_errors = protocol_errors_.load(std::memory_order_relaxed);
  for (const auto& c : requests_) {
    s.requests += c.requests.load(std::memory_order_relaxed);
    s.failed_requests += c.failed_requests.load(std::memory_order_relaxed);
    s.rejected_overload += c.rejected_overload.load(std::memory_order_relaxed);
    s.rejected_parked_limit += c.rejected_parked_limit.load(std::memory_order_relaxed);
    s.rejected_deadline_passed += c.rejected_deadline_passed.load(std::memory_order_relaxed);
    s.rejected_deadline_unmeetable +=
        c.rejected_deadline_unmeetable.load(std::memory_order_relaxed);
  }
  return s;
}

void ServiceCounters::CollectTraffic(ServiceMetrics* out) const {
  for (const TrafficCounters& t : traffic_) {
    out->bytes_in += t.bytes_in.load(std::memory_order_relaxed);
    out->bytes_out += t.bytes_out.load(std::memory_order_relaxed);
  }
  size_t n = method_names_.size();
  out->methods.resize(n);
  for (size_t m = 0; m < n; ++m) {
    MethodMetrics& mm = out->methods[m];
    mm.name = method_names_[m];
    std::array<uint64_t, kErrorSlots> errors{};
    std::array<LatencySnapshot, kWireStatuses> by_status{};
    for (size_t r = 0; r < traffic_.size(); ++r) {
      method_counters_[r * n + m].AddTo(&mm, &errors, &by_status);
    }
    mm.errors = NamedErrors(errors);
    mm.by_wire_status = LatencyByStatus::Seen(by_status);
  }
}

}  // namespace trpc::detail
