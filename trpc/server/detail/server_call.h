#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/filter.h"
#include "trpc/server/server_context.h"
#include "trpc/server/server_filter.h"

namespace trpc {
class Connection;
class RpcMethodHandler;
class ServerCodec;
}  // namespace trpc

namespace trpc::detail {

class ConcurrencyLimiter;
struct InFlightCalls;
class StreamCore;
struct MethodCounters;
class ServerCall;

/// Runs the handler of a call that the thread model hands back (the request path). A call knows
/// its runner only through this, and a bounded stop recognises its service's calls by it.
class CallRunner {
 public:
  /// On the thread the model chose; `call` is `*ctx`.
  virtual void RunCall(const ServerContextPtr& ctx, ServerCall& call) = 0;

 protected:
  ~CallRunner() = default;
};

/// The framework's state of one server call, around the handler's view of it (ServerContext,
/// its public base): the connection and the reply slot the reply goes to, the admission it holds
/// (limiter, parked permit), the filters and counters its reply runs and records, the thread
/// model's task, and its links for a bounded stop (detail/in_flight.h). One allocation per
/// request: every ServerContext is a ServerCall, made by the request path and freed by its last
/// reference (ServerContext::FreeLastRef).
///
/// Thread contract: the request path sets it up on the connection's loop thread before it is
/// submitted; then one thread at a time runs its handler. SendReply() is safe from any thread
/// (once: later calls are ignored). The in-flight links and the slot are the loop thread's (see
/// detail/in_flight.h for the stop's takeover); CutByStop() may run while the handler runs.
class ServerCall final : public ServerContext {
 public:
  ServerCall(std::shared_ptr<Connection> conn, ServerCodec* codec, int64_t recv_ns);
  ~ServerCall();

  /// Every context is a call: the framework's state of the one a handler holds.
  static ServerCall& Of(ServerContext& ctx) { return static_cast<ServerCall&>(ctx); }
  static const ServerCall& Of(const ServerContext& ctx) {
    return static_cast<const ServerCall&>(ctx);
  }

  /// The decoded request (body, content type, the protocol's own part).
  RpcRequest& request() { return mutable_request(); }
  using ServerContext::request;
  Connection* connection() const { return conn_.get(); }
  ServerCodec* codec() const { return codec_; }
  using ServerContext::SetDeadlineNs;
  /// The response metadata the handler added (a stream's trailers take it).
  using ServerContext::rsp_trans_info;

  // Set-up by the request path, on the loop thread.
  /// The service's filters (null or empty: none). The chain must outlive the call.
  void SetFilterChain(const ServerFilterChain* chain) { filters_ = chain; }
  /// The per-method counters the reply is recorded in (latency from GetRecvTimestampNs() to
  /// SendReply(), and the error code); null records nothing. Must outlive the call.
  /// The call's method's counters (null: not counted); counts the call as started.
  void SetMethodCounters(MethodCounters* counters);
  /// The request was admitted by `limiter` on reactor `reactor`: it leaves it at the reply.
  void SetLimiter(ConcurrencyLimiter* limiter, size_t reactor) {
    limiter_ = limiter;
    limiter_reactor_ = static_cast<uint32_t>(reactor);
  }
  /// Holds a permit of detail::ParkedWork until destroyed.
  void SetParkedPermit() { parked_permit_ = true; }
  /// Where the limiter's service time starts (the handler starts).
  void SetStartNs(int64_t start_ns) { start_ns_ = start_ns; }
  /// The request was counted with Connection::BeginRequest() (asynchronous dispatch): the reply
  /// (or, for one-way calls and calls dropped unreplied, the end) ends it on the connection.
  /// Also links it into its loop thread's in-flight calls (loop thread), which a bounded stop
  /// answers at the limit (detail/in_flight.h).
  void SetCountedPending() {
    counted_pending_ = true;
    LinkInFlight();
  }
  /// Hands the caller's reference to the thread model: it calls runner->RunCall() once, with
  /// `handler`, on the loop thread when `runs_on_loop` (merge), even when counted pending.
  Task* Submit(ServerContextPtr&& self, CallRunner* runner, RpcMethodHandler* handler,
               bool runs_on_loop) {
    runner_ = runner;
    handler_ = handler;
    runs_on_loop_ = runs_on_loop;
    (void)self.release();  // adopted back in Run()
    return static_cast<Task*>(this);
  }
  RpcMethodHandler* handler() const { return handler_; }

  /// The call of a stream (the stream path's): it holds the stream's admission for the stream's
  /// life, its reply records the stream's end in the counters and sends nothing (the stream's
  /// own frames end it on the wire).
  void SetStream(std::shared_ptr<StreamCore> core) { stream_ = std::move(core); }
  using ServerContext::SetCancelSignal;
  const std::shared_ptr<StreamCore>& stream() const { return stream_; }

  /// Runs the filters at `point`. On a REJECT returns false and leaves the reason in the status
  /// (ret 999 "rejected by server filter NAME" if the filter set none).
  bool RunFilters(FilterPoint point);
  /// The handler is about to run: SERVER_POST_RPC_INVOKE filters will run at the reply.
  void MarkInvoked() { invoked_ = true; }
  /// Encodes the reply with `status` and `body` (null for none) and queues it on the connection.
  /// Sends nothing for one-way calls. Only the first call sends.
  void SendReply(const Status& status, const google::protobuf::MessageLite* body);
  /// The borrowed form of SetProtocolResponse(): `rsp` must outlive the SendReply() that
  /// follows (a protocol handler's reply on its own stack). An owned one takes precedence.
  void SetProtocolResponseRef(const ProtocolMessage* rsp) { protocol_rsp_ref_ = rsp; }
  /// ServerContext::SetResponse(false): the handler replies later. An inline (merge) handler
  /// was not counted pending: it is now.
  void TakeOverReply();

  // Bounded stop (detail/bounded_stop.h). A reply is claimed once, by the handler's side
  // (SendReply) or by the stop (CutByStop); the loser sends nothing.
  /// What a stop sends for a call it cut, and where.
  struct CutReply {
    std::shared_ptr<Connection> conn;
    uint64_t slot = 0;
    bool counted = false;
    ChainBuffer out;  // empty for one-way calls
  };
  /// The stop's answer to a call still in its handler at stop_max_wait_time: claims the reply,
  /// encodes kServerSystemErr into `out->out`, and unlinks the call; the handler's thread may
  /// free it from then on. False (and nothing done) when the handler's own reply was claimed
  /// first. Reads only fields nobody writes after decoding (the request's header), so the
  /// handler may be running meanwhile on another thread.
  bool CutByStop(CutReply* out);
  /// The next call in the in-flight list (loop thread, or a takeover's thread).
  ServerCall* in_flight_next() const { return in_flight_next_; }
  /// Whose call it is (set when submitted; null before).
  const CallRunner* runner() const { return runner_; }

  /// The last reference's drop (ServerContext::FreeLastRef). A call freed off its loop thread
  /// while still linked is freed on the loop thread instead: the list it is in is that
  /// thread's alone, and a stop may be walking it.
  static void Free(const ServerCall* p);

 private:
  enum : uint8_t { kNotReplied, kReplied, kCut };

  // Task: runs the request's handler where the thread model put it.
  void Run() override;

  void LeaveLimiter(int64_t now_ns);
  void Record(int64_t now_ns, int32_t ret, int32_t func_ret);
  // The reply's fields taken from the request's header (only reads it).
  void FillResponseHeader(RpcResponse* rsp) const;
  void LinkInFlight();
  // Loop thread (or a stop's takeover). Its release store is the call's last access.
  void UnlinkInFlight();
  // SendReply's claim: false when a stop answered this call already.
  bool ClaimReply();
  // Queues `out` and ends the request on the loop: directly on the loop thread, else from a
  // task that holds this call, so it stays linked (and alive) until its end arrives there.
  // Then gives up the slot a merge reply held.
  void FinishOnLoop(ChainBuffer&& out);
  // Merge model, after the handler returned without replying: leaves the in-handler slot.
  void LeaveSlot();

  std::shared_ptr<Connection> conn_;
  ServerCodec* codec_;
  std::shared_ptr<StreamCore> stream_;  // null for a unary call
  const ProtocolMessage* protocol_rsp_ref_ = nullptr;
  uint64_t reply_slot_;  // Connection::frame_slot() of the request (0: replies carry ids)
  bool replied_ = false;
  bool counted_pending_ = false;
  bool invoked_ = false;
  bool parked_permit_ = false;
  // The thread model runs the handler on the connection's loop thread (merge), even when it
  // was counted pending (deferred to the end of the pass by max_concurrency).
  bool runs_on_loop_ = false;
  // Merge model, loop thread only: the handler runs inline with the reactor's slot naming this
  // call (in_slot_), and a reply from inside it holds the slot busy while it queues.
  bool in_slot_ = false;
  bool slot_busy_ = false;
  // Bounded stop: kNotReplied until SendReply (for counted requests) or the stop claims it with
  // an exchange (acq_rel: the winner's writes before it are seen by the loser). Beside the
  // flags, where it costs no padding (the call's size decides its allocator size class).
  std::atomic<uint8_t> reply_state_{kNotReplied};
  uint32_t limiter_reactor_ = 0;
  const ServerFilterChain* filters_ = nullptr;
  MethodCounters* method_counters_ = nullptr;
  ConcurrencyLimiter* limiter_ = nullptr;  // until the reply, if admitted by one
  int64_t start_ns_ = 0;                   // when the handler started, if admitted by a limiter
  // Set when submitted: who runs the handler, and which.
  CallRunner* runner_ = nullptr;
  RpcMethodHandler* handler_ = nullptr;
  // Bounded stop. in_flight_: the list this call is linked in (null: none); written by the loop
  // thread, read by the thread that frees the call (Free).
  std::atomic<InFlightCalls*> in_flight_{nullptr};
  ServerCall* in_flight_prev_ = nullptr;
  ServerCall* in_flight_next_ = nullptr;
  InFlightCalls* slot_calls_ = nullptr;  // the worker's record, set with in_slot_
};

}  // namespace trpc::detail
