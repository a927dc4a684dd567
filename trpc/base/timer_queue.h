#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace trpc {

/// Identifies a timer for cancellation; 0 is never a valid id.
using TimerId = uint64_t;

/// A min-heap of one-shot timers keyed by monotonic deadline (ns). Cancel is O(1): a timer's
/// slot carries a generation that the id must match, and stale heap entries are skipped when
/// they surface. Not thread-safe: owned by one loop (a Reactor or a fiber worker) and used on its thread only.
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

  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  std::vector<Entry> heap_;
  uint64_t seq_ = 0;
  size_t live_ = 0;
};

}  // namespace trpc
