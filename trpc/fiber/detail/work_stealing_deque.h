#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "trpc/base/logging.h"

namespace trpc::fiber::detail {

/// A bounded Chase-Lev work-stealing deque of pointers (Chase & Lev, SPAA 2005; the C11
/// orderings follow Lê, Pop, Cohen & Zappa Nardelli, PPoPP 2013). One owner pushes at the
/// bottom; anyone (the owner included) steals from the top. The owner may also pop from the
/// bottom (LIFO).
///
/// Thread contract: Push() and Pop() by the owning worker only; Steal() and Size() from any
/// thread.
///
/// Memory ordering contract:
///   - Push() writes the slot, then publishes the new bottom with a release store; a thief
///     loads bottom with acquire, so it sees the slot's contents (and everything the pusher did
///     before Push(), such as initialising the fiber descriptor the pointer names).
///   - A thief claims slot `t` with a seq_cst CAS on top; the owner's Pop() publishes its
///     decremented bottom, issues a seq_cst fence and then reads top. The fence pairs with the
///     thief's fence between its loads of top and bottom, so owner and thief cannot both take
///     the last element: at most one CAS on top for it succeeds.
///   - Slots are atomics read/written relaxed: a thief may read a slot the owner is about to
///     overwrite after a wrap-around, but its CAS on top then fails and the value is discarded.
///     Push() refuses (returns false) rather than overwrite a slot a thief might still claim.
template <typename T>
class WorkStealingDeque {
 public:
  explicit WorkStealingDeque(size_t capacity)
      : mask_(capacity - 1), slots_(new std::atomic<T*>[capacity]) {
    TRPC_CHECK(capacity >= 2 && (capacity & (capacity - 1)) == 0,
               "WorkStealingDeque capacity must be a power of two, got {}", capacity);
  }

  /// Owner only. False when full.
  bool Push(T* item) {
    int64_t b = bottom_.load(std::memory_order_relaxed);
    int64_t t = top_.load(std::memory_order_acquire);
    if (b - t > static_cast<int64_t>(mask_)) return false;
    slots_[b & mask_].store(item, std::memory_order_relaxed);
    // A release store (the paper's release fence + relaxed store, in the form TSan models; the
    // same instruction on x86).
    bottom_.store(b + 1, std::memory_order_release);
    return true;
  }

  /// Owner only: the newest element, or nullptr.
  T* Pop() {
    int64_t b = bottom_.load(std::memory_order_relaxed) - 1;
    bottom_.store(b, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    int64_t t = top_.load(std::memory_order_relaxed);
    if (t > b) {  // empty
      bottom_.store(b + 1, std::memory_order_relaxed);
      return nullptr;
    }
    T* item = slots_[b & mask_].load(std::memory_order_relaxed);
    if (t == b) {  // the last element: race the thieves for it
      if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed)) {
        item = nullptr;
      }
      bottom_.store(b + 1, std::memory_order_relaxed);
    }
    return item;
  }

  /// Any thread: the oldest element, or nullptr when empty or when another thief won the race
  /// (callers treat both as "nothing here now").
  T* Steal() {
    int64_t t = top_.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    int64_t b = bottom_.load(std::memory_order_acquire);
    if (t >= b) return nullptr;
    T* item = slots_[t & mask_].load(std::memory_order_relaxed);
    if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst,
                                      std::memory_order_relaxed)) {
      return nullptr;
    }
    return item;
  }

  /// Approximate from other threads.
  size_t Size() const {
    int64_t b = bottom_.load(std::memory_order_relaxed);
    int64_t t = top_.load(std::memory_order_relaxed);
    return b > t ? static_cast<size_t>(b - t) : 0;
  }
  size_t Capacity() const { return mask_ + 1; }

 private:
  static constexpr size_t kCacheLine = 64;
  alignas(kCacheLine) std::atomic<int64_t> top_{0};     // thieves (and owner's steal) CAS it
  alignas(kCacheLine) std::atomic<int64_t> bottom_{0};  // owner writes
  alignas(kCacheLine) const size_t mask_;
  const std::unique_ptr<std::atomic<T*>[]> slots_;
};

}  // namespace trpc::fiber::detail
