// End-to-end tests of the HTTP/1.1 plug-in over loopback (http_e2e_fixture.h): pipelining split
// at every byte and its reply order, deferred replies, keep-alive, 100-continue, limits,
// malformed and smuggling requests, slowloris, a bad protocol option at start, and curl.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "test/e2e/http_e2e_fixture.h"

namespace trpc::http::e2e {
namespace {

TEST_F(HttpE2eTest, PipelinedRequestsSplitAtEveryOffset) {
  const std::string stream =
      "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nbody\r\n0\r\n\r\n"
      "GET /users/1/posts/2 HTTP/1.1\r\nHost: t\r\n\r\n";
  RawClient c(addr_);
  ASSERT_TRUE(c.ok());
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    ASSERT_TRUE(c.Send(stream.substr(0, cut)));
    if (cut % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_TRUE(c.Send(stream.substr(cut)));
    Response a, b, d;
    ASSERT_TRUE(c.Read(&a) && c.Read(&b) && c.Read(&d)) << "split at " << cut;
    ASSERT_EQ(a.body, "Hello, World!") << cut;
    ASSERT_EQ(b.body, "body") << cut;
    ASSERT_EQ(d.body, "1/2?") << cut;
  }
}

// A slow request first, fast ones after it, all in one write: the fast replies are held back
// until the slow one has gone out (fiber model: they finish first).
TEST_F(HttpE2eTest, PipelinedRepliesKeepRequestOrderBehindASlowHandler) {
  RawClient c(addr_);
  std::string batch = "GET /sleep/150 HTTP/1.1\r\nHost: t\r\n\r\n";
  for (int i = 0; i < 8; ++i) batch += "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_TRUE(c.Send(batch));
  Response r;
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.body, "slept 150");
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.Read(&r));
    EXPECT_EQ(r.body, "Hello, World!");
  }
}

// Fiber model: the requests of one read start in one fiber, but a request that parks hands
// the rest over at once, so eight pipelined sleeps overlap instead of queueing (merge: they
// run one after another on the worker, by design).
TEST_F(HttpE2eTest, PipelinedSleepsOverlapInTheFiberModel) {
  if (!FiberModel()) GTEST_SKIP() << "the merge model runs a connection's requests in turn";
  RawClient c(addr_);
  std::string batch;
  for (int i = 0; i < 8; ++i) batch += "GET /sleep/100 HTTP/1.1\r\nHost: t\r\n\r\n";
  auto begin = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.Send(batch));
  Response r;
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(c.Read(&r));
    EXPECT_EQ(r.body, "slept 100");
  }
  auto took = std::chrono::steady_clock::now() - begin;
  // In turn they would take 800 ms (about 500 with a sibling worker taking some); overlapped,
  // one sleep (slack for sanitizer builds).
  EXPECT_LT(took, std::chrono::milliseconds(350));
}

// A handler that takes the reply over (SetResponse(false)) answers later from another thread;
// a pipelined request behind it still gets its reply second.
TEST_F(HttpE2eTest, DeferredReplyFromAnotherThread) {
  Response r = RoundTrip("GET /later HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_EQ(r.status, 202);
  EXPECT_EQ(r.body, "later");
  RawClient c(addr_);
  ASSERT_TRUE(c.Send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kGet)));
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.body, "later");
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.body, "{}");
}

TEST_F(HttpE2eTest, KeepAliveRules) {
  {  // HTTP/1.0 without keep-alive: answer, then close.
    RawClient c(addr_);
    c.Send("GET / HTTP/1.0\r\n\r\n");
    Response r;
    ASSERT_TRUE(c.Read(&r));
    EXPECT_TRUE(r.Has("Connection: close"));
    EXPECT_TRUE(c.ReadsEof());
  }
  {  // HTTP/1.0 with keep-alive: stays open, says so.
    RawClient c(addr_);
    Response r;
    for (int i = 0; i < 3; ++i) {
      c.Send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
      ASSERT_TRUE(c.Read(&r));
      EXPECT_TRUE(r.Has("Connection: keep-alive"));
    }
  }
  {  // Connection: close in a pipeline: its reply is the last; what follows is ignored.
    RawClient c(addr_);
    c.Send(std::string(kGet) + "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" +
           kGet);
    Response a, b;
    ASSERT_TRUE(c.Read(&a));
    ASSERT_TRUE(c.Read(&b));
    EXPECT_EQ(b.body, "Hello, World!");
    EXPECT_TRUE(b.Has("Connection: close"));
    EXPECT_TRUE(c.ReadsEof());
  }
}

TEST_F(HttpE2eTest, ExpectContinueGetsAnInterimAnswer) {
  RawClient c(addr_);
  ASSERT_TRUE(
      c.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n"
             "Expect: 100-continue\r\n\r\n"));
  Response r;
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.status, 100);
  ASSERT_TRUE(c.Send("abc"));
  ASSERT_TRUE(c.Read(&r));
  EXPECT_EQ(r.status, 201);
  EXPECT_EQ(r.body, "abc");
}

TEST_F(HttpE2eTest, LimitsGetTheirStatus) {
  ExpectRefusedAndClosed("GET /" + std::string(1100, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", 414);
  ExpectRefusedAndClosed(
      "GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(5000, 'b') + "\r\n\r\n", 431);
  std::string many = "GET / HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 25; ++i) many += "X-" + std::to_string(i) + ": v\r\n";
  ExpectRefusedAndClosed(many + "\r\n", 431);
  ExpectRefusedAndClosed("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 70000\r\n\r\n", 413);
}

TEST_F(HttpE2eTest, MalformedAndSmugglingRequestsGet400AndClose) {
  const char* bad[] = {
      "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
      "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "GET / HTTP/1.1\nHost: t\n\n",
      "GET / HTTP/1.1\r\nHost : t\r\n\r\n",
      "GET / HTTP/1.1\r\nHost: t\r\n folded\r\n\r\n",
      "GET / HTTP/1.1\r\n\r\n",
      "GARBAGE\r\n\r\n",
  };
  for (const char* req : bad) {
    SCOPED_TRACE(req);
    ExpectRefusedAndClosed(req, 400);
  }
}

// A good request, then garbage, in one write: the good one is answered first.
TEST_F(HttpE2eTest, ErrorAnswerComesAfterEarlierReplies) {
  RawClient c(addr_);
  c.Send("GET /sleep/50 HTTP/1.1\r\nHost: t\r\n\r\nBAD REQUEST\r\n\r\n");
  Response a, b;
  ASSERT_TRUE(c.Read(&a));
  EXPECT_EQ(a.body, "slept 50");
  ASSERT_TRUE(c.Read(&b));
  EXPECT_EQ(b.status, 400);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpE2eTest, SlowlorisGets408AndIsClosed) {
  RawClient c(addr_);
  int64_t start = MonotonicMillis();
  // A byte every 50 ms keeps the connection active but never finishes the head (limit 300 ms).
  std::string head = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: ";
  Response r;
  bool answered = false;
  for (size_t i = 0; i < head.size() + 100 && MonotonicMillis() - start < 5000; ++i) {
    if (!c.Send(i < head.size() ? head.substr(i, 1) : "x")) break;
    if (c.Read(&r, 50)) {
      answered = true;
      break;
    }
  }
  ASSERT_TRUE(answered || c.Read(&r, 2000));
  EXPECT_EQ(r.status, 408);
  EXPECT_LT(MonotonicMillis() - start, 3000);
  EXPECT_TRUE(c.ReadsEof());
}

TEST_F(HttpE2eTest, OtherConnectionsKeepBeingServedWhileOneMisbehaves) {
  RawClient bad(addr_);
  bad.Send("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n");
  RawClient good(addr_);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(good.Send(kGet));
    Response r;
    ASSERT_TRUE(good.Read(&r));
    EXPECT_EQ(r.status, 200);
  }
}

TEST_F(HttpE2eTest, BadProtocolOptionStopsStartWithFileAndLine) {
  const std::string yaml = ModelsYaml() +
                           "server:\n"
                           "  service:\n"
                           "    - name: trpc.test.http.Http\n"
                           "      protocol: http\n"
                           "      ip: 127.0.0.1\n"
                           "      port: 0\n"
                           "      protocol_options:\n"
                           "        max_body_bytes: lots\n";
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(yaml, "bad.yaml", &config, &err)) << err;
  Server server(config.server);
  ASSERT_TRUE(server.RegisterService(kServiceName, std::make_shared<HttpService>()));
  EXPECT_FALSE(server.Start(&err));
  // The offending value is on the last line.
  std::string line = std::to_string(std::count(yaml.begin(), yaml.end(), '\n'));
  EXPECT_NE(err.find("bad.yaml:" + line + ": "), std::string::npos) << err;
  EXPECT_NE(err.find("protocol_options.max_body_bytes: expected an integer"), std::string::npos)
      << err;
}

// Interop: curl (when installed) gets the right answers, with keep-alive across requests.
TEST_F(HttpE2eTest, CurlGetsCorrectAnswers) {
  if (std::system("curl --version > /dev/null 2>&1") != 0)
    TRPC_SKIP_WITHOUT_PEER("curl not installed");
  std::string base = "http://" + addr_.ToString();
  auto run = [](const std::string& c) {
    std::string out;
    FILE* p = ::popen(c.c_str(), "r");
    if (p == nullptr) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    ::pclose(p);
    return out;
  };
  EXPECT_EQ(run("curl -s -S --max-time 10 " + base + "/hello " + base + "/ 2>&1"),
            "Hello, World!{}");
  EXPECT_EQ(run("curl -s -S --max-time 10 '" + base + "/users/9/posts/8?q=z' 2>&1"), "9/8?z");
  EXPECT_EQ(run("curl -s -S --max-time 10 -H 'Content-Type: application/json' -d "
                "'{\"msg\":\"curl\"}' " +
                base + "/trpc.test.helloworld.Greeter/SayHello 2>&1"),
            R"({"msg":"Hello, curl"})");
  EXPECT_EQ(run("curl -s -S --max-time 10 -o /dev/null -w '%{http_code}' " + base + "/nope 2>&1"),
            "404");
  // The router's refusals as curl sees them: the framework code in the JSON body, and a 405's
  // Allow header.
  EXPECT_EQ(run("curl -s -S --max-time 10 " + base + "/nope 2>&1"),
            R"({"code":12,"func_code":0,"message":"no route for this path"})");
  std::string head = run("curl -s -S --max-time 10 -D - -o /dev/null " + base +
                         "/trpc.test.helloworld.Greeter/SayHello 2>&1");
  EXPECT_NE(head.find("HTTP/1.1 405"), std::string::npos) << head;
  EXPECT_NE(head.find("Allow: POST"), std::string::npos) << head;
}

}  // namespace
}  // namespace trpc::http::e2e
