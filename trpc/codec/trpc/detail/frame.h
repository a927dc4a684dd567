#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/trpc/detail/frame_header.h"
#include "trpc/transport/frame_codec.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {
struct RpcRequest;
struct RpcResponse;
}  // namespace trpc

namespace trpc::detail {

// Reading and writing unary trpc frames on ChainBuffers: the parts the server and client codecs
// share. Stateless functions, safe from any thread; every check on peer bytes ends in a false /
// kError with a message, never an assert.

/// Checks what a fixed header alone can tell: magic, frame types, and that the declared total
/// covers the fixed header plus the protobuf header.
bool CheckTrpcFrameHeader(const TrpcFrameHeader& h, std::string* err);

/// FrameCodec::Split for trpc: cuts every complete frame off the front of `in` into `out`. Stream
/// frames are cut when `streams` (their fixed header checked by CheckTrpcStreamFrameHeader),
/// and are an error otherwise.
SplitResult SplitTrpcFrames(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                            std::string* err, bool streams = false);

/// Checks the fixed header of one whole frame, decodes the protobuf header that follows it into
/// the header fields of `*req` (RequestProtocol) or `*rsp` (ResponseProtocol), see header_wire.h,
/// and cuts the rest of the frame into their body and attachment without copying.
bool ReadTrpcFrame(ChainBuffer&& frame, RpcRequest* req, std::string* err);
bool ReadTrpcFrame(ChainBuffer&& frame, RpcResponse* rsp, std::string* err);

/// Writes one unary frame: fixed header, the protobuf header made of `req`'s / `rsp`'s header
/// fields with attachment_size = the size of `*attachment`, the body, then `*attachment` (moved
/// in; null for none). The body is `*body_msg` serialized if it is non-null, else the bytes of
/// `*body` (moved in; may be null for no body). Writes straight into blocks; raw bytes are
/// linked, not copied. Appends to `out` only on success; false (with `*err`) when a size does
/// not fit its field.
bool WriteTrpcFrame(const RpcRequest& req, const google::protobuf::MessageLite* body_msg,
                    ChainBuffer* body, ChainBuffer* attachment, ChainBuffer* out, std::string* err);
bool WriteTrpcFrame(const RpcResponse& rsp, const google::protobuf::MessageLite* body_msg,
                    ChainBuffer* body, ChainBuffer* attachment, ChainBuffer* out, std::string* err);

}  // namespace trpc::detail
