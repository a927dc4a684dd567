#include "trpc/fiber/detail/worker_slot.h"

#include <utility>

#include "trpc/fiber/detail/futex.h"

namespace trpc::fiber::detail {

namespace {
thread_local WorkerSlot* tls_slot = nullptr;
}  // namespace

WorkerSlot::WorkerSlot(Scheduler* owner, SchedulingGroup* group, size_t index_in_group,
                       size_t deque_size, std::unique_ptr<WorkerIo> io)
    : owner_(owner),
      group_(group),
      index_in_group_(index_in_group),
      io_(std::move(io)),
      local_(deque_size) {}

WorkerSlot::~WorkerSlot() = default;

__attribute__((noinline)) WorkerSlot* WorkerSlot::Current() {
  asm volatile("" ::: "memory");
  return tls_slot;
}

void WorkerSlot::SetCurrent(WorkerSlot* slot) { tls_slot = slot; }

void WorkerSlot::Unpark() {
  epoch_.fetch_add(1, std::memory_order_seq_cst);
  unparks_.fetch_add(1, std::memory_order_relaxed);
  if (io_) {
    io_->Wake();
  } else {
    FutexWake(&epoch_, 1);
  }
}

}  // namespace trpc::fiber::detail
