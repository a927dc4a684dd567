#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "trpc/base/detail/call_counts.h"
#include "trpc/client/client_metrics.h"

namespace trpc::detail {

/// This thread's shard index (ClientCounters::Shard), SIZE_MAX until it first counts. Declared
/// constinit here so that reading it is a plain thread-local load, with no wrapper call.
extern constinit thread_local size_t t_client_shard;

/// The counts of one method of one callee made on one shard: a thread writes the shard its
/// ordinal picks (ClientCounters::Shard), so in the merged model a worker's calls, which start
/// and end on it, write lines no other worker writes.
struct alignas(64) ClientMethodShard {
  std::atomic<uint64_t> started{0};
  std::atomic<uint64_t> attempts{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> hedges{0};
  std::atomic<uint64_t> budget_refusals{0};
  std::atomic<uint64_t> throttle_refusals{0};
  LatencyCounts latency;  // ended calls
  std::array<std::atomic<uint64_t>, kErrorSlots> errors{};
  // Protocols with a status of their own (gRPC) only: calls and attempts by that status.
  LatencyByStatus call_by_status;
  LatencyByStatus attempt_by_status;
};

/// One method's shards.
class ClientMethodCounters {
 public:
  ClientMethodCounters(std::string name, size_t hash, size_t shards);

  /// The calling thread's shard.
  ClientMethodShard& Local() {
    size_t s = t_client_shard;
    if (s == SIZE_MAX) [[unlikely]]
      s = AssignShard();
    return shard_[s];
  }
  /// Takes this thread's shard index (its first count).
  static size_t AssignShard();
  static void Add(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }
  /// A call began (it will End exactly once).
  void Start() { Add(Local().started); }
  /// A call began and its first attempt went out at once, on this thread.
  void StartAndSend() {
    ClientMethodShard& s = Local();
    Add(s.started);
    Add(s.attempts);
  }
  /// A call ended with framework code `ret` (and `func_ret`) after `latency_ns`; under the
  /// protocol's own status `wire_status` too (ClientCodec::WireStatus; -1: none).
  void End(int64_t latency_ns, int ret, int func_ret, int wire_status = -1) {
    ClientMethodShard& s = Local();
    s.latency.Record(latency_ns);
    if (ret != 0 || func_ret != 0) [[unlikely]] {
      Add(s.errors[ErrorSlotOf(ret)]);
    }
    if (wire_status >= 0) s.call_by_status.Record(wire_status, latency_ns);
  }
  /// One attempt ended with the protocol's own status `wire_status` after `latency_ns`.
  void EndAttempt(int64_t latency_ns, int wire_status) {
    Local().attempt_by_status.Record(wire_status, latency_ns);
  }

  const std::string& name() const { return name_; }
  size_t hash() const { return hash_; }
  void Collect(ClientMethodMetrics* out) const;

 private:
  const std::string name_;
  const size_t hash_;
  const size_t shards_;
  std::unique_ptr<ClientMethodShard[]> shard_;
};

/// The counters of one callee (a `client.service[]` name), shared by every proxy of that name
/// and kept for the life of the process, like a server's method counters: a scrape never goes
/// backwards because a proxy was remade.
///
/// Methods are found by name without a lock: an open-addressed table of atomic pointers, filled
/// under a mutex on a name's first call and never emptied. At most kMaxMethods names per callee;
/// the rest count as "other" (a peer's or a caller's name space cannot grow our memory).
///
/// Memory ordering: a method's counters are published by a release store of its slot and found
/// by acquire loads, so a reader sees its name and shards built. Every count is a relaxed
/// atomic (LatencyCounts' contract): a scrape is a snapshot that orders nothing. in_flight is
/// started minus ended (ended read first, the difference clamped at zero): it may be off by the
/// calls that start or end between the two reads.
class ClientCounters {
 public:
  static constexpr size_t kMaxMethods = 64;
  static constexpr size_t kMaxCallees = 256;

  /// The counters of callee `name` (made on first use; "other" past kMaxCallees). `protocol` and
  /// `target` are the first proxy's (ClientServiceMetrics).
  static std::shared_ptr<ClientCounters> For(const std::string& name, const std::string& protocol,
                                             const std::string& target = "");
  /// Every callee's counts, in name order.
  static std::vector<ClientServiceMetrics> CollectAll();

  ClientCounters(std::string name, std::string protocol, std::string target = "");
  ~ClientCounters();

  /// The counters of method `func` (never null).
  ClientMethodCounters* Method(std::string_view func);
  /// The gauge of connections open to this callee (ConnectionOptions::open_gauge).
  std::atomic<int64_t>* connections() { return &connections_; }
  /// The count of endpoints ejected (OutlierEjection::CountInto).
  std::atomic<uint64_t>* ejections() { return &ejections_; }

  /// The number of shards, a power of two: the CPUs rounded up, at most 64.
  static size_t ShardCount();
  /// This thread's shard: threads take ordinals in the order they first count.
  static size_t Shard() {
    size_t s = t_client_shard;
    return s != SIZE_MAX ? s : ClientMethodCounters::AssignShard();
  }

  ClientServiceMetrics Collect() const;

 private:
  static constexpr size_t kSlots = 2 * kMaxMethods;  // a power of two, half full at most
  static size_t Hash(std::string_view func);
  ClientMethodCounters* Insert(std::string_view func, size_t hash);

  const std::string name_;
  const std::string protocol_;
  const std::string target_;
  std::array<std::atomic<ClientMethodCounters*>, kSlots> slots_{};
  std::mutex insert_mu_;
  size_t methods_ = 0;  // under insert_mu_
  std::unique_ptr<ClientMethodCounters> other_;
  std::atomic<int64_t> connections_{0};
  std::atomic<uint64_t> ejections_{0};
};

}  // namespace trpc::detail
