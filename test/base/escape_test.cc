#include "trpc/base/detail/escape.h"

#include <gtest/gtest.h>

#include <string>

namespace trpc {
namespace {

TEST(EscapeBytesTest, ControlBytesBackslashAndNonAsciiAreEscaped) {
  EXPECT_EQ(EscapeBytes("plain text: {\"a\":1}"), "plain text: {\"a\":1}");
  EXPECT_EQ(EscapeBytes(std::string("a\nb\r\x1b[31m\0\x7f\xff\\", 13)),
            "a\\x0ab\\x0d\\x1b[31m\\x00\\x7f\\xff\\\\");
  EXPECT_EQ(EscapeBytes(""), "");
}

TEST(EscapeBytesTest, LongInputIsCut) {
  EXPECT_EQ(EscapeBytes(std::string(10, 'x'), 4), "xxxx...(10 bytes)");
  EXPECT_EQ(EscapeBytes(std::string(4, 'x'), 4), "xxxx");
  std::string cut;
  for (int i = 0; i < 256; ++i) cut += "\\x0a";
  EXPECT_EQ(EscapeBytes(std::string(1000, '\n')), cut + "...(1000 bytes)");
}

}  // namespace
}  // namespace trpc
