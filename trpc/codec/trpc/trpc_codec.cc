#include "trpc/codec/trpc/trpc_codec.h"

#include <memory>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/codec/trpc/detail/frame.h"
#include "trpc/codec/trpc/detail/request_id_scanner.h"
#include "trpc/codec/trpc/trpc.pb.h"

namespace trpc {

namespace {

// Copies trans_info into a header message's map<string, bytes>.
void CopyTransInfo(const TransInfo& from, google::protobuf::Map<std::string, std::string>* to) {
  for (const auto& [key, value] : from) (*to)[key] = value;
}

// Moves a parsed header's trans_info out into `*to`, replacing what was there.
void MoveTransInfo(google::protobuf::Map<std::string, std::string>* from, TransInfo* to) {
  to->clear();
  for (auto& [key, value] : *from) to->emplace(key, std::move(value));
}

// Fills RequestProtocol with every field of `req`; proto3 leaves the default ones off the wire.
void FillRequestHeader(const RpcRequest& req, RequestProtocol* h) {
  h->set_version(req.version);
  h->set_call_type(req.call_type);
  h->set_request_id(req.request_id);
  h->set_timeout(req.timeout_ms);
  // An empty string stays unset: setting it would still allocate inside the message.
  if (!req.caller.empty()) h->set_caller(req.caller);
  if (!req.callee.empty()) h->set_callee(req.callee);
  if (!req.func.empty()) h->set_func(req.func);
  h->set_message_type(req.message_type);
  CopyTransInfo(req.trans_info, h->mutable_trans_info());
  h->set_content_type(req.content_type);
  h->set_content_encoding(req.content_encoding);
}

void FillResponseHeader(const RpcResponse& rsp, ResponseProtocol* h) {
  h->set_version(rsp.version);
  h->set_call_type(rsp.call_type);
  h->set_request_id(rsp.request_id);
  h->set_ret(rsp.ret);
  h->set_func_ret(rsp.func_ret);
  if (!rsp.error_msg.empty()) h->set_error_msg(rsp.error_msg);
  h->set_message_type(rsp.message_type);
  CopyTransInfo(rsp.trans_info, h->mutable_trans_info());
  h->set_content_type(rsp.content_type);
  h->set_content_encoding(rsp.content_encoding);
}

}  // namespace

// ---- Server -------------------------------------------------------------------------------------

SplitResult TrpcServerCodec::Split(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                   size_t max_frame_size, std::string* err) {
  return detail::SplitTrpcFrames(in, out, max_frame_size, err);
}

bool TrpcServerCodec::DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) {
  RequestProtocol h;
  if (!detail::ReadTrpcFrameHeader(&frame, &h, err) ||
      !detail::SplitTrpcPayload(std::move(frame), h.attachment_size(), &req->body, &req->attachment,
                                err)) {
    return false;
  }
  req->version = h.version();
  req->call_type = h.call_type();
  req->request_id = h.request_id();
  req->timeout_ms = h.timeout();
  req->message_type = h.message_type();
  req->content_type = h.content_type();
  req->content_encoding = h.content_encoding();
  req->caller = std::move(*h.mutable_caller());
  req->callee = std::move(*h.mutable_callee());
  req->func = std::move(*h.mutable_func());
  MoveTransInfo(h.mutable_trans_info(), &req->trans_info);
  return true;
}

bool TrpcServerCodec::EncodeResponse(RpcResponse* rsp,
                                     const google::protobuf::MessageLite* body_msg,
                                     ChainBuffer* out) {
  // A client ignores the payload of a failed call, so none is sent.
  const bool failed = rsp->ret != 0;
  ResponseProtocol h;
  FillResponseHeader(*rsp, &h);
  if (!failed) h.set_attachment_size(static_cast<uint32_t>(rsp->attachment.size()));
  std::string err;
  if (!detail::WriteTrpcFrame(h, failed ? nullptr : body_msg, failed ? nullptr : &rsp->body,
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
  return detail::SplitTrpcFrames(in, out, max_frame_size, err);
}

bool TrpcClientCodec::EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                                    ChainBuffer* out) {
  RequestProtocol h;
  FillRequestHeader(*req, &h);
  h.set_attachment_size(static_cast<uint32_t>(req->attachment.size()));
  std::string err;
  if (!detail::WriteTrpcFrame(h, body_msg, &req->body, &req->attachment, out, &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "trpc: cannot encode request {} to {}: {}",
                      req->request_id, req->func, err);
    return false;
  }
  return true;
}

bool TrpcClientCodec::DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) {
  ResponseProtocol h;
  if (!detail::ReadTrpcFrameHeader(&frame, &h, err) ||
      !detail::SplitTrpcPayload(std::move(frame), h.attachment_size(), &rsp->body, &rsp->attachment,
                                err)) {
    return false;
  }
  rsp->version = h.version();
  rsp->call_type = h.call_type();
  rsp->request_id = h.request_id();
  rsp->ret = h.ret();
  rsp->func_ret = h.func_ret();
  rsp->message_type = h.message_type();
  rsp->content_type = h.content_type();
  rsp->content_encoding = h.content_encoding();
  // mutable_error_msg() would allocate an empty string for the usual reply without one.
  if (!h.error_msg().empty()) rsp->error_msg = std::move(*h.mutable_error_msg());
  MoveTransInfo(h.mutable_trans_info(), &rsp->trans_info);
  return true;
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
