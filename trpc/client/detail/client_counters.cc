#include "trpc/client/detail/client_counters.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <thread>

namespace trpc::detail {

namespace {

// Every callee's counters, for the process's life (never freed: a reply may count after its
// proxy is gone).
struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<ClientCounters>, std::less<>> callees;
};

Registry& GetRegistry() {
  static auto* r = new Registry;
  return *r;
}

std::atomic<size_t> g_next_ordinal{0};

}  // namespace

constinit thread_local size_t t_client_shard = SIZE_MAX;

size_t ClientCounters::ShardCount() {
  static const size_t n = [] {
    size_t cpus = std::max<size_t>(1, std::thread::hardware_concurrency());
    return std::min<size_t>(64, std::bit_ceil(cpus));
  }();
  return n;
}

size_t ClientMethodCounters::AssignShard() {
  t_client_shard =
      g_next_ordinal.fetch_add(1, std::memory_order_relaxed) & (ClientCounters::ShardCount() - 1);
  return t_client_shard;
}

ClientMethodCounters::ClientMethodCounters(std::string name, size_t hash, size_t shards)
    : name_(std::move(name)),
      hash_(hash),
      shards_(shards),
      shard_(std::make_unique<ClientMethodShard[]>(shards)) {}

void ClientMethodCounters::Collect(ClientMethodMetrics* out) const {
  out->name = name_;
  std::array<uint64_t, kErrorSlots> errors{};
  std::array<LatencySnapshot, kWireStatuses> calls_by_status{};
  std::array<LatencySnapshot, kWireStatuses> attempts_by_status{};
  uint64_t ended = 0;
  uint64_t started = 0;
  // Ended before started: calls that end between the two reads are not seen as negative.
  for (size_t i = 0; i < shards_; ++i) {
    const ClientMethodShard& s = shard_[i];
    ended += s.latency.AddTo(&out->latency_buckets, &out->latency_sum_ns);
    for (size_t slot = 0; slot < kErrorSlots; ++slot) {
      errors[slot] += s.errors[slot].load(std::memory_order_relaxed);
    }
    out->attempts += s.attempts.load(std::memory_order_relaxed);
    out->retries += s.retries.load(std::memory_order_relaxed);
    out->hedges += s.hedges.load(std::memory_order_relaxed);
    out->budget_refusals += s.budget_refusals.load(std::memory_order_relaxed);
    out->throttle_refusals += s.throttle_refusals.load(std::memory_order_relaxed);
    s.call_by_status.AddTo(&calls_by_status);
    s.attempt_by_status.AddTo(&attempts_by_status);
  }
  out->call_by_wire_status = LatencyByStatus::Seen(calls_by_status);
  out->attempt_by_wire_status = LatencyByStatus::Seen(attempts_by_status);
  for (size_t i = 0; i < shards_; ++i) started += shard_[i].started.load(std::memory_order_relaxed);
  out->calls = ended;
  out->in_flight = started > ended ? started - ended : 0;
  out->errors = NamedErrors(errors);
}

ClientCounters::ClientCounters(std::string name, std::string protocol, std::string target)
    : name_(std::move(name)),
      protocol_(std::move(protocol)),
      target_(std::move(target)),
      other_(std::make_unique<ClientMethodCounters>("other", 0, ShardCount())) {}

ClientCounters::~ClientCounters() {
  for (auto& slot : slots_) delete slot.load(std::memory_order_relaxed);
}

std::shared_ptr<ClientCounters> ClientCounters::For(const std::string& name,
                                                    const std::string& protocol,
                                                    const std::string& target) {
  Registry& r = GetRegistry();
  std::lock_guard lock(r.mu);
  auto it = r.callees.find(name);
  if (it != r.callees.end()) return it->second;
  if (r.callees.size() >= kMaxCallees) {
    auto& other = r.callees["other"];
    if (!other) other = std::make_shared<ClientCounters>("other", "");
    return other;
  }
  auto c = std::make_shared<ClientCounters>(name, protocol, target);
  r.callees.emplace(name, c);
  return c;
}

std::vector<ClientServiceMetrics> ClientCounters::CollectAll() {
  std::vector<std::shared_ptr<ClientCounters>> all;
  {
    Registry& r = GetRegistry();
    std::lock_guard lock(r.mu);
    for (const auto& [name, c] : r.callees) all.push_back(c);
  }
  std::vector<ClientServiceMetrics> out;
  out.reserve(all.size());
  for (const auto& c : all) out.push_back(c->Collect());
  return out;
}

size_t ClientCounters::Hash(std::string_view func) {
  // A few loads instead of a hash of every byte: the table holds 64 names at most and a probe
  // compares the whole name anyway. Names of one service share their start, so the length, the
  // last 8 bytes and 8 from the middle decide.
  uint64_t h = func.size() * 0x9e3779b97f4a7c15ull;
  auto word = [&func](size_t at) {
    uint64_t w = 0;
    std::memcpy(&w, func.data() + at, 8);
    return w;
  };
  if (func.size() >= 8) {
    h ^= word(func.size() - 8);
    h = (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
    h ^= word(func.size() / 2 - 4);  // (in bounds: size >= 8)
  } else {
    for (char c : func) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  }
  h = (h ^ (h >> 32)) * 0x94d049bb133111ebull;
  return static_cast<size_t>(h ^ (h >> 29));
}

ClientMethodCounters* ClientCounters::Method(std::string_view func) {
  const size_t hash = Hash(func);
  for (size_t i = 0; i < kSlots; ++i) {
    ClientMethodCounters* m = slots_[(hash + i) & (kSlots - 1)].load(std::memory_order_acquire);
    if (m == nullptr) return Insert(func, hash);
    if (m->hash() == hash && m->name() == func) return m;
  }
  return other_.get();
}

ClientMethodCounters* ClientCounters::Insert(std::string_view func, size_t hash) {
  std::lock_guard lock(insert_mu_);
  // Probed again under the lock: another thread may have inserted it (or a colliding name).
  for (size_t i = 0; i < kSlots; ++i) {
    std::atomic<ClientMethodCounters*>& slot = slots_[(hash + i) & (kSlots - 1)];
    ClientMethodCounters* m = slot.load(std::memory_order_relaxed);
    if (m == nullptr) {
      if (methods_ >= kMaxMethods) break;
      ++methods_;
      m = new ClientMethodCounters(std::string(func), hash, ShardCount());
      slot.store(m, std::memory_order_release);
      return m;
    }
    if (m->hash() == hash && m->name() == func) return m;
  }
  return other_.get();
}

ClientServiceMetrics ClientCounters::Collect() const {
  ClientServiceMetrics out;
  out.name = name_;
  out.protocol = protocol_;
  out.target = target_;
  out.connections = std::max<int64_t>(0, connections_.load(std::memory_order_relaxed));
  out.ejections = ejections_.load(std::memory_order_relaxed);
  for (const auto& slot : slots_) {
    if (const ClientMethodCounters* m = slot.load(std::memory_order_acquire)) {
      out.methods.emplace_back();
      m->Collect(&out.methods.back());
    }
  }
  ClientMethodMetrics other;
  other_->Collect(&other);
  if (other.calls != 0 || other.in_flight != 0 || other.attempts != 0) {
    out.methods.push_back(std::move(other));
  }
  std::sort(out.methods.begin(), out.methods.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace trpc::detail

namespace trpc {
std::vector<ClientServiceMetrics> CollectClientMetrics() {
  return detail::ClientCounters::CollectAll();
}
}  // namespace trpc
