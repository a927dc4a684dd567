#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "trpc/base/chain_buffer.h"

namespace trpc::grpc::detail {

// The gRPC codec hands messages between its stateless half (Encode*/Decode*, any thread) and its
// per-connection HTTP/2 session (loop thread) as records in a ChainBuffer: a small header of
// fixed-size integers and length-prefixed strings, then the message bytes. They never leave the
// process, so they use the host's byte order.

class RecordWriter {
 public:
  void U8(uint8_t v) { s_.push_back(static_cast<char>(v)); }
  void U32(uint32_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void I32(int32_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void U64(uint64_t v) { s_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void Str(std::string_view v) {
    U32(static_cast<uint32_t>(v.size()));
    s_.append(v);
  }
  // Appends the header written so far to `out`; the message bytes follow it.
  void AppendTo(ChainBuffer* out) { out->Append(s_); }

 private:
  std::string s_;
};

// Reads a record's header from the front of a ChainBuffer; every read checks the bounds (a
// record is ours, but a bug must not read past it).
class RecordReader {
 public:
  explicit RecordReader(const ChainBuffer& buf) : buf_(buf) {}
  bool U8(uint8_t* v) { return Raw(v, 1); }
  bool U32(uint32_t* v) { return Raw(v, sizeof(*v)); }
  bool I32(int32_t* v) { return Raw(v, sizeof(*v)); }
  bool U64(uint64_t* v) { return Raw(v, sizeof(*v)); }
  bool Str(std::string* v) {
    uint32_t n = 0;
    if (!U32(&n) || n > buf_.size() - pos_) return false;
    v->resize(n);
    buf_.CopyTo(v->data(), n, pos_);
    pos_ += n;
    return true;
  }
  // Bytes of the header read so far: the message follows at this offset.
  size_t pos() const { return pos_; }

 private:
  bool Raw(void* v, size_t n) {
    if (n > buf_.size() - pos_) return false;
    buf_.CopyTo(v, n, pos_);
    pos_ += n;
    return true;
  }
  const ChainBuffer& buf_;
  size_t pos_ = 0;
};

}  // namespace trpc::grpc::detail
