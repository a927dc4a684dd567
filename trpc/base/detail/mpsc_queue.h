#pragma once

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "trpc/base/logging.h"

namespace trpc {

/// A bounded multi-producer, single-consumer FIFO queue: a ring of cells, each with a sequence
/// number that says whose turn it is (Dmitry Vyukov's bounded MPMC queue, 1024cores.net, with
/// the consumer side simplified to a single thread). Used to hand work (closures, buffers) to
/// one loop thread.
///
///   cells_[i]: | seq | storage for one T |      mask_ = capacity - 1
///
///   For the cell at ring position pos (index pos & mask_):
///     seq == pos             free: the producer that claims `pos` may write it
///     seq == pos + 1         full: holds the element pushed at `pos`; the consumer may read it
///     seq == pos + capacity  free again: the consumer has emptied it for the next lap
///
/// Thread contract: TryPush() is safe from any thread. TryPop() is for one consumer at a time
/// (a debug build checks that no two TryPop() calls overlap); the consumer role may move to
/// another thread through a synchronizing handoff. Empty() and Capacity() are safe from any
/// thread. The destructor must not race with any other call; it destroys elements still queued.
///
/// Memory ordering contract:
///   - A successful TryPush() writes the element and then stores seq = pos + 1 with release;
///     the TryPop() that returns that element loads seq with acquire and sees pos + 1. So
///     everything the producer did before TryPush() (including constructing the element)
///     happens-before everything the consumer does after that TryPop() returns.
///   - TryPop() moves the element out, destroys it, and then stores seq = pos + capacity with
///     release; the producer that next claims the cell loads seq with acquire. So the consumer's
///     reads of a cell happen-before the next write of that cell.
///   - The claim of a position (enqueue_pos_ CAS) is relaxed: it only arbitrates between
///     producers; no data is published through it.
///   - Empty() uses relaxed loads and gives no ordering; it is a hint.
///
/// Progress: producers are lock-free among themselves, but a producer that has claimed a cell
/// and is preempted before publishing it makes TryPop() report empty until it finishes, even if
/// later cells are full (FIFO order is kept; nothing is lost).
///
/// T must be nothrow move-constructible (a throwing move after a cell is claimed would leave the
/// cell claimed forever) and move-assignable. Move-only types (std::unique_ptr, std::function)
/// are fine.
template <typename T>
class MpscQueue {
 public:
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "MpscQueue<T> needs a noexcept move constructor");
  static_assert(std::is_move_assignable_v<T>, "MpscQueue<T> needs move assignment");

  /// `capacity` must be a power of two and at least 2 (with one cell, "full at pos" and "free
  /// for pos + 1" would have the same sequence number).
  explicit MpscQueue(size_t capacity) : mask_(capacity - 1), cells_(new Cell[capacity]) {
    TRPC_CHECK(capacity >= 2 && (capacity & (capacity - 1)) == 0,
               "MpscQueue capacity must be a power of two >= 2, got {}", capacity);
    for (size_t i = 0; i < capacity; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }

  MpscQueue(const MpscQueue&) = delete;
  MpscQueue& operator=(const MpscQueue&) = delete;

  ~MpscQueue() {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    for (;; ++pos) {
      Cell& c = cells_[pos & mask_];
      if (c.seq.load(std::memory_order_acquire) != pos + 1) break;
      c.Element()->~T();
    }
  }

  /// Appends `value`; returns false (leaving `value` untouched) when the queue is full.
  /// Safe from any thread.
  bool TryPush(T&& value) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    Cell* c;
    for (;;) {
      c = &cells_[pos & mask_];
      size_t seq = c->seq.load(std::memory_order_acquire);
      intptr_t dif = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (dif == 0) {
        // The cell is free for `pos`; claim the position. On failure `pos` is reloaded.
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (dif < 0) {
        return false;  // the cell still holds the element from the previous lap: full
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);  // another producer took `pos`
      }
    }
    ::new (static_cast<void*>(c->storage)) T(std::move(value));
    c->seq.store(pos + 1, std::memory_order_release);
    return true;
  }

  /// Moves the oldest element into `*out`; returns false when the queue is empty (or the oldest
  /// element's push has not finished). Consumer only.
  bool TryPop(T* out) {
#ifndef NDEBUG
    ConsumerGuard guard(this);
#endif
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    Cell& c = cells_[pos & mask_];
    if (c.seq.load(std::memory_order_acquire) != pos + 1) return false;
    T* elem = c.Element();
    *out = std::move(*elem);
    elem->~T();
    c.seq.store(pos + mask_ + 1, std::memory_order_release);
    dequeue_pos_.store(pos + 1, std::memory_order_relaxed);
    return true;
  }

  /// Approximate: a push in progress counts as an element, and from a thread other than the
  /// consumer the answer may be stale by the time it is used.
  bool Empty() const {
    return enqueue_pos_.load(std::memory_order_relaxed) ==
           dequeue_pos_.load(std::memory_order_relaxed);
  }

  /// Elements queued, counting pushes in progress. Exact from the consumer thread except that
  /// concurrent pushes may raise it at any moment; from other threads, a hint.
  size_t Size() const {
    return enqueue_pos_.load(std::memory_order_relaxed) -
           dequeue_pos_.load(std::memory_order_relaxed);
  }

  size_t Capacity() const { return mask_ + 1; }

 private:
  static constexpr size_t kCacheLine = 64;

  struct Cell {
    std::atomic<size_t> seq;
    alignas(T) unsigned char storage[sizeof(T)];
    T* Element() { return std::launder(reinterpret_cast<T*>(storage)); }
  };

#ifndef NDEBUG
  class ConsumerGuard {
   public:
    explicit ConsumerGuard(MpscQueue* q) : q_(q) {
      bool was_popping = q_->popping_.exchange(true, std::memory_order_acquire);
      assert(!was_popping && "MpscQueue::TryPop called from two threads at once");
      (void)was_popping;
    }
    ~ConsumerGuard() { q_->popping_.store(false, std::memory_order_release); }

   private:
    MpscQueue* q_;
  };
#endif

  // Read-only after construction; kept off the lines the two sides write.
  alignas(kCacheLine) const size_t mask_;
  const std::unique_ptr<Cell[]> cells_;
  // Written by producers (CAS).
  alignas(kCacheLine) std::atomic<size_t> enqueue_pos_{0};
  // Written by the consumer only; atomic so that Empty() may read it from any thread.
  alignas(kCacheLine) std::atomic<size_t> dequeue_pos_{0};
#ifndef NDEBUG
  std::atomic<bool> popping_{false};
#endif
};

}  // namespace trpc
