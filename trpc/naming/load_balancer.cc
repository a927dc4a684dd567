#include "trpc/naming/load_balancer.h"

#include <map>
#include <mutex>

namespace trpc {

namespace {

// "round_robin": one shared cursor; alternative k is the k-th endpoint after the first choice.
class RoundRobinPicker final : public Picker {
 public:
  explicit RoundRobinPicker(size_t n) : n_(n) {}
  size_t Pick(const PickInput& in) override {
    if (in.attempt == 0) {
      uint64_t c = next_.fetch_add(1, std::memory_order_relaxed);
      return static_cast<size_t>(c % n_);
    }
    // The endpoints after the first choice, in list order (the shared cursor has moved on).
    return (in.first_index + in.attempt) % n_;
  }

 private:
  const size_t n_;
  std::atomic<uint64_t> next_{0};
};

struct Table {
  std::mutex mu;
  std::map<std::string, PickerMaker, std::less<>> makers;
};

Table& GetTable() {
  static auto* table = [] {
    auto* t = new Table;
    t->makers.emplace("round_robin", [](const std::vector<BalancerEndpoint>& eps) {
      return std::make_unique<RoundRobinPicker>(eps.size());
    });
    return t;
  }();
  return *table;
}

}  // namespace

void LoadBalancerFactory::Register(std::string name, PickerMaker make) {
  Table& t = GetTable();
  std::lock_guard lock(t.mu);
  t.makers[std::move(name)] = std::move(make);
}

PickerMaker LoadBalancerFactory::Find(std::string_view name) {
  Table& t = GetTable();
  std::lock_guard lock(t.mu);
  auto it = t.makers.find(name);
  return it == t.makers.end() ? PickerMaker() : it->second;
}

std::vector<std::string> LoadBalancerFactory::Names() {
  Table& t = GetTable();
  std::lock_guard lock(t.mu);
  std::vector<std::string> names;
  for (const auto& [n, m] : t.makers) names.push_back(n);
  return names;
}

uint64_t HashKey(std::string_view key) {
  // FNV-1a over the bytes, then a 64-bit finalizer (from splitmix64) so that keys differing in
  // their last bytes still spread over the whole range (ring positions compare whole values).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace trpc
