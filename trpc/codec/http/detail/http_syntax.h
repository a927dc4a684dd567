#pragma once

// The HTTP/1.1 message syntax both parsers share (request_parser.h, response_parser.h): character
// classes (RFC 9110 §5.6.2, §5.5), list items, field lines (RFC 9112 §5). Inline: the loops run
// per byte of every head.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace trpc::http::detail {

// tchar (RFC 9110 §5.6.2), field-vchar / HTAB / SP (§5.5), and what a request-target may hold
// (RFC 3986: printable ASCII, no SP).
enum CharClass : uint8_t { kToken = 1, kFieldValue = 2, kTarget = 4 };

constexpr std::array<uint8_t, 256> MakeCharClasses() {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (alnum || (c != 0 && std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                                std::string_view::npos)) {
      t[c] |= kToken;
    }
    if (c == '\t' || (c >= 0x20 && c != 0x7f)) t[c] |= kFieldValue;  // obs-text (0x80+) allowed
    if (c > 0x20 && c < 0x7f) t[c] |= kTarget;
  }
  return t;
}

inline constexpr std::array<uint8_t, 256> kChars = MakeCharClasses();

inline bool Is(char c, CharClass cls) { return (kChars[static_cast<uint8_t>(c)] & cls) != 0; }

// Every byte of a non-empty `s` is of class `cls`.
inline bool AllIn(std::string_view s, CharClass cls) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!Is(c, cls)) return false;
  }
  return true;
}

inline char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

// ASCII case-insensitive equality; `lower` is already lower case.
inline bool EqualsLower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (Lower(s[i]) != lower[i]) return false;
  }
  return true;
}

// ASCII case-insensitive equality of two field names.
inline bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

inline bool IsOws(char c) { return c == ' ' || c == '\t'; }

inline std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// Takes the next element of a comma-separated list off the front of `*list`, trimmed of OWS.
// Returns false when the list is used up (`*more` starts true).
inline bool NextListItem(std::string_view* list, std::string_view* item, bool* more) {
  if (!*more) return false;
  const size_t comma = list->find(',');
  *item = TrimOws(list->substr(0, comma));
  *more = comma != std::string_view::npos;
  list->remove_prefix(*more ? comma + 1 : list->size());
  return true;
}

// The first byte in [p, end) that is not a field-value byte (HTAB, SP, VCHAR, obs-text), or end.
inline const char* SkipFieldValue(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i zero = _mm_setzero_si128();
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i del = _mm_set1_epi8(0x7f);
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed compares: obs-text (0x80-0xff) is negative, so "< 0x20 and >= 0" is exactly 0x00-0x1f.
    __m128i bad = _mm_andnot_si128(_mm_cmplt_epi8(v, zero), _mm_cmplt_epi8(v, space));
    bad = _mm_or_si128(_mm_andnot_si128(_mm_cmpeq_epi8(v, tab), bad), _mm_cmpeq_epi8(v, del));
    const int mask = _mm_movemask_epi8(bad);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  while (p < end && Is(*p, kFieldValue)) ++p;
  return p;
}

inline size_t SaturatingAdd(size_t a, size_t b) {
  return b > std::numeric_limits<size_t>::max() - a ? std::numeric_limits<size_t>::max() : a + b;
}

inline int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline constexpr const char* kBareCr = "bare CR (not followed by LF)";
inline constexpr const char* kBareLf = "bare LF (line not ended by CRLF)";

// Reads the field line at `*p` (field-name ":" OWS field-value OWS CRLF, RFC 9112 §5) and moves
// `*p` past its CRLF. The bytes from `*p` to `end` must hold a CRLF: every loop below stops at a
// CR, so none reads past it. Returns null, or why the line is malformed.
inline const char* ReadFieldLine(const char** p, const char* end, std::string_view* name,
                                 std::string_view* value) {
  const char* c = *p;
  if (IsOws(*c)) return "obs-fold (field line starting with whitespace)";
  while (Is(*c, kToken)) ++c;
  if (*c != ':') {
    if (IsOws(*c)) return "whitespace between field name and colon";
    if (*c == '\r') return c[1] == '\n' ? "field line without a colon" : kBareCr;
    return "invalid character in field name";
  }
  if (c == *p) return "empty field name";
  *name = std::string_view(*p, c - *p);
  ++c;
  while (IsOws(*c)) ++c;
  const char* v = c;
  c = SkipFieldValue(c, end);
  if (c == end || *c != '\r') return "control character in field value";
  if (c[1] != '\n') return kBareCr;
  const char* v_end = c;
  while (v_end > v && IsOws(v_end[-1])) --v_end;
  *value = std::string_view(v, v_end - v);
  *p = c + 2;
  return nullptr;
}

// A Content-Length value (a list of identical values is one value, RFC 9110 §8.6): null with
// `*n` set, or why it is not one. `*seen` says an earlier field gave `*n` already; a different
// value is then an error.
inline const char* ReadContentLength(std::string_view value, bool* seen, uint64_t* n) {
  bool more = true;
  std::string_view item;
  while (NextListItem(&value, &item, &more)) {
    if (item.empty()) return "empty Content-Length";
    uint64_t v = 0;
    for (char c : item) {
      if (c < '0' || c > '9') return "Content-Length is not a decimal number";
      const uint64_t d = static_cast<uint64_t>(c - '0');
      if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) {
        return "Content-Length overflows 64 bits";
      }
      v = v * 10 + d;
    }
    if (*seen && v != *n) return "duplicate Content-Length with different values";
    *seen = true;
    *n = v;
  }
  return nullptr;
}

// The transfer-codings of Transfer-Encoding fields, over all of them, in order.
struct TransferCodings {
  uint32_t count = 0;             // codings listed
  bool last_chunked = false;      // the last one listed is "chunked"
  bool chunked_repeated = false;  // "chunked" listed before another coding

  // Adds one field's list; null, or why it is malformed.
  const char* Add(std::string_view value) {
    bool more = true;
    std::string_view item;
    while (NextListItem(&value, &item, &more)) {
      const std::string_view coding = TrimOws(item.substr(0, item.find(';')));
      if (coding.empty()) return "empty transfer-coding";
      for (char c : coding) {
        if (!Is(c, kToken)) return "malformed transfer-coding";
      }
      if (last_chunked) chunked_repeated = true;
      last_chunked = EqualsLower(coding, "chunked");
      ++count;
    }
    return nullptr;
  }
};

// The connection options of Connection fields (RFC 9112 §9.6).
struct ConnectionOptionsSeen {
  bool close = false;
  bool keep_alive = false;

  void Add(std::string_view value) {
    bool more = true;
    std::string_view item;
    while (NextListItem(&value, &item, &more)) {
      if (EqualsLower(item, "close")) close = true;
      if (EqualsLower(item, "keep-alive")) keep_alive = true;
    }
  }
  // Whether the connection persists after this message (RFC 9112 §9.3).
  bool Persistent(bool http11) const { return http11 ? !close : keep_alive && !close; }
};

// The fields that frame a message and say whether its connection persists (RFC 9112 §6, §9.6),
// gathered over the field lines of one head.
struct FramingFields {
  bool has_content_length = false;
  uint64_t content_length = 0;
  TransferCodings te;
  ConnectionOptionsSeen conn;

  // Takes one field line into account (other fields are ignored); null, or why it is malformed.
  const char* Add(std::string_view name, std::string_view value) {
    switch (name.size()) {
      case 10:
        if (EqualsLower(name, "connection")) conn.Add(value);
        return nullptr;
      case 14:
        return EqualsLower(name, "content-length")
                   ? ReadContentLength(value, &has_content_length, &content_length)
                   : nullptr;
      case 17:
        return EqualsLower(name, "transfer-encoding") ? te.Add(value) : nullptr;
      default:
        return nullptr;
    }
  }

  // With a Transfer-Encoding (te.count > 0): null when it is "chunked" alone and there is no
  // Content-Length, else why not. `*unsupported`: the reason is a coding we do not implement
  // (the message is not malformed).
  const char* CheckChunked(bool* unsupported) const {
    *unsupported = false;
    // RFC 9112 §6.3 lets Transfer-Encoding win, and calls the pair a sign of smuggling.
    if (has_content_length) return "both Content-Length and Transfer-Encoding";
    // The length is unknowable unless chunked comes last.
    if (!te.last_chunked) return "final transfer-coding is not chunked";
    if (te.chunked_repeated) return "chunked applied more than once";
    if (te.count > 1) {
      *unsupported = true;
      return "transfer-coding other than chunked not implemented";
    }
    return nullptr;
  }
};

}  // namespace trpc::http::detail
