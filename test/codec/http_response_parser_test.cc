// The incremental HTTP/1.1 response parser: every way a body ends (Content-Length, chunked,
// HEAD/204/304, read until close), interim 1xx responses, keep-alive, pipelined responses under
// a split at every byte offset, each limit at and one past its bound, malformed and
// smuggling-shaped input, and the linear-work guarantee.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "trpc/codec/http/detail/response_parser.h"

namespace trpc::http::detail {
namespace {

using Result = ResponseParser::Result;

ChainBuffer Buf(std::string_view s) {
  ChainBuffer b;
  b.Append(s);
  return b;
}

// What one Parse loop saw for one response, in a form that compares across splits.
struct Outcome {
  Result result = Result::kNeedMore;
  int status = 0;
  int version_minor = -1;
  std::string reason;
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = false, chunked = false, until_close = false;
  uint64_t content_length = 0;
  std::string body;
  size_t head_offset = 0, head_end = 0, wire_size = 0;
  std::string error;

  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{result=" << static_cast<int>(o.result) << " " << o.status << " '" << o.reason << "' 1."
     << o.version_minor << " headers=" << o.headers.size() << " body=" << o.body.size()
     << " offset=" << o.head_offset << " head_end=" << o.head_end << " wire=" << o.wire_size
     << " keep_alive=" << o.keep_alive << " error=" << o.error << "}";
  return os;
}

Outcome Capture(Result r, ResponseParser& p, const ChainBuffer& in) {
  Outcome o;
  o.result = r;
  if (r == Result::kError) {
    o.error = p.error();
    return o;
  }
  const ResponseHead& h = p.head();
  o.status = h.status;
  o.version_minor = h.version_minor;
  o.reason = h.reason;
  o.headers = h.headers;
  o.keep_alive = h.keep_alive;
  o.chunked = h.chunked;
  o.until_close = h.until_close;
  o.content_length = h.content_length;
  o.head_offset = p.head_offset();
  o.head_end = p.head_end();
  o.wire_size = p.wire_size();
  if (r == Result::kComplete) {
    o.body = h.chunked ? p.dechunked_body().ToString()
                       : in.ToString().substr(p.head_end(), p.wire_size() - p.head_end());
  }
  return o;
}

// Feeds `stream` in pieces of the given sizes (the rest in one last piece), as a connection does:
// after each append, parse until kNeedMore; on kComplete cut wire_size bytes and Reset. `heads`
// says which responses answer HEAD. With `eof`, the server closes after the last byte. With
// `fragment`, every piece lands in its own buffer span, so heads straddle blocks.
struct Feed {
  std::vector<size_t> pieces;
  ResponseLimits limits;
  std::vector<bool> heads;
  bool eof = false;
  bool fragment = false;
  bool keep_fields = true;
};

std::vector<Outcome> ParseStream(std::string_view stream, const Feed& f) {
  ResponseParser p(f.limits);
  p.set_keep_fields(f.keep_fields);
  ChainBuffer in, spacer;
  std::vector<Outcome> out;
  size_t off = 0;
  auto head_request = [&] { return out.size() < f.heads.size() && f.heads[out.size()]; };
  p.set_head_request(head_request());
  auto drain = [&](bool eof) {
    for (;;) {
      const Result r = p.Parse(in, eof);
      if (r == Result::kNeedMore) return true;
      out.push_back(Capture(r, p, in));
      if (r == Result::kError) return false;
      in.Skip(p.wire_size());
      p.Reset();
      p.set_head_request(head_request());
    }
  };
  for (size_t i = 0; off < stream.size() || i == 0; ++i) {
    const size_t n =
        i < f.pieces.size() ? std::min(f.pieces[i], stream.size() - off) : stream.size() - off;
    in.Append(stream.substr(off, n));
    if (f.fragment) spacer.Append("x", 1);  // the next append to `in` starts a new span
    off += n;
    if (!drain(false)) return out;
  }
  if (f.eof) drain(true);
  return out;
}

std::vector<Outcome> ParseWhole(std::string_view stream, Feed f = {}) {
  f.pieces.clear();
  return ParseStream(stream, f);
}

std::vector<Outcome> ParseBytewise(std::string_view stream, Feed f = {}) {
  f.pieces.assign(stream.size(), 1);
  f.fragment = true;
  return ParseStream(stream, f);
}

// Whole, byte by byte, and cut in two at every offset: the same outcomes each time.
std::vector<Outcome> ParseEveryWay(std::string_view stream, const Feed& f = {}) {
  std::vector<Outcome> whole = ParseWhole(stream, f);
  EXPECT_EQ(ParseBytewise(stream, f), whole);
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    Feed two = f;
    two.pieces = {cut};
    two.fragment = cut % 2 == 0;
    EXPECT_EQ(ParseStream(stream, two), whole) << "cut at " << cut;
  }
  return whole;
}

Outcome ParseOne(std::string_view response, const ResponseLimits& limits = {}, bool eof = false,
                 bool head_request = false) {
  ResponseParser p(limits);
  p.set_head_request(head_request);
  ChainBuffer in = Buf(response);
  return Capture(p.Parse(in, eof), p, in);
}

void ExpectError(std::string_view response, std::string_view why,
                 const ResponseLimits& limits = {}) {
  SCOPED_TRACE(std::string(response));
  Outcome o = ParseOne(response, limits);
  EXPECT_EQ(o.result, Result::kError);
  EXPECT_EQ(o.error, why);
  // The same verdict however the bytes arrive.
  Feed f;
  f.limits = limits;
  std::vector<Outcome> bytewise = ParseBytewise(response, f);
  ASSERT_EQ(bytewise.size(), 1u);
  EXPECT_EQ(bytewise[0], o);
}

constexpr std::string_view kOk =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

TEST(HttpResponseParserTest, ContentLength) {
  Outcome o = ParseOne(kOk);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.status, 200);
  EXPECT_EQ(o.reason, "OK");
  EXPECT_EQ(o.version_minor, 1);
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0].first, "Content-Type");
  EXPECT_EQ(o.headers[0].second, "application/json");
  EXPECT_TRUE(o.keep_alive);
  EXPECT_FALSE(o.chunked);
  EXPECT_FALSE(o.until_close);
  EXPECT_EQ(o.content_length, 2u);
  EXPECT_EQ(o.body, "{}");
  EXPECT_EQ(o.head_offset, 0u);
  EXPECT_EQ(o.head_end, kOk.size() - 2);
  EXPECT_EQ(o.wire_size, kOk.size());
}

TEST(HttpResponseParserTest, EachPrefixNeedsMoreAndIsCutShortAtEof) {
  for (size_t n = 0; n < kOk.size(); ++n) {
    ResponseParser p;
    ChainBuffer in = Buf(kOk.substr(0, n));
    EXPECT_EQ(p.Parse(in), Result::kNeedMore) << n;
    // The server closing now: nothing pending is fine, half a response is not.
    EXPECT_EQ(p.Parse(in, /*eof=*/true), n == 0 ? Result::kNeedMore : Result::kError) << n;
    if (n > 0) {
      EXPECT_EQ(p.error(), "connection closed before the response was complete");
    }
  }
}

TEST(HttpResponseParserTest, FindIsCaseInsensitive) {
  ResponseParser p;
  ChainBuffer in = Buf("HTTP/1.1 200 OK\r\nX-Multi: a\r\nx-multi: b\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(p.Parse(in), Result::kComplete);
  ASSERT_NE(p.head().Find("X-MULTI"), nullptr);
  EXPECT_EQ(*p.head().Find("X-MULTI"), "a");
  EXPECT_EQ(p.head().Find("X-Multi-2"), nullptr);
}

TEST(HttpResponseParserTest, Chunked) {
  const std::string r =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nTrailer: t\r\n\r\n";
  std::vector<Outcome> o = ParseEveryWay(r);
  ASSERT_EQ(o.size(), 1u);
  ASSERT_EQ(o[0].result, Result::kComplete) << o[0].error;
  EXPECT_TRUE(o[0].chunked);
  EXPECT_EQ(o[0].body, "hello 0123456789");
  EXPECT_EQ(o[0].wire_size, r.size());
  EXPECT_EQ(o[0].content_length, 0u);
}

TEST(HttpResponseParserTest, StatusLineForms) {
  struct Case {
    std::string line;
    int status;
    std::string reason;
    int minor;
  };
  for (const Case& c : std::vector<Case>{
           {"HTTP/1.1 404 Not Found", 404, "Not Found", 1},
           {"HTTP/1.0 200 OK", 200, "OK", 0},
           {"HTTP/1.1 200 ", 200, "", 1},
           {"HTTP/1.1 200", 200, "", 1},  // no reason, no space: accepted
           {"HTTP/1.1 599 Caf\xc3\xa9 \t x", 599, "Caf\xc3\xa9 \t x", 1},
           {"HTTP/1.1 999 Whatever", 999, "Whatever", 1},
       }) {
    Outcome o = ParseOne(c.line + "\r\nContent-Length: 0\r\n\r\n");
    ASSERT_EQ(o.result, Result::kComplete) << c.line << ": " << o.error;
    EXPECT_EQ(o.status, c.status) << c.line;
    EXPECT_EQ(o.reason, c.reason) << c.line;
    EXPECT_EQ(o.version_minor, c.minor) << c.line;
  }
}

TEST(HttpResponseParserTest, KeepAlive) {
  struct Case {
    std::string head;
    bool keep_alive;
  };
  for (const Case& c : std::vector<Case>{
           {"HTTP/1.1 200 OK\r\n", true},
           {"HTTP/1.1 200 OK\r\nConnection: close\r\n", false},
           {"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\n", false},
           {"HTTP/1.1 200 OK\r\nConnection: upgrade\r\n", true},
           {"HTTP/1.0 200 OK\r\n", false},
           {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n", true},
           {"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\n", false},
       }) {
    Outcome o = ParseOne(c.head + "Content-Length: 0\r\n\r\n");
    ASSERT_EQ(o.result, Result::kComplete) << c.head << o.error;
    EXPECT_EQ(o.keep_alive, c.keep_alive) << c.head;
  }
}

TEST(HttpResponseParserTest, BodilessResponses) {
  // 204 and 304 end at their head whatever their length fields say; so does an answer to HEAD.
  for (std::string_view status : {"204 No Content", "304 Not Modified"}) {
    const std::string r = "HTTP/1.1 " + std::string(status) + "\r\nContent-Length: 10\r\n\r\n";
    Outcome o = ParseOne(r + kOk.data());
    ASSERT_EQ(o.result, Result::kComplete) << o.error;
    EXPECT_EQ(o.wire_size, r.size());
    EXPECT_EQ(o.body, "");
    EXPECT_TRUE(o.keep_alive);
  }
  const std::string head_answer =
      "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nTransfer-Encoding: chunked\r\n\r\n";
  Feed f;
  f.heads = {true, false};
  std::vector<Outcome> o = ParseEveryWay(head_answer + std::string(kOk), f);
  ASSERT_EQ(o.size(), 2u);
  EXPECT_EQ(o[0].result, Result::kComplete) << o[0].error;
  EXPECT_EQ(o[0].wire_size, head_answer.size());
  EXPECT_EQ(o[0].body, "");
  EXPECT_EQ(o[0].content_length, 0u);
  EXPECT_EQ(o[1].result, Result::kComplete) << o[1].error;
  EXPECT_EQ(o[1].body, "{}");
}

TEST(HttpResponseParserTest, ReadUntilClose) {
  const std::string r =
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of this, until the end";
  EXPECT_EQ(ParseOne(r).result, Result::kNeedMore);
  Feed f;
  f.eof = true;
  std::vector<Outcome> o = ParseEveryWay(r, f);
  ASSERT_EQ(o.size(), 1u);
  ASSERT_EQ(o[0].result, Result::kComplete) << o[0].error;
  EXPECT_TRUE(o[0].until_close);
  EXPECT_FALSE(o[0].keep_alive);
  EXPECT_EQ(o[0].body, "all of this, until the end");
  // An empty body read until the close.
  Outcome empty = ParseOne("HTTP/1.0 200 OK\r\n\r\n", {}, /*eof=*/true);
  ASSERT_EQ(empty.result, Result::kComplete) << empty.error;
  EXPECT_EQ(empty.body, "");
  // Not cut short: bytes buffered after a complete Content-Length response are the next one's.
  EXPECT_EQ(ParseOne(std::string(kOk) + "HTTP/1.1", {}, true).result, Result::kComplete);
}

TEST(HttpResponseParserTest, CutShortByTheClose) {
  for (std::string r : {std::string(kOk.substr(0, kOk.size() - 1)),
                        std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"),
                        std::string("HTTP/1.1 100 Continue\r\n\r\n")}) {
    Outcome o = ParseOne(r, {}, /*eof=*/true);
    EXPECT_EQ(o.result, Result::kError) << r;
    EXPECT_EQ(o.error, "connection closed before the response was complete");
  }
}

TEST(HttpResponseParserTest, InterimResponsesAreSkipped) {
  const std::string interim =
      "HTTP/1.1 100 Continue\r\n\r\n"
      "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n";
  std::vector<Outcome> o = ParseEveryWay(interim + std::string(kOk) + std::string(kOk));
  ASSERT_EQ(o.size(), 2u);
  ASSERT_EQ(o[0].result, Result::kComplete) << o[0].error;
  EXPECT_EQ(o[0].status, 200);
  EXPECT_EQ(o[0].head_offset, interim.size());
  EXPECT_EQ(o[0].wire_size, interim.size() + kOk.size());
  EXPECT_EQ(o[0].body, "{}");
  ASSERT_EQ(o[0].headers.size(), 2u);  // the final response's fields only
  EXPECT_EQ(o[0].headers[0].first, "Content-Type");
  EXPECT_EQ(o[1].head_offset, 0u);
  EXPECT_EQ(o[1].wire_size, kOk.size());

  ExpectError("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n",
              "101 Switching Protocols, but no upgrade was asked for");
}

TEST(HttpResponseParserTest, PipelinedResponsesUnderEverySplit) {
  const std::string stream = std::string(kOk) +
                             "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3\r\nabc\r\n0\r\n\r\n"
                             "HTTP/1.1 100 Continue\r\n\r\n"
                             "HTTP/1.1 204 No Content\r\n\r\n"
                             "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nerror"
                             "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nthe rest";
  Feed f;
  f.eof = true;
  std::vector<Outcome> o = ParseEveryWay(stream, f);
  ASSERT_EQ(o.size(), 5u);
  std::vector<int> statuses;
  std::vector<std::string> bodies;
  for (const Outcome& x : o) {
    EXPECT_EQ(x.result, Result::kComplete) << x.error;
    statuses.push_back(x.status);
    bodies.push_back(x.body);
  }
  EXPECT_EQ(statuses, (std::vector<int>{200, 404, 204, 500, 200}));
  EXPECT_EQ(bodies, (std::vector<std::string>{"{}", "abc", "", "error", "the rest"}));
  EXPECT_FALSE(o[4].keep_alive);
  EXPECT_TRUE(o[4].until_close);
}

// Without the fields kept, the framing is the same and the head carries no fields or reason.
TEST(HttpResponseParserTest, FramingOnlyWithoutTheFields) {
  const std::string stream = std::string(kOk) +
                             "HTTP/1.1 201 Created\r\nX-A: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3\r\nabc\r\n0\r\n\r\n"
                             "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nrest";
  Feed all;
  all.eof = true;
  Feed framing = all;
  framing.keep_fields = false;
  std::vector<Outcome> kept = ParseEveryWay(stream, all);
  std::vector<Outcome> bare = ParseEveryWay(stream, framing);
  ASSERT_EQ(kept.size(), 3u);
  ASSERT_EQ(bare.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(bare[i].headers.empty());
    EXPECT_TRUE(bare[i].reason.empty());
    Outcome k = kept[i];
    k.headers.clear();
    k.reason.clear();
    EXPECT_EQ(bare[i], k) << i;
  }
  EXPECT_FALSE(bare[2].keep_alive);
  // Malformed fields are still refused.
  ResponseParser p;
  p.set_keep_fields(false);
  ChainBuffer in = Buf("HTTP/1.1 200 OK\r\nA : b\r\n\r\n");
  EXPECT_EQ(p.Parse(in), Result::kError);
  EXPECT_EQ(p.error(), "whitespace between field name and colon");
}

TEST(HttpResponseParserTest, ResetReusesAndForgets) {
  ResponseParser p;
  ChainBuffer in = Buf("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(p.Parse(in), Result::kComplete);
  in.Skip(p.wire_size());
  p.Reset();
  in.Append(std::string_view("HTTP/1.1 201 Created\r\nC: 3\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_EQ(p.Parse(in), Result::kComplete);
  EXPECT_EQ(p.head().status, 201);
  ASSERT_EQ(p.head().headers.size(), 2u);
  EXPECT_EQ(p.head().headers[0], (std::pair<std::string, std::string>("C", "3")));
  EXPECT_EQ(p.head().reason, "Created");
}

// ---- Limits: each at exactly its bound, and one byte / one unit past it. ----

// A status line of exactly `size` bytes, CRLF included.
std::string StatusLineOfSize(size_t size) {
  const std::string fixed = "HTTP/1.1 200 \r\n";
  return "HTTP/1.1 200 " + std::string(size - fixed.size(), 'r') + "\r\n";
}

// A whole head of exactly `size` bytes (status line + one padding field + Content-Length: 0).
std::string HeadOfSize(size_t size) {
  const std::string fixed = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: \r\n\r\n";
  return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: " + std::string(size - fixed.size(), 'v') +
         "\r\n\r\n";
}

std::string HeadWithFields(size_t fields) {
  std::string s = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n";
  for (size_t i = 1; i < fields; ++i) s += "F" + std::to_string(i) + ": v\r\n";
  return s + "\r\n";
}

std::string Hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

const ResponseLimits kSmall = {.max_status_line = 64,
                               .max_header_bytes = 256,
                               .max_header_count = 5,
                               .max_body_bytes = 100,
                               .max_chunk_line = 16,
                               .max_interim = 2};

class LimitTest : public ::testing::TestWithParam<ResponseLimits> {};

TEST_P(LimitTest, StatusLine) {
  const ResponseLimits& lim = GetParam();
  std::string at = StatusLineOfSize(lim.max_status_line) + "Content-Length: 0\r\n\r\n";
  EXPECT_EQ(ParseOne(at, lim).result, Result::kComplete);
  std::string over = StatusLineOfSize(lim.max_status_line + 1) + "Content-Length: 0\r\n\r\n";
  ExpectError(over, "status line too long", lim);
  // Decided before the line ends: max bytes without their LF cannot be a line of max bytes.
  ResponseParser p(lim);
  ChainBuffer in = Buf(over.substr(0, lim.max_status_line - 1));
  EXPECT_EQ(p.Parse(in), Result::kNeedMore);
  in.Append(over.substr(lim.max_status_line - 1, 1));
  EXPECT_EQ(p.Parse(in), Result::kError);
}

TEST_P(LimitTest, HeaderBytes) {
  const ResponseLimits& lim = GetParam();
  const std::string at = HeadOfSize(lim.max_header_bytes);
  Outcome o = ParseOne(at, lim);
  EXPECT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.head_end, lim.max_header_bytes);
  ExpectError(HeadOfSize(lim.max_header_bytes + 1), "header section too large", lim);
  // The bound is per head: an interim response before it does not count.
  Outcome after_interim = ParseOne("HTTP/1.1 100 Continue\r\n\r\n" + at, lim);
  EXPECT_EQ(after_interim.result, Result::kComplete) << after_interim.error;
}

TEST_P(LimitTest, HeaderCount) {
  const ResponseLimits& lim = GetParam();
  Outcome o = ParseOne(HeadWithFields(lim.max_header_count), lim);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.headers.size(), lim.max_header_count);
  ExpectError(HeadWithFields(lim.max_header_count + 1), "too many header fields", lim);
}

TEST_P(LimitTest, ContentLengthDecidedFromTheHead) {
  const ResponseLimits& lim = GetParam();
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: ";
  EXPECT_EQ(ParseOne(head + std::to_string(lim.max_body_bytes) + "\r\n\r\n", lim).result,
            Result::kNeedMore);
  ExpectError(head + std::to_string(lim.max_body_bytes + 1) + "\r\n\r\n",
              "Content-Length exceeds the body limit", lim);
}

TEST_P(LimitTest, DechunkedTotal) {
  const ResponseLimits& lim = GetParam();
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  EXPECT_EQ(ParseOne(head + Hex(lim.max_body_bytes) + "\r\n", lim).result, Result::kNeedMore);
  ExpectError(head + Hex(lim.max_body_bytes + 1) + "\r\n", "chunked body exceeds the body limit",
              lim);
}

TEST_P(LimitTest, ChunkLine) {
  const ResponseLimits& lim = GetParam();
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string at = "1;" + std::string(lim.max_chunk_line - 4, 'e') + "\r\n";
  Outcome o = ParseOne(head + at + "x\r\n0\r\n\r\n", lim);
  EXPECT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "x");
  std::string over = "1;" + std::string(lim.max_chunk_line - 3, 'e') + "\r\n";
  ExpectError(head + over + "x\r\n0\r\n\r\n", "chunk-size line too long", lim);
}

TEST_P(LimitTest, TrailerBytes) {
  const ResponseLimits& lim = GetParam();
  const std::string head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
  auto trailer = [](size_t size) { return "T: " + std::string(size - 7, 't') + "\r\n\r\n"; };
  EXPECT_EQ(ParseOne(head + trailer(lim.max_header_bytes), lim).result, Result::kComplete);
  ExpectError(head + trailer(lim.max_header_bytes + 1), "trailer section too large", lim);
}

TEST_P(LimitTest, BodyUntilClose) {
  const ResponseLimits& lim = GetParam();
  const std::string head = "HTTP/1.1 200 OK\r\n\r\n";
  Outcome at = ParseOne(head + std::string(lim.max_body_bytes, 'b'), lim, /*eof=*/true);
  EXPECT_EQ(at.result, Result::kComplete) << at.error;
  EXPECT_EQ(at.body.size(), lim.max_body_bytes);
  // Refused as soon as one byte too many is buffered, without waiting for the close.
  Outcome over = ParseOne(head + std::string(lim.max_body_bytes + 1, 'b'), lim);
  EXPECT_EQ(over.result, Result::kError);
  EXPECT_EQ(over.error, "body read until close exceeds the body limit");
}

TEST_P(LimitTest, InterimResponses) {
  const ResponseLimits& lim = GetParam();
  std::string interim;
  for (size_t i = 0; i < lim.max_interim; ++i) interim += "HTTP/1.1 100 Continue\r\n\r\n";
  Outcome o = ParseOne(interim + std::string(kOk), lim);
  EXPECT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.head_offset, interim.size());
  ExpectError(interim + "HTTP/1.1 102 Processing\r\n\r\n" + std::string(kOk),
              "too many interim (1xx) responses", lim);
}

INSTANTIATE_TEST_SUITE_P(SmallAndDefault, LimitTest,
                         ::testing::Values(kSmall, ResponseLimits{.max_body_bytes = 100'000}));

// ---- max_message_bytes: every byte of a response as received. ----

const std::string kCh = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

ResponseLimits MessageLimit(size_t n) {
  ResponseLimits lim;
  lim.max_message_bytes = n;
  return lim;
}

std::string OverMessage(size_t n) {
  return "response larger than max_packet_size (" + std::to_string(n) + " bytes)";
}

TEST(HttpResponseParserTest, MessageBytesCountInterimChunkFramingAndTrailers) {
  const std::string rsp =
      "HTTP/1.1 100 Continue\r\n\r\n" + kCh + "0001;ext\r\nx\r\n0\r\nTrailer: t\r\n\r\n";
  Outcome o = ParseOne(rsp, MessageLimit(rsp.size()));
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "x");
  ExpectError(rsp, OverMessage(rsp.size() - 1), MessageLimit(rsp.size() - 1));
  // Per response: two pipelined ones of the bound each are both read.
  Feed f;
  f.limits = MessageLimit(rsp.size());
  const std::vector<Outcome> two = ParseEveryWay(rsp + rsp, f);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].result, Result::kComplete) << two[1].error;
}

TEST(HttpResponseParserTest, MessageBytesForContentLengthHeadAndUntilClose) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
  EXPECT_EQ(ParseOne(head, MessageLimit(head.size() + 10)).result, Result::kNeedMore);
  ExpectError(head, OverMessage(head.size() + 9), MessageLimit(head.size() + 9));
  ExpectError(head, OverMessage(head.size() - 1), MessageLimit(head.size() - 1));
  const std::string until_close = "HTTP/1.1 200 OK\r\n\r\n" + std::string(20, 'b');
  Outcome at = ParseOne(until_close, MessageLimit(until_close.size()), /*eof=*/true);
  EXPECT_EQ(at.result, Result::kComplete) << at.error;
  Outcome over = ParseOne(until_close, MessageLimit(until_close.size() - 1));
  EXPECT_EQ(over.result, Result::kError);
  EXPECT_EQ(over.error, OverMessage(until_close.size() - 1));
}

// The hostile response of issue 24, read 64 KiB at a time as a client connection reads: refused
// with the first read that takes it over the bound.
TEST(HttpResponseParserTest, HeldWireBytesStopAtMaxMessageBytes) {
  constexpr size_t kMax = 1u << 20;
  constexpr size_t kRead = 64u << 10;
  std::string piece;
  while (piece.size() < kRead) piece += "0000000000000001\r\nx\r\n";
  ResponseParser p(MessageLimit(kMax));
  ChainBuffer in = Buf(kCh);
  Result r = p.Parse(in);
  while (r == Result::kNeedMore && in.size() < 64 * kMax) {
    ASSERT_LE(in.size(), kMax);
    in.Append(piece);
    r = p.Parse(in);
  }
  ASSERT_EQ(r, Result::kError);
  EXPECT_EQ(p.error(), OverMessage(kMax));
  EXPECT_LE(in.size(), kMax + piece.size());
}

TEST(HttpResponseParserTest, ChunkExtensionsHaveATotal) {
  std::string body;
  for (size_t i = 0; i < kMaxChunkExtensionBytes / 100; ++i) {
    body += "1;" + std::string(100, 'e') + "\r\nx\r\n";  // 100 extension bytes each
  }
  const std::string at = kCh + body + "0\r\n\r\n";
  EXPECT_EQ(ParseOne(at).result, Result::kComplete);
  ExpectError(kCh + body + "1;" + std::string(kMaxChunkExtensionBytes % 100 + 1, 'e') + "\r\n",
              "chunk extensions exceed 16384 bytes");
}

// Streaming (a watch that never ends) has no total, so no bound on the message either.
TEST(HttpResponseParserStreamTest, NoMessageBound) {
  ResponseLimits lim = MessageLimit(64);
  std::string wire = kCh;
  for (int i = 0; i < 100; ++i) wire += "a\r\n0123456789\r\n";
  wire += "0\r\n\r\n";
  ResponseParser p(lim);
  p.set_streaming(true);
  ChainBuffer in = Buf(wire);
  ChainBuffer body;
  ASSERT_EQ(p.ParseStream(&in, false, &body), Result::kComplete) << p.error();
  EXPECT_EQ(body.size(), 1000u);
}

TEST(HttpResponseParserTest, DefaultLimits) {
  ResponseLimits d;
  EXPECT_EQ(d.max_status_line, 8192u);
  EXPECT_EQ(d.max_header_bytes, 65536u);
  EXPECT_EQ(d.max_header_count, 100u);
  EXPECT_EQ(d.max_body_bytes, 10'000'000u);
  EXPECT_EQ(d.max_chunk_line, 4096u);
  EXPECT_EQ(d.max_interim, 16u);
}

// ---- Malformed and smuggling-shaped input: each has its own reason. ----

struct BadCase {
  const char* name;
  std::string response;
  std::string error;
};

const BadCase kBadCases[] = {
    // Status line.
    {"LowerCaseVersion", "http/1.1 200 OK\r\n\r\n", "malformed HTTP version"},
    {"ShortVersion", "HTTP/1 200 OK\r\n\r\n", "malformed HTTP version"},
    {"Http2", "HTTP/2.0 200 OK\r\n\r\n", "HTTP version not supported"},
    {"Http12", "HTTP/1.2 200 OK\r\n\r\n", "HTTP version not supported"},
    {"TwoDigitStatus", "HTTP/1.1 20 OK\r\n\r\n", "malformed status code"},
    {"FourDigitStatus", "HTTP/1.1 2000 OK\r\n\r\n", "malformed status code"},
    {"StatusBelow100", "HTTP/1.1 099 OK\r\n\r\n", "malformed status code"},
    {"TwoSpaces", "HTTP/1.1  200 OK\r\n\r\n", "malformed status code"},
    {"TabNotSpace", "HTTP/1.1\t200 OK\r\n\r\n", "malformed status code"},
    {"NoStatus", "HTTP/1.1\r\n\r\n", "malformed status code"},
    {"ControlInReason", "HTTP/1.1 200 O\x01K\r\n\r\n", "control character in reason phrase"},
    {"BareCrInStatusLine", "HTTP/1.1 200 O\rK\r\n\r\n", "bare CR (not followed by LF)"},
    {"EmptyLineFirst", "\r\nHTTP/1.1 200 OK\r\n\r\n", "empty line where the status line belongs"},
    {"BareLfStatusLine", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n",
     "bare LF (line not ended by CRLF)"},
    // Fields.
    {"BareLfField", "HTTP/1.1 200 OK\r\nA: b\n\r\n", "bare LF (line not ended by CRLF)"},
    {"BareCrField", "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", "bare CR (not followed by LF)"},
    {"ObsFold", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n",
     "obs-fold (field line starting with whitespace)"},
    {"SpaceBeforeColon", "HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n",
     "whitespace between field name and colon"},
    {"NoColon", "HTTP/1.1 200 OK\r\nContent-Length\r\n\r\n", "field line without a colon"},
    {"EmptyName", "HTTP/1.1 200 OK\r\n: v\r\n\r\n", "empty field name"},
    {"NulInValue", std::string("HTTP/1.1 200 OK\r\nA: b\0c\r\n\r\n", 27),
     "control character in field value"},
    // Framing: what a proxy and we might read differently.
    {"ClAndTe", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
     "both Content-Length and Transfer-Encoding"},
    {"ClConflict", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
     "duplicate Content-Length with different values"},
    {"ClListConflict", "HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
     "duplicate Content-Length with different values"},
    {"ClSign", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n",
     "Content-Length is not a decimal number"},
    {"ClEmpty", "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n", "empty Content-Length"},
    {"ClOverflow", "HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551616\r\n\r\n",
     "Content-Length overflows 64 bits"},
    {"TeInHttp10", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     "Transfer-Encoding in an HTTP/1.0 response"},
    {"TeGzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
     "final transfer-coding is not chunked"},
    {"TeChunkedTwice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
     "chunked applied more than once"},
    {"TeGzipChunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
     "transfer-coding other than chunked not implemented"},
    {"TeEmptyItem", "HTTP/1.1 200 OK\r\nTransfer-Encoding: ,chunked\r\n\r\n",
     "empty transfer-coding"},
    {"TeQuoted", "HTTP/1.1 200 OK\r\nTransfer-Encoding: \"chunked\"\r\n\r\n",
     "malformed transfer-coding"},
    // Chunked bodies.
    {"ChunkSizeNotHex", kCh + "g\r\n", "chunk size is not a hex number"},
    {"ChunkSize0x", kCh + "0x5\r\n", "invalid character after chunk size"},
    {"ChunkSizeSpace", kCh + "5 \r\n", "invalid character after chunk size"},
    {"ChunkSize17Digits", kCh + "00000000000000001\r\n", "chunk size has more than 16 hex digits"},
    {"ChunkBareLf", kCh + "5\nhello\r\n", "bare LF (line not ended by CRLF)"},
    {"ChunkMissingCrlf", kCh + "5\r\nhelloX\r\n", "missing CRLF after chunk data"},
    {"ChunkExtControl", kCh + "5;a=\x01\r\n", "control character in chunk extension"},
    {"TrailerObsFold", kCh + "0\r\nT: v\r\n w\r\n\r\n",
     "obs-fold (field line starting with whitespace)"},
};

class BadResponseTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadResponseTest, IsRejectedWithItsReason) {
  ExpectError(GetParam().response, GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(All, BadResponseTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- Linear work: each byte examined a bounded number of times however it arrives. ----

TEST(HttpResponseParserTest, TricklingHeadIsNotRescanned) {
  std::string r = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 500; ++i) r += "X-Field-" + std::to_string(i) + ": some value\r\n";
  r += "Content-Length: 0\r\n\r\n";
  ResponseLimits lim;
  lim.max_header_count = 1000;
  ResponseParser p(lim);
  ChainBuffer in;
  Result res = Result::kNeedMore;
  for (char c : r) {
    in.Append(&c, 1);
    res = p.Parse(in);
  }
  ASSERT_EQ(res, Result::kComplete) << p.error();
  EXPECT_LE(p.bytes_examined(), 2 * r.size());
}

TEST(HttpResponseParserTest, TricklingChunkedBodyIsLinear) {
  std::string r = std::string(kCh);
  for (int i = 0; i < 2000; ++i) r += "3;x=y\r\nabc\r\n";
  r += "0\r\n\r\n";
  ResponseLimits lim;
  ResponseParser p(lim);
  ChainBuffer in;
  Result res = Result::kNeedMore;
  for (size_t i = 0; i < r.size(); i += 7) {
    in.Append(std::string_view(r).substr(i, 7));
    res = p.Parse(in);
  }
  ASSERT_EQ(res, Result::kComplete) << p.error();
  EXPECT_EQ(p.dechunked_body().size(), 6000u);
  EXPECT_LE(p.bytes_examined(), 2 * r.size());
}

// Streaming mode: ParseStream hands out the body as it arrives and consumes `in` itself.
struct StreamOutcome {
  Result result = Result::kNeedMore;
  std::string body;
  std::string left;  // what stayed in `in`: a prefix of what followed the response
  std::string error;
  size_t max_in = 0;  // the most `in` ever held after a call
};

StreamOutcome StreamInPieces(std::string_view wire, size_t piece, bool eof_at_end,
                             const ResponseLimits& limits = {}) {
  ResponseParser p(limits);
  p.set_streaming(true);
  ChainBuffer in, body;
  StreamOutcome o;
  for (size_t i = 0; i < wire.size() && o.result == Result::kNeedMore; i += piece) {
    in.Append(wire.substr(i, piece));
    o.result = p.ParseStream(&in, false, &body);
    o.max_in = std::max(o.max_in, in.size());
  }
  if (eof_at_end && o.result == Result::kNeedMore) o.result = p.ParseStream(&in, true, &body);
  o.body = body.ToString();
  o.left = in.ToString();
  o.error = p.error();
  return o;
}

TEST(HttpResponseParserStreamTest, ChunkedBodyIsHandedOutUnderEverySplit) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-T: 1\r\n\r\nHTTP/1.1";
  for (size_t piece = 1; piece <= wire.size(); ++piece) {
    StreamOutcome o = StreamInPieces(wire, piece, false);
    ASSERT_EQ(o.result, Result::kComplete) << piece << " " << o.error;
    EXPECT_EQ(o.body, "hello world") << piece;
    // The bytes after the response stay (those of the piece that completed it).
    EXPECT_TRUE(std::string_view("HTTP/1.1").starts_with(o.left)) << piece << " " << o.left;
  }
}

TEST(HttpResponseParserStreamTest, BodyComesOutBeforeTheResponseEnds) {
  ResponseParser p;
  p.set_streaming(true);
  ChainBuffer in, body;
  in.Append("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\"");
  EXPECT_EQ(p.ParseStream(&in, false, &body), Result::kNeedMore);
  EXPECT_TRUE(p.head_parsed());
  EXPECT_EQ(p.head().status, 200);
  EXPECT_EQ(body.ToString(), "{\"a\"");
  EXPECT_TRUE(in.empty());
  body.Clear();
  in.Append(":1}\r\n");
  EXPECT_EQ(p.ParseStream(&in, false, &body), Result::kNeedMore);
  EXPECT_EQ(body.ToString(), ":1}");  // the rest of the announced chunk is still to come
  body.Clear();
  EXPECT_EQ(p.ParseStream(&in, true, &body), Result::kError);
  EXPECT_EQ(p.error(), "connection closed before the response was complete");
}

TEST(HttpResponseParserStreamTest, NoTotalBodyLimitButFramingLimitsHold) {
  ResponseLimits lim;
  lim.max_body_bytes = 10;
  std::string wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 100; ++i) wire += "a\r\n0123456789\r\n";
  wire += "0\r\n\r\n";
  StreamOutcome o = StreamInPieces(wire, 37, false, lim);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body.size(), 1000u);
  EXPECT_LT(o.max_in, 100u);  // consumed as it goes
  // A chunk-size line over the limit is still an error.
  lim.max_chunk_line = 8;
  o = StreamInPieces("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;aaaaaaaaaa\r\n", 3,
                     false, lim);
  EXPECT_EQ(o.result, Result::kError);
  // Bad chunk framing is an error with a reason.
  o = StreamInPieces("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 1, false);
  EXPECT_EQ(o.result, Result::kError);
  EXPECT_FALSE(o.error.empty());
}

TEST(HttpResponseParserStreamTest, ContentLengthUntilCloseAndBodiless) {
  ResponseLimits lim;
  lim.max_body_bytes = 4;
  const std::string cl = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789rest";
  for (size_t piece = 1; piece <= cl.size(); ++piece) {
    StreamOutcome o = StreamInPieces(cl, piece, false, lim);
    ASSERT_EQ(o.result, Result::kComplete) << piece << " " << o.error;
    EXPECT_EQ(o.body, "0123456789");
    EXPECT_TRUE(std::string_view("rest").starts_with(o.left)) << piece;
  }
  StreamOutcome o = StreamInPieces("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234", 2, true);
  EXPECT_EQ(o.result, Result::kError);
  EXPECT_EQ(o.body, "01234");
  o = StreamInPieces("HTTP/1.0 200 OK\r\n\r\nuntil the close", 4, true, lim);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "until the close");
  o = StreamInPieces("HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc", 5, false);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "");
  EXPECT_TRUE(std::string_view("abc").starts_with(o.left));
  o = StreamInPieces("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
                     1, false);
  EXPECT_EQ(o.result, Result::kError);
  o = StreamInPieces("garbage\r\n\r\n", 1, false);
  EXPECT_EQ(o.result, Result::kError);
  EXPECT_FALSE(o.error.empty());
}

}  // namespace
}  // namespace trpc::http::detail
