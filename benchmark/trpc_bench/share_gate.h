#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace trpc::bench {

/// Keeps the hot connection's share of the calls at `share` in the closed loop (--hot-share),
/// across the worker threads. A closed loop sends as fast as the server answers, so the hot
/// connection and the others would otherwise carry whatever the server's speed on each gives;
/// here a side that runs ahead of the share waits for the other.
///
/// The balance B = hot_sent * (1 - share) - cold_sent * share counts the hot calls sent beyond
/// the share (B = 0: exactly the share). A hot call may go while B stays <= hot_window, a cold
/// one while B stays >= -cold_window. With both windows >= 1 one side may always go, so the two
/// never wait for each other. A refused worker parks its slot and calls Wait(); it is woken
/// (its waker runs, once) when its side has a quarter of its window free again, or at Open().
///
/// Thread contract: SetWaker() before the run; the rest from any thread. Wakers run on the
/// thread whose send moved the balance, and must only post to their worker's loop.
/// Memory ordering: the balance and the waiter flags are seq_cst, so a waiter that stores its
/// flag and then reads the balance, and a sender that moves the balance and then reads the
/// flags, cannot both miss the other (no lost wake-up).
class ShareGate {
 public:
  ShareGate(double share, int hot_window, int cold_window, int workers);

  void SetWaker(int worker, std::function<void()> waker);
  /// True if a call of this side (hot or not) may be sent now; it is then counted as sent.
  bool TryAcquire(bool hot);
  /// `worker` has a slot of this side parked: wakes it once that side may go again.
  void Wait(int worker, bool hot);
  /// Stops gating (the run stops sending) and wakes every waiter.
  void Open();

 private:
  bool Allowed(bool hot, int64_t balance, int64_t room) const;
  void WakeWaiters(bool hot);

  // Fixed point: one call = kUnit.
  static constexpr int64_t kUnit = int64_t{1} << 20;
  const int64_t hot_step_;   // (1 - share) * kUnit
  const int64_t cold_step_;  // share * kUnit
  const int64_t hot_window_;
  const int64_t cold_window_;
  std::atomic<int64_t> balance_{0};
  std::atomic<bool> open_{false};
  std::atomic<int> waiters_[2] = {0, 0};  // [hot] workers with a waiting flag set
  std::vector<std::function<void()>> wakers_;
  // [hot][worker]: the worker waits for that side.
  std::unique_ptr<std::atomic<bool>[]> waiting_[2];
};

}  // namespace trpc::bench
