#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trpc/codec/detail/codec.h"
#include "trpc/codec/trpc/detail/frame_header.h"

namespace trpc {

inline constexpr std::string_view kTrpcCodecName = "trpc";

/// The server half of the trpc protocol (unary frames; docs/protocol.md). Registered with
/// CodecRegistry as "trpc" when the library is linked (whole-archive, see trpc/CMakeLists.txt).
/// Stateless: one instance serves every connection, and all methods are safe from any thread.
/// Peer bytes are never trusted: every malformed input is a kError / false with a message.
class TrpcServerCodec final : public ServerCodec {
 public:
  std::string_view Name() const override { return kTrpcCodecName; }

  /// Cuts complete frames, unary and stream ones; kError on a bad magic, an unknown frame type,
  /// a total size smaller than the headers or larger than `max_frame_size` (decided from the
  /// 16-byte fixed header alone).
  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override;

  /// Stream frames: data frame type 1 (byte 2).
  TrpcServerCodec() { SetStreamFrameMark(2, kTrpcStreamDataFrame); }
  std::unique_ptr<ServerStreamSession> NewStreamSession(uint32_t max_streams,
                                                        uint32_t window) override;

  /// Fills `*req` from one frame; body and attachment are cut from the frame, not copied.
  bool DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) override;

  /// Appends one response frame to `out`. Moves `rsp->body` (if `body_msg` is null) and
  /// `rsp->attachment` out; copies the rest. A response with `ret != 0` carries neither body nor
  /// attachment. False, with `out` untouched, when the header exceeds 64 KiB or the frame 4 GiB.
  bool EncodeResponse(RpcResponse* rsp, const google::protobuf::MessageLite* body_msg,
                      ChainBuffer* out) override;
};

/// The client half of the trpc protocol. Same contract as TrpcServerCodec.
class TrpcClientCodec final : public ClientCodec {
 public:
  std::string_view Name() const override { return kTrpcCodecName; }

  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override;

  /// Appends one request frame to `out`. Moves `req->body` (if `body_msg` is null) and
  /// `req->attachment` out; copies the rest. False, with `out` untouched, on an oversized frame.
  bool EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                     ChainBuffer* out) override;

  bool DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) override;

  TrpcClientCodec() { SetStreamFrameMark(2, kTrpcStreamDataFrame); }
  std::unique_ptr<ClientStreamSession> NewClientStreamSession(uint32_t max_streams,
                                                              FrameCodecState* state) override;

  /// Reads request_id straight from the protobuf header's bytes (no parse, no allocation).
  /// False on a bad fixed header or a malformed protobuf header. A header without the field
  /// answers request 0, as proto3 reads it.
  bool PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) override;
};

}  // namespace trpc
