// The HTTP/2 session alone: frames go in as bytes; what it emits (SETTINGS, WINDOW_UPDATE,
// responses, RST_STREAM, GOAWAY) and what it hands up (calls with their typed metadata) are
// checked without a connection, a socket or a server.

#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "test/e2e/raw_h2_client.h"
#include "trpc/codec/grpc/detail/h2_client_session.h"
#include "trpc/codec/grpc/detail/h2_server_session.h"

namespace trpc::grpc::detail {
namespace {

using test::raw_h2::Frame;
using test::raw_h2::kData;
using test::raw_h2::kEndHeaders;
using test::raw_h2::kEndStream;
using test::raw_h2::kGoaway;
using test::raw_h2::kHeaders;
using test::raw_h2::kPreface;
using test::raw_h2::kRstStream;
using test::raw_h2::kSettings;
using test::raw_h2::kWindowUpdate;
using test::raw_h2::Literal;
using test::raw_h2::RawFrame;
using test::raw_h2::RequestHeaders;

constexpr uint8_t kAck = 1;

// The frames of `bytes` (after the client preface, if `preface`).
std::vector<RawFrame> Parse(std::string bytes, bool preface = false) {
  if (preface) {
    EXPECT_EQ(bytes.compare(0, kPreface.size(), kPreface), 0);
    bytes.erase(0, kPreface.size());
  }
  std::vector<RawFrame> got;
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[i])); };
  while (bytes.size() >= 9) {
    uint32_t len = (b(0) << 16) | (b(1) << 8) | b(2);
    if (bytes.size() < 9 + len) break;
    got.push_back(RawFrame{static_cast<uint8_t>(bytes[3]), static_cast<uint8_t>(bytes[4]),
                           ((b(5) & 0x7f) << 24) | (b(6) << 16) | (b(7) << 8) | b(8),
                           bytes.substr(9, len)});
    bytes.erase(0, 9 + len);
  }
  EXPECT_TRUE(bytes.empty()) << "a partial frame";
  return got;
}

const RawFrame* FindFrame(const std::vector<RawFrame>& frames, uint8_t type, uint32_t stream) {
  for (const auto& f : frames) {
    if (f.type == type && f.stream == stream) return &f;
  }
  return nullptr;
}

// A gRPC message: the 5-byte prefix and the bytes.
std::string Message(const std::string& bytes) {
  auto n = static_cast<uint32_t>(bytes.size());
  std::string m = {0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                   static_cast<char>(n >> 8), static_cast<char>(n)};
  return m + bytes;
}

// Decodes the header blocks of one direction, in order (HPACK's table is per direction).
class HeaderDecoder {
 public:
  HeaderDecoder() { nghttp2_hd_inflate_new(&inflater_); }
  ~HeaderDecoder() { nghttp2_hd_inflate_del(inflater_); }
  std::map<std::string, std::string> Decode(const std::string& block) {
    std::map<std::string, std::string> fields;
    auto* in = reinterpret_cast<const uint8_t*>(block.data());
    size_t left = block.size();
    for (;;) {
      nghttp2_nv nv;
      int flags = 0;
      ssize_t n = nghttp2_hd_inflate_hd2(inflater_, &nv, &flags, in, left, 1);
      EXPECT_GE(n, 0);
      if (n < 0) break;
      in += n;
      left -= static_cast<size_t>(n);
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) != 0) {
        fields[std::string(reinterpret_cast<char*>(nv.name), nv.namelen)] =
            std::string(reinterpret_cast<char*>(nv.value), nv.valuelen);
      }
      if ((flags & NGHTTP2_HD_INFLATE_FINAL) != 0) {
        nghttp2_hd_inflate_end_headers(inflater_);
        break;
      }
      if ((flags & NGHTTP2_HD_INFLATE_EMIT) == 0 && left == 0) break;
    }
    return fields;
  }

 private:
  nghttp2_hd_inflater* inflater_ = nullptr;
};

uint32_t WindowIncrement(const RawFrame& f) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(f.payload[i])); };
  return ((b(0) & 0x7f) << 24) | (b(1) << 16) | (b(2) << 8) | b(3);
}

class H2ServerSessionTest : public ::testing::Test {
 protected:
  H2ServerSessionTest() {
    options_.max_message_size = 50'000;  // windows stay at 65535
    options_.initial_window_size = 65535;
    options_.connection_window_size = 65535;
    session_ = std::make_unique<H2ServerSession>(options_);
  }

  // Feeds `bytes`; the frames handed up are appended to calls_; what the session emitted
  // (immediate) is returned, parsed.
  std::vector<RawFrame> Feed(const std::string& bytes, SplitResult want = SplitResult::kOk) {
    ChainBuffer in;
    in.Append(bytes);
    std::string err;
    EXPECT_EQ(session_->Feed(&in, &calls_, &err), want) << err;
    ChainBuffer out = std::move(session_->immediate);
    session_->immediate.Clear();
    return Parse(out.ToString());
  }

  std::vector<RawFrame> Open() { return Feed(kPreface + Frame(kSettings, 0, 0, "")); }

  H2Options options_;
  std::unique_ptr<H2ServerSession> session_;
  std::vector<ChainBuffer> calls_;
};

TEST_F(H2ServerSessionTest, AnswersSettingsWithItsOwnAndAnAck) {
  std::vector<RawFrame> out = Open();
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].type, kSettings);
  EXPECT_EQ(out[0].flags, 0);
  EXPECT_EQ(out[0].payload.size(), 4u * 6);  // four settings (a server sends no ENABLE_PUSH)
  EXPECT_EQ(out[1].type, kSettings);
  EXPECT_EQ(out[1].flags, kAck);
  EXPECT_TRUE(calls_.empty());
}

TEST_F(H2ServerSessionTest, HandsUpHeadersAndDataAsOneCallWithItsMeta) {
  Open();
  std::string headers = RequestHeaders();
  Literal(&headers, "x-user", "alice");
  Literal(&headers, "grpc-timeout", "100m");
  Feed(Frame(kHeaders, kEndHeaders, 1, headers) + Frame(kData, kEndStream, 1, Message("hello")));
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].ToString(), "hello");  // the prefix is gone
  auto* head = dynamic_cast<ServerRequestMeta*>(calls_[0].meta());
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->stream_id, 1);
  EXPECT_EQ(head->path, "/trpc.test.helloworld.Greeter/SayHello");
  EXPECT_EQ(head->authority, "localhost");
  EXPECT_EQ(head->timeout, "100m");
  ASSERT_EQ(head->metadata.size(), 1u);
  EXPECT_EQ(head->metadata[0], std::make_pair(std::string("x-user"), std::string("alice")));
  ASSERT_NE(head->cancelled, nullptr);
  EXPECT_FALSE(head->cancelled->cancelled());
}

TEST_F(H2ServerSessionTest, EncodesAReplyAsHeadersDataAndTrailers) {
  Open();
  Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()) +
       Frame(kData, kEndStream, 1, Message("hi")));
  ASSERT_EQ(calls_.size(), 1u);
  ChainBuffer reply;
  reply.Append(Message("pong"));
  auto meta = std::make_unique<ServerReplyMeta>();
  meta->stream_id = 1;
  meta->trailing = {{"x-trailer", "t"}};
  reply.SetMeta(std::move(meta));
  ChainBuffer wire;
  session_->EncodeOutput(std::move(reply), &wire);
  std::vector<RawFrame> out = Parse(wire.ToString());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].type, kHeaders);
  EXPECT_EQ(out[0].flags & kEndStream, 0);
  EXPECT_EQ(out[1].type, kData);
  EXPECT_EQ(out[1].payload, Message("pong"));
  EXPECT_EQ(out[2].type, kHeaders);  // trailers
  EXPECT_NE(out[2].flags & kEndStream, 0);
  HeaderDecoder hd;
  auto headers = hd.Decode(out[0].payload);
  EXPECT_EQ(headers[":status"], "200");
  EXPECT_EQ(headers["content-type"], "application/grpc");
  auto trailers = hd.Decode(out[2].payload);
  EXPECT_EQ(trailers["grpc-status"], "0");
  EXPECT_EQ(trailers["x-trailer"], "t");
  EXPECT_EQ(session_->held_bytes, 0u);
}

TEST_F(H2ServerSessionTest, ErrorReplyWithoutMessageIsTrailersOnly) {
  Open();
  Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()) +
       Frame(kData, kEndStream, 1, Message("hi")));
  ChainBuffer reply;
  auto meta = std::make_unique<ServerReplyMeta>();
  meta->stream_id = 1;
  meta->grpc_status = 14;
  meta->grpc_message = "unavailable";
  reply.SetMeta(std::move(meta));
  ChainBuffer wire;
  session_->EncodeOutput(std::move(reply), &wire);
  std::vector<RawFrame> out = Parse(wire.ToString());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].type, kHeaders);
  EXPECT_NE(out[0].flags & kEndStream, 0);
  auto fields = HeaderDecoder().Decode(out[0].payload);
  EXPECT_EQ(fields["grpc-status"], "14");
  EXPECT_EQ(fields["grpc-message"], "unavailable");
}

TEST_F(H2ServerSessionTest, GivesRequestBytesBackToTheWindowOnlyOnceWhole) {
  Open();
  const std::string big(40'000, 'x');  // over half the 65535 window: worth a WINDOW_UPDATE
  const std::string msg = Message(big);
  std::string data;
  for (size_t at = 0; at < msg.size(); at += 16'384) {
    data += Frame(kData, 0, 1, msg.substr(at, 16'384));
  }
  std::vector<RawFrame> out = Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()) + data);
  EXPECT_EQ(FindFrame(out, kWindowUpdate, 0), nullptr) << "the request is not whole yet";
  EXPECT_GE(session_->held_bytes, msg.size());
  out = Feed(Frame(kData, kEndStream, 1, ""));
  const RawFrame* update = FindFrame(out, kWindowUpdate, 0);
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(WindowIncrement(*update), msg.size());
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].size(), big.size());
}

TEST_F(H2ServerSessionTest, RstStreamCancelsTheCallHandedUp) {
  Open();
  Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()) +
       Frame(kData, kEndStream, 1, Message("hi")));
  ASSERT_EQ(calls_.size(), 1u);
  auto cancelled = static_cast<ServerRequestMeta*>(calls_[0].meta())->cancelled;
  Feed(Frame(kRstStream, 0, 1, std::string("\0\0\0\x08", 4)));  // CANCEL
  EXPECT_TRUE(cancelled->cancelled());
  // The reply that comes later finds no stream: nothing goes out.
  ChainBuffer reply;
  reply.Append(Message("late"));
  auto meta = std::make_unique<ServerReplyMeta>();
  meta->stream_id = 1;
  reply.SetMeta(std::move(meta));
  ChainBuffer wire;
  session_->EncodeOutput(std::move(reply), &wire);
  EXPECT_TRUE(wire.empty());
}

TEST_F(H2ServerSessionTest, ShutdownSendsGoawayNamingTheLastStream) {
  Open();
  Feed(Frame(kHeaders, kEndHeaders, 3, RequestHeaders()) +
       Frame(kData, kEndStream, 3, Message("hi")));
  ChainBuffer wire;
  session_->OnShutdown(&wire);
  std::vector<RawFrame> out = Parse(wire.ToString());
  const RawFrame* goaway = FindFrame(out, kGoaway, 0);
  ASSERT_NE(goaway, nullptr);
  EXPECT_EQ(goaway->ErrorCode(), 0u);       // NO_ERROR
  EXPECT_EQ(WindowIncrement(*goaway), 3u);  // (the last stream id, read the same way)
}

TEST_F(H2ServerSessionTest, MalformedFrameEndsTheConnectionWithGoaway) {
  Open();
  std::vector<RawFrame> out = Feed(Frame(kData, 0, 0, "x"), SplitResult::kError);  // stream 0
  const RawFrame* goaway = FindFrame(out, kGoaway, 0);
  ASSERT_NE(goaway, nullptr);
  EXPECT_EQ(goaway->ErrorCode(), 1u);  // PROTOCOL_ERROR
  EXPECT_TRUE(calls_.empty());
}

TEST_F(H2ServerSessionTest, MalformedRequestIsAnsweredHereNotHandedUp) {
  Open();
  std::vector<RawFrame> out = Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()) +
                                   Frame(kData, kEndStream, 1, "abc"));  // no 5-byte prefix
  EXPECT_TRUE(calls_.empty());
  const RawFrame* answer = FindFrame(out, kHeaders, 1);
  ASSERT_NE(answer, nullptr);
  EXPECT_NE(answer->flags & kEndStream, 0);
  auto fields = HeaderDecoder().Decode(answer->payload);
  EXPECT_EQ(fields["grpc-status"], "13");  // INTERNAL
  EXPECT_EQ(fields["grpc-message"], "the request has no message (5-byte prefix missing)");
}

// ---- Streaming calls: the session knows the streaming paths and hands up their events. ----

// RequestHeaders()'s path as a streaming method (other paths stay unary).
std::shared_ptr<const H2ServerSession::Methods> StreamingSayHello() {
  return std::make_shared<H2ServerSession::Methods>(
      H2ServerSession::Methods{{{"/trpc.test.helloworld.Greeter/SayHello", true}}, false});
}

class H2StreamingSessionTest : public H2ServerSessionTest {
 protected:
  H2StreamingSessionTest() {
    session_ = std::make_unique<H2ServerSession>(options_, StreamingSayHello());
  }

  // The event handed up at `i`.
  ServerStreamEventMeta* Event(size_t i) {
    EXPECT_LT(i, calls_.size());
    if (i >= calls_.size()) return nullptr;
    EXPECT_NE(calls_[i].meta(), nullptr);
    EXPECT_TRUE(calls_[i].meta()->stream_event) << "a unary call, not a stream event";
    return static_cast<ServerStreamEventMeta*>(calls_[i].meta());
  }

  // Opens stream 1 (HEADERS without END_STREAM): its kOpen event is calls_[0].
  void OpenStream() {
    Open();
    Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()));
    ASSERT_EQ(calls_.size(), 1u);
    ASSERT_EQ(Event(0)->kind, ServerStreamEventMeta::Kind::kOpen);
  }

  std::string Compressed(const std::string& bytes) {
    std::string m = Message(bytes);
    m[0] = 1;
    return m;
  }
};

TEST_F(H2StreamingSessionTest, HandsUpTheOpenEachMessageAsItCompletesAndTheHalfClose) {
  OpenStream();
  ServerStreamEventMeta* open = Event(0);
  EXPECT_EQ(open->stream_id, 1);
  EXPECT_EQ(open->session, session_.get());
  ASSERT_NE(open->head, nullptr);
  EXPECT_EQ(open->head->path, "/trpc.test.helloworld.Greeter/SayHello");
  EXPECT_NE(open->head->cancelled, nullptr);
  // Two messages and half of a third in one DATA frame, the rest with END_STREAM.
  const std::string third = Message("third message");
  Feed(Frame(kData, 0, 1, Message("one") + Message("") + third.substr(0, 7)));
  ASSERT_EQ(calls_.size(), 3u);
  EXPECT_EQ(Event(1)->kind, ServerStreamEventMeta::Kind::kMessage);
  EXPECT_EQ(calls_[1].ToString(), "one");
  EXPECT_EQ(Event(2)->kind, ServerStreamEventMeta::Kind::kMessage);
  EXPECT_TRUE(calls_[2].empty());
  EXPECT_EQ(session_->open_streaming(), 1u);
  Feed(Frame(kData, kEndStream, 1, third.substr(7)));
  ASSERT_EQ(calls_.size(), 5u);
  EXPECT_EQ(calls_[3].ToString(), "third message");
  EXPECT_EQ(Event(4)->kind, ServerStreamEventMeta::Kind::kEnd);
  EXPECT_EQ(Event(4)->grpc_status, 0);  // a half-close
}

TEST_F(H2StreamingSessionTest, OtherPathsStayUnary) {
  Open();
  Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders("/trpc.test.helloworld.Greeter/Other")) +
       Frame(kData, kEndStream, 1, Message("hi")));
  ASSERT_EQ(calls_.size(), 1u);
  ASSERT_NE(calls_[0].meta(), nullptr);
  EXPECT_FALSE(calls_[0].meta()->stream_event);
  EXPECT_EQ(calls_[0].ToString(), "hi");
}

TEST_F(H2StreamingSessionTest, AnUnknownMethodIsHandedUpOnItsHeaders) {
  // With every method known, a request for another one goes up at once, without its body, so
  // the server answers it (UNIMPLEMENTED) while a streaming client still waits to send.
  session_ = std::make_unique<H2ServerSession>(
      options_, std::make_shared<H2ServerSession::Methods>(H2ServerSession::Methods{
                    {{"/trpc.test.helloworld.Greeter/SayHello", false}}, /*complete=*/true}));
  Open();
  Feed(Frame(kHeaders, kEndHeaders, 1, RequestHeaders("/trpc.test.helloworld.Greeter/Nope")));
  ASSERT_EQ(calls_.size(), 1u);
  ASSERT_NE(calls_[0].meta(), nullptr);
  EXPECT_FALSE(calls_[0].meta()->stream_event);
  EXPECT_EQ(static_cast<ServerRequestMeta*>(calls_[0].meta())->path,
            "/trpc.test.helloworld.Greeter/Nope");
  EXPECT_TRUE(calls_[0].empty());
  // Its DATA is dropped, and nothing more goes up.
  Feed(Frame(kData, kEndStream, 1, Message("ignored")));
  EXPECT_EQ(calls_.size(), 1u);
  EXPECT_EQ(session_->held_bytes, kStreamStateBytes);
}

TEST_F(H2StreamingSessionTest, GivesAMessagesBytesBackOnlyOnceItIsConsumed) {
  OpenStream();
  const std::string big(40'000, 'x');  // over half the 65535 window: worth a WINDOW_UPDATE
  const std::string msg = Message(big);
  std::string data;
  for (size_t at = 0; at < msg.size(); at += 16'384) {
    data += Frame(kData, 0, 1, msg.substr(at, 16'384));
  }
  std::vector<RawFrame> out = Feed(data);
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[1].size(), big.size());
  EXPECT_EQ(FindFrame(out, kWindowUpdate, 0), nullptr) << "not read yet";
  // Handed up but not read: still held (against max_buffered_bytes), the prefix aside.
  EXPECT_EQ(session_->held_bytes, kStreamStateBytes + big.size());
  ChainBuffer wire;
  session_->StreamConsumed(1, 20'000, &wire);  // (part of it: nothing yet)
  EXPECT_TRUE(wire.empty());
  session_->StreamConsumed(1, 20'000, &wire);
  out = Parse(wire.ToString());
  const RawFrame* conn = FindFrame(out, kWindowUpdate, 0);
  ASSERT_NE(conn, nullptr);
  EXPECT_EQ(WindowIncrement(*conn), msg.size());  // the message and its prefix
  const RawFrame* stream = FindFrame(out, kWindowUpdate, 1);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(WindowIncrement(*stream), msg.size());
  EXPECT_EQ(session_->held_bytes, kStreamStateBytes);
}

TEST_F(H2StreamingSessionTest, WritesUnderTheClientsWindowAndSaysWhenItHasRoomAgain) {
  options_.max_message_size = 100'000;  // a message past the client's window
  session_ = std::make_unique<H2ServerSession>(options_, StreamingSayHello());
  OpenStream();
  ChainBuffer wire;
  EXPECT_TRUE(session_->StreamCanSend(1));
  ChainBuffer msg;
  msg.Append(std::string(70'000, 'y'));  // past the client's 65535-byte windows
  std::string err;
  ASSERT_TRUE(session_->StreamSend(1, std::move(msg), &wire, &err)) << err;
  std::vector<RawFrame> out = Parse(wire.ToString());
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[0].type, kHeaders);  // the response headers go with the first message
  EXPECT_EQ(out[0].flags & kEndStream, 0);
  size_t sent = 0;
  for (const auto& f : out) {
    if (f.type == kData) sent += f.payload.size();
  }
  EXPECT_EQ(sent, 65535u);
  EXPECT_FALSE(session_->StreamCanSend(1)) << "the window is spent";
  EXPECT_GT(session_->held_bytes, 0u);
  // The client reads: window for the stream and the connection; a writable event goes up.
  const std::string inc("\0\1\0\0", 4);  // 65536
  out = Feed(Frame(kWindowUpdate, 0, 0, inc) + Frame(kWindowUpdate, 0, 1, inc));
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(Event(1)->kind, ServerStreamEventMeta::Kind::kWritable);
  sent = 0;
  for (const auto& f : out) {
    if (f.type == kData) sent += f.payload.size();
  }
  EXPECT_EQ(sent, 70'005u - 65535u);  // the rest went with that feed
  // The end: trailers with the status.
  wire.Clear();
  session_->StreamFinish(1, 0, "", &wire);
  out = Parse(wire.ToString());
  ASSERT_GE(out.size(), 2u);
  const RawFrame& trailers = out[out.size() - 2];
  EXPECT_EQ(trailers.type, kHeaders);
  EXPECT_NE(trailers.flags & kEndStream, 0);
  EXPECT_EQ(out.back().type, kRstStream) << "the client had not half-closed";
  EXPECT_FALSE(session_->StreamCanSend(1));
  std::string err2;
  ChainBuffer late;
  late.Append("x");
  EXPECT_FALSE(session_->StreamSend(1, std::move(late), &wire, &err2));
}

TEST_F(H2StreamingSessionTest, CompressesItsMessagesWhenAskedAndTheClientAccepts) {
  Open();
  std::string h = RequestHeaders();
  Literal(&h, "grpc-accept-encoding", "identity,gzip");
  Feed(Frame(kHeaders, kEndHeaders, 1, h));
  ASSERT_EQ(calls_.size(), 1u);
  session_->StreamSetCompression(1, "deflate");  // (not accepted: ignored)
  session_->StreamSetCompression(1, "gzip");
  ChainBuffer wire;
  ChainBuffer msg;
  msg.Append(std::string(10'000, 'z'));
  std::string err;
  ASSERT_TRUE(session_->StreamSend(1, std::move(msg), &wire, &err)) << err;
  std::vector<RawFrame> out = Parse(wire.ToString());
  const RawFrame* headers = FindFrame(out, kHeaders, 1);
  ASSERT_NE(headers, nullptr);
  HeaderDecoder hd;
  EXPECT_EQ(hd.Decode(headers->payload)["grpc-encoding"], "gzip");
  const RawFrame* data = FindFrame(out, kData, 1);
  ASSERT_NE(data, nullptr);
  ASSERT_GE(data->payload.size(), 5u);
  EXPECT_EQ(data->payload[0], 1) << "the compressed flag";
  EXPECT_LT(data->payload.size(), 1000u) << "10000 'z's gzip to far less";
}

TEST_F(H2StreamingSessionTest, FinishWithNothingWrittenIsTrailersOnly) {
  OpenStream();
  ChainBuffer wire;
  session_->StreamFinish(1, 5, "not found", &wire);
  std::vector<RawFrame> out = Parse(wire.ToString());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].type, kHeaders);
  EXPECT_NE(out[0].flags & kEndStream, 0);
  HeaderDecoder hd;
  std::map<std::string, std::string> fields = hd.Decode(out[0].payload);
  EXPECT_EQ(fields["grpc-status"], "5");
  EXPECT_EQ(fields["grpc-message"], "not found");
  // The client was still sending: its stream is reset once the answer is out.
  EXPECT_EQ(out[1].type, kRstStream);
}

TEST_F(H2StreamingSessionTest, ClientResetEndsTheStreamAsCancelled) {
  OpenStream();
  auto cancelled = Event(0)->head->cancelled;
  Feed(Frame(kRstStream, 0, 1, std::string("\0\0\0\x08", 4)));  // CANCEL
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(Event(1)->kind, ServerStreamEventMeta::Kind::kEnd);
  EXPECT_EQ(Event(1)->grpc_status, 1);
  EXPECT_TRUE(cancelled->cancelled());
  EXPECT_EQ(session_->open_streaming(), 0u);
  EXPECT_EQ(session_->held_bytes, 0u);
  ChainBuffer wire;
  session_->StreamFinish(1, 0, "", &wire);  // (the handler ends later: nothing goes out)
  EXPECT_TRUE(wire.empty());
}

struct BadStreamInput {
  const char* what;
  std::string data;  // DATA payload after the open
  bool end_stream;
  int want_status;
};

TEST_F(H2StreamingSessionTest, BadMessagesEndTheStreamNotTheConnection) {
  const std::string too_big = {0, 0, 0, static_cast<char>(0xc3), 0x51};  // 50001 > 50000
  const BadStreamInput cases[] = {
      {"compressed without grpc-encoding", Compressed("zzz"), false, 13},
      {"over max_message_size", too_big, false, 8},
      {"ends inside a message", Message("abcdef").substr(0, 8), true, 13},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    calls_.clear();
    session_ = std::make_unique<H2ServerSession>(options_, StreamingSayHello());
    OpenStream();
    std::vector<RawFrame> out = Feed(Frame(kData, c.end_stream ? kEndStream : 0, 1, c.data));
    ASSERT_EQ(calls_.size(), 2u);
    EXPECT_EQ(Event(1)->kind, ServerStreamEventMeta::Kind::kEnd);
    EXPECT_EQ(Event(1)->grpc_status, c.want_status);
    const RawFrame* answer = FindFrame(out, kHeaders, 1);
    ASSERT_NE(answer, nullptr);
    HeaderDecoder hd;
    EXPECT_EQ(hd.Decode(answer->payload)["grpc-status"], std::to_string(c.want_status));
    EXPECT_EQ(FindFrame(out, kGoaway, 0), nullptr);
    EXPECT_EQ(session_->held_bytes, 0u);
    // The connection goes on: a second stream opens.
    Feed(Frame(kHeaders, kEndHeaders, 3, RequestHeaders("/trpc.test.helloworld.Greeter/Unary")) +
         Frame(kData, kEndStream, 3, Message("ok")));
    ASSERT_EQ(calls_.size(), 3u);
    EXPECT_FALSE(calls_[2].meta()->stream_event);
  }
}

class H2ClientSessionTest : public ::testing::Test {
 protected:
  H2ClientSessionTest() : session_(std::make_unique<H2ClientSession>(H2Options())) {}

  std::vector<RawFrame> Call(uint32_t request_id) {
    ChainBuffer request;
    request.Append(Message("ping"));
    auto meta = std::make_unique<ClientRequestMeta>();
    meta->request_id = request_id;
    meta->path = "/pkg.Svc/Method";
    meta->authority = "127.0.0.1:1";
    meta->timeout = "100m";
    meta->metadata = {{"x-user", "bob"}};
    request.SetMeta(std::move(meta));
    ChainBuffer wire;
    session_->EncodeOutput(std::move(request), &wire);
    const bool first = !started_;
    started_ = true;
    return Parse(wire.ToString(), /*preface=*/first);
  }

  std::unique_ptr<H2ClientSession> session_;
  std::vector<ChainBuffer> replies_;
  bool started_ = false;
};

TEST_F(H2ClientSessionTest, SendsARequestAsHeadersAndData) {
  std::vector<RawFrame> out = Call(7);
  EXPECT_NE(FindFrame(out, kSettings, 0), nullptr);
  const RawFrame* headers = FindFrame(out, kHeaders, 1);
  ASSERT_NE(headers, nullptr);
  EXPECT_EQ(headers->flags & kEndStream, 0);
  auto fields = HeaderDecoder().Decode(headers->payload);
  EXPECT_EQ(fields[":path"], "/pkg.Svc/Method");
  EXPECT_EQ(fields[":authority"], "127.0.0.1:1");
  EXPECT_EQ(fields["grpc-timeout"], "100m");
  EXPECT_EQ(fields["x-user"], "bob");
  const RawFrame* data = FindFrame(out, kData, 1);
  ASSERT_NE(data, nullptr);
  EXPECT_NE(data->flags & kEndStream, 0);
  EXPECT_EQ(data->payload, Message("ping"));
  EXPECT_EQ(session_->held_bytes, 0u);
  // A second call opens the next stream.
  out = Call(8);
  EXPECT_NE(FindFrame(out, kHeaders, 3), nullptr);
}

TEST_F(H2ClientSessionTest, HandsUpTheClosedStreamWithItsStatus) {
  Call(7);
  std::string headers = "\x88";  // :status: 200 (static table)
  Literal(&headers, "content-type", "application/grpc");
  Literal(&headers, "x-md", "v");
  std::string trailers;
  Literal(&trailers, "grpc-status", "0");
  ChainBuffer in;
  in.Append(Frame(kSettings, 0, 0, "") + Frame(kHeaders, kEndHeaders, 1, headers) +
            Frame(kData, 0, 1, Message("pong")) +
            Frame(kHeaders, kEndHeaders | kEndStream, 1, trailers));
  std::string err;
  ASSERT_EQ(session_->Feed(&in, &replies_, &err), SplitResult::kOk) << err;
  ASSERT_EQ(replies_.size(), 1u);
  EXPECT_EQ(replies_[0].ToString(), Message("pong"));
  auto* reply = dynamic_cast<ClientReplyMeta*>(replies_[0].meta());
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(reply->request_id, 7u);
  EXPECT_EQ(reply->http_status, 200);
  EXPECT_EQ(reply->grpc_status, 0);
  EXPECT_EQ(reply->rst_code, 0u);
  ASSERT_EQ(reply->metadata.size(), 1u);
  EXPECT_EQ(reply->metadata[0].first, "x-md");
}

TEST_F(H2ClientSessionTest, CancelResetsTheCallsStream) {
  Call(7);
  ChainBuffer wire;
  session_->CancelCall(7, &wire);
  std::vector<RawFrame> out = Parse(wire.ToString());
  const RawFrame* rst = FindFrame(out, kRstStream, 1);
  ASSERT_NE(rst, nullptr);
  EXPECT_EQ(rst->ErrorCode(), 8u);  // CANCEL
  wire.Clear();
  session_->CancelCall(7, &wire);  // (no longer in flight: nothing)
  EXPECT_TRUE(wire.empty());
}

TEST_F(H2ClientSessionTest, GoawayStopsNewCalls) {
  Call(7);
  ChainBuffer in;
  in.Append(Frame(kSettings, 0, 0, "") + Frame(kGoaway, 0, 0, std::string(8, '\0')));
  std::string err;
  ASSERT_EQ(session_->Feed(&in, &replies_, &err), SplitResult::kOk) << err;
  EXPECT_TRUE(session_->no_new_calls);
}

}  // namespace
}  // namespace trpc::grpc::detail
