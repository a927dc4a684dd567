#include "trpc/naming/lb/detail/load_balancers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "trpc/naming/load_balancer.h"

namespace trpc::naming {

namespace {

// The thread's splitmix64 generator: statistically good enough to spread picks, a handful of
// cycles, and no shared state (a shared generator would be a contended cache line). Seeded on
// first use from the variable's address and the clock, so threads draw different sequences.
uint64_t NextRandom() {
  thread_local uint64_t state = 0;
  if (state == 0) [[unlikely]] {
    state = reinterpret_cast<uintptr_t>(&state) ^
            static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
            0x853c49e6748fea9bull;
  }
  state += 0x9e3779b97f4a7c15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A value in [0, n) from 32 random bits, by multiply-shift instead of a division.
inline uint32_t Below(uint32_t random32, uint32_t n) {
  return static_cast<uint32_t>((static_cast<uint64_t>(random32) * n) >> 32);
}

uint32_t WeightOf(const BalancerEndpoint& ep) { return ep.weight == 0 ? 1 : ep.weight; }

// "weighted_round_robin" (see load_balancers.h): one period of nginx's smooth sequence, indexed
// by a shared atomic cursor.
//
// Thread contract: immutable after construction apart from `cursor_` (a relaxed counter: the
// order in which racing calls take entries does not matter), so Pick() may run on any number
// of threads at once.
class WeightedRoundRobinPicker final : public Picker {
 public:
  explicit WeightedRoundRobinPicker(const std::vector<BalancerEndpoint>& eps) : n_(eps.size()) {
    std::vector<uint64_t> w(n_);
    for (size_t i = 0; i < n_; ++i) w[i] = WeightOf(eps[i]);
    Reduce(&w);
    // Bound the period, and with it Build's O(period × n) and the table's size.
    uint64_t cap = std::max<uint64_t>(n_, std::min<uint64_t>(65536, (uint64_t{1} << 26) / n_));
    uint64_t total = std::accumulate(w.begin(), w.end(), uint64_t{0});
    if (total > cap) {
      for (uint64_t& x : w) x = std::max<uint64_t>(1, x * cap / total);  // x < 2^32 and cap < 2^32
      Reduce(&w);
      total = std::accumulate(w.begin(), w.end(), uint64_t{0});
    }
    seq_.reserve(total);
    if (total == n_) {
      // Equal weights (the common case: every endpoint at the default 100), where nginx's
      // sequence is the list in order: skip the O(n^2) pass, which matters for long lists.
      for (size_t i = 0; i < n_; ++i) seq_.push_back(static_cast<uint32_t>(i));
      return;
    }
    // nginx's pass over one period: afterwards every `current` is back at 0, so the sequence
    // repeats exactly.
    std::vector<int64_t> current(n_, 0);
    for (uint64_t t = 0; t < total; ++t) {
      size_t best = 0;
      for (size_t i = 0; i < n_; ++i) {
        current[i] += static_cast<int64_t>(w[i]);
        if (current[i] > current[best]) best = i;
      }
      current[best] -= static_cast<int64_t>(total);
      seq_.push_back(static_cast<uint32_t>(best));
    }
  }

  size_t Pick(const PickInput& in) override {
    const size_t len = seq_.size();
    if (in.attempt == 0) {
      uint64_t c = cursor_.fetch_add(1, std::memory_order_relaxed);
      return seq_[c % len];
    }
    // Step along the sequence from the cursor past entries equal to the first choice, so that
    // the alternatives are other endpoints where the sequence offers them.
    uint64_t c = cursor_.load(std::memory_order_relaxed);
    size_t pos = c % len;
    const uint32_t first = static_cast<uint32_t>(in.first_index % n_);
    const uint64_t k = in.attempt;
    const uint64_t limit = std::min<uint64_t>(len, 32 + 4 * k);
    uint64_t found = 0;
    for (uint64_t step = 0; step < limit; ++step) {
      uint32_t e = seq_[pos];
      if (e != first && ++found == k) return e;
      if (++pos == len) pos = 0;
    }
    return (first + k) % n_;
  }

 private:
  static void Reduce(std::vector<uint64_t>* w) {
    uint64_t g = 0;
    for (uint64_t x : *w) g = std::gcd(g, x);
    if (g > 1) {
      for (uint64_t& x : *w) x /= g;
    }
  }

  const size_t n_;
  std::vector<uint32_t> seq_;
  alignas(64) std::atomic<uint64_t> cursor_{0};
};

// "consistent_hash" (see load_balancers.h): a sorted ring of points with a bucket index.
//
// Thread contract: immutable after construction; Pick() may run on any number of threads at
// once (its only state is the calling thread's random generator and last random key).
class ConsistentHashPicker final : public Picker {
 public:
  static constexpr double kPointsPerMeanWeight = 160;
  // Alternatives k below this are exact (distinct endpoints in ring order); the walk remembers
  // the endpoints it passed in a stack array of this size.
  static constexpr uint32_t kMaxExactAlternative = 64;

  explicit ConsistentHashPicker(const std::vector<BalancerEndpoint>& eps) : n_(eps.size()) {
    double sum = 0;
    for (const BalancerEndpoint& ep : eps) sum += WeightOf(ep);
    const double mean = sum / static_cast<double>(n_);
    struct Point {
      uint64_t pos;
      uint32_t owner;
    };
    std::vector<Point> ring;
    for (uint32_t i = 0; i < n_; ++i) {
      double want = std::round(kPointsPerMeanWeight * WeightOf(eps[i]) / mean);
      auto count = static_cast<uint64_t>(std::max(1.0, want));
      std::string key = eps[i].name + "#";
      const size_t prefix = key.size();
      for (uint64_t j = 0; j < count; ++j) {
        key.resize(prefix);
        key += std::to_string(j);
        ring.push_back(Point{HashKey(key), i});
      }
    }
    // Equal positions (a 64-bit collision) are ordered by name, so the ring still does not
    // depend on the order of the list.
    std::sort(ring.begin(), ring.end(), [&eps](const Point& a, const Point& b) {
      if (a.pos != b.pos) return a.pos < b.pos;
      return eps[a.owner].name < eps[b.owner].name;
    });
    points_.reserve(ring.size());
    owners_.reserve(ring.size());
    for (const Point& p : ring) {
      points_.push_back(p.pos);
      owners_.push_back(p.owner);
    }
    // About one point per bucket: 2^bits >= the number of points.
    int bits = 1;
    while (bits < 20 && (size_t{1} << bits) < points_.size()) ++bits;
    shift_ = 64 - bits;
    const size_t buckets = size_t{1} << bits;
    bucket_start_.resize(buckets + 1);
    size_t p = 0;
    for (size_t b = 0; b < buckets; ++b) {
      const uint64_t low = static_cast<uint64_t>(b) << shift_;
      while (p < points_.size() && points_[p] < low) ++p;
      bucket_start_[b] = static_cast<uint32_t>(p);
    }
    bucket_start_[buckets] = static_cast<uint32_t>(points_.size());
  }

  size_t Pick(const PickInput& in) override {
    if (!in.has_hash_key) {
      // No key: a random point; its alternatives, any other endpoints.
      if (in.attempt == 0) return owners_[Find(NextRandom())];
      return (in.first_index + in.attempt) % n_;
    }
    const uint64_t key = in.hash_key;
    size_t pos = Find(key);
    const uint32_t first = owners_[pos];
    const uint32_t k = static_cast<uint32_t>(in.attempt % n_);
    if (k == 0) return first;
    if (k >= kMaxExactAlternative) return (first + k) % n_;
    // Walk clockwise, counting endpoints not met before. Every endpoint has a point, so one
    // turn of the ring meets all n > k of them.
    uint32_t seen[kMaxExactAlternative];
    uint32_t seen_count = 1;
    seen[0] = first;
    const size_t size = points_.size();
    for (size_t step = 1; step < size; ++step) {
      if (++pos == size) pos = 0;
      const uint32_t o = owners_[pos];
      if (std::find(seen, seen + seen_count, o) != seen + seen_count) continue;
      if (seen_count == k) return o;
      seen[seen_count++] = o;
    }
    return (first + k) % n_;  // not reached
  }

 private:
  // The index of the first point >= key, wrapping to 0.
  size_t Find(uint64_t key) const {
    const size_t b = key >> shift_;
    size_t lo = bucket_start_[b];
    size_t hi = bucket_start_[b + 1];
    // Every point in [lo, hi) is in the key's bucket; the answer is among them or is `hi`, the
    // next bucket's first point.
    if (hi - lo > 8) {
      lo = std::lower_bound(points_.begin() + lo, points_.begin() + hi, key) - points_.begin();
    } else {
      while (lo < hi && points_[lo] < key) ++lo;
    }
    return lo == points_.size() ? 0 : lo;
  }

  const size_t n_;
  std::vector<uint64_t> points_;        // sorted positions
  std::vector<uint32_t> owners_;        // owners_[i]: the endpoint of points_[i]
  std::vector<uint32_t> bucket_start_;  // first point >= (b << shift_), plus the end
  int shift_ = 63;
};

// "p2c" (see load_balancers.h): the cheaper of two random endpoints.
//
// Thread contract: immutable after construction; reads the endpoints' EndpointStats with
// relaxed loads. Pick() may run on any number of threads at once.
class P2cPicker final : public Picker {
 public:
  explicit P2cPicker(const std::vector<BalancerEndpoint>& eps) {
    stats_.reserve(eps.size());
    for (const BalancerEndpoint& ep : eps) stats_.push_back(ep.stats);
  }

  bool UsesEndpointStats() const override { return true; }

  size_t Pick(const PickInput& in) override {
    const auto n = static_cast<uint32_t>(stats_.size());
    if (n == 1) return 0;
    const uint64_t r = NextRandom();
    const uint32_t a = Below(static_cast<uint32_t>(r), n);
    uint32_t b = Below(static_cast<uint32_t>(r >> 32), n - 1);
    if (b >= a) ++b;  // distinct from a, still uniform over the others
    const EndpointStats& sa = *stats_[a];
    const EndpointStats& sb = *stats_[b];
    const int64_t ia = std::max<int32_t>(0, sa.in_flight.load(std::memory_order_relaxed));
    const int64_t ib = std::max<int32_t>(0, sb.in_flight.load(std::memory_order_relaxed));
    int64_t ea = sa.ewma_latency_ns.load(std::memory_order_relaxed);
    int64_t eb = sb.ewma_latency_ns.load(std::memory_order_relaxed);
    const bool a_new = ea <= 0;
    const bool b_new = eb <= 0;
    if (a_new) ea = b_new ? 1 : eb;
    if (b_new) eb = a_new ? 1 : ea;
    // 128-bit products: in_flight (< 2^31) × ewma (< 2^63) overflows 64 bits.
    const unsigned __int128 ca = static_cast<unsigned __int128>(ia + 1) * ea;
    const unsigned __int128 cb = static_cast<unsigned __int128>(ib + 1) * eb;
    if (ca != cb) return ca < cb ? a : b;
    return b_new && !a_new ? b : a;
  }

 private:
  std::vector<EndpointStats*> stats_;
};

}  // namespace

void RegisterLoadBalancers() {
  static std::once_flag once;
  std::call_once(once, [] {
    LoadBalancerFactory::Register("weighted_round_robin",
                                  [](const std::vector<BalancerEndpoint>& eps) {
                                    return std::make_unique<WeightedRoundRobinPicker>(eps);
                                  });
    LoadBalancerFactory::Register("consistent_hash", [](const std::vector<BalancerEndpoint>& eps) {
      return std::make_unique<ConsistentHashPicker>(eps);
    });
    LoadBalancerFactory::Register("p2c", [](const std::vector<BalancerEndpoint>& eps) {
      return std::make_unique<P2cPicker>(eps);
    });
  });
}

}  // namespace trpc::naming
