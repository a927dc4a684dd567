#include "trpc/config/detail/yaml_reader.h"

#include <gtest/gtest.h>

#include <string>

namespace trpc::config_detail {
namespace {

uint64_t Parse(const std::string& s, bool* ok) {
  uint64_t v = 12345;
  *ok = ParseDecimal(YAML::Load(s), &v);
  return v;
}

TEST(ParseDecimalTest, AcceptsOnlyPlainDecimal) {
  bool ok = false;
  EXPECT_EQ(Parse("0", &ok), 0u);
  EXPECT_TRUE(ok);
  EXPECT_EQ(Parse("'42'", &ok), 42u);
  EXPECT_TRUE(ok);
  EXPECT_EQ(Parse("18446744073709551615", &ok), UINT64_MAX);
  EXPECT_TRUE(ok);
  for (const char* bad : {"-1", "+1", "true", "1.0", "1e3", "0x10", "1_000", "18446744073709551616",
                          "99999999999999999999999", "''", "~", "[1]", "{a: 1}", "' 1'"}) {
    Parse(bad, &ok);
    EXPECT_FALSE(ok) << bad;
  }
}

TEST(UintRuleTest, AcceptsAndDescribes) {
  UintRule range{1, 10};
  EXPECT_FALSE(range.Accepts(0));
  EXPECT_TRUE(range.Accepts(1));
  EXPECT_TRUE(range.Accepts(10));
  EXPECT_FALSE(range.Accepts(11));
  EXPECT_EQ(range.Describe(), "an integer in 1..10");

  UintRule pages{4096, 16384, 4096};
  EXPECT_TRUE(pages.Accepts(8192));
  EXPECT_FALSE(pages.Accepts(8193));
  EXPECT_EQ(pages.Describe(), "a multiple of 4096 in 4096..16384");

  UintRule pow2{1, 1024, 1, true};
  EXPECT_TRUE(pow2.Accepts(1));
  EXPECT_TRUE(pow2.Accepts(512));
  EXPECT_FALSE(pow2.Accepts(384));
  EXPECT_EQ(pow2.Describe(), "a power of two in 1..1024");
}

TEST(MapReaderTest, ReadsTypedValuesAndKeepsDefaults) {
  ErrorSink sink;
  MapReader r(YAML::Load("a: x\nn: 7\n"), "m", 1, &sink, {"a", "n", "absent"});
  std::string a;
  uint32_t n = 0;
  uint32_t absent = 99;
  r.String("a", &a);
  r.Uint("n", UintRule{0, 10}, &n);
  r.Uint("absent", UintRule{0, 10}, &absent);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(a, "x");
  EXPECT_EQ(n, 7u);
  EXPECT_EQ(absent, 99u);
  EXPECT_EQ(r.PathOf("a"), "m.a");
  EXPECT_EQ(r.ValueLine("n"), 2);
  EXPECT_EQ(r.ValueLine("absent"), 1);
}

TEST(MapReaderTest, FirstErrorWinsAndLaterCallsAreNoOps) {
  ErrorSink sink;
  MapReader r(YAML::Load("a: [1]\nn: 70\n"), "m", 1, &sink, {"a", "n"});
  std::string a = "default";
  uint32_t n = 5;
  r.String("a", &a);
  r.Uint("n", UintRule{0, 10}, &n);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(sink.line(), 1);
  EXPECT_EQ(sink.message(), "m.a: expected a string, got a list");
  EXPECT_EQ(a, "default");
  EXPECT_EQ(n, 5u);
}

TEST(MapReaderTest, NoSuggestionForDistantKeys) {
  ErrorSink sink;
  MapReader r(YAML::Load("zzzzzz: 1\n"), "m", 1, &sink, {"port", "name"});
  EXPECT_EQ(sink.message(), "unknown key 'zzzzzz' in m");
}

TEST(MapReaderTest, ForEachMapNamesElements) {
  ErrorSink sink;
  MapReader r(YAML::Load("l:\n  - {v: 1}\n  - {v: 2}\n"), "", 1, &sink, {"l"});
  std::vector<std::string> paths;
  std::vector<uint32_t> values;
  r.ForEachMap("l", {"v"}, [&](MapReader& e, size_t i) {
    uint32_t v = 0;
    e.Uint("v", UintRule{0, 10}, &v);
    paths.push_back(e.path());
    values.push_back(v);
    EXPECT_EQ(e.line(), static_cast<int>(i) + 2);
  });
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(paths, (std::vector<std::string>{"l[0]", "l[1]"}));
  EXPECT_EQ(values, (std::vector<uint32_t>{1, 2}));
}

}  // namespace
}  // namespace trpc::config_detail
