#include "trpc/base/zero_copy_stream.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/message_differencer.h>
#include <google/protobuf/wrappers.pb.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <string_view>

namespace trpc {
namespace {

using detail::kBlockCapacity;
constexpr size_t kCap = kBlockCapacity;
using google::protobuf::BytesValue;
using google::protobuf::Struct;
using google::protobuf::Value;
using google::protobuf::util::MessageDifferencer;

std::string Pattern(size_t n, uint32_t seed = 1) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// Printable ASCII, for proto3 `string` fields (which must hold valid UTF-8).
std::string TextPattern(size_t n, uint32_t seed) {
  std::string s = Pattern(n, seed);
  for (char& c : s) c = static_cast<char>('a' + static_cast<unsigned char>(c) % 26);
  return s;
}

// Leaves exactly `room` free bytes in this thread's current write block (0 < room <= kCap), so
// the next serialization starts right before a block edge.
void LeaveRoomInWriteBlock(size_t room) {
  ChainBuffer sink;
  iovec iov;
  ASSERT_EQ(sink.PrepareWrite(&iov, 1, 1), 1u);
  sink.CommitWrite(iov.iov_len);  // the next append starts a fresh block
  ChainBuffer fill;
  fill.Append(Pattern(kCap - room));
}

// Serializes `msg` onto the end of `buf`; returns the stream's byte count.
int64_t SerializeInto(const google::protobuf::Message& msg, ChainBuffer* buf) {
  ChainBufferOutputStream out(buf);
  EXPECT_TRUE(msg.SerializeToZeroCopyStream(&out));
  return out.ByteCount();
}

// A buffer holding `data` as many small spans (each piece is separated from the next in its
// block by a byte appended to another buffer, so the refs cannot merge).
ChainBuffer Fragmented(std::string_view data, size_t piece) {
  ChainBuffer buf;
  ChainBuffer junk;
  for (size_t pos = 0; pos < data.size(); pos += piece) {
    buf.Append(data.substr(pos, piece));
    junk.Append("-");
  }
  return buf;
}

Struct MakeStruct(int fields, size_t string_size) {
  Struct s;
  auto& f = *s.mutable_fields();
  for (int i = 0; i < fields; ++i) {
    std::string key = "field_" + std::to_string(i);
    switch (i % 5) {
      case 0:
        f[key].set_string_value(TextPattern(string_size, static_cast<uint32_t>(i)));
        break;
      case 1:
        f[key].set_number_value(i * 1.5);
        break;
      case 2:
        f[key].set_bool_value(i % 2 == 0);
        break;
      case 3: {
        auto* list = f[key].mutable_list_value();
        for (int k = 0; k < 4; ++k) list->add_values()->set_number_value(k);
        list->add_values()->set_string_value("x");
        break;
      }
      default: {
        auto& inner = *f[key].mutable_struct_value()->mutable_fields();
        inner["nested"].set_string_value("v" + std::to_string(i));
        inner["null"].set_null_value(google::protobuf::NULL_VALUE);
        break;
      }
    }
  }
  return s;
}

TEST(ZeroCopyStreamTest, SmallBytesValueRoundTrip) {
  BytesValue in;
  in.set_value("hello, chain buffer");
  ChainBuffer buf;
  EXPECT_EQ(SerializeInto(in, &buf), static_cast<int64_t>(in.ByteSizeLong()));
  EXPECT_EQ(buf.ToString(), in.SerializeAsString());

  BytesValue out;
  ChainBufferInputStream is(&buf);
  ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
  EXPECT_EQ(out.value(), in.value());
  EXPECT_EQ(is.ByteCount(), static_cast<int64_t>(buf.size()));
}

TEST(ZeroCopyStreamTest, EmptyMessage) {
  BytesValue in;
  ChainBuffer buf;
  EXPECT_EQ(SerializeInto(in, &buf), 0);
  EXPECT_TRUE(buf.empty());
  BytesValue out;
  out.set_value("stale");
  ChainBufferInputStream is(&buf);
  ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
  EXPECT_EQ(out.value(), "");
}

TEST(ZeroCopyStreamTest, BytesValueLargerThanThreeBlocks) {
  BytesValue in;
  in.set_value(Pattern(3 * kCap + 1000, 3));
  ChainBuffer buf;
  EXPECT_EQ(SerializeInto(in, &buf), static_cast<int64_t>(in.ByteSizeLong()));
  EXPECT_GE(buf.BlockCount(), 4u);
  EXPECT_EQ(buf.ToString(), in.SerializeAsString());

  BytesValue out;
  ChainBufferInputStream is(&buf);
  ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
  EXPECT_TRUE(out.value() == in.value());
}

TEST(ZeroCopyStreamTest, StructRoundTrip) {
  for (int fields : {1, 10, 1000}) {
    SCOPED_TRACE(fields);
    // 1000 fields (200 of them 100-byte strings) is well over three blocks.
    Struct in = MakeStruct(fields, 100);
    ChainBuffer buf;
    EXPECT_EQ(SerializeInto(in, &buf), static_cast<int64_t>(in.ByteSizeLong()));
    if (fields == 1000) {
      EXPECT_GT(buf.size(), 3 * kCap);
    }
    Struct out;
    ChainBufferInputStream is(&buf);
    ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
    EXPECT_TRUE(MessageDifferencer::Equals(in, out));
  }
}

TEST(ZeroCopyStreamTest, SerializeNearBlockEdges) {
  // Small free space at the start exercises protobuf's slop-buffer path for short chunks.
  for (size_t room : {size_t{1}, size_t{5}, size_t{15}, size_t{16}, size_t{17}, size_t{100}}) {
    for (size_t value_size : {size_t{10}, kCap - 3, 2 * kCap + 7}) {
      SCOPED_TRACE(testing::Message() << "room " << room << " value " << value_size);
      LeaveRoomInWriteBlock(room);
      BytesValue in;
      in.set_value(Pattern(value_size, static_cast<uint32_t>(room)));
      ChainBuffer buf;
      EXPECT_EQ(SerializeInto(in, &buf), static_cast<int64_t>(in.ByteSizeLong()));
      ASSERT_EQ(buf.size(), in.ByteSizeLong());
      EXPECT_TRUE(buf.ToString() == in.SerializeAsString());
      BytesValue out;
      ChainBufferInputStream is(&buf);
      ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
      EXPECT_TRUE(out.value() == in.value());
    }
  }
}

TEST(ZeroCopyStreamTest, ParseFromFragmentedBuffer) {
  Struct in = MakeStruct(40, 30);
  std::string wire = in.SerializeAsString();
  for (size_t piece : {size_t{1}, size_t{3}, size_t{17}, size_t{500}}) {
    SCOPED_TRACE(piece);
    ChainBuffer buf = Fragmented(wire, piece);
    ASSERT_EQ(buf.ToString(), wire);
    EXPECT_GE(buf.SpanCount(), wire.size() / piece);
    Struct out;
    ChainBufferInputStream is(&buf);
    ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
    EXPECT_TRUE(MessageDifferencer::Equals(in, out));
  }
}

TEST(ZeroCopyStreamTest, AppendAfterExistingBytesAndSkipThem) {
  ChainBuffer buf;
  buf.Append("HEADER");
  BytesValue in;
  in.set_value(Pattern(kCap, 9));
  int64_t n = SerializeInto(in, &buf);
  EXPECT_EQ(n, static_cast<int64_t>(in.ByteSizeLong()));
  EXPECT_EQ(buf.size(), 6 + in.ByteSizeLong());
  EXPECT_EQ(buf.ToString(), "HEADER" + in.SerializeAsString());

  ChainBufferInputStream is(&buf);
  ASSERT_TRUE(is.Skip(6));
  BytesValue out;
  ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
  EXPECT_TRUE(out.value() == in.value());
}

TEST(ZeroCopyStreamTest, TwoMessagesBackToBackWithLimit) {
  BytesValue first;
  first.set_value(Pattern(3000, 1));
  BytesValue second;
  second.set_value(Pattern(kCap + 10, 2));
  ChainBuffer buf;
  size_t first_size = static_cast<size_t>(SerializeInto(first, &buf));
  SerializeInto(second, &buf);

  BytesValue out;
  {
    ChainBufferInputStream is(&buf, first_size);  // the limit stops the parser at the frame end
    ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
    EXPECT_TRUE(out.value() == first.value());
    EXPECT_EQ(is.ByteCount(), static_cast<int64_t>(first_size));
  }
  {
    ChainBufferInputStream is(&buf);
    ASSERT_TRUE(is.Skip(static_cast<int>(first_size)));
    ASSERT_TRUE(out.ParseFromZeroCopyStream(&is));
    EXPECT_TRUE(out.value() == second.value());
  }
  {
    ChainBufferInputStream is(&buf, first_size - 1);  // truncated frame: parse fails
    EXPECT_FALSE(out.ParseFromZeroCopyStream(&is));
  }
}

// Builds "abc" | "defgh" | "ij" as three separate spans.
ChainBuffer ThreeSpans() {
  ChainBuffer buf;
  ChainBuffer junk;
  for (std::string_view piece : {"abc", "defgh", "ij"}) {
    LeaveRoomInWriteBlock(100);  // keeps each piece inside one block
    buf.Append(piece);
    junk.Append("-");
  }
  return buf;
}

std::string NextChunk(ChainBufferInputStream* is) {
  const void* data;
  int size;
  if (!is->Next(&data, &size)) return "<end>";
  return std::string(static_cast<const char*>(data), size);
}

TEST(ChainBufferInputStreamTest, NextWalksSpans) {
  ChainBuffer buf = ThreeSpans();
  ASSERT_EQ(buf.SpanCount(), 3u);
  ChainBufferInputStream is(&buf);
  EXPECT_EQ(NextChunk(&is), "abc");
  EXPECT_EQ(NextChunk(&is), "defgh");
  EXPECT_EQ(NextChunk(&is), "ij");
  EXPECT_EQ(NextChunk(&is), "<end>");
  EXPECT_EQ(NextChunk(&is), "<end>");
  EXPECT_EQ(is.ByteCount(), 10);
}

TEST(ChainBufferInputStreamTest, BackUp) {
  ChainBuffer buf = ThreeSpans();
  ChainBufferInputStream is(&buf);
  EXPECT_EQ(NextChunk(&is), "abc");
  is.BackUp(1);
  EXPECT_EQ(is.ByteCount(), 2);
  EXPECT_EQ(NextChunk(&is), "c");
  EXPECT_EQ(NextChunk(&is), "defgh");
  is.BackUp(5);  // the whole chunk
  EXPECT_EQ(is.ByteCount(), 3);
  EXPECT_EQ(NextChunk(&is), "defgh");
  is.BackUp(0);
  EXPECT_EQ(NextChunk(&is), "ij");
  is.BackUp(2);
  EXPECT_EQ(NextChunk(&is), "ij");
  EXPECT_EQ(NextChunk(&is), "<end>");
  EXPECT_EQ(is.ByteCount(), 10);
}

TEST(ChainBufferInputStreamTest, Skip) {
  ChainBuffer buf = ThreeSpans();
  {
    ChainBufferInputStream is(&buf);
    EXPECT_TRUE(is.Skip(0));
    EXPECT_TRUE(is.Skip(4));  // across the first span edge
    EXPECT_EQ(is.ByteCount(), 4);
    EXPECT_EQ(NextChunk(&is), "efgh");
    EXPECT_TRUE(is.Skip(1));
    EXPECT_EQ(NextChunk(&is), "j");
  }
  {
    ChainBufferInputStream is(&buf);
    EXPECT_TRUE(is.Skip(3));  // exactly to an edge
    EXPECT_EQ(NextChunk(&is), "defgh");
    EXPECT_TRUE(is.Skip(2));  // exactly to the end
    EXPECT_EQ(NextChunk(&is), "<end>");
  }
  {
    ChainBufferInputStream is(&buf);
    EXPECT_FALSE(is.Skip(11));  // past the end
    EXPECT_EQ(is.ByteCount(), 10);
    EXPECT_EQ(NextChunk(&is), "<end>");
  }
}

TEST(ChainBufferInputStreamTest, Limit) {
  ChainBuffer buf = ThreeSpans();
  {
    ChainBufferInputStream is(&buf, 5);
    EXPECT_EQ(NextChunk(&is), "abc");
    EXPECT_EQ(NextChunk(&is), "de");  // cut by the limit
    EXPECT_EQ(NextChunk(&is), "<end>");
    EXPECT_EQ(is.ByteCount(), 5);
  }
  {
    ChainBufferInputStream is(&buf, 5);
    EXPECT_EQ(NextChunk(&is), "abc");
    EXPECT_EQ(NextChunk(&is), "de");
    is.BackUp(1);
    EXPECT_EQ(NextChunk(&is), "e");
    EXPECT_EQ(NextChunk(&is), "<end>");
  }
  {
    ChainBufferInputStream is(&buf, 5);
    EXPECT_TRUE(is.Skip(5));
    EXPECT_EQ(NextChunk(&is), "<end>");
  }
  {
    ChainBufferInputStream is(&buf, 5);
    EXPECT_FALSE(is.Skip(6));
    EXPECT_EQ(is.ByteCount(), 5);
  }
  {
    ChainBufferInputStream is(&buf, 0);
    EXPECT_EQ(NextChunk(&is), "<end>");
  }
  {
    ChainBufferInputStream is(&buf, 1000);  // beyond the buffer: the buffer's end wins
    EXPECT_FALSE(is.Skip(11));
    EXPECT_EQ(is.ByteCount(), 10);
  }
}

TEST(ChainBufferOutputStreamTest, NextCommitsAndBackUpReturns) {
  LeaveRoomInWriteBlock(kCap);
  ChainBuffer buf;
  ChainBufferOutputStream os(&buf);
  void* data;
  int size;
  ASSERT_TRUE(os.Next(&data, &size));
  ASSERT_EQ(size, static_cast<int>(kCap));
  EXPECT_EQ(buf.size(), kCap);  // the whole chunk is provisionally part of the buffer
  std::memcpy(data, "hello", 5);
  os.BackUp(size - 5);
  EXPECT_EQ(os.ByteCount(), 5);
  EXPECT_EQ(buf.ToString(), "hello");

  // The next chunk continues right after the kept bytes, in the same span.
  void* data2;
  ASSERT_TRUE(os.Next(&data2, &size));
  EXPECT_EQ(data2, static_cast<char*>(data) + 5);
  EXPECT_EQ(size, static_cast<int>(kCap - 5));
  std::memcpy(data2, " world", 6);
  os.BackUp(size - 6);
  EXPECT_EQ(buf.ToString(), "hello world");
  EXPECT_EQ(buf.SpanCount(), 1u);
  EXPECT_EQ(os.ByteCount(), 11);
}

TEST(ChainBufferOutputStreamTest, ChunksWithoutBackUpAccumulate) {
  ChainBuffer buf;
  ChainBufferOutputStream os(&buf);
  int64_t total = 0;
  std::string model;
  for (int i = 0; i < 3; ++i) {
    void* data;
    int size;
    ASSERT_TRUE(os.Next(&data, &size));
    ASSERT_GT(size, 0);
    std::string fill = Pattern(static_cast<size_t>(size), static_cast<uint32_t>(i));
    std::memcpy(data, fill.data(), fill.size());
    model += fill;
    total += size;
  }
  EXPECT_EQ(os.ByteCount(), total);
  EXPECT_TRUE(buf.ToString() == model);
  os.BackUp(7);
  model.resize(model.size() - 7);
  EXPECT_TRUE(buf.ToString() == model);
}

// Regression companion to ChainBufferTest.PrepareWriteAfterFillingSeveralBlocksOffersSpace:
// after a multi-block readv-style commit on this thread, Next() must not hand out an empty chunk.
TEST(ChainBufferOutputStreamTest, NextAfterMultiBlockCommitIsNotEmpty) {
  LeaveRoomInWriteBlock(kCap);
  ChainBuffer read_buf;
  iovec iov[8];
  size_t n = read_buf.PrepareWrite(iov, 8, 3 * kCap + 1);
  ASSERT_EQ(n, 4u);
  read_buf.CommitWrite(3 * kCap + 1);

  ChainBuffer buf;
  ChainBufferOutputStream os(&buf);
  void* data;
  int size;
  ASSERT_TRUE(os.Next(&data, &size));
  EXPECT_EQ(size, static_cast<int>(kCap - 1));
  os.BackUp(size);
  EXPECT_TRUE(buf.empty());
}

}  // namespace
}  // namespace trpc
