#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "trpc/fiber/detail/scheduler_options.h"

namespace trpc::fiber {
class Scheduler;
}

namespace trpc::fiber::detail {

class SchedulingGroup;
class Worker;

/// The part of a Scheduler its groups and workers share: the options, the groups and workers
/// (to steal from and to wake), and the stop signals. Owned by the Scheduler; the groups and
/// workers hold a pointer to it and know the Scheduler itself only as an identity (whose
/// worker is this?), so nothing below scheduler.h includes it.
///
/// Thread contract: `groups`, `workers` and `oversubscribed` are written by Scheduler::Start
/// before any worker thread starts and are read-only after; the atomics are documented each.
struct SchedulerCore {
  // Out of line (scheduler.cc), where SchedulingGroup is complete.
  explicit SchedulerCore(SchedulerOptions o);
  ~SchedulerCore();

  SchedulerOptions options;
  std::vector<std::unique_ptr<SchedulingGroup>> groups;
  std::vector<std::unique_ptr<Worker>> workers;  // global index order; groups list theirs
  bool oversubscribed = false;         // more workers than usable CPUs: idle workers do not spin
  std::atomic<int> outside_wakers{0};  // threads outside the scheduler inside PushShared()
  // Stop()'s sleep_deadline_ns; written before the groups' stopping_ flag (release), read by
  // the workers after they saw that flag (acquire).
  std::atomic<int64_t> stop_sleep_deadline_ns{-1};
};

}  // namespace trpc::fiber::detail
