#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace trpc::detail {

/// Admission control of one service (`max_concurrency`): at most `limit()` requests are in the
/// server at once; one more is refused at arrival, before its body is parsed, so refusing costs
/// a small fraction of serving (docs/overload.md).
///
/// "In the server" means admitted and not yet replied. In the merged model a worker also holds
/// every request it admits during one pass over its ready connections (they wait for each other
/// inline), so there a worker admits at most ceil(limit / workers) requests per pass as well.
///
/// The limit is fixed, or adaptive (`max_concurrency: auto`): every window (>= 100 ms and >= 16
/// replies, or 1 s) it compares the average time in the server (arrival to reply) with a target
/// of twice the service time (at least the service time + 0.5 ms), cuts the limit in proportion
/// when over it, and raises it by sqrt(limit) when the window's demand reached the limit while
/// under it. The service time (handler start to reply, averaged over the window and smoothed)
/// is what the server would take with no queue: measured apart from the queueing, it does not
/// drift up under a standing queue, so the target holds through a long overload. The limit never
/// falls below ceil(peak throughput x service time), the concurrency the server needs to deliver
/// what it has delivered, nor below 1 per worker.
///
/// Thread contract and memory ordering:
/// - TryAdmit(r, ...) runs on reactor r's loop thread only. `pass_*` fields of reactor r are
///   touched by that thread alone (plain fields).
/// - OnDone(r, ...) runs on any thread (a fiber may reply from another worker). The per-reactor
///   window sums are relaxed atomics: they are statistics, read by the window roll without
///   ordering anything else.
/// - in_flight_ is a relaxed counter: increment at admission, decrement at the reply. A stale
///   read admits or refuses one request more or less; nothing else is published through it.
/// - limit_ is written by the window roll (relaxed) and read at every admission (relaxed).
/// - The adaptive state (history, limit as a real number) belongs to whichever thread holds
///   rolling_ (acquire on taking it, release on leaving it), so each roll sees the last one's
///   writes.
class ConcurrencyLimiter {
 public:
  /// `fixed_limit` > 0: a fixed limit; 0 with `adaptive`: auto. `inline_passes`: the thread
  /// model runs handlers inline (merged), see above.
  ConcurrencyLimiter(uint32_t fixed_limit, bool adaptive, size_t reactors, bool inline_passes);

  /// Reactor `r`'s loop thread, at a request's arrival in the pass that began at
  /// `pass_start_ns` (the reactor's LoopTimeNs()). True: admitted, and OnDone() must follow once.
  bool TryAdmit(size_t r, int64_t pass_start_ns) {
    Reactor& s = reactors_[r];
    if (s.pass_start_ns != pass_start_ns) {
      s.pass_start_ns = pass_start_ns;
      s.pass_admitted = 0;
    }
    uint32_t limit = limit_.load(std::memory_order_relaxed);
    uint32_t in_flight = in_flight_.load(std::memory_order_relaxed);
    uint32_t demand = in_flight;
    if (inline_passes_) {
      // The pass's earlier requests, scaled to the whole service (each worker has its share).
      uint32_t pass = s.pass_admitted * static_cast<uint32_t>(reactors_.size());
      if (pass > demand) demand = pass;
    }
    if (demand >= limit) {
      s.rejected.store(s.rejected.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      return false;
    }
    ++s.pass_admitted;
    in_flight_.fetch_add(1, std::memory_order_relaxed);  // several reactors admit at once
    if (demand + 1 > s.peak_demand.load(std::memory_order_relaxed)) {
      s.peak_demand.store(demand + 1, std::memory_order_relaxed);
    }
    return true;
  }

  /// Any thread: an admitted request was answered `latency_ns` after its arrival, `service_ns`
  /// after its handler started (0 if it never started).
  void OnDone(size_t r, int64_t latency_ns, int64_t service_ns, int64_t now_ns);

  uint32_t limit() const { return limit_.load(std::memory_order_relaxed); }
  uint32_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  bool adaptive() const { return adaptive_; }
  /// The service time learnt so far (ns): about what a request takes with no queue; 0 before
  /// the first window.
  int64_t service_time_ns() const { return service_ns_.load(std::memory_order_relaxed); }

 private:
  struct alignas(64) Reactor {
    // Loop thread only.
    int64_t pass_start_ns = -1;
    uint32_t pass_admitted = 0;
    // Window sums: relaxed, any thread adds (OnDone); the roll takes them.
    std::atomic<uint64_t> replies{0};
    std::atomic<uint64_t> latency_sum_ns{0};
    std::atomic<uint64_t> service_sum_ns{0};
    // Loop thread writes (load + store), the roll takes them.
    std::atomic<uint32_t> peak_demand{0};
    std::atomic<uint64_t> rejected{0};
  };
  void Roll(int64_t now_ns);

  const bool adaptive_;
  const bool inline_passes_;
  std::vector<Reactor> reactors_;
  // Admitted and not yet answered, service-wide.
  std::atomic<uint32_t> in_flight_{0};
  std::atomic<uint32_t> limit_;
  std::atomic<int64_t> window_end_ns_{0};
  std::atomic<int64_t> service_ns_{0};
  std::atomic<bool> rolling_{false};
  // Adaptive state, owned by the holder of rolling_.
  int64_t window_start_ns_ = 0;
  double limit_real_ = 0;
  double service_smoothed_ = 0;  // ns; 0 = no window yet
  static constexpr int kHistory = 8;
  double qps_history_[kHistory] = {};  // replies/s of the last windows, for the floor
  int history_next_ = 0;
};

}  // namespace trpc::detail
