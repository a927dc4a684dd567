#include "trpc/base/chain_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "trpc/base/detail/mpsc_queue.h"

namespace trpc {
namespace {

using detail::kBlockCapacity;
constexpr size_t kCap = kBlockCapacity;

// Deterministic, position-dependent bytes, so a misplaced byte shows up in comparisons.
std::string Pattern(size_t n, uint32_t seed = 1) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

// Fills the rest of this thread's current write block, so that the next append on this thread
// starts at offset 0 of a block. Lets tests reason about exact block boundaries.
void StartFreshBlock() {
  ChainBuffer sink;
  iovec iov;
  ASSERT_EQ(sink.PrepareWrite(&iov, 1, 1), 1u);
  ASSERT_GT(iov.iov_len, 0u);
  sink.CommitWrite(iov.iov_len);
}

// The block behind a span that starts at offset 0 of its block (white-box, for ref counts).
const detail::Block* BlockOf(std::string_view span_at_block_start) {
  return reinterpret_cast<const detail::Block*>(span_at_block_start.data()) - 1;
}
uint32_t Refs(const detail::Block* b) { return b->refs.load(std::memory_order_relaxed); }

// Checks structural invariants and contents against `model`.
void ExpectEquals(const ChainBuffer& b, const std::string& model) {
  ASSERT_EQ(b.size(), model.size());
  EXPECT_EQ(b.empty(), model.empty());
  size_t total = 0;
  for (size_t i = 0; i < b.SpanCount(); ++i) {
    EXPECT_GT(b.Span(i).size(), 0u) << "empty span " << i;
    total += b.Span(i).size();
  }
  EXPECT_EQ(total, b.size());
  EXPECT_TRUE(b.ToString() == model) << "contents differ (size " << model.size() << ")";
}

std::string Concat(const iovec* iov, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i)
    s.append(static_cast<const char*>(iov[i].iov_base), iov[i].iov_len);
  return s;
}

TEST(ChainBufferTest, EmptyBuffer) {
  ChainBuffer b;
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.size(), 0u);
  EXPECT_EQ(b.BlockCount(), 0u);
  EXPECT_TRUE(b.FirstSpan().empty());
  EXPECT_EQ(b.ToString(), "");
  iovec iov[4];
  EXPECT_EQ(b.ExportIovecs(iov, 4), 0u);
  char c;
  EXPECT_EQ(b.CopyTo(&c, 1), 0u);
  ChainBuffer cut = b.Cut(0);
  EXPECT_TRUE(cut.empty());
  b.Skip(0);
  b.Append("", 0);
  EXPECT_EQ(b.BlockCount(), 0u);
}

TEST(ChainBufferTest, AppendAcrossBlockBoundaries) {
  for (size_t n : {size_t{1}, kCap - 1, kCap, kCap + 1, 3 * kCap + 17}) {
    SCOPED_TRACE(n);
    StartFreshBlock();
    std::string data = Pattern(n, static_cast<uint32_t>(n));
    ChainBuffer b;
    b.Append(data);
    ExpectEquals(b, data);
    EXPECT_EQ(b.BlockCount(), (n + kCap - 1) / kCap);
    for (size_t i = 0; i + 1 < b.SpanCount(); ++i) EXPECT_EQ(b.Span(i).size(), kCap);
  }
}

TEST(ChainBufferTest, SmallAppendsMergeIntoOneSpanPerBlock) {
  StartFreshBlock();
  std::string data = Pattern(2 * kCap + 500, 7);
  ChainBuffer b;
  for (size_t pos = 0; pos < data.size(); pos += 333) b.Append(data.substr(pos, 333));
  ExpectEquals(b, data);
  EXPECT_EQ(b.BlockCount(), 3u);
}

TEST(ChainBufferTest, AppendToPartlyUsedWriteBlock) {
  StartFreshBlock();
  ChainBuffer other;
  other.Append("x");  // takes the first byte of the write block
  std::string data = Pattern(kCap, 3);
  ChainBuffer b;
  b.Append(data);
  ExpectEquals(b, data);
  EXPECT_EQ(b.BlockCount(), 2u);
  EXPECT_EQ(b.Span(0).size(), kCap - 1);
  EXPECT_EQ(b.Span(1).size(), 1u);
  EXPECT_EQ(other.ToString(), "x");
}

class ChainBufferCutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StartFreshBlock();
    model_ = Pattern(3 * kCap + 17, 11);
    buf_.Append(model_);
    ASSERT_EQ(buf_.BlockCount(), 4u);
  }

  // Cuts n bytes from both the buffer and the model and checks both halves.
  ChainBuffer CutAndCheck(size_t n) {
    ChainBuffer out = buf_.Cut(n);
    ExpectEquals(out, model_.substr(0, n));
    model_.erase(0, n);
    ExpectEquals(buf_, model_);
    return out;
  }

  ChainBuffer buf_;
  std::string model_;
};

TEST_F(ChainBufferCutTest, CutZeroBytes) {
  ChainBuffer out = CutAndCheck(0);
  EXPECT_EQ(out.BlockCount(), 0u);
  EXPECT_EQ(buf_.BlockCount(), 4u);
}

TEST_F(ChainBufferCutTest, CutInsideFirstBlock) {
  ChainBuffer out = CutAndCheck(100);
  EXPECT_EQ(out.BlockCount(), 1u);
  EXPECT_EQ(buf_.BlockCount(), 4u);
  EXPECT_EQ(buf_.Span(0).data(), out.Span(0).data() + 100);
  // Both views share the first block (the write block has moved on to the last one).
  EXPECT_EQ(Refs(BlockOf(out.Span(0))), 2u);
}

TEST_F(ChainBufferCutTest, CutExactlyAtBlockEdge) {
  ChainBuffer a = CutAndCheck(kCap);
  EXPECT_EQ(a.BlockCount(), 1u);
  EXPECT_EQ(buf_.BlockCount(), 3u);
  // Edge reached in two steps: inside, then up to the edge.
  ChainBuffer b = CutAndCheck(10);
  ChainBuffer c = CutAndCheck(kCap - 10);
  EXPECT_EQ(c.BlockCount(), 1u);
  EXPECT_EQ(buf_.BlockCount(), 2u);
}

TEST_F(ChainBufferCutTest, CutAcrossBlocksEndingInside) {
  ChainBuffer out = CutAndCheck(kCap + 5);
  EXPECT_EQ(out.BlockCount(), 2u);
  EXPECT_EQ(buf_.BlockCount(), 3u);
  ChainBuffer out2 = CutAndCheck(2 * kCap - 5);  // from inside block 2 to the edge of block 3
  EXPECT_EQ(out2.BlockCount(), 2u);
  EXPECT_EQ(buf_.BlockCount(), 1u);
  EXPECT_EQ(buf_.size(), 17u);
}

TEST_F(ChainBufferCutTest, CutWholeBuffer) {
  ChainBuffer out = CutAndCheck(buf_.size());
  EXPECT_EQ(out.BlockCount(), 4u);
  EXPECT_EQ(buf_.BlockCount(), 0u);
  EXPECT_TRUE(buf_.empty());
  // The emptied buffer is usable again.
  buf_.Append("again");
  EXPECT_EQ(buf_.ToString(), "again");
}

TEST_F(ChainBufferCutTest, CutOneByteAtATime) {
  std::string rebuilt;
  while (!buf_.empty()) {
    ChainBuffer one = buf_.Cut(1);
    ASSERT_EQ(one.size(), 1u);
    rebuilt += one.ToString();
    if (rebuilt.size() % 4096 == 0) {
      ASSERT_EQ(buf_.size(), model_.size() - rebuilt.size());
    }
  }
  EXPECT_EQ(rebuilt, model_);
}

TEST_F(ChainBufferCutTest, Skip) {
  buf_.Skip(0);
  ExpectEquals(buf_, model_);
  buf_.Skip(1);
  model_.erase(0, 1);
  ExpectEquals(buf_, model_);
  EXPECT_EQ(buf_.BlockCount(), 4u);
  buf_.Skip(kCap - 1);  // exactly to the first block edge
  model_.erase(0, kCap - 1);
  ExpectEquals(buf_, model_);
  EXPECT_EQ(buf_.BlockCount(), 3u);
  buf_.Skip(kCap + 3);  // across an edge into the middle of a block
  model_.erase(0, kCap + 3);
  ExpectEquals(buf_, model_);
  EXPECT_EQ(buf_.BlockCount(), 2u);
  buf_.Skip(buf_.size());
  ExpectEquals(buf_, "");
  EXPECT_EQ(buf_.BlockCount(), 0u);
}

TEST(ChainBufferTest, MoveConstructAndAssign) {
  ChainBuffer a;
  a.Append("hello");
  ChainBuffer b(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty by contract
  EXPECT_EQ(a.BlockCount(), 0u);
  EXPECT_EQ(b.ToString(), "hello");
  ChainBuffer c;
  c.Append("old contents");
  c = std::move(b);
  EXPECT_EQ(c.ToString(), "hello");
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move)
  // Many-block buffers move their heap ref list too.
  std::string big = Pattern(5 * kCap, 5);
  ChainBuffer d;
  d.Append(big);
  ChainBuffer e(std::move(d));
  ExpectEquals(e, big);
  ExpectEquals(d, "");  // NOLINT(bugprone-use-after-move)
  d.Append("reused");
  EXPECT_EQ(d.ToString(), "reused");
}

TEST(ChainBufferTest, CloneSharesBytes) {
  StartFreshBlock();
  std::string data = Pattern(kCap + 100, 13);
  ChainBuffer a;
  a.Append(data);
  const detail::Block* first = BlockOf(a.Span(0));
  EXPECT_EQ(Refs(first), 1u);  // the write block moved on to the second block
  {
    ChainBuffer c = a.Clone();
    ExpectEquals(c, data);
    ASSERT_EQ(c.SpanCount(), a.SpanCount());
    for (size_t i = 0; i < a.SpanCount(); ++i) {
      EXPECT_EQ(c.Span(i).data(), a.Span(i).data()) << "clone copied span " << i;
    }
    EXPECT_EQ(Refs(first), 2u);
    // Changing one view does not change the other.
    a.Skip(10);
    a.Append("tail");
    ExpectEquals(c, data);
    ExpectEquals(a, data.substr(10) + "tail");
  }
  EXPECT_EQ(Refs(first), 1u);
}

TEST(ChainBufferTest, AppendSharedAddsReferences) {
  StartFreshBlock();
  ChainBuffer a;
  a.Append("abc");
  const detail::Block* blk = BlockOf(a.Span(0));
  EXPECT_EQ(Refs(blk), 2u);  // write block + a
  ChainBuffer b;
  b.Append("junk");  // not adjacent to "abc" in the block
  b.AppendShared(a);
  b.AppendShared(a);
  EXPECT_EQ(b.ToString(), "junkabcabc");
  EXPECT_EQ(Refs(blk), 5u);
  EXPECT_EQ(a.ToString(), "abc");
}

TEST(ChainBufferTest, AppendMoveMergesAdjacentRefs) {
  StartFreshBlock();
  ChainBuffer a;
  a.Append("hello world");
  const detail::Block* blk = BlockOf(a.Span(0));
  ChainBuffer head = a.Cut(5);
  EXPECT_EQ(Refs(blk), 3u);  // write block + head + a
  head.Append(std::move(a));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(head.ToString(), "hello world");
  EXPECT_EQ(head.BlockCount(), 1u);  // the two views were adjacent: merged into one ref
  EXPECT_EQ(Refs(blk), 2u);          // and the duplicate reference was dropped
  // Appending more bytes on this thread extends the same ref.
  head.Append("!");
  EXPECT_EQ(head.BlockCount(), 1u);
  EXPECT_EQ(head.ToString(), "hello world!");
}

TEST(ChainBufferTest, AppendMoveKeepsNonAdjacentRefs) {
  StartFreshBlock();
  ChainBuffer a;
  a.Append("abc");
  ChainBuffer junk;
  junk.Append("-");
  ChainBuffer b;
  b.Append("def");
  a.Append(std::move(b));
  EXPECT_EQ(a.ToString(), "abcdef");
  EXPECT_EQ(a.BlockCount(), 2u);
  // Into an empty buffer: takes the refs as they are.
  ChainBuffer empty;
  empty.Append(std::move(a));
  EXPECT_EQ(empty.ToString(), "abcdef");
  // From an empty buffer: no change.
  ChainBuffer none;
  empty.Append(std::move(none));
  EXPECT_EQ(empty.ToString(), "abcdef");
}

TEST(ChainBufferTest, AppendMoveManyBlocksBothSides) {
  std::string x = Pattern(3 * kCap + 1, 21);
  std::string y = Pattern(2 * kCap + 2, 22);
  ChainBuffer a;
  a.Append(x);
  ChainBuffer junk;
  junk.Append("-");
  ChainBuffer b;
  b.Append(y);
  a.Append(std::move(b));
  ExpectEquals(a, x + y);
  ExpectEquals(b, "");  // NOLINT(bugprone-use-after-move)
}

TEST(ChainBufferTest, CopyToWithOffsets) {
  StartFreshBlock();
  std::string data = Pattern(2 * kCap + 50, 17);
  ChainBuffer b;
  b.Append(data);
  struct Case {
    size_t offset, n;
  };
  for (Case c : {Case{0, 0}, Case{0, 10}, Case{5, 10}, Case{kCap - 3, 6}, Case{kCap, 1},
                 Case{kCap - 1, kCap + 2}, Case{10, 2 * kCap + 40}, Case{2 * kCap + 40, 100},
                 Case{data.size(), 5}, Case{data.size() + 10, 5}}) {
    SCOPED_TRACE(testing::Message() << "offset " << c.offset << " n " << c.n);
    std::string out(c.n, '\0');
    size_t got = b.CopyTo(out.data(), c.n, c.offset);
    size_t want = c.offset >= data.size() ? 0 : std::min(c.n, data.size() - c.offset);
    ASSERT_EQ(got, want);
    EXPECT_EQ(out.substr(0, got), data.substr(std::min(c.offset, data.size()), want));
  }
}

TEST(ChainBufferTest, PeekContiguousReturnsInPlace) {
  StartFreshBlock();
  ChainBuffer b;
  b.Append("0123456789");
  char scratch[16] = {};
  const char* p = b.Peek(4, scratch);
  EXPECT_EQ(p, b.FirstSpan().data());
  EXPECT_EQ(std::string(p, 4), "0123");
  EXPECT_EQ(scratch[0], '\0');  // scratch untouched
  EXPECT_EQ(b.Peek(10, scratch), b.FirstSpan().data());
}

TEST(ChainBufferTest, PeekNonContiguousCopies) {
  StartFreshBlock();
  ChainBuffer b;
  b.Append("abc");
  ChainBuffer junk;
  junk.Append("-");
  b.Append("defgh");
  ASSERT_EQ(b.SpanCount(), 2u);
  char scratch[8] = {};
  const char* p = b.Peek(5, scratch);
  EXPECT_EQ(p, scratch);
  EXPECT_EQ(std::string(p, 5), "abcde");
  EXPECT_EQ(b.size(), 8u);  // Peek does not consume
}

TEST(ChainBufferTest, PeekAcrossBlockEdge) {
  StartFreshBlock();
  std::string data = Pattern(kCap + 10, 23);
  ChainBuffer b;
  b.Append(data);
  b.Skip(kCap - 4);
  std::string scratch(8, '\0');
  const char* p = b.Peek(8, scratch.data());
  EXPECT_EQ(p, scratch.data());
  EXPECT_EQ(std::string(p, 8), data.substr(kCap - 4, 8));
}

TEST(ChainBufferTest, ExportIovecsOffsetsAndLimits) {
  StartFreshBlock();
  std::string data = Pattern(3 * kCap + 17, 29);
  ChainBuffer b;
  b.Append(data);
  iovec iov[16];

  ASSERT_EQ(b.ExportIovecs(iov, 16), 4u);
  EXPECT_EQ(iov[0].iov_len, kCap);
  EXPECT_EQ(iov[3].iov_len, 17u);
  EXPECT_EQ(Concat(iov, 4), data);

  ASSERT_EQ(b.ExportIovecs(iov, 16, 10), 4u);
  EXPECT_EQ(iov[0].iov_base, b.Span(0).data() + 10);
  EXPECT_EQ(iov[0].iov_len, kCap - 10);
  EXPECT_EQ(Concat(iov, 4), data.substr(10));

  ASSERT_EQ(b.ExportIovecs(iov, 16, kCap), 3u);  // offset exactly at a block edge
  EXPECT_EQ(iov[0].iov_base, b.Span(1).data());
  EXPECT_EQ(Concat(iov, 3), data.substr(kCap));

  ASSERT_EQ(b.ExportIovecs(iov, 16, data.size() - 1), 1u);
  EXPECT_EQ(iov[0].iov_len, 1u);
  EXPECT_EQ(b.ExportIovecs(iov, 16, data.size()), 0u);
  EXPECT_EQ(b.ExportIovecs(iov, 16, data.size() + 100), 0u);

  ASSERT_EQ(b.ExportIovecs(iov, 2), 2u);  // max_iov limit
  EXPECT_EQ(Concat(iov, 2), data.substr(0, 2 * kCap));
  ASSERT_EQ(b.ExportIovecs(iov, 2, kCap + 5), 2u);
  EXPECT_EQ(Concat(iov, 2), data.substr(kCap + 5, 2 * kCap - 5));
  EXPECT_EQ(b.ExportIovecs(iov, 0), 0u);
}

// Copies `data` into the prepared iovecs the way readv() would.
size_t FakeReadv(const iovec* iov, size_t n, std::string_view data) {
  size_t done = 0;
  for (size_t i = 0; i < n && done < data.size(); ++i) {
    size_t k = std::min(iov[i].iov_len, data.size() - done);
    std::memcpy(iov[i].iov_base, data.data() + done, k);
    done += k;
  }
  return done;
}

TEST(ChainBufferTest, PrepareCommitLikeReadv) {
  StartFreshBlock();
  ChainBuffer b;
  b.Append("hdr");
  iovec iov[8];
  size_t n = b.PrepareWrite(iov, 4, 2 * kCap);
  ASSERT_GE(n, 2u);
  ASSERT_LE(n, 4u);
  size_t room = 0;
  for (size_t i = 0; i < n; ++i) room += iov[i].iov_len;
  EXPECT_GE(room, 2 * kCap);
  // The first span continues right where the buffer's bytes end.
  EXPECT_EQ(iov[0].iov_base, b.FirstSpan().data() + 3);
  EXPECT_EQ(iov[0].iov_len, kCap - 3);

  std::string data = Pattern(2 * kCap + 100, 31);
  ASSERT_LE(data.size(), room);
  size_t got = FakeReadv(iov, n, data);
  ASSERT_EQ(got, data.size());
  b.CommitWrite(got);
  ExpectEquals(b, "hdr" + data);
  EXPECT_EQ(b.BlockCount(), 3u);  // "hdr" and the first iovec share one ref

  // Appends continue after the committed bytes.
  b.Append("xyz");
  ExpectEquals(b, "hdr" + data + "xyz");
  EXPECT_EQ(b.BlockCount(), 3u);
}

TEST(ChainBufferTest, ShortReadCommitsPrefixOnly) {
  StartFreshBlock();
  ChainBuffer b;
  iovec iov[4];
  size_t n = b.PrepareWrite(iov, 4, 3 * kCap);
  std::string data = Pattern(100, 33);
  b.CommitWrite(FakeReadv(iov, n, data));
  ExpectEquals(b, data);
  // The unused free space is offered again by the next PrepareWrite.
  iovec again;
  ASSERT_EQ(b.PrepareWrite(&again, 1, 1), 1u);
  EXPECT_EQ(again.iov_base, static_cast<char*>(iov[0].iov_base) + 100);
  b.CommitWrite(0);
  ExpectEquals(b, data);
}

TEST(ChainBufferTest, PrepareWriteRespectsMaxIov) {
  ChainBuffer b;
  iovec iov[16];
  EXPECT_EQ(b.PrepareWrite(iov, 1, 10 * kCap), 1u);  // min_bytes cannot be met: max_iov wins
  size_t n = b.PrepareWrite(iov, 16, 100 * kCap);
  EXPECT_GE(n, 1u);
  EXPECT_LE(n, 16u);
  for (size_t i = 0; i < n; ++i) EXPECT_GT(iov[i].iov_len, 0u);
  b.CommitWrite(0);
  EXPECT_TRUE(b.empty());
}

// Regression: a commit that filled several write blocks completely used to leave a full spare
// block at the front after the next retire, so PrepareWrite(max_iov = 1) offered a zero-length
// span (readv would return 0, which looks like EOF) and the stream adapter a zero-size chunk.
TEST(ChainBufferTest, PrepareWriteAfterFillingSeveralBlocksOffersSpace) {
  StartFreshBlock();
  ChainBuffer b;
  iovec iov[8];
  size_t n = b.PrepareWrite(iov, 8, 3 * kCap + 1);
  ASSERT_EQ(n, 4u);
  std::string data = Pattern(3 * kCap + 1, 35);
  b.CommitWrite(FakeReadv(iov, n, data));
  ExpectEquals(b, data);

  iovec one;
  ASSERT_EQ(b.PrepareWrite(&one, 1, 1), 1u);
  EXPECT_EQ(one.iov_len, kCap - 1);
  EXPECT_EQ(one.iov_base, b.Span(3).data() + 1);
  b.CommitWrite(0);

  b.Append("z");
  ExpectEquals(b, data + "z");
  EXPECT_EQ(b.BlockCount(), 4u);
}

TEST(ChainBufferTest, UncommitTailWithinOneBlock) {
  StartFreshBlock();
  ChainBuffer b;
  b.Append("keep");
  iovec iov;
  ASSERT_EQ(b.PrepareWrite(&iov, 1, 1), 1u);
  std::memcpy(iov.iov_base, "0123456789", 10);
  b.CommitWrite(iov.iov_len);  // like a serializer: take everything, return the unused tail
  EXPECT_EQ(b.size(), kCap);
  b.UncommitTail(iov.iov_len - 10);
  ExpectEquals(b, "keep0123456789");
  EXPECT_EQ(b.BlockCount(), 1u);
  b.UncommitTail(6);
  ExpectEquals(b, "keep0123");
  // The returned bytes are free space again: the next append fills them, in the same ref.
  b.Append("ab");
  ExpectEquals(b, "keep0123ab");
  EXPECT_EQ(b.BlockCount(), 1u);
}

TEST(ChainBufferTest, UncommitTailAcrossBlocks) {
  StartFreshBlock();
  ChainBuffer b;
  b.Append("head");
  iovec iov[4];
  size_t n = b.PrepareWrite(iov, 4, kCap);
  ASSERT_EQ(n, 2u);
  std::string data = Pattern(kCap + 20, 37);  // fills block 1, 24 bytes into block 2
  b.CommitWrite(FakeReadv(iov, n, data));
  ASSERT_EQ(b.BlockCount(), 2u);
  b.UncommitTail(30);  // all of block 2's part and 6 bytes of block 1
  std::string model = "head" + data.substr(0, data.size() - 30);
  ExpectEquals(b, model);
  EXPECT_EQ(b.BlockCount(), 1u);
  b.Append(std::string_view("0123456789"));
  model += "0123456789";
  ExpectEquals(b, model);
  EXPECT_EQ(b.BlockCount(), 2u);  // 6 bytes back into block 1, 4 into block 2
  EXPECT_EQ(b.Span(0).size(), kCap);
}

TEST(ChainBufferTest, UncommitEverything) {
  ChainBuffer b;
  iovec iov;
  ASSERT_EQ(b.PrepareWrite(&iov, 1, 1), 1u);
  b.CommitWrite(iov.iov_len);
  b.UncommitTail(iov.iov_len);
  ExpectEquals(b, "");
  EXPECT_EQ(b.BlockCount(), 0u);
}

TEST(ChainBufferThreadTest, DestroyedOnAnotherThread) {
  std::string data = Pattern(4 * kCap + 3, 41);
  ChainBuffer b;
  b.Append(data);
  ChainBuffer clone = b.Clone();
  std::string seen;
  std::thread t([buf = std::move(b), &seen]() mutable {
    seen = buf.ToString();
    buf.Clear();  // the last reference to some blocks is dropped on this thread
  });
  t.join();
  EXPECT_EQ(seen, data);
  ExpectEquals(clone, data);  // the clone kept its blocks alive
}

TEST(ChainBufferThreadTest, BuiltOnExitedThreadUsedHere) {
  std::string data = Pattern(2 * kCap + 9, 43);
  ChainBuffer from_thread;
  std::thread t([&] {
    from_thread.Append(data);
    // Leave a partly filled write block behind: its thread-local reference is dropped when the
    // thread exits, while `from_thread` still views it.
  });
  t.join();
  ExpectEquals(from_thread, data);
  ChainBuffer head = from_thread.Cut(kCap + 1);
  head.Append("more");  // appended on this thread, into this thread's own write block
  ExpectEquals(head, data.substr(0, kCap + 1) + "more");
  from_thread.Clear();
  head.Clear();
}

// Many buffers handed from a producer thread to a consumer thread, which frees them: blocks go
// back to the consumer's pool while the producer keeps appending into its current write block.
TEST(ChainBufferThreadTest, HandoffThroughQueue) {
  constexpr int kFrames = 20000;
  MpscQueue<ChainBuffer> q(256);
  std::atomic<bool> abort{false};
  std::thread producer([&] {
    for (int i = 0; i < kFrames; ++i) {
      ChainBuffer frame;
      std::string payload = Pattern(static_cast<size_t>(i % 700) + 1, static_cast<uint32_t>(i));
      frame.Append(payload);
      if (i % 50 == 0) frame.Append(Pattern(kCap + 1, 1));  // sometimes a multi-block frame
      while (!q.TryPush(std::move(frame))) {
        if (abort.load(std::memory_order_relaxed)) return;
        std::this_thread::yield();
      }
    }
  });
  int received = 0;
  bool ok = true;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  ChainBuffer frame;
  while (received < kFrames && std::chrono::steady_clock::now() < deadline) {
    if (!q.TryPop(&frame)) {
      std::this_thread::yield();
      continue;
    }
    std::string want =
        Pattern(static_cast<size_t>(received % 700) + 1, static_cast<uint32_t>(received));
    if (received % 50 == 0) want += Pattern(kCap + 1, 1);
    if (frame.ToString() != want) ok = false;
    frame.Clear();
    ++received;
  }
  abort.store(true);
  producer.join();
  EXPECT_EQ(received, kFrames);
  EXPECT_TRUE(ok);
}

// Random operations on a few buffers, mirrored on std::string models.
TEST(ChainBufferRandomTest, MatchesStringModel) {
  constexpr uint32_t kSeed = 20240601;
  constexpr int kOps = 6000;
  constexpr size_t kSlots = 4;
  constexpr size_t kMaxSize = 6 * kCap;
  std::mt19937 rng(kSeed);
  auto uniform = [&rng](size_t lo, size_t hi) {  // inclusive
    return std::uniform_int_distribution<size_t>(lo, hi)(rng);
  };
  auto random_len = [&]() -> size_t {
    switch (uniform(0, 9)) {
      case 0:
        return 0;
      case 1:
        return kCap - uniform(0, 2);
      case 2:
        return kCap + uniform(0, 2);
      case 3:
        return uniform(0, 3 * kCap);
      default:
        return uniform(1, 200);
    }
  };
  std::array<ChainBuffer, kSlots> bufs;
  std::array<std::string, kSlots> models;
  uint32_t data_seed = 1;

  for (int op = 0; op < kOps; ++op) {
    size_t i = uniform(0, kSlots - 1);
    size_t j = (i + uniform(1, kSlots - 1)) % kSlots;
    ChainBuffer& b = bufs[i];
    std::string& m = models[i];
    int kind = static_cast<int>(uniform(0, 11));
    SCOPED_TRACE(testing::Message() << "seed " << kSeed << " op " << op << " kind " << kind);
    switch (kind) {
      case 0:
      case 1: {  // Append bytes
        std::string data = Pattern(random_len(), ++data_seed);
        b.Append(data);
        m += data;
        break;
      }
      case 2: {  // Cut into another slot
        size_t n = uniform(0, m.size());
        bufs[j] = b.Cut(n);
        models[j] = m.substr(0, n);
        m.erase(0, n);
        ExpectEquals(bufs[j], models[j]);
        break;
      }
      case 3: {  // Skip
        size_t n = uniform(0, m.size());
        b.Skip(n);
        m.erase(0, n);
        break;
      }
      case 4: {  // Clone into another slot
        bufs[j] = b.Clone();
        models[j] = m;
        ExpectEquals(bufs[j], models[j]);
        break;
      }
      case 5: {  // Append(ChainBuffer&&) from another slot
        b.Append(std::move(bufs[j]));
        m += models[j];
        models[j].clear();
        ExpectEquals(bufs[j], "");
        break;
      }
      case 6: {  // AppendShared from another slot
        b.AppendShared(bufs[j]);
        m += models[j];
        ExpectEquals(bufs[j], models[j]);
        break;
      }
      case 7:
      case 8: {  // PrepareWrite / readv / CommitWrite, sometimes UncommitTail
        iovec iov[8];
        size_t max_iov = uniform(1, 8);
        size_t n = b.PrepareWrite(iov, max_iov, uniform(0, 3 * kCap));
        ASSERT_GE(n, 1u);
        ASSERT_LE(n, max_iov);
        size_t room = 0;
        for (size_t k = 0; k < n; ++k) {
          ASSERT_GT(iov[k].iov_len, 0u);
          room += iov[k].iov_len;
        }
        std::string data = Pattern(uniform(0, room), ++data_seed);
        b.CommitWrite(FakeReadv(iov, n, data));
        m += data;
        if (uniform(0, 1) == 1) {
          size_t back = uniform(0, data.size());
          b.UncommitTail(back);
          m.resize(m.size() - back);
        }
        break;
      }
      case 9: {  // Reads at random offsets
        size_t off = uniform(0, m.size());
        size_t n = uniform(0, m.size() - off + 10);
        std::string out(n, '\0');
        size_t got = b.CopyTo(out.data(), n, off);
        ASSERT_EQ(got, std::min(n, m.size() - off));
        ASSERT_EQ(out.substr(0, got), m.substr(off, got));
        iovec iov[8];
        size_t max_iov = uniform(1, 8);
        size_t k = b.ExportIovecs(iov, max_iov, off);
        std::string exported = Concat(iov, k);
        ASSERT_LE(exported.size(), m.size() - off);
        ASSERT_EQ(exported, m.substr(off, exported.size()));
        if (k < max_iov) {
          ASSERT_EQ(exported.size(), m.size() - off);
        }
        if (!m.empty()) {
          size_t pn = uniform(1, m.size());
          std::string scratch(pn, '\0');
          ASSERT_EQ(std::string(b.Peek(pn, scratch.data()), pn), m.substr(0, pn));
        }
        break;
      }
      case 10: {  // Move between slots
        bufs[j] = std::move(b);
        models[j] = std::move(m);
        m.clear();
        ExpectEquals(bufs[j], models[j]);
        break;
      }
      case 11:
        if (uniform(0, 3) == 0) {
          b.Clear();
          m.clear();
        }
        break;
    }
    ExpectEquals(b, m);
    if (b.size() > kMaxSize) {  // keep the models small
      size_t n = b.size() - kMaxSize / 2;
      b.Skip(n);
      m.erase(0, n);
    }
    if (HasFatalFailure() || HasFailure()) break;
  }
  for (size_t k = 0; k < kSlots; ++k) ExpectEquals(bufs[k], models[k]);
}

}  // namespace
}  // namespace trpc
