#include "trpc/base/net_address.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <string>

namespace trpc {
namespace {

TEST(NetAddressTest, ParsesIpv4) {
  NetAddress a;
  ASSERT_TRUE(NetAddress::Parse("127.0.0.1:8080", &a));
  EXPECT_EQ(a.family(), AF_INET);
  EXPECT_EQ(a.ip(), "127.0.0.1");
  EXPECT_EQ(a.port(), 8080);
  EXPECT_EQ(a.length(), sizeof(sockaddr_in));
  EXPECT_EQ(a.ToString(), "127.0.0.1:8080");
  const auto* sin = reinterpret_cast<const sockaddr_in*>(a.sockaddr_ptr());
  EXPECT_EQ(ntohl(sin->sin_addr.s_addr), 0x7f000001u);
  EXPECT_EQ(ntohs(sin->sin_port), 8080);
}

TEST(NetAddressTest, ParsesPortBoundaries) {
  NetAddress a;
  ASSERT_TRUE(NetAddress::Parse("0.0.0.0:0", &a));
  EXPECT_EQ(a.port(), 0);
  ASSERT_TRUE(NetAddress::Parse("255.255.255.255:65535", &a));
  EXPECT_EQ(a.port(), 65535);
  EXPECT_EQ(a.ip(), "255.255.255.255");
}

TEST(NetAddressTest, ParsesBracketedIpv6) {
  NetAddress a;
  ASSERT_TRUE(NetAddress::Parse("[::1]:9000", &a));
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.ip(), "::1");
  EXPECT_EQ(a.port(), 9000);
  EXPECT_EQ(a.length(), sizeof(sockaddr_in6));
  EXPECT_EQ(a.ToString(), "[::1]:9000");

  ASSERT_TRUE(NetAddress::Parse("[2001:db8::42]:65535", &a));
  EXPECT_EQ(a.ip(), "2001:db8::42");
  EXPECT_EQ(a.port(), 65535);
  ASSERT_TRUE(NetAddress::Parse("[::ffff:10.0.0.1]:1", &a));
  EXPECT_EQ(a.family(), AF_INET6);
  EXPECT_EQ(a.port(), 1);
}

TEST(NetAddressTest, ToStringRoundTrips) {
  for (const char* s : {"10.1.2.3:1", "[fe80::1]:443", "[::]:0"}) {
    NetAddress a;
    NetAddress b;
    ASSERT_TRUE(NetAddress::Parse(s, &a)) << s;
    EXPECT_EQ(a.ToString(), s);
    ASSERT_TRUE(NetAddress::Parse(a.ToString(), &b)) << s;
    EXPECT_EQ(b.ToString(), s);
  }
}

TEST(NetAddressTest, RejectsBadInput) {
  const char* bad[] = {
      "",                       // empty
      "127.0.0.1",              // no port
      "127.0.0.1:",             // empty port
      ":80",                    // empty host
      "127.0.0.1:65536",        // port out of range
      "127.0.0.1:99999999999",  // port overflows
      "127.0.0.1:-1",           // negative port
      "127.0.0.1:+80",          // sign
      "127.0.0.1:80x",          // trailing junk
      "127.0.0.1:80 ",          // trailing space
      " 127.0.0.1:80",          // leading space
      "127.0.0.1:8:80",         // two colons
      "256.0.0.1:80",           // octet out of range
      "1.2.3:80",               // short address
      "localhost:80",           // names are not resolved here
      "::1:80",                 // IPv6 needs brackets
      "[::1]",                  // no port
      "[::1]:",                 // empty port
      "[::1]80",                // missing colon
      "[::1",                   // unclosed bracket
      "::1]:80",                // missing open bracket
      "[]:80",                  // empty brackets
      "[::g]:80",               // bad IPv6
      "[::1]:80:1",             // junk after port
  };
  for (const char* s : bad) {
    NetAddress a;
    ASSERT_TRUE(NetAddress::Parse("1.1.1.1:1", &a));
    EXPECT_FALSE(NetAddress::Parse(s, &a)) << "accepted '" << s << "'";
    EXPECT_EQ(a.ToString(), "1.1.1.1:1") << "a failed parse of '" << s << "' changed the output";
  }
}

TEST(NetAddressTest, FromIpPort) {
  NetAddress a;
  ASSERT_TRUE(NetAddress::FromIpPort("192.168.1.1", 53, &a));
  EXPECT_EQ(a.ToString(), "192.168.1.1:53");
  ASSERT_TRUE(NetAddress::FromIpPort("::1", 53, &a));
  EXPECT_EQ(a.ToString(), "[::1]:53");
  EXPECT_FALSE(NetAddress::FromIpPort("[::1]", 53, &a));
  EXPECT_FALSE(NetAddress::FromIpPort("example.com", 53, &a));
  EXPECT_FALSE(NetAddress::FromIpPort(std::string(200, '1'), 53, &a));
}

TEST(NetAddressTest, FromSockaddrKeepsTheAddress) {
  NetAddress a;
  ASSERT_TRUE(NetAddress::Parse("[2001:db8::7]:1234", &a));
  NetAddress b = NetAddress::FromSockaddr(a.sockaddr_ptr(), a.length());
  EXPECT_EQ(b.ToString(), "[2001:db8::7]:1234");
  EXPECT_EQ(b.length(), a.length());
}

}  // namespace
}  // namespace trpc

namespace trpc {
namespace {

TEST(NetAddressListTest, ParsesBackendListsWithSpaces) {
  std::vector<NetAddress> out;
  std::string bad;
  ASSERT_TRUE(NetAddress::ParseList("127.0.0.1:80, 10.0.0.2:81 ,[::1]:8080", &out, &bad));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].ToString(), "127.0.0.1:80");
  EXPECT_EQ(out[1].ToString(), "10.0.0.2:81");
  EXPECT_EQ(out[2].ToString(), "[::1]:8080");
}

TEST(NetAddressListTest, RejectsBadElementsAndNamesThem) {
  std::vector<NetAddress> out;
  std::string bad;
  EXPECT_FALSE(NetAddress::ParseList("127.0.0.1:80,127.0.0.1:0", &out, &bad));
  EXPECT_EQ(bad, "127.0.0.1:0");
  EXPECT_FALSE(NetAddress::ParseList("127.0.0.1:80,,", &out, &bad));
  EXPECT_EQ(bad, "");
  EXPECT_FALSE(NetAddress::ParseList("[127.0.0.1]:80", &out, &bad));
  EXPECT_FALSE(NetAddress::ParseList("::1:80", &out, &bad));
  EXPECT_FALSE(NetAddress::ParseList("localhost:80", &out, &bad));
}

TEST(NetAddressListTest, WildcardAndSameIp) {
  NetAddress any4, any6, a, b;
  ASSERT_TRUE(NetAddress::FromIpPort("0.0.0.0", 1, &any4));
  ASSERT_TRUE(NetAddress::FromIpPort("::", 1, &any6));
  ASSERT_TRUE(NetAddress::FromIpPort("127.0.0.1", 1, &a));
  ASSERT_TRUE(NetAddress::FromIpPort("127.0.0.1", 2, &b));
  EXPECT_TRUE(any4.IsUnspecified());
  EXPECT_TRUE(any6.IsUnspecified());
  EXPECT_FALSE(a.IsUnspecified());
  EXPECT_TRUE(a.SameIp(b));
  EXPECT_FALSE(a.SameIp(any4));
  EXPECT_FALSE(any4.SameIp(any6));
}

TEST(NetAddressTest, Ipv4TextEveryDigitCount) {
  NetAddress a;
  for (const char* ip : {"0.0.0.0", "9.10.99.100", "255.255.255.255", "127.0.0.1", "10.200.3.45"}) {
    ASSERT_TRUE(NetAddress::FromIpPort(ip, 8080, &a)) << ip;
    EXPECT_EQ(a.ip(), ip);
    EXPECT_EQ(a.ToString(), std::string(ip) + ":8080");
  }
}

}  // namespace
}  // namespace trpc
