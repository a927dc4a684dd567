#include "trpc/config/detail/address.h"

#include <gtest/gtest.h>

namespace trpc::config_detail {
namespace {

TEST(AddressTest, IsIpAddress) {
  for (const char* ok : {"0.0.0.0", "127.0.0.1", "255.255.255.255", "::", "::1", "fe80::1",
                         "2001:db8::8a2e:370:7334", "::ffff:10.0.0.1"}) {
    EXPECT_TRUE(IsIpAddress(ok)) << ok;
  }
  for (const char* bad :
       {"", "localhost", "1.2.3", "256.1.1.1", "1.2.3.4 ", "[::1]", "::1%eth0", "01.2.3.4"}) {
    EXPECT_FALSE(IsIpAddress(bad)) << bad;
  }
}

TEST(AddressTest, ParseTarget) {
  std::vector<TargetAddress> out;
  std::string bad;
  ASSERT_TRUE(ParseTarget("10.0.0.1:80", &out, &bad));
  EXPECT_EQ(out, (std::vector<TargetAddress>{{"10.0.0.1", 80}}));
  ASSERT_TRUE(ParseTarget(" 10.0.0.1:80 ,[::1]:65535,\t[fe80::2]:1", &out, &bad));
  EXPECT_EQ(out, (std::vector<TargetAddress>{{"10.0.0.1", 80}, {"::1", 65535}, {"fe80::2", 1}}));

  for (const char* target : {"", ",", "10.0.0.1", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536",
                             "10.0.0.1:123456", "10.0.0.1:8a", "host:80", "::1:80", "[::1]",
                             "[::1]80", "[10.0.0.1]:80", "[::1:80", "10.0.0.1:80,"}) {
    out.clear();
    EXPECT_FALSE(ParseTarget(target, &out, &bad)) << target;
    EXPECT_TRUE(out.empty()) << target;
  }
  EXPECT_FALSE(ParseTarget("10.0.0.1:80, nope:1 ,10.0.0.2:80", &out, &bad));
  EXPECT_EQ(bad, "nope:1");
}

TEST(AddressTest, ListenAddressesOverlap) {
  EXPECT_TRUE(ListenAddressesOverlap("127.0.0.1", "127.0.0.1"));
  EXPECT_FALSE(ListenAddressesOverlap("127.0.0.1", "127.0.0.2"));
  EXPECT_TRUE(ListenAddressesOverlap("0.0.0.0", "127.0.0.2"));
  EXPECT_TRUE(ListenAddressesOverlap("10.0.0.1", "0.0.0.0"));
  EXPECT_FALSE(ListenAddressesOverlap("0.0.0.0", "::1"));
  EXPECT_TRUE(ListenAddressesOverlap("::", "10.0.0.1"));
  EXPECT_TRUE(ListenAddressesOverlap("::1", "0:0::1"));
  EXPECT_FALSE(ListenAddressesOverlap("::1", "::2"));
}

}  // namespace
}  // namespace trpc::config_detail
