#include "trpc/base/zero_copy_stream.h"

#include <algorithm>

namespace trpc {

bool ChainBufferInputStream::Next(const void** data, int* size) {
  while (remaining_ > 0 && span_ < buf_->SpanCount()) {
    std::string_view s = buf_->Span(span_);
    if (span_offset_ >= s.size()) {
      ++span_;
      span_offset_ = 0;
      continue;
    }
    size_t n = std::min({s.size() - span_offset_, remaining_, size_t{INT32_MAX}});
    *data = s.data() + span_offset_;
    *size = static_cast<int>(n);
    span_offset_ += n;
    remaining_ -= n;
    last_size_ = n;
    byte_count_ += static_cast<int64_t>(n);
    return true;
  }
  last_size_ = 0;
  return false;
}

void ChainBufferInputStream::BackUp(int count) {
  size_t n = std::min(static_cast<size_t>(count), last_size_);
  span_offset_ -= n;
  remaining_ += n;
  byte_count_ -= static_cast<int64_t>(n);
  last_size_ = 0;
}

bool ChainBufferInputStream::Skip(int count) {
  const void* data;
  int size;
  while (count > 0) {
    if (!Next(&data, &size)) return false;
    if (size > count) {
      BackUp(size - count);
      return true;
    }
    count -= size;
  }
  return true;
}

bool ChainBufferOutputStream::Next(void** data, int* size) {
  iovec iov;
  buf_->PrepareWrite(&iov, 1, 1);
  buf_->CommitWrite(iov.iov_len);
  *data = iov.iov_base;
  *size = static_cast<int>(iov.iov_len);
  byte_count_ += static_cast<int64_t>(iov.iov_len);
  return true;
}

void ChainBufferOutputStream::BackUp(int count) {
  buf_->UncommitTail(static_cast<size_t>(count));
  byte_count_ -= count;
}

}  // namespace trpc
