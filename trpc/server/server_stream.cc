#include "trpc/server/server_stream.h"

#include <string>
#include <utility>

#include "trpc/codec/detail/message_body.h"
#include "trpc/codec/detail/stream_session.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::stream {

Status ServerStream::Parse(const ChainBuffer& bytes, google::protobuf::MessageLite* msg) const {
  // In the handler's context, as a unary body is: inflating is bounded by max_packet_size.
  std::string err;
  if (!ParseEncodedBody(bytes, core_->content_type(), core_->encoding(), core_->max_message_bytes(),
                        msg, &err)) {
    return Status(kServerDecodeErr, std::move(err));
  }
  return kSuccStatus;
}

Status ServerStream::Encode(const google::protobuf::MessageLite& msg, ChainBuffer* out) const {
  std::string err;
  if (!SerializeEncodedBody(msg, core_->content_type(), core_->encoding(), out, &err)) {
    return Status(kServerEncodeErr, std::move(err));
  }
  return kSuccStatus;
}

bool ServerStream::LastReadCompressed() const { return core_->LastReadCompressed(); }

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

Status ServerStream::Write(const google::protobuf::MessageLite& msg,
                           const WriteOptions& opts) const {
  ChainBuffer bytes;
  if (Status st = Encode(msg, &bytes); !st.OK()) return st;
  AttachWriteOptions(opts, &bytes);  // (to the protocol's stream session)
  return core_->Write(std::move(bytes));
}

Future<> ServerStream::AsyncWrite(const google::protobuf::MessageLite& msg,
                                  const WriteOptions& opts) const {
  ChainBuffer bytes;
  if (Status st = Encode(msg, &bytes); !st.OK()) return MakeExceptionFuture<>(std::move(st));
  AttachWriteOptions(opts, &bytes);  // (to the protocol's stream session)
  return core_->AsyncWrite(std::move(bytes));
}

Future<ChainBuffer> ServerStream::AsyncReadBytes(int64_t timeout_ms) const {
  return core_->AsyncRead(timeout_ms);
}

Future<> ServerStream::AsyncWrite(const google::protobuf::MessageLite& msg) const {
  ChainBuffer bytes;
  if (Status st = Encode(msg, &bytes); !st.OK()) return MakeExceptionFuture<>(std::move(st));
  return core_->AsyncWrite(std::move(bytes));
}

}  // namespace trpc::stream
