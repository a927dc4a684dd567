// The load balancers: the built-in round_robin and the naming layer's weighted_round_robin,
// consistent_hash and p2c (trpc/naming/lb/detail/load_balancers.h): their shares, the smoothness of
// the weighted sequence, the ring's stability when endpoints come and go, p2c's avoidance of
// loaded or slow endpoints, distinct alternatives, and indexes in range under concurrent picks.

#include "trpc/naming/load_balancer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "trpc/naming/lb/detail/load_balancers.h"

namespace trpc::naming {
namespace {

// Endpoints 10.0.0.<i+1>:80 with the given weights, and stats that outlive the pickers.
struct Endpoints {
  explicit Endpoints(const std::vector<uint32_t>& weights, int first_host = 1)
      : stats(new EndpointStats[weights.size()]) {
    for (size_t i = 0; i < weights.size(); ++i) {
      BalancerEndpoint ep;
      EXPECT_TRUE(NetAddress::FromIpPort("10.0.0." + std::to_string(first_host + i), 80, &ep.addr));
      ep.name = ep.addr.ToString();
      ep.weight = weights[i];
      ep.stats = &stats[i];
      list.push_back(ep);
    }
  }
  std::unique_ptr<EndpointStats[]> stats;
  std::vector<BalancerEndpoint> list;
};

std::unique_ptr<Picker> Make(const std::string& name, const std::vector<BalancerEndpoint>& eps) {
  RegisterLoadBalancers();
  PickerMaker make = LoadBalancerFactory::Find(name);
  EXPECT_TRUE(make) << name;
  return make(eps);
}

std::vector<int> Counts(Picker* p, size_t n, int picks) {
  std::vector<int> counts(n, 0);
  for (int i = 0; i < picks; ++i) {
    size_t idx = p->Pick(PickInput{});
    EXPECT_LT(idx, n);
    if (idx < n) ++counts[idx];
  }
  return counts;
}

TEST(LoadBalancersTest, RegistersTheNamesIdempotently) {
  RegisterLoadBalancers();
  RegisterLoadBalancers();
  std::vector<std::string> names = LoadBalancerFactory::Names();
  for (const char* n : {"round_robin", "weighted_round_robin", "consistent_hash", "p2c"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(RoundRobinTest, SharesEvenly) {
  Endpoints eps({100, 100, 100});
  auto p = Make("round_robin", eps.list);
  for (int c : Counts(p.get(), 3, 3000)) {
    EXPECT_GE(c, 900);
    EXPECT_LE(c, 1100);
  }
}

TEST(WeightedRoundRobinTest, SharesFollowWeights) {
  Endpoints eps({1, 2, 3});
  auto p = Make("weighted_round_robin", eps.list);
  std::vector<int> counts = Counts(p.get(), 3, 3000);
  const int want[] = {500, 1000, 1500};
  for (int i = 0; i < 3; ++i) {
    EXPECT_GE(counts[i], want[i] * 9 / 10) << i;
    EXPECT_LE(counts[i], want[i] * 11 / 10) << i;
  }
}

TEST(WeightedRoundRobinTest, SequenceIsNginxSmooth) {
  // nginx's smooth weighted round robin for 5,1,1 gives a a b a c a a, period after period.
  Endpoints eps({5, 1, 1});
  auto p = Make("weighted_round_robin", eps.list);
  const size_t want[] = {0, 0, 1, 0, 2, 0, 0};
  for (int period = 0; period < 3; ++period) {
    for (size_t w : want) EXPECT_EQ(p->Pick(PickInput{}), w) << "period " << period;
  }
}

TEST(WeightedRoundRobinTest, EqualWeightsAreTheListInOrder) {
  Endpoints eps({100, 100, 100, 100, 100});
  auto p = Make("weighted_round_robin", eps.list);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(p->Pick(PickInput{}), static_cast<size_t>(i % 5));
}

TEST(WeightedRoundRobinTest, NoRunLongerThanTheIdealWithinAPeriod) {
  // A heavy endpoint of weight h against others of total o: an ideal spread never gives it
  // more than ceil(h / (o + 1)) picks in a row. nginx's sequence keeps that within a period
  // (weights 50,10,10,5 reduce to 10,2,2,1, a period of 15: a a b a c a a d a a b a c a a);
  // where one period ends and the next begins its last and first runs join (a a | a a), so
  // across periods the bound is twice the ideal.
  Endpoints eps({50, 10, 10, 5});
  auto p = Make("weighted_round_robin", eps.list);
  int run = 0, longest_within = 0, longest = 0;
  for (int i = 0; i < 15 * 50; ++i) {
    if (i % 15 == 0) run = 0;
    size_t idx = p->Pick(PickInput{});
    run = idx == 0 ? run + 1 : 0;
    longest_within = std::max(longest_within, run);
  }
  run = 0;
  for (int i = 0; i < 15 * 50; ++i) {
    run = p->Pick(PickInput{}) == 0 ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  EXPECT_LE(longest_within, 2);  // ceil(10 / 6)
  EXPECT_LE(longest, 4);
}

TEST(WeightedRoundRobinTest, GcdAndScalingKeepShares) {
  // Weights 300:100 reduce to 3:1; weights too large for one period scale down to about it.
  Endpoints eps({300, 100});
  auto p = Make("weighted_round_robin", eps.list);
  std::vector<int> c = Counts(p.get(), 2, 4000);
  EXPECT_EQ(c[0], 3000);
  EXPECT_EQ(c[1], 1000);
  Endpoints big({4000000000u, 1000000000u, 1});
  auto q = Make("weighted_round_robin", big.list);
  std::vector<int> d = Counts(q.get(), 3, 100000);
  EXPECT_NEAR(d[0], 80000, 200);
  EXPECT_NEAR(d[1], 20000, 200);
  EXPECT_GE(d[2], 1);  // never scaled to nothing
}

TEST(WeightedRoundRobinTest, AlternativesAvoidTheFirstChoice) {
  Endpoints eps({5, 1, 1});
  auto p = Make("weighted_round_robin", eps.list);
  for (int i = 0; i < 50; ++i) {
    size_t first = p->Pick(PickInput{});
    PickInput alt;
    alt.first_index = first;
    alt.attempt = 1;
    EXPECT_NE(p->Pick(alt), first);
    alt.attempt = 2;
    EXPECT_NE(p->Pick(alt), first);
    // Other calls picking in between do not change which endpoint is avoided.
    p->Pick(PickInput{});
    alt.attempt = 1;
    EXPECT_NE(p->Pick(alt), first);
  }
  // One endpoint dominating the sequence: the alternative still differs.
  Endpoints skewed({100000, 1});
  auto q = Make("weighted_round_robin", skewed.list);
  size_t first = q->Pick(PickInput{});
  PickInput alt;
  alt.first_index = first;
  alt.attempt = 1;
  EXPECT_NE(q->Pick(alt), first);
}

TEST(ConsistentHashTest, AlternativesOfAKeylessCallAvoidItsFirstChoice) {
  Endpoints eps({100, 100, 100, 100});
  auto p = Make("consistent_hash", eps.list);
  for (int i = 0; i < 100; ++i) {
    size_t first = p->Pick(PickInput{});
    std::set<size_t> seen{first};
    for (uint32_t k = 1; k < 4; ++k) {
      PickInput alt;
      alt.first_index = first;
      alt.attempt = k;
      EXPECT_TRUE(seen.insert(p->Pick(alt)).second) << "attempt " << k;
    }
  }
}

PickInput Key(uint64_t key, uint32_t attempt = 0) {
  PickInput in;
  in.hash_key = key;
  in.has_hash_key = true;
  in.attempt = attempt;
  return in;
}

TEST(ConsistentHashTest, SameKeySameEndpoint) {
  Endpoints eps({100, 100, 100});
  auto p = Make("consistent_hash", eps.list);
  auto q = Make("consistent_hash", eps.list);
  for (int i = 0; i < 1000; ++i) {
    uint64_t key = HashKey("user-" + std::to_string(i));
    size_t idx = p->Pick(Key(key));
    EXPECT_EQ(p->Pick(Key(key)), idx);
    EXPECT_EQ(q->Pick(Key(key)), idx);
  }
}

TEST(ConsistentHashTest, RingDoesNotDependOnListOrder) {
  Endpoints eps({100, 200, 100, 50});
  std::vector<BalancerEndpoint> reversed(eps.list.rbegin(), eps.list.rend());
  auto p = Make("consistent_hash", eps.list);
  auto q = Make("consistent_hash", reversed);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    uint64_t key = rng();
    EXPECT_EQ(eps.list[p->Pick(Key(key))].name, reversed[q->Pick(Key(key))].name);
  }
}

TEST(ConsistentHashTest, SharesOfRandomKeys) {
  Endpoints eps({100, 100, 100});
  auto p = Make("consistent_hash", eps.list);
  std::mt19937_64 rng(1);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 100000; ++i) ++counts[p->Pick(Key(rng()))];
  for (int c : counts) {
    EXPECT_GE(c, 25000);
    EXPECT_LE(c, 42000);
  }
  // Weights 1:3 give about a quarter and three quarters.
  Endpoints weighted({100, 300});
  auto q = Make("consistent_hash", weighted.list);
  int light = 0;
  for (int i = 0; i < 100000; ++i) light += q->Pick(Key(rng())) == 0 ? 1 : 0;
  EXPECT_GE(light, 17000);
  EXPECT_LE(light, 33000);
}

TEST(ConsistentHashTest, AddingAnEndpointMovesAboutAQuarterOfKeysOnlyToIt) {
  Endpoints four({100, 100, 100, 100});
  std::vector<BalancerEndpoint> three(four.list.begin(), four.list.begin() + 3);
  auto before = Make("consistent_hash", three);
  auto after = Make("consistent_hash", four.list);
  std::mt19937_64 rng(2);
  int moved = 0;
  for (int i = 0; i < 10000; ++i) {
    uint64_t key = rng();
    size_t b = before->Pick(Key(key));
    size_t a = after->Pick(Key(key));
    if (a != b) {
      ++moved;
      EXPECT_EQ(a, 3u) << "a key moved between two old endpoints";
    }
  }
  EXPECT_GT(moved, 1000);
  EXPECT_LE(moved, 4000);
}

TEST(ConsistentHashTest, RemovingAnEndpointMovesOnlyItsKeys) {
  Endpoints four({100, 100, 100, 100});
  // Remove the second endpoint: indexes after it shift down by one in the new list.
  std::vector<BalancerEndpoint> three = {four.list[0], four.list[2], four.list[3]};
  auto before = Make("consistent_hash", four.list);
  auto after = Make("consistent_hash", three);
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) {
    uint64_t key = rng();
    const std::string& b = four.list[before->Pick(Key(key))].name;
    const std::string& a = three[after->Pick(Key(key))].name;
    if (b != four.list[1].name) {
      EXPECT_EQ(a, b);
    }
  }
}

TEST(ConsistentHashTest, AlternativesAreDistinctEndpoints) {
  Endpoints eps({100, 50, 100, 200, 100, 100, 100, 100});
  auto p = Make("consistent_hash", eps.list);
  std::mt19937_64 rng(4);
  for (int i = 0; i < 1000; ++i) {
    uint64_t key = rng();
    std::set<size_t> seen;
    for (uint32_t k = 0; k < eps.list.size(); ++k) seen.insert(p->Pick(Key(key, k)));
    EXPECT_EQ(seen.size(), eps.list.size());
  }
  // Beyond the exact range the alternatives stay in range.
  Endpoints many(std::vector<uint32_t>(100, 100));
  auto q = Make("consistent_hash", many.list);
  std::set<size_t> seen;
  for (uint32_t k = 0; k < 100; ++k) {
    size_t idx = q->Pick(Key(99, k));
    EXPECT_LT(idx, 100u);
    seen.insert(idx);
  }
  EXPECT_GE(seen.size(), 64u);
}

TEST(ConsistentHashTest, NoKeySpreadsRandomly) {
  Endpoints eps({100, 100, 100});
  auto p = Make("consistent_hash", eps.list);
  for (int c : Counts(p.get(), 3, 30000)) EXPECT_GT(c, 7000);
}

TEST(P2cTest, OneEndpointIsAlwaysZero) {
  Endpoints eps({100});
  auto p = Make("p2c", eps.list);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(p->Pick(PickInput{}), 0u);
}

TEST(P2cTest, AvoidsAnEndpointWithCallsInFlight) {
  Endpoints eps({100, 100, 100, 100});
  eps.stats[2].in_flight = 10;
  auto p = Make("p2c", eps.list);
  std::vector<int> counts = Counts(p.get(), 4, 10000);
  EXPECT_LT(counts[2], 100);
  for (int i : {0, 1, 3}) EXPECT_GT(counts[i], 2500) << i;
}

TEST(P2cTest, AvoidsASlowEndpoint) {
  Endpoints eps({100, 100, 100});
  for (int i = 0; i < 3; ++i) eps.stats[i].ewma_latency_ns = 1000000;
  eps.stats[0].ewma_latency_ns = 100000000;
  auto p = Make("p2c", eps.list);
  std::vector<int> counts = Counts(p.get(), 3, 10000);
  EXPECT_LT(counts[0], 100);
}

TEST(P2cTest, TriesAnEndpointWithoutSamples) {
  // Endpoint 1 is new (no ewma): with nothing in flight it wins against loaded or equal ones.
  Endpoints eps({100, 100, 100});
  eps.stats[0].ewma_latency_ns = 1000000;
  eps.stats[2].ewma_latency_ns = 1000000;
  eps.stats[0].in_flight = 1;
  auto p = Make("p2c", eps.list);
  std::vector<int> counts = Counts(p.get(), 3, 9000);
  EXPECT_GT(counts[1], 5000);  // it wins every pair it is in (2/3 of them)
}

TEST(P2cTest, AllIndexesInRangeAndAllUsed) {
  Endpoints eps(std::vector<uint32_t>(7, 100));
  auto p = Make("p2c", eps.list);
  for (int c : Counts(p.get(), 7, 70000)) EXPECT_GT(c, 8000);
  PickInput alt;
  alt.attempt = 3;
  for (int i = 0; i < 1000; ++i) EXPECT_LT(p->Pick(alt), 7u);
}

// 4 threads × 200k picks on each kind of picker over one shared picker (what TSan checks),
// with the stats changing under p2c's reads.
TEST(LoadBalancersStressTest, ConcurrentPicksStayInRange) {
  constexpr int kThreads = 4;
  constexpr int kPicks = 200000;
  std::vector<uint32_t> weights;
  for (uint32_t i = 1; i <= 13; ++i) weights.push_back(i * 7);
  Endpoints eps(weights);
  for (const char* name : {"round_robin", "weighted_round_robin", "consistent_hash", "p2c"}) {
    auto p = Make(name, eps.list);
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        uint64_t x = 0x9e3779b97f4a7c15ull * (t + 1);
        for (int i = 0; i < kPicks; ++i) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          PickInput in;
          in.has_hash_key = (i & 1) != 0;
          in.hash_key = x;
          in.attempt = (i % 5 == 0) ? static_cast<uint32_t>(x % 20) : 0;
          size_t idx = p->Pick(in);
          if (idx >= eps.list.size()) {
            bad.fetch_add(1, std::memory_order_relaxed);
            continue;
          }
          EndpointStats* s = eps.list[idx].stats;
          s->OnStart();
          s->OnEnd(static_cast<int64_t>(1000 + (x & 0xffff)));
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad.load(), 0) << name;
  }
}

}  // namespace
}  // namespace trpc::naming
