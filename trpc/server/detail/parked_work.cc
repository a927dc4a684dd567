#include "trpc/server/detail/parked_work.h"

#include <algorithm>

namespace trpc::detail {

// One thread's permits: taken from the pool and not held by a request. Given back when the
// thread exits.
struct ThreadPermits {
  int64_t cached = 0;
  ~ThreadPermits() {
    if (cached != 0) ParkedWork::Instance().free_.fetch_add(cached, std::memory_order_relaxed);
  }
};

namespace {
thread_local ThreadPermits tls_permits;
}  // namespace

ParkedWork& ParkedWork::Instance() {
  static ParkedWork* instance = new ParkedWork();
  return *instance;
}

void ParkedWork::SetLimit(uint64_t limit) {
  uint64_t old = limit_.exchange(limit, std::memory_order_relaxed);
  batch_.store(std::clamp<int64_t>(static_cast<int64_t>(limit / 1024), 1, 32),
               std::memory_order_relaxed);
  free_.fetch_add(static_cast<int64_t>(limit) - static_cast<int64_t>(old),
                  std::memory_order_relaxed);
}

ParkedWork::Result ParkedWork::TryAcquire() {
  if (limit_.load(std::memory_order_relaxed) == 0) return Result::kUnbounded;
  ThreadPermits& mine = tls_permits;
  if (mine.cached > 0) {
    --mine.cached;
    return Result::kTaken;
  }
  int64_t want = batch_.load(std::memory_order_relaxed);
  int64_t cur = free_.load(std::memory_order_relaxed);
  int64_t take;
  do {
    if (cur <= 0) return Result::kRefused;
    take = std::min(want, cur);
  } while (!free_.compare_exchange_weak(cur, cur - take, std::memory_order_relaxed));
  mine.cached += take - 1;
  return Result::kTaken;
}

void ParkedWork::Release() {
  ThreadPermits& mine = tls_permits;
  int64_t batch = batch_.load(std::memory_order_relaxed);
  if (++mine.cached > 2 * batch) {
    // Keep one batch: a thread that both admits and finishes requests stays off the pool.
    free_.fetch_add(mine.cached - batch, std::memory_order_relaxed);
    mine.cached = batch;
  }
}

uint64_t ParkedWork::Taken() const {
  int64_t taken = static_cast<int64_t>(limit()) - free_.load(std::memory_order_relaxed);
  return taken > 0 ? static_cast<uint64_t>(taken) : 0;
}

}  // namespace trpc::detail
