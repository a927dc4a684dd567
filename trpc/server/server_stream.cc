#include "trpc/server/server_stream.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "trpc/codec/detail/compression.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/server/detail/server_stream_core.h"
#include "trpc/server/stream_method_handler.h"

namespace trpc::stream {

Status ServerStream::Read(google::protobuf::MessageLite* msg, int64_t timeout_ms) const {
  ChainBuffer bytes;
  Status st = core_->Read(&bytes, timeout_ms);
  if (!st.OK()) return st;
  std::string err;
  if (core_->encoding() != 0) {
    // In the handler's fiber, as a unary body is: inflating is bounded by max_packet_size.
    ChainBuffer plain;
    if (!detail::DecompressBody(core_->encoding(), bytes, core_->max_message_bytes(), &plain,
                                &err)) {
      return Status(kServerDecodeErr, fmt::format("cannot decompress the {} stream message: {}",
                                                  detail::EncodingName(core_->encoding()), err));
    }
    bytes = std::move(plain);
  }
  if (!ParseMessageBody(bytes, core_->content_type(), msg, &err)) {
    return Status(kServerDecodeErr, std::move(err));
  }
  return kSuccStatus;
}

Status ServerStream::Write(const google::protobuf::MessageLite& msg) const {
  ChainBuffer bytes;
  std::string err;
  if (!SerializeMessageBody(msg, core_->content_type(), &bytes, &err, kTrpcJsonStyle)) {
    return Status(kServerEncodeErr, std::move(err));
  }
  if (core_->encoding() != 0) {
    ChainBuffer packed;
    if (!detail::CompressBody(core_->encoding(), bytes, &packed, &err)) {
      return Status(kServerEncodeErr, std::move(err));
    }
    bytes = std::move(packed);
  }
  return core_->Write(std::move(bytes));
}

}  // namespace trpc::stream

namespace trpc {

void StreamRpcMethodHandler::Handle(const ServerContextPtr& ctx) {
  SendReply(ctx,
            Status(kServerNoFuncErr, ctx->GetFuncName() + " is a streaming method: open a stream"),
            nullptr);
}

}  // namespace trpc
