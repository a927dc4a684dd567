#include "trpc/codec/trpc/detail/trpc_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/uio.h>

#include <string>
#include <vector>

#include "examples/helloworld/helloworld.pb.h"
#include "test/codec/trpc_test_frames.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/codec/detail/compression.h"
#include "trpc/codec/trpc/trpc.pb.h"

namespace trpc {
namespace {

using codec_test::Buffer;
using codec_test::Fragmented;
using codec_test::GoldenRequest;
using codec_test::GoldenRequestBody;
using codec_test::GoldenRequestHeader;
using codec_test::GoldenResponse;
using codec_test::GoldenResponseBody;
using codec_test::Hex;
using codec_test::kCallee;
using codec_test::kFunc;
using codec_test::MakeFrame;
using codec_test::Pattern;
using test::helloworld::HelloReply;
using test::helloworld::HelloRequest;
using ::testing::HasSubstr;

constexpr size_t kDefaultMaxPacketSize = 10'000'000;

// `body` decompressed as `encoding` (0: as it is).
std::string Inflate(uint32_t encoding, const ChainBuffer& body) {
  if (encoding == 0) return body.ToString();
  ChainBuffer plain;
  std::string err;
  EXPECT_TRUE(detail::DecompressBody(encoding, body, kDefaultMaxPacketSize, &plain, &err)) << err;
  return plain.ToString();
}

// The request of the worked example, before encoding.
RpcRequest GoldenRpcRequest() {
  RpcRequest req;
  req.request_id = 1;
  req.timeout_ms = 1000;
  req.callee = std::string(kCallee);
  req.func = std::string(kFunc);
  return req;
}

// Splits `bytes` with `codec` and expects exactly one frame.
template <typename Codec>
ChainBuffer SplitOne(Codec* codec, ChainBuffer in) {
  std::vector<ChainBuffer> frames;
  std::string err;
  EXPECT_EQ(codec->Split(&in, &frames, kDefaultMaxPacketSize, &err), SplitResult::kOk) << err;
  EXPECT_EQ(frames.size(), 1u);
  EXPECT_TRUE(in.empty());
  return frames.empty() ? ChainBuffer() : std::move(frames[0]);
}

// Leaves exactly `room` free bytes (0 < room <= block capacity) in this thread's current write
// block, so the next encode starts `room` bytes before a block edge.
void LeaveRoomInWriteBlock(size_t room) {
  ChainBuffer sink;
  iovec iov;
  ASSERT_EQ(sink.PrepareWrite(&iov, 1, 1), 1u);
  sink.CommitWrite(iov.iov_len);  // the next append starts a fresh block
  ChainBuffer fill;
  fill.Append(std::string(detail::kBlockCapacity - room, 'f'));
}

// ---- Golden bytes (docs/protocol.md, "Worked example") ------------------------------------------

TEST(TrpcCodecGoldenTest, ClientEncodesTheExampleRequest) {
  TrpcClientCodec client;
  RpcRequest req = GoldenRpcRequest();
  HelloRequest body;
  body.set_msg("hi");
  ChainBuffer out;
  ASSERT_TRUE(client.EncodeRequest(&req, &body, &out));
  EXPECT_EQ(out.size(), 95u);
  EXPECT_EQ(out.ToString(), GoldenRequest());
}

TEST(TrpcCodecGoldenTest, ClientEncodesTheExampleRequestFromRawBody) {
  TrpcClientCodec client;
  RpcRequest req = GoldenRpcRequest();
  req.body = Buffer(GoldenRequestBody());
  ChainBuffer out;
  ASSERT_TRUE(client.EncodeRequest(&req, nullptr, &out));
  EXPECT_EQ(out.ToString(), GoldenRequest());
  EXPECT_TRUE(req.body.empty());  // moved into the frame
}

TEST(TrpcCodecGoldenTest, EncodingIsTheSameAtEveryDistanceFromABlockEdge) {
  // Covers both the contiguous fast path and the streamed path of the encoder.
  TrpcClientCodec client;
  TrpcServerCodec server;
  HelloRequest req_body;
  req_body.set_msg("hi");
  HelloReply rsp_body;
  rsp_body.set_msg("Hello, hi");
  for (size_t room = 1; room <= 120; ++room) {
    SCOPED_TRACE(room);
    RpcRequest req = GoldenRpcRequest();
    ChainBuffer out;
    LeaveRoomInWriteBlock(room);
    ASSERT_TRUE(client.EncodeRequest(&req, &req_body, &out));
    EXPECT_EQ(out.ToString(), GoldenRequest());

    RpcResponse rsp;
    rsp.request_id = 1;
    ChainBuffer rsp_out;
    LeaveRoomInWriteBlock(room);
    ASSERT_TRUE(server.EncodeResponse(&rsp, &rsp_body, &rsp_out));
    EXPECT_EQ(rsp_out.ToString(), GoldenResponse());
  }
}

TEST(TrpcCodecGoldenTest, ServerDecodesTheExampleRequest) {
  TrpcServerCodec server;
  for (size_t piece : {size_t{0}, size_t{1}, size_t{3}, size_t{16}, size_t{50}}) {
    SCOPED_TRACE(piece);
    ChainBuffer in = piece == 0 ? Buffer(GoldenRequest()) : Fragmented(GoldenRequest(), piece);
    RpcRequest req;
    std::string err;
    ASSERT_TRUE(server.DecodeRequest(SplitOne(&server, std::move(in)), &req, &err)) << err;
    EXPECT_EQ(req.version, 0u);
    EXPECT_EQ(req.call_type, kUnaryCall);
    EXPECT_EQ(req.request_id, 1u);
    EXPECT_EQ(req.timeout_ms, 1000u);
    EXPECT_EQ(req.caller, "");
    EXPECT_EQ(req.callee, kCallee);
    EXPECT_EQ(req.func, kFunc);
    EXPECT_EQ(req.message_type, 0u);
    EXPECT_TRUE(req.trans_info.empty());
    EXPECT_EQ(req.content_type, 0u);
    EXPECT_EQ(req.content_encoding, 0u);
    EXPECT_EQ(req.body.ToString(), GoldenRequestBody());
    EXPECT_TRUE(req.attachment.empty());
    HelloRequest body;
    ASSERT_TRUE(body.ParseFromString(req.body.ToString()));
    EXPECT_EQ(body.msg(), "hi");
  }
}

TEST(TrpcCodecGoldenTest, ServerEncodesTheExampleResponse) {
  TrpcServerCodec server;
  RpcResponse rsp;
  rsp.request_id = 1;
  HelloReply body;
  body.set_msg("Hello, hi");
  ChainBuffer out;
  ASSERT_TRUE(server.EncodeResponse(&rsp, &body, &out));
  EXPECT_EQ(out.size(), 29u);
  EXPECT_EQ(out.ToString(), GoldenResponse());
}

TEST(TrpcCodecGoldenTest, ClientDecodesTheExampleResponse) {
  TrpcClientCodec client;
  for (size_t piece : {size_t{0}, size_t{1}, size_t{7}, size_t{17}}) {
    SCOPED_TRACE(piece);
    ChainBuffer in = piece == 0 ? Buffer(GoldenResponse()) : Fragmented(GoldenResponse(), piece);
    ChainBuffer frame = SplitOne(&client, std::move(in));
    uint32_t id = 0;
    ASSERT_TRUE(client.PeekResponseId(frame, &id));
    EXPECT_EQ(id, 1u);
    RpcResponse rsp;
    std::string err;
    ASSERT_TRUE(client.DecodeResponse(std::move(frame), &rsp, &err)) << err;
    EXPECT_EQ(rsp.request_id, 1u);
    EXPECT_EQ(rsp.ret, 0);
    EXPECT_EQ(rsp.func_ret, 0);
    EXPECT_EQ(rsp.error_msg, "");
    EXPECT_TRUE(rsp.trans_info.empty());
    EXPECT_TRUE(rsp.attachment.empty());
    HelloReply body;
    ASSERT_TRUE(body.ParseFromString(rsp.body.ToString()));
    EXPECT_EQ(body.msg(), "Hello, hi");
  }
}

// ---- Round trips of every field -----------------------------------------------------------------

TEST(TrpcCodecTest, RequestRoundTripsEveryField) {
  TrpcClientCodec client;
  TrpcServerCodec server;
  RpcRequest in;
  in.version = 7;
  in.call_type = kOnewayCall;
  in.request_id = 0xfedcba98;
  in.timeout_ms = 250;
  in.message_type = 0x12;
  in.content_type = 4;
  in.content_encoding = 1;
  in.caller = "trpc.app.server.service";
  in.callee = std::string(kCallee);
  in.func = std::string(kFunc);
  in.trans_info = {{"trpc-dyeing-key", "abc"}, {"bin", std::string("\0\xff\x01", 3)}, {"e", ""}};
  in.body = Buffer("raw body bytes");
  in.attachment = Buffer(std::string("attach\0ment", 11));

  ChainBuffer wire;
  ASSERT_TRUE(client.EncodeRequest(&in, nullptr, &wire));
  RpcRequest out;
  std::string err;
  ASSERT_TRUE(server.DecodeRequest(SplitOne(&server, std::move(wire)), &out, &err)) << err;
  EXPECT_EQ(out.version, 7u);
  EXPECT_EQ(out.call_type, kOnewayCall);
  EXPECT_EQ(out.request_id, 0xfedcba98u);
  EXPECT_EQ(out.timeout_ms, 250u);
  EXPECT_EQ(out.message_type, 0x12u);
  EXPECT_EQ(out.content_type, 4u);
  EXPECT_EQ(out.content_encoding, 1u);
  EXPECT_EQ(out.caller, in.caller);
  EXPECT_EQ(out.callee, in.callee);
  EXPECT_EQ(out.func, in.func);
  EXPECT_EQ(out.trans_info, in.trans_info);
  // The body went out gzip-compressed (content_encoding 1); the attachment as it was.
  EXPECT_EQ(Inflate(1, out.body), "raw body bytes");
  EXPECT_EQ(out.attachment.ToString(), std::string("attach\0ment", 11));
}

TEST(TrpcCodecTest, ResponseRoundTripsEveryField) {
  TrpcClientCodec client;
  TrpcServerCodec server;
  RpcResponse in;
  in.version = 3;
  in.call_type = kUnaryCall;
  in.request_id = 42;
  in.func_ret = -5;  // a handler's own code; ret stays 0 so the body is sent
  in.error_msg = "handler says no";
  in.message_type = 0x01;
  in.content_type = 2;
  in.content_encoding = 3;
  in.trans_info = {{"k1", "v1"}, {"k2", std::string(300, 'v')}};
  in.body = Buffer("{\"json\":1}");
  in.attachment = Buffer("ATT");

  ChainBuffer wire;
  ASSERT_TRUE(server.EncodeResponse(&in, nullptr, &wire));
  ChainBuffer frame = SplitOne(&client, std::move(wire));
  uint32_t id = 0;
  ASSERT_TRUE(client.PeekResponseId(frame, &id));
  EXPECT_EQ(id, 42u);
  RpcResponse out;
  std::string err;
  ASSERT_TRUE(client.DecodeResponse(std::move(frame), &out, &err)) << err;
  EXPECT_EQ(out.version, 3u);
  EXPECT_EQ(out.request_id, 42u);
  EXPECT_EQ(out.ret, 0);
  EXPECT_EQ(out.func_ret, -5);
  EXPECT_EQ(out.error_msg, "handler says no");
  EXPECT_EQ(out.message_type, 0x01u);
  EXPECT_EQ(out.content_type, 2u);
  EXPECT_EQ(out.content_encoding, 3u);
  EXPECT_EQ(out.trans_info, in.trans_info);
  EXPECT_EQ(Inflate(3, out.body), "{\"json\":1}");  // zlib (content_encoding 3)
  EXPECT_EQ(out.attachment.ToString(), "ATT");
}

// The fixed header's stream id and version (bytes 10-14) travel both ways: a server copies a
// tRPC-Go multiplexed request's into the reply, and its client matches replies by them.
TEST(TrpcCodecTest, FrameStreamIdAndVersionRoundTrip) {
  TrpcClientCodec client;
  TrpcServerCodec server;
  RpcRequest req = GoldenRpcRequest();
  req.frame_stream_id = 0x01020304;
  req.frame_version = 1;
  ChainBuffer wire;
  ASSERT_TRUE(client.EncodeRequest(&req, nullptr, &wire));
  std::string bytes = wire.ToString();
  EXPECT_EQ(bytes.substr(10, 6), Hex("01 02 03 04 01 00"));
  RpcRequest got;
  std::string err;
  ASSERT_TRUE(server.DecodeRequest(SplitOne(&server, std::move(wire)), &got, &err)) << err;
  EXPECT_EQ(got.frame_stream_id, 0x01020304u);
  EXPECT_EQ(got.frame_version, 1u);

  RpcResponse rsp;
  rsp.request_id = 1;
  rsp.frame_stream_id = got.frame_stream_id;
  rsp.frame_version = got.frame_version;
  ChainBuffer out;
  ASSERT_TRUE(server.EncodeResponse(&rsp, nullptr, &out));
  EXPECT_EQ(out.ToString().substr(10, 6), Hex("01 02 03 04 01 00"));
}

// A message body in JSON is written as tRPC-Go writes it (proto field names, every field), and
// compressed when the header says so; the body is read back the same way.
TEST(TrpcCodecTest, JsonAndCompressedMessageBodies) {
  TrpcClientCodec client;
  TrpcServerCodec server;
  HelloRequest msg;
  msg.set_msg("hi");
  for (uint32_t encoding : {0u, 1u, 4u, 6u}) {
    RpcRequest req = GoldenRpcRequest();
    req.content_type = kContentTypeJson;
    req.content_encoding = encoding;
    ChainBuffer wire;
    ASSERT_TRUE(client.EncodeRequest(&req, &msg, &wire)) << encoding;
    RpcRequest got;
    std::string err;
    ASSERT_TRUE(server.DecodeRequest(SplitOne(&server, std::move(wire)), &got, &err)) << err;
    EXPECT_EQ(got.content_type, kContentTypeJson);
    EXPECT_EQ(got.content_encoding, encoding);
    EXPECT_EQ(Inflate(encoding, got.body), "{\"msg\":\"hi\"}") << encoding;
  }
  // An empty message: every field written, as tRPC-Go does.
  RpcRequest req = GoldenRpcRequest();
  req.content_type = kContentTypeJson;
  HelloRequest empty;
  ChainBuffer wire;
  ASSERT_TRUE(client.EncodeRequest(&req, &empty, &wire));
  RpcRequest got;
  std::string err;
  ASSERT_TRUE(server.DecodeRequest(SplitOne(&server, std::move(wire)), &got, &err)) << err;
  EXPECT_EQ(got.body.ToString(), "{\"msg\":\"\"}");
}

// A content type that cannot carry a protobuf message (flatbuffer here) and an encoding we do
// not speak are encode errors, not bodies labelled with what they are not.
TEST(TrpcCodecTest, UnknownContentTypeOrEncodingIsAnEncodeError) {
  TrpcClientCodec client;
  HelloRequest msg;
  msg.set_msg("hi");
  RpcRequest req = GoldenRpcRequest();
  req.content_type = 3;
  ChainBuffer wire;
  EXPECT_FALSE(client.EncodeRequest(&req, &msg, &wire));
  req.content_type = 0;
  req.content_encoding = 99;
  EXPECT_FALSE(client.EncodeRequest(&req, &msg, &wire));
  EXPECT_TRUE(wire.empty());
}

TEST(TrpcCodecTest, FailedResponseCarriesNoBody) {
  TrpcClientCodec client;
  TrpcServerCodec server;
  RpcResponse in;
  in.request_id = 9;
  in.ret = 12;
  in.error_msg = "no such function: /a.B/C";
  in.body = Buffer("must not be sent");
  in.attachment = Buffer("nor this");
  HelloReply body_msg;
  body_msg.set_msg("nor this either");
  ChainBuffer wire;
  ASSERT_TRUE(server.EncodeResponse(&in, &body_msg, &wire));
  RpcResponse out;
  std::string err;
  ASSERT_TRUE(client.DecodeResponse(SplitOne(&client, std::move(wire)), &out, &err)) << err;
  EXPECT_EQ(out.ret, 12);
  EXPECT_EQ(out.error_msg, "no such function: /a.B/C");
  EXPECT_TRUE(out.body.empty());
  EXPECT_TRUE(out.attachment.empty());
}

TEST(TrpcCodecTest, EncodeAppendsToWhatIsAlreadyInTheBuffer) {
  TrpcClientCodec client;
  ChainBuffer out = Buffer("earlier");
  RpcRequest req = GoldenRpcRequest();
  req.body = Buffer(GoldenRequestBody());
  ASSERT_TRUE(client.EncodeRequest(&req, nullptr, &out));
  EXPECT_EQ(out.ToString(), "earlier" + GoldenRequest());
}

TEST(TrpcCodecTest, RawBodyIsLinkedNotCopied) {
  TrpcClientCodec client;
  std::string big = Pattern(20000);
  RpcRequest req = GoldenRpcRequest();
  req.body = Buffer(big);
  const char* first_body_byte = req.body.FirstSpan().data();
  ChainBuffer out;
  ASSERT_TRUE(client.EncodeRequest(&req, nullptr, &out));
  bool found = false;
  for (size_t i = 0; i < out.SpanCount(); ++i) found |= out.Span(i).data() == first_body_byte;
  EXPECT_TRUE(found);
}

TEST(TrpcCodecTest, OversizedHeaderIsAnEncodeErrorThatLeavesTheBufferAlone) {
  TrpcServerCodec server;
  TrpcClientCodec client;
  RpcResponse rsp;
  rsp.request_id = 1;
  rsp.ret = 31;
  rsp.error_msg = std::string(70000, 'e');  // the header size field holds at most 65535
  ChainBuffer out = Buffer("queued");
  EXPECT_FALSE(server.EncodeResponse(&rsp, nullptr, &out));
  EXPECT_EQ(out.ToString(), "queued");

  RpcRequest req = GoldenRpcRequest();
  req.trans_info["big"] = std::string(70000, 't');
  EXPECT_FALSE(client.EncodeRequest(&req, nullptr, &out));
  EXPECT_EQ(out.ToString(), "queued");
}

// ---- Bad input to the decoders ------------------------------------------------------------------

TEST(TrpcCodecDecodeTest, GarbageProtobufHeaderFails) {
  TrpcServerCodec server;
  TrpcClientCodec client;
  // A truncated varint, then a length running past the header, then wire type 7.
  for (std::string header : {Hex("18"), Hex("32 10 61 62"), Hex("0f 01"), Hex("ff ff ff ff ff")}) {
    SCOPED_TRACE(header.size());
    std::string frame = MakeFrame(header, "body");
    RpcRequest req;
    std::string err;
    EXPECT_FALSE(server.DecodeRequest(Buffer(frame), &req, &err));
    EXPECT_THAT(err, HasSubstr("cannot parse the"));
    RpcResponse rsp;
    err.clear();
    EXPECT_FALSE(client.DecodeResponse(Fragmented(frame, 3), &rsp, &err));
    EXPECT_THAT(err, HasSubstr("cannot parse the"));
  }
}

TEST(TrpcCodecDecodeTest, AttachmentLargerThanTheRestFails) {
  TrpcServerCodec server;
  TrpcClientCodec client;
  RequestProtocol req_header;
  req_header.set_request_id(1);
  req_header.set_attachment_size(5);
  RpcRequest req;
  std::string err;
  EXPECT_FALSE(
      server.DecodeRequest(Buffer(MakeFrame(req_header.SerializeAsString(), "1234")), &req, &err));
  EXPECT_THAT(err, HasSubstr("attachment size 5 exceeds the 4 bytes"));

  // Exactly the rest is fine: an empty body.
  err.clear();
  ASSERT_TRUE(
      server.DecodeRequest(Buffer(MakeFrame(req_header.SerializeAsString(), "12345")), &req, &err))
      << err;
  EXPECT_TRUE(req.body.empty());
  EXPECT_EQ(req.attachment.ToString(), "12345");

  ResponseProtocol rsp_header;
  rsp_header.set_attachment_size(UINT32_MAX);
  RpcResponse rsp;
  EXPECT_FALSE(
      client.DecodeResponse(Buffer(MakeFrame(rsp_header.SerializeAsString(), "")), &rsp, &err));
  EXPECT_THAT(err, HasSubstr("attachment size 4294967295 exceeds the 0 bytes"));
}

TEST(TrpcCodecDecodeTest, FramesThatDidNotComeFromSplitAreCheckedAgain) {
  TrpcServerCodec server;
  const std::string good = GoldenRequest();
  struct Case {
    std::string frame;
    std::string error;
  };
  std::vector<Case> cases = {
      {good.substr(0, 15), "shorter than the fixed header"},
      {good.substr(0, 94), "does not match the 94 bytes"},
      {good + "x", "does not match the 96 bytes"},
      {Hex("0931") + good.substr(2), "bad magic 0x0931"},
      {good.substr(0, 2) + Hex("01 01") + good.substr(4), "streaming frames not supported"},
      {MakeFrame("", "", [](TrpcFrameHeader* h) { h->header_size = 1; }), "smaller than"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    RpcRequest req;
    std::string err;
    EXPECT_FALSE(server.DecodeRequest(Buffer(c.frame), &req, &err));
    EXPECT_THAT(err, HasSubstr(c.error));
  }
}

TEST(TrpcCodecDecodeTest, InvalidUtf8TransInfoKeyFails) {
  // trans_info is map<string, bytes>: like protobuf, the decoder rejects a key that is not
  // UTF-8.
  std::string entry = Hex("0a 01 ff 12 01 76");  // key "\xff", value "v"
  std::string header = Hex("4a") + static_cast<char>(entry.size()) + entry;
  TrpcServerCodec server;
  RpcRequest req;
  std::string err;
  EXPECT_FALSE(server.DecodeRequest(Buffer(MakeFrame(header, "")), &req, &err));
  EXPECT_NE(err.find("UTF-8"), std::string::npos) << err;
}

TEST(TrpcCodecDecodeTest, EmptyHeaderIsAllDefaults) {
  TrpcServerCodec server;
  RpcRequest req;
  std::string err;
  ASSERT_TRUE(server.DecodeRequest(Buffer(MakeFrame("", "body")), &req, &err)) << err;
  EXPECT_EQ(req.request_id, 0u);
  EXPECT_EQ(req.func, "");
  EXPECT_EQ(req.body.ToString(), "body");
}

TEST(TrpcCodecDecodeTest, RandomCorruptionNeverCrashes) {
  // Flip bytes of valid frames and feed them through every entry point; only the absence of
  // crashes and sanitizer reports is checked (the outcomes are tested above).
  TrpcServerCodec server;
  TrpcClientCodec client;
  RpcRequest rich = GoldenRpcRequest();
  rich.trans_info = {{"a", "b"}, {"trpc-x", "y"}};
  rich.attachment = Buffer("att");
  ChainBuffer rich_wire;
  ASSERT_TRUE(client.EncodeRequest(&rich, nullptr, &rich_wire));
  const std::vector<std::string> seeds = {GoldenRequest(), GoldenResponse(), rich_wire.ToString()};
  uint32_t x = 12345;
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  for (int i = 0; i < 20000; ++i) {
    std::string bytes = seeds[next() % seeds.size()];
    for (int flips = 1 + next() % 4; flips > 0; --flips) {
      bytes[next() % bytes.size()] = static_cast<char>(next() >> 24);
    }
    ChainBuffer in = (i % 2) ? Buffer(bytes) : Fragmented(bytes, 1 + next() % 9);
    std::vector<ChainBuffer> frames;
    std::string err;
    if (server.Split(&in, &frames, kDefaultMaxPacketSize, &err) == SplitResult::kError) continue;
    for (ChainBuffer& f : frames) {
      uint32_t id;
      client.PeekResponseId(f, &id);
      RpcResponse rsp;
      client.DecodeResponse(f.Clone(), &rsp, &err);
      RpcRequest req;
      server.DecodeRequest(std::move(f), &req, &err);
    }
  }
}

// ---- Big frames ---------------------------------------------------------------------------------

TEST(TrpcCodecTest, TenMegabyteBodiesRoundTrip) {
  constexpr size_t kBodySize = 10 << 20;  // 10 MiB: more than the default 10,000,000 limit
  constexpr size_t kLimit = 16 << 20;
  constexpr size_t kRead = 64 << 10;  // bytes per simulated read
  TrpcClientCodec client;
  TrpcServerCodec server;

  // Request with a raw body, fed to the splitter in 64 KiB reads.
  const std::string body = Pattern(kBodySize, 7);
  RpcRequest req = GoldenRpcRequest();
  req.content_type = 4;
  req.body = Buffer(body);
  ChainBuffer wire;
  ASSERT_TRUE(client.EncodeRequest(&req, nullptr, &wire));
  const std::string wire_bytes = wire.ToString();
  ChainBuffer in;
  std::vector<ChainBuffer> frames;
  std::string err;
  for (size_t off = 0; off < wire_bytes.size(); off += kRead) {
    in.Append(std::string_view(wire_bytes).substr(off, kRead));
    ASSERT_EQ(server.Split(&in, &frames, kLimit, &err), SplitResult::kOk) << err;
    ASSERT_EQ(frames.size(), off + kRead >= wire_bytes.size() ? 1u : 0u);
  }
  RpcRequest got;
  ASSERT_TRUE(server.DecodeRequest(std::move(frames[0]), &got, &err)) << err;
  EXPECT_EQ(got.body.size(), kBodySize);
  EXPECT_TRUE(got.body.ToString() == body);

  // The same frame is too big for the default limit, and that is known from its first 16 bytes.
  ChainBuffer head = Buffer(std::string_view(wire_bytes).substr(0, 16));
  frames.clear();
  EXPECT_EQ(server.Split(&head, &frames, kDefaultMaxPacketSize, &err), SplitResult::kError);

  // Response with a 10 MiB message body, serialized across many blocks.
  HelloReply big;
  big.set_msg(std::string(kBodySize, 'z'));
  RpcResponse rsp;
  rsp.request_id = 77;
  ChainBuffer rsp_wire;
  ASSERT_TRUE(server.EncodeResponse(&rsp, &big, &rsp_wire));
  EXPECT_GT(rsp_wire.SpanCount(), 1000u);
  frames.clear();
  ASSERT_EQ(client.Split(&rsp_wire, &frames, kLimit, &err), SplitResult::kOk) << err;
  ASSERT_EQ(frames.size(), 1u);
  uint32_t id = 0;
  ASSERT_TRUE(client.PeekResponseId(frames[0], &id));
  EXPECT_EQ(id, 77u);
  RpcResponse got_rsp;
  ASSERT_TRUE(client.DecodeResponse(std::move(frames[0]), &got_rsp, &err)) << err;
  HelloReply parsed;
  ChainBufferInputStream stream(&got_rsp.body);
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&stream));
  EXPECT_TRUE(parsed.msg() == big.msg());
}

// ---- Registration -------------------------------------------------------------------------------

TEST(TrpcCodecRegistryTest, RegistersAsTrpc) {
  std::shared_ptr<ServerCodec> server = CodecRegistry::Instance().GetServer("trpc");
  std::shared_ptr<ClientCodec> client = CodecRegistry::Instance().GetClient("trpc");
  ASSERT_NE(server, nullptr);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(server->Name(), "trpc");
  EXPECT_EQ(client->Name(), "trpc");
  EXPECT_NE(dynamic_cast<TrpcServerCodec*>(server.get()), nullptr);
  EXPECT_NE(dynamic_cast<TrpcClientCodec*>(client.get()), nullptr);
}

}  // namespace
}  // namespace trpc
