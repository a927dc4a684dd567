#include "trpc/codec/http/detail/request_parser.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace trpc::http::detail {

namespace {

// Character classes of RFC 9110 §5.6.2 (tchar) and §5.5 (field-vchar), and what a request-target
// may hold (RFC 3986: printable ASCII, no SP).
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

constexpr std::array<uint8_t, 256> kChars = MakeCharClasses();

bool Is(char c, CharClass cls) { return (kChars[static_cast<uint8_t>(c)] & cls) != 0; }

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

// ASCII case-insensitive equality; `lower` is already lower case.
bool EqualsLower(std::string_view s, std::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (Lower(s[i]) != lower[i]) return false;
  }
  return true;
}

bool IsOws(char c) { return c == ' ' || c == '\t'; }

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && IsOws(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsOws(s.back())) s.remove_suffix(1);
  return s;
}

// Takes the next element of a comma-separated list off the front of `*list`, trimmed of OWS.
// Returns false when the list is used up.
bool NextListItem(std::string_view* list, std::string_view* item, bool* more) {
  if (!*more) return false;
  const size_t comma = list->find(',');
  *item = TrimOws(list->substr(0, comma));
  *more = comma != std::string_view::npos;
  list->remove_prefix(*more ? comma + 1 : list->size());
  return true;
}

// memchr(p, '\n', end - p) without the call: heads are short lines, where the call and its set-up
// cost more than the search.
const char* FindLf(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i lf = _mm_set1_epi8('\n');
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const int mask = _mm_movemask_epi8(_mm_cmpeq_epi8(v, lf));
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  for (; p < end; ++p) {
    if (*p == '\n') return p;
  }
  return nullptr;
}

// The first byte in [p, end) that is not a field-value byte (HTAB, SP, VCHAR, obs-text), or end.
const char* SkipFieldValue(const char* p, const char* end) {
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

// The first byte in [p, end) that may not stand in a request-target (anything but 0x21-0x7e).
const char* SkipTarget(const char* p, const char* end) {
#if defined(__SSE2__)
  const __m128i bang = _mm_set1_epi8(0x21);
  const __m128i del = _mm_set1_epi8(0x7f);
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed: 0x80-0xff are negative, hence below 0x21 too.
    const __m128i bad = _mm_or_si128(_mm_cmplt_epi8(v, bang), _mm_cmpeq_epi8(v, del));
    const int mask = _mm_movemask_epi8(bad);
    if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
  }
#endif
  while (p < end && Is(*p, kTarget)) ++p;
  return p;
}

size_t SaturatingAdd(size_t a, size_t b) {
  return b > std::numeric_limits<size_t>::max() - a ? std::numeric_limits<size_t>::max() : a + b;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

constexpr const char* kBareCr = "bare CR (not followed by LF)";
constexpr const char* kBareLf = "bare LF (line not ended by CRLF)";

// Reads the field line at `*p` (field-name ":" OWS field-value OWS CRLF, RFC 9112 §5) and moves
// `*p` past its CRLF. The bytes from `*p` to `end` must hold a CRLF: every loop below stops at a
// CR, so none reads past it. Returns null, or why the line is malformed (always a 400).
const char* ReadFieldLine(const char** p, const char* end, std::string_view* name,
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

struct MethodEntry {
  std::string_view name;
  Method method;
};
constexpr MethodEntry kMethods[] = {
    {"GET", Method::kGet},         {"HEAD", Method::kHead},       {"POST", Method::kPost},
    {"PUT", Method::kPut},         {"DELETE", Method::kDelete},   {"PATCH", Method::kPatch},
    {"OPTIONS", Method::kOptions}, {"TRACE", Method::kTrace},     {"CONNECT", Method::kConnect},
};

bool LookUpMethod(std::string_view token, Method* m) {
  // Methods are case-sensitive (RFC 9110 §9.1). The common two first, without the loop.
  if (token.size() == 3 && token[0] == 'G' && token[1] == 'E' && token[2] == 'T') {
    *m = Method::kGet;
    return true;
  }
  if (token.size() == 4 && token[0] == 'P' && token[1] == 'O' && token[2] == 'S' &&
      token[3] == 'T') {
    *m = Method::kPost;
    return true;
  }
  for (const MethodEntry& e : kMethods) {
    if (e.name == token) {
      *m = e.method;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string_view MethodName(Method m) {
  for (const MethodEntry& e : kMethods) {
    if (e.method == m) return e.name;
  }
  return "";
}

const std::string* RequestHead::Find(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n.size() != name.size()) continue;
    size_t i = 0;
    while (i < n.size() && Lower(n[i]) == Lower(name[i])) ++i;
    if (i == n.size()) return &v;
  }
  return nullptr;
}

void RequestHead::Clear() {
  method = Method::kGet;
  target.clear();
  path.clear();
  query.clear();
  version_minor = 1;
  headers.clear();
  keep_alive = true;
  expect_continue = false;
  chunked = false;
  content_length = 0;
}

RequestParser::RequestParser(const ParserLimits& limits) : limits_(limits) {}

void RequestParser::Reset() {
  state_ = State::kHead;
  spare_headers_.swap(head_.headers);  // the strings keep their buffers for the next request
  head_.Clear();
  head_done_ = false;
  head_size_ = wire_size_ = 0;
  error_status_ = 0;
  error_.clear();
  pos_ = span_ = span_begin_ = 0;
  last_byte_ = 0;
  line_start_ = request_line_start_ = request_line_end_ = 0;
  in_request_line_ = true;
  empty_lines_ = 0;
  field_lines_ = 0;
  host_count_ = 0;
  has_content_length_ = false;
  te_codings_ = 0;
  te_last_chunked_ = te_chunked_repeated_ = false;
  conn_close_ = conn_keep_alive_ = false;
  chunk_left_ = 0;
  chunk_digits_ = 0;
  chunk_line_ = 0;
  body_total_ = 0;
  trailer_bytes_ = 0;
  trailer_line_.clear();
  if (!body_.empty()) body_.Clear();
}

RequestParser::Result RequestParser::Fail(int status, const char* why) {
  state_ = State::kError;
  error_status_ = status;
  error_.assign(why);
  return Result::kError;
}

RequestParser::Result RequestParser::Complete(size_t wire_size) {
  state_ = State::kComplete;
  wire_size_ = wire_size;
  return Result::kComplete;
}

std::string_view RequestParser::SpanAt(const ChainBuffer& in, size_t pos) {
  if (span_ < in.SpanCount()) {  // the common case: still in the cached span
    std::string_view s = in.Span(span_);
    if (pos >= span_begin_ && pos - span_begin_ < s.size()) return s;
  }
  // Walk forward from the cached span. A position before it only comes from a caller that broke
  // the append-only contract: start over then, so every access stays inside a span regardless.
  if (span_ >= in.SpanCount() || span_begin_ > pos) span_ = span_begin_ = 0;
  for (;;) {
    std::string_view s = in.Span(span_);
    if (pos - span_begin_ < s.size()) return s;
    span_begin_ += s.size();
    if (++span_ == in.SpanCount()) span_ = span_begin_ = 0;
  }
}

RequestParser::Result RequestParser::Parse(const ChainBuffer& in) {
  switch (state_) {
    case State::kComplete:
      return Result::kComplete;
    case State::kError:
      return Result::kError;
    case State::kHead: {
      Result r = ScanHead(in);
      if (r != Result::kNeedMore || state_ == State::kHead) return r;
      break;
    }
    default:
      break;
  }
  if (state_ == State::kBody) {
    const size_t end = head_size_ + head_.content_length;  // content_length <= max_body_bytes
    return in.size() >= end ? Complete(end) : Result::kNeedMore;
  }
  return RunChunked(in);
}

// Finds the blank line that ends the head, examining each byte once across calls: look for LF,
// then the byte before it must be CR. A bare CR inside a line is left to the head parse, which
// rejects it wherever it stands.
RequestParser::Result RequestParser::ScanHead(const ChainBuffer& in) {
  const size_t size = in.size();
  while (pos_ < size) {
    const std::string_view span = SpanAt(in, pos_);
    const size_t span_end = span_begin_ + span.size();
    for (;;) {  // the lines of this span
      // The LF of the current line must come before `limit`, or a bound is certainly exceeded.
      // Searching no further than that makes every verdict the same however the bytes arrive.
      // (The bound on the request line is at least 2, so an empty line always fits.)
      const size_t limit =
          in_request_line_
              ? SaturatingAdd(line_start_, std::max<size_t>(limits_.max_request_line, 2))
              : SaturatingAdd(request_line_start_, limits_.max_header_bytes);
      if (pos_ >= limit) {
        return in_request_line_ ? Fail(414, "request line too long")
                                : Fail(431, "header section too large");
      }
      if (pos_ == span_end) break;
      const char* p = span.data() + (pos_ - span_begin_);
      const char* end = span.data() + (std::min(span_end, limit) - span_begin_);
      const char* lf = FindLf(p, end);
      const size_t n = (lf == nullptr ? end : lf + 1) - p;
      examined_ += n;
      pos_ += n;
      if (lf == nullptr) {
        last_byte_ = end[-1];
        continue;
      }
      const char before = lf > p ? lf[-1] : last_byte_;
      last_byte_ = '\n';
      if (before != '\r') return Fail(400, kBareLf);
      const size_t line_size = pos_ - line_start_;
      line_start_ = pos_;
      if (line_size == 2) {
        if (!in_request_line_) {
          head_size_ = pos_;  // within max_header_bytes: the LF came before `limit`
          return ParseHead(in);
        }
        // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request-line.
        if (++empty_lines_ > 2) return Fail(400, "more than 2 empty lines before the request line");
        continue;
      }
      if (in_request_line_) {
        if (line_size > limits_.max_request_line) return Fail(414, "request line too long");
        in_request_line_ = false;
        request_line_start_ = pos_ - line_size;
        request_line_end_ = pos_;
      } else if (++field_lines_ > limits_.max_header_count) {
        return Fail(431, "too many header fields");
      }
      // The head still needs at least its blank line.
      if (pos_ - request_line_start_ + 2 > limits_.max_header_bytes) {
        return Fail(431, "header section too large");
      }
    }
  }
  // Every byte so far has been examined, and the bound checked at this position.
  return Result::kNeedMore;
}

RequestParser::Result RequestParser::ParseHead(const ChainBuffer& in) {
  head_done_ = true;
  const char* data;
  if (in.Span(0).size() >= head_size_) {
    data = in.Span(0).data();
  } else {
    scratch_.resize(head_size_);
    in.CopyTo(scratch_.data(), head_size_);
    data = scratch_.data();
  }
  examined_ += head_size_ - request_line_start_;
  // The scan has checked that every LF ends a CRLF and that the last line is empty.
  Result r = ParseRequestLine(std::string_view(
      data + request_line_start_, request_line_end_ - 2 - request_line_start_));
  if (r != Result::kNeedMore) return r;
  r = ParseFields(data + request_line_end_, data + head_size_ - 2);
  if (r != Result::kNeedMore) return r;
  return CheckFraming();
}

// request-line = method SP request-target SP HTTP-version (RFC 9112 §3), single spaces only.
RequestParser::Result RequestParser::ParseRequestLine(std::string_view line) {
  size_t i = 0;
  while (i < line.size() && Is(line[i], kToken)) ++i;
  if (i == line.size()) return Fail(400, "request line without a request-target");
  if (line[i] != ' ') {
    if (line[i] == '\r') return Fail(400, kBareCr);
    return Fail(400, i == 0 && IsOws(line[i]) ? "whitespace before the method"
                                               : "invalid character in method");
  }
  if (i == 0) return Fail(400, "whitespace before the method");
  const std::string_view method = line.substr(0, i);
  const size_t target_start = ++i;
  i = SkipTarget(line.data() + i, line.data() + line.size()) - line.data();
  if (i < line.size() && line[i] != ' ') {
    return Fail(400, line[i] == '\r' ? kBareCr : "invalid character in request-target");
  }
  if (i == target_start) return Fail(400, "empty request-target");
  if (i == line.size()) return Fail(400, "request line without an HTTP version");
  const std::string_view target = line.substr(target_start, i - target_start);
  const std::string_view version = line.substr(i + 1);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !digit(version[5]) ||
      version[6] != '.' || !digit(version[7])) {
    if (version.find('\r') != std::string_view::npos) return Fail(400, kBareCr);
    if (version.find(" HTTP/") != std::string_view::npos) return Fail(400, "space in request-target");
    return Fail(400, "malformed HTTP version");
  }
  if (version[5] != '1' || version[7] > '1') return Fail(505, "HTTP version not supported");
  head_.version_minor = static_cast<uint8_t>(version[7] - '0');
  if (!LookUpMethod(method, &head_.method)) return Fail(501, "method not implemented");

  // request-target forms (RFC 9112 §3.2); authority-form is for proxies and is not served.
  std::string_view path_and_query;
  if (target[0] == '/') {
    path_and_query = target;
  } else if (target == "*") {
    if (head_.method != Method::kOptions) return Fail(400, "'*' request-target without OPTIONS");
    path_and_query = target;
  } else {
    size_t scheme = target.find("://");
    if (scheme == std::string_view::npos ||
        !(EqualsLower(target.substr(0, scheme), "http") ||
          EqualsLower(target.substr(0, scheme), "https"))) {
      return Fail(400, "request-target is neither origin-form nor absolute-form");
    }
    std::string_view rest = target.substr(scheme + 3);
    const size_t authority_end = rest.find_first_of("/?");
    if (authority_end == 0 || rest.empty()) return Fail(400, "absolute-form target without a host");
    path_and_query = authority_end == std::string_view::npos ? "" : rest.substr(authority_end);
  }
  head_.target.assign(target);
  const size_t q = path_and_query.find('?');
  if (q == std::string_view::npos) {
    head_.path.assign(path_and_query);
  } else {
    head_.path.assign(path_and_query.substr(0, q));
    head_.query.assign(path_and_query.substr(q + 1));
  }
  if (head_.path.empty()) head_.path = "/";  // absolute-form "http://host" or "http://host?q"
  return Result::kNeedMore;
}

// Field lines from `p` up to `end`, where the blank line's CRLF stands.
RequestParser::Result RequestParser::ParseFields(const char* p, const char* end) {
  for (size_t i = 0; p < end; ++i) {
    std::string_view name, value;
    if (const char* why = ReadFieldLine(&p, end + 2, &name, &value)) return Fail(400, why);
    if (i < spare_headers_.size()) {  // reuse the strings of an earlier request
      auto& field = spare_headers_[i];
      field.first.assign(name);
      field.second.assign(value);
      head_.headers.push_back(std::move(field));
    } else {
      head_.headers.emplace_back(name, value);
    }

    bool more = true;
    std::string_view item;
    switch (name.size()) {
      case 4:
        if (EqualsLower(name, "host")) ++host_count_;
        break;
      case 6:
        if (EqualsLower(name, "expect") && EqualsLower(value, "100-continue")) {
          head_.expect_continue = true;
        }
        break;
      case 10:
        if (!EqualsLower(name, "connection")) break;
        while (NextListItem(&value, &item, &more)) {
          if (EqualsLower(item, "close")) conn_close_ = true;
          if (EqualsLower(item, "keep-alive")) conn_keep_alive_ = true;
        }
        break;
      case 14:
        if (!EqualsLower(name, "content-length")) break;
        // A list of identical values is one value (RFC 9110 §8.6); anything else is ambiguous.
        while (NextListItem(&value, &item, &more)) {
          if (item.empty()) return Fail(400, "empty Content-Length");
          uint64_t n = 0;
          for (char c : item) {
            if (c < '0' || c > '9') return Fail(400, "Content-Length is not a decimal number");
            const uint64_t d = static_cast<uint64_t>(c - '0');
            if (n > (std::numeric_limits<uint64_t>::max() - d) / 10) {
              return Fail(400, "Content-Length overflows 64 bits");
            }
            n = n * 10 + d;
          }
          if (has_content_length_ && n != head_.content_length) {
            return Fail(400, "duplicate Content-Length with different values");
          }
          has_content_length_ = true;
          head_.content_length = n;
        }
        break;
      case 17:
        if (!EqualsLower(name, "transfer-encoding")) break;
        while (NextListItem(&value, &item, &more)) {
          const std::string_view coding = TrimOws(item.substr(0, item.find(';')));
          if (coding.empty()) return Fail(400, "empty transfer-coding");
          for (char c : coding) {
            if (!Is(c, kToken)) return Fail(400, "malformed transfer-coding");
          }
          if (te_last_chunked_) te_chunked_repeated_ = true;
          te_last_chunked_ = EqualsLower(coding, "chunked");
          ++te_codings_;
        }
        break;
      default:
        break;
    }
  }
  return Result::kNeedMore;
}

// Decides how the body is framed (RFC 9112 §6.1-6.3), and the connection options.
RequestParser::Result RequestParser::CheckFraming() {
  const bool http11 = head_.version_minor == 1;
  if (http11 && host_count_ != 1) {
    return Fail(400, host_count_ == 0 ? "missing Host header" : "more than one Host header");
  }
  if (te_codings_ > 0) {
    if (!http11) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (has_content_length_) return Fail(400, "both Content-Length and Transfer-Encoding");
    // A request's length is unknowable unless chunked comes last.
    if (!te_last_chunked_) return Fail(400, "final transfer-coding is not chunked");
    if (te_chunked_repeated_) return Fail(400, "chunked applied more than once");
    if (te_codings_ > 1) return Fail(501, "transfer-coding other than chunked not implemented");
    head_.chunked = true;
  }
  if (head_.content_length > limits_.max_body_bytes) {
    return Fail(413, "Content-Length exceeds the body limit");
  }
  head_.keep_alive = http11 ? !conn_close_ : conn_keep_alive_ && !conn_close_;
  head_.expect_continue = head_.expect_continue && http11;
  if (head_.chunked) {
    state_ = State::kChunkSize;
    return Result::kNeedMore;
  }
  if (head_.content_length > 0) {
    state_ = State::kBody;
    return Result::kNeedMore;
  }
  return Complete(head_size_);
}

// chunked-body = *chunk last-chunk trailer-section CRLF (RFC 9112 §7.1). Framing bytes go through
// the state machine one at a time; chunk data is copied in runs.
RequestParser::Result RequestParser::RunChunked(const ChainBuffer& in) {
  const size_t size = in.size();
  while (pos_ < size) {
    const std::string_view span = SpanAt(in, pos_);
    const char* p = span.data() + (pos_ - span_begin_);
    const char* const end = span.data() + span.size();
    if (state_ == State::kChunkData) {
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(chunk_left_, static_cast<uint64_t>(end - p)));
      body_.Append(p, n);
      pos_ += n;
      examined_ += n;
      chunk_left_ -= n;
      if (chunk_left_ == 0) state_ = State::kChunkDataCR;
      continue;
    }
    while (p < end && state_ != State::kChunkData) {
      const char c = *p++;
      ++pos_;
      ++examined_;
      switch (state_) {
        case State::kChunkSize:
        case State::kChunkExt:
        case State::kChunkSizeLF:
          if (++chunk_line_ > limits_.max_chunk_line) return Fail(400, "chunk-size line too long");
          break;
        default:
          break;
      }
      switch (state_) {
        case State::kChunkSize: {
          const int d = HexValue(c);
          if (d >= 0) {
            if (chunk_digits_ == 16) return Fail(400, "chunk size has more than 16 hex digits");
            ++chunk_digits_;
            chunk_left_ = chunk_left_ << 4 | static_cast<uint64_t>(d);
            if (chunk_left_ > limits_.max_body_bytes - body_total_) {
              return Fail(413, "chunked body exceeds the body limit");
            }
          } else if (chunk_digits_ == 0) {
            return Fail(400, "chunk size is not a hex number");
          } else if (c == ';') {
            state_ = State::kChunkExt;
          } else if (c == '\r') {
            state_ = State::kChunkSizeLF;
          } else {
            return Fail(400, c == '\n' ? kBareLf : "invalid character after chunk size");
          }
          break;
        }
        case State::kChunkExt:
          if (c == '\r') {
            state_ = State::kChunkSizeLF;
          } else if (c == '\n') {
            return Fail(400, kBareLf);
          } else if (!Is(c, kFieldValue)) {
            return Fail(400, "control character in chunk extension");
          }
          break;
        case State::kChunkSizeLF:
          if (c != '\n') return Fail(400, kBareCr);
          chunk_line_ = 0;
          chunk_digits_ = 0;
          if (chunk_left_ == 0) {
            state_ = State::kTrailerLine;
          } else {
            body_total_ += chunk_left_;
            state_ = State::kChunkData;
          }
          break;
        case State::kChunkDataCR:
          if (c != '\r') return Fail(400, "missing CRLF after chunk data");
          state_ = State::kChunkDataLF;
          break;
        case State::kChunkDataLF:
          if (c != '\n') return Fail(400, "missing CRLF after chunk data");
          state_ = State::kChunkSize;
          break;
        case State::kTrailerLine:
          if (++trailer_bytes_ > limits_.max_header_bytes) {
            return Fail(431, "trailer section too large");
          }
          trailer_line_.push_back(c);
          if (c == '\n') {
            if (Result r = EndTrailerLine(); r != Result::kNeedMore) return r;
          }
          break;
        default:  // not reached: the other states do not run here
          return Fail(400, "internal parser state");
      }
    }
  }
  return Result::kNeedMore;
}

// Trailer fields are checked like header fields and dropped: nothing here may change how the
// request is framed or routed (RFC 9110 §6.5.1).
RequestParser::Result RequestParser::EndTrailerLine() {
  const size_t n = trailer_line_.size();
  if (n < 2 || trailer_line_[n - 2] != '\r') return Fail(400, kBareLf);
  if (n == 2) return Complete(pos_);
  const char* p = trailer_line_.data();
  std::string_view name, value;
  if (const char* why = ReadFieldLine(&p, p + n, &name, &value)) return Fail(400, why);
  trailer_line_.clear();
  return Result::kNeedMore;
}

}  // namespace trpc::http::detail
