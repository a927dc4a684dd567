#include "trpc/codec/trpc/detail/request_id_scanner.h"

#include <string_view>

#include "trpc/codec/trpc/detail/wire_type.h"

namespace trpc::detail {

namespace {

// Reads a byte range of a ChainBuffer span by span; never reads outside the range.
class ByteCursor {
 public:
  ByteCursor(const ChainBuffer& buf, size_t offset, size_t length) : buf_(buf), left_(length) {
    for (; span_ < buf_.SpanCount(); ++span_) {
      std::string_view s = buf_.Span(span_);
      if (offset < s.size()) {
        p_ = s.data() + offset;
        end_ = s.data() + s.size();
        return;
      }
      offset -= s.size();
    }
    left_ = 0;  // the range lies past the end: nothing to read
  }

  bool empty() const { return left_ == 0; }

  bool ReadByte(uint8_t* b) {
    if (left_ == 0 || (p_ == end_ && !NextSpan())) return false;
    *b = static_cast<uint8_t>(*p_++);
    --left_;
    return true;
  }

  bool Skip(uint64_t n) {
    if (n > left_) return false;
    left_ -= n;
    while (n > static_cast<uint64_t>(end_ - p_)) {
      n -= static_cast<uint64_t>(end_ - p_);
      if (!NextSpan()) return false;
    }
    p_ += n;
    return true;
  }

 private:
  bool NextSpan() {
    if (++span_ >= buf_.SpanCount()) return false;
    std::string_view s = buf_.Span(span_);
    p_ = s.data();
    end_ = s.data() + s.size();
    return true;
  }

  const ChainBuffer& buf_;
  size_t span_ = 0;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  size_t left_;
};

// A varint of at most `max_bytes` bytes. protobuf allows 10 for values, and 5 for tags and
// lengths; bits past 64 are dropped, as protobuf does.
bool ReadVarint(ByteCursor* c, int max_bytes, uint64_t* value) {
  uint64_t v = 0;
  for (int i = 0; i < max_bytes; ++i) {
    uint8_t b;
    if (!c->ReadByte(&b)) return false;
    v |= uint64_t{b & 0x7fu} << (7 * i);
    if (b < 0x80) {
      *value = v;
      return true;
    }
  }
  return false;
}

constexpr uint32_t kRequestIdField = 3;
// protobuf's default recursion limit; groups are the only nesting this scan follows.
constexpr int kMaxGroupDepth = 100;

}  // namespace

bool ScanTrpcRequestId(const ChainBuffer& buf, size_t offset, size_t length, uint32_t* request_id) {
  ByteCursor c(buf, offset, length);
  uint32_t id = 0;  // proto3: an absent field is 0
  uint32_t groups[kMaxGroupDepth];
  int depth = 0;
  while (!c.empty()) {
    uint64_t tag;
    if (!ReadVarint(&c, 5, &tag)) return false;
    tag &= 0xffffffffu;  // a 5-byte tag keeps its low 32 bits, as in protobuf's ReadTag
    const uint32_t field = static_cast<uint32_t>(tag >> 3);
    const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
    if (field == 0) return false;
    uint64_t v;
    switch (wire_type) {
      case kVarint:
        if (!ReadVarint(&c, 10, &v)) return false;
        // A field 3 with another wire type is an unknown field to protobuf: skipped, not used.
        if (field == kRequestIdField && depth == 0) id = static_cast<uint32_t>(v);
        break;
      case kFixed64:
        if (!c.Skip(8)) return false;
        break;
      case kLengthDelimited:
        if (!ReadVarint(&c, 5, &v) || v > INT32_MAX || !c.Skip(v)) return false;
        break;
      case kStartGroup:
        if (depth == kMaxGroupDepth) return false;
        groups[depth++] = field;
        break;
      case kEndGroup:
        if (depth == 0 || groups[depth - 1] != field) return false;
        --depth;
        break;
      case kFixed32:
        if (!c.Skip(4)) return false;
        break;
      default:  // 6 and 7 are not wire types
        return false;
    }
  }
  if (depth != 0) return false;
  *request_id = id;
  return true;
}

}  // namespace trpc::detail
