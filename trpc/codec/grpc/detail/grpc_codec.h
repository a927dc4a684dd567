#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/codec/detail/codec.h"
#include "trpc/codec/grpc/detail/grpc_status.h"
#include "trpc/codec/grpc/detail/h2_server_session.h"
#include "trpc/codec/grpc/detail/h2_session.h"
#include "trpc/codec/grpc/grpc_message.h"

namespace trpc::grpc {

/// gRPC over HTTP/2 (h2c, prior knowledge), server half. Each connection has an HTTP/2 session
/// (detail::H2Session) as its codec state; requests are cut per stream, replies encoded on the
/// connection's thread. Unary and streaming calls.
class GrpcServerCodec final : public ServerCodec {
 public:
  GrpcServerCodec() { SetStreamFramesMarkedInMeta(); }
  explicit GrpcServerCodec(const detail::H2Options& options) : options_(options) {
    SetStreamFramesMarkedInMeta();
  }

  std::string_view Name() const override { return kGrpcCodecName; }
  /// Over TLS, HTTP/2 needs ALPN "h2" both ways (RFC 9113 §3.2); gRPC clients refuse a server
  /// that does not agree on it, and so do we.
  TlsAlpn Alpn() const override { return {{"h2"}, true}; }
  std::unique_ptr<FrameCodecState> NewConnectionState() override;
  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override;
  SplitResult SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                             std::string* err, FrameCodecState* state) override;
  /// Takes the frame's ServerRequestMeta (the session cut it); the frame is the message.
  bool DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) override;
  bool EncodeResponse(RpcResponse* rsp, const google::protobuf::MessageLite* body_msg,
                      ChainBuffer* out) override;
  std::shared_ptr<ServerCodec> WithOptions(const std::map<std::string, std::string>& options,
                                           std::string* key, std::string* err) override;
  /// Streaming calls: their events, cut by the connection's session for the paths given to
  /// WithStreamMethods().
  std::unique_ptr<ServerStreamSession> NewStreamSession(uint32_t max_streams,
                                                        uint32_t window) override;
  /// HTTP/2 streams look alike whether a call is unary or streaming: the session tells them by
  /// their :path, which must be one of `funcs` for a streaming call.
  std::shared_ptr<ServerCodec> WithStreamMethods(
      const std::vector<std::string>& stream_funcs,
      const std::vector<std::string>* all_funcs) override;
  const detail::H2Options& options() const { return options_; }
  /// The grpc-status the reply is sent with (GrpcCodeOf).
  int WireStatus(int32_t ret, int32_t func_ret) const override { return GrpcCodeOf(ret, func_ret); }
  std::string_view WireStatusName(int status) const override { return GrpcCodeName(status); }

 private:
  detail::H2Options options_;
  std::shared_ptr<const detail::H2ServerSession::Methods> methods_;  // null: none known
};

/// The client half: a request per stream on a shared HTTP/2 connection; the response frame is
/// the whole closed stream.
class GrpcClientCodec final : public ClientCodec {
 public:
  GrpcClientCodec() { SetStreamFramesMarkedInMeta(); }
  explicit GrpcClientCodec(const detail::H2Options& options) : options_(options) {
    SetStreamFramesMarkedInMeta();
  }

  std::string_view Name() const override { return kGrpcCodecName; }
  TlsAlpn Alpn() const override { return {{"h2"}, true}; }
  std::unique_ptr<FrameCodecState> NewConnectionState() override;
  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override;
  SplitResult SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                             std::string* err, FrameCodecState* state) override;
  bool PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) override;
  bool EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                     ChainBuffer* out) override;
  bool DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) override;
  bool SupportsOneway() const override { return false; }
  /// The grpc-status the call ended with: the one received (FromGrpcCode's inverse), or the
  /// code a local failure stands for (a timeout: DEADLINE_EXCEEDED; no connection: UNAVAILABLE).
  int WireStatus(int32_t ret, int32_t func_ret) const override { return GrpcCodeOf(ret, func_ret); }
  /// Streaming calls on the connection's HTTP/2 session (`state`).
  std::unique_ptr<ClientStreamSession> NewClientStreamSession(uint32_t max_streams,
                                                              FrameCodecState* state) override;
  std::shared_ptr<ClientCodec> WithOptions(const std::map<std::string, std::string>& options,
                                           std::string* key, std::string* err) override;

 private:
  detail::H2Options options_;
};

}  // namespace trpc::grpc
