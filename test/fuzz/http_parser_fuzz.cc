// Fuzz target: peer bytes fed to the HTTP/1.1 request parser the way a connection feeds them
// (pipelined requests, arbitrary read sizes, Parse / cut wire_size / Reset).
//
// Input: byte 0 picks the limits (bits 6-7) and seeds the read sizes (bits 0-5); the rest is the
// stream. The stream is parsed three ways: whole, one byte per call with every byte in its own
// buffer span, and in pseudo-random reads. Any of these aborts (they cannot be true of a correct
// parser):
//   - the three ways disagree on any request's result, head, body, sizes or error;
//   - wire_size() exceeds the bytes buffered, or head_size() exceeds wire_size();
//   - error_status() outside {400, 413, 414, 431, 501, 505};
//   - a body longer than max_body_bytes, or a Content-Length body whose size is not the length;
//   - more than 2 examined bytes per byte fed (the no-re-scan guarantee);
//   - held bytes over the bound: a request still incomplete (kNeedMore) with more than
//     max_message_bytes buffered, a complete one whose wire_size() exceeds it, or a de-chunked
//     body larger than the wire bytes it came from. The bound is exact: the parser never needs a
//     byte past max_message_bytes to refuse a request.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/codec/http/detail/request_parser.h"

namespace {

using trpc::ChainBuffer;
using trpc::http::detail::ParserLimits;
using trpc::http::detail::RequestParser;
using Result = RequestParser::Result;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// One request's verdict: everything a connection would act on.
struct Verdict {
  Result result;
  int status;
  std::string error;
  std::string target, path, query;
  int method, minor;
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive, expect_continue, chunked;
  uint64_t content_length;
  size_t head_size, wire_size;
  std::string body;
  bool operator==(const Verdict&) const = default;
};

struct Run {
  std::vector<Verdict> verdicts;
  bool head_complete_at_end = false;  // of the unfinished request, once every byte is in
  bool operator==(const Run&) const = default;
};

Verdict Record(Result r, RequestParser& p, const ChainBuffer& in, const ParserLimits& limits) {
  Verdict v{};
  v.result = r;
  if (r == Result::kError) {
    v.status = p.error_status();
    v.error = p.error();
    const int s = v.status;
    Check(s == 400 || s == 413 || s == 414 || s == 431 || s == 501 || s == 505);
    Check(!v.error.empty());
    return v;
  }
  const auto& h = p.head();
  Check(p.head_complete());
  Check(p.wire_size() <= in.size());
  Check(p.head_size() > 0 && p.head_size() <= p.wire_size());
  v.target = h.target;
  v.path = h.path;
  v.query = h.query;
  v.method = static_cast<int>(h.method);
  v.minor = h.version_minor;
  Check(v.minor == 0 || v.minor == 1);
  v.headers = h.headers;
  v.keep_alive = h.keep_alive;
  v.expect_continue = h.expect_continue;
  v.chunked = h.chunked;
  v.content_length = h.content_length;
  v.head_size = p.head_size();
  v.wire_size = p.wire_size();
  if (h.chunked) {
    Check(h.content_length == 0);
    v.body = p.dechunked_body().ToString();
  } else {
    Check(p.wire_size() - p.head_size() == h.content_length);
    v.body = in.ToString().substr(p.head_size(), p.wire_size() - p.head_size());
  }
  Check(v.body.size() <= limits.max_body_bytes);
  Check(p.wire_size() <= limits.max_message_bytes);
  return v;
}

// Feeds `stream` in reads of the sizes `next_read()` returns, parsing after each read.
template <typename NextRead>
Run Feed(std::string_view stream, const ParserLimits& limits, bool fragment, NextRead next_read) {
  RequestParser p(limits);
  ChainBuffer in, spacer;
  Run run;
  size_t off = 0;
  while (off < stream.size()) {
    const size_t n = std::min(next_read(), stream.size() - off);
    in.Append(stream.data() + off, n);
    if (fragment) spacer.Append("-", 1);  // the next read lands in a new span
    off += n;
    for (;;) {
      const Result r = p.Parse(in);
      Check(p.bytes_examined() <= 2 * off);
      // What a connection holds for the request being read: its bytes in `in`, and the body
      // de-chunked so far.
      Check(p.dechunked_body().size() <= in.size());
      if (r == Result::kNeedMore) {
        Check(in.size() <= limits.max_message_bytes);
        break;
      }
      run.verdicts.push_back(Record(r, p, in, limits));
      if (r == Result::kError) return run;
      in.Skip(p.wire_size());
      p.Reset();
    }
  }
  run.head_complete_at_end = p.head_complete();
  return run;
}

ParserLimits PickLimits(uint8_t mode) {
  ParserLimits l;
  switch (mode) {
    case 1:  // small enough for the fuzzer to reach every bound
      l.max_request_line = 40;
      l.max_header_bytes = 160;
      l.max_header_count = 4;
      l.max_body_bytes = 64;
      l.max_chunk_line = 12;
      l.max_message_bytes = 256;
      break;
    case 2:  // degenerate bounds must not break anything either
      l.max_request_line = 1;
      l.max_header_bytes = 2;
      l.max_header_count = 0;
      l.max_body_bytes = 0;
      l.max_chunk_line = 1;
      l.max_message_bytes = 1;
      break;
    case 3:  // the real defaults, but a whole-request bound the fuzzer can reach first
      l.max_message_bytes = 120;
      break;
    default:  // the real defaults (max_message_bytes: the server's default max_packet_size)
      l.max_message_bytes = 10'000'000;
      break;
  }
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const ParserLimits limits = PickLimits(data[0] >> 6);
  uint32_t seed = data[0] & 63;
  const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Run whole = Feed(stream, limits, false, [] { return SIZE_MAX; });
  const Run bytewise = Feed(stream, limits, true, [] { return size_t{1}; });
  const Run random = Feed(stream, limits, seed & 1, [&seed] {
    seed = seed * 1103515245u + 12345u;  // any cheap generator will do: only variety matters
    return size_t{1} + (seed >> 16) % 48;
  });
  Check(whole == bytewise);
  Check(whole == random);
  return 0;
}
