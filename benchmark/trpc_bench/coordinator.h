#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "benchmark/trpc_bench/load_stats.h"

namespace trpc::bench {

/// Where the worker threads report to the main thread: connected, finished (no call of theirs
/// left in flight), and their progress interval when the main thread asks for one. The main
/// thread waits here with deadlines, so a stuck worker cannot hang the run.
///
/// Thread contract: every method is safe from any thread. Deadlines are MonotonicNanos().
class Coordinator {
 public:
  void ReportReady();
  /// `last_done_ns`: when the worker's last measured call completed (0 if none did).
  void ReportFinished(int64_t last_done_ns);
  /// Adds a worker's interval to round `round`; a report for an older round is dropped.
  void ReportInterval(int round, const IntervalStats& s);

  /// True once `n` workers are ready; false at the deadline.
  bool WaitReady(int n, int64_t deadline_ns);
  /// True once `n` workers have finished; false at the deadline.
  bool WaitFinished(int n, int64_t deadline_ns);
  int finished() const;
  int64_t last_done_ns() const;

  /// Starts progress round `round`: later reports of older rounds are dropped.
  void BeginRound(int round);
  /// Waits until `n` workers reported round `round` or the deadline, then moves what arrived
  /// into `*out` (merged) and returns the number of reports.
  int CollectRound(int round, int n, int64_t deadline_ns, IntervalStats* out);

 private:
  template <typename Pred>
  bool WaitUntil(std::unique_lock<std::mutex>& lock, int64_t deadline_ns, Pred pred);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int ready_ = 0;
  int finished_ = 0;
  int64_t last_done_ns_ = 0;
  int round_ = -1;
  int reports_ = 0;
  IntervalStats interval_;
};

}  // namespace trpc::bench
