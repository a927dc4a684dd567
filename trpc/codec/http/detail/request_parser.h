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
#include "trpc/codec/http/http_method.h"

namespace trpc::http::detail {

/// Bounds on what one request may make the server buffer. Each has a doc line in docs/http.md
/// ("Request parsing and limits") and the status a request over it gets.
struct ParserLimits {
  size_t max_request_line = 8 * 1024;   // bytes of the request line incl. CRLF -> 414
  size_t max_header_bytes = 64 * 1024;  // request line + header fields + final CRLF -> 431
  size_t max_header_count = 100;        // header field lines -> 431
  size_t max_body_bytes = 8u << 20;     // Content-Length, or the de-chunked total -> 413
  size_t max_chunk_line = 4 * 1024;     // a chunk-size line incl. extensions and CRLF -> 400
  /// Every byte of one request as sent: empty lines before it, head, body, chunk framing and
  /// trailers (the server's max_packet_size) -> 413 (414/431 while in the request line/head).
  size_t max_message_bytes = SIZE_MAX;
};

// One enum for the parser and the request it fills (http_method.h).
using Method = HttpMethod;

/// "GET", "HEAD", ...
std::string_view MethodName(Method m);

/// The parsed request line and header section of one request.
struct RequestHead {
  Method method = Method::kGet;
  std::string target;         // the request-target as sent
  std::string path;           // origin-form path (absolute-form: its path part; "*" for OPTIONS *)
  std::string query;          // after '?', without it; empty if none. Neither is percent-decoded.
  uint8_t version_minor = 1;  // 0 or 1 (HTTP/1.0, HTTP/1.1)
  // In order; names as sent, values trimmed of OWS.
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = true;        // 1.1: unless "Connection: close"; 1.0: only with "keep-alive"
  bool expect_continue = false;  // "Expect: 100-continue" on an HTTP/1.1 request
  bool chunked = false;          // Transfer-Encoding: chunked
  uint64_t content_length = 0;   // 0 when absent or chunked

  /// The value of the first field named `name` (ASCII case-insensitive), or null.
  const std::string* Find(std::string_view name) const;
  /// Empties every field; the strings and the vector keep their capacity.
  void Clear();
};

/// An incremental, strict HTTP/1.1 request parser (RFC 9112) for one connection: it frames one
/// request at a time out of the connection's input buffer and fills a RequestHead.
///
/// Strict on purpose: framing disagreements between us and a proxy in front of us are how
/// requests get smuggled, so every ambiguity (bare CR/LF, obs-fold, Content-Length together with
/// Transfer-Encoding, conflicting lengths, sloppy chunk sizes, ...) is an error with a status and
/// a short reason, never a guess. Peer bytes are never asserted on.
///
/// Work is linear in the request's size however it is split across calls: each call examines only
/// the bytes appended since the previous call (the head is parsed once, when its blank line has
/// arrived).
///
/// Thread contract: one connection's reader at a time (no internal locking). Owns its RequestHead
/// and the de-chunked body; `in` stays the caller's.
class RequestParser {
 public:
  enum class Result { kNeedMore, kComplete, kError };

  explicit RequestParser(const ParserLimits& limits = {});

  /// `in` holds the connection's unconsumed bytes; the current request starts at offset 0. Between
  /// calls the caller only appends to `in`, until kComplete, when it removes exactly wire_size()
  /// bytes and calls Reset(). After kComplete or kError, further calls return the same result.
  Result Parse(const ChainBuffer& in);

  /// The head has been parsed (also while the body is still arriving: kNeedMore). Used to send
  /// "100 Continue" once.
  bool head_complete() const { return head_done_; }
  const RequestHead& head() const { return head_; }
  RequestHead& head() { return head_; }
  /// Bytes of the head: empty lines tolerated before the request line, request line, header
  /// fields and the blank line. A Content-Length body is bytes [head_size, wire_size) of `in`.
  size_t head_size() const { return head_size_; }
  /// After kComplete: the whole request's bytes (head + body as sent, chunk framing and trailers
  /// included).
  size_t wire_size() const { return wire_size_; }
  /// After kComplete with head().chunked: the de-chunked body (the caller may move it out).
  ChainBuffer& dechunked_body() { return body_; }

  /// After kError: 400, 413, 414, 431, 501 or 505.
  int error_status() const { return error_status_; }
  /// After kError: a short reason, e.g. "duplicate Content-Length with different values".
  const std::string& error() const { return error_; }

  /// Ready for the next request; keeps capacity.
  void Reset();
  /// Takes effect at the next request (call it after Reset, or before the first Parse).
  void set_limits(const ParserLimits& limits);
  const ParserLimits& limits() const { return limits_; }

  /// Test hook: bytes examined since construction (the linear-work tests read it).
  size_t bytes_examined() const { return scanner_.examined(); }

 private:
  enum class State : uint8_t {
    kHead,     // looking for the blank line that ends the head
    kBody,     // waiting for head_size + content_length bytes
    kChunked,  // the chunked body, through chunked_
    kComplete,
    kError,
  };

  Result ScanHead(const ChainBuffer& in);
  // The scanner's error as a status and a reason.
  Result FailScan();
  Result ParseHead(const ChainBuffer& in);
  Result ParseRequestLine(std::string_view line);
  Result ParseFields(const char* p, const char* end);
  Result CheckFraming();
  Result RunChunked(const ChainBuffer& in);
  Result Complete(size_t wire_size);
  Result Fail(int status, const char* why);
  Result FailOverMessage(int status);

  ParserLimits limits_;
  State state_ = State::kHead;
  RequestHead head_;
  bool head_done_ = false;
  size_t head_size_ = 0;
  size_t wire_size_ = 0;
  int error_status_ = 0;
  std::string error_;

  // The head scan, and the input position the body carries on from.
  HeadScanner scanner_;
  HeadLimits head_limits_;
  // The previous request's fields, whose strings ParseFields assigns into (no allocation for
  // values that fit the capacity they already have).
  std::vector<std::pair<std::string, std::string>> spare_headers_;

  // Head parse: the framing headers seen.
  uint32_t host_count_ = 0;
  FramingFields framing_;

  // Chunked body.
  ChunkedDecoder chunked_;
  bool state_chunked_ = false;  // chunked_ has been used since the last Reset
  ChainBuffer body_;
};

}  // namespace trpc::http::detail
