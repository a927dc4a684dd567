// detail::H2FloodGuard: its own parse of HTTP/2 frame headers, however the bytes are cut, and
// which frames it counts against which limit.

#include "trpc/codec/grpc/detail/h2_flood_guard.h"

#include <gtest/gtest.h>

#include <string>

namespace trpc::grpc::detail {
namespace {

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string f{static_cast<char>(n >> 16),
                static_cast<char>(n >> 8),
                static_cast<char>(n),
                static_cast<char>(type),
                static_cast<char>(flags),
                0,
                0,
                0,
                static_cast<char>(stream)};
  return f + payload;
}

constexpr uint8_t kData = 0, kPriority = 2, kPing = 6, kWindowUpdate = 8;
const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// Feeds `bytes` `step` bytes at a time; the flood reported, or "" if none.
std::string Feed(H2FloodGuard* g, const std::string& bytes, size_t step) {
  for (size_t i = 0; i < bytes.size(); i += step) {
    if (const char* flood = g->Scan(std::string_view(bytes).substr(i, step))) return flood;
  }
  return "";
}

// Low rates, so that the buckets refill too slowly to matter while a test runs (a token per
// half second).
FloodLimits Limits(uint32_t per_second) {
  return {per_second, per_second, per_second, per_second, per_second};
}

TEST(H2FloodGuardTest, CountsFramesHoweverTheBytesAreCut) {
  for (size_t step : {1, 5, 9, 10, 4096}) {
    std::string bytes = kPreface;
    for (int i = 0; i < 2; ++i) bytes += Frame(kData, 0, 1, "");
    H2FloodGuard g(Limits(2), /*server=*/true);
    EXPECT_EQ(Feed(&g, bytes, step), "") << step;  // the burst: 2
    EXPECT_EQ(Feed(&g, Frame(kData, 0, 1, ""), step), "empty DATA flood") << step;
  }
}

TEST(H2FloodGuardTest, WhatCountsAsEmptyData) {
  H2FloodGuard g(Limits(2), /*server=*/false);
  std::string bytes;
  for (int i = 0; i < 20; ++i) {
    bytes += Frame(kData, 1, 1, "");                        // ends its stream: not counted
    bytes += Frame(kData, 0, 1, "x");                       // carries data
    bytes += Frame(kData, 8, 1, std::string("\x01pd", 3));  // padded, with one byte of data
  }
  EXPECT_EQ(Feed(&g, bytes, 7), "");
  // Padding only (pad length 3 + 3 bytes of padding), cut anywhere: counted.
  std::string padded;
  for (int i = 0; i < 3; ++i) padded += Frame(kData, 8, 1, std::string("\x03\0\0\0", 4));
  EXPECT_EQ(Feed(&g, padded, 1), "empty DATA flood");
}

TEST(H2FloodGuardTest, PingAcksAreFreeAndEachKindHasItsOwnBucket) {
  H2FloodGuard g(Limits(2), /*server=*/false);
  std::string bytes;
  for (int i = 0; i < 50; ++i) bytes += Frame(kPing, 1, 0, std::string(8, 'a'));  // ACKs
  for (int i = 0; i < 2; ++i) {
    bytes += Frame(kPing, 0, 0, std::string(8, 'p')) + Frame(kPriority, 0, 3, std::string(5, 0));
  }
  EXPECT_EQ(Feed(&g, bytes, 64), "");
  EXPECT_EQ(Feed(&g, Frame(kPriority, 0, 3, std::string(5, 0)), 64), "PRIORITY flood");
}

TEST(H2FloodGuardTest, DataWeSendEarnsWindowUpdates) {
  H2FloodGuard g(Limits(2), /*server=*/false);
  for (int i = 0; i < 10; ++i) g.OnDataSent();  // 20 earned
  std::string bytes;
  for (int i = 0; i < 22; ++i) bytes += Frame(kWindowUpdate, 0, 0, std::string("\0\0\0\1", 4));
  EXPECT_EQ(Feed(&g, bytes, 100), "");  // 20 earned + a burst of 2
  EXPECT_EQ(Feed(&g, Frame(kWindowUpdate, 0, 0, std::string("\0\0\0\1", 4)), 100),
            "WINDOW_UPDATE flood");
}

TEST(H2FloodGuardTest, StreamMessagesAndOpensEarnWindowUpdates) {
  // Many small messages in few DATA frames: each message may be answered with three.
  H2FloodGuard g(Limits(2), /*server=*/false);
  g.Earn(1);                                // a stream opened
  for (int i = 0; i < 100; ++i) g.Earn(3);  // 100 messages queued
  g.OnDataSent();                           // in one DATA frame
  std::string bytes;
  for (int i = 0; i < 303 + 2; ++i) bytes += Frame(kWindowUpdate, 0, 1, std::string("\0\0\0\1", 4));
  EXPECT_EQ(Feed(&g, bytes, 100), "");  // 303 earned + a burst of 2
  EXPECT_EQ(Feed(&g, Frame(kWindowUpdate, 0, 0, std::string("\0\0\0\1", 4)), 100),
            "WINDOW_UPDATE flood");
}

}  // namespace
}  // namespace trpc::grpc::detail
