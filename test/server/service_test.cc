// Service's method table: lookups by wire name through the small flat table and through the
// hash table it falls back to past kSmallTableMax names, re-registration, and ForEachMethod.

#include "trpc/server/service.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace trpc {
namespace {

class NopHandler : public RpcMethodHandler {
 public:
  void Handle(const ServerContextPtr&) override {}
};

struct Table {
  Service service;
  std::vector<RpcMethodHandler*> handlers;  // by registration order

  RpcMethodHandler* Add(const std::string& name) {
    auto h = std::make_unique<NopHandler>();
    RpcMethodHandler* raw = h.get();
    service.AddRpcServiceMethod(name, std::move(h));
    handlers.push_back(raw);
    return raw;
  }
};

std::string Name(int i) { return "/pkg.Svc/M" + std::to_string(i); }

// Sizes on both sides of the flat table's limit (16).
class ServiceLookupTest : public testing::TestWithParam<int> {};

TEST_P(ServiceLookupTest, FindsEveryNameAndNothingElse) {
  const int n = GetParam();
  Table t;
  for (int i = 0; i < n; ++i) t.Add(Name(i));
  for (int i = 0; i < n; ++i) {
    // A name built afresh, not the registered string: the lookup compares bytes.
    std::string name = Name(i);
    EXPECT_EQ(t.service.FindMethod(name), t.handlers[i]) << name;
  }
  EXPECT_EQ(t.service.FindMethod(Name(n)), nullptr);
  EXPECT_EQ(t.service.FindMethod(""), nullptr);
  EXPECT_EQ(t.service.FindMethod("/pkg.Svc/M"), nullptr);    // a prefix of every name
  EXPECT_EQ(t.service.FindMethod("/pkg.Svc/M01"), nullptr);  // longer, same start
  EXPECT_EQ(t.service.FindMethod("/pkg.Svc/m0"), nullptr);   // case matters
}

INSTANTIATE_TEST_SUITE_P(Sizes, ServiceLookupTest, testing::Values(0, 1, 2, 15, 16, 17, 40));

TEST(ServiceTest, NamesOfOneLengthAreToldApart) {
  Table t;
  RpcMethodHandler* a = t.Add("/a.S/Get");
  RpcMethodHandler* b = t.Add("/a.S/Set");
  RpcMethodHandler* c = t.Add("/b.S/Get");
  EXPECT_EQ(t.service.FindMethod("/a.S/Get"), a);
  EXPECT_EQ(t.service.FindMethod("/a.S/Set"), b);
  EXPECT_EQ(t.service.FindMethod("/b.S/Get"), c);
  EXPECT_EQ(t.service.FindMethod("/b.S/Set"), nullptr);
}

TEST(ServiceTest, RegisteringANameAgainReplacesItsHandler) {
  for (int others : {0, 20}) {  // in the flat table, and in the hash table
    Table t;
    for (int i = 0; i < others; ++i) t.Add(Name(i));
    t.Add("/x.S/M");
    RpcMethodHandler* second = t.Add("/x.S/M");
    EXPECT_EQ(t.service.FindMethod("/x.S/M"), second) << others;
    int listed = 0;
    t.service.ForEachMethod([&](const std::string&, const RpcMethodHandler*) { ++listed; });
    EXPECT_EQ(listed, others + 1);
  }
}

TEST(ServiceTest, GrowingPastTheFlatTableKeepsEveryName) {
  Table t;
  for (int i = 0; i < 40; ++i) {
    t.Add(Name(i));
    for (int j = 0; j <= i; ++j) ASSERT_EQ(t.service.FindMethod(Name(j)), t.handlers[j]) << i;
  }
}

TEST(ServiceTest, ForEachMethodListsNamesInOrder) {
  Table t;
  t.Add("/b/Y");
  t.Add("/a/Z");
  t.Add("/b/X");
  std::vector<std::string> names;
  t.service.ForEachMethod([&](const std::string& n, const RpcMethodHandler* h) {
    EXPECT_EQ(t.service.FindMethod(n), h);
    names.push_back(n);
  });
  EXPECT_EQ(names, (std::vector<std::string>{"/a/Z", "/b/X", "/b/Y"}));
}

}  // namespace
}  // namespace trpc
