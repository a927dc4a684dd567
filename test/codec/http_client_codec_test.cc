// The HTTP/1.1 client codec: the request forms (REST mapping of an RPC, plain requests), the
// split of responses with per-connection state (FIFO order, HEAD, Connection: close, the
// server's close, bytes nobody asked for), the mapping of statuses and JSON error bodies back
// to framework codes, and the JSON error body reader.
#include "trpc/codec/http/detail/http_client_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/helloworld/helloworld.pb.h"
#include "trpc/base/status.h"
#include "trpc/client/http/http_client.h"
#include "trpc/codec/http/detail/error_body.h"

namespace trpc::http {
namespace {

using test::helloworld::HelloReply;
using test::helloworld::HelloRequest;

ChainBuffer Buf(std::string_view s) {
  ChainBuffer b;
  b.Append(s);
  return b;
}

std::string Encode(HttpClientCodec& codec, RpcRequest* req,
                   const google::protobuf::MessageLite* body = nullptr) {
  ChainBuffer out;
  EXPECT_TRUE(codec.EncodeRequest(req, body, &out));
  return out.ToString();
}

TEST(HttpClientCodecTest, IsRegisteredAndAnswersInOrder) {
  auto codec = CodecRegistry::Instance().GetClient("http");
  ASSERT_NE(codec, nullptr);
  EXPECT_EQ(codec->Name(), "http");
  EXPECT_TRUE(codec->FifoResponses());
  EXPECT_NE(codec->NewConnectionState(), nullptr);
}

TEST(HttpClientCodecTest, RpcBecomesThePostOfTheRestMapping) {
  HttpClientCodec codec;
  HelloRequest msg;
  msg.set_msg("world");
  RpcRequest req;
  req.func = "/trpc.test.helloworld.Greeter/SayHello";
  req.callee = "trpc.test.helloworld.Greeter";
  req.authority = "127.0.0.1:8080";
  req.trans_info["not"] = "sent";
  const std::string body = msg.SerializeAsString();
  EXPECT_EQ(Encode(codec, &req, &msg),
            "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\n"
            "Host: 127.0.0.1:8080\r\n"
            "Content-Type: application/x-protobuf\r\n"
            "Content-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
  // Without an authority, the callee names the host; a JSON request says so.
  req.authority = {};
  req.content_type = kContentTypeJson;
  EXPECT_EQ(Encode(codec, &req, &msg),
            "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\n"
            "Host: trpc.test.helloworld.Greeter\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 15\r\n\r\n{\"msg\":\"world\"}");
  // Raw body bytes when there is no message.
  RpcRequest raw;
  raw.func = "/a.B/C";
  raw.body.Append(std::string_view("xyz"));
  EXPECT_EQ(Encode(codec, &raw),
            "POST /a.B/C HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-protobuf\r\n"
            "Content-Length: 3\r\n\r\nxyz");
}

TEST(HttpClientCodecTest, RefusesWhatWouldSplitTheRequest) {
  HttpClientCodec codec;
  ChainBuffer out;
  for (std::string func :
       std::vector<std::string>{"", "no-slash", "/a b", "/a\r\nX: y", std::string("/a\0b", 4)}) {
    RpcRequest req;
    req.func = func;
    EXPECT_FALSE(codec.EncodeRequest(&req, nullptr, &out)) << func;
  }
  RpcRequest req;
  req.func = "/a.B/C";
  req.authority = "evil\r\nX: y";
  EXPECT_FALSE(codec.EncodeRequest(&req, nullptr, &out));
  auto plain = std::make_unique<HttpClientRequest>();
  plain->headers = {{"X-Ok", "fine"}, {"X-Bad", "a\r\nb"}};
  req.authority = {};
  req.protocol = std::move(plain);
  EXPECT_FALSE(codec.EncodeRequest(&req, nullptr, &out));
  auto bad_name = std::make_unique<HttpClientRequest>();
  bad_name->headers = {{"Bad Name", "v"}};
  req.protocol = std::move(bad_name);
  EXPECT_FALSE(codec.EncodeRequest(&req, nullptr, &out));
  EXPECT_TRUE(out.empty());
}

TEST(HttpClientCodecTest, PlainRequests) {
  HttpClientCodec codec;
  RpcRequest get;
  get.authority = "10.0.0.1:80";
  auto g = std::make_unique<HttpClientRequest>();
  g->target = "/users/7?x=1";
  g->headers = {{"Accept", "application/json"}, {"Content-Length", "99"}, {"Connection", "x"}};
  get.protocol = std::move(g);
  EXPECT_EQ(Encode(codec, &get),
            "GET /users/7?x=1 HTTP/1.1\r\nHost: 10.0.0.1:80\r\nAccept: application/json\r\n\r\n");

  RpcRequest post;
  auto p = std::make_unique<HttpClientRequest>();
  p->method = HttpMethod::kPost;
  p->target = "/upload";
  p->headers = {{"host", "example.com"}};
  post.protocol = std::move(p);
  // An empty POST still says its length; the caller's Host replaces ours.
  EXPECT_EQ(Encode(codec, &post),
            "POST /upload HTTP/1.1\r\nhost: example.com\r\nContent-Length: 0\r\n\r\n");
  post.body.Append(std::string_view("data"));
  EXPECT_EQ(Encode(codec, &post),
            "POST /upload HTTP/1.1\r\nhost: example.com\r\nContent-Length: 4\r\n\r\ndata");
}

// Feeds responses to a connection's split the way the transport does.
class SplitTest : public ::testing::Test {
 protected:
  void Sent(std::string_view request) { codec_.OnRequestSent(state_.get(), Buf(request)); }
  SplitResult Feed(std::string_view bytes, bool eof = false) {
    in_.Append(bytes);
    if (eof) state_->OnInputEnded();
    err_.clear();
    return codec_.SplitWithState(&in_, &frames_, 10'000'000, &err_, state_.get());
  }
  std::vector<std::string> Frames() {
    std::vector<std::string> out;
    for (auto& f : frames_) out.push_back(f.ToString());
    return out;
  }

  HttpClientCodec codec_;
  std::unique_ptr<FrameCodecState> state_ = codec_.NewConnectionState();
  ChainBuffer in_;
  std::vector<ChainBuffer> frames_;
  std::string err_;
};

TEST_F(SplitTest, ResponsesInOrderWithHeadAndInterim) {
  Sent("GET / HTTP/1.1\r\n\r\n");
  Sent("HEAD / HTTP/1.1\r\n\r\n");
  Sent("POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  const std::string a = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
  const std::string b = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n";  // HEAD: no body
  const std::string c_head = "HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string stream =
      a + b + "HTTP/1.1 100 Continue\r\n\r\n" + c_head + "2\r\nok\r\n0\r\n\r\n";
  // Byte by byte: nothing is cut before it is complete.
  for (char ch : stream) ASSERT_EQ(Feed(std::string_view(&ch, 1)), SplitResult::kOk) << err_;
  // The chunked one is handed up de-chunked, after its head; the interim one is dropped.
  EXPECT_EQ(Frames(), (std::vector<std::string>{a, b, c_head + "ok"}));
  EXPECT_FALSE(state_->closing);
  EXPECT_TRUE(in_.empty());
  // A response to no request.
  EXPECT_EQ(Feed(a), SplitResult::kError);
  EXPECT_EQ(err_, "the server sent bytes that answer no request");
}

TEST_F(SplitTest, ConnectionCloseEndsTheInput) {
  Sent("GET / HTTP/1.1\r\n\r\n");
  Sent("GET / HTTP/1.1\r\n\r\n");
  const std::string last = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
  ASSERT_EQ(Feed(last + "HTTP/1.1 200 OK\r\n"), SplitResult::kOk) << err_;
  EXPECT_EQ(Frames(), (std::vector<std::string>{last}));
  EXPECT_TRUE(state_->closing);
  EXPECT_TRUE(in_.empty());  // what followed is not read
}

TEST_F(SplitTest, BodyUntilTheServerCloses) {
  Sent("GET / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(Feed("HTTP/1.0 200 OK\r\n\r\nsome "), SplitResult::kOk);
  ASSERT_EQ(Feed("text"), SplitResult::kOk);
  EXPECT_TRUE(frames_.empty());
  ASSERT_EQ(Feed("", /*eof=*/true), SplitResult::kOk) << err_;
  EXPECT_EQ(Frames(), (std::vector<std::string>{"HTTP/1.0 200 OK\r\n\r\nsome text"}));
  EXPECT_TRUE(state_->closing);
}

TEST_F(SplitTest, MalformedAndOversizedResponsesAreErrors) {
  Sent("GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(Feed("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
            SplitResult::kError);
  EXPECT_EQ(err_, "bad HTTP response: duplicate Content-Length with different values");

  // The transport's frame limit bounds the body.
  HttpClientCodec codec;
  auto state = codec.NewConnectionState();
  codec.OnRequestSent(state.get(), Buf("GET / HTTP/1.1\r\n\r\n"));
  ChainBuffer in = Buf("HTTP/1.1 200 OK\r\nContent-Length: 101\r\n\r\n");
  std::vector<ChainBuffer> frames;
  std::string err;
  EXPECT_EQ(codec.SplitWithState(&in, &frames, 100, &err, state.get()), SplitResult::kError);
  EXPECT_EQ(err, "bad HTTP response: Content-Length exceeds the body limit");
  // Cut short by the close.
  codec.OnRequestSent(state.get(), Buf("GET / HTTP/1.1\r\n\r\n"));
  HttpClientCodec fresh;
  auto st2 = fresh.NewConnectionState();
  fresh.OnRequestSent(st2.get(), Buf("GET / HTTP/1.1\r\n\r\n"));
  ChainBuffer half = Buf("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  st2->OnInputEnded();
  EXPECT_EQ(fresh.SplitWithState(&half, &frames, 100, &err, st2.get()), SplitResult::kError);
  EXPECT_EQ(err, "bad HTTP response: connection closed before the response was complete");
}

RpcResponse Decode(std::string_view frame, bool expect_ok = true) {
  HttpClientCodec codec;
  RpcResponse rsp;
  std::string err;
  EXPECT_EQ(codec.DecodeResponse(Buf(frame), &rsp, &err), expect_ok) << err;
  return rsp;
}

TEST(HttpClientDecodeTest, SuccessCarriesTheBody) {
  HelloReply reply;
  reply.set_msg("Hello, world");
  const std::string pb = reply.SerializeAsString();
  RpcResponse ok = Decode(
      "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
      "Content-Length: " +
      std::to_string(pb.size()) + "\r\n\r\n" + pb);
  EXPECT_EQ(ok.ret, 0);
  EXPECT_EQ(ok.func_ret, 0);
  EXPECT_EQ(ok.content_type, kContentTypeProtobuf);
  EXPECT_EQ(ok.body.ToString(), pb);
  RpcResponse json = Decode(
      "HTTP/1.1 200 OK\r\ncontent-type: Application/JSON; charset=utf-8\r\n"
      "Content-Length: 2\r\n\r\n{}");
  EXPECT_EQ(json.content_type, kContentTypeJson);
  EXPECT_EQ(json.body.ToString(), "{}");
  EXPECT_EQ(Decode("HTTP/1.1 204 No Content\r\n\r\n").ret, 0);
  Decode("garbage", /*expect_ok=*/false);
}

TEST(HttpClientDecodeTest, ErrorsMapBackToFrameworkCodes) {
  auto json = [](int status, std::string_view body) {
    return "HTTP/1.1 " + std::to_string(status) +
           " X\r\nContent-Type: application/json\r\n"
           "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
  };
  // The server's codes win over the status.
  RpcResponse handler =
      Decode(json(500, R"({"code":0,"func_code":7,"message":"the handler said no"})"));
  EXPECT_EQ(handler.ret, 0);
  EXPECT_EQ(handler.func_ret, 7);
  EXPECT_EQ(handler.error_msg, "the handler said no");
  RpcResponse timeout = Decode(json(504, R"({"code":21,"func_code":0,"message":"timeout"})"));
  EXPECT_EQ(timeout.ret, kServerTimeoutErr);
  RpcResponse escaped =
      Decode(json(404, R"({"code":12,"func_code":0,"message":"no \"func\" \u00e9\n"})"));
  EXPECT_EQ(escaped.ret, kServerNoFuncErr);
  EXPECT_EQ(escaped.error_msg, "no \"func\" \xc3\xa9\n");
  // Codes 0/0 (the router's own answers) or no JSON at all: the status decides.
  RpcResponse route = Decode(json(404, R"({"code":0,"func_code":0,"message":"no route"})"));
  EXPECT_EQ(route.ret, kServerNoFuncErr);
  EXPECT_EQ(route.error_msg, "404 X: no route");
  RpcResponse plain = Decode("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy");
  EXPECT_EQ(plain.ret, kServerOverloadErr);
  EXPECT_EQ(plain.error_msg, "503 Service Unavailable");
  EXPECT_EQ(Decode("HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n").ret,
            kUnknownErr);
}

TEST(HttpClientDecodeTest, StatusTable) {
  const std::vector<std::pair<int, int32_t>> table = {
      {200, 0},  {201, 0},   {299, 0},   {400, 1},   {411, 1},   {413, 1},  {414, 1},
      {415, 1},  {422, 1},   {431, 1},   {401, 41},  {403, 41},  {404, 12}, {405, 12},
      {408, 21}, {504, 21},  {429, 23},  {503, 22},  {500, 31},  {501, 31}, {502, 31},
      {599, 31}, {301, 999}, {304, 999}, {409, 999}, {418, 999}, {600, 999}};
  for (auto [status, code] : table) EXPECT_EQ(RetCodeOfHttpStatus(status), code) << status;
}

TEST(HttpClientDecodeTest, PlainResponse) {
  HttpClientResponse r;
  std::string err;
  ChainBuffer frame =
      Buf("HTTP/1.1 200 OK\r\nX-A: 1\r\ncontent-type: text/plain\r\n"
          "Content-Length: 5\r\n\r\n");
  frame.Append(Buf("hello"));
  ASSERT_TRUE(DecodeHttpResponse(std::move(frame), &r, &err)) << err;
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.reason, "OK");
  EXPECT_EQ(r.version_minor, 1);
  ASSERT_EQ(r.headers.size(), 3u);
  ASSERT_NE(r.Header("Content-Type"), nullptr);
  EXPECT_EQ(*r.Header("Content-Type"), "text/plain");
  EXPECT_EQ(r.Header("X-B"), nullptr);
  EXPECT_EQ(r.body.ToString(), "hello");
  EXPECT_FALSE(DecodeHttpResponse(Buf("nonsense\r\n\r\n"), &r, &err));
}

TEST(ErrorBodyTest, ReadsTheServersShapeAndSkipsTheRest) {
  detail::ErrorBody e;
  ASSERT_TRUE(detail::ParseErrorBody(R"({"code":12,"func_code":-3,"message":"m"})", &e));
  EXPECT_EQ(e.code, 12);
  EXPECT_EQ(e.func_code, -3);
  EXPECT_EQ(e.message, "m");
  EXPECT_TRUE(e.has_code);
  ASSERT_TRUE(detail::ParseErrorBody(
      " {\"extra\": [1, 2.5e3, {\"a\": null}, true, \"s\\\\\"], \"message\": \"\\ud83d\\ude00\","
      " \"code\" : 2147483647 } ",
      &e));
  EXPECT_EQ(e.code, 2147483647);
  EXPECT_EQ(e.func_code, 0);
  EXPECT_EQ(e.message, "\xf0\x9f\x98\x80");
  ASSERT_TRUE(detail::ParseErrorBody("{}", &e));
  EXPECT_FALSE(e.has_code);
  ASSERT_TRUE(detail::ParseErrorBody(R"({"code":-2147483648})", &e));
  EXPECT_EQ(e.code, -2147483648);
}

TEST(ErrorBodyTest, RefusesAnythingElse) {
  for (std::string_view bad : {
           "",
           "null",
           "[]",
           "{",
           "{\"code\":1",
           "{\"code\":1,}",
           "{\"code\":\"1\"}",
           "{\"code\":1.5}",
           "{\"code\":2147483648}",
           "{\"code\":1e2}",
           "{\"message\":3}",
           "{\"code\":1} x",
           "{\"message\":\"\\x\"}",
           "{\"message\":\"\\ud83d\"}",
           "{\"message\":\"a\nb\"}",
           "{code:1}",
           "{\"code\":01}",
           "{\"a\":tru}",
           "{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
       }) {
    detail::ErrorBody e;
    EXPECT_FALSE(detail::ParseErrorBody(bad, &e)) << bad;
  }
}

}  // namespace
}  // namespace trpc::http
