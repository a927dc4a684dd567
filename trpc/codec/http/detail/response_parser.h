#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/http/detail/chunked_decoder.h"
#include "trpc/codec/http/detail/head_scanner.h"
#include "trpc/codec/http/detail/http_syntax.h"

namespace trpc::http::detail {

/// Bounds on what one response may make the client buffer. docs/http.md ("Calling HTTP
/// servers") has a line for each; a response over one is an error and closes the connection.
struct ResponseLimits {
  size_t max_status_line = 8 * 1024;     // bytes of the status line incl. CRLF
  size_t max_header_bytes = 64 * 1024;   // status line + header fields + final CRLF (per head)
  size_t max_header_count = 100;         // header field lines (per head)
  uint64_t max_body_bytes = 10'000'000;  // Content-Length, de-chunked total, or read until close
  size_t max_chunk_line = 4 * 1024;      // a chunk-size line incl. extensions and CRLF
  size_t max_interim = 16;               // 1xx interim responses before the final one
  /// Every byte of one response as received: interim responses, head, body, chunk framing and
  /// trailers (the client's max_packet_size). No bound in streaming mode.
  size_t max_message_bytes = SIZE_MAX;
};

/// The status line and header section of one final response.
struct ResponseHead {
  int status = 0;             // 100..999 as sent; never 1xx here (interim ones are skipped)
  uint8_t version_minor = 1;  // 0 or 1 (HTTP/1.0, HTTP/1.1)
  std::string reason;         // the reason phrase as sent (may be empty)
  // In order; names as sent, values trimmed of OWS.
  std::vector<std::pair<std::string, std::string>> headers;
  /// The connection may carry the next response: 1.1 unless "Connection: close", 1.0 only with
  /// "keep-alive"; never when the body was delimited by the close.
  bool keep_alive = true;
  bool chunked = false;         // the body came chunked (dechunked_body() holds it)
  bool until_close = false;     // the body was delimited by the end of the connection
  uint64_t content_length = 0;  // the body's length as sent by Content-Length (0 otherwise)

  /// The value of the first field named `name` (ASCII case-insensitive), or null.
  const std::string* Find(std::string_view name) const;
  void Clear();
};

/// An incremental, strict HTTP/1.1 response parser (RFC 9112) for one client connection: it
/// frames one response at a time out of the connection's input and fills a ResponseHead. The
/// twin of RequestParser (request_parser.h), with the same contract and the same rules for what
/// is malformed (bare CR/LF, obs-fold, conflicting lengths, Content-Length together with
/// Transfer-Encoding, sloppy chunk sizes, ...): each is an error with a short reason, never a
/// guess, so that a client and a proxy in front of it never disagree on where a response ends.
///
/// How the body ends (RFC 9112 §6.3), in this order: a response to HEAD (set_head_request),
/// and every 204 and 304, has none whatever its fields say; Transfer-Encoding: chunked (the only
/// coding accepted); Content-Length; otherwise the body runs until the server closes the
/// connection (Parse with `eof`). Interim 1xx responses (100 Continue, 103 Early Hints) before
/// the final one are skipped (up to max_interim); 101 Switching Protocols is an error, since we
/// never ask for an upgrade.
///
/// Work is linear in the response's size however it is split across calls.
///
/// Thread contract: one connection's reader at a time (no internal locking). Owns its
/// ResponseHead and the de-chunked body; `in` stays the caller's.
class ResponseParser {
 public:
  enum class Result { kNeedMore, kComplete, kError };

  explicit ResponseParser(const ResponseLimits& limits = {});

  /// The response being parsed answers a HEAD request: it has no body. Set before its first
  /// Parse (Reset clears it).
  void set_head_request(bool head) { head_request_ = head; }
  /// Streaming mode, for a response whose body is consumed while it arrives (an endless watch
  /// stream): use ParseStream instead of Parse, and no total body limit applies (Content-Length,
  /// de-chunked total, until close); the head, chunk-line and trailer limits still do. Set
  /// before the first parse; Reset keeps it, like the limits.
  void set_streaming(bool streaming);
  bool streaming() const { return streaming_; }
  /// False: the head's fields and reason phrase are checked but not kept (head().headers and
  /// head().reason stay empty), for a caller that only frames responses. Default true.
  void set_keep_fields(bool keep) { keep_fields_ = keep; }

  /// `in` holds the connection's unconsumed bytes; the current response starts at offset 0.
  /// Between calls the caller only appends to `in`, until kComplete, when it removes exactly
  /// wire_size() bytes and calls Reset(). `eof`: the server has closed the connection, so `in`
  /// is all there will be: a body delimited by the close completes, and a response cut short is
  /// an error ("connection closed before the response was complete"). An empty `in` at a
  /// response boundary is kNeedMore even then (no response was pending). After kComplete or
  /// kError, further calls return the same result.
  Result Parse(const ChainBuffer& in, bool eof = false);

  /// Streaming mode's Parse. `*in` holds the connection's unconsumed bytes, as for Parse, but
  /// the parser consumes them itself: once the head is parsed it removes the head and every body
  /// byte it has decoded from the front of `*in`, and appends the body bytes decoded so far (de-
  /// chunked) to `*body`, on every call, complete or not. The caller appends the bytes it reads
  /// to `*in` between calls. On kComplete `*in` holds only what followed the response.
  /// head() is valid once the result is kComplete or `head_parsed()`. Same errors as Parse,
  /// except that no total body limit applies.
  Result ParseStream(ChainBuffer* in, bool eof, ChainBuffer* body);
  /// The final response's head has been parsed (in either mode).
  bool head_parsed() const { return state_ != State::kHead && state_ != State::kError; }

  const ResponseHead& head() const { return head_; }
  ResponseHead& head() { return head_; }
  /// Bytes of interim (1xx) responses before the final one; its head starts there.
  size_t head_offset() const { return head_offset_; }
  /// End of the final response's head (offset in `in`). A Content-Length or until-close body is
  /// bytes [head_end, wire_size) of `in`.
  size_t head_end() const { return head_end_; }
  /// After kComplete: all bytes of the response, interim responses and chunk framing included.
  size_t wire_size() const { return wire_size_; }
  /// After kComplete with head().chunked: the de-chunked body (the caller may move it out).
  ChainBuffer& dechunked_body() { return body_; }

  /// After kError: a short reason, e.g. "both Content-Length and Transfer-Encoding".
  const std::string& error() const { return error_; }

  /// Ready for the next response; keeps capacity and the limits.
  void Reset();
  void set_limits(const ResponseLimits& limits);
  const ResponseLimits& limits() const { return limits_; }

  /// Test hook: bytes examined since construction (the linear-work tests read it).
  size_t bytes_examined() const { return scanner_.examined(); }

 private:
  enum class State : uint8_t {
    kHead,     // looking for the blank line that ends a head
    kBody,     // waiting for head_end + content_length bytes
    kChunked,  // the chunked body, through chunked_
    kUntilClose,
    kComplete,
    kError,
  };

  Result ScanHead(const ChainBuffer& in);
  // The scanner's error as a reason.
  Result FailScan();
  Result ParseHead(const ChainBuffer& in);
  Result ParseStatusLine(std::string_view line);
  Result ParseFields(const char* p, const char* end);
  Result CheckFraming();
  Result RunChunked(const ChainBuffer& in);
  Result Complete(size_t wire_size);
  Result Fail(const char* why);
  Result FailOverMessage();
  void StartHead(size_t at);

  ResponseLimits limits_;
  size_t max_message_ = SIZE_MAX;  // limits_.max_message_bytes in effect (none when streaming)
  State state_ = State::kHead;
  ResponseHead head_;
  bool head_request_ = false;
  bool keep_fields_ = true;
  bool streaming_ = false;
  uint64_t stream_body_left_ = 0;  // streaming kBody: Content-Length bytes not yet handed out
  size_t head_offset_ = 0;
  size_t head_end_ = 0;
  size_t wire_size_ = 0;
  size_t interim_ = 0;  // 1xx responses skipped so far
  std::string error_;

  // The head scan (of the head starting at head_offset_), and the input position the body
  // carries on from.
  HeadScanner scanner_;
  HeadLimits head_limits_;
  std::vector<std::pair<std::string, std::string>> spare_headers_;

  // Head parse: the framing fields seen.
  FramingFields framing_;

  ChunkedDecoder chunked_;
  ChainBuffer body_;
};

}  // namespace trpc::http::detail
