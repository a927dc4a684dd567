#include "trpc/tracing/detail/trace_context.h"

#include <cmath>
#include <cstring>
#include <random>

namespace trpc::tracing::detail {

namespace {

// Lower-case hex digits to their values, -1 for anything else (upper case is refused, as the
// specification says): one table load per character.
constexpr std::array<int8_t, 256> kHexValue = [] {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  for (int c = '0'; c <= '9'; ++c) t[c] = static_cast<int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) t[c] = static_cast<int8_t>(c - 'a' + 10);
  return t;
}();

int HexDigit(char c) { return kHexValue[static_cast<unsigned char>(c)]; }

// Each byte's two hex digits, in the order they are written.
constexpr std::array<std::array<char, 2>, 256> kHexPairs = [] {
  constexpr char kDigits[] = "0123456789abcdef";
  std::array<std::array<char, 2>, 256> t{};
  for (int b = 0; b < 256; ++b) t[b] = {kDigits[b >> 4], kDigits[b & 15]};
  return t;
}();

// Writes 2n hex digits of `data` at `out`: one table load and one 2-byte store per byte.
void PutHex(const uint8_t* data, size_t n, char* out) {
  for (size_t i = 0; i < n; ++i) std::memcpy(out + 2 * i, kHexPairs[data[i]].data(), 2);
}

// 2N hex digits at `s` into `out`; false for a non-hex digit or an all-zero id.
template <size_t N>
bool ParseHex(const char* s, std::array<uint8_t, N>* out) {
  int bad = 0;
  uint8_t any = 0;
  for (size_t i = 0; i < N; ++i) {
    int hi = HexDigit(s[2 * i]);
    int lo = HexDigit(s[2 * i + 1]);
    bad |= hi | lo;  // negative when either is -1
    (*out)[i] = static_cast<uint8_t>(hi << 4 | lo);
    any |= (*out)[i];
  }
  return bad >= 0 && any != 0;
}

// xoshiro256++ per thread, seeded once from the OS: ids need to be unpredictable enough not to
// collide, not to be secret, and a Mersenne Twister costs several times more per id.
struct Xoshiro {
  uint64_t s[4];
  Xoshiro() {
    std::random_device rd;
    for (auto& w : s) w = (uint64_t{rd()} << 32) ^ rd();
    if ((s[0] | s[1] | s[2] | s[3]) == 0) s[0] = 1;
  }
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t Next() {
    const uint64_t result = Rotl(s[0] + s[3], 23) + s[0];
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = Rotl(s[3], 45);
    return result;
  }
};

uint64_t NonZeroRandom() {
  thread_local Xoshiro rng;
  uint64_t r;
  do {
    r = rng.Next();
  } while (r == 0);
  return r;
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
  if (!ParseHex(v.data() + 3, &c.trace_id) || !ParseHex(v.data() + 36, &c.span_id)) {
    return false;
  }
  int f_hi = HexDigit(v[53]);
  int f_lo = HexDigit(v[54]);
  if (f_hi < 0 || f_lo < 0) return false;
  c.sampled = ((f_hi << 4 | f_lo) & 1) != 0;
  *out = c;
  return true;
}

void PutHexDigits(const uint8_t* data, size_t n, char* out) { PutHex(data, n, out); }

std::string Hex(const uint8_t* data, size_t n) {
  std::string s(2 * n, '0');
  PutHex(data, n, s.data());
  return s;
}

void FormatTraceparent(const SpanContext& c, std::string* out) {
  char buf[55];
  std::memcpy(buf, "00-", 3);
  PutHex(c.trace_id.data(), c.trace_id.size(), buf + 3);
  buf[35] = '-';
  PutHex(c.span_id.data(), c.span_id.size(), buf + 36);
  std::memcpy(buf + 52, c.sampled ? "-01" : "-00", 3);
  out->assign(buf, sizeof(buf));  // in place: reuses the string's buffer when it has one
}

std::string FormatTraceparent(const SpanContext& c) {
  std::string s;
  FormatTraceparent(c, &s);
  return s;
}

TraceId NewTraceId() {
  TraceId id;
  const uint64_t a = NonZeroRandom();
  const uint64_t b = NonZeroRandom();
  std::memcpy(id.data(), &a, 8);
  std::memcpy(id.data() + 8, &b, 8);
  return id;
}

SpanId NewSpanId() {
  SpanId id;
  const uint64_t a = NonZeroRandom();
  std::memcpy(id.data(), &a, 8);
  return id;
}

uint64_t SamplingBound(double ratio) {
  if (!(ratio > 0.0)) return 0;
  if (ratio >= 1.0) return UINT64_MAX;
  // ratio x 2^64, computed in long double so that small ratios keep their precision.
  return static_cast<uint64_t>(std::ldexp(static_cast<long double>(ratio), 64));
}

bool SampledByBound(const TraceId& id, uint64_t bound) {
  if (bound == UINT64_MAX) return true;
  uint64_t low = 0;
  for (size_t i = 8; i < 16; ++i) low = low << 8 | id[i];
  return low < bound;
}

bool SampledByRatio(const TraceId& id, double ratio) {
  return SampledByBound(id, SamplingBound(ratio));
}

}  // namespace trpc::tracing::detail
