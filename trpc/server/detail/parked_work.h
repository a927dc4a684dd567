#pragma once

#include <atomic>
#include <cstdint>

namespace trpc::detail {

/// The process-wide bound on parked work (server.max_parked_requests): requests the server has
/// admitted and not finished with — a handler running, or parked in a fiber, or a reply deferred
/// with SetResponse(false). A request takes a permit when it is admitted (RequestPath) and
/// gives it back when its context is freed (after the reply, or its end unanswered). Without a
/// permit it is refused at once with ret 22.
///
/// Counting costs no shared write per request: each thread keeps a few permits of its own
/// (thread_local), and takes them from or gives them back to the shared pool a batch at a time.
/// Up to two batches per thread may sit unused in threads' caches, so a refusal can come that
/// many permits early; a batch is 1/1024 of the limit, at most 32. A thread's cache goes back to
/// the pool when the thread exits.
///
/// Memory ordering: the pool is one atomic count of free permits, changed only by
/// read-modify-writes (a CAS to take, fetch_add to give back); a thread's cache is touched by
/// that thread alone. Permits are fungible, and free + cached + held == limit at every moment,
/// so at most `limit` requests hold one at once, whatever threads take and give them back.
/// Nothing else is ordered by it: relaxed throughout.
///
/// Thread contract: every method is safe from any thread at any time.
class ParkedWork {
 public:
  /// The one instance (constant-initialized, never destroyed: contexts may be freed during
  /// exit).
  static ParkedWork& Instance() { return instance_; }

  /// Sets the bound (0 = none: TryAcquire() always succeeds without counting). May be called
  /// while permits are held: the pool moves by the difference, and may stay below zero until
  /// enough are given back.
  void SetLimit(uint64_t limit);
  uint64_t limit() const { return limit_.load(std::memory_order_relaxed); }

  /// Takes a permit: kTaken, kRefused at the bound, kUnbounded when there is no bound (nothing
  /// to give back).
  enum class Result : uint8_t { kUnbounded, kTaken, kRefused };
  Result TryAcquire() {
    if (limit_.load(std::memory_order_relaxed) == 0) return Result::kUnbounded;
    if (tls_cached_ > 0) {
      --tls_cached_;
      return Result::kTaken;
    }
    return TakeBatch();
  }
  /// Gives back a permit that TryAcquire() returned kTaken for, from any thread.
  void Release() {
    // (A first permit in this thread's cache also arms its return at the thread's exit.)
    if (++tls_cached_ > 2 * batch_.load(std::memory_order_relaxed) || tls_cached_ == 1) {
      GiveBack();
    }
  }

  /// Permits out of the pool now: held by requests, or cached by threads. An upper bound of the
  /// requests parked.
  uint64_t Taken() const;

  constexpr ParkedWork() = default;

 private:
  friend struct ThreadCacheReturner;
  // The slow paths: a batch from the pool into this thread's cache, and what the cache holds
  // beyond two batches back (down to one); both make sure the cache goes back at the thread's
  // exit.
  Result TakeBatch();
  void GiveBack();

  static ParkedWork instance_;
  // This thread's permits taken from the pool and not held by a request. Constant-initialized
  // and trivial, so the fast paths reach it without a TLS wrapper call.
  static constinit thread_local int64_t tls_cached_;

  std::atomic<uint64_t> limit_{0};
  std::atomic<int64_t> free_{0};
  std::atomic<int64_t> batch_{1};
};

}  // namespace trpc::detail
