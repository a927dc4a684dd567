#pragma once

#include <atomic>
#include <cstdint>

namespace trpc {
class Reactor;
}  // namespace trpc

namespace trpc::detail {

class ServerCall;

/// What a bounded stop (detail/bounded_stop.h) needs to answer the calls still in handlers at
/// stop_max_wait_time: one per loop thread (= per reactor), created when the thread makes its
/// first call, and never freed (a few bytes per loop thread ever started).
///
/// `head`: the requests of this reactor's connections that were counted pending (fiber model:
/// every request; merge: a handler's SetResponse(false)) and whose end has not reached the loop
/// yet, linked through the calls themselves (ServerCall::in_flight_*). Loop thread only:
/// linked in OnFrame/SetResponse, unlinked when the reply (or the end of an unanswered context)
/// is handled on the loop, or by the stop's cut. The one exception is a takeover (below): the
/// control thread then owns the list.
///
/// `slot` (merge model only): which context's handler the loop thread is running inline.
/// Memory-ordering contract:
///   - the worker stores the context (release) before its handler, so a control thread that
///     reads it (acquire) sees every write the worker made to its connections before;
///   - a reply from inside that handler first CASes context -> kBusy (acq_rel), queues the reply,
///     then stores 0 (release); after the handler the worker CASes context -> 0 (acq_rel) if
///     the handler did not reply. One of these RMWs per request, uncontended;
///   - at the deadline a control thread that finds the loop unresponsive CASes a context (or
///     kReleased, after an earlier takeover) -> kTaken (acq_rel). If that wins, the worker is
///     inside that handler and stays out of its connections: its own CAS fails, and it waits
///     until the control thread stores kReleased (release) after answering the calls, then
///     CASes kReleased -> 0 (acquire) and goes on. Everything the control thread wrote happens
///     before the worker's next access. If the worker's CAS wins, the control thread's fails
///     and it leaves the reactor alone.
///   kBusy is never taken over: the control thread waits (it lasts one reply's queueing);
///   - other loop-thread work on connections or `head` that may run inside a handler (another
///     call's reply, a SetResponse(false), an unanswered context freed) is bracketed by
///     Hold()/Unhold(): the same CAS to kBusy and store back, and if a takeover is under way
///     (kTaken) it waits for kReleased first. With no handler in the slot it is one load.
struct InFlightCalls {
  static constexpr uintptr_t kIdle = 0;
  static constexpr uintptr_t kBusy = 1;
  static constexpr uintptr_t kTaken = 2;
  static constexpr uintptr_t kReleased = 3;

  const Reactor* reactor = nullptr;
  ServerCall* head = nullptr;
  std::atomic<uintptr_t> slot{kIdle};
  // The context a takeover found in `slot` (control thread only; several services' stops may
  // take the same stuck worker over in turn, each answering its own calls).
  ServerCall* taken = nullptr;

  /// The calling loop thread's record (created on first use) for its reactor `r`. Inline: it
  /// is on the request path.
  static InFlightCalls* OfThisThread(const Reactor* r) {
    InFlightCalls* mine = mine_;
    return mine != nullptr && mine->reactor == r ? mine : MakeForThisThread(r);
  }
  /// The record of `r`'s loop thread, or null if it never made a context. Any thread.
  static InFlightCalls* Of(const Reactor* r);
  /// Loop thread: see the contract above. Returns what Unhold() puts back.
  uintptr_t Hold() {
    // Only this thread moves the slot away from idle or kBusy.
    uintptr_t v = slot.load(std::memory_order_relaxed);
    return v == kIdle || v == kBusy ? kIdle : HoldHandlersSlot(v);
  }
  void Unhold(uintptr_t held) {
    if (held != kIdle) slot.store(held, std::memory_order_release);
  }
  /// Worker side of a takeover: waits until the control thread released the reactor, then
  /// clears the slot.
  void WaitReleased();

 private:
  static InFlightCalls* MakeForThisThread(const Reactor* r);
  uintptr_t HoldHandlersSlot(uintptr_t v);
  static inline thread_local InFlightCalls* mine_ = nullptr;
};

}  // namespace trpc::detail
