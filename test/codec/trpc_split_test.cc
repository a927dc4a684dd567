// Frame splitting (FrameCodec::Split) of the trpc codecs: waiting, cutting, and every way the
// fixed header can be wrong.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/codec/trpc_test_frames.h"
#include "trpc/codec/trpc/detail/trpc_codec.h"

namespace trpc {
namespace {

using codec_test::Buffer;
using codec_test::Fragmented;
using codec_test::GoldenRequest;
using codec_test::GoldenResponse;
using codec_test::MakeFrame;
using ::testing::HasSubstr;

constexpr size_t kLimit = 10'000'000;

struct SplitOutcome {
  SplitResult result;
  std::vector<ChainBuffer> frames;
  std::string err;
};

SplitOutcome SplitAll(ChainBuffer* in, size_t limit = kLimit) {
  TrpcServerCodec codec;
  SplitOutcome o;
  o.result = codec.Split(in, &o.frames, limit, &o.err);
  return o;
}

// The decoded func of a request frame, or "" if it does not decode.
std::string FuncOf(ChainBuffer&& frame) {
  TrpcServerCodec codec;
  RpcRequest req;
  std::string err;
  return codec.DecodeRequest(std::move(frame), &req, &err) ? req.func : "";
}

// A request frame for `func` with `body`.
std::string RequestFrame(std::string func, std::string body) {
  TrpcClientCodec codec;
  RpcRequest req;
  req.request_id = 5;
  req.func = std::move(func);
  req.body = Buffer(body);
  ChainBuffer out;
  EXPECT_TRUE(codec.EncodeRequest(&req, nullptr, &out));
  return out.ToString();
}

TEST(TrpcSplitTest, FewerThanSixteenBytesWait) {
  const std::string frame = GoldenRequest();
  for (size_t n = 0; n < kTrpcFrameHeaderSize; ++n) {
    ChainBuffer in = Buffer(frame.substr(0, n));
    SplitOutcome o = SplitAll(&in);
    EXPECT_EQ(o.result, SplitResult::kOk) << n;
    EXPECT_TRUE(o.frames.empty());
    EXPECT_EQ(in.size(), n);
  }
}

TEST(TrpcSplitTest, IncompletePayloadWaits) {
  const std::string frame = GoldenRequest();
  ChainBuffer in = Buffer(frame.substr(0, frame.size() - 1));
  SplitOutcome o = SplitAll(&in);
  EXPECT_EQ(o.result, SplitResult::kOk);
  EXPECT_TRUE(o.frames.empty());
  EXPECT_EQ(in.size(), frame.size() - 1);
}

TEST(TrpcSplitTest, BadMagicIsAnError) {
  std::string frame = GoldenRequest();
  frame[1] = 0x31;
  ChainBuffer in = Buffer(frame.substr(0, kTrpcFrameHeaderSize));  // known from 16 bytes
  SplitOutcome o = SplitAll(&in);
  EXPECT_EQ(o.result, SplitResult::kError);
  EXPECT_THAT(o.err, HasSubstr("bad magic 0x0931"));

  ChainBuffer http = Buffer("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  o = SplitAll(&http);
  EXPECT_EQ(o.result, SplitResult::kError);
  EXPECT_THAT(o.err, HasSubstr("bad magic 0x4745"));
}

TEST(TrpcSplitTest, TotalSmallerThanTheHeadersIsAnError) {
  for (uint32_t total : {0u, 15u, 16u, 90u}) {
    SCOPED_TRACE(total);
    ChainBuffer in = Buffer(MakeFrame(std::string(75, 'h'), "",
                                      [total](TrpcFrameHeader* h) { h->total_size = total; }));
    SplitOutcome o = SplitAll(&in);
    EXPECT_EQ(o.result, SplitResult::kError);
    EXPECT_THAT(o.err, HasSubstr("is smaller than the fixed header plus the 75-byte header"));
  }
}

TEST(TrpcSplitTest, OversizedFrameIsAnErrorBeforeItsPayloadArrives) {
  auto header_declaring = [](uint32_t total) {
    return MakeFrame("", "", [total](TrpcFrameHeader* h) { h->total_size = total; });
  };
  ChainBuffer in = Buffer(header_declaring(kLimit + 1));  // only the fixed header is here
  SplitOutcome o = SplitAll(&in);
  EXPECT_EQ(o.result, SplitResult::kError);
  EXPECT_THAT(o.err, HasSubstr("frame size 10000001 exceeds the limit of 10000000 bytes"));

  ChainBuffer at_limit = Buffer(header_declaring(kLimit));  // allowed: waits for the rest
  o = SplitAll(&at_limit);
  EXPECT_EQ(o.result, SplitResult::kOk);
  EXPECT_TRUE(o.frames.empty());

  ChainBuffer max = Buffer(header_declaring(UINT32_MAX));
  o = SplitAll(&max);
  EXPECT_EQ(o.result, SplitResult::kError);

  // The limit is the caller's: a 95-byte frame against a 94-byte limit.
  ChainBuffer golden = Buffer(GoldenRequest());
  o = SplitAll(&golden, 94);
  EXPECT_EQ(o.result, SplitResult::kError);
}

// Both sides cut stream frames (data frame type 1) whose fixed header makes sense, and refuse the
// rest from the fixed header alone.
TEST(TrpcSplitTest, BothSidesCutWellFormedStreamFramesOnly) {
  struct Case {
    int data_type, stream_type, header_size;
    const char* err;  // null: cut
  } cases[] = {
      {1, 1, 0, nullptr},
      {1, 4, 0, nullptr},
      {1, 2, 75, "stream frames have none"},
      {1, 0, 0, "unknown stream frame type 0"},
      {1, 5, 0, "unknown stream frame type 5"},
      {0, 1, 75, "streaming frames not supported"},
      {2, 0, 75, "streaming frames not supported"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << c.data_type << "/" << c.stream_type);
    std::string frame = GoldenRequest();
    frame[2] = static_cast<char>(c.data_type);
    frame[3] = static_cast<char>(c.stream_type);
    frame[8] = 0;
    frame[9] = static_cast<char>(c.header_size);
    frame[13] = 100;  // stream id
    ChainBuffer in = Buffer(frame);
    SplitOutcome o = SplitAll(&in);
    ChainBuffer in2 = Buffer(frame);
    std::vector<ChainBuffer> client_frames;
    std::string client_err;
    const SplitResult client = TrpcClientCodec().Split(&in2, &client_frames, kLimit, &client_err);
    if (c.err == nullptr) {
      EXPECT_EQ(o.result, SplitResult::kOk);
      ASSERT_EQ(o.frames.size(), 1u);
      EXPECT_TRUE(TrpcServerCodec().IsStreamFrame(o.frames[0]));
      EXPECT_EQ(client, SplitResult::kOk);
      ASSERT_EQ(client_frames.size(), 1u);
      EXPECT_TRUE(TrpcClientCodec().IsStreamFrame(client_frames[0]));
    } else {
      EXPECT_EQ(o.result, SplitResult::kError);
      EXPECT_THAT(o.err, HasSubstr(c.err));
      EXPECT_EQ(client, SplitResult::kError);
      EXPECT_THAT(client_err, HasSubstr(c.err));
    }
  }
  ChainBuffer unary = Buffer(GoldenRequest());
  SplitOutcome o = SplitAll(&unary);
  ASSERT_EQ(o.frames.size(), 1u);
  EXPECT_FALSE(TrpcServerCodec().IsStreamFrame(o.frames[0]));
}

TEST(TrpcSplitTest, ReservedBytesAndStreamIdAreIgnored) {
  std::string frame = GoldenRequest();
  frame[10] = 0x12;  // stream id
  frame[14] = 0x7f;  // reserved
  frame[15] = 0x01;
  ChainBuffer in = Buffer(frame);
  SplitOutcome o = SplitAll(&in);
  ASSERT_EQ(o.result, SplitResult::kOk) << o.err;
  ASSERT_EQ(o.frames.size(), 1u);
  EXPECT_EQ(FuncOf(std::move(o.frames[0])), codec_test::kFunc);
}

TEST(TrpcSplitTest, SeveralFramesInOneBuffer) {
  const std::string a = RequestFrame("/a.A/One", "1");
  const std::string b = RequestFrame("/b.B/Two", std::string(5000, '2'));
  const std::string c = RequestFrame("/c.C/Three", "");
  const std::string d = RequestFrame("/d.D/Four", "4444");
  ChainBuffer in = Buffer(a + b + c + d.substr(0, 20));
  SplitOutcome o = SplitAll(&in);
  ASSERT_EQ(o.result, SplitResult::kOk) << o.err;
  ASSERT_EQ(o.frames.size(), 3u);
  EXPECT_EQ(FuncOf(std::move(o.frames[0])), "/a.A/One");
  EXPECT_EQ(FuncOf(std::move(o.frames[1])), "/b.B/Two");
  EXPECT_EQ(FuncOf(std::move(o.frames[2])), "/c.C/Three");
  EXPECT_EQ(in.ToString(), d.substr(0, 20));  // the partial frame stays buffered

  in.Append(d.substr(20));
  o = SplitAll(&in);
  ASSERT_EQ(o.frames.size(), 1u);
  EXPECT_EQ(FuncOf(std::move(o.frames[0])), "/d.D/Four");
  EXPECT_TRUE(in.empty());
}

TEST(TrpcSplitTest, GoodFramesBeforeABadOneAreStillCut) {
  std::string bad = GoldenRequest();
  bad[0] = 0;
  ChainBuffer in = Buffer(GoldenRequest() + bad);
  SplitOutcome o = SplitAll(&in);
  EXPECT_EQ(o.result, SplitResult::kError);
  EXPECT_EQ(o.frames.size(), 1u);  // the caller decides what to do with them; it closes anyway
}

TEST(TrpcSplitTest, FrameSplitAcrossTwoReadsAtEveryOffset) {
  const std::string stream = GoldenRequest() + GoldenRequest();
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SCOPED_TRACE(cut);
    ChainBuffer in = Buffer(stream.substr(0, cut));
    SplitOutcome first = SplitAll(&in);
    ASSERT_EQ(first.result, SplitResult::kOk);
    EXPECT_EQ(first.frames.size(), cut / GoldenRequest().size());
    in.Append(Fragmented(stream.substr(cut), 7));
    SplitOutcome second = SplitAll(&in);
    ASSERT_EQ(second.result, SplitResult::kOk);
    EXPECT_EQ(first.frames.size() + second.frames.size(), 2u);
    EXPECT_TRUE(in.empty());
    for (auto* frames : {&first.frames, &second.frames}) {
      for (ChainBuffer& f : *frames) EXPECT_EQ(FuncOf(std::move(f)), codec_test::kFunc);
    }
  }
}

TEST(TrpcSplitTest, OneByteAtATime) {
  // Every byte arrives in its own read and its own span: the fixed header is peeked across
  // spans, and the protobuf header is parsed from a chain of one-byte spans.
  const std::string a = GoldenRequest();
  const std::string b = RequestFrame("/x.Y/Z", std::string(300, 'z'));
  const std::string stream = a + b;
  ChainBuffer in;
  std::vector<ChainBuffer> frames;
  std::vector<size_t> cut_at;
  TrpcServerCodec codec;
  for (size_t i = 0; i < stream.size(); ++i) {
    in.Append(Fragmented(stream.substr(i, 1), 1));
    std::string err;
    size_t before = frames.size();
    ASSERT_EQ(codec.Split(&in, &frames, kLimit, &err), SplitResult::kOk) << i << ": " << err;
    if (frames.size() != before) cut_at.push_back(i + 1);
  }
  EXPECT_EQ(cut_at, (std::vector<size_t>{a.size(), stream.size()}));
  EXPECT_TRUE(in.empty());
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_GT(frames[0].SpanCount(), 1u);
  EXPECT_EQ(frames[1].ToString(), b);
  EXPECT_EQ(FuncOf(std::move(frames[0])), codec_test::kFunc);
  EXPECT_EQ(FuncOf(std::move(frames[1])), "/x.Y/Z");
}

TEST(TrpcSplitTest, CuttingDoesNotCopy) {
  ChainBuffer in = Buffer(GoldenRequest() + GoldenResponse());
  const char* start = in.FirstSpan().data();
  SplitOutcome o = SplitAll(&in);
  ASSERT_EQ(o.frames.size(), 2u);
  EXPECT_EQ(o.frames[0].FirstSpan().data(), start);
  EXPECT_EQ(o.frames[1].FirstSpan().data(), start + GoldenRequest().size());
}

TEST(TrpcSplitTest, ClientSplitsTheSameWay) {
  TrpcClientCodec codec;
  ChainBuffer in = Buffer(GoldenResponse() + GoldenResponse().substr(0, 10));
  std::vector<ChainBuffer> frames;
  std::string err;
  ASSERT_EQ(codec.Split(&in, &frames, kLimit, &err), SplitResult::kOk);
  EXPECT_EQ(frames.size(), 1u);
  EXPECT_EQ(in.size(), 10u);
  ChainBuffer bad = Buffer(std::string(16, '\0'));
  EXPECT_EQ(codec.Split(&bad, &frames, kLimit, &err), SplitResult::kError);
  EXPECT_THAT(err, HasSubstr("bad magic 0x0000"));
}

}  // namespace
}  // namespace trpc
