#include "trpc/server/server_stream.h"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "trpc/codec/detail/compression.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::stream {

Status ServerStream::Parse(const ChainBuffer& bytes, google::protobuf::MessageLite* msg) const {
  std::string err;
  if (core_->encoding() != 0) {
    // In the handler's context, as a unary body is: inflating is bounded by max_packet_size.
    ChainBuffer plain;
    if (!detail::DecompressBody(core_->encoding(), bytes, core_->max_message_bytes(), &plain,
                                &err)) {
      return Status(kServerDecodeErr, fmt::format("cannot decompress the {} stream message: {}",
                                                  detail::EncodingName(core_->encoding()), err));
    }
    if (!ParseMessageBody(plain, core_->content_type(), msg, &err)) {
      return Status(kServerDecodeErr, std::move(err));
    }
    return kSuccStatus;
  }
  if (!ParseMessageBody(bytes, core_->content_type(), msg, &err)) {
    return Status(kServerDecodeErr, std::move(err));
  }
  return kSuccStatus;
}

Status ServerStream::Encode(const google::protobuf::MessageLite& msg, ChainBuffer* out) const {
  std::string err;
  if (!SerializeMessageBody(msg, core_->content_type(), out, &err, kTrpcJsonStyle)) {
    return Status(kServerEncodeErr, std::move(err));
  }
  if (core_->encoding() != 0) {
    ChainBuffer packed;
    if (!detail::CompressBody(core_->encoding(), *out, &packed, &err)) {
      return Status(kServerEncodeErr, std::move(err));
    }
    *out = std::move(packed);
  }
  return kSuccStatus;
}

Status ServerStream::Read(google::protobuf::MessageLite* msg, int64_t timeout_ms) const {
  ChainBuffer bytes;
  Status st = core_->Read(&bytes, timeout_ms);
  if (!st.OK()) return st;
  return Parse(bytes, msg);
}

Status ServerStream::Write(const google::protobuf::MessageLite& msg) const {
  ChainBuffer bytes;
  if (Status st = Encode(msg, &bytes); !st.OK()) return st;
  return core_->Write(std::move(bytes));
}

Future<ChainBuffer> ServerStream::AsyncReadBytes() const { return core_->AsyncRead(); }

Future<> ServerStream::AsyncWrite(const google::protobuf::MessageLite& msg) const {
  ChainBuffer bytes;
  if (Status st = Encode(msg, &bytes); !st.OK()) return MakeExceptionFuture<>(std::move(st));
  return core_->AsyncWrite(std::move(bytes));
}

}  // namespace trpc::stream
