#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/base/chain_buffer.h"

namespace trpc::grpc::detail {

// The gRPC codec hands messages between its stateless half (Encode*/Decode*, any thread) and its
// per-connection HTTP/2 session (loop thread) as records in a ChainBuffer: a small header of
// fixed-size integers and length-prefixed strings, then the message bytes. They never leave the
// process, so they use the host's byte order.

using Pairs = std::vector<std::pair<std::string, std::string>>;

// Appends a record's header straight to a ChainBuffer (small appends fill the thread's current
// block: no allocation of its own); the message bytes follow it.
class RecordWriter {
 public:
  explicit RecordWriter(ChainBuffer* out) : out_(out) {}
  void U8(uint8_t v) { out_->Append(&v, sizeof(v)); }
  void U32(uint32_t v) { out_->Append(&v, sizeof(v)); }
  void I32(int32_t v) { out_->Append(&v, sizeof(v)); }
  void U64(uint64_t v) { out_->Append(&v, sizeof(v)); }
  void Str(std::string_view v) {
    U32(static_cast<uint32_t>(v.size()));
    out_->Append(v);
  }
  void StrPairs(const Pairs& kvs) {
    U32(static_cast<uint32_t>(kvs.size()));
    for (const auto& [k, v] : kvs) {
      Str(k);
      Str(v);
    }
  }

 private:
  ChainBuffer* out_;
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
  bool StrPairs(Pairs* out) {
    uint32_t n = 0;
    if (!U32(&n)) return false;
    for (uint32_t i = 0; i < n; ++i) {
      std::pair<std::string, std::string> kv;
      if (!Str(&kv.first) || !Str(&kv.second)) return false;
      out->push_back(std::move(kv));
    }
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
