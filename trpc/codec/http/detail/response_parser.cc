#include "trpc/codec/http/detail/response_parser.h"

#include <algorithm>

namespace trpc::http::detail {

namespace {
constexpr const char* kCutShort = "connection closed before the response was complete";
}  // namespace

const std::string* ResponseHead::Find(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

void ResponseHead::Clear() {
  status = 0;
  version_minor = 1;
  reason.clear();
  headers.clear();
  keep_alive = true;
  chunked = false;
  until_close = false;
  content_length = 0;
}

ResponseParser::ResponseParser(const ResponseLimits& limits) { set_limits(limits); }

void ResponseParser::set_limits(const ResponseLimits& limits) {
  limits_ = limits;
  // A trailer section is bounded like a header section. A stream has no total.
  const uint64_t max_body = streaming_ ? UINT64_MAX : limits.max_body_bytes;
  chunked_.set_limits(ChunkedLimits{max_body, limits.max_chunk_line, limits.max_header_bytes});
  // At least 1: a response has a byte, and an empty input must not be over the bound.
  max_message_ = streaming_ ? SIZE_MAX : std::max<size_t>(limits.max_message_bytes, 1);
  head_limits_ = HeadLimits{limits.max_status_line, limits.max_header_bytes,
                            limits.max_header_count, max_message_, 0};
}

void ResponseParser::set_streaming(bool streaming) {
  streaming_ = streaming;
  set_limits(limits_);
}

void ResponseParser::StartHead(size_t at) {
  // The fields' strings keep their buffers for the next head (ParseFields takes them back).
  for (auto& field : head_.headers) spare_headers_.push_back(std::move(field));
  head_.Clear();
  head_offset_ = at;
  head_end_ = 0;
  scanner_.StartHead(at);
  framing_ = FramingFields();
}

void ResponseParser::Reset() {
  state_ = State::kHead;
  scanner_.Reset();
  StartHead(0);
  head_request_ = false;
  wire_size_ = 0;
  interim_ = 0;
  error_.clear();
  chunked_.Reset();
  if (!body_.empty()) body_.Clear();
  stream_body_left_ = 0;
}

ResponseParser::Result ResponseParser::Fail(const char* why) {
  state_ = State::kError;
  error_.assign(why);
  return Result::kError;
}

ResponseParser::Result ResponseParser::FailOverMessage() {
  Fail("");
  error_ = "response larger than max_packet_size (" + std::to_string(max_message_) + " bytes)";
  return Result::kError;
}

ResponseParser::Result ResponseParser::Complete(size_t wire_size) {
  state_ = State::kComplete;
  wire_size_ = wire_size;
  return Result::kComplete;
}

ResponseParser::Result ResponseParser::Parse(const ChainBuffer& in, bool eof) {
  Result r = Result::kNeedMore;
  switch (state_) {
    case State::kComplete:
      return Result::kComplete;
    case State::kError:
      return Result::kError;
    case State::kHead:
      r = ScanHead(in);
      if (r != Result::kNeedMore) return r;
      if (state_ == State::kHead) return eof && !in.empty() ? Fail(kCutShort) : r;
      break;
    default:
      break;
  }
  switch (state_) {
    case State::kBody: {
      const size_t end = head_end_ + head_.content_length;  // content_length <= max_body_bytes
      if (in.size() >= end) return Complete(end);
      break;
    }
    case State::kChunked:
      r = RunChunked(in);
      if (r != Result::kNeedMore) return r;
      break;
    case State::kUntilClose:
      if (in.size() - head_end_ > limits_.max_body_bytes) {
        return Fail("body read until close exceeds the body limit");
      }
      if (in.size() > max_message_) return FailOverMessage();
      if (eof) return Complete(in.size());
      break;
    default:  // a body-less response completed in ScanHead
      return r;
  }
  return eof ? Fail(kCutShort) : Result::kNeedMore;
}

// The body states of Parse, re-done for a body that is handed out as it arrives: what has been
// decoded leaves `*in` at once, so offsets restart at 0 after every call (the scanner's position
// and cursor).
ResponseParser::Result ResponseParser::ParseStream(ChainBuffer* in, bool eof, ChainBuffer* body) {
  switch (state_) {
    case State::kComplete:
      return Result::kComplete;
    case State::kError:
      return Result::kError;
    case State::kHead: {
      const Result r = ScanHead(*in);
      if (r == Result::kError) return r;
      if (state_ == State::kHead) return eof && !in->empty() ? Fail(kCutShort) : r;
      // The head is parsed (and copied into head_): drop it, and start the body at offset 0.
      in->Skip(head_end_);
      scanner_.pos() = 0;
      scanner_.cursor().Reset();
      head_offset_ = head_end_ = 0;
      if (state_ == State::kComplete) {
        wire_size_ = 0;
        return r;
      }
      if (state_ == State::kBody) stream_body_left_ = head_.content_length;
      break;
    }
    default:
      break;
  }
  switch (state_) {
    case State::kBody: {
      const uint64_t take = std::min<uint64_t>(in->size(), stream_body_left_);
      scanner_.AddExamined(take);
      body->Append(in->Cut(take));
      stream_body_left_ -= take;
      if (stream_body_left_ == 0) return Complete(0);
      break;
    }
    case State::kChunked: {
      const Result r = RunChunked(*in);
      in->Skip(scanner_.pos());
      scanner_.pos() = 0;
      scanner_.cursor().Reset();
      if (!body_.empty()) body->Append(std::move(body_));
      if (r == Result::kComplete) wire_size_ = 0;
      if (r != Result::kNeedMore) return r;
      break;
    }
    case State::kUntilClose:
      scanner_.AddExamined(in->size());
      body->Append(std::move(*in));
      if (eof) return Complete(0);
      break;
    default:
      return Result::kNeedMore;
  }
  return eof ? Fail(kCutShort) : Result::kNeedMore;
}

ResponseParser::Result ResponseParser::ScanHead(const ChainBuffer& in) {
  for (;;) {
    const HeadScanner::Result r = scanner_.Scan(in, head_limits_);
    if (r == HeadScanner::Result::kNeedMore) return Result::kNeedMore;
    if (r == HeadScanner::Result::kError) return FailScan();
    head_end_ = scanner_.head_end();  // within max_header_bytes
    const Result parsed = ParseHead(in);
    // An interim response: the final one's head follows (ParseHead has started it), bounded
    // by the whole response's limit from where it starts.
    if (parsed != Result::kNeedMore || state_ != State::kHead) return parsed;
    if (head_end_ >= max_message_) return FailOverMessage();
  }
}

ResponseParser::Result ResponseParser::FailScan() {
  switch (scanner_.error()) {
    case HeadScanner::Error::kOverMessage:
      return FailOverMessage();
    case HeadScanner::Error::kFirstLineTooLong:
      return Fail("status line too long");
    case HeadScanner::Error::kBareLf:
      return Fail(kBareLf);
    case HeadScanner::Error::kEmptyLine:
      return Fail("empty line where the status line belongs");
    case HeadScanner::Error::kTooManyFields:
      return Fail("too many header fields");
    default:
      return Fail("header section too large");
  }
}

ResponseParser::Result ResponseParser::ParseHead(const ChainBuffer& in) {
  const size_t head_size = head_end_ - head_offset_;
  const char* data = scanner_.HeadBytes(in);
  // The scan has checked that every LF ends a CRLF and that the last line is empty.
  const size_t status_line = scanner_.first_line_end() - head_offset_;
  Result r = ParseStatusLine(std::string_view(data, status_line - 2));
  if (r != Result::kNeedMore) return r;
  r = ParseFields(data + status_line, data + head_size - 2);
  if (r != Result::kNeedMore) return r;
  if (head_.status < 200) {
    // 1xx: interim (RFC 9110 §15.2); the final response follows on the same connection.
    if (head_.status == 101) return Fail("101 Switching Protocols, but no upgrade was asked for");
    if (++interim_ > limits_.max_interim) return Fail("too many interim (1xx) responses");
    StartHead(head_end_);
    return Result::kNeedMore;
  }
  return CheckFraming();
}

// status-line = HTTP-version SP status-code SP [ reason-phrase ] (RFC 9112 §4). A line that
// ends right after the status code is accepted too (the reason is optional in practice).
ResponseParser::Result ResponseParser::ParseStatusLine(std::string_view line) {
  if (line.find('\r') != std::string_view::npos) return Fail(kBareCr);
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (line.size() < 8 || line.substr(0, 5) != "HTTP/" || !digit(line[5]) || line[6] != '.' ||
      !digit(line[7])) {
    return Fail("malformed HTTP version");
  }
  if (line[5] != '1' || line[7] > '1') return Fail("HTTP version not supported");
  head_.version_minor = static_cast<uint8_t>(line[7] - '0');
  if (line.size() < 12 || line[8] != ' ' || !digit(line[9]) || !digit(line[10]) ||
      !digit(line[11]) || line[9] == '0') {
    return Fail("malformed status code");
  }
  head_.status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
  if (line.size() == 12) return Result::kNeedMore;
  if (line[12] != ' ') return Fail("malformed status code");
  const std::string_view reason = line.substr(13);
  if (SkipFieldValue(reason.data(), reason.data() + reason.size()) !=
      reason.data() + reason.size()) {
    return Fail("control character in reason phrase");
  }
  if (keep_fields_) head_.reason.assign(reason);
  return Result::kNeedMore;
}

// Field lines from `p` up to `end`, where the blank line's CRLF stands.
ResponseParser::Result ResponseParser::ParseFields(const char* p, const char* end) {
  while (p < end) {
    std::string_view name, value;
    if (const char* why = ReadFieldLine(&p, end + 2, &name, &value)) return Fail(why);
    if (const char* why = framing_.Add(name, value)) return Fail(why);
    if (!keep_fields_) continue;
    if (!spare_headers_.empty()) {  // reuse the strings of an earlier response
      auto field = std::move(spare_headers_.back());
      spare_headers_.pop_back();
      field.first.assign(name);
      field.second.assign(value);
      head_.headers.push_back(std::move(field));
    } else {
      head_.headers.emplace_back(name, value);
    }
  }
  return Result::kNeedMore;
}

// How the body ends (RFC 9112 §6.3), and whether the connection persists.
ResponseParser::Result ResponseParser::CheckFraming() {
  const bool http11 = head_.version_minor == 1;
  head_.keep_alive = framing_.conn.Persistent(http11);
  // A HEAD response, 204 and 304 end at their head; their length fields describe another
  // message (the GET's, the cached one's) and frame nothing here.
  if (head_request_ || head_.status == 204 || head_.status == 304) return Complete(head_end_);
  if (framing_.te.count > 0) {
    if (!http11) return Fail("Transfer-Encoding in an HTTP/1.0 response");
    // (Codings other than chunked could only be read until the close, and we cannot undo them.)
    bool unsupported = false;
    if (const char* why = framing_.CheckChunked(&unsupported)) return Fail(why);
    head_.chunked = true;
    state_ = State::kChunked;
    return Result::kNeedMore;
  }
  if (framing_.has_content_length) {
    head_.content_length = framing_.content_length;
    if (!streaming_ && head_.content_length > limits_.max_body_bytes) {
      return Fail("Content-Length exceeds the body limit");
    }
    // (The scan kept the head within max_message_.)
    if (head_.content_length > max_message_ - head_end_) return FailOverMessage();
    if (head_.content_length == 0) return Complete(head_end_);
    state_ = State::kBody;
    return Result::kNeedMore;
  }
  head_.until_close = true;
  head_.keep_alive = false;
  state_ = State::kUntilClose;
  return Result::kNeedMore;
}

// The chunked body, through the decoder, which reads no further than max_message_: a body not
// complete there is over it, whatever the bytes after would say.
ResponseParser::Result ResponseParser::RunChunked(const ChainBuffer& in) {
  size_t& pos = scanner_.pos();
  const size_t from = pos;
  const size_t end = std::min(in.size(), max_message_);
  const ChunkedDecoder::Result r = chunked_.DecodeFrom(in, end, &scanner_.cursor(), &pos, &body_);
  scanner_.AddExamined(pos - from);
  if (r == ChunkedDecoder::Result::kComplete) return Complete(pos);
  if (r == ChunkedDecoder::Result::kError) return Fail(chunked_.error());
  if (in.size() > end) return FailOverMessage();
  return Result::kNeedMore;
}

}  // namespace trpc::http::detail
