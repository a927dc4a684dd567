#include "trpc/codec/grpc/detail/grpc_wire.h"

#include <charconv>

#include "trpc/codec/detail/compression.h"

namespace trpc::grpc::detail {

bool ParseTimeout(std::string_view v, int64_t* ns) {
  if (v.size() < 2 || v.size() > 9) return false;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size() - 1, n);
  if (ec != std::errc() || end != v.data() + v.size() - 1) return false;
  int64_t unit_ns = 0;
  switch (v.back()) {
    case 'H':
      unit_ns = 3'600'000'000'000;
      break;
    case 'M':
      unit_ns = 60'000'000'000;
      break;
    case 'S':
      unit_ns = 1'000'000'000;
      break;
    case 'm':
      unit_ns = 1'000'000;
      break;
    case 'u':
      unit_ns = 1'000;
      break;
    case 'n':
      unit_ns = 1;
      break;
    default:
      return false;
  }
  // 8 digits of hours fit in int64 nanoseconds only up to ~2.5e6 hours: saturate.
  constexpr int64_t kMax = INT64_MAX / 2;
  *ns = n > static_cast<uint64_t>(kMax / unit_ns) ? kMax : static_cast<int64_t>(n) * unit_ns;
  return true;
}

std::string FormatTimeout(int64_t ms) {
  if (ms <= 0) ms = 1;
  if (ms < 100'000'000) return std::to_string(ms) + "m";
  int64_t s = (ms + 999) / 1000;
  if (s < 100'000'000) return std::to_string(s) + "S";
  return std::to_string((s + 3599) / 3600) + "H";
}

std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u <= 0x7e && u != '%') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

namespace {
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexValue(s[i + 1]) >= 0 && HexValue(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(HexValue(s[i + 1]) * 16 + HexValue(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string Base64Encode(std::string_view s) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((s.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= s.size(); i += 3) {
    uint32_t v = (static_cast<uint8_t>(s[i]) << 16) | (static_cast<uint8_t>(s[i + 1]) << 8) |
                 static_cast<uint8_t>(s[i + 2]);
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(kAlphabet[(v >> 6) & 63]);
    out.push_back(kAlphabet[v & 63]);
  }
  if (size_t rest = s.size() - i; rest > 0) {
    uint32_t v = static_cast<uint8_t>(s[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(s[i + 1]) << 8;
    out.push_back(kAlphabet[v >> 18]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    if (rest == 2) out.push_back(kAlphabet[(v >> 6) & 63]);
  }
  return out;
}

bool Base64Decode(std::string_view s, std::string* out) {
  while (!s.empty() && s.back() == '=') s.remove_suffix(1);
  if (s.size() % 4 == 1) return false;
  out->clear();
  out->reserve(s.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v;
    if (c >= 'A' && c <= 'Z') {
      v = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      v = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      v = c - '0' + 52;
    } else if (c == '+' || c == '-') {
      v = 62;
    } else if (c == '/' || c == '_') {
      v = 63;
    } else {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

bool IsSupportedEncoding(std::string_view name) {
  return name == "identity" || name == "gzip" || name == "deflate";
}

// gRPC's "gzip" is the gzip format and its "deflate" the zlib format; the zlib code is the trpc
// protocol's (codec/detail/compression.h), without its empty-body rule: a gRPC peer expects a
// whole stream even for an empty message.
bool Compress(std::string_view encoding, const ChainBuffer& in, ChainBuffer* out) {
  std::string err;
  return ::trpc::detail::ZlibCompress(encoding == "gzip", in, out, &err);
}

bool Decompress(std::string_view encoding, const ChainBuffer& in, size_t max_bytes,
                ChainBuffer* out, std::string* err) {
  return ::trpc::detail::ZlibDecompress(encoding == "gzip", in, max_bytes, out, err);
}

bool AcceptsEncoding(std::string_view accept, std::string_view encoding) {
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view item = accept.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item == encoding) return true;
    if (comma == std::string_view::npos) break;
    accept.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace trpc::grpc::detail
