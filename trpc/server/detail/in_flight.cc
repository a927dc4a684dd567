#include "trpc/server/detail/in_flight.h"

#include <unistd.h>

#include <mutex>
#include <unordered_map>

#include "trpc/base/logging.h"

namespace trpc::detail {

namespace {
std::mutex g_mu;
// Reactor -> its loop thread's record. Never shrinks: records outlive their threads, so a
// control thread may look one up after a loop thread ended. A reactor made later at the same
// address replaces the entry when its thread makes its first context.
std::unordered_map<const Reactor*, InFlightCalls*>& Records() {
  static auto* records = new std::unordered_map<const Reactor*, InFlightCalls*>();
  return *records;
}
}  // namespace

InFlightCalls* InFlightCalls::MakeForThisThread(const Reactor* r) {
  mine_ = new InFlightCalls;  // kept in Records() for good
  mine_->reactor = r;
  std::lock_guard lock(g_mu);
  Records()[r] = mine_;
  return mine_;
}

InFlightCalls* InFlightCalls::Of(const Reactor* r) {
  std::lock_guard lock(g_mu);
  auto it = Records().find(r);
  return it == Records().end() ? nullptr : it->second;
}

uintptr_t InFlightCalls::HoldHandlersSlot(uintptr_t v) {
  for (;;) {
    if (v != kTaken && slot.compare_exchange_strong(v, kBusy, std::memory_order_acq_rel)) {
      return v;
    }
    usleep(100);  // a takeover is answering this worker's calls: a matter of ms
    v = slot.load(std::memory_order_relaxed);
  }
}

void InFlightCalls::WaitReleased() {
  TRPC_LOG_WARN(
      "a handler returned after the server's stop answered its call and took its worker over; "
      "the worker waits until the stop is done with its connections");
  for (;;) {
    uintptr_t v = slot.load(std::memory_order_acquire);
    if (v == kReleased && slot.compare_exchange_strong(v, kIdle, std::memory_order_acquire)) {
      return;
    }
    usleep(1000);
  }
}

}  // namespace trpc::detail
