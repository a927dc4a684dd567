#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "trpc/reactor/reactor.h"

namespace trpc {

/// A task of a chain given to ThreadModel::DispatchChain(): intrusive, so the owner embeds it
/// in something it already allocates (a request's context) and a chain costs no allocation.
/// `run(owner, arg)` runs the task; it may destroy the object holding the ChainedTask.
struct ChainedTask {
  ChainedTask* next = nullptr;
  void (*run)(void* owner, void* arg) = nullptr;
  void* owner = nullptr;
  void* arg = nullptr;
};

/// How a process runs IO and handlers. Implementations: MergeThreadModel (each worker reads,
/// handles and replies inline) and, later, the fiber model. Chosen by config alone.
///
/// Thread contract: Start/Stop from one control thread; the accessors and Dispatch are safe
/// from any thread while the model runs.
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

  /// True when handlers run inline on the reactor thread that read the request (merge): the
  /// caller then invokes the handler itself instead of calling Dispatch().
  virtual bool HandlesInline() const = 0;
  /// Runs a request's handler somewhere other than inline (fiber: in a new fiber).
  virtual void Dispatch(Reactor* owner, std::function<void()> task) = 0;
  /// Runs the tasks of the chain starting at `first`, in order, as Dispatch() would run each
  /// (the requests read in one reactor iteration). This default dispatches each task on its
  /// own; the fiber model runs a chain in as few fibers as it can (see FiberThreadModel).
  virtual void DispatchChain(Reactor* owner, ChainedTask* first) {
    while (first != nullptr) {
      ChainedTask* t = first;
      first = t->next;
      t->next = nullptr;
      Dispatch(owner, [t] { t->run(t->owner, t->arg); });
    }
  }
  /// False on a thread whose blocking would stall IO the caller itself waits for (a merge
  /// worker): synchronous client calls are refused there.
  virtual bool MayBlockCurrentThread() const = 0;
};

}  // namespace trpc
