// The trpc streams of one connection: ids, the cap on open streams, and the verdict on frames
// for ids that are open, ended or never opened.

#include "trpc/codec/trpc/detail/stream_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace trpc::detail {
namespace {

using Role = TrpcStreamState::Role;
using Type = TrpcStreamFrameType;
using Verdict = TrpcStreamTable::Verdict;
using ::testing::HasSubstr;

TEST(TrpcStreamTableTest, ClientNumbersStreamsFrom100AndStopsAtTheCap) {
  TrpcStreamTable t(Role::kClient, 3);
  std::string err;
  uint32_t id = 0;
  for (uint32_t want : {100u, 101u, 102u}) {
    ASSERT_TRUE(t.OpenOutgoing(&id, &err)) << err;
    EXPECT_EQ(id, want);
    ASSERT_NE(t.Find(id), nullptr);
  }
  EXPECT_FALSE(t.OpenOutgoing(&id, &err));
  EXPECT_THAT(err, HasSubstr("3 streams are open"));
  t.Erase(101);
  ASSERT_TRUE(t.OpenOutgoing(&id, &err)) << err;
  EXPECT_EQ(id, 103u);  // ids are never reused on a connection
}

TEST(TrpcStreamTableTest, ClientDropsFramesOfEndedStreamsAndRefusesStrangers) {
  TrpcStreamTable t(Role::kClient, 10);
  std::string err;
  uint32_t id = 0;
  ASSERT_TRUE(t.OpenOutgoing(&id, &err));
  EXPECT_EQ(t.OnFrame(Type::kData, id, &err), Verdict::kDeliver);
  t.Erase(id);
  EXPECT_EQ(t.OnFrame(Type::kData, id, &err), Verdict::kDrop);  // in flight when it ended
  EXPECT_EQ(t.OnFrame(Type::kData, 500, &err), Verdict::kCloseConnection);
  EXPECT_THAT(err, HasSubstr("never opened"));
  EXPECT_EQ(t.OnFrame(Type::kInit, 7, &err), Verdict::kCloseConnection);
}

TEST(TrpcStreamTableTest, ServerOpensOnInitAndJudgesTheRest) {
  TrpcStreamTable t(Role::kServer, 2);
  std::string err;
  EXPECT_EQ(t.OnFrame(Type::kData, 100, &err), Verdict::kCloseConnection);
  EXPECT_THAT(err, HasSubstr("DATA frame for stream 100, which was never opened"));
  EXPECT_EQ(t.OnFrame(Type::kInit, 100, &err), Verdict::kDeliver);
  ASSERT_NE(t.Find(100), nullptr);
  EXPECT_EQ(t.OnFrame(Type::kInit, 100, &err), Verdict::kCloseConnection);  // INIT twice
  EXPECT_EQ(t.OnFrame(Type::kData, 100, &err), Verdict::kDeliver);
  EXPECT_EQ(t.OnFrame(Type::kInit, 101, &err), Verdict::kDeliver);
  // At the cap, a new stream is refused but the connection serves on.
  EXPECT_EQ(t.OnFrame(Type::kInit, 102, &err), Verdict::kResetStream);
  EXPECT_THAT(err, HasSubstr("2 streams are open"));
  EXPECT_EQ(t.OnFrame(Type::kData, 102, &err), Verdict::kDrop);  // the refused stream's data
  t.Erase(100);
  EXPECT_EQ(t.OnFrame(Type::kClose, 100, &err), Verdict::kDrop);
  EXPECT_EQ(t.OnFrame(Type::kInit, 103, &err), Verdict::kDeliver);
  EXPECT_EQ(t.open_streams(), 2u);
}

// A client that numbers streams on several threads may send a lower id's INIT after a higher
// one's: it still opens its stream.
TEST(TrpcStreamTableTest, InitsOutOfOrderStillOpen) {
  TrpcStreamTable t(Role::kServer, 10);
  std::string err;
  EXPECT_EQ(t.OnFrame(Type::kInit, 105, &err), Verdict::kDeliver);
  EXPECT_EQ(t.OnFrame(Type::kInit, 104, &err), Verdict::kDeliver);
  EXPECT_EQ(t.OnFrame(Type::kData, 104, &err), Verdict::kDeliver);
  EXPECT_EQ(t.OnFrame(Type::kData, 103, &err), Verdict::kDrop);  // below the highest: ended
  EXPECT_EQ(t.open_streams(), 2u);
}

}  // namespace
}  // namespace trpc::detail
