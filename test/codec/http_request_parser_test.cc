// The incremental HTTP/1.1 request parser: framing, head fields, pipelining under every split,
// each limit at and one past its bound, every malformed and smuggling-shaped input, and the
// linear-work guarantee.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "trpc/codec/http/detail/request_parser.h"

namespace trpc::http::detail {
namespace {

using Result = RequestParser::Result;
using namespace std::string_view_literals;

ChainBuffer Buf(std::string_view s) {
  ChainBuffer b;
  b.Append(s);
  return b;
}

// What one Parse loop saw for one request, in a form that compares across splits.
struct Outcome {
  Result result = Result::kNeedMore;
  std::string method, target, path, query;
  int version_minor = -1;
  std::vector<std::pair<std::string, std::string>> headers;
  bool keep_alive = false, expect_continue = false, chunked = false;
  uint64_t content_length = 0;
  std::string body;
  size_t head_size = 0, wire_size = 0;
  int status = 0;
  std::string error;

  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  os << "{result=" << static_cast<int>(o.result) << " " << o.method << " " << o.target
     << " path=" << o.path << " query=" << o.query << " 1." << o.version_minor
     << " headers=" << o.headers.size() << " body=" << o.body.size() << " head=" << o.head_size
     << " wire=" << o.wire_size << " status=" << o.status << " error=" << o.error << "}";
  return os;
}

Outcome Capture(Result r, RequestParser& p, const ChainBuffer& in) {
  Outcome o;
  o.result = r;
  if (r == Result::kError) {
    o.status = p.error_status();
    o.error = p.error();
    return o;
  }
  const RequestHead& h = p.head();
  o.method = MethodName(h.method);
  o.target = h.target;
  o.path = h.path;
  o.query = h.query;
  o.version_minor = h.version_minor;
  o.headers = h.headers;
  o.keep_alive = h.keep_alive;
  o.expect_continue = h.expect_continue;
  o.chunked = h.chunked;
  o.content_length = h.content_length;
  o.head_size = p.head_size();
  o.wire_size = p.wire_size();
  if (h.chunked) {
    o.body = p.dechunked_body().ToString();
  } else {
    o.body = in.ToString().substr(p.head_size(), p.wire_size() - p.head_size());
  }
  return o;
}

// Feeds `stream` in pieces of the given sizes (the rest in one last piece), as a connection does:
// after each append, parse until kNeedMore; on kComplete cut wire_size bytes and Reset. With
// `fragment`, every piece lands in its own buffer span, so heads straddle blocks.
std::vector<Outcome> ParseStream(std::string_view stream, const std::vector<size_t>& pieces,
                                 const ParserLimits& limits = {}, bool fragment = false) {
  RequestParser p(limits);
  ChainBuffer in, spacer;
  std::vector<Outcome> out;
  size_t off = 0;
  for (size_t i = 0; off < stream.size() || i == 0; ++i) {
    const size_t n =
        i < pieces.size() ? std::min(pieces[i], stream.size() - off) : stream.size() - off;
    in.Append(stream.substr(off, n));
    if (fragment) spacer.Append("x", 1);  // the next append to `in` starts a new span
    off += n;
    for (;;) {
      const Result r = p.Parse(in);
      if (r == Result::kNeedMore) break;
      out.push_back(Capture(r, p, in));
      if (r == Result::kError) return out;
      in.Skip(p.wire_size());
      p.Reset();
    }
  }
  return out;
}

std::vector<Outcome> ParseWhole(std::string_view stream, const ParserLimits& limits = {}) {
  return ParseStream(stream, {}, limits);
}

std::vector<Outcome> ParseBytewise(std::string_view stream, const ParserLimits& limits = {},
                                   bool fragment = false) {
  return ParseStream(stream, std::vector<size_t>(stream.size(), 1), limits, fragment);
}

// The outcome of feeding one request (or a prefix of one) whole.
Outcome ParseOne(std::string_view request, const ParserLimits& limits = {}) {
  RequestParser p(limits);
  ChainBuffer in = Buf(request);
  return Capture(p.Parse(in), p, in);
}

void ExpectError(std::string_view request, int status, std::string_view why,
                 const ParserLimits& limits = {}) {
  SCOPED_TRACE(std::string(request));
  Outcome o = ParseOne(request, limits);
  EXPECT_EQ(o.result, Result::kError);
  EXPECT_EQ(o.status, status);
  EXPECT_EQ(o.error, why);
  // The same verdict however the bytes arrive.
  std::vector<Outcome> bytewise = ParseBytewise(request, limits, true);
  ASSERT_EQ(bytewise.size(), 1u);
  EXPECT_EQ(bytewise[0], o);
}

constexpr std::string_view kGet = "GET /index.html HTTP/1.1\r\nHost: example.com\r\n\r\n";

TEST(HttpRequestParserTest, SimpleGet) {
  Outcome o = ParseOne(kGet);
  ASSERT_EQ(o.result, Result::kComplete);
  EXPECT_EQ(o.method, "GET");
  EXPECT_EQ(o.target, "/index.html");
  EXPECT_EQ(o.path, "/index.html");
  EXPECT_EQ(o.query, "");
  EXPECT_EQ(o.version_minor, 1);
  ASSERT_EQ(o.headers.size(), 1u);
  EXPECT_EQ(o.headers[0].first, "Host");
  EXPECT_EQ(o.headers[0].second, "example.com");
  EXPECT_TRUE(o.keep_alive);
  EXPECT_FALSE(o.expect_continue);
  EXPECT_FALSE(o.chunked);
  EXPECT_EQ(o.content_length, 0u);
  EXPECT_EQ(o.head_size, kGet.size());
  EXPECT_EQ(o.wire_size, kGet.size());
}

TEST(HttpRequestParserTest, EachPrefixNeedsMore) {
  for (size_t n = 0; n < kGet.size(); ++n) {
    RequestParser p;
    ChainBuffer in = Buf(kGet.substr(0, n));
    EXPECT_EQ(p.Parse(in), Result::kNeedMore) << n;
    EXPECT_FALSE(p.head_complete());
  }
}

TEST(HttpRequestParserTest, FieldsKeepOrderAndNamesTrimValues) {
  Outcome o = ParseOne(
      "GET / HTTP/1.1\r\nHost: h\r\nX-Multi:  a b \t\r\nx-multi:\tc\r\nEmpty:\r\n"
      "X-Obs: caf\xc3\xa9\r\n\r\n");
  ASSERT_EQ(o.result, Result::kComplete);
  std::vector<std::pair<std::string, std::string>> want = {
      {"Host", "h"}, {"X-Multi", "a b"}, {"x-multi", "c"}, {"Empty", ""}, {"X-Obs", "caf\xc3\xa9"}};
  EXPECT_EQ(o.headers, want);

  RequestParser p;
  ChainBuffer in = Buf("GET / HTTP/1.1\r\nHost: h\r\nX-Multi: a\r\nx-multi: b\r\n\r\n");
  ASSERT_EQ(p.Parse(in), Result::kComplete);
  ASSERT_NE(p.head().Find("X-MULTI"), nullptr);
  EXPECT_EQ(*p.head().Find("X-MULTI"), "a");
  EXPECT_EQ(p.head().Find("X-Multi-2"), nullptr);
}

TEST(HttpRequestParserTest, EveryMethod) {
  for (std::string_view m :
       {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"}) {
    Outcome o = ParseOne(std::string(m) + " / HTTP/1.1\r\nHost: h\r\n\r\n");
    EXPECT_EQ(o.result, Result::kComplete) << m;
    EXPECT_EQ(o.method, m);
  }
}

TEST(HttpRequestParserTest, TargetForms) {
  struct Case {
    std::string_view method, target, path, query;
  };
  for (const Case& c : std::vector<Case>{
           {"GET", "/a/b?x=1&y=%20", "/a/b", "x=1&y=%20"},
           {"GET", "/?", "/", ""},
           {"GET", "/a?b?c", "/a", "b?c"},
           {"GET", "http://example.com:8080/p/q?z=1", "/p/q", "z=1"},
           {"GET", "HTTPS://example.com", "/", ""},
           {"GET", "http://example.com?k", "/", "k"},
           {"OPTIONS", "*", "*", ""},
       }) {
    Outcome o = ParseOne(std::string(c.method) + " " + std::string(c.target) +
                         " HTTP/1.1\r\nHost: h\r\n\r\n");
    ASSERT_EQ(o.result, Result::kComplete) << c.target << " " << o.error;
    EXPECT_EQ(o.target, c.target);
    EXPECT_EQ(o.path, c.path) << c.target;
    EXPECT_EQ(o.query, c.query) << c.target;
  }
}

TEST(HttpRequestParserTest, PostWithContentLength) {
  const std::string req = "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world";
  RequestParser p;
  ChainBuffer in = Buf(req.substr(0, req.size() - 1));
  EXPECT_EQ(p.Parse(in), Result::kNeedMore);
  EXPECT_TRUE(p.head_complete());
  EXPECT_EQ(p.head().content_length, 11u);
  in.Append(req.substr(req.size() - 1));
  ASSERT_EQ(p.Parse(in), Result::kComplete);
  EXPECT_EQ(p.head_size(), req.size() - 11);
  EXPECT_EQ(p.wire_size(), req.size());
  EXPECT_EQ(p.Parse(in), Result::kComplete);  // idempotent until Reset
  Outcome o = Capture(Result::kComplete, p, in);
  EXPECT_EQ(o.body, "hello world");
}

TEST(HttpRequestParserTest, ContentLengthListOfIdenticalValuesAndLeadingZeros) {
  Outcome o = ParseOne(
      "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3 , 3\r\ncontent-length: 003\r\n\r\nabc");
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.content_length, 3u);
  EXPECT_EQ(o.body, "abc");
  o = ParseOne("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(o.result, Result::kComplete);
  EXPECT_EQ(o.wire_size, o.head_size);
}

constexpr std::string_view kChunked =
    "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip;q=1 , Chunked\r\n\r\n";

TEST(HttpRequestParserTest, ChunkedWithExtensionsAndTrailers) {
  const std::string req =
      "POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=value;flag\r\nhello\r\n"
      "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
      "00a;q=\"quoted ; string\"\r\n0123456789\r\n"
      "0;last\r\nX-Checksum: abc\r\nX-Other: \t1\r\n\r\n";
  Outcome o = ParseOne(req);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_TRUE(o.chunked);
  EXPECT_EQ(o.content_length, 0u);
  EXPECT_EQ(o.body, "helloabcdefghijklmnopqrstuvwxyz0123456789");
  EXPECT_EQ(o.wire_size, req.size());
  // Trailers are checked and dropped, never merged into the head.
  EXPECT_EQ(o.headers.size(), 2u);

  Outcome empty =
      ParseOne("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  ASSERT_EQ(empty.result, Result::kComplete);
  EXPECT_EQ(empty.body, "");
}

TEST(HttpRequestParserTest, OtherCodingsBeforeChunkedAreNotImplemented) {
  ExpectError(std::string(kChunked), 501, "transfer-coding other than chunked not implemented");
  ExpectError(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n"
      "Transfer-Encoding: chunked\r\n\r\n",
      501, "transfer-coding other than chunked not implemented");
}

// Three requests back to back, with a body each way and a tolerated CRLF between two of them.
const std::string kPipelined =
    "GET /one?x=1 HTTP/1.1\r\nHost: h\r\nUser-Agent: t\r\n\r\n"
    "POST /two HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nHELLO"
    "\r\n"
    "PUT /three HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3;e=1\r\nabc\r\n2\r\nde\r\n0\r\nT: v\r\n\r\n";

TEST(HttpRequestParserTest, ThreePipelinedRequests) {
  std::vector<Outcome> got = ParseWhole(kPipelined);
  ASSERT_EQ(got.size(), 3u);
  for (const Outcome& o : got) ASSERT_EQ(o.result, Result::kComplete) << o;
  EXPECT_EQ(got[0].target, "/one?x=1");
  EXPECT_EQ(got[0].query, "x=1");
  EXPECT_EQ(got[0].body, "");
  EXPECT_EQ(got[1].method, "POST");
  EXPECT_EQ(got[1].body, "HELLO");
  EXPECT_EQ(got[2].method, "PUT");
  EXPECT_EQ(got[2].body, "abcde");
  EXPECT_EQ(got[0].wire_size + got[1].wire_size + got[2].wire_size, kPipelined.size());
  EXPECT_EQ(got[2].head_size, got[2].wire_size - 30);  // the CRLF before PUT is in its head
}

TEST(HttpRequestParserTest, PipelinedStreamSplitAtEveryOffset) {
  const std::vector<Outcome> whole = ParseWhole(kPipelined);
  ASSERT_EQ(whole.size(), 3u);
  for (size_t k = 0; k <= kPipelined.size(); ++k) {
    EXPECT_EQ(ParseStream(kPipelined, {k}), whole) << "split at " << k;
    EXPECT_EQ(ParseStream(kPipelined, {k}, {}, true), whole) << "fragmented split at " << k;
  }
  EXPECT_EQ(ParseBytewise(kPipelined), whole);
  EXPECT_EQ(ParseBytewise(kPipelined, {}, true), whole);
  for (size_t step = 2; step < 40; ++step) {
    EXPECT_EQ(ParseStream(kPipelined, std::vector<size_t>(kPipelined.size(), step), {}, true),
              whole)
        << "step " << step;
  }
}

TEST(HttpRequestParserTest, ParsesAgainAfterResetFollowingAnError) {
  RequestParser p;
  ChainBuffer bad = Buf("GET / HTTP/1.1\nHost: h\r\n\r\n");
  ASSERT_EQ(p.Parse(bad), Result::kError);
  EXPECT_EQ(p.Parse(bad), Result::kError);  // sticky
  p.Reset();
  ChainBuffer good = Buf(kGet);
  EXPECT_EQ(p.Parse(good), Result::kComplete);
  EXPECT_EQ(p.error_status(), 0);
}

TEST(HttpRequestParserTest, KeepAliveRules) {
  struct Case {
    std::string_view request;
    bool keep_alive;
  };
  for (const Case& c : std::vector<Case>{
           {"GET / HTTP/1.1\r\nHost: h\r\n\r\n", true},
           {"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", false},
           {"GET / HTTP/1.1\r\nHost: h\r\nConnection: Upgrade, CLOSE\r\n\r\n", false},
           {"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n", true},
           {"GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n", true},
           {"GET / HTTP/1.0\r\n\r\n", false},
           {"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
           {"GET / HTTP/1.0\r\nConnection: foo ,Keep-Alive\r\n\r\n", true},
           {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
           {"GET / HTTP/1.0\r\nConnection: keep-alive-ish\r\n\r\n", false},
       }) {
    Outcome o = ParseOne(c.request);
    ASSERT_EQ(o.result, Result::kComplete) << c.request << o.error;
    EXPECT_EQ(o.keep_alive, c.keep_alive) << c.request;
  }
}

TEST(HttpRequestParserTest, Http10NeedsNoHost) {
  Outcome o = ParseOne("POST /x HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi");
  ASSERT_EQ(o.result, Result::kComplete);
  EXPECT_EQ(o.version_minor, 0);
  EXPECT_EQ(o.body, "hi");
}

TEST(HttpRequestParserTest, ExpectContinueIsKnownOnceTheHeadIsIn) {
  const std::string head =
      "PUT /big HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 4\r\n\r\n";
  RequestParser p;
  ChainBuffer in = Buf(head.substr(0, head.size() - 1));
  EXPECT_EQ(p.Parse(in), Result::kNeedMore);
  EXPECT_FALSE(p.head_complete());
  in.Append(head.substr(head.size() - 1));
  EXPECT_EQ(p.Parse(in), Result::kNeedMore);
  EXPECT_TRUE(p.head_complete());
  EXPECT_TRUE(p.head().expect_continue);
  EXPECT_EQ(p.head_size(), head.size());
  in.Append("data");
  EXPECT_EQ(p.Parse(in), Result::kComplete);

  // Only HTTP/1.1 clients wait for it; other expectations are not this one.
  EXPECT_FALSE(ParseOne("PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").expect_continue);
  EXPECT_FALSE(ParseOne("PUT / HTTP/1.1\r\nHost: h\r\nExpect: 101-x\r\n\r\n").expect_continue);
}

TEST(HttpRequestParserTest, UpToTwoEmptyLinesBeforeTheRequestLine) {
  Outcome o = ParseOne(std::string("\r\n\r\n") + std::string(kGet));
  ASSERT_EQ(o.result, Result::kComplete);
  EXPECT_EQ(o.head_size, kGet.size() + 4);  // the empty lines are consumed with the request
  EXPECT_EQ(o.target, "/index.html");
  ExpectError(std::string("\r\n\r\n\r\n") + std::string(kGet), 400,
              "more than 2 empty lines before the request line");
  ExpectError(std::string("\n") + std::string(kGet), 400, "bare LF (line not ended by CRLF)");
}

// ---- Limits: each at exactly its bound, and one byte / one unit past it. ----

// A request line of exactly `size` bytes, CRLF included.
std::string RequestLineOfSize(size_t size) {
  const std::string fixed = "GET / HTTP/1.1\r\n";
  return "GET /" + std::string(size - fixed.size(), 'a') + " HTTP/1.1\r\n";
}

// A whole head of exactly `size` bytes (request line + Host + one padding field + CRLF).
std::string HeadOfSize(size_t size) {
  const std::string fixed = "GET / HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n";
  return "GET / HTTP/1.1\r\nHost: h\r\nX: " + std::string(size - fixed.size(), 'v') + "\r\n\r\n";
}

std::string HeadWithFields(size_t fields) {
  std::string s = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (size_t i = 1; i < fields; ++i) s += "F" + std::to_string(i) + ": v\r\n";
  return s + "\r\n";
}

const ParserLimits kSmall = {.max_request_line = 64,
                             .max_header_bytes = 256,
                             .max_header_count = 5,
                             .max_body_bytes = 100,
                             .max_chunk_line = 16};

class LimitTest : public ::testing::TestWithParam<ParserLimits> {};

TEST_P(LimitTest, RequestLine) {
  const ParserLimits& lim = GetParam();
  std::string at = RequestLineOfSize(lim.max_request_line) + "Host: h\r\n\r\n";
  EXPECT_EQ(ParseOne(at, lim).result, Result::kComplete);
  EXPECT_EQ(ParseBytewise(at, lim).size(), 1u);
  std::string over = RequestLineOfSize(lim.max_request_line + 1) + "Host: h\r\n\r\n";
  ExpectError(over, 414, "request line too long", lim);
  // Decided before the line ends: max bytes without their LF cannot be a line of max bytes.
  RequestParser p(lim);
  ChainBuffer in = Buf(over.substr(0, lim.max_request_line - 1));
  EXPECT_EQ(p.Parse(in), Result::kNeedMore);
  in.Append(over.substr(lim.max_request_line - 1, 1));
  EXPECT_EQ(p.Parse(in), Result::kError);
  EXPECT_EQ(p.error_status(), 414);
}

TEST_P(LimitTest, HeaderBytes) {
  const ParserLimits& lim = GetParam();
  const std::string at = HeadOfSize(lim.max_header_bytes);
  Outcome o = ParseOne(at, lim);
  EXPECT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.head_size, lim.max_header_bytes);
  const std::string over = HeadOfSize(lim.max_header_bytes + 1);
  ExpectError(over, 431, "header section too large", lim);
  // Decided as soon as the last field line ends: the blank line cannot fit any more.
  RequestParser p(lim);
  ChainBuffer in = Buf(over.substr(0, lim.max_header_bytes - 2));
  EXPECT_EQ(p.Parse(in), Result::kNeedMore);
  in.Append(over.substr(lim.max_header_bytes - 2, 1));
  EXPECT_EQ(p.Parse(in), Result::kError);
  EXPECT_EQ(p.error_status(), 431);
}

TEST_P(LimitTest, HeaderCount) {
  const ParserLimits& lim = GetParam();
  Outcome o = ParseOne(HeadWithFields(lim.max_header_count), lim);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.headers.size(), lim.max_header_count);
  ExpectError(HeadWithFields(lim.max_header_count + 1), 431, "too many header fields", lim);
}

TEST_P(LimitTest, ContentLengthDecidedFromTheHead) {
  const ParserLimits& lim = GetParam();
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: ";
  Outcome o = ParseOne(head + std::to_string(lim.max_body_bytes) + "\r\n\r\n", lim);
  EXPECT_EQ(o.result, Result::kNeedMore);  // accepted: waiting for the body
  ExpectError(head + std::to_string(lim.max_body_bytes + 1) + "\r\n\r\n", 413,
              "Content-Length exceeds the body limit", lim);
}

std::string Hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

TEST_P(LimitTest, DechunkedTotal) {
  const ParserLimits& lim = GetParam();
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  // The size line alone decides, before any data arrives.
  EXPECT_EQ(ParseOne(head + Hex(lim.max_body_bytes) + "\r\n", lim).result, Result::kNeedMore);
  ExpectError(head + Hex(lim.max_body_bytes + 1) + "\r\n", 413,
              "chunked body exceeds the body limit", lim);
}

TEST(HttpRequestParserTest, DechunkedTotalCountsEveryChunk) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string first = "32\r\n" + std::string(50, 'a') + "\r\n";  // 50 of kSmall's 100
  Outcome o = ParseOne(head + first + "32\r\n" + std::string(50, 'b') + "\r\n0\r\n\r\n", kSmall);
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body.size(), 100u);
  ExpectError(head + first + "33\r\n", 413, "chunked body exceeds the body limit", kSmall);
}

TEST_P(LimitTest, ChunkLine) {
  const ParserLimits& lim = GetParam();
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";
  // "1;" + extension + CRLF
  std::string at = "1;" + std::string(lim.max_chunk_line - 4, 'e') + "\r\n";
  Outcome o = ParseOne(head + at + "x\r\n0\r\n\r\n", lim);
  EXPECT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "x");
  std::string over = "1;" + std::string(lim.max_chunk_line - 3, 'e') + "\r\n";
  ExpectError(head + over + "x\r\n0\r\n\r\n", 400, "chunk-size line too long", lim);
}

TEST_P(LimitTest, TrailerBytes) {
  const ParserLimits& lim = GetParam();
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
  // A trailer section (fields + final CRLF) is bounded like a header section.
  auto trailer = [](size_t size) { return "T: " + std::string(size - 7, 't') + "\r\n\r\n"; };
  EXPECT_EQ(ParseOne(head + trailer(lim.max_header_bytes), lim).result, Result::kComplete);
  ExpectError(head + trailer(lim.max_header_bytes + 1), 431, "trailer section too large", lim);
}

INSTANTIATE_TEST_SUITE_P(SmallAndDefault, LimitTest, ::testing::Values(kSmall, ParserLimits{}));

// ---- max_message_bytes: every byte of a request as sent. ----

const std::string kChunkedHead = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";

ParserLimits MessageLimit(size_t n) {
  ParserLimits lim;
  lim.max_message_bytes = n;
  return lim;
}

std::string OverMessage(size_t n) {
  return "request larger than max_packet_size (" + std::to_string(n) + " bytes)";
}

TEST(HttpRequestParserTest, MessageBytesCountChunkFramingExtensionsAndTrailers) {
  const std::string req = kChunkedHead + "0001;ext=v\r\nx\r\n3\r\nabc\r\n0\r\nTrailer: t\r\n\r\n";
  Outcome o = ParseOne(req, MessageLimit(req.size()));
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "xabc");
  EXPECT_EQ(o.wire_size, req.size());
  ExpectError(req, 413, OverMessage(req.size() - 1), MessageLimit(req.size() - 1));
  // Only the request's own bytes count: a pipelined next one may follow in the same buffer.
  const std::vector<Outcome> two = ParseWhole(req + req, MessageLimit(req.size()));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[1].result, Result::kComplete) << two[1].error;
}

TEST(HttpRequestParserTest, MessageBytesDecidedFromTheHeadForContentLength) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n";
  EXPECT_EQ(ParseOne(head, MessageLimit(head.size() + 10)).result, Result::kNeedMore);
  ExpectError(head, 413, OverMessage(head.size() + 9), MessageLimit(head.size() + 9));
}

TEST(HttpRequestParserTest, MessageBytesBoundTheHeadToo) {
  const std::string head = HeadOfSize(200);
  EXPECT_EQ(ParseOne(head, MessageLimit(200)).result, Result::kComplete);
  ExpectError(head, 431, OverMessage(199), MessageLimit(199));
  ExpectError(RequestLineOfSize(100) + "Host: h\r\n\r\n", 414, OverMessage(50), MessageLimit(50));
}

// The hostile body of issue 24: 1-byte chunks whose framing is all the bytes (here zero-padded
// sizes; extensions have their own total below). Read the way a connection reads, 64 KiB at a
// time: the request is refused with the first read that takes it over the bound, never later.
TEST(HttpRequestParserTest, HeldWireBytesStopAtMaxMessageBytes) {
  constexpr size_t kMax = 1u << 20;
  constexpr size_t kRead = 64u << 10;
  std::string piece;
  while (piece.size() < kRead) piece += "0000000000000001\r\nx\r\n";
  RequestParser p(MessageLimit(kMax));
  ChainBuffer in = Buf(kChunkedHead);
  Result r = p.Parse(in);
  while (r == Result::kNeedMore && in.size() < 64 * kMax) {
    ASSERT_LE(in.size(), kMax);  // still within the bound while it needs more
    in.Append(piece);
    r = p.Parse(in);
  }
  ASSERT_EQ(r, Result::kError);
  EXPECT_EQ(p.error_status(), 413);
  EXPECT_EQ(p.error(), OverMessage(kMax));
  EXPECT_LE(in.size(), kMax + piece.size());
  EXPECT_LE(p.dechunked_body().size(), kMax);
}

TEST(HttpRequestParserTest, ChunkExtensionsHaveATotal) {
  // 1-byte chunks with 100 bytes of extension each (the bytes after ';'):
  // kMaxChunkExtensionBytes in all is accepted, one byte more is refused, however small each
  // extension is.
  const std::string chunk = "1;" + std::string(100, 'e') + "\r\nx\r\n";
  const size_t full = kMaxChunkExtensionBytes / 100;
  const size_t rest = kMaxChunkExtensionBytes % 100;
  std::string body;
  for (size_t i = 0; i < full; ++i) body += chunk;
  const std::string last = "1;" + std::string(rest, 'e') + "\r\nx\r\n";
  const std::string one_more = "1;" + std::string(rest + 1, 'e') + "\r\nx\r\n";
  Outcome o = ParseOne(kChunkedHead + body + last + "0\r\n\r\n");
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body.size(), full + 1);
  ExpectError(kChunkedHead + body + one_more + "0\r\n\r\n", 413,
              "chunk extensions exceed 16384 bytes");
}

TEST(HttpRequestParserTest, DefaultLimits) {
  ParserLimits d;
  EXPECT_EQ(d.max_request_line, 8192u);
  EXPECT_EQ(d.max_header_bytes, 65536u);
  EXPECT_EQ(d.max_header_count, 100u);
  EXPECT_EQ(d.max_body_bytes, 8u << 20);
  EXPECT_EQ(d.max_chunk_line, 4096u);
}

// ---- Malformed and smuggling-shaped input: each has its status and its own reason. ----

struct BadCase {
  const char* name;
  std::string request;
  int status;
  std::string_view error;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

const std::string kCh = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n";

const std::vector<BadCase> kBadCases = {
    // Line endings.
    {"BareLfEndsRequestLine", "GET / HTTP/1.1\nHost: h\r\n\r\n", 400,
     "bare LF (line not ended by CRLF)"},
    {"BareLfEndsField", "GET / HTTP/1.1\r\nHost: h\n\r\n", 400, "bare LF (line not ended by CRLF)"},
    {"BareLfEndsHead", "GET / HTTP/1.1\r\nHost: h\r\n\n", 400, "bare LF (line not ended by CRLF)"},
    {"BareCrInValue", "GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", 400,
     "bare CR (not followed by LF)"},
    {"BareCrInName", "GET / HTTP/1.1\r\nHo\rst: h\r\n\r\n", 400, "bare CR (not followed by LF)"},
    {"BareCrInTarget", "GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "bare CR (not followed by LF)"},
    {"BareCrAfterVersion", "GET / HTTP/1.1\rHost: h\r\n\r\n", 400, "bare CR (not followed by LF)"},
    {"BareCrInMethod", "GE\rT / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "bare CR (not followed by LF)"},
    // Field lines.
    {"ObsFold", "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400,
     "obs-fold (field line starting with whitespace)"},
    {"ObsFoldTab", "GET / HTTP/1.1\r\nHost: h\r\n\tX: a\r\n\r\n", 400,
     "obs-fold (field line starting with whitespace)"},
    {"SpaceBeforeColon", "GET / HTTP/1.1\r\nHost: h\r\nContent-Length : 5\r\n\r\nhello", 400,
     "whitespace between field name and colon"},
    {"TabBeforeColon", "GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", 400,
     "whitespace between field name and colon"},
    {"NonTokenInName", "GET / HTTP/1.1\r\nHost: h\r\nX(y): 1\r\n\r\n", 400,
     "invalid character in field name"},
    {"NonAsciiInName", "GET / HTTP/1.1\r\nHost: h\r\nX\xc3\xa9: 1\r\n\r\n", 400,
     "invalid character in field name"},
    {"EmptyName", "GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400, "empty field name"},
    {"NoColon", "GET / HTTP/1.1\r\nHost: h\r\nNoColonHere\r\n\r\n", 400,
     "field line without a colon"},
    {"NulInValue", std::string("GET / HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n"sv), 400,
     "control character in field value"},
    {"DelInValue", "GET / HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400,
     "control character in field value"},
    // Request line.
    {"LeadingSpace", " GET / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "whitespace before the method"},
    {"NonTokenMethod", "G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid character in method"},
    {"TabAfterMethod", "GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n", 400, "invalid character in method"},
    {"NoTarget", "GET\r\nHost: h\r\n\r\n", 400, "request line without a request-target"},
    {"DoubleSpace", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "empty request-target"},
    {"NoVersion", "GET /\r\nHost: h\r\n\r\n", 400, "request line without an HTTP version"},
    {"SpaceInTarget", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "space in request-target"},
    {"CtlInTarget", "GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "invalid character in request-target"},
    {"DelInTarget", "GET /a\x7f HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "invalid character in request-target"},
    {"TabInTarget", "GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "invalid character in request-target"},
    {"NonAsciiTarget", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "invalid character in request-target"},
    {"LowercaseVersion", "GET / http/1.1\r\nHost: h\r\n\r\n", 400, "malformed HTTP version"},
    {"VersionX", "GET / HTTP/x\r\nHost: h\r\n\r\n", 400, "malformed HTTP version"},
    {"VersionTrailingSpace", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400, "malformed HTTP version"},
    {"Version11Long", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400, "malformed HTTP version"},
    {"Version20", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, "HTTP version not supported"},
    {"Version12", "GET / HTTP/1.2\r\nHost: h\r\n\r\n", 505, "HTTP version not supported"},
    {"Version09", "GET / HTTP/0.9\r\n\r\n", 505, "HTTP version not supported"},
    {"UnknownMethod", "BREW /pot HTTP/1.1\r\nHost: h\r\n\r\n", 501, "method not implemented"},
    {"LowercaseMethod", "get / HTTP/1.1\r\nHost: h\r\n\r\n", 501, "method not implemented"},
    {"StarWithoutOptions", "GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "'*' request-target without OPTIONS"},
    {"AuthorityForm", "CONNECT example.com:443 HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "request-target is neither origin-form nor absolute-form"},
    {"RelativeTarget", "GET index.html HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "request-target is neither origin-form nor absolute-form"},
    {"FtpScheme", "GET ftp://h/ HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "request-target is neither origin-form nor absolute-form"},
    {"AbsoluteNoHost", "GET http:///p HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "absolute-form target without a host"},
    {"AbsoluteEmpty", "GET http:// HTTP/1.1\r\nHost: h\r\n\r\n", 400,
     "absolute-form target without a host"},
    // Host.
    {"NoHost", "GET / HTTP/1.1\r\n\r\n", 400, "missing Host header"},
    {"TwoHosts", "GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400, "more than one Host header"},
    // Content-Length.
    {"ClAndTe",
     "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: "
     "chunked\r\n\r\n0\r\n\r\n",
     400, "both Content-Length and Transfer-Encoding"},
    {"TeAndCl",
     "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: "
     "0\r\n\r\n0\r\n\r\n",
     400, "both Content-Length and Transfer-Encoding"},
    {"DuplicateClDifferent",
     "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400,
     "duplicate Content-Length with different values"},
    {"ClListDifferent", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 6\r\n\r\nhello!", 400,
     "duplicate Content-Length with different values"},
    {"ClPlus", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +5\r\n\r\nhello", 400,
     "Content-Length is not a decimal number"},
    {"ClMinus", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400,
     "Content-Length is not a decimal number"},
    {"ClInnerSpace", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", 400,
     "Content-Length is not a decimal number"},
    {"ClHex", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x5\r\n\r\n", 400,
     "Content-Length is not a decimal number"},
    {"ClEmpty", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n\r\n", 400,
     "empty Content-Length"},
    {"ClEmptyListItem", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5,\r\n\r\nhello", 400,
     "empty Content-Length"},
    {"ClOverflow", "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n",
     400, "Content-Length overflows 64 bits"},
    {"ClMaxUint64Is413",
     "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n", 413,
     "Content-Length exceeds the body limit"},
    // Transfer-Encoding.
    {"TeNotChunked", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 400,
     "final transfer-coding is not chunked"},
    {"TeChunkedThenGzip", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
     400, "final transfer-coding is not chunked"},
    {"TeChunkedTwice",
     "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
     "chunked\r\n\r\n",
     400, "chunked applied more than once"},
    {"TeChunkedSuffix", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 400,
     "final transfer-coding is not chunked"},
    {"TeEmpty", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400,
     "empty transfer-coding"},
    {"TeEmptyItem", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,chunked\r\n\r\n", 400,
     "empty transfer-coding"},
    {"TeQuoted", "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", 400,
     "malformed transfer-coding"},
    {"TeInHttp10", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
     "Transfer-Encoding in an HTTP/1.0 request"},
    // Chunk framing.
    {"ChunkSizeNotHex", kCh + "g\r\n", 400, "chunk size is not a hex number"},
    {"ChunkSizeEmpty", kCh + "\r\n", 400, "chunk size is not a hex number"},
    {"ChunkSizeSign", kCh + "+5\r\nhello\r\n0\r\n\r\n", 400, "chunk size is not a hex number"},
    {"ChunkSizeLeadingSpace", kCh + " 5\r\nhello\r\n0\r\n\r\n", 400,
     "chunk size is not a hex number"},
    {"ChunkSize0x", kCh + "0x5\r\nhello\r\n0\r\n\r\n", 400, "invalid character after chunk size"},
    {"ChunkSizeTrailingSpace", kCh + "5 \r\nhello\r\n0\r\n\r\n", 400,
     "invalid character after chunk size"},
    {"ChunkSizeTooManyDigits", kCh + "00000000000000001\r\nx\r\n0\r\n\r\n", 400,
     "chunk size has more than 16 hex digits"},
    {"ChunkSizeHuge", kCh + "ffffffffffffffff\r\n", 413, "chunked body exceeds the body limit"},
    {"ChunkSizeBareLf", kCh + "5\nhello\r\n0\r\n\r\n", 400, "bare LF (line not ended by CRLF)"},
    {"ChunkSizeBareCr", kCh + "5\rhello\r\n0\r\n\r\n", 400, "bare CR (not followed by LF)"},
    {"ChunkExtBareLf", kCh + "5;a=b\nhello\r\n0\r\n\r\n", 400, "bare LF (line not ended by CRLF)"},
    {"ChunkExtCtl", kCh + "5;a=\x01\r\nhello\r\n0\r\n\r\n", 400,
     "control character in chunk extension"},
    {"ChunkDataTooLong", kCh + "3\r\nhello\r\n0\r\n\r\n", 400, "missing CRLF after chunk data"},
    {"ChunkDataBareLf", kCh + "5\r\nhello\n0\r\n\r\n", 400, "missing CRLF after chunk data"},
    {"ChunkDataCrOnly", kCh + "5\r\nhello\rX0\r\n\r\n", 400, "missing CRLF after chunk data"},
    {"TrailerObsFold", kCh + "0\r\nT: a\r\n b\r\n\r\n", 400,
     "obs-fold (field line starting with whitespace)"},
    {"TrailerBareLf", kCh + "0\r\nT: a\n\r\n", 400, "bare LF (line not ended by CRLF)"},
    {"TrailerFinalBareLf", kCh + "0\r\n\n", 400, "bare LF (line not ended by CRLF)"},
    {"TrailerNoColon", kCh + "0\r\ngarbage\r\n\r\n", 400, "field line without a colon"},
};

class BadRequestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequestTest, IsRejected) {
  const BadCase& c = GetParam();
  ExpectError(c.request, c.status, c.error);
}

INSTANTIATE_TEST_SUITE_P(All, BadRequestTest, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(HttpRequestParserTest, IdenticalDuplicateContentLengthIsAccepted) {
  Outcome o =
      ParseOne("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello");
  ASSERT_EQ(o.result, Result::kComplete) << o.error;
  EXPECT_EQ(o.body, "hello");
}

// A smuggled second request stays inside the first one's body: the parser frames by the one
// length it accepted, so what follows is body, not a request.
TEST(HttpRequestParserTest, BodyBytesThatLookLikeARequestAreBody) {
  const std::string inner = "GET /admin HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string req =
      "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: " + std::to_string(inner.size()) + "\r\n\r\n" +
      inner;
  std::vector<Outcome> got = ParseWhole(req);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].body, inner);
}

// ---- Linear work: every byte examined a bounded number of times however it arrives. ----

TEST(HttpRequestParserTest, LargeHeadFedOneByteAtATimeIsLinear) {
  std::string head = "GET / HTTP/1.1\r\nHost: h\r\n";
  while (head.size() < 60 * 1024)
    head += "X-Field-" + std::to_string(head.size()) + ": " + std::string(500, 'v') + "\r\n";
  head += "\r\n";
  ParserLimits lim;
  lim.max_header_count = 1000;
  RequestParser p(lim);
  ChainBuffer in;
  Result r = Result::kNeedMore;
  for (char c : head) {
    ASSERT_EQ(r, Result::kNeedMore);
    in.Append(&c, 1);
    r = p.Parse(in);
  }
  ASSERT_EQ(r, Result::kComplete) << p.error();
  // Scanned once for the blank line, parsed once: 2 passes.
  EXPECT_LE(p.bytes_examined(), 2 * head.size());
  EXPECT_EQ(p.wire_size(), head.size());
}

TEST(HttpRequestParserTest, ChunkedBodyFedOneByteAtATimeIsLinear) {
  std::string req = kCh;
  for (int i = 0; i < 200; ++i) req += "10;ext=" + std::to_string(i) + "\r\n0123456789abcdef\r\n";
  req += "0\r\nT: x\r\n\r\n";
  RequestParser p;
  ChainBuffer in, spacer;
  Result r = Result::kNeedMore;
  for (char c : req) {
    in.Append(&c, 1);
    spacer.Append("s");  // a new span per byte, as from many small reads
    r = p.Parse(in);
  }
  ASSERT_EQ(r, Result::kComplete) << p.error();
  EXPECT_EQ(p.dechunked_body().size(), 200u * 16);
  EXPECT_LE(p.bytes_examined(), 2 * req.size());
}

TEST(HttpRequestParserTest, ContentLengthBodyIsNotExamined) {
  const std::string head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4096\r\n\r\n";
  RequestParser p;
  ChainBuffer in = Buf(head);
  ASSERT_EQ(p.Parse(in), Result::kNeedMore);
  const size_t after_head = p.bytes_examined();
  for (int i = 0; i < 4096; ++i) {
    in.Append("b");
    p.Parse(in);
  }
  EXPECT_EQ(p.Parse(in), Result::kComplete);
  EXPECT_EQ(p.bytes_examined(), after_head);
}

TEST(HttpRequestParserTest, MethodNames) {
  EXPECT_EQ(MethodName(Method::kGet), "GET");
  EXPECT_EQ(MethodName(Method::kConnect), "CONNECT");
  EXPECT_EQ(MethodName(Method::kOptions), "OPTIONS");
}

}  // namespace
}  // namespace trpc::http::detail
