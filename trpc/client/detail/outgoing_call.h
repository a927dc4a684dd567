#pragma once

#include <cstdint>
#include <memory>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/client/detail/backend.h"
#include "trpc/codec/rpc_message.h"

namespace trpc::detail {

/// One attempt of a call on its way to one endpoint: the encoded request, and where its end
/// goes. CallSender sends it; what the reply means is the subclass's business (a decoded unary
/// reply, an undecoded frame, one attempt of several).
struct OutgoingCall {
  virtual ~OutgoingCall() = default;
  /// Runs exactly once for a call that expects a reply (not for one-way calls), on the reactor
  /// thread the call was sent from: with the transport's status (not OK: timeout, connect,
  /// connection lost, cancelled, proxy stopped) and the reply frame as the codec cut it.
  virtual void OnReply(Status st, ChainBuffer&& frame) = 0;

  ChainBuffer request;
  uint32_t request_id = 0;
  uint32_t call_type = kUnaryCall;
  int64_t deadline_ns = 0;
  int64_t start_ns = 0;
  BackendPtr backend;
  bool tracked = false;  // counted in the backend's EndpointStats (OnStart done)
  size_t slot = 0;       // which of the backend's multiplexed connections
  // Set by CallSender once the call is on a multiplexed connection: how to cancel it.
  std::weak_ptr<ClientConnection> conn;

  // Cancellation from the served call a call was made for (ServerContext::GetCancelSignal):
  // `reactor` is where the call is sent from, set before it is sent; `sent` and `cancelled` are
  // that thread's alone. CancelOnLoop().
  Reactor* reactor = nullptr;
  bool sent = false;                  // CallSender has taken it on its reactor
  std::unique_ptr<Status> cancelled;  // cancelled before that: it fails instead of going out
};

/// On `call.reactor`'s thread: ends `call` with `why` wherever it is. Not sent yet: it fails
/// when its send comes. Waiting on a multiplexed connection: given up there (gRPC resets its
/// stream) and its OnReply runs inside. On a pooled connection (HTTP/1.1, which cannot cancel
/// one request but by closing the connection) or answered already: nothing happens.
inline void CancelOnLoop(OutgoingCall& call, const Status& why) {
  if (!call.sent) {
    if (call.cancelled == nullptr) call.cancelled = std::make_unique<Status>(why);
    return;
  }
  if (ClientConnectionPtr conn = call.conn.lock()) conn->Cancel(call.request_id, why);
}

}  // namespace trpc::detail
