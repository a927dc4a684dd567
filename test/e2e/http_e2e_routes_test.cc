// End-to-end tests of the HTTP/1.1 plug-in over loopback (http_e2e_fixture.h): plain routes,
// chunked bodies, HEAD, 404 and 405, the REST mapping of Greeter (JSON and protobuf, errors,
// options), and refusals that filters and metrics see as errors.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "test/e2e/http_e2e_fixture.h"
#include "trpc/server/server_filter.h"

namespace trpc::http::e2e {
namespace {

TEST_F(HttpE2eTest, PlainRoutesAnswerWithHeadersAndBody) {
  Response r = RoundTrip(kGet);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");
  EXPECT_TRUE(r.Has("Content-Type: application/json"));
  EXPECT_TRUE(r.Has("Content-Length: 2"));
  EXPECT_NE(r.head.find("Date: "), std::string::npos);
  EXPECT_FALSE(r.Has("Connection: close"));

  r = RoundTrip("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.body, "Hello, World!");
  r = RoundTrip("GET /users/7/posts/abc?x=1&q=yes HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.body, "7/abc?yes");
  r = RoundTrip("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "hello");
  EXPECT_TRUE(r.Has("X-Echo-Method: POST"));
}

TEST_F(HttpE2eTest, ChunkedBodyIsDeChunked) {
  Response r = RoundTrip(
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n");
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "abcde");
}

TEST_F(HttpE2eTest, HeadHasLengthButNoBody) {
  RawClient c(addr_);
  ASSERT_TRUE(c.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kGet)));
  Response r;
  // The HEAD reply carries Content-Length: 13 but no body: reading it as if it had one would
  // swallow the next reply, so parse by hand.
  ASSERT_TRUE(c.Read(&r));  // reads 13 bytes of the next reply as "body"
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Has("Content-Length: 13"));
  EXPECT_EQ(r.body.substr(0, 8), "HTTP/1.1") << "HEAD must not send a body";
}

TEST_F(HttpE2eTest, NotFoundAndMethodNotAllowed) {
  // The error body carries the framework code (docs/http.md): 12 for no route or no such
  // method on the path, 1 for a body type the REST mapping cannot decode.
  Response r = RoundTrip("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.body, R"({"code":12,"func_code":0,"message":"no route for this path"})");
  EXPECT_TRUE(r.Has("Content-Type: application/json"));
  r = RoundTrip("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_TRUE(r.Has("Allow: GET, HEAD"));
  EXPECT_EQ(r.body, R"({"code":12,"func_code":0,"message":"method not allowed on this path"})");
  r = RoundTrip("GET /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 405);
  EXPECT_TRUE(r.Has("Allow: POST"));
  EXPECT_NE(r.body.find(R"("code":12,)"), std::string::npos) << r.body;
  r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_EQ(r.status, 415);
  EXPECT_NE(r.body.find(R"("code":1,)"), std::string::npos) << r.body;
  EXPECT_FALSE(r.Has("Allow: POST"));
  r = RoundTrip("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 500);
}

TEST_F(HttpE2eTest, RestMappingWithJson) {
  std::string body = R"({"msg":"json"})";
  Response r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json; charset=utf-8\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Has("Content-Type: application/json"));
  EXPECT_EQ(r.body, R"({"msg":"Hello, json"})");

  body = R"({"msg":"fail"})";
  r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("\"func_code\":7"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("the handler said no"), std::string::npos);

  body = R"({"nope":1})";
  r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/json\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 400) << r.body;
}

// POST /trpc.test.helloworld.Greeter/SayHello with a JSON body.
std::string SayHelloJson(std::string_view body) {
  return "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

// Status::AppError: ret 0, the service's code in func_code, HTTP 500.
TEST_F(HttpE2eTest, RestMappingCarriesAnApplicationError) {
  Response r = RoundTrip(SayHelloJson(R"({"msg":"app_error"})"));
  EXPECT_EQ(r.status, 500);
  EXPECT_EQ(r.body, R"({"code":0,"func_code":-404,"message":"no such greeting"})");
}

// protocol_options.json_emit_defaults: fields at their default value are left out of JSON
// replies unless it is true.
TEST_F(HttpE2eTest, JsonEmitDefaultsOption) {
  const std::string req = SayHelloJson(R"({"msg":"empty"})");
  Response r = RoundTrip(req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");

  ServerConfig with_defaults = config_->server;
  with_defaults.service[0].protocol_options["json_emit_defaults"] = "true";
  StartServer(with_defaults);
  r = RoundTrip(req);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"msg":""})");

  ServerConfig bad = config_->server;
  bad.service[0].protocol_options["json_emit_defaults"] = "yes";
  bad.service[0].protocol_option_origin["json_emit_defaults"] = "t.yaml:7";
  Server server(bad);
  ASSERT_TRUE(server.RegisterService(kServiceName, std::make_shared<HttpService>()));
  std::string err;
  EXPECT_FALSE(server.Start(&err));
  EXPECT_EQ(err,
            "t.yaml:7: service 'trpc.test.http.Http': protocol_options.json_emit_defaults: "
            "expected true or false, got 'yes'");
}

// The server's own 404/405/415 answers are framework errors: a filter sees their code at
// SERVER_POST_RPC_INVOKE, and the metrics count them as errors of method "unknown".
class StatusRecorder final : public MessageServerFilter {
 public:
  std::string Name() const override { return "http_e2e_status_recorder"; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::SERVER_POST_RPC_INVOKE};
  }
  void operator()(FilterStatus&, FilterPoint, const ServerContextPtr& ctx) override {
    std::lock_guard lock(mu);
    seen.push_back(ctx->GetStatus().GetFrameworkRetCode());
  }
  std::mutex mu;
  std::vector<int32_t> seen;
};

TEST_F(HttpE2eTest, RefusalsAreErrorsForFiltersAndMetrics) {
  static auto* recorder = [] {
    auto f = std::make_shared<StatusRecorder>();
    RegisterServerFilter(f);
    return f.get();
  }();
  {
    std::lock_guard lock(recorder->mu);
    recorder->seen.clear();
  }
  ServerConfig filtered = config_->server;
  filtered.service[0].filter = {"http_e2e_status_recorder"};
  StartServer(filtered);
  EXPECT_EQ(RoundTrip("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n").status, 404);
  EXPECT_EQ(RoundTrip("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n").status, 405);
  EXPECT_EQ(RoundTrip("POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
                      "Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nhi")
                .status,
            415);
  EXPECT_EQ(RoundTrip(kGet).status, 200);
  {
    std::lock_guard lock(recorder->mu);
    EXPECT_EQ(recorder->seen, (std::vector<int32_t>{kServerNoFuncErr, kServerNoFuncErr,
                                                    kServerDecodeErr, kSuccess}));
  }
  ServerMetrics m = server_->GetMetrics();
  const MethodMetrics* unknown = nullptr;
  for (const auto& svc : m.services) {
    if (svc.name != kServiceName) continue;
    for (const auto& method : svc.methods) {
      if (method.name == "unknown") unknown = &method;
    }
  }
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->requests, 3u);
  using Errors = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(Errors(unknown->errors.begin(), unknown->errors.end()), (Errors{{"1", 1}, {"12", 2}}));
}

TEST_F(HttpE2eTest, RestMappingWithProtobuf) {
  HelloRequest req;
  req.set_msg("pb");
  std::string body = req.SerializeAsString();
  Response r = RoundTrip(
      "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: t\r\n"
      "Content-Type: application/x-protobuf\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Has("Content-Type: application/x-protobuf"));
  HelloReply rsp;
  ASSERT_TRUE(rsp.ParseFromString(r.body));
  EXPECT_EQ(rsp.msg(), "Hello, pb");
}

// Three pipelined requests (one with a chunked body) sent in two pieces split at every byte
// offset: every split gives the same three replies, in order.

}  // namespace
}  // namespace trpc::http::e2e
