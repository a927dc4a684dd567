#include "benchmark/trpc_bench/coordinator.h"

#include <algorithm>
#include <chrono>

namespace trpc::bench {

template <typename Pred>
bool Coordinator::WaitUntil(std::unique_lock<std::mutex>& lock, int64_t deadline_ns, Pred pred) {
  // steady_clock is CLOCK_MONOTONIC, the clock of MonotonicNanos().
  auto deadline = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline_ns));
  return cv_.wait_until(lock, deadline, pred);
}

void Coordinator::ReportReady() {
  std::lock_guard lock(mu_);
  ++ready_;
  cv_.notify_all();
}

void Coordinator::ReportFinished(int64_t last_done_ns) {
  std::lock_guard lock(mu_);
  ++finished_;
  last_done_ns_ = std::max(last_done_ns_, last_done_ns);
  cv_.notify_all();
}

void Coordinator::ReportInterval(int round, const IntervalStats& s) {
  std::lock_guard lock(mu_);
  if (round != round_) return;
  interval_.Merge(s);
  ++reports_;
  cv_.notify_all();
}

bool Coordinator::WaitReady(int n, int64_t deadline_ns) {
  std::unique_lock lock(mu_);
  return WaitUntil(lock, deadline_ns, [&] { return ready_ >= n; });
}

bool Coordinator::WaitFinished(int n, int64_t deadline_ns) {
  std::unique_lock lock(mu_);
  return WaitUntil(lock, deadline_ns, [&] { return finished_ >= n; });
}

int Coordinator::finished() const {
  std::lock_guard lock(mu_);
  return finished_;
}

int64_t Coordinator::last_done_ns() const {
  std::lock_guard lock(mu_);
  return last_done_ns_;
}

void Coordinator::BeginRound(int round) {
  std::lock_guard lock(mu_);
  round_ = round;
  reports_ = 0;
  interval_.Reset();
}

int Coordinator::CollectRound(int round, int n, int64_t deadline_ns, IntervalStats* out) {
  std::unique_lock lock(mu_);
  WaitUntil(lock, deadline_ns, [&] { return round_ != round || reports_ >= n; });
  out->Reset();
  if (round_ != round) return 0;
  out->Merge(interval_);
  return reports_;
}

}  // namespace trpc::bench
