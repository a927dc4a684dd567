#include "trpc/transport/detail/reply_sequencer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace trpc::detail {
namespace {

ChainBuffer Bytes(const std::string& s) {
  ChainBuffer b;
  b.Append(s);
  return b;
}

TEST(ReplySequencerTest, InOrderRepliesPassStraightThrough) {
  ReplySequencer seq;
  ChainBuffer out;
  uint64_t a = seq.Take(), b = seq.Take();
  EXPECT_EQ(a, 1u);
  seq.Put(a, Bytes("A"), &out);
  seq.Put(b, Bytes("B"), &out);
  EXPECT_EQ(out.ToString(), "AB");
  EXPECT_EQ(seq.held(), 0u);
}

TEST(ReplySequencerTest, PassInOrderOnlyForTheNextSlotWithNothingHeld) {
  ReplySequencer seq;
  ChainBuffer out;
  uint64_t a = seq.Take(), b = seq.Take(), c = seq.Take(), d = seq.Take();
  EXPECT_FALSE(seq.PassInOrder(b));  // a has not gone out
  EXPECT_TRUE(seq.PassInOrder(a));
  seq.Put(d, Bytes("D"), &out);  // held behind c
  EXPECT_TRUE(out.empty());
  EXPECT_FALSE(seq.PassInOrder(b));  // next, but d is held: Put() must release it
  seq.Put(b, Bytes("B"), &out);
  EXPECT_EQ(out.ToString(), "B");
  seq.Put(c, Bytes("C"), &out);
  EXPECT_EQ(out.ToString(), "BCD");
  EXPECT_EQ(seq.held(), 0u);
  EXPECT_TRUE(seq.PassInOrder(seq.Take()));
}

TEST(ReplySequencerTest, LaterReplyWaitsForEarlierOne) {
  ReplySequencer seq;
  ChainBuffer out;
  uint64_t a = seq.Take(), b = seq.Take(), c = seq.Take();
  seq.Put(c, Bytes("C"), &out);
  seq.Put(b, Bytes("B"), &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(seq.held(), 2u);
  seq.Put(a, Bytes("A"), &out);
  EXPECT_EQ(out.ToString(), "ABC");
  EXPECT_EQ(seq.held(), 0u);
}

TEST(ReplySequencerTest, EmptyReplyReleasesItsSlot) {
  ReplySequencer seq;
  ChainBuffer out;
  uint64_t a = seq.Take(), b = seq.Take();
  seq.Put(b, Bytes("B"), &out);
  seq.Put(a, ChainBuffer(), &out);  // a request that got no reply
  EXPECT_EQ(out.ToString(), "B");
}

TEST(ReplySequencerTest, InterimGoesOutAfterEarlierRepliesAndBeforeItsOwn) {
  ReplySequencer seq;
  ChainBuffer out;
  uint64_t a = seq.Take();
  uint64_t b = seq.Peek();  // being read: its interim answer comes before it is handed up
  seq.PutInterim(b, Bytes("b100 "), &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(seq.Take(), b);
  seq.Put(a, Bytes("A "), &out);
  EXPECT_EQ(out.ToString(), "A b100 ");
  seq.Put(b, Bytes("B"), &out);
  EXPECT_EQ(out.ToString(), "A b100 B");
}

TEST(ReplySequencerTest, InterimForTheSlotBeingSentGoesAtOnce) {
  ReplySequencer seq;
  ChainBuffer out;
  uint64_t a = seq.Peek();
  seq.PutInterim(a, Bytes("100 "), &out);
  EXPECT_EQ(out.ToString(), "100 ");
  EXPECT_EQ(seq.Take(), a);
  seq.Put(a, Bytes("A"), &out);
  EXPECT_EQ(out.ToString(), "100 A");
}

TEST(ReplySequencerTest, RandomCompletionOrderAlwaysComesOutInRequestOrder) {
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    ReplySequencer seq;
    int n = 1 + static_cast<int>(rng() % 40);
    std::vector<uint64_t> slots;
    for (int i = 0; i < n; ++i) slots.push_back(seq.Take());
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    ChainBuffer out;
    for (int i : order) seq.Put(slots[i], Bytes(std::to_string(i) + ","), &out);
    std::string want;
    for (int i = 0; i < n; ++i) want += std::to_string(i) + ",";
    ASSERT_EQ(out.ToString(), want);
    ASSERT_EQ(seq.held(), 0u);
  }
}

}  // namespace
}  // namespace trpc::detail
