#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "trpc/reactor/reactor.h"
#include "trpc/runtime/task.h"

namespace trpc {

/// How a process runs IO and handlers. Implementations: MergeThreadModel (each worker reads,
/// handles and replies inline) and FiberThreadModel (handlers run in fibers of a work-stealing
/// scheduler whose workers also run the reactors). Chosen by config alone. The model alone
/// decides how and where a handler runs: the server reads a request and Submit()s it.
///
/// Thread contract: Start/Stop from one control thread; the accessors and Dispatch are safe
/// from any thread while the model runs; Submit from the given reactor's loop thread.
class ThreadModel {
 public:
  virtual ~ThreadModel() = default;

  /// "merge" or "fiber".
  virtual std::string_view Type() const = 0;
  virtual const std::string& InstanceName() const = 0;

  /// Starts the worker threads; returns once every reactor loop is running.
  virtual bool Start(std::string* err) = 0;
  /// Stops the loops (tasks already posted still run) and joins the threads. Idempotent.
  virtual void Stop() = 0;

  virtual size_t ReactorCount() const = 0;
  virtual Reactor* GetReactor(size_t index) = 0;
  /// The index of `reactor` in this model, or -1 if it is not one of ours.
  virtual int IndexOf(const Reactor* reactor) const = 0;
  /// A reactor for a new connection, round-robin.
  virtual Reactor* NextReactor() = 0;

  /// Runs `task` the way this model runs request handlers. Call it on `reactor`'s loop thread
  /// (the one that read the request). merge: runs it now, before returning. fiber: starts it in
  /// a fiber after the reactor's current loop iteration, in one chain with every task
  /// submitted during that iteration (FiberThreadModel says how a chain runs).
  virtual void Submit(Reactor* reactor, Task* task) = 0;
  /// Submit(), except that a model that runs tasks inline (merge) runs `task` at the end of the
  /// reactor's current loop iteration, after every connection ready in it has been read, in
  /// submission order. The server submits this way when it admits requests against a limit
  /// (max_concurrency): the refusals decided while reading go out before the admitted handlers
  /// run, instead of waiting behind them. fiber: the same as Submit().
  virtual void SubmitAfterReads(Reactor* reactor, Task* task) { Submit(reactor, task); }
  /// True when Submit() runs a task inline, before it returns (merge). A caller that keeps
  /// per-connection accounting of requests in flight needs to count only the others.
  virtual bool HandlesInline() const = 0;
  /// Runs `task` outside the current call: merge posts it to `owner`'s loop; fiber starts it in
  /// a new fiber queued on `owner`'s worker. Any thread.
  virtual void Dispatch(Reactor* owner, std::function<void()> task) = 0;
  /// Runs `fn` where synchronous calls may block and returns its result: merge runs it on the
  /// calling thread; fiber runs it in a fiber of the model while the calling (plain) thread
  /// waits. For a client program's main function (RunInTrpcRuntime).
  virtual int RunBlocking(const std::function<int()>& fn) { return fn(); }
  /// Fiber statistics, for metrics. A snapshot of relaxed counters.
  struct FiberStats {
    uint64_t alive = 0;            // started and not finished
    uint64_t run_queue_depth = 0;  // queued to run
    uint64_t steals = 0;           // fibers a worker took from another one (since Start)
    uint64_t remote_steals = 0;    // ... of those, from another scheduling group
    uint64_t stack_waits = 0;      // fibers put off for want of a stack (since Start)
    uint64_t parks = 0;            // times a worker went to sleep (since Start)
    uint64_t wakeups = 0;          // wake-up calls to parked workers (since Start)
    uint64_t spin_ns = 0;          // time idle workers spent spinning for work (ns)
  };
  /// False (and `*out` untouched) when the model runs no fibers.
  virtual bool GetFiberStats(FiberStats* out) const { return false; }
  /// How many requests this model can hold parked at once before a resource of the process
  /// runs out (fiber: the stacks the scheduler may map, less a share for fibers that serve no
  /// request); 0 = no such resource (merge). After Start(). The server's
  /// max_parked_requests default takes it into account.
  virtual uint64_t ParkedCapacity() const { return 0; }
  /// False on a thread whose blocking would stall IO the caller itself waits for (a merge
  /// worker): synchronous client calls are refused there.
  virtual bool MayBlockCurrentThread() const = 0;
};

}  // namespace trpc
