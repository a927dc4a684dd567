#include "trpc/codec/detail/compression.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <lz4frame.h>
#include <snappy.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "test/codec/trpc_test_frames.h"

namespace trpc::detail {
namespace {

using codec_test::Buffer;
using codec_test::Fragmented;
using codec_test::Hex;
using codec_test::Pattern;
using ::testing::HasSubstr;
using namespace std::string_literals;

constexpr uint32_t kCompressed[] = {kEncodingGzip,         kEncodingSnappy,      kEncodingZlib,
                                    kEncodingSnappyStream, kEncodingSnappyBlock, kEncodingLz4Frame,
                                    kEncodingLz4Block};
constexpr size_t kMiB = 1024 * 1024;
constexpr size_t kNoLimit = 64 * kMiB;
// What a failed call must leave in `out`: the bytes it held before.
constexpr std::string_view kBefore = "bytes already there";

std::string Compress(uint32_t encoding, const ChainBuffer& in) {
  ChainBuffer out;
  std::string err;
  EXPECT_TRUE(CompressBody(encoding, in, &out, &err)) << EncodingName(encoding) << ": " << err;
  return out.ToString();
}

// Decompresses `in` into a buffer that already holds kBefore; on success returns true with the
// bytes decompressed in `*plain`, on failure checks that the buffer was left alone.
bool Decompress(uint32_t encoding, const ChainBuffer& in, size_t max_bytes, std::string* plain,
                std::string* err) {
  ChainBuffer out = Buffer(kBefore);
  err->clear();
  if (!DecompressBody(encoding, in, max_bytes, &out, err)) {
    EXPECT_FALSE(err->empty());
    EXPECT_EQ(out.ToString(), kBefore) << "a failed call changed the output";
    return false;
  }
  std::string all = out.ToString();
  EXPECT_EQ(all.substr(0, kBefore.size()), kBefore);
  *plain = all.substr(kBefore.size());
  return true;
}

// Text that compresses about 3:1 (words drawn by an LCG), so every format uses its compressed
// forms, unlike Pattern()'s noise.
std::string Text(size_t n) {
  static constexpr std::string_view kWords[] = {"alpha ", "beta ", "gamma ",   "delta ",
                                                "rpc ",   "trpc ", "frame ",   "body ",
                                                "zip ",   "lz4 ",  "snappy\n", "header "};
  std::string s;
  uint32_t x = 12345;
  while (s.size() < n) {
    x = x * 1664525u + 1013904223u;
    s += kWords[(x >> 16) % std::size(kWords)];
  }
  s.resize(n);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Names and the empty-body rule.

TEST(CompressionTest, NamesAndSupport) {
  EXPECT_EQ(EncodingName(kEncodingNone), "none");
  EXPECT_EQ(EncodingName(kEncodingGzip), "gzip");
  EXPECT_EQ(EncodingName(kEncodingSnappy), "snappy");
  EXPECT_EQ(EncodingName(kEncodingZlib), "zlib");
  EXPECT_EQ(EncodingName(kEncodingSnappyStream), "snappy-stream");
  EXPECT_EQ(EncodingName(kEncodingSnappyBlock), "snappy-block");
  EXPECT_EQ(EncodingName(kEncodingLz4Frame), "lz4-frame");
  EXPECT_EQ(EncodingName(kEncodingLz4Block), "lz4-block");
  EXPECT_EQ(EncodingName(8), "unknown");
  for (uint32_t e = 0; e <= 7; ++e) EXPECT_TRUE(IsSupportedEncoding(e));
  EXPECT_FALSE(IsSupportedEncoding(8));
  EXPECT_FALSE(IsSupportedEncoding(UINT32_MAX));
}

TEST(CompressionTest, UnknownEncodingFails) {
  for (uint32_t e : {8u, 100u, UINT32_MAX}) {
    for (std::string_view body : {std::string_view("abc"), std::string_view()}) {
      ChainBuffer out = Buffer(kBefore);
      std::string err;
      EXPECT_FALSE(CompressBody(e, Buffer(body), &out, &err));
      EXPECT_THAT(err, HasSubstr("unknown content_encoding"));
      EXPECT_EQ(out.ToString(), kBefore);
      std::string plain;
      EXPECT_FALSE(Decompress(e, Buffer(body), kNoLimit, &plain, &err));
      EXPECT_THAT(err, HasSubstr("unknown content_encoding"));
    }
  }
}

// tRPC-Go: an empty body compresses to nothing and nothing decompresses to an empty body.
TEST(CompressionTest, EmptyStaysEmpty) {
  for (uint32_t e = 0; e <= 7; ++e) {
    ChainBuffer out = Buffer(kBefore);
    std::string err;
    EXPECT_TRUE(CompressBody(e, ChainBuffer(), &out, &err)) << err;
    EXPECT_EQ(out.ToString(), kBefore);
    std::string plain;
    EXPECT_TRUE(Decompress(e, ChainBuffer(), 0, &plain, &err)) << err;
    EXPECT_EQ(plain, "");
  }
}

// ---------------------------------------------------------------------------------------------
// Round trips.

// Every encoding, every size around the 64 KiB chunk of snappy's framing format and LZ4F's
// blocks, noise and text, laid out in blocks as Append makes them or in many small spans; the
// compressed bytes decompressed as they come and cut into odd small spans.
TEST(CompressionTest, RoundTripsEverySizeAndLayout) {
  const size_t sizes[] = {1, 100, 65535, 65536, 65537, kMiB};
  for (uint32_t e = 0; e <= 7; ++e) {
    for (size_t size : sizes) {
      for (bool text : {false, true}) {
        SCOPED_TRACE(testing::Message() << EncodingName(e) << " " << size << " bytes of "
                                        << (text ? "text" : "noise"));
        const std::string data = text ? Text(size) : Pattern(size, static_cast<uint32_t>(size));
        const std::string packed = Compress(e, Buffer(data));
        const std::string packed_from_pieces = Compress(e, Fragmented(data, 1237));
        for (const std::string* p : {&packed, &packed_from_pieces}) {
          std::string plain, err;
          ASSERT_TRUE(Decompress(e, Buffer(*p), kNoLimit, &plain, &err)) << err;
          EXPECT_TRUE(plain == data);
          ASSERT_TRUE(Decompress(e, Fragmented(*p, 97), kNoLimit, &plain, &err)) << err;
          EXPECT_TRUE(plain == data);
        }
        // The limit is exact: the size itself passes, a byte less fails.
        std::string plain, err;
        EXPECT_TRUE(Decompress(e, Buffer(packed), data.size(), &plain, &err)) << err;
        EXPECT_FALSE(Decompress(e, Buffer(packed), data.size() - 1, &plain, &err));
        EXPECT_THAT(err, HasSubstr("limit"));
      }
    }
  }
}

// `data` (at most a block) in one span: the thread's write block is filled up first, so the
// append starts a new one.
ChainBuffer OneSpan(std::string_view data) {
  ChainBuffer filler;
  iovec iov;
  filler.PrepareWrite(&iov, 1, 1);
  filler.CommitWrite(iov.iov_len);
  return Buffer(data);
}

// A one-span input (a single block) and the smallest spans there are.
TEST(CompressionTest, RoundTripsOneSpanAndOneByteSpans) {
  const std::string data = Text(3000);
  for (uint32_t e = 0; e <= 7; ++e) {
    SCOPED_TRACE(EncodingName(e));
    ChainBuffer one = OneSpan(data);
    ASSERT_EQ(one.SpanCount(), 1u);
    const std::string packed = Compress(e, one);
    std::string plain, err;
    ASSERT_TRUE(Decompress(e, Fragmented(packed, 1), kNoLimit, &plain, &err)) << err;
    EXPECT_EQ(plain, data);
    ASSERT_TRUE(Decompress(e, Buffer(Compress(e, Fragmented(data, 1))), kNoLimit, &plain, &err))
        << err;
    EXPECT_EQ(plain, data);
  }
}

// ---------------------------------------------------------------------------------------------
// Golden vectors: the bytes tRPC-Go v1.0.3 (codec.Compress, over compress/gzip, compress/zlib,
// golang/snappy v0.0.3 and pierrec/lz4 v4.1.21) writes for three inputs, generated once by a Go
// program over the vendored peer in /work/shared/peers/trpcgo. tRPC-Go writes type 2 exactly as
// type 4.

enum GoldenInput { kTiny, kShort, kLong };

std::string GoldenPlain(GoldenInput input) {
  switch (input) {
    case kTiny:
      return "123456789";
    case kShort:
      return "Hello, tRPC! hello, trpc! Hello, tRPC! hello, trpc!";
    default: {
      // The phrase repeated, cut at 70,000 bytes.
      constexpr std::string_view kPhrase = "The quick brown fox jumps over the lazy dog. ";
      std::string s(70000, '\0');
      for (size_t i = 0; i < s.size(); ++i) s[i] = kPhrase[i % kPhrase.size()];
      return s;
    }
  }
}

struct Golden {
  uint32_t encoding;
  GoldenInput input;
  const char* hex;
};

// clang-format off
const Golden kGolden[] = {
    {1, kTiny,
     "1f8b08000000000000ff32343236313533b7b004040000ffff2639f4cb09000000"},
    {1, kShort,
     "1f8b08000000000000fff248cdc9c9d75128090a705654c880728a0a92151570ca00020000ffff71cda06133"
     "000000"},
    {1, kLong,
     "1f8b08000000000000ffecca470102311405402b4f016a3040092cf5432034f5585801739fe5d4721f87cd29"
     "eb5eef6b76f5c9715c6e8fd4abf53ca796f3eaf7cdb6f68bc0300cc3300cc3300cc3300cc3300cc3300cc330"
     "0cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3"
     "300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300c"
     "c3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc330"
     "0cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3"
     "300cc3300cc3303c0bff030000ffff09330b0670110100"},
    {3, kTiny,
     "789c32343236313533b7b004040000ffff091e01de"},
    {3, kShort,
     "789cf248cdc9c9d75128090a705654c880728a0a92151570ca00020000ffffa8161049"},
    {3, kLong,
     "789cecca470102311405402b4f016a3040092cf5432034f5585801739fe5d4721f87cd29eb5eef6b76f5c971"
     "5c6e8fd4abf53ca796f3eaf7cdb6f68bc0300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3"
     "300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300c"
     "c3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc330"
     "0cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3"
     "300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3300cc3303c"
     "0bff030000ffff58332c06"},
    {4, kTiny,
     "ff060000734e61507059010d0000e5b08ac7313233343536373839"},
    {4, kShort,
     "ff060000734e61507059001f0000843a2fea333448656c6c6f2c20745250432120680d0d107270632120621a"
     "00"},
    {4, kLong,
     "ff060000734e6150705900350c00bcff96aa808004b054686520717569636b2062726f776e20666f78206a75"
     "6d7073206f76657220746865206c617a7920646f672e20fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d004a2d0000050100066e233cf022b0666f78206a756d7073206f76657220746865"
     "206c617a7920646f672e2054686520717569636b2062726f776e20fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00ee2d000d2d"},
    {5, kTiny,
     "0920313233343536373839"},
    {5, kShort,
     "333448656c6c6f2c20745250432120680d0d107270632120621a00"},
    {5, kLong,
     "f0a204b054686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920"
     "646f672e20fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d004a2d00b0666f"
     "78206a756d7073206f76657220746865206c617a7920646f672e2054686520717569636b2062726f776e20fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d"
     "00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe"
     "2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00"
     "fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00fe2d00ee2d000d2d"},
    {6, kTiny,
     "04224d186470b9090000803132333435363738390000000067ad7b93"},
    {6, kShort,
     "04224d186470b92d000000e348656c6c6f2c20745250432120680d005072706321201a00001a00001a00d020"
     "68656c6c6f2c2074727063210000000022859754"},
    {6, kLong,
     "04224d186470b955010000ff1e54686520717569636b2062726f776e20666f78206a756d7073206f76657220"
     "746865206c617a7920646f672e202d00ffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffff33f00062726f776e20666f78206a756d7073"
     "00000000b540b541"},
    {7, kTiny,
     "90313233343536373839"},
    {7, kShort,
     "e348656c6c6f2c20745250432120680d005072706321201a00001a00001a00d02068656c6c6f2c2074727063"
     "21"},
    {7, kLong,
     "ff1e54686520717569636b2062726f776e20666f78206a756d7073206f76657220746865206c617a7920646f"
     "672e202d00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
     "ffffffffffffffffffffffffffffff33f00062726f776e20666f78206a756d7073"},
};
// clang-format on

TEST(CompressionTest, DecompressesWhatTrpcGoWrites) {
  for (const Golden& g : kGolden) {
    std::vector<uint32_t> encodings = {g.encoding};
    if (g.encoding == kEncodingSnappyStream) encodings.push_back(kEncodingSnappy);
    for (uint32_t e : encodings) {
      SCOPED_TRACE(testing::Message() << EncodingName(e) << " input " << g.input);
      const std::string packed = Hex(g.hex);
      std::string plain, err;
      ASSERT_TRUE(Decompress(e, Buffer(packed), kNoLimit, &plain, &err)) << err;
      EXPECT_TRUE(plain == GoldenPlain(g.input));
      ASSERT_TRUE(Decompress(e, Fragmented(packed, 7), kNoLimit, &plain, &err)) << err;
      EXPECT_TRUE(plain == GoldenPlain(g.input));
    }
  }
}

// The uncompressed chunk of snappy's framing format carries the masked CRC-32C of its data:
// CRC-32C("123456789") is the standard check value 0xe3069283.
TEST(CompressionTest, SnappyStreamChecksumIsMaskedCrc32c) {
  const uint32_t crc = 0xe3069283;
  const uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8;
  EXPECT_EQ(masked, 0xc78ab0e5u);
  const std::string packed = Compress(kEncodingSnappyStream, Buffer("123456789"));
  EXPECT_EQ(packed, Hex("ff060000 734e61507059  010d0000 e5b08ac7") + "123456789");
}

// The table and the SSE4.2 versions agree at every length and alignment, and piece by piece.
TEST(CompressionTest, Crc32cTableAndHardwareAgree) {
  EXPECT_EQ(Crc32c(0, "123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32cPortable(0, "123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32c(0, ""), 0u);
  EXPECT_EQ(Crc32c(0, std::string(32, '\0')), 0x8a9136aau);  // RFC 3720 B.4
  EXPECT_EQ(Crc32cPortable(0, std::string(32, '\xff')), 0x62a8ab43u);
  const std::string data = Pattern(1000, 5);
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; n + start <= 100; ++n) {
      std::string_view s = std::string_view(data).substr(start, n);
      ASSERT_EQ(Crc32c(0, s), Crc32cPortable(0, s)) << start << " " << n;
    }
  }
  const uint32_t whole = Crc32cPortable(0, data);
  EXPECT_EQ(Crc32c(Crc32c(0, data.substr(0, 333)), data.substr(333)), whole);
  EXPECT_EQ(Crc32cPortable(Crc32cPortable(0, data.substr(0, 7)), data.substr(7)), whole);
}

// ---------------------------------------------------------------------------------------------
// Snappy's framing format in detail.

std::string SnappyChunk(unsigned char type, std::string_view body) {
  std::string h(4, '\0');
  h[0] = static_cast<char>(type);
  h[1] = static_cast<char>(body.size());
  h[2] = static_cast<char>(body.size() >> 8);
  h[3] = static_cast<char>(body.size() >> 16);
  return h + std::string(body);
}
const std::string kIdentifier = Hex("ff060000 734e61507059");
// An uncompressed chunk of "123456789", its checksum right.
const std::string kDigits = Hex("010d0000 e5b08ac7") + "123456789";

// What our writer emits, chunk by chunk: the identifier, then chunks of at most 64 KiB each,
// compressed when that saves 12.5%.
TEST(CompressionTest, SnappyStreamChunksAsGolangSnappyWrites) {
  for (bool text : {false, true}) {
    const std::string data = text ? Text(3 * 65536 + 5) : Pattern(3 * 65536 + 5);
    const std::string packed = Compress(kEncodingSnappyStream, Buffer(data));
    ASSERT_EQ(packed.substr(0, kIdentifier.size()), kIdentifier);
    size_t pos = kIdentifier.size();
    std::vector<size_t> sizes;
    while (pos < packed.size()) {
      const auto type = static_cast<unsigned char>(packed[pos]);
      const size_t len = static_cast<unsigned char>(packed[pos + 1]) |
                         static_cast<unsigned char>(packed[pos + 2]) << 8 |
                         static_cast<unsigned char>(packed[pos + 3]) << 16;
      // 5 bytes do not compress: the last chunk is an uncompressed one either way.
      const bool last = pos + 4 + len == packed.size();
      EXPECT_EQ(type, text && !last ? 0x00 : 0x01);
      if (type == 0x00) {
        size_t n = 0;
        ASSERT_TRUE(snappy::GetUncompressedLength(packed.data() + pos + 8, len - 4, &n));
        EXPECT_LT(len - 4, n - n / 8);
        sizes.push_back(n);
      } else {
        sizes.push_back(len - 4);
      }
      pos += 4 + len;
    }
    EXPECT_EQ(pos, packed.size());
    EXPECT_EQ(sizes, (std::vector<size_t>{65536, 65536, 65536, 5}));
  }
}

TEST(CompressionTest, SnappyStreamReadsWhatTheFormatAllows) {
  struct Case {
    std::string name;
    std::string stream;
    std::string plain;
  } cases[] = {
      {"identifier only", kIdentifier, ""},
      {"repeated identifiers", kIdentifier + kDigits + kIdentifier + kDigits, "123456789123456789"},
      {"padding", kIdentifier + SnappyChunk(0xfe, std::string(100, '\0')) + kDigits, "123456789"},
      {"skippable 0x80", kIdentifier + SnappyChunk(0x80, "x") + kDigits, "123456789"},
      {"skippable 0xfd", kIdentifier + kDigits + SnappyChunk(0xfd, ""), "123456789"},
  };
  for (const Case& c : cases) {
    std::string plain, err;
    EXPECT_TRUE(Decompress(kEncodingSnappyStream, Fragmented(c.stream, 3), kNoLimit, &plain, &err))
        << c.name << ": " << err;
    EXPECT_EQ(plain, c.plain) << c.name;
  }
}

TEST(CompressionTest, SnappyStreamRefusesWhatTheFormatForbids) {
  std::string bad_crc = kDigits;
  bad_crc[4] ^= 1;
  std::string big_block(snappy::MaxCompressedLength(65537), '\0');
  size_t big_len = 0;
  snappy::RawCompress(std::string(65537, 'a').data(), 65537, big_block.data(), &big_len);
  big_block.resize(big_len);
  std::string compressed_bad_crc =
      Compress(kEncodingSnappyStream, Buffer(std::string(1000, 'z'))).substr(kIdentifier.size());
  ASSERT_EQ(compressed_bad_crc[0], '\0');
  compressed_bad_crc[5] ^= 0x40;
  struct Case {
    std::string name;
    std::string stream;
    std::string error;
  } cases[] = {
      {"no identifier", kDigits, "stream identifier"},
      {"identifier not first", SnappyChunk(0xfe, "") + kIdentifier + kDigits, "stream identifier"},
      {"bad identifier", Hex("ff060000 734e61507058") + kDigits, "identifier"},
      {"short identifier", Hex("ff050000 734e615070") + kDigits, "identifier"},
      {"bad checksum (uncompressed)", kIdentifier + bad_crc, "checksum"},
      {"bad checksum (compressed)", kIdentifier + compressed_bad_crc, "checksum"},
      {"reserved 0x02", kIdentifier + SnappyChunk(0x02, "abcd"), "reserved unskippable"},
      {"reserved 0x7f", kIdentifier + SnappyChunk(0x7f, "abcd"), "reserved unskippable"},
      {"no room for the checksum", kIdentifier + SnappyChunk(0x01, "abc"), "checksum"},
      {"uncompressed data over 64 KiB",
       kIdentifier + SnappyChunk(0x01, std::string(4 + 65537, 'a')), "65536"},
      {"compressed data over 64 KiB", kIdentifier + SnappyChunk(0x00, "\0\0\0\0"s + big_block),
       "65536"},
      {"chunk longer than golang/snappy reads",
       kIdentifier + SnappyChunk(0xfe, std::string(76495, '\0')), "76494"},
      {"corrupt block", kIdentifier + SnappyChunk(0x00, "\0\0\0\0\x05\x00"s), "corrupt block"},
      {"bad block length", kIdentifier + SnappyChunk(0x00, "\0\0\0\0\xff\xff\xff\xff\xff\xff"s),
       "block length"},
      {"truncated header", kIdentifier + kDigits.substr(0, 3), "truncated chunk header"},
      {"truncated chunk", kIdentifier + kDigits.substr(0, 10), "truncated chunk"},
  };
  for (const Case& c : cases) {
    for (uint32_t e : {kEncodingSnappyStream, kEncodingSnappy}) {
      std::string plain, err;
      EXPECT_FALSE(Decompress(e, Fragmented(c.stream, 5), kNoLimit, &plain, &err)) << c.name;
      EXPECT_THAT(err, HasSubstr(c.error)) << c.name;
      EXPECT_THAT(err, ::testing::Not(HasSubstr("limit"))) << c.name;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// What the zlib, lz4 and snappy-block readers accept besides a writer's plain output.

TEST(CompressionTest, GzipReadsConcatenatedMembersAndZlibIgnoresTrailingBytes) {
  const std::string a = Compress(kEncodingGzip, Buffer("first "));
  const std::string b = Compress(kEncodingGzip, Buffer("second"));
  std::string plain, err;
  ASSERT_TRUE(Decompress(kEncodingGzip, Fragmented(a + b, 4), kNoLimit, &plain, &err)) << err;
  EXPECT_EQ(plain, "first second");
  // Go's gzip reader: bytes after a member must begin another.
  EXPECT_FALSE(Decompress(kEncodingGzip, Buffer(a + "garbage!!!!!"), kNoLimit, &plain, &err));
  EXPECT_FALSE(Decompress(kEncodingGzip, Buffer(a + "\x1f"), kNoLimit, &plain, &err));
  EXPECT_THAT(err, HasSubstr("truncated"));
  // Go's zlib reader stops after the stream's checksum.
  const std::string z = Compress(kEncodingZlib, Buffer("zlib"));
  ASSERT_TRUE(Decompress(kEncodingZlib, Buffer(z + "trailing"), kNoLimit, &plain, &err)) << err;
  EXPECT_EQ(plain, "zlib");
}

std::string Lz4Frame(std::string_view data, const LZ4F_preferences_t& prefs) {
  std::string out(LZ4F_compressFrameBound(data.size(), &prefs), '\0');
  size_t n = LZ4F_compressFrame(out.data(), out.size(), data.data(), data.size(), &prefs);
  EXPECT_FALSE(LZ4F_isError(n));
  out.resize(n);
  return out;
}

TEST(CompressionTest, Lz4FrameReadsOneFrameWithSkippableFramesAround) {
  const std::string data = Text(200000);
  LZ4F_preferences_t prefs = LZ4F_INIT_PREFERENCES;
  prefs.frameInfo.blockChecksumFlag = LZ4F_blockChecksumEnabled;
  prefs.frameInfo.contentSize = data.size();
  prefs.frameInfo.blockSizeID = LZ4F_max256KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  const std::string frame = Lz4Frame(data, prefs);
  const std::string skippable = Hex("5a2a4d18 03000000 616263");
  std::string plain, err;
  ASSERT_TRUE(Decompress(kEncodingLz4Frame, Fragmented(skippable + frame + skippable, 333),
                         kNoLimit, &plain, &err))
      << err;
  EXPECT_TRUE(plain == data);

  EXPECT_FALSE(Decompress(kEncodingLz4Frame, Buffer(frame + frame), kNoLimit, &plain, &err));
  EXPECT_THAT(err, HasSubstr("second frame"));
  EXPECT_FALSE(Decompress(kEncodingLz4Frame, Buffer(frame + "xyzw"), kNoLimit, &plain, &err));
  EXPECT_THAT(err, HasSubstr("bad magic"));
  EXPECT_FALSE(Decompress(kEncodingLz4Frame, Buffer(frame + "xy"), kNoLimit, &plain, &err));
  EXPECT_FALSE(
      Decompress(kEncodingLz4Frame, Buffer(skippable.substr(0, 9)), kNoLimit, &plain, &err));
  EXPECT_THAT(err, HasSubstr("truncated skippable frame"));

  // A wrong block checksum, content checksum or content size is refused.
  std::string bad_block_sum = frame;
  bad_block_sum[bad_block_sum.size() - 5] ^= 1;  // the last block's checksum, before the end mark
  EXPECT_FALSE(Decompress(kEncodingLz4Frame, Buffer(bad_block_sum), kNoLimit, &plain, &err));
  prefs = LZ4F_INIT_PREFERENCES;
  prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
  std::string bad_content_sum = Lz4Frame(data, prefs);
  bad_content_sum.back() ^= 1;
  EXPECT_FALSE(Decompress(kEncodingLz4Frame, Buffer(bad_content_sum), kNoLimit, &plain, &err));
}

// What we write: LZ4F's defaults (64 KiB linked blocks) plus a content checksum, which
// pierrec/lz4 writes too (its FLG is 0x64: independent 4 MiB blocks). Ours: FLG 0x44 (version 1,
// content checksum), BD 0x40 (64 KiB blocks).
TEST(CompressionTest, Lz4FrameHeaderWeWrite) {
  const std::string packed = Compress(kEncodingLz4Frame, Buffer(Text(1000)));
  EXPECT_EQ(packed.substr(0, 6), Hex("04224d18 44 40"));
}

// ---------------------------------------------------------------------------------------------
// Malformed input fails cleanly, whatever the encoding.

TEST(CompressionTest, GarbageAndTruncationFail) {
  const std::string data = Text(100000);
  for (uint32_t e : kCompressed) {
    SCOPED_TRACE(EncodingName(e));
    std::string plain, err;
    for (const std::string& garbage : {std::string("not compressed at all"), Pattern(1000, 7),
                                       std::string(1, '\xff'), std::string(64, '\xff')}) {
      EXPECT_FALSE(Decompress(e, Buffer(garbage), kNoLimit, &plain, &err));
    }
    const std::string packed = Compress(e, Buffer(data));
    EXPECT_FALSE(
        Decompress(e, Buffer(packed.substr(0, packed.size() - 1)), kNoLimit, &plain, &err));
    // An LZ4 block has no end marker: cut after a sequence's literals it is a shorter valid
    // block. Every other format knows its length.
    if (e != kEncodingLz4Block) {
      for (size_t cut : {size_t{1}, size_t{5}, size_t{11}, packed.size() / 2}) {
        EXPECT_FALSE(Decompress(e, Buffer(packed.substr(0, cut)), kNoLimit, &plain, &err))
            << "cut at " << cut;
      }
    }
    // Every byte flipped in turn in a short stream: false or other bytes, never a crash (the
    // sanitizer build checks the "never").
    const std::string small = Compress(e, Buffer(Text(300)));
    for (size_t i = 0; i < small.size(); ++i) {
      std::string broken = small;
      broken[i] ^= 0x55;
      Decompress(e, Buffer(broken), kNoLimit, &plain, &err);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Bombs: 64 MiB of zeros inflates past a 1 MiB limit in every format; the call says so and leaves
// the output as it was.

TEST(CompressionTest, BombsStopAtTheLimit) {
  ChainBuffer zeros;
  const std::string mib(kMiB, '\0');
  for (int i = 0; i < 64; ++i) zeros.Append(mib);
  for (uint32_t e = 0; e <= 7; ++e) {
    SCOPED_TRACE(EncodingName(e));
    ChainBuffer packed;
    if (e == kEncodingNone) {
      packed = zeros.Clone();
    } else {
      std::string err;
      ASSERT_TRUE(CompressBody(e, zeros, &packed, &err)) << err;
      EXPECT_LT(packed.size(), 8 * kMiB);
    }
    std::string plain, err;
    EXPECT_FALSE(Decompress(e, packed, kMiB, &plain, &err));
    EXPECT_THAT(err, HasSubstr("1048576-byte limit"));
  }
}

// An LZ4 block declares no size: the output buffer grows by doubling, and a block that is just
// too large for the limit is told from a corrupt one.
TEST(CompressionTest, Lz4BlockGrowsItsBufferUpToTheLimit) {
  const std::string data(3 * kMiB + 17, 'q');
  const std::string packed = Compress(kEncodingLz4Block, Buffer(data));
  std::string plain, err;
  ASSERT_TRUE(Decompress(kEncodingLz4Block, Buffer(packed), data.size(), &plain, &err)) << err;
  EXPECT_TRUE(plain == data);
  EXPECT_FALSE(Decompress(kEncodingLz4Block, Buffer(packed), data.size() - 1, &plain, &err));
  EXPECT_THAT(err, HasSubstr("limit"));
  std::string corrupt = packed;
  corrupt[corrupt.size() / 2] ^= 0x10;
  Decompress(kEncodingLz4Block, Buffer(corrupt), kNoLimit, &plain, &err);
}

// gRPC's gzip and deflate want whole streams, even for an empty message.
TEST(CompressionTest, ZlibForGrpcKeepsEmptyStreams) {
  for (bool gzip : {true, false}) {
    ChainBuffer packed;
    std::string err;
    ASSERT_TRUE(ZlibCompress(gzip, ChainBuffer(), &packed, &err)) << err;
    EXPECT_GT(packed.size(), 0u);
    ChainBuffer plain;
    ASSERT_TRUE(ZlibDecompress(gzip, packed, kNoLimit, &plain, &err)) << err;
    EXPECT_TRUE(plain.empty());
    EXPECT_FALSE(ZlibDecompress(gzip, ChainBuffer(), kNoLimit, &plain, &err));
    EXPECT_THAT(err, HasSubstr("truncated"));
  }
}

}  // namespace
}  // namespace trpc::detail
