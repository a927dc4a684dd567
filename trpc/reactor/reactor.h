#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "trpc/base/detail/mpsc_queue.h"
#include "trpc/base/detail/timer_queue.h"
#include "trpc/base/logging.h"
#include "trpc/reactor/event_handler.h"
#include "trpc/reactor/poller.h"

namespace trpc {

/// One event loop, run by exactly one thread: an edge-triggered poller, a timer queue and a task
/// queue that any thread may post to.
///
/// Thread contract: Run() is called by the loop thread; AddTimer/CancelTimer/poller
/// registration are loop-thread only (debug builds check); Post/RunInLoop/Stop are safe from
/// any thread.
///
/// Wake-up contract (a Dekker handshake): before blocking in epoll the loop stores
/// `sleeping_ = true` and then, after a seq_cst fence, checks the task queue; a poster pushes its
/// task and then, after a seq_cst fence, reads `sleeping_`. At least one of them sees the other's
/// write, so either the loop finds the task or the poster writes the eventfd. The eventfd is
/// written only when the loop may be asleep.
class Reactor {
 public:
  using Task = std::function<void()>;

  explicit Reactor(size_t task_queue_capacity = 65536);
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  /// Runs the loop on the calling thread until Stop(). Tasks posted before Stop() still run.
  void Run();

  /// For a loop driven from outside (a fiber worker runs its reactor between fibers):
  /// Attach() makes the calling thread the loop thread; RunOnce() then runs one iteration:
  /// waits for events at most until `deadline_ns` (MonotonicNanos(); 0 = do not wait, < 0 =
  /// no limit beyond the reactor's own timers), then runs the ready handlers, the due timers
  /// and the queued tasks. It does not wait when `*epoch != token` (checked after publishing
  /// "sleeping", so a Notify() after bumping the epoch cannot be missed). Detach() runs what
  /// is still queued and marks the loop exited.
  void Attach();
  void RunOnce(int64_t deadline_ns, const std::atomic<uint32_t>* epoch = nullptr,
               uint32_t token = 0);
  /// The same loop, between iterations: runs the queued tasks and an armed end-of-iteration
  /// call without polling for events; false when there was none. A worker about to park calls
  /// it first, so that work it queued itself (a fiber's write or post) does not turn its wait
  /// into an epoll_wait(0) followed by a second, blocking one.
  bool RunPending();
  void Detach();
  /// Interrupts a RunOnce()/Run() wait in progress or about to start. Any thread. Callers that
  /// need it not to be missed bump the epoch they passed to RunOnce() first.
  void Notify();
  /// Asks the loop to exit after its current iteration. Any thread.
  void Stop();

  /// Queues `task` to run on the loop thread. Any thread. Never fails: a full queue spills into
  /// a locked overflow list. Tasks from one thread run in the order they were posted. A task
  /// posted after the loop has exited never runs (and is logged).
  void Post(Task task);
  /// Queues `task` as background work of this loop (loop thread only): it runs after an
  /// iteration's events, timers and tasks, and at most kBackgroundPerIteration background tasks
  /// run per iteration; while some wait, the loop polls without sleeping. For costly work that
  /// arrives in bursts (a server's TLS handshakes): the events of established connections then
  /// wait for at most that many of them, not for a whole burst read in one poll. In order.
  /// When the loop exits, background work still queued is dropped (destroyed, not run).
  void PostBackground(Task task);
  static constexpr size_t kBackgroundPerIteration = 1;
  /// Runs `task` now if called on the loop thread, else posts it.
  void RunInLoop(Task task) {
    if (InLoopThread()) {
      task();
    } else {
      Post(std::move(task));
    }
  }

  /// Calls `fn(arg)` once, at the end of the current loop iteration: after its events, timers
  /// and the tasks queued when it began running them (a task posted meanwhile runs in the next
  /// iteration), and also when the loop drains on exit. Loop thread only. One call can be pending
  /// at a time: arming it again before it runs must name the same `fn` and `arg` (a no-op);
  /// another would silently drop the first, so it stops the process. For work collected
  /// during an iteration and handed over together at its end: the fiber model starts the
  /// requests read in one iteration as one chain (its only user).
  void AtIterationEnd(void (*fn)(void*), void* arg) {
    TRPC_CHECK(end_fn_ == nullptr || (end_fn_ == fn && end_arg_ == arg),
               "Reactor::AtIterationEnd: another end-of-iteration call is already pending");
    end_fn_ = fn;
    end_arg_ = arg;
  }

  /// Timers (loop thread only). Deadlines are MonotonicNanos() values.
  TimerId AddTimer(int64_t deadline_ns, TimerQueue::Callback cb);
  bool CancelTimer(TimerId id);

  Poller& poller() { return poller_; }
  bool InLoopThread() const {
    return loop_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  void AssertInLoopThread() const;
  /// The reactor whose loop runs on the calling thread, or nullptr.
  static Reactor* Current();

  /// A thread model tags its reactors so it can find a reactor's index in O(1).
  void set_owner(const void* owner, int index) {
    owner_ = owner;
    owner_index_ = index;
  }
  /// This reactor's index in `owner`, or -1 if `owner` did not tag it.
  int IndexIn(const void* owner) const { return owner_ == owner ? owner_index_ : -1; }

  /// Cached MonotonicNanos() taken when the loop woke up; loop thread only.
  int64_t LoopTimeNs() const { return loop_time_ns_; }
  /// The latest clock reading the loop thread knows of: LoopTimeNs(), or a later one handed to
  /// NoteTime() by code that read the clock anyway (e.g. a reply's latency). Lets per-request
  /// checks in a long batch see time pass without a clock read of their own (a clock read costs
  /// tens of ns on a VM).
  /// Loop thread only.
  int64_t RecentTimeNs() const { return recent_ns_; }
  void NoteTime(int64_t now_ns) {
    if (now_ns > recent_ns_) recent_ns_ = now_ns;
  }

  /// What the loop was handed by other threads, for the thread models' metrics. Counters since
  /// construction, read relaxed from any thread (each monotonic; no snapshot across the two).
  struct Counters {
    uint64_t wakeups = 0;          // eventfd writes to wake the loop from its epoll wait
    uint64_t foreign_replies = 0;  // replies produced on another thread, sent by this loop
  };
  Counters counters() const {
    return {wakeups_.load(std::memory_order_relaxed),
            foreign_replies_.load(std::memory_order_relaxed)};
  }
  /// Loop thread only: a reply another thread produced is being sent here (the server calls
  /// it from the task that carries the reply over).
  void CountForeignReply() {
    foreign_replies_.store(foreign_replies_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
  }

 private:
  class Waker;
  bool RunTasks();  // true if it ran any task
  void RunIterationEnd();
  bool RunBackground(size_t max);  // true if it ran any
  void Wake();
  void Iterate(int64_t deadline_ns, const std::atomic<uint32_t>* epoch, uint32_t token);
  void DrainAndExit();

  Poller poller_;
  TimerQueue timers_;
  MpscQueue<Task> tasks_;
  std::mutex overflow_mu_;
  std::vector<Task> overflow_;  // guarded by overflow_mu_
  std::atomic<bool> has_overflow_{false};
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> stop_{false};
  std::atomic<bool> exited_{false};  // Run() has returned: posts are no longer run
  std::atomic<std::thread::id> loop_thread_{};
  int64_t loop_time_ns_ = 0;
  int64_t recent_ns_ = 0;            // >= loop_time_ns_
  std::deque<Task> background_;      // PostBackground(); loop thread only
  void (*end_fn_)(void*) = nullptr;  // AtIterationEnd()
  void* end_arg_ = nullptr;
  const void* owner_ = nullptr;
  int owner_index_ = -1;
  int wake_fd_;
  std::unique_ptr<EventHandler> waker_;
  std::atomic<uint64_t> wakeups_{0};          // any thread, next to a syscall (Wake())
  std::atomic<uint64_t> foreign_replies_{0};  // loop thread only: plain load and store
};

}  // namespace trpc
