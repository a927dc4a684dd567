#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/chain_buffer.h"

namespace trpc::grpc::detail {

class H2ServerSession;

// The typed per-call metadata that the gRPC codec (Encode*/Decode*, any thread) and the
// connection's HTTP/2 session (loop thread) hand each other, one struct per direction and role.
// Each rides as the MessageMeta of the ChainBuffer that holds the call's message, so the layers
// in between (connection, server, client) only move it: the headers are built once, as these
// fields, and HPACK-encoded once, by the session.
//
//   server:  session --ServerRequestMeta--> codec (DecodeRequest)
//            codec (EncodeResponse) --ServerReplyMeta--> session
//   client:  codec (EncodeRequest) --ClientRequestMeta--> session
//            session --ClientReplyMeta--> codec (PeekResponseId, DecodeResponse)

using Pairs = std::vector<std::pair<std::string, std::string>>;

/// A request's headers, as a server stream received them (values as on the wire). Its buffer
/// holds the request's one message, prefix removed and inflated.
struct ServerRequestMeta final : MessageMeta {
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<ServerRequestMeta>(*this);
  }
  int32_t stream_id = 0;
  std::string method;
  std::string path;
  std::string authority;
  std::string content_type;
  std::string timeout;          // grpc-timeout
  std::string encoding;         // grpc-encoding
  std::string accept_encoding;  // grpc-accept-encoding
  Pairs metadata;               // every other header
  bool compressed = false;      // the message came compressed (and was inflated)
  /// Fires when the client resets the stream before its response is sent (cancel, deadline),
  /// or the connection closes first.
  std::shared_ptr<CancelSignal> cancelled;
};

/// An event of a streaming call on a server (a stream whose method the codec knows as
/// streaming): the session hands them up in order, as buffers carrying this meta (marked as
/// stream events, FrameCodec::IsStreamFrame), and GrpcServerStreamSession turns them into the
/// server's stream events. A kMessage buffer holds the message, prefix removed and inflated.
struct ServerStreamEventMeta final : MessageMeta {
  enum class Kind { kOpen, kMessage, kEnd, kWritable };
  ServerStreamEventMeta(Kind k, int32_t id, H2ServerSession* s)
      : kind(k), stream_id(id), session(s) {
    stream_event = true;
  }
  std::unique_ptr<MessageMeta> Copy() const override {
    auto m = std::make_unique<ServerStreamEventMeta>(kind, stream_id, session);
    if (head != nullptr) m->head = std::make_unique<ServerRequestMeta>(*head);
    m->grpc_status = grpc_status;
    m->grpc_message = grpc_message;
    m->arrived_compressed = arrived_compressed;
    return m;
  }
  Kind kind;
  int32_t stream_id;
  H2ServerSession* session;                 // the connection's, which made the event
  std::unique_ptr<ServerRequestMeta> head;  // kOpen: the call's headers
  // kEnd: 0 = the client half-closed (no more messages come); else the stream is gone (reset
  // by the client, or by us for a protocol violation), with this gRPC code and text.
  int32_t grpc_status = 0;
  std::string grpc_message;
};

/// An event of a client's streaming call, handed up in order as a buffer carrying this meta
/// (marked as a stream event); GrpcClientStreamSession turns it into the client's stream
/// events. A kMessage buffer holds the message, prefix removed and inflated.
struct ClientStreamEventMeta final : MessageMeta {
  enum class Kind { kMessage, kEnd, kWritable };
  ClientStreamEventMeta(Kind k, int32_t id) : kind(k), stream_id(id) { stream_event = true; }
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<ClientStreamEventMeta>(*this);
  }
  Kind kind;
  int32_t stream_id;
  // kEnd: the server's status (its trailers, or Trailers-Only) with `reset` false; a reset
  // stream (RST_STREAM, or ours for a protocol violation) with `reset` true and the code that
  // describes it.
  int32_t grpc_status = 0;
  std::string grpc_message;
  bool reset = false;
};

/// A server's reply to the request of `stream_id`. Its buffer holds the length-prefixed message,
/// or nothing: an error then goes as Trailers-Only.
struct ServerReplyMeta final : MessageMeta {
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<ServerReplyMeta>(*this);
  }
  int32_t stream_id = 0;
  int32_t grpc_status = 0;
  std::string grpc_message;  // percent-encoded
  std::string encoding;      // grpc-encoding of the message, empty for none
  Pairs initial;             // initial metadata (header fields, checked)
  Pairs trailing;            // trailing metadata
};

/// A client's request, the call `request_id` of its connection. Its buffer holds the
/// length-prefixed message.
struct ClientRequestMeta final : MessageMeta {
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<ClientRequestMeta>(*this);
  }
  uint32_t request_id = 0;
  std::string path;
  std::string authority;
  std::string timeout;   // grpc-timeout, empty for none
  std::string encoding;  // grpc-encoding, empty for none
  Pairs metadata;
};

/// How a client's stream ended: the response, or the error. Its buffer holds the stream's DATA.
struct ClientReplyMeta final : MessageMeta {
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<ClientReplyMeta>(*this);
  }
  uint32_t request_id = 0;
  int32_t http_status = 0;   // :status, 0 if none came
  int32_t grpc_status = -1;  // from the trailers (or a Trailers-Only answer), -1 if none
  uint32_t rst_code = 0;     // the stream's close code (RST_STREAM), 0 = NO_ERROR
  std::string grpc_message;
  std::string encoding;  // grpc-encoding
  Pairs metadata;        // headers and trailers
};

}  // namespace trpc::grpc::detail
