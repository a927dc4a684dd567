#pragma once

/// The naming layer's load balancers (`client.service[].load_balance_name`), added to the
/// built-in "round_robin" of trpc/naming/load_balancer.h. Each is a Picker built once per
/// endpoint list (off the call path) and then read-only apart from its own atomic cursor, so
/// Pick() is lock-free and never allocates, as the Picker contract asks.
///
/// "weighted_round_robin" — nginx's smooth weighted round robin, precomputed.
///   nginx keeps a `current` value per endpoint; each pick adds every weight to its current
///   value, takes the largest (the first on a tie) and subtracts the total weight from it. That
///   spreads the heavy endpoints out (weights 5,1,1 give a a b a c a a) instead of sending them
///   runs of calls. The sequence is periodic with period = the sum of the weights, so Build runs
///   it once over one period and Pick just indexes it with an atomic counter (no lock around the
///   `current` values). Weights are divided by their gcd first; a period that would still be
///   longer than 65536 entries (or than 2^26 / n, so that Build's O(period × n) stays bounded
///   for long lists) has its weights scaled down proportionally, each kept >= 1, which changes
///   the shares by at most about one part in the cap. Equal weights skip the pass (the
///   sequence is then the list in order); unequal weights over more than 8192 endpoints make
///   Build O(n^2) (0.1 s or so for 10,000), a cost paid per list change, never per call.
///   Alternative k > 0: the k-th sequence entry after the shared cursor that is not the first
///   choice (PickInput::first_index), scanning at most 32 + 4k entries; when the scan finds
///   none (one endpoint dominates), the k-th endpoint after the first choice by index.
///
/// "consistent_hash" — a ketama-style ring.
///   Each endpoint gets max(1, round(160 × weight / mean weight)) points at
///   HashKey(name + "#" + i), name being "ip:port": the ring depends on the set of endpoints
///   and their weights, not on the order of the list, so two proxies (or two processes) with
///   the same endpoints map a key alike, and adding or removing one endpoint moves only the keys
///   of the arcs it gains or loses (about 1/n of them). A pick is the first point >= the call's
///   hash key, wrapping to the first point. The points are a flat sorted uint64 array with a
///   parallel uint32 owner array, plus a table indexed by the key's top bits giving the first
///   point of each bucket (about one point per bucket), so a pick reads one or two cache lines
///   instead of a binary search's ~14. A call without a hash key gets a per-thread random key,
///   and its alternative k the (first_index + k) mod n-th endpoint.
///   Alternative k > 0 (k < n) of a keyed call: the k-th distinct endpoint clockwise after the
///   first choice;
///   for k >= 64 (too many to remember without allocating) the (first + k) mod n-th endpoint
///   by index. k >= n wraps to k mod n.
///
/// "p2c" — power of two choices.
///   Two distinct endpoints drawn with a per-thread splitmix64 generator (no shared state); the
///   one with the lower cost (in_flight + 1) × ewma_latency_ns wins (EndpointStats, relaxed
///   reads: a stale figure costs at most one worse choice). An endpoint without a latency sample
///   yet (ewma 0) is costed with its rival's ewma, the smallest known figure in the pair, so a
///   new endpoint competes on its in-flight count alone and gets tried; on an equal cost the
///   one without a sample wins, else the first drawn (a random one). Alternative k > 0: another
///   random pair. One endpoint: always 0.

namespace trpc::naming {

/// Registers "weighted_round_robin", "consistent_hash" and "p2c" with LoadBalancerFactory.
/// Idempotent and thread-safe; call before the proxies that use these names are made.
void RegisterLoadBalancers();

}  // namespace trpc::naming
