#include "trpc/codec/trpc/detail/trpc_codec.h"

#include <memory>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/codec/trpc/detail/frame.h"
#include "trpc/codec/trpc/detail/request_id_scanner.h"
#include "trpc/codec/trpc/detail/trpc_stream_session.h"

namespace trpc {

// ---- Server -------------------------------------------------------------------------------------

SplitResult TrpcServerCodec::Split(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                   size_t max_frame_size, std::string* err) {
  return detail::SplitTrpcFrames(in, out, max_frame_size, err, /*streams=*/true);
}

std::unique_ptr<ServerStreamSession> TrpcServerCodec::NewStreamSession(uint32_t max_streams,
                                                                       uint32_t window) {
  return std::make_unique<detail::TrpcServerStreamSession>(max_streams, window);
}

bool TrpcServerCodec::DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) {
  return detail::ReadTrpcFrame(std::move(frame), req, err);
}

bool TrpcServerCodec::EncodeResponse(RpcResponse* rsp,
                                     const google::protobuf::MessageLite* body_msg,
                                     ChainBuffer* out) {
  // A client ignores the payload of a failed call, so none is sent.
  const bool failed = rsp->ret != 0;
  std::string err;
  if (!detail::WriteTrpcFrame(*rsp, failed ? nullptr : body_msg, failed ? nullptr : &rsp->body,
                              failed ? nullptr : &rsp->attachment, out, &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "trpc: cannot encode the response to request {}: {}",
                      rsp->request_id, err);
    return false;
  }
  return true;
}

// ---- Client -------------------------------------------------------------------------------------

SplitResult TrpcClientCodec::Split(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                   size_t max_frame_size, std::string* err) {
  return detail::SplitTrpcFrames(in, out, max_frame_size, err, /*streams=*/true);
}

bool TrpcClientCodec::EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                                    ChainBuffer* out) {
  std::string err;
  if (!detail::WriteTrpcFrame(*req, body_msg, &req->body, &req->attachment, out, &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "trpc: cannot encode request {} to {}: {}",
                      req->request_id, req->func, err);
    return false;
  }
  return true;
}

std::unique_ptr<ClientStreamSession> TrpcClientCodec::NewClientStreamSession(
    uint32_t max_streams, FrameCodecState* state) {
  (void)state;
  return std::make_unique<detail::TrpcClientStreamSession>(max_streams);
}

bool TrpcClientCodec::DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) {
  return detail::ReadTrpcFrame(std::move(frame), rsp, err);
}

bool TrpcClientCodec::PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) {
  if (frame.size() < kTrpcFrameHeaderSize) return false;
  char scratch[kTrpcFrameHeaderSize];
  TrpcFrameHeader h = LoadTrpcFrameHeader(frame.Peek(kTrpcFrameHeaderSize, scratch));
  std::string err;
  if (!detail::CheckTrpcFrameHeader(h, &err) || h.total_size != frame.size()) return false;
  return detail::ScanTrpcRequestId(frame, kTrpcFrameHeaderSize, h.header_size, request_id);
}

// ---- Registration -------------------------------------------------------------------------------

namespace {

// Runs during static initialization; the library must be linked whole for this to be kept.
const bool kRegistered = [] {
  CodecRegistry& registry = CodecRegistry::Instance();
  registry.RegisterServer(std::string(kTrpcCodecName), std::make_shared<TrpcServerCodec>());
  registry.RegisterClient(std::string(kTrpcCodecName), std::make_shared<TrpcClientCodec>());
  return true;
}();

}  // namespace

}  // namespace trpc
