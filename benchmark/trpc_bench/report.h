#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmark/trpc_bench/load_stats.h"
#include "benchmark/trpc_bench/options.h"

namespace trpc::bench {

/// Everything a run measured, merged over the threads, plus the self-check's verdict.
struct RunResult {
  double window_s = 0;
  LoadStats stats;
  double client_cpu_percent = 0;  // of one core; N threads can reach N * 100
  int64_t server_cpu_us = -1;     // over the window; -1 without --server-pid (or unreadable)
  bool bottleneck = false;        // the client, not the server, probably limited the run
  std::vector<std::string> warnings;

  double qps() const { return window_s > 0 ? stats.requests / window_s : 0; }
  /// OK replies within the caller's deadline (from the intended send time) per second.
  double goodput() const { return window_s > 0 ? stats.good / window_s : 0; }
  /// Requests actually sent per second (expired ones were not).
  double sent_qps() const { return window_s > 0 ? (stats.requests - stats.expired) / window_s : 0; }
};

/// Fills `bottleneck` and `warnings` from the figures: the client's CPU, achieved vs target
/// rate, send lateness, and how often due requests had to wait for a free connection.
void CheckClientHealth(const Options& o, RunResult* r);

void PrintSettings(FILE* out, const Options& o);
/// One progress line: second `second` of the window.
void PrintProgress(FILE* out, int second, const IntervalStats& s);
/// The final table, errors, self-check, server CPU and warnings.
void PrintReport(FILE* out, const Options& o, const RunResult& r);
/// The machine-readable result (one JSON object; keys in benchmark/trpc_bench/README.md).
std::string ToJson(const Options& o, const RunResult& r);

}  // namespace trpc::bench
