#include "trpc/codec/http/detail/request_parser.h"

#include <algorithm>

#include "trpc/codec/http/detail/http_syntax.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace trpc::http::detail {

namespace {

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

struct MethodEntry {
  std::string_view name;
  Method method;
};
constexpr MethodEntry kMethods[] = {
    {"GET", Method::kGet},         {"HEAD", Method::kHead},     {"POST", Method::kPost},
    {"PUT", Method::kPut},         {"DELETE", Method::kDelete}, {"PATCH", Method::kPatch},
    {"OPTIONS", Method::kOptions}, {"TRACE", Method::kTrace},   {"CONNECT", Method::kConnect},
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

RequestParser::RequestParser(const ParserLimits& limits) { set_limits(limits); }

void RequestParser::set_limits(const ParserLimits& limits) {
  limits_ = limits;
  // RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request-line.
  head_limits_ = HeadLimits{limits.max_request_line, limits.max_header_bytes,
                            limits.max_header_count, limits.max_message_bytes, 2};
  chunked_.set_limits(
      ChunkedLimits{limits.max_body_bytes, limits.max_chunk_line, limits.max_header_bytes});
}

void RequestParser::Reset() {
  state_ = State::kHead;
  spare_headers_.swap(head_.headers);  // the strings keep their buffers for the next request
  head_.Clear();
  head_done_ = false;
  head_size_ = wire_size_ = 0;
  error_status_ = 0;
  error_.clear();
  scanner_.Reset();
  host_count_ = 0;
  framing_ = FramingFields();
  if (state_chunked_) chunked_.Reset();
  state_chunked_ = false;
  if (!body_.empty()) body_.Clear();
}

RequestParser::Result RequestParser::Fail(int status, const char* why) {
  state_ = State::kError;
  error_status_ = status;
  error_.assign(why);
  return Result::kError;
}

// Over max_message_bytes: `status` says where the request stood (414 in the request line, 431 in
// the head, 413 in the body).
RequestParser::Result RequestParser::FailOverMessage(int status) {
  Fail(status, "");
  error_ = "request larger than max_packet_size (" + std::to_string(limits_.max_message_bytes) +
           " bytes)";
  return Result::kError;
}

RequestParser::Result RequestParser::Complete(size_t wire_size) {
  state_ = State::kComplete;
  wire_size_ = wire_size;
  return Result::kComplete;
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

RequestParser::Result RequestParser::ScanHead(const ChainBuffer& in) {
  const HeadScanner::Result r = scanner_.Scan(in, head_limits_);
  if (r == HeadScanner::Result::kHead) {
    head_size_ = scanner_.head_end();  // within max_header_bytes
    return ParseHead(in);
  }
  return r == HeadScanner::Result::kNeedMore ? Result::kNeedMore : FailScan();
}

RequestParser::Result RequestParser::FailScan() {
  switch (scanner_.error()) {
    case HeadScanner::Error::kOverMessage:
      return FailOverMessage(scanner_.in_first_line() ? 414 : 431);
    case HeadScanner::Error::kFirstLineTooLong:
      return Fail(414, "request line too long");
    case HeadScanner::Error::kBareLf:
      return Fail(400, kBareLf);
    case HeadScanner::Error::kEmptyLine:
      return Fail(400, "more than 2 empty lines before the request line");
    case HeadScanner::Error::kTooManyFields:
      return Fail(431, "too many header fields");
    default:
      return Fail(431, "header section too large");
  }
}

RequestParser::Result RequestParser::ParseHead(const ChainBuffer& in) {
  head_done_ = true;
  const char* data = scanner_.HeadBytes(in);
  // The scan has checked that every LF ends a CRLF and that the last line is empty.
  const size_t line_end = scanner_.first_line_end() - scanner_.head_start();
  Result r = ParseRequestLine(std::string_view(data, line_end - 2));
  if (r != Result::kNeedMore) return r;
  r = ParseFields(data + line_end, data + (head_size_ - scanner_.head_start()) - 2);
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
    if (version.find(" HTTP/") != std::string_view::npos)
      return Fail(400, "space in request-target");
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
    if (scheme == std::string_view::npos || !(EqualsLower(target.substr(0, scheme), "http") ||
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

    switch (name.size()) {
      case 4:
        if (EqualsLower(name, "host")) ++host_count_;
        break;
      case 6:
        if (EqualsLower(name, "expect") && EqualsLower(value, "100-continue")) {
          head_.expect_continue = true;
        }
        break;
      default:
        if (const char* why = framing_.Add(name, value)) return Fail(400, why);
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
  if (framing_.te.count > 0) {
    if (!http11) return Fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    bool unsupported = false;
    if (const char* why = framing_.CheckChunked(&unsupported)) {
      return Fail(unsupported ? 501 : 400, why);
    }
    head_.chunked = true;
  }
  head_.content_length = framing_.content_length;
  if (head_.content_length > limits_.max_body_bytes) {
    return Fail(413, "Content-Length exceeds the body limit");
  }
  // (The scan kept the head within max_message_bytes.)
  if (head_.content_length > limits_.max_message_bytes - head_size_) return FailOverMessage(413);
  head_.keep_alive = framing_.conn.Persistent(http11);
  head_.expect_continue = head_.expect_continue && http11;
  if (head_.chunked) {
    state_ = State::kChunked;
    state_chunked_ = true;
    return Result::kNeedMore;
  }
  if (head_.content_length > 0) {
    state_ = State::kBody;
    return Result::kNeedMore;
  }
  return Complete(head_size_);
}

// The chunked body, through the decoder, which reads no further than max_message_bytes: a body
// not complete there is over it, whatever the bytes after would say.
RequestParser::Result RequestParser::RunChunked(const ChainBuffer& in) {
  size_t& pos = scanner_.pos();
  const size_t from = pos;
  const size_t end = std::min(in.size(), limits_.max_message_bytes);
  const ChunkedDecoder::Result r = chunked_.DecodeFrom(in, end, &scanner_.cursor(), &pos, &body_);
  scanner_.AddExamined(pos - from);
  if (r == ChunkedDecoder::Result::kComplete) return Complete(pos);
  if (r == ChunkedDecoder::Result::kError) return Fail(chunked_.error_status(), chunked_.error());
  if (in.size() > end) return FailOverMessage(413);
  return Result::kNeedMore;
}

}  // namespace trpc::http::detail
