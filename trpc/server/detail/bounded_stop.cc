#include "trpc/server/detail/bounded_stop.h"

#include <unistd.h>

#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/server/detail/run_on_reactors.h"

namespace trpc::detail {

namespace {
// Waits this long after the stop's deadline for each worker to answer its calls on its own
// loop, then takes over the ones stuck in a handler; and at most this long for a takeover.
constexpr int64_t kLoopAnswerNs = 20 * kNanosPerMilli;
constexpr int64_t kTakeOverNs = 20 * kNanosPerMilli;
}  // namespace

bool BoundedStop::Run(int64_t deadline_ns) {
  std::vector<size_t> all(model_->ReactorCount());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  // In-flight handlers finish and their replies are written (a connection with requests still
  // pending closes only after they end); nothing new is read. A worker stuck in a handler does
  // not run this; the deadline below deals with it.
  RunOnReactorsUntil(
      model_, all,
      [this](size_t i) {
        std::vector<ConnectionPtr> conns;
        for (auto& [raw, conn] : listener_->connections(i)) conns.push_back(conn);
        for (auto& conn : conns) conn->Shutdown("server stopping");
      },
      deadline_ns);
  while (listener_->connection_count() > 0 && MonotonicNanos() < deadline_ns) usleep(1000);
  // The limit: every worker answers its calls still in handlers and closes its connections;
  // the ones that do not come back at once are taken over.
  std::vector<bool> cut = RunOnReactorsUntil(
      model_, all, [this](size_t i) { CutAndClose(i); }, MonotonicNanos() + kLoopAnswerNs);
  workers_stuck_ = 0;
  for (size_t i = 0; i < cut.size(); ++i) {
    if (cut[i]) continue;
    ++workers_stuck_;
    TakeOver(i, MonotonicNanos() + kTakeOverNs);
  }
  if (uint64_t n = calls_cut(); n > 0) {
    TRPC_LOG_WARN(
        "service {}: stop_max_wait_time reached: answered {} calls still in handlers with {} "
        "(server stopped before the handler finished)",
        service_name_, n, static_cast<int>(kServerSystemErr));
  }
  return workers_stuck_ == 0;
}

void BoundedStop::AnswerCalls(InFlightCalls* calls, bool takeover) {
  auto answer = [&](ServerCall* c) {
    ServerCall::CutReply cut;
    if (!c->CutByStop(&cut)) return;  // its own reply came first
    // From here on the call may be freed by its handler's thread.
    calls_cut_.fetch_add(1, std::memory_order_relaxed);
    if (takeover) {
      cut.conn->QueueReplyWhileLoopHeld(cut.slot, std::move(cut.out), cut.counted);
    } else {
      cut.conn->SendReply(cut.slot, std::move(cut.out), cut.counted);
    }
  };
  // Every linked call is alive: one freed off its loop thread is handed to that loop to free
  // (ServerCall::Free), and this loop (or, in a takeover, its waiting worker) is not running
  // that.
  for (ServerCall* c = calls->head; c != nullptr;) {
    ServerCall* next = c->in_flight_next();
    if (c->runner() == calls_of_) answer(c);
    c = next;
  }
  // The slot's call: its handler holds it while the worker waits.
  if (takeover && calls->taken != nullptr && calls->taken->runner() == calls_of_) {
    answer(calls->taken);
  }
}

void BoundedStop::CutAndClose(size_t i) {
  AnswerCalls(InFlightCalls::OfThisThread(model_->GetReactor(i)), /*takeover=*/false);
  for (auto& [raw, conn] : listener_->TakeConnections(i)) {
    // Writes the answers now (a graceful close still waiting for a reply posted by another
    // thread would flush them only later), then closes.
    conn->Send(ChainBuffer());
    conn->Close("server stopped");
  }
}

bool BoundedStop::TakeOver(size_t i, int64_t until_ns) {
  InFlightCalls* calls = InFlightCalls::Of(model_->GetReactor(i));
  for (;;) {
    uintptr_t v =
        calls != nullptr ? calls->slot.load(std::memory_order_acquire) : InFlightCalls::kIdle;
    // A call (in its handler) or kReleased (taken over by an earlier service's stop, still in
    // that handler). kBusy ends within a reply's queueing; idle: not in a handler.
    if (v >= InFlightCalls::kReleased &&
        calls->slot.compare_exchange_strong(v, InFlightCalls::kTaken, std::memory_order_acq_rel)) {
      if (v != InFlightCalls::kReleased) calls->taken = reinterpret_cast<ServerCall*>(v);
      AnswerCalls(calls, /*takeover=*/true);
      for (auto& [raw, conn] : listener_->connections(i)) conn->FlushAndShutdownWhileLoopHeld();
      TRPC_LOG_WARN(
          "service {}: worker {} was stuck in a handler at the stop's limit: its calls were "
          "answered and its connections shut down from the stopping thread",
          service_name_, i);
      calls->slot.store(InFlightCalls::kReleased, std::memory_order_release);
      return true;
    }
    if (MonotonicNanos() >= until_ns) break;
    usleep(1000);
  }
  TRPC_LOG_ERROR(
      "service {}: worker {} did not come back at the stop's limit and is not in a handler: its "
      "connections stay open until the process exits",
      service_name_, i);
  return false;
}

}  // namespace trpc::detail
