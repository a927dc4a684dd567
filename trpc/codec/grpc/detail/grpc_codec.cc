#include "trpc/codec/grpc/detail/grpc_codec.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <functional>

#include "trpc/base/logging.h"
#include "trpc/base/status.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/codec/detail/protocol_options.h"
#include "trpc/codec/grpc/detail/call_meta.h"
#include "trpc/codec/grpc/detail/grpc_metadata.h"
#include "trpc/codec/grpc/detail/grpc_status.h"
#include "trpc/codec/grpc/detail/grpc_stream_session.h"
#include "trpc/codec/grpc/detail/grpc_wire.h"
#include "trpc/codec/grpc/detail/h2_client_session.h"
#include "trpc/codec/grpc/detail/h2_server_session.h"

namespace trpc::grpc {

namespace {

using detail::ClientReplyMeta;
using detail::ClientRequestMeta;
using detail::H2Session;
using detail::Pairs;
using detail::ServerReplyMeta;
using detail::ServerRequestMeta;

}  // namespace

namespace {

// Both halves split by feeding the connection's HTTP/2 session (max_message_size bounds what
// it keeps; the transport's max_packet_size does not apply).
SplitResult NoSession(std::string* err) {
  *err = "the gRPC codec needs its connection state";
  return SplitResult::kError;
}

SplitResult FeedSession(ChainBuffer* in, std::vector<ChainBuffer>* out, std::string* err,
                        FrameCodecState* state) {
  if (state == nullptr) return NoSession(err);
  return static_cast<H2Session*>(state)->Feed(in, out, err);
}

// The gRPC message: the 5-byte prefix (compressed flag, big-endian length) and the bytes,
// compressed with `encoding` when it is not empty.
bool FrameMessage(ChainBuffer&& body, const std::string& encoding, ChainBuffer* out) {
  ChainBuffer packed;
  if (!encoding.empty()) {
    if (!detail::Compress(encoding, body, &packed)) return false;
  } else {
    packed = std::move(body);
  }
  const auto n = static_cast<uint32_t>(packed.size());
  const char prefix[5] = {static_cast<char>(encoding.empty() ? 0 : 1), static_cast<char>(n >> 24),
                          static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                          static_cast<char>(n)};
  out->Append(prefix, 5);
  out->Append(std::move(packed));
  return true;
}

bool SerializeBody(const google::protobuf::MessageLite* body_msg, ChainBuffer* body,
                   uint32_t content_type) {
  if (body_msg == nullptr) return true;
  std::string err;
  body->Clear();
  return SerializeMessageBody(*body_msg, content_type, body, &err);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Server.

std::unique_ptr<FrameCodecState> GrpcServerCodec::NewConnectionState() {
  return std::make_unique<detail::H2ServerSession>(options_, methods_);
}

SplitResult GrpcServerCodec::Split(ChainBuffer*, std::vector<ChainBuffer>*, size_t,
                                   std::string* err) {
  return NoSession(err);
}

SplitResult GrpcServerCodec::SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t,
                                            std::string* err, FrameCodecState* state) {
  return FeedSession(in, out, err, state);
}

bool GrpcServerCodec::DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) {
  std::unique_ptr<MessageMeta> meta = frame.TakeMeta();
  auto* head = static_cast<ServerRequestMeta*>(meta.get());  // (the server session's)
  if (head == nullptr) {
    *err = "gRPC: a request frame without its stream (a bug)";
    return false;
  }
  detail::RequestFromHead(std::move(*head), req);
  req->body = std::move(frame);
  return true;
}

std::unique_ptr<ServerStreamSession> GrpcServerCodec::NewStreamSession(uint32_t max_streams,
                                                                       uint32_t window) {
  (void)max_streams;  // (HTTP/2's max_concurrent_streams and windows apply)
  (void)window;
  return std::make_unique<detail::GrpcServerStreamSession>();
}

std::shared_ptr<ServerCodec> GrpcServerCodec::WithStreamMethods(
    const std::vector<std::string>& stream_funcs, const std::vector<std::string>* all_funcs) {
  auto methods = std::make_shared<detail::H2ServerSession::Methods>();
  if (all_funcs != nullptr) {
    for (const std::string& f : *all_funcs) methods->streaming.emplace(f, false);
    methods->complete = true;
  }
  for (const std::string& f : stream_funcs) methods->streaming[f] = true;
  auto codec = std::make_shared<GrpcServerCodec>(options_);
  codec->methods_ = std::move(methods);
  return codec;
}

bool GrpcServerCodec::EncodeResponse(RpcResponse* rsp,
                                     const google::protobuf::MessageLite* body_msg,
                                     ChainBuffer* out) {
  const auto* req = dynamic_cast<const GrpcRequestInfo*>(rsp->request_protocol);
  const auto* opts = dynamic_cast<const GrpcReplyOptions*>(rsp->protocol_reply());
  const int code = GrpcCodeOf(rsp->ret, rsp->func_ret);
  std::string encoding;
  ChainBuffer payload;
  if (code == kGrpcOk) {
    ChainBuffer body = std::move(rsp->body);
    if (!SerializeBody(body_msg, &body, rsp->content_type)) return false;
    if (opts != nullptr && !opts->compression.empty() && req != nullptr &&
        detail::AcceptsEncoding(req->accept_encoding, opts->compression)) {
      encoding = opts->compression;
    }
    if (!FrameMessage(std::move(body), encoding, &payload)) return false;
  }
  // (Nothing fails from here on: `out` is only written on success.)
  auto reply = std::make_unique<ServerReplyMeta>();
  reply->stream_id = static_cast<int32_t>(rsp->request_id);
  reply->grpc_status = code;
  if (code != kGrpcOk) reply->grpc_message = detail::PercentEncode(rsp->error_msg);
  reply->encoding = std::move(encoding);
  if (opts != nullptr) detail::ToHeaders(opts->initial_metadata, &reply->initial);
  detail::ToHeaders(rsp->trans_info, &reply->trailing);
  out->Append(std::move(payload));
  out->SetMeta(std::move(reply));
  return true;
}

namespace {

// The H2Options keys of a service's protocol_options: all of them for a server, the ones about
// what it receives (message size, windows, header list) for a client.
bool ApplyH2Options(const std::map<std::string, std::string>& options, bool server,
                    detail::H2Options* o, std::string* key, std::string* err) {
  auto u32 = [](uint32_t* field) {
    return [field](uint64_t v) { *field = static_cast<uint32_t>(v); };
  };
  std::vector<IntegerOption> integers = {
      {"max_header_list_size", 1024, 16u << 20, u32(&o->max_header_list_size)},
      {"max_message_size", 1, 1u << 30, [o](uint64_t v) { o->max_message_size = v; }},
      {"initial_window_size", 65535, (1u << 31) - 1, u32(&o->initial_window_size)},
      {"connection_window_size", 65535, (1u << 31) - 1, u32(&o->connection_window_size)},
  };
  if (server) {
    integers.insert(
        integers.end(),
        {
            {"max_concurrent_streams", 1, 1u << 20, u32(&o->max_concurrent_streams)},
            {"request_timeout_ms", 0, 3'600'000, u32(&o->request_timeout_ms)},
            {"max_rst_stream_burst", 1, 1u << 20, u32(&o->max_rst_stream_burst)},
            {"max_rst_stream_per_second", 1, 1u << 20, u32(&o->max_rst_stream_per_second)},
            {"max_ping_per_second", 1, 1u << 20, u32(&o->floods.ping_per_second)},
            {"max_settings_per_second", 1, 1u << 20, u32(&o->floods.settings_per_second)},
            {"max_empty_data_per_second", 1, 1u << 20, u32(&o->floods.empty_data_per_second)},
            {"max_priority_per_second", 1, 1u << 20, u32(&o->floods.priority_per_second)},
            {"max_window_update_per_second", 1, 1u << 20, u32(&o->floods.window_update_per_second)},
        });
  }
  return ApplyProtocolOptions(server ? "grpc" : "grpc client", options, integers, {}, nullptr, key,
                              err);
}

}  // namespace

std::shared_ptr<ServerCodec> GrpcServerCodec::WithOptions(
    const std::map<std::string, std::string>& options, std::string* key, std::string* err) {
  detail::H2Options o = options_;
  if (!ApplyH2Options(options, /*server=*/true, &o, key, err)) return nullptr;
  return std::make_shared<GrpcServerCodec>(o);
}

std::shared_ptr<ClientCodec> GrpcClientCodec::WithOptions(
    const std::map<std::string, std::string>& options, std::string* key, std::string* err) {
  detail::H2Options o = options_;
  if (!ApplyH2Options(options, /*server=*/false, &o, key, err)) return nullptr;
  return std::make_shared<GrpcClientCodec>(o);
}

// ---------------------------------------------------------------------------------------------
// Client.

std::unique_ptr<ClientStreamSession> GrpcClientCodec::NewClientStreamSession(
    uint32_t max_streams, FrameCodecState* state) {
  (void)max_streams;  // (the server's max_concurrent_streams applies)
  if (state == nullptr) return nullptr;
  return std::make_unique<detail::GrpcClientStreamSession>(
      static_cast<detail::H2ClientSession*>(state));
}

std::unique_ptr<FrameCodecState> GrpcClientCodec::NewConnectionState() {
  return std::make_unique<detail::H2ClientSession>(options_);
}

SplitResult GrpcClientCodec::Split(ChainBuffer*, std::vector<ChainBuffer>*, size_t,
                                   std::string* err) {
  return NoSession(err);
}

SplitResult GrpcClientCodec::SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t,
                                            std::string* err, FrameCodecState* state) {
  return FeedSession(in, out, err, state);
}

bool GrpcClientCodec::PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) {
  const auto* reply = static_cast<const ClientReplyMeta*>(frame.meta());  // (the session's)
  if (reply == nullptr) return false;
  *request_id = reply->request_id;
  return true;
}

bool GrpcClientCodec::EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                                    ChainBuffer* out) {
  if (req->call_type == kOnewayCall) return false;
  if (!req->attachment.empty()) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "gRPC: cannot send request {} to {}: gRPC has no attachments",
                      req->request_id, req->func);
    return false;
  }
  if (req->content_type != kContentTypeProtobuf) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "gRPC: cannot send request {} to {} as content type {}: our gRPC client "
                      "sends protobuf only",
                      req->request_id, req->func, req->content_type);
    return false;
  }
  ChainBuffer body = std::move(req->body);
  if (!SerializeBody(body_msg, &body, req->content_type)) return false;
  // content_encoding is numbered as trpc.proto numbers it; gRPC names the two it shares.
  std::string encoding;
  if (req->content_encoding == 1) {
    encoding = "gzip";
  } else if (req->content_encoding == 3) {
    encoding = "deflate";  // gRPC's "deflate" is the zlib format
  } else if (req->content_encoding != 0) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "gRPC: cannot compress request {} to {}: compress type {} has no gRPC name "
                      "(gRPC carries 1 gzip and 3 deflate)",
                      req->request_id, req->func, req->content_encoding);
    return false;
  }
  ChainBuffer payload;
  if (!FrameMessage(std::move(body), encoding, &payload)) return false;
  auto call = std::make_unique<ClientRequestMeta>();
  call->request_id = req->request_id;
  call->path = req->func;
  call->authority = req->authority;
  if (req->timeout_ms > 0) call->timeout = detail::FormatTimeout(req->timeout_ms);
  call->encoding = std::move(encoding);
  detail::ToHeaders(req->trans_info, &call->metadata);
  out->Append(std::move(payload));
  out->SetMeta(std::move(call));
  return true;
}

bool GrpcClientCodec::DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) {
  std::unique_ptr<MessageMeta> meta = frame.TakeMeta();
  auto* reply = static_cast<ClientReplyMeta*>(meta.get());  // (the client session's)
  if (reply == nullptr) {
    *err = "gRPC: a response frame without its stream (a bug)";
    return false;
  }
  const uint32_t rst_code = reply->rst_code;
  const int32_t http_status = reply->http_status;
  int32_t grpc_status = reply->grpc_status;
  std::string& message = reply->grpc_message;
  const std::string& encoding = reply->encoding;
  rsp->request_id = reply->request_id;
  detail::FromHeaders(std::move(reply->metadata), &rsp->trans_info);
  if (grpc_status < 0) {
    if (rst_code != 0 || http_status == 0) {
      rsp->ret = kClientNetworkErr;
      rsp->error_msg = fmt::format("the server reset the stream (HTTP/2 error code {})", rst_code);
      return true;
    }
    grpc_status = http_status != 200 ? GrpcCodeOfHttpStatus(http_status) : kGrpcUnknown;
    message = http_status != 200 ? fmt::format("HTTP status {} without grpc-status", http_status)
                                 : "response without grpc-status";
  }
  if (grpc_status != kGrpcOk) {
    FromGrpcCode(grpc_status, &rsp->ret, &rsp->func_ret);
    rsp->error_msg = detail::PercentDecode(message);
    return true;
  }
  uint8_t prefix[5];
  if (frame.size() < 5 || frame.CopyTo(prefix, 5) != 5) {
    *err = "gRPC: an OK response without a message";
    return false;
  }
  const uint32_t len = (uint32_t{prefix[1]} << 24) | (uint32_t{prefix[2]} << 16) |
                       (uint32_t{prefix[3]} << 8) | prefix[4];
  if (len != frame.size() - 5) {
    *err = "gRPC: a unary response must hold exactly one message";
    return false;
  }
  frame.Skip(5);
  if ((prefix[0] & 1) != 0) {
    if (encoding.empty() || encoding == "identity" || !detail::IsSupportedEncoding(encoding)) {
      *err = "gRPC: compressed response with grpc-encoding '" + encoding + "'";
      return false;
    }
    ChainBuffer plain;
    if (!detail::Decompress(encoding, frame, options_.max_message_size, &plain, err)) {
      return false;
    }
    rsp->body = std::move(plain);
  } else {
    rsp->body = std::move(frame);
  }
  return true;
}

namespace {
const bool kRegistered = [] {
  CodecRegistry::Instance().RegisterServer(std::string(kGrpcCodecName),
                                           std::make_shared<GrpcServerCodec>());
  CodecRegistry::Instance().RegisterClient(std::string(kGrpcCodecName),
                                           std::make_shared<GrpcClientCodec>());
  return true;
}();
}  // namespace

}  // namespace trpc::grpc
