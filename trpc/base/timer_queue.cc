#include "trpc/base/timer_queue.h"

#include <algorithm>

namespace trpc {

TimerId TimerQueue::Add(int64_t deadline_ns, Callback cb) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& s = slots_[slot];
  s.cb = std::move(cb);
  s.armed = true;
  heap_.push_back(Entry{deadline_ns, seq_++, slot, s.generation});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  ++live_;
  return (static_cast<uint64_t>(slot) << 32) | s.generation;
}

bool TimerQueue::Cancel(TimerId id) {
  uint32_t slot = static_cast<uint32_t>(id >> 32);
  uint32_t gen = static_cast<uint32_t>(id);
  if (id == 0 || slot >= slots_.size()) return false;
  Slot& s = slots_[slot];
  if (!s.armed || s.generation != gen) return false;
  s.armed = false;
  s.cb = nullptr;
  ++s.generation;
  free_slots_.push_back(slot);
  --live_;
  // Keep the heap from filling with cancelled entries (e.g. per-call timeouts that are almost
  // always cancelled): rebuild when most of it is stale.
  if (heap_.size() > 64 && heap_.size() > 4 * live_) {
    std::erase_if(heap_, [this](const Entry& e) { return !Live(e); });
    std::make_heap(heap_.begin(), heap_.end(), Later{});
  }
  return true;
}

void TimerQueue::PopStale() {
  while (!heap_.empty() && !Live(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
  }
}

int64_t TimerQueue::NextDeadline() {
  PopStale();
  return heap_.empty() ? -1 : heap_.front().deadline;
}

void TimerQueue::RunExpired(int64_t now_ns) {
  while (true) {
    PopStale();
    if (heap_.empty() || heap_.front().deadline > now_ns) return;
    Entry e = heap_.front();
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    Slot& s = slots_[e.slot];
    Callback cb = std::move(s.cb);
    s.armed = false;
    s.cb = nullptr;
    ++s.generation;
    free_slots_.push_back(e.slot);
    --live_;
    cb();
  }
}

}  // namespace trpc
