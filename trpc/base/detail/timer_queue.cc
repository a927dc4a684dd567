#include "trpc/base/detail/timer_queue.h"

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
  next_valid_ = false;
  Entry e{deadline_ns, seq_++, slot, s.generation};
  // Best fit: the lane whose last deadline is the latest one <= this one keeps the lanes
  // apart by kind (a 60 s idle timer's lane never takes the 1 s call timeouts' place).
  size_t best = kLanes, empty = kLanes;
  for (size_t i = 0; i < kLanes; ++i) {
    if (lanes_[i].empty()) {
      if (empty == kLanes) empty = i;
    } else if (lanes_[i].back().deadline <= deadline_ns &&
               (best == kLanes || lanes_[i].back().deadline > lanes_[best].back().deadline)) {
      best = i;
    }
  }
  if (best == kLanes) best = empty;
  ++queued_;
  if (best != kLanes) {
    lanes_[best].push_back(e);
  } else {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
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
  next_valid_ = false;
  // Keep the heap from filling with cancelled entries (e.g. per-call timeouts that are almost
  // always cancelled): rebuild when most of it is stale.
  if (queued_ > 64 && queued_ > 4 * live_) {
    auto stale = [this](const Entry& e) { return !Live(e); };
    queued_ -= std::erase_if(heap_, stale);
    std::make_heap(heap_.begin(), heap_.end(), Later{});
    for (auto& lane : lanes_) queued_ -= std::erase_if(lane, stale);  // keeps the order
  }
  return true;
}

void TimerQueue::PopStale() {
  while (!heap_.empty() && !Live(heap_.front())) {
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    --queued_;
  }
  for (auto& lane : lanes_) {
    while (!lane.empty() && !Live(lane.front())) {
      lane.pop_front();
      --queued_;
    }
  }
}

size_t TimerQueue::EarliestLane() const {
  const Entry* best = heap_.empty() ? nullptr : &heap_.front();
  size_t lane = kLanes;
  for (size_t i = 0; i < kLanes; ++i) {
    if (!lanes_[i].empty() && (best == nullptr || Later{}(*best, lanes_[i].front()))) {
      best = &lanes_[i].front();
      lane = i;
    }
  }
  return lane;
}

int64_t TimerQueue::NextDeadline() {
  if (next_valid_) return next_;
  PopStale();
  size_t lane = EarliestLane();
  if (lane != kLanes) {
    next_ = lanes_[lane].front().deadline;
  } else {
    next_ = heap_.empty() ? -1 : heap_.front().deadline;
  }
  next_valid_ = true;
  return next_;
}

void TimerQueue::RunExpired(int64_t now_ns) {
  // Nothing due: the cached earliest deadline says so without a look at the lanes.
  if (next_valid_ && (next_ < 0 || next_ > now_ns)) return;
  next_valid_ = false;
  while (true) {
    PopStale();
    Entry e;
    size_t lane = EarliestLane();
    if (lane != kLanes) {
      if (lanes_[lane].front().deadline > now_ns) return;
      e = lanes_[lane].front();
      lanes_[lane].pop_front();
      --queued_;
    } else {
      if (heap_.empty() || heap_.front().deadline > now_ns) return;
      e = heap_.front();
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      heap_.pop_back();
      --queued_;
    }
    Slot& s = slots_[e.slot];
    Callback cb = std::move(s.cb);
    s.armed = false;
    s.cb = nullptr;
    ++s.generation;
    free_slots_.push_back(e.slot);
    --live_;
    next_valid_ = false;  // (and again by whatever cb adds or cancels)
    cb();
  }
}

}  // namespace trpc
