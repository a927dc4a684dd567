#pragma once

#include <google/protobuf/io/zero_copy_stream.h>

#include <algorithm>
#include <cstdint>

#include "trpc/base/chain_buffer.h"

namespace trpc {

/// Reads a ChainBuffer span by span, so protobuf parses straight from the blocks.
/// The buffer must outlive the stream and stay unchanged while it is read. One thread.
class ChainBufferInputStream final : public google::protobuf::io::ZeroCopyInputStream {
 public:
  explicit ChainBufferInputStream(const ChainBuffer* buf, size_t limit = SIZE_MAX)
      : buf_(buf), remaining_(std::min(limit, buf->size())) {}

  bool Next(const void** data, int* size) override;
  void BackUp(int count) override;
  bool Skip(int count) override;
  int64_t ByteCount() const override { return byte_count_; }

 private:
  const ChainBuffer* buf_;
  size_t remaining_;         // bytes not yet handed out (within the limit)
  size_t span_ = 0;          // next span index
  size_t span_offset_ = 0;   // offset into span_ for the next Next()
  size_t last_size_ = 0;     // size of the last Next() chunk, for BackUp
  int64_t byte_count_ = 0;
};

/// Appends to a ChainBuffer through the calling thread's write blocks; protobuf serializes
/// straight into them. The buffer must outlive the stream; no other appends on this thread
/// may happen between Next() and the matching BackUp() (one thread, one stream at a time).
class ChainBufferOutputStream final : public google::protobuf::io::ZeroCopyOutputStream {
 public:
  explicit ChainBufferOutputStream(ChainBuffer* buf) : buf_(buf) {}

  bool Next(void** data, int* size) override;
  void BackUp(int count) override;
  int64_t ByteCount() const override { return byte_count_; }

 private:
  ChainBuffer* buf_;
  int64_t byte_count_ = 0;
};

}  // namespace trpc
