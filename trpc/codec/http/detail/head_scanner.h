#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/http/detail/span_cursor.h"

namespace trpc::http::detail {

/// The bounds a head scan enforces; each parser fills them from its own limits.
struct HeadLimits {
  size_t max_first_line = 8 * 1024;     // request or status line, incl. CRLF
  size_t max_header_bytes = 64 * 1024;  // first line + field lines + the blank line
  size_t max_header_count = 100;        // field lines
  size_t max_message_bytes = SIZE_MAX;  // every byte from offset 0 of the input
  uint8_t max_empty_lines = 0;          // empty lines tolerated before the first line
};

/// Finds the blank line that ends an HTTP/1.1 head (RFC 9112 §2.1), for both parsers
/// (request_parser.h, response_parser.h): every line must end with CRLF, and the first line,
/// the head's bytes and its field lines are bounded (HeadLimits). Each byte is examined once
/// however the input is split across calls: the scan resumes where it stopped. The LF of a line
/// is never searched for beyond where a bound would be exceeded, so a verdict is the same
/// however the bytes arrive. What the lines say (bare CR, obs-fold, field syntax) is left to the
/// head parse (http_syntax.h), which sees the head once, in one piece (HeadBytes).
///
/// It also holds the parser's input position (pos, cursor, bytes examined), which the body
/// phases carry on from the head's end.
///
/// Thread contract: its parser's (no internal locking).
class HeadScanner {
 public:
  enum class Result : uint8_t { kNeedMore, kHead, kError };
  enum class Error : uint8_t {
    kNone,
    kOverMessage,       // max_message_bytes reached before the head ended
    kFirstLineTooLong,  // max_first_line
    kHeadTooLarge,      // max_header_bytes
    kBareLf,            // a line not ended by CRLF
    kEmptyLine,         // more than max_empty_lines before the first line
    kTooManyFields,     // max_header_count
  };

  /// `in` holds the message from offset 0; between calls the caller only appends to it. kHead:
  /// the blank line ends at head_end(), the position. kError: error() says which bound or rule.
  Result Scan(const ChainBuffer& in, const HeadLimits& limits);
  /// The next head starts at `at`, the position (after an interim response).
  void StartHead(size_t at) {
    line_start_ = head_start_ = at;
    first_line_end_ = 0;
    field_lines_ = 0;
    empty_lines_ = 0;
  }
  /// Ready for the next message at offset 0 of the input.
  void Reset() {
    pos_ = 0;
    cursor_.Reset();
    cr_last_ = false;
    StartHead(0);
  }

  /// No first line yet (empty lines may have come).
  bool in_first_line() const { return first_line_end_ == 0; }
  /// Offset of the first line (after any tolerated empty lines).
  size_t head_start() const { return head_start_; }
  /// Just past the first line's CRLF (0 while in_first_line()).
  size_t first_line_end() const { return first_line_end_; }
  /// After kHead: just past the blank line.
  size_t head_end() const { return pos_; }
  Error error() const { return error_; }

  /// After kHead: bytes [head_start, head_end) of `in` in one piece: in place when the first
  /// span holds them (the common case), else copied. Counts them as examined (the head parse).
  const char* HeadBytes(const ChainBuffer& in) {
    examined_ += pos_ - head_start_;
    const std::string_view span = in.Span(0);
    return span.size() >= pos_ ? span.data() + head_start_ : CopyHead(in);
  }

  /// The input position: the next byte to examine, and the span holding it. The body phases
  /// move them on (ChunkedDecoder::DecodeFrom).
  size_t& pos() { return pos_; }
  SpanCursor& cursor() { return cursor_; }
  /// Test hook: bytes examined since construction (the linear-work tests read it).
  size_t examined() const { return examined_; }
  void AddExamined(size_t n) { examined_ += n; }

 private:
  Result Fail(Error e) {
    error_ = e;
    return Result::kError;
  }
  const char* CopyHead(const ChainBuffer& in);
  static size_t LineLimit(const HeadLimits& limits, size_t line_start, size_t head_start,
                          bool first_line);

  size_t pos_ = 0;
  SpanCursor cursor_;
  size_t examined_ = 0;
  bool cr_last_ = false;  // the byte at pos_ - 1 is a CR (read when a span starts with LF)
  uint8_t empty_lines_ = 0;
  Error error_ = Error::kNone;
  size_t line_start_ = 0;  // offset of the line being scanned
  size_t head_start_ = 0;
  size_t first_line_end_ = 0;
  size_t field_lines_ = 0;
  std::string scratch_;  // the head, when it spans blocks
};

}  // namespace trpc::http::detail
