#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "trpc/base/logging.h"

namespace trpc {

/// A bounded multi-producer, multi-consumer FIFO queue of pointers (Dmitry Vyukov's bounded
/// MPMC queue). Each cell carries a sequence number saying whose turn it is:
///   seq == pos            free for the producer that claims `pos`
///   seq == pos + 1        full, for the consumer that claims `pos`
///   seq == pos + capacity free again, for the producer of the next lap
///
/// Thread contract: every method is safe from any thread.
///
/// Memory ordering contract: a producer writes the cell's value, then stores seq = pos + 1 with
/// release; the consumer that claims `pos` loads seq with acquire before reading the value, so
/// everything the producer did before TryPush() happens-before what the consumer does after
/// TryPop() returns the pointer. The consumer stores seq = pos + capacity with release after
/// reading; the next producer of that cell loads it with acquire. The position counters are
/// claimed with relaxed CAS: they arbitrate, they publish nothing.
///
/// Progress: lock-free between claims, but a thread preempted between claiming a cell and
/// publishing it makes consumers see "empty" at that cell until it resumes (order is kept).
template <typename T>
class MpmcQueue {
 public:
  explicit MpmcQueue(size_t capacity) : mask_(capacity - 1), cells_(new Cell[capacity]) {
    TRPC_CHECK(capacity >= 2 && (capacity & (capacity - 1)) == 0,
               "MpmcQueue capacity must be a power of two >= 2, got {}", capacity);
    for (size_t i = 0; i < capacity; ++i) cells_[i].seq.store(i, std::memory_order_relaxed);
  }
  MpmcQueue(const MpmcQueue&) = delete;
  MpmcQueue& operator=(const MpmcQueue&) = delete;

  /// False when full.
  bool TryPush(T* value) {
    size_t pos = enqueue_pos_.load(std::memory_order_relaxed);
    Cell* c;
    for (;;) {
      c = &cells_[pos & mask_];
      size_t seq = c->seq.load(std::memory_order_acquire);
      intptr_t dif = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos);
      if (dif == 0) {
        if (enqueue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (dif < 0) {
        return false;
      } else {
        pos = enqueue_pos_.load(std::memory_order_relaxed);
      }
    }
    c->value = value;
    c->seq.store(pos + 1, std::memory_order_release);
    return true;
  }

  /// The oldest pointer, or nullptr when empty.
  T* TryPop() {
    size_t pos = dequeue_pos_.load(std::memory_order_relaxed);
    Cell* c;
    for (;;) {
      c = &cells_[pos & mask_];
      size_t seq = c->seq.load(std::memory_order_acquire);
      intptr_t dif = static_cast<intptr_t>(seq) - static_cast<intptr_t>(pos + 1);
      if (dif == 0) {
        if (dequeue_pos_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (dif < 0) {
        return nullptr;
      } else {
        pos = dequeue_pos_.load(std::memory_order_relaxed);
      }
    }
    T* value = c->value;
    c->seq.store(pos + mask_ + 1, std::memory_order_release);
    return value;
  }

  /// A hint: may be stale by the time it is used.
  size_t Size() const {
    size_t e = enqueue_pos_.load(std::memory_order_relaxed);
    size_t d = dequeue_pos_.load(std::memory_order_relaxed);
    return e > d ? e - d : 0;
  }
  bool Empty() const { return Size() == 0; }
  size_t Capacity() const { return mask_ + 1; }

 private:
  static constexpr size_t kCacheLine = 64;
  struct Cell {
    std::atomic<size_t> seq;
    T* value;
  };
  alignas(kCacheLine) const size_t mask_;
  const std::unique_ptr<Cell[]> cells_;
  alignas(kCacheLine) std::atomic<size_t> enqueue_pos_{0};
  alignas(kCacheLine) std::atomic<size_t> dequeue_pos_{0};
};

}  // namespace trpc
