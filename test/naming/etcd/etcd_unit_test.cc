// The etcd plug-in's parts that need no etcd: the JSON object splitter, options, the gateway's
// JSON, instance values.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trpc/naming/etcd/detail/etcd_client.h"
#include "trpc/naming/etcd/detail/etcd_gateway.pb.h"
#include "trpc/naming/etcd/detail/etcd_registry.h"
#include "trpc/naming/etcd/detail/etcd_selector.h"
#include "trpc/naming/etcd/detail/json_splitter.h"

namespace trpc::naming::etcd::detail {
namespace {

// Feeds `stream` in pieces of `piece` bytes; the objects found, or "ERROR: ..." last.
std::vector<std::string> Split(std::string_view stream, size_t piece) {
  JsonObjectSplitter s(1000);
  std::vector<std::string> out;
  for (size_t i = 0; i < stream.size(); i += piece) {
    std::string err;
    if (!s.Feed(
            stream.substr(i, piece),
            [&](std::string_view o) {
              out.emplace_back(o);
              return true;
            },
            &err)) {
      out.push_back("ERROR: " + err);
      break;
    }
  }
  return out;
}

TEST(JsonObjectSplitterTest, ObjectsSplitAnywhere) {
  const std::vector<std::string> objects = {
      R"({"result":{"header":{"revision":"5"},"created":true}})",
      R"({"result":{"events":[{"kv":{"key":"L2E=","value":"eyJ9In0="}},{"type":"DELETE"}]}})",
      R"({"s":"braces } { ] [ in a string, an escaped quote \" and a backslash \\"})",
      R"({})",
  };
  const std::string stream =
      "\n" + objects[0] + "\n" + objects[1] + objects[2] + " \r\n\t" + objects[3] + "\n";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    EXPECT_EQ(Split(stream, piece), objects) << "pieces of " << piece;
  }
}

TEST(JsonObjectSplitterTest, GarbageAndLimits) {
  EXPECT_EQ(Split("{}x{}", 1).back(), "ERROR: unexpected byte outside a JSON object");
  EXPECT_EQ(Split("}", 1).back(), "ERROR: unexpected byte outside a JSON object");
  EXPECT_EQ(Split("[1]", 1).back(), "ERROR: unexpected byte outside a JSON object");
  const std::string big = "{\"a\":\"" + std::string(2000, 'x') + "\"}";
  for (size_t piece : {size_t{1}, size_t{7}, big.size()}) {
    EXPECT_EQ(Split(big, piece).back(), "ERROR: JSON object over 1000 bytes") << piece;
  }
}

TEST(JsonObjectSplitterTest, StopsWhenTheCallbackSaysSo) {
  JsonObjectSplitter s;
  std::string err = "x";
  int n = 0;
  EXPECT_FALSE(s.Feed(
      "{}{}{}", [&](std::string_view) { return ++n < 2; }, &err));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(err, "");
}

PluginOptions Opts(std::map<std::string, std::string> values) {
  PluginOptions o;
  int line = 10;
  for (const auto& [k, v] : values) o.origin[k] = "conf.yaml:" + std::to_string(line++);
  o.values = std::move(values);
  o.section_origin = "conf.yaml:9";
  return o;
}

TEST(EtcdOptionsTest, DefaultsAndValues) {
  EtcdOptions o;
  std::string err;
  ASSERT_TRUE(ParseEtcdOptions(PluginOptions{}, "selector", &o, &err)) << err;
  ASSERT_EQ(o.endpoints.size(), 1u);
  EXPECT_EQ(o.endpoints[0].ToString(), "127.0.0.1:2379");
  EXPECT_EQ(o.prefix, "/trpc");
  EXPECT_EQ(o.ttl_s, 10u);
  EXPECT_EQ(o.request_timeout_ms, 3000u);
  EXPECT_EQ(o.backoff_max_ms, 2000u);
  EXPECT_EQ(o.update_interval_ms, 100u);
  ASSERT_TRUE(ParseEtcdOptions(Opts({{"endpoints", "127.0.0.1:1,[::1]:2"},
                                     {"prefix", "/svc/"},
                                     {"ttl", "2"},
                                     {"request_timeout", "500"},
                                     {"backoff_max", "100"},
                                     {"update_interval", "0"}}),
                               "registry", &o, &err))
      << err;
  EXPECT_EQ(o.endpoints.size(), 2u);
  EXPECT_EQ(o.prefix, "/svc");
  EXPECT_EQ(o.ttl_s, 2u);
  EXPECT_EQ(o.request_timeout_ms, 500u);
  EXPECT_EQ(o.backoff_max_ms, 100u);
  EXPECT_EQ(o.update_interval_ms, 0u);
}

TEST(EtcdOptionsTest, BadOptionsFailInitWithFileAndLine) {
  struct Case {
    std::map<std::string, std::string> values;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{{"ttl", "1"}}, "conf.yaml:10: plugins.registry.etcd.ttl: must be 2..3600"},
      {{{"ttl", "10s"}}, "conf.yaml:10: plugins.registry.etcd.ttl: must be 2..3600"},
      {{{"ttl", "3601"}}, "conf.yaml:10: plugins.registry.etcd.ttl: must be 2..3600"},
      {{{"request_timeout", "0"}}, "conf.yaml:10: plugins.registry.etcd.request_timeout: must"},
      {{{"backoff_max", "-1"}}, "conf.yaml:10: plugins.registry.etcd.backoff_max: must"},
      {{{"update_interval", "60001"}},
       "conf.yaml:10: plugins.registry.etcd.update_interval: must be 0..60000 (ms)"},
      {{{"prefix", "trpc"}}, "conf.yaml:10: plugins.registry.etcd.prefix: must start with '/'"},
      {{{"prefix", "/"}}, "conf.yaml:10: plugins.registry.etcd.prefix: must start with '/'"},
      {{{"endpoints", "localhost:2379"}},
       "conf.yaml:10: plugins.registry.etcd.endpoints: want ip:port"},
      {{{"endpoints", ""}}, "conf.yaml:10: plugins.registry.etcd.endpoints: want ip:port"},
      {{{"ttl", "5"}, {"wat", "1"}}, "conf.yaml:11: plugins.registry.etcd.wat: unknown setting"},
  };
  for (const Case& c : cases) {
    EtcdRegistry r;
    std::string err;
    EXPECT_FALSE(r.Init(Opts(c.values), &err));
    EXPECT_EQ(err.rfind(c.want, 0), 0u) << err;
  }
  EtcdSelector s;
  std::string err;
  EXPECT_FALSE(s.Init(Opts({{"ttl", "x"}}), &err));
  EXPECT_EQ(err.rfind("conf.yaml:10: plugins.selector.etcd.ttl: must be 2..3600", 0), 0u) << err;
}

TEST(EtcdGatewayJsonTest, RequestsUseEtcdsFieldNamesBase64AndStrings) {
  RangeRequest r;
  r.set_key("/trpc/default/svc/");
  r.set_range_end(PrefixRangeEnd("/trpc/default/svc/"));
  EXPECT_EQ(ToJson(r),
            R"({"key":"L3RycGMvZGVmYXVsdC9zdmMv","range_end":"L3RycGMvZGVmYXVsdC9zdmMw"})");
  LeaseGrantRequest g;
  g.set_ttl(10);
  EXPECT_EQ(ToJson(g), R"({"TTL":"10"})");
  WatchRequest w;
  w.mutable_create_request()->set_start_revision(7);
  EXPECT_EQ(ToJson(w), R"({"create_request":{"start_revision":"7"}})");
}

TEST(EtcdGatewayJsonTest, EventTypePutIsAbsent) {
  // As etcd 3.4's gateway writes a watch response: PUT (0) has no "type".
  WatchStreamItem item;
  std::string err;
  ASSERT_TRUE(FromJson(
      R"({"result":{"header":{"cluster_id":"1","revision":"3","raft_term":"2"},"events":[)"
      R"({"kv":{"key":"L2E=","create_revision":"2","mod_revision":"2","version":"1","value":"eA=="}},)"
      R"({"type":"DELETE","kv":{"key":"L2E=","mod_revision":"3"}}],"unknown_field":1}})",
      &item, &err))
      << err;
  ASSERT_EQ(item.result().events_size(), 2);
  EXPECT_EQ(item.result().events(0).type(), Event::PUT);
  EXPECT_EQ(item.result().events(0).kv().key(), "/a");
  EXPECT_EQ(item.result().events(0).kv().value(), "x");
  EXPECT_EQ(item.result().events(1).type(), Event::DELETE);
  EXPECT_EQ(item.result().events(1).kv().mod_revision(), 3);
  EXPECT_EQ(item.result().header().revision(), 3);
  // A compaction cancel.
  ASSERT_TRUE(
      FromJson(R"({"result":{"header":{},"canceled":true,"compact_revision":"4"}})", &item, &err));
  EXPECT_TRUE(item.result().canceled());
  EXPECT_EQ(item.result().compact_revision(), 4);
  EXPECT_FALSE(FromJson("{\"result\":", &item, &err));
}

TEST(EtcdInstanceValueTest, RoundTripAndBadValues) {
  EtcdOptions o;
  RegistryInstance inst;
  inst.name_space = "default";
  inst.service = "svc";
  NetAddress::Parse("127.0.0.1:8000", &inst.addr);
  inst.weight = 7;
  inst.meta = {{"zone", "a"}};
  std::string key, value, err;
  ASSERT_TRUE(EtcdRegistry::KeyOf(o, inst, &key, &value, &err)) << err;
  EXPECT_EQ(key, "/trpc/default/svc/127.0.0.1:8000");
  EXPECT_EQ(value, R"({"host":"127.0.0.1","port":8000,"weight":7,"meta":{"zone":"a"}})");
  Endpoint ep;
  ASSERT_TRUE(ParseInstanceValue(value, &ep, &err)) << err;
  EXPECT_EQ(ep, (Endpoint{inst.addr, 7, {{"zone", "a"}}}));
  ASSERT_TRUE(ParseInstanceValue(R"({"host":"::1","port":80})", &ep, &err)) << err;
  EXPECT_EQ(ep.addr.ToString(), "[::1]:80");
  EXPECT_EQ(ep.weight, 100u);
  EXPECT_FALSE(ParseInstanceValue("not json", &ep, &err));
  EXPECT_FALSE(ParseInstanceValue(R"({"host":"example.com","port":80})", &ep, &err));
  EXPECT_FALSE(ParseInstanceValue(R"({"host":"1.2.3.4"})", &ep, &err));
  EXPECT_FALSE(ParseInstanceValue(R"({"host":"1.2.3.4","port":70000})", &ep, &err));
  // A wildcard address or a bad name is refused.
  NetAddress::Parse("0.0.0.0:8000", &inst.addr);
  EXPECT_FALSE(EtcdRegistry::KeyOf(o, inst, &key, &value, &err));
  NetAddress::Parse("127.0.0.1:8000", &inst.addr);
  inst.service = "a/b";
  EXPECT_FALSE(EtcdRegistry::KeyOf(o, inst, &key, &value, &err));
}

TEST(EtcdKeysTest, PrefixRangeEnd) {
  EXPECT_EQ(PrefixRangeEnd("/a/"), "/a0");
  EXPECT_EQ(PrefixRangeEnd(std::string("a\xff", 2)), "b");
  EXPECT_EQ(PrefixRangeEnd(std::string("\xff", 1)), std::string(1, '\0'));
}

}  // namespace
}  // namespace trpc::naming::etcd::detail
