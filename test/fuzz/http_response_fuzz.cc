// Fuzz target: peer bytes fed to the HTTP/1.1 response parser the way a client connection feeds
// them (pipelined responses, arbitrary read sizes, Parse / cut wire_size / Reset, the server's
// close at the end).
//
// Input: byte 0 picks the limits (bits 6-7), whether the server closes after the last byte
// (bit 5) and seeds the read sizes (bits 0-4); byte 1 says which responses answer HEAD (bit
// i % 8 for the i-th); the rest is the stream. The stream is parsed four ways: whole, one byte
// per call with every byte in its own buffer span, in pseudo-random reads, and whole without
// keeping the fields (set_keep_fields(false), the client codec's way). Any of these aborts (they
// cannot be true of a correct parser):
//   - the ways disagree on any response's result, head, body, sizes or error (the fourth has no
//     fields or reason phrase, and agrees on the rest);
//   - wire_size() exceeds the bytes buffered, or the head does not lie inside it;
//   - a final status outside 200..999 (1xx are interim and skipped) or an empty error;
//   - a body longer than max_body_bytes, a Content-Length body whose size is not the length, a
//     body on an answer to HEAD or on a 204/304, a read-until-close body that keeps the
//     connection or completes without the close;
//   - more than 2 examined bytes per byte fed (the no-re-scan guarantee);
//   - held bytes over the bound: a response still incomplete (kNeedMore) with more than
//     max_message_bytes buffered, a complete one whose wire_size() exceeds it, or a de-chunked
//     body larger than the wire bytes it came from.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/codec/http/detail/response_parser.h"

namespace {

using trpc::ChainBuffer;
using trpc::http::detail::ResponseLimits;
using trpc::http::detail::ResponseParser;
using Result = ResponseParser::Result;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// One response's verdict: everything a client connection would act on.
struct Verdict {
  Result result;
  std::string error;
  int status, minor;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive, chunked, until_close;
  uint64_t content_length;
  size_t head_offset, head_end, wire_size;
  std::string body;
  bool operator==(const Verdict&) const = default;
};

struct Run {
  std::vector<Verdict> verdicts;
  bool operator==(const Run&) const = default;
};

Verdict Record(Result r, ResponseParser& p, const ChainBuffer& in, const ResponseLimits& limits,
               bool head_request, bool eof) {
  Verdict v{};
  v.result = r;
  if (r == Result::kError) {
    v.error = p.error();
    Check(!v.error.empty());
    return v;
  }
  const auto& h = p.head();
  Check(p.wire_size() <= in.size());
  Check(p.head_offset() < p.head_end() && p.head_end() <= p.wire_size());
  Check(h.status >= 200 && h.status <= 999);
  Check(h.version_minor == 0 || h.version_minor == 1);
  v.status = h.status;
  v.minor = h.version_minor;
  v.reason = h.reason;
  v.headers = h.headers;
  v.keep_alive = h.keep_alive;
  v.chunked = h.chunked;
  v.until_close = h.until_close;
  v.content_length = h.content_length;
  v.head_offset = p.head_offset();
  v.head_end = p.head_end();
  v.wire_size = p.wire_size();
  if (h.chunked) {
    Check(h.content_length == 0 && !h.until_close);
    v.body = p.dechunked_body().ToString();
  } else {
    v.body = in.ToString().substr(p.head_end(), p.wire_size() - p.head_end());
    if (h.until_close) {
      Check(eof && !h.keep_alive && p.wire_size() == in.size());
    } else {
      Check(v.body.size() == h.content_length);
    }
  }
  if (head_request || h.status == 204 || h.status == 304) {
    Check(v.body.empty() && !h.chunked && !h.until_close);
  }
  Check(v.body.size() <= limits.max_body_bytes);
  Check(p.wire_size() <= limits.max_message_bytes);
  return v;
}

// Feeds `stream` in reads of the sizes `next_read()` returns, parsing after each read; then,
// with `eof`, once more as the server's close.
template <typename NextRead>
Run Feed(std::string_view stream, const ResponseLimits& limits, uint8_t heads, bool eof,
         bool fragment, NextRead next_read, bool keep_fields = true) {
  ResponseParser p(limits);
  p.set_keep_fields(keep_fields);
  ChainBuffer in, spacer;
  Run run;
  size_t off = 0;
  auto is_head = [&] { return ((heads >> (run.verdicts.size() % 8)) & 1) != 0; };
  p.set_head_request(is_head());
  auto drain = [&](bool at_eof) {
    for (;;) {
      const bool head_request = is_head();
      const Result r = p.Parse(in, at_eof);
      Check(p.bytes_examined() <= 2 * off);
      // What a client connection holds for the response being read: its bytes in `in`, and the
      // body de-chunked so far.
      Check(p.dechunked_body().size() <= in.size());
      if (r == Result::kNeedMore) {
        Check(in.size() <= limits.max_message_bytes);
        return true;
      }
      run.verdicts.push_back(Record(r, p, in, limits, head_request, at_eof));
      if (r == Result::kError) return false;
      in.Skip(p.wire_size());
      p.Reset();
      p.set_head_request(is_head());
    }
  };
  while (off < stream.size()) {
    const size_t n = std::min(next_read(), stream.size() - off);
    in.Append(stream.data() + off, n);
    if (fragment) spacer.Append("-", 1);  // the next read lands in a new span
    off += n;
    if (!drain(false)) return run;
  }
  if (eof) drain(true);
  return run;
}

ResponseLimits PickLimits(uint8_t mode) {
  ResponseLimits l;
  switch (mode) {
    case 1:  // small enough for the fuzzer to reach every bound
      l.max_status_line = 40;
      l.max_header_bytes = 160;
      l.max_header_count = 4;
      l.max_body_bytes = 64;
      l.max_chunk_line = 12;
      l.max_interim = 2;
      l.max_message_bytes = 256;
      break;
    case 2:  // degenerate bounds must not break anything either
      l.max_status_line = 1;
      l.max_header_bytes = 2;
      l.max_header_count = 0;
      l.max_body_bytes = 0;
      l.max_chunk_line = 1;
      l.max_interim = 0;
      l.max_message_bytes = 1;
      break;
    case 3:  // large bounds, but a whole-response bound the fuzzer can reach first
      l.max_body_bytes = 1 << 20;
      l.max_message_bytes = 120;
      break;
    default:  // the client's: max_packet_size bounds the body and the whole response
      l.max_body_bytes = 1 << 20;
      l.max_message_bytes = 1 << 20;
      break;
  }
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const ResponseLimits limits = PickLimits(data[0] >> 6);
  const bool eof = (data[0] & 0x20) != 0;
  uint32_t seed = data[0] & 31;
  const uint8_t heads = data[1];
  const std::string_view stream(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Run whole = Feed(stream, limits, heads, eof, false, [] { return SIZE_MAX; });
  const Run bytewise = Feed(stream, limits, heads, eof, true, [] { return size_t{1}; });
  const Run random = Feed(stream, limits, heads, eof, seed & 1, [&seed] {
    seed = seed * 1103515245u + 12345u;  // any cheap generator will do: only variety matters
    return size_t{1} + (seed >> 16) % 48;
  });
  Check(whole == bytewise);
  Check(whole == random);
  Run framing = Feed(
      stream, limits, heads, eof, false, [] { return SIZE_MAX; }, false);
  Run stripped = whole;
  for (Verdict& v : stripped.verdicts) {
    v.headers.clear();
    v.reason.clear();
  }
  Check(framing == stripped);
  return 0;
}
