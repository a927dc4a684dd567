#include "trpc/codec/trpc/detail/frame.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message_lite.h>
#include <sys/uio.h>

#include <climits>
#include <utility>

#include "trpc/base/zero_copy_stream.h"

namespace trpc::detail {

bool CheckTrpcFrameHeader(const TrpcFrameHeader& h, std::string* err) {
  if (h.magic != kTrpcMagic) {
    *err = fmt::format("bad magic 0x{:04x} (want 0x{:04x})", h.magic, kTrpcMagic);
    return false;
  }
  if (h.data_frame_type != kTrpcUnaryDataFrame || h.stream_frame_type != kTrpcUnaryStreamFrame) {
    *err = fmt::format("streaming frames not supported (data frame type {}, stream frame type {})",
                       h.data_frame_type, h.stream_frame_type);
    return false;
  }
  if (h.total_size < kTrpcFrameHeaderSize + h.header_size) {
    *err = fmt::format("frame size {} is smaller than the fixed header plus the {}-byte header",
                       h.total_size, h.header_size);
    return false;
  }
  return true;
}

SplitResult SplitTrpcFrames(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                            std::string* err) {
  while (in->size() >= kTrpcFrameHeaderSize) {
    char scratch[kTrpcFrameHeaderSize];
    TrpcFrameHeader h = LoadTrpcFrameHeader(in->Peek(kTrpcFrameHeaderSize, scratch));
    if (!CheckTrpcFrameHeader(h, err)) return SplitResult::kError;
    // Decided before the payload is buffered, so a peer cannot make us hold a huge frame.
    if (h.total_size > max_frame_size) {
      *err =
          fmt::format("frame size {} exceeds the limit of {} bytes", h.total_size, max_frame_size);
      return SplitResult::kError;
    }
    if (in->size() < h.total_size) break;
    out->push_back(in->Cut(h.total_size));
  }
  return SplitResult::kOk;
}

bool ReadTrpcFrameHeader(ChainBuffer* frame, google::protobuf::MessageLite* header,
                         std::string* err) {
  // The frame usually comes from SplitTrpcFrames, but it is peer bytes: check it again.
  if (frame->size() < kTrpcFrameHeaderSize) {
    *err = fmt::format("frame of {} bytes is shorter than the fixed header", frame->size());
    return false;
  }
  char scratch[kTrpcFrameHeaderSize];
  TrpcFrameHeader h = LoadTrpcFrameHeader(frame->Peek(kTrpcFrameHeaderSize, scratch));
  if (!CheckTrpcFrameHeader(h, err)) return false;
  if (h.total_size != frame->size()) {
    *err = fmt::format("frame size field {} does not match the {} bytes of the frame", h.total_size,
                       frame->size());
    return false;
  }
  const size_t end = kTrpcFrameHeaderSize + h.header_size;
  bool parsed;
  std::string_view first = frame->FirstSpan();
  if (first.size() >= end) {
    parsed = header->ParseFromArray(first.data() + kTrpcFrameHeaderSize, h.header_size);
  } else {
    ChainBufferInputStream stream(frame, end);
    parsed = stream.Skip(kTrpcFrameHeaderSize) && header->ParseFromZeroCopyStream(&stream);
  }
  if (!parsed) {
    *err = fmt::format("cannot parse the {}-byte protobuf header", h.header_size);
    return false;
  }
  frame->Skip(end);
  return true;
}

bool SplitTrpcPayload(ChainBuffer&& payload, uint32_t attachment_size, ChainBuffer* body,
                      ChainBuffer* attachment, std::string* err) {
  if (attachment_size > payload.size()) {
    *err = fmt::format("attachment size {} exceeds the {} bytes after the header", attachment_size,
                       payload.size());
    return false;
  }
  *body = payload.Cut(payload.size() - attachment_size);
  *attachment = std::move(payload);
  return true;
}

bool WriteTrpcFrame(const google::protobuf::MessageLite& header,
                    const google::protobuf::MessageLite* body_msg, ChainBuffer* body,
                    ChainBuffer* attachment, ChainBuffer* out, std::string* err) {
  // ByteSizeLong() also caches the sizes that SerializeWithCachedSizes*() below rely on.
  const size_t header_size = header.ByteSizeLong();
  if (header_size > kTrpcMaxHeaderSize) {
    *err = fmt::format("protobuf header of {} bytes exceeds the {}-byte limit", header_size,
                       kTrpcMaxHeaderSize);
    return false;
  }
  size_t body_size = 0;
  if (body_msg != nullptr) {
    body_size = body_msg->ByteSizeLong();
    if (body_size > INT_MAX) {
      *err = fmt::format("body message of {} bytes exceeds protobuf's 2 GiB limit", body_size);
      return false;
    }
  } else if (body != nullptr) {
    body_size = body->size();
  }
  const size_t attachment_size = attachment != nullptr ? attachment->size() : 0;
  const uint64_t total = uint64_t{kTrpcFrameHeaderSize} + header_size + body_size + attachment_size;
  if (total > kTrpcMaxFrameSize) {
    *err = fmt::format("frame of {} bytes exceeds the 4 GiB limit of the size field", total);
    return false;
  }

  TrpcFrameHeader fixed;
  fixed.total_size = static_cast<uint32_t>(total);
  fixed.header_size = static_cast<uint16_t>(header_size);
  const size_t serialized = kTrpcFrameHeaderSize + header_size + (body_msg ? body_size : 0);

  ChainBuffer frame;
  iovec iov;
  frame.PrepareWrite(&iov, 1, 1);
  if (iov.iov_len >= serialized) {
    // Fast path (small frames): everything fits in the free space of the current write block.
    auto* p = static_cast<uint8_t*>(iov.iov_base);
    StoreTrpcFrameHeader(fixed, reinterpret_cast<char*>(p));
    p = header.SerializeWithCachedSizesToArray(p + kTrpcFrameHeaderSize);
    if (body_msg != nullptr) p = body_msg->SerializeWithCachedSizesToArray(p);
    frame.CommitWrite(p - static_cast<uint8_t*>(iov.iov_base));
  } else {
    char buf[kTrpcFrameHeaderSize];
    StoreTrpcFrameHeader(fixed, buf);
    frame.Append(buf, sizeof(buf));
    ChainBufferOutputStream stream(&frame);
    // Its destructor hands the unused tail of the last block back (BackUp).
    google::protobuf::io::CodedOutputStream coded(&stream);
    header.SerializeWithCachedSizes(&coded);
    if (body_msg != nullptr) body_msg->SerializeWithCachedSizes(&coded);
  }
  if (frame.size() != serialized) {
    // Only possible if a message changed between ByteSizeLong() and serialization.
    *err = fmt::format("serialized {} bytes where {} were computed", frame.size(), serialized);
    return false;
  }
  if (body_msg == nullptr && body != nullptr) frame.Append(std::move(*body));
  if (attachment != nullptr) frame.Append(std::move(*attachment));
  out->Append(std::move(frame));
  return true;
}

}  // namespace trpc::detail
