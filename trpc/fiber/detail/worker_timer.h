#pragma once

#include <cstdint>
#include <functional>

namespace trpc::fiber::detail {

class Worker;

// Timers on a worker's own heap (Worker::timers()): the worker runs the due ones between fibers
// (Worker::RunTimers()) and parks no longer than until the next one; other threads cancel
// through the worker's inbox (Worker::PostTimerCancel()).

/// A timer armed on one worker's heap.
struct WorkerTimer {
  Worker* worker = nullptr;
  uint64_t id = 0;
};

/// Runs `cb` on the calling worker at `deadline_ns`. Worker threads only (fibers included).
WorkerTimer AddWorkerTimer(int64_t deadline_ns, std::function<void()> cb);

/// Cancels a timer from any thread: at once on its own worker, else through the worker's
/// cancellation inbox, applied before it next runs timers, parks or exits. A callback may still
/// run if it is already due, so callbacks must tolerate a cancelled reason.
void CancelWorkerTimer(const WorkerTimer& timer);

}  // namespace trpc::fiber::detail
