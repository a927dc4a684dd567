#include "benchmark/trpc_bench/load_stats.h"

namespace trpc::bench {

void LoadStats::Merge(const LoadStats& o) {
  latency.Merge(o.latency);
  uncorrected.Merge(o.uncorrected);
  tail.Merge(o.tail);
  error_latency.Merge(o.error_latency);
  lateness.Merge(o.lateness);
  for (const auto& [code, n] : o.errors) errors[code] += n;
  requests += o.requests;
  ok += o.ok;
  good += o.good;
  late += o.late;
  expired += o.expired;
  timeouts += o.timeouts;
  tail_requests += o.tail_requests;
  hot_requests += o.hot_requests;
  unsent += o.unsent;
  slot_waits += o.slot_waits;
  responses += o.responses;
  streams_opened += o.streams_opened;
  for (const auto& [code, n] : o.open_failures) open_failures[code] += n;
  streams_dropped += o.streams_dropped;
}

void IntervalStats::Merge(const IntervalStats& o) {
  latency.Merge(o.latency);
  requests += o.requests;
  errors += o.errors;
}

void IntervalStats::Reset() {
  latency.Reset();
  requests = 0;
  errors = 0;
}

}  // namespace trpc::bench
