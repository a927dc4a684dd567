#pragma once

#include <atomic>
#include <memory>
#include <unordered_map>
#include <vector>

#include "trpc/client/detail/backend.h"
#include "trpc/client/detail/outgoing_call.h"
#include "trpc/transport/buffer_budget.h"
#include "trpc/transport/connection.h"

namespace trpc {
class ClientCodec;
class Reactor;
class ThreadModel;
}  // namespace trpc

namespace trpc::detail {

/// Sends one client service's calls: owns how a call reaches its endpoint (multiplexed long
/// connections, a keep-alive pool per endpoint for protocols that answer in order, or a short
/// connection per call) and hands each reply to the call's OnReply. It knows nothing of
/// retries, decoding or endpoint choice.
///
/// Thread contract: Send and Cancel from any thread (Send runs the sending on the given
/// reactor's thread); the per-reactor state (the backends' connections and pools, the short
/// connections) is touched only on that reactor's thread. Stop() is the only cross-thread
/// signal: a release store, read with acquire by every send, so a send that sees it fails the
/// call instead of opening a connection that CloseOnLoop would miss.
class CallSender {
 public:
  struct Options {
    uint32_t conns_per_backend = 1;  // multiplexed connections, or the pool's size (fifo)
    bool short_conn = false;         // conn_type "short": a connection per call
    bool fifo = false;               // the protocol answers in order: pools, not multiplexing
    uint32_t pipeline_depth = 1;     // fifo: calls outstanding per pooled connection
    uint32_t connect_timeout_ms = 0;
    ConnectionOptions connection;
  };

  CallSender(ThreadModel* model, ClientCodec* codec, Options options);
  ~CallSender();
  CallSender(const CallSender&) = delete;
  CallSender& operator=(const CallSender&) = delete;

  /// Counts the connections against `budget` (one slot per reactor). Before the first Send.
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget);
  /// How many connections per endpoint per reactor a Backend needs slots for.
  uint32_t ConnsPerBackend() const { return options_.fifo ? 0 : options_.conns_per_backend; }
  /// Chooses which of `b`'s multiplexed connections a new call uses (round-robin).
  size_t NextSlot(Backend& b) const {
    if (options_.conns_per_backend <= 1 || options_.fifo) return 0;
    return b.next_slot.fetch_add(1, std::memory_order_relaxed) % options_.conns_per_backend;
  }
  /// Sends `call` on `reactor`'s thread: at once when called there, else posted. A call that
  /// expects a reply gets OnReply exactly once; a one-way call is forgotten once written.
  void Send(Reactor* reactor, std::shared_ptr<OutgoingCall> call);
  /// Cancels a call still waiting on a multiplexed connection: its OnReply runs inside, with
  /// "cancelled". On the call's reactor thread. False when there is nothing to cancel there
  /// (answered already, or on a pooled connection: its reply comes and is dropped by the call).
  bool Cancel(OutgoingCall& call);

  /// Runs `fn` on `reactor`'s thread with the connection a call to `b` (its multiplexed
  /// connection `slot`) would take, opened if need be; null with the reason when there is
  /// none. For what runs on a connection beside calls (streams).
  void WithConnection(Reactor* reactor, BackendPtr b, size_t slot,
                      std::function<void(ClientConnection*, const Status&)> fn);
  /// No call is sent after this; calls still to be sent fail with "proxy stopped".
  void Stop() { stopped_.store(true, std::memory_order_release); }
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }
  /// On reactor `index`'s thread, after Stop(): closes that reactor's connections of `alive`
  /// and its short connections. The calls still pending fail there, with 141.
  void CloseOnLoop(size_t index, const std::vector<BackendPtr>& alive);

 private:
  void SendOnLoop(size_t index, std::shared_ptr<OutgoingCall> call);
  ClientConnectionPool* GetPool(size_t index, Backend* b);
  ClientConnectionPtr GetConnection(size_t index, Backend* b, size_t slot, Status* st);
  ClientConnectionPtr Connect(size_t index, const NetAddress& addr, Status* st);
  // options_.connection with reactor `index`'s budget slot.
  // The connection options for `index`'s reactor and the endpoint `addr` (TLS: its IP names
  // the server unless the proxy knows a host name).
  ConnectionOptions OptionsFor(size_t index, const NetAddress& addr) const;

  ThreadModel* const model_;
  ClientCodec* const codec_;
  const Options options_;
  // client.max_buffered_bytes: the budget and a slot of it per reactor (null/empty: no bound).
  std::shared_ptr<BufferBudget> buffer_budget_;
  std::vector<BufferBudget::Slot*> budget_slots_;
  // Short connections per reactor, until they close: touched only on that reactor's thread.
  std::vector<std::unordered_map<ClientConnection*, ClientConnectionPtr>> short_conns_;
  std::atomic<bool> stopped_{false};
};

}  // namespace trpc::detail
