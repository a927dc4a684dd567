#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/filter.h"
#include "trpc/base/net_address.h"
#include "trpc/base/ref_ptr.h"
#include "trpc/base/status.h"
#include "trpc/base/tls_peer.h"
#include "trpc/codec/rpc_message.h"
#include "trpc/runtime/task.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

class ServerContext;
using ServerContextPtr = RefPtr<ServerContext>;

/// Everything a handler knows about the call it serves: who called, what, with which metadata
/// and deadline, and the status it will answer with. One per request; created by the framework.
///
/// Thread contract: used by one thread (or fiber) at a time — the one running the handler.
/// The reply is sent exactly once, by the framework when the handler returns. Handlers hold it
/// through ServerContextPtr (an intrusive reference count: copy it to keep the context, e.g. in
/// a continuation that replies later).
// (Task: the thread model runs the call through it; detail::ServerCall implements Run. A base
// here, not there, so that the context sits at the start of the call's object and converting
// between the two costs nothing.)
class ServerContext : public RefCounted<ServerContext>, protected Task {
 public:
  const std::string& GetCaller() const { return req_.caller; }
  const std::string& GetCallee() const { return req_.callee; }
  /// "/package.Service/Method".
  const std::string& GetFuncName() const { return req_.func; }
  uint32_t GetRequestId() const { return req_.request_id; }
  bool IsOneway() const { return req_.call_type == kOnewayCall; }
  const NetAddress& GetRemoteAddr() const;
  /// The service's protocol ("trpc", "grpc", "http").
  std::string_view GetProtocolName() const;
  /// The caller's TLS identity when the call came over TLS (its certificate's subject and
  /// SANs, whether it verified, the version and ALPN agreed), else null. Filters and handlers
  /// authorise by it (docs/tls.md).
  const TlsPeer* GetTlsPeer() const;

  /// Request metadata from the caller (trans_info). Copied back into the reply.
  const TransInfo& GetPbReqTransInfo() const { return req_.trans_info; }
  /// The same, for a filter that rewrites what downstream calls inherit (MakeClientContext
  /// copies it): the tracing filter puts its span's traceparent there.
  TransInfo& MutablePbReqTransInfo() { return req_.trans_info; }
  /// Adds metadata to the reply only.
  void AddRspTransInfo(std::string key, std::string value) {
    rsp_trans_info_[std::move(key)] = std::move(value);
  }

  /// The request's attachment: trpc's opaque bytes after the body, never compressed (tRPC-Cpp's
  /// name). Empty when there is none, and always for other protocols.
  const ChainBuffer& GetRequestAttachment() const { return req_.attachment; }
  /// Sends `attachment` after the reply's body (trpc; other protocols have no attachments and
  /// drop it). A failed call's reply carries none.
  void SetResponseAttachment(ChainBuffer&& attachment) {
    rsp_attachment_ = std::make_unique<ChainBuffer>(std::move(attachment));
  }

  /// MonotonicNanos() when the request was read, and its deadline (0 = none): the earlier of the
  /// caller's timeout and the service's timeout, counted from the read.
  int64_t GetRecvTimestampNs() const { return recv_ns_; }
  int64_t GetDeadlineNs() const { return deadline_ns_; }
  /// Fires when the call is cancelled, never when it ends normally:
  /// - a stream's, when the client resets it, its timeout passes or its connection is lost;
  /// - a unary gRPC call's, when the client resets its stream (RST_STREAM: a cancel, or its
  ///   deadline) or the connection closes before the reply;
  /// - a unary call of another protocol's, when its connection closes (the caller is gone).
  /// MakeClientContext() passes it on, so the downstream calls and streams made from this
  /// context are cancelled with it. Made on first use (a unary call that asks for none costs
  /// nothing); the handler's thread.
  const std::shared_ptr<CancelSignal>& GetCancelSignal() const;

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
  void SendUnaryResponse(const Status& status, const google::protobuf::MessageLite& rsp);
  void SendUnaryResponse(const Status& status);

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

  /// A filter's per-call data under `id` (NewFilterDataId()), kept with the context.
  template <typename T>
  void SetFilterData(uint32_t id, std::shared_ptr<T> value) {
    filter_data_.Set(id, std::move(value));
  }
  /// The data set under `id` as a T (the type it was set with), or null.
  template <typename T>
  T* GetFilterData(uint32_t id) const {
    return static_cast<T*>(filter_data_.Get(id));
  }

 protected:
  // Every context is the handler's part of the framework's per-call state,
  // detail::ServerCall (server/detail/server_call.h), the only class that derives from this
  // one: it makes, dispatches and answers the call, and reaches the fields below through these
  // accessors. Handlers and filters see only the public part.
  explicit ServerContext(int64_t recv_ns) : recv_ns_(recv_ns) {}
  ~ServerContext() = default;  // freed as the ServerCall it is (FreeLastRef)

  const RpcRequest& request() const { return req_; }
  RpcRequest& mutable_request() { return req_; }
  TransInfo& rsp_trans_info() { return rsp_trans_info_; }
  std::unique_ptr<ProtocolMessage>& protocol_response() { return protocol_rsp_; }
  std::unique_ptr<ChainBuffer>& response_attachment() { return rsp_attachment_; }
  void SetDeadlineNs(int64_t deadline_ns) { deadline_ns_ = deadline_ns; }
  void SetCancelSignal(std::shared_ptr<CancelSignal> s) { cancel_signal_ = std::move(s); }

 private:
  friend class RefCounted<ServerContext>;
  // RefCounted's last drop: frees the ServerCall (on its loop thread when it must be).
  static void FreeLastRef(const ServerContext* p);

  RpcRequest req_;
  TransInfo rsp_trans_info_;
  Status status_;
  std::unique_ptr<ProtocolMessage> protocol_rsp_;
  // Allocated only by a handler that sends one, so a call without costs a null pointer.
  std::unique_ptr<ChainBuffer> rsp_attachment_;
  int64_t recv_ns_;
  int64_t deadline_ns_ = 0;
  mutable std::shared_ptr<CancelSignal> cancel_signal_;  // (GetCancelSignal makes it)
  FilterData filter_data_;
  bool framework_replies_ = true;
};

}  // namespace trpc
