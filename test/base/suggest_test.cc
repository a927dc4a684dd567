#include "trpc/base/suggest.h"

#include <gtest/gtest.h>

namespace trpc {
namespace {

TEST(SuggestTest, EditDistance) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("port", "port"), 0u);
  EXPECT_EQ(EditDistance("prot", "port"), 2u);  // a swap is two edits
  EXPECT_EQ(EditDistance("htpp", "http"), 1u);
  EXPECT_EQ(EditDistance("auth", "autho"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(SuggestTest, ClosestNameSuggestsOnlyCloseMisspellings) {
  std::vector<std::string_view> known = {"trpc", "http", "grpc"};
  EXPECT_EQ(ClosestName("htpp", known), "http");
  EXPECT_EQ(ClosestName("trcp", known), "trpc");
  EXPECT_EQ(ClosestName("tprc", known), "trpc");  // distance 2 to trpc, first of equals
  EXPECT_EQ(ClosestName("websocket", known), "");
  EXPECT_EQ(ClosestName("x", {"y"}), "");  // a one-letter name is never "close"
  EXPECT_EQ(ClosestName("anything", {}), "");
}

TEST(SuggestTest, RegisteredNamesHint) {
  EXPECT_EQ(RegisteredNamesHint("auht", {"auth", "metrics"}),
            " (did you mean 'auth'? registered: auth, metrics)");
  EXPECT_EQ(RegisteredNamesHint("tracing", {"auth", "metrics"}), " (registered: auth, metrics)");
  EXPECT_EQ(RegisteredNamesHint("auth", {}), " (none is registered)");
}

}  // namespace
}  // namespace trpc
