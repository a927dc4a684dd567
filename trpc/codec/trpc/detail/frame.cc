#include "trpc/codec/trpc/detail/frame.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/message_lite.h>
#include <sys/uio.h>

#include <climits>
#include <string_view>
#include <utility>

#include "trpc/base/zero_copy_stream.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/codec/detail/compression.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/codec/trpc/detail/header_wire.h"
#include "trpc/codec/trpc/detail/stream_frame.h"

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
                            std::string* err, bool streams) {
  while (in->size() >= kTrpcFrameHeaderSize) {
    char scratch[kTrpcFrameHeaderSize];
    TrpcFrameHeader h = LoadTrpcFrameHeader(in->Peek(kTrpcFrameHeaderSize, scratch));
    if (streams && h.data_frame_type == kTrpcStreamDataFrame) [[unlikely]] {
      if (!CheckTrpcStreamFrameHeader(h, err)) return SplitResult::kError;
    } else if (!CheckTrpcFrameHeader(h, err)) {
      return SplitResult::kError;
    }
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

namespace {

// A header that straddles blocks is copied into contiguous memory: this much on the stack, a
// larger one (up to 16 + kTrpcMaxHeaderSize bytes) into a per-thread buffer, which keeps the
// size of the largest seen.
constexpr size_t kStackScratchSize = 512;

char* Scratch(size_t n, char (&stack)[kStackScratchSize]) {
  if (n <= kStackScratchSize) return stack;
  thread_local std::string big;
  if (big.size() < n) big.resize(n);
  return big.data();
}

bool SplitTrpcPayload(ChainBuffer&& payload, uint32_t attachment_size, ChainBuffer* body,
                      ChainBuffer* attachment, std::string* err) {
  if (attachment_size > payload.size()) {
    *err = fmt::format("attachment size {} exceeds the {} bytes after the header", attachment_size,
                       payload.size());
    return false;
  }
  if (attachment_size == 0) {  // the usual case, without Cut's bookkeeping
    *body = std::move(payload);
    attachment->Clear();
    return true;
  }
  *body = payload.Cut(payload.size() - attachment_size);
  *attachment = std::move(payload);
  return true;
}

template <typename Rpc>
bool ReadFrame(ChainBuffer&& frame, Rpc* rpc, std::string* err) {
  // The frame usually comes from SplitTrpcFrames, but it is peer bytes: check it again.
  if (frame.size() < kTrpcFrameHeaderSize) {
    *err = fmt::format("frame of {} bytes is shorter than the fixed header", frame.size());
    return false;
  }
  char fixed[kTrpcFrameHeaderSize];
  TrpcFrameHeader h = LoadTrpcFrameHeader(frame.Peek(kTrpcFrameHeaderSize, fixed));
  if (!CheckTrpcFrameHeader(h, err)) return false;
  if (h.total_size != frame.size()) {
    *err = fmt::format("frame size field {} does not match the {} bytes of the frame", h.total_size,
                       frame.size());
    return false;
  }
  const size_t end = kTrpcFrameHeaderSize + h.header_size;
  const char* header;
  char stack[kStackScratchSize];
  std::string_view first = frame.FirstSpan();
  if (first.size() >= end) {
    header = first.data() + kTrpcFrameHeaderSize;
  } else {
    char* copy = Scratch(h.header_size, stack);
    frame.CopyTo(copy, h.header_size, kTrpcFrameHeaderSize);
    header = copy;
  }
  uint32_t attachment_size;
  std::string why;
  if (!DecodeHeader(std::string_view(header, h.header_size), rpc, &attachment_size, &why)) {
    *err = fmt::format("cannot parse the {}-byte protobuf header: {}", h.header_size, why);
    return false;
  }
  rpc->frame_stream_id = h.stream_id;
  rpc->frame_version = h.version;
  frame.Skip(end);
  return SplitTrpcPayload(std::move(frame), attachment_size, &rpc->body, &rpc->attachment, err);
}

// A body that is not plain protobuf (JSON, or compressed) is made in a buffer of its own first.
// False (with `*err`) when the message does not serialize as `content_type` or the compressor
// fails; `*made` then holds nothing useful.
template <typename Rpc>
bool MakeBody(const Rpc& rpc, const google::protobuf::MessageLite* body_msg, ChainBuffer* body,
              ChainBuffer* made, std::string* err) {
  ChainBuffer plain;
  if (body_msg != nullptr) {
    if (!SerializeMessageBody(*body_msg, rpc.content_type, &plain, err, kTrpcJsonStyle))
      return false;
  } else if (body != nullptr) {
    plain = std::move(*body);
  }
  if (rpc.content_encoding == 0) {
    *made = std::move(plain);
    return true;
  }
  std::string why;
  if (!CompressBody(rpc.content_encoding, plain, made, &why)) {
    *err = fmt::format("cannot compress the body as {} ({}): {}", rpc.content_encoding,
                       EncodingName(rpc.content_encoding), why);
    return false;
  }
  return true;
}

// Writes the frame with the body as given: `*body_msg` serialized as protobuf, or `*body`.
template <typename Rpc>
bool WriteFrameAsIs(const Rpc& rpc, const google::protobuf::MessageLite* body_msg,
                    ChainBuffer* body, ChainBuffer* attachment, ChainBuffer* out,
                    std::string* err) {
  const size_t attachment_size = attachment != nullptr ? attachment->size() : 0;
  // An attachment too large for the field fails the total size check below.
  const size_t header_size = EncodedHeaderSize(rpc, static_cast<uint32_t>(attachment_size));
  if (header_size > kTrpcMaxHeaderSize) {
    *err = fmt::format("protobuf header of {} bytes exceeds the {}-byte limit", header_size,
                       kTrpcMaxHeaderSize);
    return false;
  }
  size_t body_size = 0;
  if (body_msg != nullptr) {
    // Also caches the sizes that SerializeWithCachedSizes*() below rely on.
    body_size = body_msg->ByteSizeLong();
    if (body_size > INT_MAX) {
      *err = fmt::format("body message of {} bytes exceeds protobuf's 2 GiB limit", body_size);
      return false;
    }
  } else if (body != nullptr) {
    body_size = body->size();
  }
  const uint64_t total = uint64_t{kTrpcFrameHeaderSize} + header_size + body_size + attachment_size;
  if (total > kTrpcMaxFrameSize) {
    *err = fmt::format("frame of {} bytes exceeds the 4 GiB limit of the size field", total);
    return false;
  }

  TrpcFrameHeader fixed;
  fixed.stream_id = rpc.frame_stream_id;
  fixed.version = rpc.frame_version;
  fixed.total_size = static_cast<uint32_t>(total);
  fixed.header_size = static_cast<uint16_t>(header_size);
  const size_t headers = kTrpcFrameHeaderSize + header_size;
  const size_t serialized = headers + (body_msg ? body_size : 0);

  ChainBuffer frame;
  iovec iov;
  frame.PrepareWrite(&iov, 1, 1);
  if (iov.iov_len >= serialized) {
    // Fast path (small frames): everything fits in the free space of the current write block.
    char* p = static_cast<char*>(iov.iov_base);
    StoreTrpcFrameHeader(fixed, p);
    p = EncodeHeader(rpc, static_cast<uint32_t>(attachment_size), p + kTrpcFrameHeaderSize);
    if (body_msg != nullptr) {
      p = reinterpret_cast<char*>(
          body_msg->SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(p)));
    }
    frame.CommitWrite(p - static_cast<char*>(iov.iov_base));
  } else {
    char stack[kStackScratchSize];
    char* buf = Scratch(headers, stack);
    StoreTrpcFrameHeader(fixed, buf);
    EncodeHeader(rpc, static_cast<uint32_t>(attachment_size), buf + kTrpcFrameHeaderSize);
    frame.Append(buf, headers);
    if (body_msg != nullptr) {
      ChainBufferOutputStream stream(&frame);
      // Its destructor hands the unused tail of the last block back (BackUp).
      google::protobuf::io::CodedOutputStream coded(&stream);
      body_msg->SerializeWithCachedSizes(&coded);
    }
  }
  if (frame.size() != serialized) {
    // Only possible if the body message changed between ByteSizeLong() and serialization.
    *err = fmt::format("serialized {} bytes where {} were computed", frame.size(), serialized);
    return false;
  }
  if (body_msg == nullptr && body != nullptr) frame.Append(std::move(*body));
  if (attachment != nullptr) frame.Append(std::move(*attachment));
  out->Append(std::move(frame));
  return true;
}

// Out of line, so that the common frame (a protobuf body, uncompressed) pays nothing for it.
template <typename Rpc>
[[gnu::noinline]] bool WriteFrameWithMadeBody(const Rpc& rpc,
                                              const google::protobuf::MessageLite* body_msg,
                                              ChainBuffer* body, ChainBuffer* attachment,
                                              ChainBuffer* out, std::string* err) {
  ChainBuffer made;
  if (!MakeBody(rpc, body_msg, body, &made, err)) return false;
  return WriteFrameAsIs(rpc, nullptr, &made, attachment, out, err);
}

template <typename Rpc>
bool WriteFrame(const Rpc& rpc, const google::protobuf::MessageLite* body_msg, ChainBuffer* body,
                ChainBuffer* attachment, ChainBuffer* out, std::string* err) {
  // (One test for the common case: protobuf, uncompressed.)
  if ((rpc.content_type | rpc.content_encoding) != 0) [[unlikely]] {
    if (rpc.content_encoding != 0 || body_msg != nullptr) {
      return WriteFrameWithMadeBody(rpc, body_msg, body, attachment, out, err);
    }
  }
  return WriteFrameAsIs(rpc, body_msg, body, attachment, out, err);
}

}  // namespace

bool ReadTrpcFrame(ChainBuffer&& frame, RpcRequest* req, std::string* err) {
  return ReadFrame(std::move(frame), req, err);
}

bool ReadTrpcFrame(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) {
  return ReadFrame(std::move(frame), rsp, err);
}

bool WriteTrpcFrame(const RpcRequest& req, const google::protobuf::MessageLite* body_msg,
                    ChainBuffer* body, ChainBuffer* attachment, ChainBuffer* out,
                    std::string* err) {
  return WriteFrame(req, body_msg, body, attachment, out, err);
}

bool WriteTrpcFrame(const RpcResponse& rsp, const google::protobuf::MessageLite* body_msg,
                    ChainBuffer* body, ChainBuffer* attachment, ChainBuffer* out,
                    std::string* err) {
  return WriteFrame(rsp, body_msg, body, attachment, out, err);
}

}  // namespace trpc::detail
