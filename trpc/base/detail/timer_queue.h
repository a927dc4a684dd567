#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace trpc {

/// Identifies a timer for cancellation; 0 is never a valid id.
using TimerId = uint64_t;

/// One-shot timers keyed by monotonic deadline (ns), run in (deadline, insertion) order.
///
/// A few FIFO lanes beside a min-heap: a timer goes to the end of the lane whose last deadline
/// is the latest one not after its own (an empty lane if none fits), in O(1); only a timer no
/// lane can take goes into the heap. Most timers take a lane — per-call timeouts and idle
/// timers are "now + a fixed duration", so each kind's deadlines arrive in order, one lane per
/// kind — which spares each call a heap push and, once the call has cancelled its timer, a heap
/// pop, which showed in a load client with thousands of calls in flight (docs/benchmark.md).
///
/// Cancel is O(1): a timer's slot carries a generation that the id must match, and stale
/// entries are dropped when they reach the front of their lane (or when cancelled entries
/// outnumber live ones 4 to 1, both lanes are compacted). Not thread-safe: owned by one loop
/// (a Reactor or a fiber worker) and used on its thread only.
///
/// The earliest live deadline is cached until the next Add, Cancel or expiry: a loop asks for it
/// on every iteration (NextDeadline, then RunExpired), usually with nothing changed in between.
class TimerQueue {
 public:
  using Callback = std::function<void()>;

  TimerId Add(int64_t deadline_ns, Callback cb);
  /// Returns true if the timer was pending and is now cancelled (its callback will not run).
  bool Cancel(TimerId id);
  /// Deadline of the earliest live timer, or -1 if none.
  int64_t NextDeadline();
  /// Runs every timer whose deadline is <= now_ns. Callbacks may add or cancel timers.
  void RunExpired(int64_t now_ns);
  size_t size() const { return live_; }
  /// Entries held in both lanes, cancelled ones not yet dropped included (test hook).
  size_t queued() const { return queued_; }

 private:
  struct Slot {
    Callback cb;
    uint32_t generation = 1;
    bool armed = false;
  };
  struct Entry {
    int64_t deadline;
    uint64_t seq;  // FIFO among equal deadlines
    uint32_t slot;
    uint32_t generation;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.deadline != b.deadline ? a.deadline > b.deadline : a.seq > b.seq;
    }
  };
  bool Live(const Entry& e) const {
    return slots_[e.slot].armed && slots_[e.slot].generation == e.generation;
  }
  void PopStale();
  static constexpr size_t kLanes = 4;
  // The lane holding the earliest entry (call after PopStale), or kLanes for the heap.
  size_t EarliestLane() const;

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Entry> heap_;
  std::array<std::deque<Entry>, kLanes> lanes_;  // each: deadlines non-decreasing front to back
  uint64_t seq_ = 0;
  size_t queued_ = 0;  // entries in the heap and the lanes, stale ones included
  size_t live_ = 0;
  // NextDeadline()'s answer while `next_valid_` (cleared by every change).
  int64_t next_ = -1;
  bool next_valid_ = false;
};

}  // namespace trpc
