// TrpcClientCodec::PeekResponseId: the hand-written scan of the protobuf header, checked against
// protobuf's own parser.
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/codec/trpc_test_frames.h"
#include "trpc/codec/trpc/detail/trpc_codec.h"
#include "trpc/codec/trpc/trpc.pb.h"

namespace trpc {
namespace {

using codec_test::Buffer;
using codec_test::Fragmented;
using codec_test::GoldenResponse;
using codec_test::Hex;
using codec_test::MakeFrame;

// PeekResponseId on a response frame around `header` (followed by a body), laid out in one span
// (piece 0) or in spans of `piece` bytes.
bool Peek(std::string_view header, uint32_t* id, size_t piece = 0) {
  std::string frame = MakeFrame(header, Hex("18 07 0a 02 68 69"));  // body bytes look like a tag
  TrpcClientCodec codec;
  return codec.PeekResponseId(piece == 0 ? Buffer(frame) : Fragmented(frame, piece), id);
}

// What protobuf makes of the same header: whether it parses, and the request_id.
bool ProtobufParse(std::string_view header, uint32_t* id) {
  google::protobuf::LogSilencer quiet;  // it logs bad UTF-8 in map keys
  ResponseProtocol rsp;
  if (!rsp.ParseFromArray(header.data(), static_cast<int>(header.size()))) return false;
  *id = rsp.request_id();
  return true;
}

// The scan and protobuf agree on `header` (valid or not), in every span layout.
void ExpectAgreement(std::string_view header) {
  uint32_t want = 0xdeadbeef;
  bool parses = ProtobufParse(header, &want);
  for (size_t piece : {size_t{0}, size_t{1}, size_t{2}, size_t{5}}) {
    uint32_t got = 0xdeadbeef;
    EXPECT_EQ(Peek(header, &got, piece), parses) << "piece " << piece;
    if (parses) {
      EXPECT_EQ(got, want) << "piece " << piece;
    }
  }
}

std::string Nested(int depth, std::string_view inner) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += Hex("7b");  // start group, field 15
  s += inner;
  for (int i = 0; i < depth; ++i) s += Hex("7c");  // end group, field 15
  return s;
}

TEST(TrpcPeekResponseIdTest, GoldenResponse) {
  TrpcClientCodec codec;
  uint32_t id = 0;
  ASSERT_TRUE(codec.PeekResponseId(Buffer(GoldenResponse()), &id));
  EXPECT_EQ(id, 1u);
}

TEST(TrpcPeekResponseIdTest, FindsTheIdAmongEveryOtherField) {
  ResponseProtocol rsp;
  rsp.set_version(1);
  rsp.set_call_type(1);
  rsp.set_request_id(0x89abcdef);
  rsp.set_ret(-1);  // a negative int32 is a 10-byte varint
  rsp.set_func_ret(-2);
  rsp.set_error_msg(Hex("18 05 18 06"));  // looks like request_id tags, inside a string
  rsp.set_message_type(0x1f);
  (*rsp.mutable_trans_info())["k"] = Hex("18 09");
  (*rsp.mutable_trans_info())["trpc-long"] = std::string(1000, 'x');
  rsp.set_content_type(2);
  rsp.set_content_encoding(3);
  rsp.set_attachment_size(0);
  uint32_t id = 0;
  ASSERT_TRUE(Peek(rsp.SerializeAsString(), &id));
  EXPECT_EQ(id, 0x89abcdefu);
  ExpectAgreement(rsp.SerializeAsString());
}

TEST(TrpcPeekResponseIdTest, EdgeCasesMatchProtobuf) {
  struct Case {
    std::string name;
    std::string header;
    bool ok;
    uint32_t id;
  };
  const std::vector<Case> cases = {
      {"empty header: id 0", "", true, 0},
      {"absent: id 0", Hex("20 05"), true, 0},
      {"id after a string", Hex("32 02 18 05 18 2a"), true, 42},
      {"last occurrence wins", Hex("18 01 18 05"), true, 5},
      {"length-delimited field 3 is unknown", Hex("1a 01 07"), true, 0},
      {"fixed32 field 3 is unknown", Hex("1d 01 00 00 00 18 04"), true, 4},
      {"fixed64 field 3 is unknown", Hex("19 01 02 03 04 05 06 07 08"), true, 0},
      {"10-byte varint keeps the low 32 bits", Hex("18 ff ff ff ff ff ff ff ff ff 01"), true,
       0xffffffff},
      {"padded varint", Hex("18 81 80 80 80 80 80 80 80 80 00"), true, 1},
      {"5-byte tag", Hex("98 80 80 80 00 03"), true, 3},
      {"group skipped, field 3 inside ignored", Hex("7b 18 09 7c 18 02"), true, 2},
      {"empty length-delimited field", Hex("32 00 18 08"), true, 8},
      {"truncated value", Hex("18"), false, 0},
      {"truncated value 2", Hex("18 80"), false, 0},
      {"11-byte varint", Hex("18 ff ff ff ff ff ff ff ff ff ff 01"), false, 0},
      {"truncated tag", Hex("80"), false, 0},
      {"6-byte tag", Hex("98 80 80 80 80 00 03"), false, 0},
      {"length past the end", Hex("32 05 61"), false, 0},
      {"length of 2 GiB", Hex("32 80 80 80 80 08"), false, 0},
      {"6-byte length", Hex("32 81 80 80 80 80 00 61"), false, 0},
      {"wire type 6", Hex("1e 00"), false, 0},
      {"wire type 7", Hex("1f 00"), false, 0},
      {"tag 0", Hex("00"), false, 0},
      {"field 0", Hex("02 00"), false, 0},
      {"unterminated group", Hex("7b 18 01"), false, 0},
      {"end group at top level", Hex("18 01 7c"), false, 0},
      {"mismatched end group", Hex("7b 84 01"), false, 0},
      {"truncated fixed64", Hex("19 01 02 03"), false, 0},
      {"truncated fixed32", Hex("1d 01"), false, 0},
      {"100 nested groups", Nested(100, Hex("18 01")) + Hex("18 06"), true, 6},
      {"101 nested groups", Nested(101, ""), false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    uint32_t want = 0;
    ASSERT_EQ(ProtobufParse(c.header, &want), c.ok) << "the case itself is wrong";
    if (c.ok) {
      ASSERT_EQ(want, c.id) << "the case itself is wrong";
    }
    ExpectAgreement(c.header);
  }
}

TEST(TrpcPeekResponseIdTest, NeverReadsPastTheHeader) {
  // The bytes after the header would complete each of these; the scan must not look at them.
  TrpcClientCodec codec;
  for (std::string header : {Hex("18"), Hex("32 05"), Hex("19 01")}) {
    std::string frame = MakeFrame(header, Hex("01 02 03 04 05 06 07 08"));
    uint32_t id;
    EXPECT_FALSE(codec.PeekResponseId(Buffer(frame), &id));
  }
}

TEST(TrpcPeekResponseIdTest, BadFixedHeaders) {
  TrpcClientCodec codec;
  const std::string good = GoldenResponse();
  uint32_t id;
  EXPECT_FALSE(codec.PeekResponseId(ChainBuffer(), &id));
  EXPECT_FALSE(codec.PeekResponseId(Buffer(good.substr(0, 15)), &id));
  EXPECT_FALSE(codec.PeekResponseId(Buffer(good.substr(0, 17)), &id));  // truncated header
  EXPECT_FALSE(codec.PeekResponseId(Buffer(good.substr(0, 28)), &id));  // truncated body
  EXPECT_FALSE(codec.PeekResponseId(Buffer(good + "extra"), &id));      // size mismatch
  std::string bad = good;
  bad[0] = 0x08;
  EXPECT_FALSE(codec.PeekResponseId(Buffer(bad), &id));
  bad = good;
  bad[2] = 1;
  EXPECT_FALSE(codec.PeekResponseId(Buffer(bad), &id));
  // header size larger than the frame allows
  EXPECT_FALSE(codec.PeekResponseId(
      Buffer(MakeFrame(Hex("18 01"), "", [](TrpcFrameHeader* h) { h->header_size = 3; })), &id));
}

TEST(TrpcPeekResponseIdTest, AgreesWithProtobufOnRandomHeaders) {
  // Headers from three sources: byte flips of real headers, sequences of well-formed and broken
  // tokens, and plain random bytes. Wherever protobuf parses one, the scan must find the same id.
  ResponseProtocol rich;
  rich.set_request_id(123456);
  rich.set_ret(-3);
  rich.set_error_msg("oops");
  (*rich.mutable_trans_info())["a"] = "b";
  const std::vector<std::string> seeds = {Hex("18 01"), rich.SerializeAsString()};
  std::vector<std::string> tokens;
  for (const char* hex :
       {"18 01", "18 ff ff ff ff 0f", "08 00", "20 ff ff ff ff ff ff ff ff ff 01", "32 03 61 62 63",
        "1a 00", "1d 01 02 03 04", "19 01 02 03 04 05 06 07 08", "7b", "7c", "1b", "1c",
        "42 05 0a 01 6b 12 00", "80", "ff", "00", "18", "32 7f"}) {
    tokens.push_back(Hex(hex));
  }
  uint32_t x = 2024;
  auto next = [&x] { return x = x * 1664525u + 1013904223u; };
  int parsed = 0;
  int rejected = 0;
  for (int i = 0; i < 30000; ++i) {
    std::string header;
    switch (i % 3) {
      case 0:
        header = seeds[next() % seeds.size()];
        for (int flips = 1 + next() % 3; flips > 0; --flips) {
          header[next() % header.size()] = static_cast<char>(next() >> 24);
        }
        break;
      case 1:
        for (int n = next() % 6; n > 0; --n) header += tokens[(next() >> 8) % tokens.size()];
        break;
      default:
        for (int n = next() % 12; n > 0; --n) header.push_back(static_cast<char>(next() >> 24));
    }
    uint32_t want = 0;
    uint32_t got = 0;
    bool parses = ProtobufParse(header, &want);
    bool scans = Peek(header, &got, 1 + i % 4);
    if (parses) {
      ++parsed;
      ASSERT_TRUE(scans) << "header " << ::testing::PrintToString(header);
      ASSERT_EQ(got, want) << "header " << ::testing::PrintToString(header);
    } else {
      ++rejected;
    }
  }
  // Both kinds of input were exercised.
  EXPECT_GT(parsed, 5000);
  EXPECT_GT(rejected, 5000);
}

}  // namespace
}  // namespace trpc
