#include "trpc/tracing/detail/trace_context.h"

#include <cmath>
#include <random>

namespace trpc::tracing::detail {

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is refused, as the specification says
}

template <size_t N>
bool ParseHex(std::string_view s, std::array<uint8_t, N>* out) {
  if (s.size() != 2 * N) return false;
  bool nonzero = false;
  for (size_t i = 0; i < N; ++i) {
    int hi = HexDigit(s[2 * i]);
    int lo = HexDigit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
    nonzero |= (*out)[i] != 0;
  }
  return nonzero;
}

std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (uint64_t{rd()} << 32) ^ rd();
  }());
  return rng;
}

template <size_t N>
std::array<uint8_t, N> RandomId() {
  std::array<uint8_t, N> id{};
  do {
    for (size_t i = 0; i < N; i += 8) {
      uint64_t r = Rng()();
      for (size_t j = 0; j < 8 && i + j < N; ++j) id[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  } while (id == std::array<uint8_t, N>{});
  return id;
}

}  // namespace

bool SpanContext::valid() const { return trace_id != TraceId{} && span_id != SpanId{}; }

bool ParseTraceparent(std::string_view v, SpanContext* out) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55.
  constexpr size_t kLen = 55;
  if (v.size() < kLen || v[2] != '-' || v[35] != '-' || v[52] != '-') return false;
  int v_hi = HexDigit(v[0]);
  int v_lo = HexDigit(v[1]);
  if (v_hi < 0 || v_lo < 0) return false;
  const int version = v_hi << 4 | v_lo;
  if (version == 0xff) return false;
  if (version == 0 ? v.size() != kLen : v.size() > kLen && v[kLen] != '-') return false;
  SpanContext c;
  if (!ParseHex(v.substr(3, 32), &c.trace_id) || !ParseHex(v.substr(36, 16), &c.span_id)) {
    return false;
  }
  int f_hi = HexDigit(v[53]);
  int f_lo = HexDigit(v[54]);
  if (f_hi < 0 || f_lo < 0) return false;
  c.sampled = ((f_hi << 4 | f_lo) & 1) != 0;
  *out = c;
  return true;
}

std::string Hex(const uint8_t* data, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(2 * n, '0');
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = kDigits[data[i] >> 4];
    s[2 * i + 1] = kDigits[data[i] & 15];
  }
  return s;
}

std::string FormatTraceparent(const SpanContext& c) {
  return "00-" + Hex(c.trace_id.data(), c.trace_id.size()) + "-" +
         Hex(c.span_id.data(), c.span_id.size()) + (c.sampled ? "-01" : "-00");
}

TraceId NewTraceId() { return RandomId<16>(); }
SpanId NewSpanId() { return RandomId<8>(); }

bool SampledByRatio(const TraceId& id, double ratio) {
  if (ratio >= 1.0) return true;
  if (!(ratio > 0.0)) return false;
  uint64_t low = 0;
  for (size_t i = 8; i < 16; ++i) low = low << 8 | id[i];
  // ratio x 2^64, computed in long double so that small ratios keep their precision.
  const auto bound = static_cast<uint64_t>(std::ldexp(static_cast<long double>(ratio), 64));
  return low < bound;
}

}  // namespace trpc::tracing::detail
