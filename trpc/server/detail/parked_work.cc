#include "trpc/server/detail/parked_work.h"

#include <algorithm>

namespace trpc::detail {

constinit ParkedWork ParkedWork::instance_;
constinit thread_local int64_t ParkedWork::tls_cached_ = 0;

// Gives a thread's cached permits back when it exits. Touched only on the slow paths, so the
// fast paths pay no TLS wrapper for its destructor.
struct ThreadCacheReturner {
  bool armed = false;
  ~ThreadCacheReturner() {
    // (The trivial thread_local is still valid while the thread's destructors run.)
    if (armed && ParkedWork::tls_cached_ != 0) {
      ParkedWork::Instance().free_.fetch_add(ParkedWork::tls_cached_, std::memory_order_relaxed);
      ParkedWork::tls_cached_ = 0;
    }
  }
};

namespace {
thread_local ThreadCacheReturner tls_returner;
}  // namespace

void ParkedWork::SetLimit(uint64_t limit) {
  uint64_t old = limit_.exchange(limit, std::memory_order_relaxed);
  batch_.store(std::clamp<int64_t>(static_cast<int64_t>(limit / 1024), 1, 32),
               std::memory_order_relaxed);
  free_.fetch_add(static_cast<int64_t>(limit) - static_cast<int64_t>(old),
                  std::memory_order_relaxed);
}

ParkedWork::Result ParkedWork::TakeBatch() {
  int64_t want = batch_.load(std::memory_order_relaxed);
  int64_t cur = free_.load(std::memory_order_relaxed);
  int64_t take;
  do {
    if (cur <= 0) return Result::kRefused;
    take = std::min(want, cur);
  } while (!free_.compare_exchange_weak(cur, cur - take, std::memory_order_relaxed));
  tls_returner.armed = true;
  tls_cached_ += take - 1;
  return Result::kTaken;
}

void ParkedWork::GiveBack() {
  tls_returner.armed = true;
  int64_t batch = batch_.load(std::memory_order_relaxed);
  if (tls_cached_ <= 2 * batch) return;
  // Keep one batch: a thread that both admits and finishes requests stays off the pool.
  free_.fetch_add(tls_cached_ - batch, std::memory_order_relaxed);
  tls_cached_ = batch;
}

uint64_t ParkedWork::Taken() const {
  int64_t taken = static_cast<int64_t>(limit()) - free_.load(std::memory_order_relaxed);
  return taken > 0 ? static_cast<uint64_t>(taken) : 0;
}
}  // namespace trpc::detail
