// gRPC end to end (grpc_e2e_fixture.h): each HTTP/2 limit and flood mitigation (docs/grpc.md),
// sent by a raw HTTP/2 client while a well-behaved client on another connection keeps being
// served.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "test/e2e/grpc_e2e_fixture.h"

namespace trpc::test::grpc_e2e {
namespace {

TEST_F(GrpcE2eTest, MessageOverTheLimitIsResourceExhaustedAndTheConnectionServesOn) {
  WhileServed([] {
    auto p = Proxy(limited_);
    HelloReply rsp;
    Status st = Say(p.get(), std::string(5000, 'y'), &rsp);
    EXPECT_EQ(st.GetFrameworkRetCode(), kServerOverloadErr) << st.ToString();  // RESOURCE_EXHAUSTED
    EXPECT_NE(st.ErrorMessage().find("max_message_size"), std::string::npos) << st.ToString();
    ASSERT_TRUE(Say(p.get(), "again", &rsp).OK());  // the same connection
    EXPECT_EQ(rsp.msg(), "Hello, again");
  });
}

TEST_F(GrpcE2eTest, StreamsOverMaxConcurrentStreamsAreRefused) {
  // 8 requests whose bodies never end (the streams stay open), on a connection that has not
  // acknowledged our SETTINGS yet: the 4 beyond the limit are refused (REFUSED_STREAM, which a
  // client may retry). Once the limit is acknowledged, a client that exceeds it breaks the
  // protocol: GOAWAY(PROTOCOL_ERROR).
  std::string bytes;
  for (uint32_t id = 1; id <= 15; id += 2) {
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
  }
  WhileServed([&] {
    RawH2 raw(limited_);
    raw.Send(bytes);
    int refused = 0;
    raw.ReadUntil(1000, [&](const RawFrame& f) {
      if (f.type == kRstStream && f.ErrorCode() == 7) ++refused;
      return refused == 4;
    });
    EXPECT_EQ(refused, 4);
    EXPECT_FALSE(raw.eof);
  });
  WhileServed([&] {
    RawH2 raw(limited_);
    raw.ReadUntil(1000, [](const RawFrame& f) { return f.type == kSettings && f.flags == 0; });
    raw.Send(Frame(kSettings, 1, 0, ""));  // ACK theirs
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 1u);
  });
}

TEST_F(GrpcE2eTest, HeaderListOverTheLimitResetsTheStream) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string h = RequestHeaders();
    Literal(&h, "x-big", std::string(5000, 'b'));
    raw.Send(Frame(kHeaders, kEndHeaders | kEndStream, 1, h));
    auto frames = raw.ReadUntil(
        1000, [](const RawFrame& f) { return f.type == kRstStream && f.stream == 1; });
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().type, kRstStream);
    EXPECT_FALSE(raw.eof);  // one strike: the connection stays
  });
}

TEST_F(GrpcE2eTest, HpackBombEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    // A 3000-byte header added to the dynamic table (literal with incremental indexing), then
    // requests that reference it (index 62: one byte each) until their lists decode past the
    // limit.
    std::string first = RequestHeaders();
    first += '\x40';
    HpackString(&first, "x-bomb");
    HpackString(&first, std::string(3000, 'z'));
    raw.Send(Frame(kHeaders, kEndHeaders | kEndStream, 1, first));
    std::string bytes;
    for (uint32_t id = 3; id <= 11; id += 2) {
      std::string h = RequestHeaders();
      for (int i = 0; i < 40; ++i) h += static_cast<char>(0x80 | 62);  // 40 x 3 KB decoded
      bytes += Frame(kHeaders, kEndHeaders | kEndStream, id, h);
    }
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 0xbu);  // ENHANCE_YOUR_CALM
  });
}

TEST_F(GrpcE2eTest, RapidResetEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string bytes;
    const std::string rst = std::string("\0\0\0\x08", 4);  // CANCEL
    for (uint32_t id = 1; id < 2 * 500; id += 2) {
      bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
      bytes += Frame(kRstStream, 0, id, rst);
    }
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    EXPECT_TRUE(HasGoaway(frames, &code) || raw.eof);
  });
}

TEST_F(GrpcE2eTest, PingFloodEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string bytes;
    for (int i = 0; i < 2000; ++i)
      bytes += Frame(kPing, 0, 0, std::string(8, static_cast<char>(i)));
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 0xbu);
  });
}

TEST_F(GrpcE2eTest, SettingsFloodEndsTheConnection) {
  WhileServed([] {
    RawH2 raw(limited_);
    std::string bytes;
    for (int i = 0; i < 2000; ++i) bytes += Frame(kSettings, 0, 0, "");
    raw.Send(bytes);
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 0xbu);
  });
}

// Sends `bytes` on a new connection to `addr`; the connection must end with GOAWAY(`code`).
void ExpectGoaway(const NetAddress& addr, const std::string& bytes, uint32_t code) {
  RawH2 raw(addr);
  raw.Send(bytes);
  uint32_t got = 0;
  auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
  ASSERT_TRUE(HasGoaway(frames, &got));
  EXPECT_EQ(got, code);
}

TEST_F(GrpcE2eTest, EmptyDataFloodEndsTheConnection) {
  WhileServed([] {
    // On an open stream, padded or not, and on a stream that never opened (nghttp2 drops that
    // DATA without a callback: the count is ours).
    std::string open = Frame(kHeaders, kEndHeaders, 1, RequestHeaders());
    std::string padded = open, unknown = Frame(kHeaders, kEndHeaders, 5, RequestHeaders());
    for (int i = 0; i < 2000; ++i) {
      open += Frame(kData, 0, 1, "");
      padded += Frame(kData, kPadded, 1, std::string("\x03\0\0\0", 4));
      unknown += Frame(kData, 0, 3, "");
    }
    ExpectGoaway(limited_, open, 0xb);  // ENHANCE_YOUR_CALM
    ExpectGoaway(limited_, padded, 0xb);
    ExpectGoaway(limited_, unknown, 0xb);
  });
  // An empty DATA that ends its stream is how some clients end a request: not a flood.
  RawH2 raw(limited_);
  std::string bytes;
  for (uint32_t id = 1; id <= 199; id += 2) {
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders()) + Frame(kData, kEndStream, id, "");
  }
  raw.Send(bytes);
  auto frames = raw.ReadUntil(1000, [](const RawFrame& f) { return f.type == kGoaway; });
  uint32_t code = 0;
  EXPECT_FALSE(HasGoaway(frames, &code)) << code;
}

TEST_F(GrpcE2eTest, PriorityFloodEndsTheConnection) {
  WhileServed([] {
    std::string bytes;
    const std::string spec("\0\0\0\0\x10", 5);  // depends on nothing, weight 17
    for (uint32_t i = 0; i < 2000; ++i) bytes += Frame(kPriority, 0, 1 + 2 * (i % 50), spec);
    ExpectGoaway(limited_, bytes, 0xb);
  });
}

TEST_F(GrpcE2eTest, WindowUpdateFloodEndsTheConnection) {
  WhileServed([] {
    std::string bytes;
    const std::string one("\0\0\0\x01", 4);  // +1
    for (int i = 0; i < 2000; ++i) bytes += Frame(kWindowUpdate, 0, 0, one);
    ExpectGoaway(limited_, bytes, 0xb);
  });
}

// A client that reads large replies through small windows sends a WINDOW_UPDATE per window's
// half: many, but each earned by our DATA, so not counted as a flood.
TEST_F(GrpcE2eTest, WindowUpdatesForLargeRepliesAreNotAFlood) {
  auto p =
      Proxy(addr_, 5000, {{"initial_window_size", "65535"}, {"connection_window_size", "65535"}});
  HelloReply rsp;
  std::string big(3u << 20, 'x');  // ~200 WINDOW_UPDATEs per reply, over the default 100/s
  for (int i = 0; i < 3; ++i) {
    Status st = Say(p.get(), big, &rsp);
    ASSERT_TRUE(st.OK()) << st.ToString();
  }
}

TEST_F(GrpcE2eTest, NewStreamWithAnIdNotAboveTheLastIsAConnectionError) {
  WhileServed([] {
    const std::string request = RequestHeaders();
    auto call = [&](uint32_t id) {  // SayHello("x")
      return Frame(kHeaders, kEndHeaders, id, request) +
             Frame(kData, kEndStream, id, std::string("\0\0\0\0\x03\x0a\x01x", 8));
    };
    auto answer = [](uint32_t id) {
      return [id](const RawFrame& f) {
        return f.type == kGoaway || (f.stream == id && (f.flags & kEndStream) != 0);
      };
    };
    // Lower: stream 3 after stream 5 (never used: it was closed when 5 opened).
    RawH2 lower(limited_);
    lower.Send(call(5));
    lower.ReadUntil(1000, answer(5));
    lower.Send(call(3));
    uint32_t code = 0;
    ASSERT_TRUE(HasGoaway(lower.ReadUntil(2000, answer(99)), &code));
    EXPECT_EQ(code, 1u);  // PROTOCOL_ERROR
    // Equal: stream 1 again after it ended.
    RawH2 again(limited_);
    again.Send(call(1));
    again.ReadUntil(1000, answer(1));
    again.Send(call(1));
    ASSERT_TRUE(HasGoaway(again.ReadUntil(2000, answer(99)), &code));
    EXPECT_EQ(code, 1u);
    // But the trailers of a stream we reset may still come (sent before our RST_STREAM
    // arrived): ignored, the connection serves on.
    RawH2 late(limited_);
    std::string big = request;
    Literal(&big, "x-big", std::string(5000, 'b'));  // over max_header_list_size: reset
    late.Send(Frame(kHeaders, kEndHeaders, 1, big));
    late.ReadUntil(1000, [](const RawFrame& f) { return f.type == kRstStream && f.stream == 1; });
    std::string trailers;
    Literal(&trailers, "x-trailer", "t");
    late.Send(Frame(kHeaders, kEndHeaders | kEndStream, 1, trailers));
    late.Send(call(3));
    auto frames = late.ReadUntil(2000, answer(3));
    EXPECT_FALSE(HasGoaway(frames, &code)) << code;
    ASSERT_FALSE(frames.empty());
    EXPECT_EQ(frames.back().stream, 3u);
    // Nor those of a stream refused (over max_concurrent_streams, our SETTINGS not yet
    // acknowledged) in the same read, before the RST_STREAM went out.
    RawH2 refused(limited_);
    std::string burst;
    for (uint32_t id = 1; id <= 11; id += 2) burst += Frame(kHeaders, kEndHeaders, id, request);
    refused.Send(burst + Frame(kHeaders, kEndHeaders | kEndStream, 11, trailers));
    frames = refused.ReadUntil(500, [](const RawFrame& f) { return f.type == kGoaway; });
    EXPECT_FALSE(HasGoaway(frames, &code)) << code;
  });
}

// A response's header list over the client's own max_header_list_size: the client resets the
// stream and says so (before, a reset in the trailers went unnoticed: the call was OK).
TEST_F(GrpcE2eTest, ClientsOwnHeaderListResetIsReportedAsSuch) {
  auto p = Proxy(addr_, 5000, {{"max_header_list_size", "1024"}});
  HelloReply rsp;
  Status st = Say(p.get(), "bigmeta", &rsp);  // trailers with 2000 bytes of metadata
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerOverloadErr) << st.ToString();  // RESOURCE_EXHAUSTED
  EXPECT_NE(st.ErrorMessage().find("max_header_list_size (1024 bytes): the client reset"),
            std::string::npos)
      << st.ToString();
  ASSERT_TRUE(Say(p.get(), "small", &rsp).OK());  // the connection serves on
}

// Open streams count against max_buffered_bytes (an estimate of their state, and their headers):
// past a connection's share of the bound, new streams are refused (REFUSED_STREAM, which a
// client may retry) instead of held, and other clients are served.
TEST_F(GrpcE2eTest, StalledStreamsCountAgainstTheBufferBound) {
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(
      "server:\n  max_buffered_bytes: 1048576\n  service:\n    - name: bounded\n"
      "      protocol: grpc\n      ip: 127.0.0.1\n      port: 0\n",
      "bounded.yaml", &config, &err))
      << err;
  Server s(config.server);
  ASSERT_TRUE(s.RegisterService("bounded", std::make_shared<TestGreeter>()));
  NetAddress a = StartOwn(&s, "bounded");
  // 24 connections x 100 requests whose bodies never come: ~3 MiB of stream state if all were
  // held.
  std::string bytes;
  for (uint32_t id = 1; id < 200; id += 2) {
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
  }
  std::vector<std::unique_ptr<RawH2>> conns;
  int refused = 0;
  for (int i = 0; i < 24; ++i) {
    conns.push_back(std::make_unique<RawH2>(a));
    conns.back()->Send(bytes);
    conns.back()->ReadUntil(100, [&](const RawFrame& f) {
      refused += f.type == kRstStream && f.ErrorCode() == 7;
      return false;
    });
  }
  EXPECT_GT(refused, 0);
  auto good = Proxy(a);
  HelloReply rsp;
  Status st = Say(good.get(), "good", &rsp);
  EXPECT_TRUE(st.OK()) << st.ToString();
  conns.clear();
  s.Stop();
}

TEST_F(GrpcE2eTest, GarbageGetsGoawayAndOthersAreServed) {
  WhileServed([] {
    RawH2 raw(limited_);
    raw.Send(Frame(kData, 0, 0, "stream 0 may not carry DATA"));
    uint32_t code = 0;
    auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
    ASSERT_TRUE(HasGoaway(frames, &code));
    EXPECT_EQ(code, 1u);  // PROTOCOL_ERROR
  });
}

TEST_F(GrpcE2eTest, RequestThatNeverEndsIsAnsweredAndTheConnectionServesOn) {
  WhileServed([] {
    RawH2 raw(limited_);
    raw.Send(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()));  // no body, no END_STREAM
    // The peer keeps the connection busy (never idle), below the PING limit.
    bool answered = false;
    for (int i = 0; i < 20 && !answered; ++i) {
      raw.Send(Frame(kPing, 0, 0, std::string(8, 'p')));
      auto frames = raw.ReadUntil(100, [](const RawFrame& f) {
        return f.type == kHeaders && f.stream == 1 && (f.flags & kEndStream) != 0;
      });
      answered = !frames.empty() && frames.back().type == kHeaders;
    }
    EXPECT_TRUE(answered);  // DEADLINE_EXCEEDED, Trailers-Only, at ~300 ms
    EXPECT_FALSE(raw.eof);
  });
}

// Requests not yet complete are held only up to the connection's flow-control window: a client
// that keeps sending past it without finishing a request breaks the protocol and is cut off.
TEST_F(GrpcE2eTest, PartialRequestsAreBoundedByTheConnectionWindow) {
  auto own =
      OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>(), "grpc",
                "      protocol_options:\n        max_message_size: 60000\n"
                "        initial_window_size: 65535\n        connection_window_size: 65535\n");
  Server& s = *own;
  NetAddress a = StartOwn(&s, "trpc.test.helloworld.Greeter");
  std::string err;
  {
    // Whole requests get their bytes back: far more than the window goes through one
    // connection.
    ClientServiceConfig c;
    c.target = a.ToString();
    c.protocol = "grpc";
    c.timeout = 5000;
    auto p = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_e2e_window", c, &err);
    ASSERT_NE(p, nullptr) << err;
    for (int i = 0; i < 20; ++i) {
      HelloReply rsp;
      ASSERT_TRUE(Say(p.get(), std::string(50000, 'w'), &rsp).OK()) << i;
    }
  }
  RawH2 raw(a);
  std::string bytes;
  const std::string chunk(16000, 'd');
  for (uint32_t id = 1; id <= 9; id += 2) {  // 5 streams x 20000 bytes > 65535, none finished
    bytes += Frame(kHeaders, kEndHeaders, id, RequestHeaders());
    bytes += Frame(kData, 0, id, chunk) + Frame(kData, 0, id, std::string(4000, 'e'));
  }
  raw.Send(bytes);
  uint32_t code = 0;
  auto frames = raw.ReadUntil(2000, [](const RawFrame& f) { return f.type == kGoaway; });
  ASSERT_TRUE(HasGoaway(frames, &code));
  EXPECT_EQ(code, 3u);  // FLOW_CONTROL_ERROR
  s.Stop();
}

TEST_F(GrpcE2eTest, IdleConnectionIsClosed) {
  RawH2 raw(limited_);
  auto t0 = std::chrono::steady_clock::now();
  raw.ReadUntil(3000, nullptr);
  EXPECT_TRUE(raw.eof);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(2500));
}

}  // namespace
}  // namespace trpc::test::grpc_e2e
