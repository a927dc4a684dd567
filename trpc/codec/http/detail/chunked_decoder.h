#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/http/detail/span_cursor.h"

namespace trpc::http::detail {

/// The chunk extensions of one chunked body together (the bytes after each ';' up to its line's
/// CR), however many chunks carry them: more is refused with 413. Extensions mean nothing to us
/// (they are checked and dropped), and without a total a body of 1-byte chunks that each carry
/// an extension costs thousands of wire bytes per body byte. Node.js refuses the same way, at
/// the same 16 KiB (HPE_CHUNK_EXTENSIONS_OVERFLOW).
inline constexpr size_t kMaxChunkExtensionBytes = 16 * 1024;

/// Bounds on one chunked body; the statuses a request over them gets are in docs/http.md.
struct ChunkedLimits {
  uint64_t max_body_bytes = 8u << 20;    // the de-chunked total -> 413
  size_t max_chunk_line = 4 * 1024;      // a chunk-size line incl. extensions and CRLF -> 400
  size_t max_trailer_bytes = 64 * 1024;  // trailer fields + the final CRLF -> 431
};

/// An incremental decoder of the chunked transfer coding (RFC 9112 §7.1):
///
///   chunked-body = *chunk last-chunk trailer-section CRLF
///   chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
///
/// Strict like the parsers that use it (request_parser.h, response_parser.h): a chunk size that
/// is not plain hex, a bare CR or LF, a missing CRLF after the data, a control byte in an
/// extension or a malformed trailer field is an error with a reason, never a guess. Trailer
/// fields are checked and dropped: nothing in them may change how a message is framed.
///
/// Framing bytes go through the state machine one at a time; chunk data is appended to the body
/// in runs. Each byte is examined once however the input is split.
///
/// Thread contract: one parser's, no internal locking.
class ChunkedDecoder {
 public:
  enum class Result { kNeedMore, kComplete, kError };

  explicit ChunkedDecoder(const ChunkedLimits& limits = {}) : limits_(limits) {}

  /// Decodes the next `n` bytes of the coded body (those after the previous call's), appending
  /// chunk data to `body`. `*used` = bytes taken: all `n` on kNeedMore, up to and including the
  /// final CRLF on kComplete, up to and including the bad byte on kError. After kComplete or
  /// kError, further calls return the same result and take nothing.
  Result Decode(const char* p, size_t n, size_t* used, ChainBuffer* body);
  /// Decode() over the bytes of `in` from offset `*pos` up to offset `end` (at most in.size()),
  /// a span at a time (found through `cursor`); `*pos` moves past the bytes taken.
  Result DecodeFrom(const ChainBuffer& in, size_t end, SpanCursor* cursor, size_t* pos,
                    ChainBuffer* body);

  /// After kError: 400, 413 or 431, and a short reason.
  int error_status() const { return error_status_; }
  const char* error() const { return error_; }

  /// Ready for the next body; keeps the limits.
  void Reset();
  void set_limits(const ChunkedLimits& limits) { limits_ = limits; }

 private:
  enum class State : uint8_t {
    kChunkSize,    // hex digits of a chunk-size
    kChunkExt,     // after ';' up to the CR of the chunk-size line
    kChunkSizeLF,  // the LF after that CR
    kChunkData,    // chunk data
    kChunkDataCR,  // the CRLF after chunk data
    kChunkDataLF,
    kTrailerLine,  // a trailer field line, or the final CRLF
    kComplete,
    kError,
  };

  Result Fail(int status, const char* why);
  Result EndTrailerLine();

  ChunkedLimits limits_;
  State state_ = State::kChunkSize;
  uint64_t chunk_left_ = 0;  // chunk-size being read, then the data bytes still to come
  uint32_t chunk_digits_ = 0;
  size_t chunk_line_ = 0;       // bytes of the current chunk-size line so far
  size_t extension_bytes_ = 0;  // chunk extensions of this body so far
  uint64_t body_total_ = 0;     // de-chunked bytes so far (chunk sizes announced)
  size_t trailer_bytes_ = 0;    // trailer section so far
  std::string trailer_line_;    // the trailer field line being read, CRLF included
  int error_status_ = 0;
  const char* error_ = "";
};

}  // namespace trpc::http::detail
