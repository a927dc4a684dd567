#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace trpc::fiber {

/// Per-worker IO hook: lets a layer above (runtime/, with its reactors) run IO on the fiber
/// workers themselves, so a connection's reads, the request fibers they start and the replies
/// they write stay on one thread whenever the work is not stolen. Without one, idle workers
/// park on a futex.
///
/// Every method is called on the worker's own thread except Wake(), which any thread may call.
class WorkerIo {
 public:
  virtual ~WorkerIo() = default;
  /// On the worker thread, before it runs any fiber.
  virtual void OnStart() {}
  /// On the worker thread, after its last fiber.
  virtual void OnStop() {}
  /// Handles whatever IO is ready without blocking. Called between fibers when busy.
  virtual void Poll() = 0;
  /// Blocks until IO is ready, Wake() is called, or `deadline_ns` (MonotonicNanos(); < 0 = no
  /// limit). Must not block when `*epoch != token` (the wake-up raced with going to sleep):
  /// implementations publish "sleeping", issue a seq_cst fence and then compare the epoch;
  /// Wake() callers bump the epoch before calling Wake(), which fences and checks "sleeping".
  virtual void Wait(int64_t deadline_ns, const std::atomic<uint32_t>* epoch, uint32_t token) = 0;
  /// Makes a Wait() in progress (or about to start) return. Any thread.
  virtual void Wake() = 0;
  /// On the worker thread, before it parks: runs work queued for its IO without polling (what
  /// the worker's own fibers posted); true when there was some, which may have made fibers
  /// runnable. Saves a Wait() that would return at once only to run it.
  virtual bool RunPending() { return false; }
};

struct SchedulerOptions {
  std::string name = "fiber";
  /// Worker threads; 0 = the CPUs this process may use (affinity mask and cgroup CPU quota).
  size_t concurrency = 0;
  /// Workers per scheduling group, 1..64; 0 = one group of up to 64 workers each.
  size_t scheduling_group_size = 0;
  /// Usable bytes per fiber stack (a guard page is added below it).
  size_t fiber_stack_size = 128 * 1024;
  /// Fiber stacks that may exist at once, i.e. fibers started and not finished; 0 = what
  /// vm.max_map_count leaves at Start() (detail::StacksLeftByMapCount(); no limit when /proc
  /// cannot be read). A fiber that finds none waits (retried every millisecond) instead of
  /// starting: the process never runs out of memory mappings, which would fail every mmap in
  /// it. Callers that start fibers for peers' requests bound them below this
  /// (server.max_parked_requests).
  size_t max_stacks = 0;
  /// An idle worker tries the other groups once every this many idle rounds.
  size_t work_stealing_ratio = 16;
  /// Slots in each group's shared run queue (power of two).
  size_t fiber_run_queue_size = 65536;
  /// Optional: one WorkerIo per worker (global worker index given).
  std::function<std::unique_ptr<WorkerIo>(size_t)> worker_io_factory;
};

}  // namespace trpc::fiber
