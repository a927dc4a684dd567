#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "trpc/base/filter.h"
#include "trpc/base/net_address.h"
#include "trpc/base/ref_ptr.h"
#include "trpc/base/status.h"
#include "trpc/codec/rpc_message.h"
#include "trpc/runtime/task.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

class Connection;
class MessageServerFilter;
class RpcMethodHandler;
class ServerCodec;
class ServerContext;
class Service;
using ServerContextPtr = RefPtr<ServerContext>;
namespace detail {
class ConcurrencyLimiter;
template <typename Filter, typename ContextPtr>
class FilterChain;
using ServerFilterChain = FilterChain<MessageServerFilter, ServerContextPtr>;
struct MethodCounters;
struct InFlightCalls;
class ServiceAdapter;
}  // namespace detail

/// Everything a handler knows about the call it serves: who called, what, with which metadata
/// and deadline, and the status it will answer with. One per request; created by the framework.
///
/// Thread contract: used by one thread (or fiber) at a time — the one running the handler.
/// The reply is sent exactly once, by the framework when the handler returns. Handlers hold it
/// through ServerContextPtr (an intrusive reference count: copy it to keep the context, e.g. in
/// a continuation that replies later).
class ServerContext final : public RefCounted<ServerContext>, private Task {
 public:
  const std::string& GetCaller() const { return req_.caller; }
  const std::string& GetCallee() const { return req_.callee; }
  /// "/package.Service/Method".
  const std::string& GetFuncName() const { return req_.func; }
  uint32_t GetRequestId() const { return req_.request_id; }
  bool IsOneway() const { return req_.call_type == kOnewayCall; }
  const NetAddress& GetRemoteAddr() const;

  /// Request metadata from the caller (trans_info). Copied back into the reply.
  const TransInfo& GetPbReqTransInfo() const { return req_.trans_info; }
  /// Adds metadata to the reply only.
  void AddRspTransInfo(std::string key, std::string value) {
    rsp_trans_info_[std::move(key)] = std::move(value);
  }

  /// MonotonicNanos() when the request was read, and its deadline (0 = none): the earlier of the
  /// caller's timeout and the service's timeout, counted from the read.
  int64_t GetRecvTimestampNs() const { return recv_ns_; }
  int64_t GetDeadlineNs() const { return deadline_ns_; }

  void SetStatus(Status status) { status_ = std::move(status); }
  const Status& GetStatus() const { return status_; }

  /// Replying later (tRPC-Cpp's names). A synchronous handler that calls SetResponse(false)
  /// takes the reply over: the framework sends nothing when the handler returns, and the handler
  /// (or whatever it handed the context to) calls SendUnaryResponse() exactly once, from any
  /// thread. Until then the request counts against the connection's max_pending_requests, and a
  /// graceful stop waits for it. Call SetResponse(false) on the thread running the handler,
  /// before it returns.
  void SetResponse(bool framework_replies);
  bool IsResponse() const { return framework_replies_; }
  /// Sends the reply of a call taken over with SetResponse(false): `status`, and `rsp` when the
  /// status is OK. Later calls are ignored.
  void SendUnaryResponse(const Status& status, const google::protobuf::MessageLite& rsp) {
    SendReply(status, &rsp);
  }
  void SendUnaryResponse(const Status& status) { SendReply(status, nullptr); }

  /// The service's timeout budget left, in ms (0 when there is no deadline; 1 at least while
  /// there is time left).
  int64_t GetRemainingTimeoutMs() const;

  /// A protocol's own handler (e.g. an HTTP handler) hands its protocol-specific reply here
  /// before SendReply(); the codec encodes it instead of the neutral reply.
  void SetProtocolResponse(std::unique_ptr<ProtocolMessage> rsp) { protocol_rsp_ = std::move(rsp); }
  /// The one set with SetProtocolResponse() (null if none), for a protocol's API to add to it.
  ProtocolMessage* GetProtocolResponse() const { return protocol_rsp_.get(); }
  /// The request's protocol-specific part (null for protocols that have none), for the
  /// protocol's own API (e.g. grpc::GetRequestInfo).
  const ProtocolMessage* GetProtocolRequest() const { return req_.protocol.get(); }

 private:
  // The framework's part: the server's adapter makes, dispatches and answers contexts; method
  // handlers and services read the request and reply through the protected helpers of
  // RpcMethodHandler and Service.
  friend class RefCounted<ServerContext>;
  friend class RpcMethodHandler;
  friend class Service;
  friend class detail::ServiceAdapter;

  ServerContext(std::shared_ptr<Connection> conn, ServerCodec* codec, int64_t recv_ns);
  ~ServerContext();

  // Task: runs the request's handler where the thread model put it (ServiceAdapter).
  void Run() override;

  RpcRequest& request() { return req_; }
  /// The borrowed form of SetProtocolResponse(): `rsp` must outlive the SendReply() that
  /// follows (a protocol handler's reply on its own stack). An owned one takes precedence.
  void SetProtocolResponseRef(const ProtocolMessage* rsp) { protocol_rsp_ref_ = rsp; }
  /// The service's filters (null or empty: none). The chain must outlive the context.
  void SetFilterChain(const detail::ServerFilterChain* chain) { filters_ = chain; }
  /// Runs the filters at `point`. On a REJECT returns false and leaves the reason in the status
  /// (ret 999 "rejected by server filter NAME" if the filter set none).
  bool RunFilters(FilterPoint point);
  /// The handler is about to run: SERVER_POST_RPC_INVOKE filters will run at the reply.
  void MarkInvoked() { invoked_ = true; }
  void SetDeadlineNs(int64_t deadline_ns) { deadline_ns_ = deadline_ns; }
  /// Encodes the reply with `status` and `body` (null for none) and queues it on the connection.
  /// Sends nothing for one-way calls. Only the first call sends.
  void SendReply(const Status& status, const google::protobuf::MessageLite* body);
  /// The request was counted with Connection::BeginRequest() (asynchronous dispatch): the reply
  /// (or, for one-way calls and contexts dropped unreplied, the end) ends it on the connection.
  /// Also links it into its loop thread's in-flight calls (loop thread), which a bounded stop
  /// answers at the limit (detail/in_flight.h).
  void SetCountedPending() {
    counted_pending_ = true;
    LinkInFlight();
  }
  /// The per-method counters the reply is recorded in (latency from GetRecvTimestampNs() to
  /// SendReply(), and the error code); null records nothing. Must outlive the context.
  void SetMethodCounters(detail::MethodCounters* counters) { method_counters_ = counters; }
  // The request was admitted by `limiter` on reactor `reactor`: it leaves it at the reply.
  void SetLimiter(detail::ConcurrencyLimiter* limiter, size_t reactor) {
    limiter_ = limiter;
    limiter_reactor_ = static_cast<uint32_t>(reactor);
  }
  void LeaveLimiter(int64_t now_ns);
  Connection* connection() const { return conn_.get(); }
  void Record(int64_t now_ns, int32_t ret, int32_t func_ret);

  // Bounded stop (ServiceAdapter::Stop, detail/in_flight.h). A reply is claimed once, by the
  // handler's side (SendReply) or by the stop (CutByStop); the loser sends nothing.
  enum : uint8_t { kNotReplied, kReplied, kCut };
  /// The stop's answer to a call still in its handler at stop_max_wait_time: claims the reply
  /// and encodes kServerSystemErr into `*out` (left empty for one-way calls). False when the
  /// handler's own reply was claimed first. Reads only fields nobody writes after decoding
  /// (the request's header), so the handler may be running meanwhile on another thread.
  bool CutByStop(ChainBuffer* out);
  // The reply's fields taken from the request's header (only reads it).
  void FillResponseHeader(RpcResponse* rsp) const;
  void LinkInFlight();
  // Loop thread (or a stop's takeover). Its release store is the context's last access.
  void UnlinkInFlight();
  // SendReply's claim: false when a stop answered this call already.
  bool ClaimReply();
  // Queues `out` and ends the request on the loop: directly on the loop thread, else from a
  // task that holds this context, so it stays linked (and alive) until its end arrives there.
  // Then gives up the slot a merge reply held.
  void FinishOnLoop(ChainBuffer&& out);
  // Merge model, after the handler returned without replying: leaves the in-handler slot.
  void LeaveSlot();
  // RefCounted's last drop. A context freed off its loop thread while still linked is freed
  // on the loop thread instead: the list it is in is that thread's alone, and a stop may be
  // walking it.
  static void FreeLastRef(const ServerContext* p);

  std::shared_ptr<Connection> conn_;
  ServerCodec* codec_;
  RpcRequest req_;
  TransInfo rsp_trans_info_;
  Status status_;
  std::unique_ptr<ProtocolMessage> protocol_rsp_;
  const ProtocolMessage* protocol_rsp_ref_ = nullptr;
  int64_t recv_ns_;
  uint64_t reply_slot_;  // Connection::frame_slot() of the request (0: replies carry ids)
  int64_t deadline_ns_ = 0;
  bool replied_ = false;
  bool counted_pending_ = false;
  bool framework_replies_ = true;
  bool invoked_ = false;
  bool parked_permit_ = false;  // holds a permit of detail::ParkedWork until destroyed
  const detail::ServerFilterChain* filters_ = nullptr;
  detail::MethodCounters* method_counters_ = nullptr;
  detail::ConcurrencyLimiter* limiter_ = nullptr;  // until the reply, if admitted by one
  uint32_t limiter_reactor_ = 0;
  int64_t start_ns_ = 0;  // when the handler started, if admitted by a limiter
  // The thread model runs the handler on the connection's loop thread (merge), even when it
  // was counted pending (deferred to the end of the pass by max_concurrency).
  bool runs_on_loop_ = false;
  // Set while the request waits for its thread model to run it (Run()).
  detail::ServiceAdapter* adapter_ = nullptr;
  RpcMethodHandler* handler_ = nullptr;
  // Bounded stop. reply_state_: kNotReplied until SendReply (for counted requests) or the stop
  // claims it with an exchange (acq_rel: the winner's writes before it are seen by the
  // loser). in_flight_: the list this context is linked in (null: none); written by the loop
  // thread, read by the thread that frees the context (FreeLastRef).
  std::atomic<uint8_t> reply_state_{kNotReplied};
  std::atomic<detail::InFlightCalls*> in_flight_{nullptr};
  ServerContext* in_flight_prev_ = nullptr;
  ServerContext* in_flight_next_ = nullptr;
  // Merge model, loop thread only: the handler runs inline with the reactor's slot naming this
  // context (in_slot_), and a reply from inside it holds the slot busy while it queues.
  bool in_slot_ = false;
  bool slot_busy_ = false;
  detail::InFlightCalls* slot_calls_ = nullptr;  // the worker's record, set with in_slot_
};

}  // namespace trpc
