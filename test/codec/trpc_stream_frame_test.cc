// trpc stream frames against bytes the real tRPC-Go (v1.0.3) put on the wire: a server stream
// (client INIT, DATA, half-closing CLOSE; server INIT, two DATA, CLOSE), recorded by a relay
// between tRPC-Go's client and server. docs/protocol.md section 6 shows the same frames.

#include "trpc/codec/trpc/detail/stream_frame.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/codec/trpc_test_frames.h"
#include "trpc/codec/trpc/detail/frame.h"

namespace trpc::detail {
namespace {

using codec_test::Hex;
using ::testing::HasSubstr;

// tRPC-Go's client opening /trpc.test.helloworld.Greeter/ServerStream on stream 100.
const std::string kClientInit = Hex(
    "09 30 01 01 00 00 00 79 00 00 00 00 00 64 00 00"
    "0a 63 0a 17 74 72 70 63 2e 61 70 70 2e 63 6c 69 65 6e 74 2e 73 65 72 76 69 63 65"
    "12 1c 74 72 70 63 2e 74 65 73 74 2e 68 65 6c 6c 6f 77 6f 72 6c 64 2e 47 72 65 65 74 65 72"
    "1a 2a 2f 74 72 70 63 2e 74 65 73 74 2e 68 65 6c 6c 6f 77 6f 72 6c 64 2e 47 72 65 65 74 65 72"
    "2f 53 65 72 76 65 72 53 74 72 65 61 6d 18 ff ff 03");
// Its one message, HelloRequest{msg: "2:0"}.
const std::string kClientData = Hex("09 30 01 02 00 00 00 15 00 00 00 00 00 64 00 00 0a 03 32 3a 30");
// Its half-close: a CLOSE with an empty meta.
const std::string kClientClose = Hex("09 30 01 04 00 00 00 10 00 00 00 00 00 64 00 00");
// tRPC-Go's server accepting: an empty response meta and its window.
const std::string kServerInit =
    Hex("09 30 01 01 00 00 00 16 00 00 00 00 00 64 00 00 12 00 18 ff ff 03");
// A reply, HelloReply{msg: "msg-0"}.
const std::string kServerData =
    Hex("09 30 01 02 00 00 00 17 00 00 00 00 00 64 00 00 0a 05 6d 73 67 2d 30");

TrpcStreamFrame Read(const std::string& bytes) {
  ChainBuffer b;
  b.Append(bytes);
  TrpcStreamFrame f;
  std::string err;
  EXPECT_TRUE(ReadTrpcStreamFrame(std::move(b), &f, &err)) << err;
  return f;
}

TEST(TrpcStreamFrameTest, ReadsTrpcGoClientFrames) {
  TrpcStreamFrame init = Read(kClientInit);
  EXPECT_EQ(init.type, TrpcStreamFrameType::kInit);
  EXPECT_EQ(init.stream_id, 100u);
  EXPECT_EQ(init.init.caller, "trpc.app.client.service");
  EXPECT_EQ(init.init.callee, "trpc.test.helloworld.Greeter");
  EXPECT_EQ(init.init.func, "/trpc.test.helloworld.Greeter/ServerStream");
  EXPECT_EQ(init.init.init_window_size, kTrpcStreamDefaultWindow);
  EXPECT_FALSE(init.init.has_response_meta);

  TrpcStreamFrame data = Read(kClientData);
  EXPECT_EQ(data.type, TrpcStreamFrameType::kData);
  EXPECT_EQ(data.data.ToString(), Hex("0a 03 32 3a 30"));

  TrpcStreamFrame close = Read(kClientClose);
  EXPECT_EQ(close.type, TrpcStreamFrameType::kClose);
  EXPECT_EQ(close.close.close_type, 0);
  EXPECT_EQ(close.close.ret, 0);
}

TEST(TrpcStreamFrameTest, ReadsTrpcGoServerFrames) {
  TrpcStreamFrame init = Read(kServerInit);
  EXPECT_EQ(init.type, TrpcStreamFrameType::kInit);
  EXPECT_TRUE(init.init.has_response_meta);
  EXPECT_EQ(init.init.ret, 0);
  EXPECT_TRUE(init.init.func.empty());
  EXPECT_EQ(init.init.init_window_size, kTrpcStreamDefaultWindow);
  EXPECT_EQ(Read(kServerData).data.ToString(), Hex("0a 05 6d 73 67 2d 30"));
}

// What we write for the same frames is byte for byte what tRPC-Go wrote.
TEST(TrpcStreamFrameTest, WritesWhatTrpcGoWrites) {
  std::string err;
  ChainBuffer out;
  TrpcStreamInit client;
  client.caller = "trpc.app.client.service";
  client.callee = "trpc.test.helloworld.Greeter";
  client.func = "/trpc.test.helloworld.Greeter/ServerStream";
  client.init_window_size = kTrpcStreamDefaultWindow;
  ASSERT_TRUE(WriteTrpcStreamInit(100, client, &out, &err)) << err;
  EXPECT_EQ(out.ToString(), kClientInit);

  out.Clear();
  ChainBuffer msg;
  msg.Append(Hex("0a 03 32 3a 30"));
  ASSERT_TRUE(WriteTrpcStreamData(100, std::move(msg), &out, &err)) << err;
  EXPECT_EQ(out.ToString(), kClientData);

  out.Clear();
  ASSERT_TRUE(WriteTrpcStreamClose(100, TrpcStreamClose{}, &out, &err)) << err;
  EXPECT_EQ(out.ToString(), kClientClose);

  out.Clear();
  TrpcStreamInit server;
  server.has_response_meta = true;
  server.init_window_size = kTrpcStreamDefaultWindow;
  ASSERT_TRUE(WriteTrpcStreamInit(100, server, &out, &err)) << err;
  EXPECT_EQ(out.ToString(), kServerInit);
}

TEST(TrpcStreamFrameTest, FeedbackAndResetRoundTrip) {
  std::string err;
  ChainBuffer out;
  ASSERT_TRUE(WriteTrpcStreamFeedback(7, 16384, &out, &err)) << err;
  EXPECT_EQ(out.ToString(), Hex("09 30 01 03 00 00 00 14 00 00 00 00 00 07 00 00 08 80 80 01"));
  TrpcStreamFrame fb = Read(out.ToString());
  EXPECT_EQ(fb.type, TrpcStreamFrameType::kFeedback);
  EXPECT_EQ(fb.window_increment, 16384u);

  out.Clear();
  TrpcStreamClose reset;
  reset.close_type = 1;
  reset.ret = 22;
  reset.msg = "overloaded";
  reset.trans_info = {{"k", "v"}};
  ASSERT_TRUE(WriteTrpcStreamClose(7, reset, &out, &err)) << err;
  TrpcStreamFrame c = Read(out.ToString());
  EXPECT_EQ(c.close.close_type, 1);
  EXPECT_EQ(c.close.ret, 22);
  EXPECT_EQ(c.close.msg, "overloaded");
  EXPECT_EQ(c.close.trans_info, (TransInfo{{"k", "v"}}));
}

// Stream frames come from a peer: every malformed one is an error with a reason.
TEST(TrpcStreamFrameTest, MalformedFramesFail) {
  struct Case {
    std::string bytes;
    const char* why;
  };
  std::string header_size = kClientClose;
  header_size[9] = 1;
  std::string type5 = kClientClose;
  type5[3] = 5;
  std::string unary = kClientClose;
  unary[2] = 0;
  std::string id0 = kClientClose;
  id0[13] = 0;
  std::string long_size = kClientClose;
  long_size[7] = 0x11;
  std::string bad_meta = kServerInit;
  bad_meta[16] = '\xff';  // a field tag with wire type 7
  const std::vector<Case> cases = {
      {header_size, "header"},      {type5, "unknown stream frame type 5"},
      {unary, "not a stream frame"}, {id0, "stream id 0"},
      {long_size, "does not match"}, {bad_meta, "cannot parse the 6-byte INIT meta"},
      {kClientClose.substr(0, 10), "shorter than the fixed header"},
  };
  for (const Case& c : cases) {
    ChainBuffer b;
    b.Append(c.bytes);
    TrpcStreamFrame f;
    std::string err;
    EXPECT_FALSE(ReadTrpcStreamFrame(std::move(b), &f, &err)) << c.why;
    EXPECT_THAT(err, HasSubstr(c.why));
  }
}

}  // namespace
}  // namespace trpc::detail
