#include "benchmark/trpc_bench/share_gate.h"

#include <algorithm>
#include <cmath>

namespace trpc::bench {

ShareGate::ShareGate(double share, int hot_window, int cold_window, int workers)
    : hot_step_(std::llround((1 - share) * kUnit)),
      cold_step_(std::llround(share * kUnit)),
      hot_window_(std::max(hot_window, 1) * kUnit),
      cold_window_(std::max(cold_window, 1) * kUnit),
      wakers_(workers) {
  for (auto& w : waiting_) {
    w = std::make_unique<std::atomic<bool>[]>(workers);
    for (int i = 0; i < workers; ++i) w[i].store(false);
  }
}

void ShareGate::SetWaker(int worker, std::function<void()> waker) {
  wakers_[worker] = std::move(waker);
}

// Whether a call of this side fits with `room` calls' worth of its window kept free.
bool ShareGate::Allowed(bool hot, int64_t balance, int64_t room) const {
  if (hot) return balance + hot_step_ + room <= hot_window_;
  return balance - cold_step_ - room >= -cold_window_;
}

bool ShareGate::TryAcquire(bool hot) {
  int64_t b = balance_.load();
  const int64_t step = hot ? hot_step_ : -cold_step_;
  do {
    if (!open_.load(std::memory_order_relaxed) && !Allowed(hot, b, 0)) return false;
  } while (!balance_.compare_exchange_weak(b, b + step));
  // The other side may have room again (hysteresis: a quarter of its window, so that a side
  // held at its limit is not woken for every single call of the other).
  const bool other = !hot;
  if (waiters_[other].load() > 0 &&
      Allowed(other, b + step, (other ? hot_window_ : cold_window_) / 4)) {
    WakeWaiters(other);
  }
  return true;
}

void ShareGate::Wait(int worker, bool hot) {
  if (!waiting_[hot][worker].exchange(true)) waiters_[hot].fetch_add(1);
  // A send of the other side may have moved the balance before the flag was visible to it.
  if (open_.load() || Allowed(hot, balance_.load(), 0)) WakeWaiters(hot);
}

void ShareGate::Open() {
  open_.store(true);
  WakeWaiters(true);
  WakeWaiters(false);
}

void ShareGate::WakeWaiters(bool hot) {
  for (size_t i = 0; i < wakers_.size(); ++i) {
    if (waiting_[hot][i].load() && waiting_[hot][i].exchange(false)) {
      waiters_[hot].fetch_sub(1);
      wakers_[i]();
    }
  }
}

}  // namespace trpc::bench
