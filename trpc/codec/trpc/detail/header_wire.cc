#include "trpc/codec/trpc/detail/header_wire.h"

#include <fmt/format.h>

#include <bit>
#include <concepts>
#include <cstring>
#include <type_traits>

#include "trpc/codec/trpc/detail/wire_type.h"

namespace trpc::detail {

namespace {

constexpr uint32_t Tag(uint32_t field, WireType type) { return field << 3 | type; }

// A trans_info entry is the message {string key = 1; bytes value = 2;}.
constexpr uint32_t kEntryKey = 1;
constexpr uint32_t kEntryValue = 2;

// protobuf's default recursion limit (CodedInputStream::GetDefaultRecursionLimit()): every
// group, and every embedded message (a trans_info entry), takes one level.
constexpr int kMaxDepth = 100;

// ---- Encoding ---------------------------------------------------------------------------------

// ceil(bits / 7) as protobuf computes it, without a division: (9 * bits + 64) / 64.
size_t VarintSize(uint64_t v) { return (static_cast<size_t>(std::bit_width(v | 1)) * 9 + 64) / 64; }

// protobuf writes an int32 as the varint of its 64-bit sign extension: 10 bytes when negative.
uint64_t Int32Wire(int32_t v) { return static_cast<uint64_t>(int64_t{v}); }

// A map entry always carries both its key and its value, even empty ones.
size_t EntrySize(const std::string& key, const std::string& value) {
  return 1 + VarintSize(key.size()) + key.size() + 1 + VarintSize(value.size()) + value.size();
}

char* PutVarint(uint64_t v, char* p) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

char* PutBytes(uint32_t field, const std::string& s, char* p) {
  *p++ = static_cast<char>(Tag(field, kLengthDelimited));
  p = PutVarint(s.size(), p);
  std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// Encoded size and encoding of one field, by the type its value is stored in; proto3 leaves a
// field at its default value (0, empty) out. Every field number is below 16: one-byte tags.
size_t FieldSize(uint64_t v) { return v == 0 ? 0 : 1 + VarintSize(v); }
size_t FieldSize(uint32_t v) { return FieldSize(uint64_t{v}); }
size_t FieldSize(int32_t v) { return FieldSize(Int32Wire(v)); }
size_t FieldSize(const std::string& s) {
  return s.empty() ? 0 : 1 + VarintSize(s.size()) + s.size();
}
size_t FieldSize(const TransInfo& trans_info) {
  size_t n = 0;
  for (const auto& [key, value] : trans_info) {
    const size_t entry = EntrySize(key, value);
    n += 1 + VarintSize(entry) + entry;
  }
  return n;
}

char* PutField(uint32_t field, uint64_t v, char* p) {
  if (v == 0) return p;
  *p++ = static_cast<char>(Tag(field, kVarint));
  return PutVarint(v, p);
}
char* PutField(uint32_t field, uint32_t v, char* p) { return PutField(field, uint64_t{v}, p); }
char* PutField(uint32_t field, int32_t v, char* p) { return PutField(field, Int32Wire(v), p); }
char* PutField(uint32_t field, const std::string& s, char* p) {
  return s.empty() ? p : PutBytes(field, s, p);
}
char* PutField(uint32_t field, const TransInfo& trans_info, char* p) {
  for (const auto& [key, value] : trans_info) {
    *p++ = static_cast<char>(Tag(field, kLengthDelimited));
    p = PutVarint(EntrySize(key, value), p);
    p = PutBytes(kEntryKey, key, p);
    p = PutBytes(kEntryValue, value, p);
  }
  return p;
}

// ---- Decoding ---------------------------------------------------------------------------------

// Well-formed UTF-8 (Unicode table 3-7: no overlong forms, no surrogates, nothing past
// U+10FFFF), which is what protobuf's IsStructurallyValidUTF8() accepts for a proto3 string.
bool IsUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const uint8_t c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t more;  // continuation bytes after `c`
    uint8_t lo = 0x80;
    uint8_t hi = 0xbf;  // the range of the first continuation byte
    if (c >= 0xc2 && c <= 0xdf) {
      more = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      more = 2;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      more = 3;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) <= more || p[1] < lo || p[1] > hi) return false;
    for (size_t i = 2; i <= more; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
    }
    p += 1 + more;
  }
  return true;
}

// Reads one header's bytes. Every read is bounds-checked; the first failure writes its reason and
// byte offset to `*err`, and every caller then unwinds with false.
class WireReader {
 public:
  WireReader(std::string_view bytes, std::string* err)
      : begin_(bytes.data()), p_(begin_), end_(begin_ + bytes.size()), err_(err) {}

  bool done() const { return p_ == end_; }
  const char* pos() const { return p_; }

  // A tag is a varint of at most 5 bytes; protobuf keeps its low 32 bits.
  bool ReadTag(uint32_t* tag) { return ReadVarint32(5, tag); }

  // The value of a field whose tag was just read, by the type it is stored in. uint32 and
  // int32: a varint of up to 10 bytes, truncated to its low 32 bits.
  bool Read(uint32_t* out) { return ReadVarint32(10, out); }
  bool Read(int32_t* out) {
    uint32_t v;
    if (!ReadVarint32(10, &v)) return false;
    *out = static_cast<int32_t>(v);
    return true;
  }
  // bytes: assigned, so the string keeps its capacity.
  bool Read(std::string* out) {
    std::string_view s;
    if (!ReadBytes(&s)) return false;
    out->assign(s.data(), s.size());
    return true;
  }
  // One trans_info entry.
  bool Read(TransInfo* trans_info) { return ReadTransInfoEntry(trans_info); }

  // Skips the field whose tag was just read at `at`: an unknown field, or a known one with an
  // unexpected wire type. `depth` is the number of group levels still allowed.
  bool SkipField(const char* at, uint32_t tag, int depth) {
    const uint32_t field = tag >> 3;
    if (field == 0) return Fail(at, "field number 0");
    switch (tag & 7) {
      case kVarint: {
        uint64_t v = 0;
        return ReadVarint(10, &v);
      }
      case kFixed64:
        return Skip(8);
      case kLengthDelimited: {
        size_t n = 0;
        if (!ReadLength(&n)) return false;
        p_ += n;
        return true;
      }
      case kStartGroup:
        return SkipGroup(at, field, depth);
      case kEndGroup:
        return Fail(at, fmt::format("end of group {} without its start", field));
      case kFixed32:
        return Skip(4);
      default:
        return Fail(at, fmt::format("wire type {}", tag & 7));
    }
  }

 private:
  // A varint of at most `max_bytes` bytes, truncated to its low 32 bits as protobuf does.
  bool ReadVarint32(int max_bytes, uint32_t* out) {
    if (p_ < end_ && static_cast<uint8_t>(*p_) < 0x80) {  // the usual one-byte varint
      *out = static_cast<uint8_t>(*p_++);
      return true;
    }
    uint64_t v = 0;
    if (!ReadVarint(max_bytes, &v)) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  }

  // One trans_info entry, added to `*trans_info` (replacing an entry with the same key).
  bool ReadTransInfoEntry(TransInfo* trans_info) {
    size_t n = 0;
    if (!ReadLength(&n)) return false;
    const char* outer_end = end_;
    end_ = p_ + n;
    std::string_view key;
    std::string_view value;
    while (!done()) {
      const char* at = p_;
      uint32_t tag;
      if (!ReadTag(&tag)) return false;
      if (tag == Tag(kEntryKey, kLengthDelimited)) {
        if (!ReadBytes(&key)) return false;
        // Checked at every occurrence, as protobuf does, not only for the one that wins.
        if (!IsUtf8(key)) return Fail(at, "trans_info key that is not valid UTF-8");
      } else if (tag == Tag(kEntryValue, kLengthDelimited)) {
        if (!ReadBytes(&value)) return false;
      } else if (!SkipField(at, tag, kMaxDepth - 1)) {  // the entry took one level
        return false;
      }
    }
    end_ = outer_end;
    trans_info->try_emplace(std::string(key)).first->second.assign(value.data(), value.size());
    return true;
  }

  bool ReadVarint(int max_bytes, uint64_t* out) {
    const char* at = p_;
    uint64_t v = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (p_ == end_) return Fail(at, "varint running past the end");
      const auto b = static_cast<uint8_t>(*p_++);
      v |= uint64_t{b & 0x7fu} << (7 * i);  // bits past 64 drop out, as in protobuf
      if (b < 0x80) {
        *out = v;
        return true;
      }
    }
    return Fail(at, fmt::format("varint longer than {} bytes", max_bytes));
  }

  // A length is a varint of at most 5 bytes (protobuf refuses 2 GiB and more) that must fit in
  // what is left.
  bool ReadLength(size_t* n) {
    if (p_ < end_ && static_cast<uint8_t>(*p_) < 0x80) {  // the usual one-byte length
      const auto v = static_cast<uint8_t>(*p_);
      if (v < end_ - p_) {
        ++p_;
        *n = v;
        return true;
      }
    }
    return ReadLongLength(n);
  }

  bool ReadLongLength(size_t* n) {
    const char* at = p_;
    uint64_t v = 0;
    if (!ReadVarint(5, &v)) return false;
    if (v > static_cast<uint64_t>(end_ - p_)) {
      return Fail(at, fmt::format("length {} running past the end", v));
    }
    *n = static_cast<size_t>(v);
    return true;
  }

  bool ReadBytes(std::string_view* out) {
    size_t n = 0;
    if (!ReadLength(&n)) return false;
    *out = std::string_view(p_, n);
    p_ += n;
    return true;
  }

  bool Skip(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) {
      return Fail(p_, "fixed-size value running past the end");
    }
    p_ += n;
    return true;
  }

  // The rest of the group `field` that started at `at`, up to its matching end-group tag.
  bool SkipGroup(const char* at, uint32_t field, int depth) {
    if (depth == 0) return Fail(at, "groups nested deeper than protobuf's limit of 100 levels");
    while (!done()) {
      const char* tag_at = p_;
      uint32_t tag;
      if (!ReadTag(&tag)) return false;
      if ((tag & 7) == kEndGroup) {
        if (tag >> 3 == field) return true;
        return Fail(tag_at, fmt::format("end of group {} inside group {}", tag >> 3, field));
      }
      if (!SkipField(tag_at, tag, depth - 1)) return false;
    }
    return Fail(at, fmt::format("group {} that is never closed", field));
  }

  [[gnu::cold]] bool Fail(const char* at, std::string_view what) {
    *err_ = fmt::format("{} at byte {}", what, at - begin_);
    return false;
  }

  const char* const begin_;
  const char* p_;
  const char* end_;  // of the header, or of the trans_info entry being read
  std::string* err_;
};

// ---- The two messages ---------------------------------------------------------------------------

// Each message's fields in field-number order (trpc.proto): `visit(number, value)` once per field,
// with a reference to where its value lives (`Rpc` may be const). The one place that knows a
// message's layout; sizing, writing, clearing and reading are each written once over it.
template <typename Rpc, typename Attachment, typename Visit>
requires std::same_as<std::remove_const_t<Rpc>, RpcRequest>
void VisitFields(Rpc& req, Attachment& attachment_size, Visit&& visit) {
  visit(1, req.version);
  visit(2, req.call_type);
  visit(3, req.request_id);
  visit(4, req.timeout_ms);
  visit(5, req.caller);
  visit(6, req.callee);
  visit(7, req.func);
  visit(8, req.message_type);
  visit(9, req.trans_info);
  visit(10, req.content_type);
  visit(11, req.content_encoding);
  visit(12, attachment_size);
}

template <typename Rpc, typename Attachment, typename Visit>
requires std::same_as<std::remove_const_t<Rpc>, RpcResponse>
void VisitFields(Rpc& rsp, Attachment& attachment_size, Visit&& visit) {
  visit(1, rsp.version);
  visit(2, rsp.call_type);
  visit(3, rsp.request_id);
  visit(4, rsp.ret);
  visit(5, rsp.func_ret);
  visit(6, rsp.error_msg);
  visit(7, rsp.message_type);
  visit(8, rsp.trans_info);
  visit(9, rsp.content_type);
  visit(10, rsp.content_encoding);
  // 11 is not used.
  visit(12, attachment_size);
}

// The wire type a field stored as T is read with; any other is skipped as an unknown field.
template <typename T>
constexpr WireType kWireTypeOf = std::is_integral_v<T> ? kVarint : kLengthDelimited;

template <typename Rpc>
size_t EncodedSize(const Rpc& rpc, uint32_t attachment_size) {
  size_t n = 0;
  VisitFields(rpc, attachment_size, [&n](uint32_t, const auto& value) { n += FieldSize(value); });
  return n;
}

template <typename Rpc>
char* Encode(const Rpc& rpc, uint32_t attachment_size, char* p) {
  VisitFields(rpc, attachment_size,
              [&p](uint32_t field, const auto& value) { p = PutField(field, value, p); });
  return p;
}

template <typename Rpc>
void Clear(Rpc* rpc, uint32_t* attachment_size) {
  VisitFields(*rpc, *attachment_size, [](uint32_t, auto& value) {
    if constexpr (std::is_integral_v<std::remove_reference_t<decltype(value)>>) {
      value = 0;
    } else {
      value.clear();  // keeps a string's capacity
    }
  });
}

template <typename Rpc>
bool Decode(std::string_view bytes, Rpc* rpc, uint32_t* attachment_size, std::string* err) {
  Clear(rpc, attachment_size);  // proto3: an absent field is at its default
  WireReader r(bytes, err);
  while (!r.done()) {
    const char* at = r.pos();
    uint32_t tag;
    bool ok = r.ReadTag(&tag);
    if (ok) {
      bool known = false;
      // Tags are distinct, so at most one field matches.
      VisitFields(*rpc, *attachment_size, [&](uint32_t field, auto& value) {
        if (tag == Tag(field, kWireTypeOf<std::remove_reference_t<decltype(value)>>)) {
          known = true;
          ok = r.Read(&value);
        }
      });
      if (!known) ok = r.SkipField(at, tag, kMaxDepth);
    }
    if (!ok) {
      Clear(rpc, attachment_size);
      return false;
    }
  }
  return true;
}

}  // namespace

size_t EncodedHeaderSize(const RpcRequest& req, uint32_t attachment_size) {
  return EncodedSize(req, attachment_size);
}

char* EncodeHeader(const RpcRequest& req, uint32_t attachment_size, char* p) {
  return Encode(req, attachment_size, p);
}

size_t EncodedHeaderSize(const RpcResponse& rsp, uint32_t attachment_size) {
  return EncodedSize(rsp, attachment_size);
}

char* EncodeHeader(const RpcResponse& rsp, uint32_t attachment_size, char* p) {
  return Encode(rsp, attachment_size, p);
}

bool DecodeHeader(std::string_view bytes, RpcRequest* req, uint32_t* attachment_size,
                  std::string* err) {
  return Decode(bytes, req, attachment_size, err);
}

bool DecodeHeader(std::string_view bytes, RpcResponse* rsp, uint32_t* attachment_size,
                  std::string* err) {
  return Decode(bytes, rsp, attachment_size, err);
}

}  // namespace trpc::detail
