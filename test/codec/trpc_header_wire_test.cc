// header_wire.h, the hand-written RequestProtocol / ResponseProtocol codec, against libprotobuf:
// random headers round-trip through both (byte for byte the same encoding), mutated headers
// parse exactly when ParseFromArray() parses them and then to the same values, and the frame
// layer uses it across block edges.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "test/codec/trpc_test_frames.h"
#include "trpc/codec/trpc/detail/header_wire.h"
#include "trpc/codec/trpc/detail/trpc_codec.h"
#include "trpc/codec/trpc/trpc.pb.h"

namespace trpc::detail {
namespace {

using codec_test::Buffer;
using codec_test::Fragmented;
using codec_test::Hex;
using codec_test::MakeFrame;
using ::testing::HasSubstr;

// Sanitizers run this code about ten times slower; the random tests do less there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kScale = 4;
#else
constexpr int kScale = 1;
#endif

// ---- The two messages behind one interface
// --------------------------------------------------------

// The fields both messages have, under the same names.
template <typename Proto, typename Rpc>
Proto CommonFromRpc(const Rpc& r, uint32_t attachment_size) {
  Proto m;
  m.set_version(r.version);
  m.set_call_type(r.call_type);
  m.set_request_id(r.request_id);
  m.set_message_type(r.message_type);
  for (const auto& [k, v] : r.trans_info) (*m.mutable_trans_info())[k] = v;
  m.set_content_type(r.content_type);
  m.set_content_encoding(r.content_encoding);
  m.set_attachment_size(attachment_size);
  return m;
}

template <typename Proto, typename Rpc>
void CommonToRpc(const Proto& m, Rpc* r, uint32_t* attachment_size) {
  r->version = m.version();
  r->call_type = m.call_type();
  r->request_id = m.request_id();
  r->message_type = m.message_type();
  r->trans_info = TransInfo(m.trans_info().begin(), m.trans_info().end());
  r->content_type = m.content_type();
  r->content_encoding = m.content_encoding();
  *attachment_size = m.attachment_size();
}

struct Request {
  using Proto = RequestProtocol;
  using Rpc = RpcRequest;
  static constexpr uint32_t kTransInfoField = 9;

  static Proto FromRpc(const Rpc& r, uint32_t attachment_size) {
    Proto m = CommonFromRpc<Proto>(r, attachment_size);
    m.set_timeout(r.timeout_ms);
    m.set_caller(r.caller);
    m.set_callee(r.callee);
    m.set_func(r.func);
    return m;
  }

  static void ToRpc(const Proto& m, Rpc* r, uint32_t* attachment_size) {
    CommonToRpc(m, r, attachment_size);
    r->timeout_ms = m.timeout();
    r->caller = m.caller();
    r->callee = m.callee();
    r->func = m.func();
  }
};

struct Response {
  using Proto = ResponseProtocol;
  using Rpc = RpcResponse;
  static constexpr uint32_t kTransInfoField = 8;

  static Proto FromRpc(const Rpc& r, uint32_t attachment_size) {
    Proto m = CommonFromRpc<Proto>(r, attachment_size);
    m.set_ret(r.ret);
    m.set_func_ret(r.func_ret);
    m.set_error_msg(r.error_msg);
    return m;
  }

  static void ToRpc(const Proto& m, Rpc* r, uint32_t* attachment_size) {
    CommonToRpc(m, r, attachment_size);
    r->ret = m.ret();
    r->func_ret = m.func_ret();
    r->error_msg = m.error_msg();
  }
};

std::string Printable(std::string_view bytes) {
  std::string out;
  for (unsigned char c : bytes.substr(0, 200)) out += fmt::format("{:02x} ", c);
  if (bytes.size() > 200) out += fmt::format("... ({} bytes)", bytes.size());
  return out;
}

// protobuf's deterministic serialization: map entries sorted by key, like TransInfo.
template <typename Proto>
std::string Deterministic(const Proto& m) {
  std::string s;
  {
    google::protobuf::io::StringOutputStream stream(&s);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    m.SerializeToCodedStream(&out);
  }
  return s;
}

// ---- Random headers -----------------------------------------------------------------------------

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}

  uint64_t Next() { return rng_(); }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

  // Mostly the values where a varint changes length, and the extremes.
  uint32_t Uint32() {
    static const std::vector<uint32_t> kEdges = {0,
                                                 1,
                                                 127,
                                                 128,
                                                 16383,
                                                 16384,
                                                 (1u << 21) - 1,
                                                 1u << 21,
                                                 (1u << 28) - 1,
                                                 1u << 28,
                                                 INT32_MAX,
                                                 1u << 31,
                                                 UINT32_MAX};
    return OneIn(3) ? static_cast<uint32_t>(Next()) : Pick(kEdges);
  }
  int32_t Int32() {
    static const std::vector<int32_t> kEdges = {0, 1, -1, 127, -128, 31, 999, INT32_MAX, INT32_MIN};
    return OneIn(3) ? static_cast<int32_t>(Next()) : Pick(kEdges);
  }

  // Bytes with lengths around the varint boundaries of the length prefix.
  std::string Bytes(size_t max_size = SIZE_MAX) {
    static const std::vector<size_t> kLengths = {0, 1, 15, 16, 127, 128, 16383, 16384};
    const size_t n = std::min(OneIn(2) ? Below(64) : Pick(kLengths), max_size);
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(Next());
    return s;
  }

  // A valid UTF-8 key: ASCII, 2-, 3- and 4-byte characters; often from a small pool so that
  // entries share keys.
  std::string Key() {
    static const std::vector<std::string> kPool = {"", "a", "trpc-env", "\xc3\xa9", "k"};
    if (OneIn(2)) return Pick(kPool);
    static const std::vector<std::string> kChars = {"x",
                                                    "-",
                                                    "\x7f",
                                                    "\xc2\x80",
                                                    "\xdf\xbf",
                                                    "\xe4\xb8\xad",
                                                    "\xef\xbf\xbf",
                                                    "\xf0\x9f\x98\x80",
                                                    "\xf4\x8f\xbf\xbf"};
    std::string s;
    for (size_t n = Below(12); n > 0; --n) s += Pick(kChars);
    return s;
  }

  TransInfo Entries() {
    TransInfo m;
    const size_t n = OneIn(3) ? 0 : OneIn(2) ? 1 : 2 + Below(4);
    while (m.size() < n) m[Key()] = OneIn(4) ? std::string(Below(300), 'v') : Bytes();
    return m;
  }

  void Fill(RequestProtocol* m) {
    if (OneIn(2)) m->set_version(Uint32());
    if (OneIn(2)) m->set_call_type(Uint32());
    if (OneIn(2)) m->set_request_id(Uint32());
    if (OneIn(2)) m->set_timeout(Uint32());
    if (OneIn(2)) m->set_caller(Bytes());
    if (OneIn(2)) m->set_callee(Bytes());
    if (OneIn(2)) m->set_func(Bytes());
    if (OneIn(2)) m->set_message_type(Uint32());
    for (const auto& [k, v] : Entries()) (*m->mutable_trans_info())[k] = v;
    if (OneIn(2)) m->set_content_type(Uint32());
    if (OneIn(2)) m->set_content_encoding(Uint32());
    if (OneIn(2)) m->set_attachment_size(Uint32());
  }

  void Fill(ResponseProtocol* m) {
    if (OneIn(2)) m->set_version(Uint32());
    if (OneIn(2)) m->set_call_type(Uint32());
    if (OneIn(2)) m->set_request_id(Uint32());
    if (OneIn(2)) m->set_ret(Int32());
    if (OneIn(2)) m->set_func_ret(Int32());
    if (OneIn(2)) m->set_error_msg(Bytes());
    if (OneIn(2)) m->set_message_type(Uint32());
    for (const auto& [k, v] : Entries()) (*m->mutable_trans_info())[k] = v;
    if (OneIn(2)) m->set_content_type(Uint32());
    if (OneIn(2)) m->set_content_encoding(Uint32());
    if (OneIn(2)) m->set_attachment_size(Uint32());
  }

 private:
  std::mt19937_64 rng_;
};

template <typename M>
void ExpectSameMessage(const typename M::Proto& want, const typename M::Proto& got,
                       std::string_view bytes) {
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(want, got))
      << "want " << want.ShortDebugString() << "\ngot  " << got.ShortDebugString() << "\nbytes "
      << Printable(bytes);
}

// ---- Round trips
// ----------------------------------------------------------------------------------

template <typename M>
void RoundTrip(uint64_t seed, int count) {
  Random rnd(seed);
  for (int i = 0; i < count && !::testing::Test::HasFailure(); ++i) {
    typename M::Proto m;
    rnd.Fill(&m);
    const std::string theirs = m.SerializeAsString();

    // Our decoder reads protobuf's bytes.
    typename M::Rpc decoded;
    uint32_t decoded_attachment = 7;
    std::string err;
    ASSERT_TRUE(DecodeHeader(theirs, &decoded, &decoded_attachment, &err))
        << err << "\nbytes " << Printable(theirs);
    ExpectSameMessage<M>(m, M::FromRpc(decoded, decoded_attachment), theirs);

    // protobuf reads our bytes, which are exactly the deterministic serialization.
    typename M::Rpc rpc;
    uint32_t attachment_size;
    M::ToRpc(m, &rpc, &attachment_size);
    const size_t size = EncodedHeaderSize(rpc, attachment_size);
    std::string ours(size + 8, '\xee');
    const char* end = EncodeHeader(rpc, attachment_size, ours.data());
    ASSERT_EQ(end - ours.data(), static_cast<ptrdiff_t>(size));
    EXPECT_EQ(ours.substr(size), std::string(8, '\xee')) << "wrote past the computed size";
    ours.resize(size);
    typename M::Proto parsed;
    ASSERT_TRUE(parsed.ParseFromString(ours)) << Printable(ours);
    ExpectSameMessage<M>(m, parsed, ours);
    EXPECT_EQ(ours, Deterministic(m));
    if (m.trans_info_size() <= 1) {
      EXPECT_EQ(ours, theirs) << "trans_info entries: " << m.trans_info_size();
    }
  }
}

TEST(TrpcHeaderWireTest, RequestsRoundTripWithProtobuf) { RoundTrip<Request>(1, 4000 / kScale); }

TEST(TrpcHeaderWireTest, ResponsesRoundTripWithProtobuf) { RoundTrip<Response>(2, 4000 / kScale); }

TEST(TrpcHeaderWireTest, GoldenRequestHeader) {
  RpcRequest req;
  req.request_id = 1;
  req.timeout_ms = 1000;
  req.callee = std::string(codec_test::kCallee);
  req.func = std::string(codec_test::kFunc);
  std::string out(EncodedHeaderSize(req, 0), '\0');
  EncodeHeader(req, 0, out.data());
  EXPECT_EQ(out, codec_test::GoldenRequestHeader());
}

TEST(TrpcHeaderWireTest, ExtremeValues) {
  RpcResponse rsp;
  rsp.request_id = UINT32_MAX;
  rsp.ret = INT32_MIN;
  rsp.func_ret = -1;
  rsp.trans_info[""] = "";  // an empty entry still carries its key and value fields
  const std::string want =
      Hex("18 ff ff ff ff 0f  20 80 80 80 80 f8 ff ff ff ff 01  28 ff ff ff ff ff ff ff ff ff 01"
          "  42 04 0a 00 12 00");
  std::string out(EncodedHeaderSize(rsp, 0), '\0');
  EncodeHeader(rsp, 0, out.data());
  EXPECT_EQ(Printable(out), Printable(want));
  RpcResponse back;
  uint32_t attachment_size;
  std::string err;
  ASSERT_TRUE(DecodeHeader(want, &back, &attachment_size, &err)) << err;
  EXPECT_EQ(back.request_id, UINT32_MAX);
  EXPECT_EQ(back.ret, INT32_MIN);
  EXPECT_EQ(back.func_ret, -1);
  EXPECT_EQ(back.trans_info, rsp.trans_info);
}

// ---- Decoder details
// ------------------------------------------------------------------------------

TEST(TrpcHeaderWireTest, DecodingIntoAReusedRequestResetsItButKeepsCapacity) {
  RpcRequest req;
  uint32_t attachment_size;
  std::string err;
  RequestProtocol full;
  full.set_version(1);
  full.set_request_id(9);
  full.set_caller(std::string(100, 'c'));
  full.set_func(std::string(100, 'f'));
  (*full.mutable_trans_info())["k"] = "v";
  full.set_attachment_size(3);
  ASSERT_TRUE(DecodeHeader(full.SerializeAsString(), &req, &attachment_size, &err)) << err;
  EXPECT_EQ(attachment_size, 3u);
  const char* func_storage = req.func.data();

  RequestProtocol small;
  small.set_func("/a/b");
  ASSERT_TRUE(DecodeHeader(small.SerializeAsString(), &req, &attachment_size, &err)) << err;
  EXPECT_EQ(req.version, 0u);
  EXPECT_EQ(req.request_id, 0u);
  EXPECT_EQ(req.caller, "");
  EXPECT_EQ(req.func, "/a/b");
  EXPECT_EQ(req.func.data(), func_storage);  // assigned in place
  EXPECT_TRUE(req.trans_info.empty());
  EXPECT_EQ(attachment_size, 0u);
}

TEST(TrpcHeaderWireTest, AFailedDecodeLeavesDefaults) {
  RpcResponse rsp;
  rsp.request_id = 5;
  rsp.error_msg = "old";
  rsp.trans_info["old"] = "x";
  uint32_t attachment_size = 9;
  std::string err;
  // request_id 7, a trans_info entry, then a truncated varint.
  ASSERT_FALSE(
      DecodeHeader(Hex("18 07  42 06 0a 01 6b 12 01 76  20"), &rsp, &attachment_size, &err));
  EXPECT_EQ(rsp.request_id, 0u);
  EXPECT_EQ(rsp.error_msg, "");
  EXPECT_TRUE(rsp.trans_info.empty());
  EXPECT_EQ(attachment_size, 0u);
}

TEST(TrpcHeaderWireTest, ErrorsSayWhatAndWhere) {
  struct Case {
    std::string header;
    std::string error;
  };
  const std::vector<Case> cases = {
      {Hex("18 01 20"), "varint running past the end at byte 3"},
      {Hex("18 ff ff ff ff ff ff ff ff ff ff 01"), "varint longer than 10 bytes at byte 1"},
      {Hex("98 80 80 80 80 00"), "varint longer than 5 bytes at byte 0"},
      {Hex("2a 05 61"), "length 5 running past the end at byte 1"},
      {Hex("1f"), "wire type 7 at byte 0"},
      {Hex("18 01 00"), "field number 0 at byte 2"},
      {Hex("1c"), "end of group 3 without its start at byte 0"},
      {Hex("7b 18 01"), "group 15 that is never closed at byte 0"},
      {Hex("7b 84 01"), "end of group 16 inside group 15 at byte 1"},
      {Hex("19 01 02"), "fixed-size value running past the end at byte 1"},
      {Hex("4a 03 0a 01 ff"), "trans_info key that is not valid UTF-8 at byte 2"},
  };
  google::protobuf::LogSilencer quiet;  // protobuf logs the bad UTF-8 key
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    RequestProtocol proto;
    EXPECT_FALSE(proto.ParseFromString(c.header)) << "the case itself is wrong";
    RpcRequest req;
    uint32_t attachment_size;
    std::string err;
    EXPECT_FALSE(DecodeHeader(c.header, &req, &attachment_size, &err));
    EXPECT_EQ(err, c.error);
  }
}

// `depth` groups of field 15 around `inner`.
std::string Nested(int depth, std::string_view inner) {
  std::string s;
  for (int i = 0; i < depth; ++i) s += Hex("7b");
  s += inner;
  for (int i = 0; i < depth; ++i) s += Hex("7c");
  return s;
}

std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s += static_cast<char>(v | 0x80);
    v >>= 7;
  }
  return s + static_cast<char>(v);
}

// A trans_info entry (field 9 of a request) holding `body`.
std::string Entry(std::string_view body) {
  return Hex("4a") + Varint(body.size()) + std::string(body);
}

// Both parsers on one header: same verdict (`*parsed`), and on success the same values.
template <typename M>
bool Agree(std::string_view bytes, bool* parsed, std::string* why) {
  typename M::Proto proto;
  bool theirs;
  {
    google::protobuf::LogSilencer quiet;  // bad UTF-8 keys are logged by protobuf
    theirs = proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  }
  proto.DiscardUnknownFields();  // kept by protobuf, skipped by us
  typename M::Rpc rpc;
  uint32_t attachment_size;
  std::string err;
  const bool ours = DecodeHeader(bytes, &rpc, &attachment_size, &err);
  *parsed = ours;
  if (ours != theirs) {
    *why = fmt::format("protobuf {} it, we {} ({})\nbytes {}", theirs ? "parses" : "rejects",
                       ours ? "parse" : "reject", err, Printable(bytes));
    return false;
  }
  if (ours && !google::protobuf::util::MessageDifferencer::Equals(
                  proto, M::FromRpc(rpc, attachment_size))) {
    *why =
        fmt::format("values differ\nprotobuf {}\nours     {}\nbytes {}", proto.ShortDebugString(),
                    M::FromRpc(rpc, attachment_size).ShortDebugString(), Printable(bytes));
    return false;
  }
  return true;
}

template <typename M>
void ExpectAgreement(std::string_view bytes, bool expect_ok) {
  typename M::Proto proto;
  {
    google::protobuf::LogSilencer quiet;
    ASSERT_EQ(proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())), expect_ok)
        << "the case itself is wrong";
  }
  bool parsed;
  std::string why;
  EXPECT_TRUE(Agree<M>(bytes, &parsed, &why)) << why;
}

TEST(TrpcHeaderWireTest, EdgeCasesMatchProtobuf) {
  struct Case {
    std::string name;
    std::string header;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"empty", "", true},
      {"last occurrence wins", Hex("18 01 18 05 2a 01 61 2a 02 62 63"), true},
      {"padded varint", Hex("18 81 80 80 80 80 80 80 80 80 00"), true},
      {"10-byte varint keeps the low 32 bits", Hex("18 ff ff ff ff ff ff ff ff ff 7f"), true},
      {"5-byte tag with high bits", Hex("98 80 80 80 70 03"), true},
      {"padded length", Hex("2a 81 80 80 80 00 61"), true},
      {"known field, wrong wire type", Hex("18 01 1a 01 07 2d 01 02 03 04 28 05"), true},
      {"unknown fields of every wire type",
       Hex("68 01 69 01 02 03 04 05 06 07 08 6a 01 00 6b 68 05 6c 6d 01 02 03 04"), true},
      {"field 11 of a request", Hex("58 05"), true},
      {"largest field number", Hex("f8 ff ff ff 0f 01"), true},
      {"100 nested groups", Nested(100, Hex("18 01")), true},
      {"101 nested groups", Nested(101, ""), false},
      {"entry: key and value", Entry(Hex("0a 01 6b 12 01 76")), true},
      {"entry: value first", Entry(Hex("12 01 76 0a 01 6b")), true},
      {"entry: key only", Entry(Hex("0a 01 6b")), true},
      {"entry: value only", Entry(Hex("12 01 76")), true},
      {"entry: empty", Entry(""), true},
      {"entry: repeated key and value", Entry(Hex("0a 01 6b 12 01 76 0a 01 6a 12 01 77")), true},
      {"entry: later entry wins", Entry(Hex("0a 01 6b 12 01 76")) + Entry(Hex("0a 01 6b 12 01 77")),
       true},
      {"entry: later entry without value empties it",
       Entry(Hex("0a 01 6b 12 01 76")) + Entry(Hex("0a 01 6b")), true},
      {"entry: unknown fields", Entry(Hex("18 05 0a 01 6b 21 01 02 03 04 05 06 07 08 12 00")),
       true},
      {"entry: key as a varint is unknown", Entry(Hex("08 05 12 01 76")), true},
      {"entry: 99 nested groups", Entry(Nested(99, "")), true},
      {"entry: 100 nested groups", Entry(Nested(100, "")), false},
      {"entry: end group", Entry(Hex("0a 01 6b 0c")), false},
      {"entry: tag 0", Entry(Hex("0a 01 6b 00")), false},
      {"entry: bad UTF-8 key", Entry(Hex("0a 01 ff")), false},
      {"entry: bad UTF-8 key that a later one replaces", Entry(Hex("0a 01 ff 0a 01 6b")), false},
      {"entry: surrogate key", Entry(Hex("0a 03 ed a0 80")), false},
      {"entry: overlong key", Entry(Hex("0a 02 c0 80")), false},
      {"entry: length past its end", Hex("4a 05 0a 01 6b"), false},
      {"entry: field past its end", Hex("4a 02 0a 05 6b 6b 6b 6b 6b"), false},
      {"entry with a wrong wire type is unknown", Hex("48 05 4d 01 02 03 04"), true},
      {"bad UTF-8 in bytes fields is fine", Hex("2a 01 ff 32 01 ff 3a 01 ff"), true},
      {"tag 0", Hex("00"), false},
      {"field 0", Hex("02 00"), false},
      {"6-byte tag", Hex("98 80 80 80 80 00 03"), false},
      {"11-byte varint", Hex("18 ff ff ff ff ff ff ff ff ff ff 01"), false},
      {"length of 2 GiB", Hex("2a 80 80 80 80 08"), false},
      {"6-byte length", Hex("2a 81 80 80 80 80 00 61"), false},
      {"wire type 6", Hex("1e 00"), false},
      {"end group at top level", Hex("18 01 7c"), false},
      {"mismatched end group", Hex("7b 84 01"), false},
      {"unterminated group", Hex("7b 18 01"), false},
      {"truncated fixed32", Hex("1d 01"), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ExpectAgreement<Request>(c.header, c.ok);
  }
}

TEST(TrpcHeaderWireTest, Utf8KeysMatchProtobuf) {
  // Every key of 1 and 2 bytes; 3- and 4-byte keys with every lead byte that starts one, every
  // second byte (where the lead-specific limits are) and the edges of the continuation range
  // for the rest: exactly protobuf's notion of valid UTF-8.
  const std::vector<uint8_t> edges = {0x00, 0x7f, 0x80, 0xbf, 0xc0, 0xff};
  std::vector<std::string> keys;
  for (int a = 0; a < 256; ++a) {
    keys.push_back(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; ++b) {
      const std::string two = {static_cast<char>(a), static_cast<char>(b)};
      keys.push_back(two);
      if (a < 0xe0 || a > 0xf5 || (b % kScale) != 0) continue;
      for (uint8_t c : edges) {
        keys.push_back(two + static_cast<char>(c));
        if (a < 0xf0) continue;
        for (uint8_t d : edges) keys.push_back(two + static_cast<char>(c) + static_cast<char>(d));
      }
    }
  }
  int failures = 0;
  for (const std::string& key : keys) {
    const std::string header = Entry(Hex("0a") + static_cast<char>(key.size()) + key);
    bool parsed;
    std::string why;
    if (!Agree<Request>(header, &parsed, &why)) {
      ADD_FAILURE() << why;
      if (++failures == 10) break;
    }
  }
}

// ---- Differential test on mutated headers
// ---------------------------------------------------------

// The top-level fields of a valid header, each as its own bytes (tag included), so that whole
// fields can be duplicated, dropped and reordered.
std::vector<std::string> SplitFields(std::string_view valid) {
  std::vector<std::string> fields;
  size_t i = 0;
  auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = static_cast<uint8_t>(valid[i++]);
      v |= uint64_t{b & 0x7fu} << shift;
      if (b < 0x80) return v;
    }
  };
  while (i < valid.size()) {
    const size_t start = i;
    const uint64_t tag = varint();
    const uint64_t v = varint();  // a varint value, or a length
    if ((tag & 7) == 2) i += v;
    fields.emplace_back(valid.substr(start, i - start));
  }
  return fields;
}

// Makes broken and odd variants of valid headers.
class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rnd_(seed) {}
  Random& rnd() { return rnd_; }

  // A varint as a peer might write it: usually minimal, sometimes padded, rarely too long.
  std::string OddVarint(uint64_t v, int max_bytes) {
    std::string s = Varint(v);
    if (rnd_.OneIn(4)) {
      const int target = static_cast<int>(s.size()) + static_cast<int>(rnd_.Below(4));
      const int limit = rnd_.OneIn(8) ? max_bytes + 1 : max_bytes;
      while (static_cast<int>(s.size()) < std::min(target, limit)) {
        s.back() = static_cast<char>(s.back() | 0x80);
        s += '\0';
      }
    }
    return s;
  }

  std::string TagBytes(uint32_t field, uint32_t wire_type) {
    return OddVarint(uint64_t{field} << 3 | wire_type, 5);
  }

  // An unknown field, or a known one with any wire type, valid or not.
  std::string Field(int depth, uint32_t map_field) {
    static const std::vector<uint32_t> kNumbers = {0,
                                                   1,
                                                   2,
                                                   3,
                                                   4,
                                                   5,
                                                   6,
                                                   7,
                                                   8,
                                                   9,
                                                   10,
                                                   11,
                                                   12,
                                                   13,
                                                   15,
                                                   16,
                                                   19,
                                                   20,
                                                   99,
                                                   2047,
                                                   2048,
                                                   123456,
                                                   (1u << 29) - 1};
    const uint32_t field = rnd_.OneIn(6) ? map_field : rnd_.Pick(kNumbers);
    const uint32_t wire_type = rnd_.OneIn(12) ? 6 + static_cast<uint32_t>(rnd_.Below(2))
                                              : static_cast<uint32_t>(rnd_.Below(6));
    std::string s = TagBytes(field, wire_type);
    switch (wire_type) {
      case 0:
        return s + OddVarint(rnd_.OneIn(2) ? rnd_.Uint32() : rnd_.Next(), 10);
      case 1:
        return s + "\x01\x02\x03\x04\x05\x06\x07\x08";
      case 2: {
        const std::string payload = rnd_.OneIn(2) ? rnd_.Bytes(40) : Entry(depth, map_field);
        return s + OddVarint(payload.size(), 5) + payload;
      }
      case 3:
        return s + GroupBody(field, depth);
      case 5:
        return s + "\x01\x02\x03\x04";
      default:  // a lone end group, or wire type 6 / 7
        return s;
    }
  }

  // After a start-group tag: fields, then (usually) the matching end tag.
  std::string GroupBody(uint32_t field, int depth) {
    std::string s;
    if (rnd_.OneIn(30)) {  // near protobuf's depth limit
      const int levels = 97 + static_cast<int>(rnd_.Below(5));
      for (int i = 0; i < levels; ++i) s += TagBytes(15, 3);
      for (int i = 0; i < levels; ++i) s += TagBytes(15, 4);
    }
    for (size_t n = depth > 0 ? rnd_.Below(3) : 0; n > 0; --n) s += Field(depth - 1, 0);
    const uint32_t end_field = rnd_.OneIn(10) ? static_cast<uint32_t>(rnd_.Below(20)) : field;
    return rnd_.OneIn(20) ? s : s + TagBytes(end_field, 4);
  }

  // The body of a trans_info entry: keys (valid or not), values, unknown fields, in any order.
  std::string Entry(int depth, uint32_t map_field) {
    static const std::vector<std::string> kBadKeys = {
        "\xff",  "\xc0\x80",    "\xed\xa0\x80", "\xe4\xb8", "\xf4\x90\x80\x80",
        "a\x80", "\xf0\x9f\x98"};
    std::string s;
    for (size_t n = rnd_.Below(4); n > 0; --n) {
      switch (rnd_.Below(6)) {
        case 0:
        case 1: {
          const std::string key = rnd_.OneIn(8) ? rnd_.Pick(kBadKeys) : rnd_.Key();
          s += TagBytes(1, 2) + OddVarint(key.size(), 5) + key;
          break;
        }
        case 2:
        case 3: {
          const std::string value = rnd_.Bytes(30);
          s += TagBytes(2, 2) + OddVarint(value.size(), 5) + value;
          break;
        }
        default:
          if (depth > 0) s += Field(depth - 1, map_field);
      }
    }
    return s;
  }

  // One mutated header from a valid one.
  std::string Mutate(const std::string& valid, uint32_t map_field) {
    std::vector<std::string> fields = SplitFields(valid);
    for (size_t n = rnd_.Below(4); n > 0; --n) {
      const size_t at = rnd_.Below(fields.size() + 1);
      switch (rnd_.Below(5)) {
        case 0:  // duplicate a field
          if (!fields.empty()) fields.insert(fields.begin() + at, rnd_.Pick(fields));
          break;
        case 1:  // drop one
          if (at < fields.size()) fields.erase(fields.begin() + at);
          break;
        case 2:  // swap two
          if (at < fields.size()) std::swap(fields[at], fields[rnd_.Below(fields.size())]);
          break;
        case 3: {  // an odd trans_info entry
          const std::string body = Entry(3, map_field);
          const size_t length = body.size() + (rnd_.OneIn(10) ? rnd_.Below(3) : 0) -
                                (rnd_.OneIn(10) && !body.empty() ? 1 : 0);
          fields.insert(fields.begin() + at, TagBytes(map_field, 2) + Varint(length) + body);
          break;
        }
        default:  // an unknown field, or a known one with another wire type
          fields.insert(fields.begin() + at, Field(3, map_field));
      }
    }
    std::string s;
    for (const std::string& f : fields) s += f;
    for (size_t n = rnd_.OneIn(2) ? 0 : 1 + rnd_.Below(3); n > 0; --n) {
      switch (rnd_.Below(5)) {
        case 0:  // flip a bit
          if (!s.empty()) s[rnd_.Below(s.size())] ^= static_cast<char>(1 << rnd_.Below(8));
          break;
        case 1: {  // replace a byte, often with one that means something on the wire
          static const std::vector<char> kBytes = {'\x00', '\x7f', '\x80', '\xff', '\x0a',
                                                   '\x12', '\x4a', '\x42', '\x7b', '\x7c'};
          if (!s.empty()) {
            s[rnd_.Below(s.size())] =
                rnd_.OneIn(2) ? rnd_.Pick(kBytes) : static_cast<char>(rnd_.Next());
          }
          break;
        }
        case 2: {  // insert random bytes
          std::string bytes(1 + rnd_.Below(8), '\0');
          for (char& c : bytes) c = static_cast<char>(rnd_.Next());
          s.insert(rnd_.Below(s.size() + 1), bytes);
          break;
        }
        case 3:  // truncate
          s.resize(rnd_.Below(s.size() + 1));
          break;
        default:  // delete a range
          if (!s.empty()) {
            const size_t at = rnd_.Below(s.size());
            s.erase(at, 1 + rnd_.Below(std::min<size_t>(8, s.size() - at)));
          }
      }
    }
    return s;
  }

 private:
  Random rnd_;
};

template <typename M>
void Differential(uint64_t seed, int count) {
  Mutator mutator(seed);
  // Seeds: valid headers with short strings, so that mutations hit the structure.
  std::vector<std::string> seeds;
  while (seeds.size() < 100) {
    typename M::Proto m;
    mutator.rnd().Fill(&m);
    if (m.ByteSizeLong() <= 600) seeds.push_back(m.SerializeAsString());
  }
  int tested = 0;
  int parsed = 0;
  int failures = 0;
  auto check = [&](std::string_view bytes) {
    bool ok;
    std::string why;
    ++tested;
    if (!Agree<M>(bytes, &ok, &why)) {
      ADD_FAILURE() << why;
      ++failures;
    }
    parsed += ok;
  };
  // Truncation at every length of some seeds.
  for (size_t i = 0; i < 20 && i < seeds.size() && failures < 10; ++i) {
    for (size_t n = 0; n < seeds[i].size(); ++n) check(std::string_view(seeds[i]).substr(0, n));
  }
  while (tested < count && failures < 10) {
    check(mutator.Mutate(mutator.rnd().Pick(seeds), M::kTransInfoField));
  }
  // Both outcomes must be well represented, or the test proves little.
  EXPECT_GT(parsed, tested / 5) << tested << " inputs";
  EXPECT_GT(tested - parsed, tested / 5) << tested << " inputs";
  std::printf("%d mutated headers, %d parsed\n", tested, parsed);
}

TEST(TrpcHeaderWireTest, MutatedRequestsParseExactlyAsProtobufDecides) {
  Differential<Request>(3, 150'000 / kScale);
}

TEST(TrpcHeaderWireTest, MutatedResponsesParseExactlyAsProtobufDecides) {
  Differential<Response>(4, 150'000 / kScale);
}

// ---- On frames ----------------------------------------------------------------------------------

TEST(TrpcHeaderWireTest, HeadersAcrossBlockEdgesDecode) {
  // Small headers that straddle spans are copied to the stack, large ones to a per-thread
  // buffer: both decode, at every split.
  TrpcServerCodec server;
  for (size_t caller_size : {size_t{10}, size_t{600}, size_t{20000}}) {
    RequestProtocol h;
    h.set_request_id(77);
    h.set_caller(std::string(caller_size, 'c'));
    (*h.mutable_trans_info())["trpc-k"] = "v";
    h.set_attachment_size(2);
    const std::string frame = MakeFrame(h.SerializeAsString(), "bodyat");
    for (size_t piece : {size_t{1}, size_t{7}, size_t{100}, size_t{4096}}) {
      SCOPED_TRACE(fmt::format("caller {} bytes, pieces of {}", caller_size, piece));
      RpcRequest req;
      std::string err;
      ASSERT_TRUE(server.DecodeRequest(Fragmented(frame, piece), &req, &err)) << err;
      EXPECT_EQ(req.request_id, 77u);
      EXPECT_EQ(req.caller.size(), caller_size);
      EXPECT_EQ(req.trans_info.at("trpc-k"), "v");
      EXPECT_EQ(req.body.ToString(), "body");
      EXPECT_EQ(req.attachment.ToString(), "at");
    }
  }
}

TEST(TrpcHeaderWireTest, BadHeaderInAFrameNamesTheReason) {
  TrpcClientCodec client;
  RpcResponse rsp;
  std::string err;
  EXPECT_FALSE(client.DecodeResponse(Buffer(MakeFrame(Hex("18 01 20"), "")), &rsp, &err));
  EXPECT_EQ(err, "cannot parse the 3-byte protobuf header: varint running past the end at byte 3");
}

TEST(TrpcHeaderWireTest, LargeHeadersEncodeThroughTheSlowPath) {
  // A header larger than a block is written through the per-thread scratch buffer.
  TrpcClientCodec client;
  TrpcServerCodec server;
  RpcRequest req;
  req.request_id = 3;
  req.func = "/a/b";
  req.trans_info["big"] = std::string(30000, 'b');
  req.attachment = Buffer("att");
  RequestProtocol want = Request::FromRpc(req, 3);
  ChainBuffer wire;
  ASSERT_TRUE(client.EncodeRequest(&req, nullptr, &wire));
  const std::string bytes = wire.ToString();
  EXPECT_EQ(bytes.substr(kTrpcFrameHeaderSize, want.ByteSizeLong()), want.SerializeAsString());
  RpcRequest got;
  std::string err;
  ASSERT_TRUE(server.DecodeRequest(std::move(wire), &got, &err)) << err;
  EXPECT_EQ(got.trans_info, req.trans_info);
  EXPECT_EQ(got.attachment.ToString(), "att");
}

}  // namespace
}  // namespace trpc::detail
