// trpc codec micro-benchmarks: the helloworld echo with a 10-byte message (the request of
// docs/protocol.md's worked example, with msg "0123456789"), through the codecs alone: no
// sockets, one thread. Bytes are counted on the wire (request + response frames).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "examples/helloworld/helloworld.pb.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/codec/trpc/detail/trpc_codec.h"

namespace trpc {
namespace {

using test::helloworld::HelloReply;
using test::helloworld::HelloRequest;

constexpr char kMsg[] = "0123456789";
constexpr size_t kMaxFrame = 10'000'000;

// What a client proxy fills in for each call.
RpcRequest MakeRequest(uint32_t request_id) {
  RpcRequest req;
  req.request_id = request_id;
  req.timeout_ms = 1000;
  req.callee = "trpc.test.helloworld.Greeter";
  req.func = "/trpc.test.helloworld.Greeter/SayHello";
  return req;
}

// The header shapes of the *Header benchmarks (their argument).
enum HeaderShape : int64_t {
  kEchoHeader = 0,  // MakeRequest(): request_id, timeout, callee, func
  kFullHeader = 1,  // also caller, message_type and two trans_info entries, as a traced call sends
};

RpcRequest MakeShapedRequest(int64_t shape) {
  RpcRequest req = MakeRequest(1);
  if (shape == kFullHeader) {
    req.caller = "trpc.test.helloworld.Client";
    req.message_type = 0x02;
    req.trans_info = {{"trpc-env", "test"}, {"trpc-trace-id", "4bf92f3577b34da6a3ce929d0e0e4736"}};
  }
  return req;
}

// What the server context fills in from the request.
RpcResponse MakeResponse(const RpcRequest& req) {
  RpcResponse rsp;
  rsp.version = req.version;
  rsp.call_type = req.call_type;
  rsp.request_id = req.request_id;
  rsp.message_type = req.message_type;
  rsp.content_type = req.content_type;
  rsp.content_encoding = req.content_encoding;
  rsp.trans_info = req.trans_info;  // the server passes the request's trans_info back
  return rsp;
}

bool ParseBody(const ChainBuffer& body, google::protobuf::MessageLite* msg) {
  if (body.SpanCount() <= 1) {
    std::string_view s = body.FirstSpan();
    return msg->ParseFromArray(s.data(), static_cast<int>(s.size()));
  }
  ChainBufferInputStream in(&body);
  return msg->ParseFromZeroCopyStream(&in);
}

// Encoded request and response frames of the echo, for the decode-only benchmarks.
struct EchoFrames {
  ChainBuffer request;
  ChainBuffer response;
};

EchoFrames EncodeEcho() {
  TrpcClientCodec client;
  TrpcServerCodec server;
  EchoFrames f;
  HelloRequest req_msg;
  req_msg.set_msg(kMsg);
  RpcRequest req = MakeRequest(1);
  client.EncodeRequest(&req, &req_msg, &f.request);
  HelloReply rsp_msg;
  rsp_msg.set_msg(kMsg);
  RpcResponse rsp = MakeResponse(req);
  server.EncodeResponse(&rsp, &rsp_msg, &f.response);
  return f;
}

// The whole echo: client encodes the request -> server splits, decodes and parses it, encodes
// the reply -> client splits, peeks the request id, decodes and parses the reply.
void BM_EchoRoundTrip(benchmark::State& state) {
  TrpcClientCodec client;
  TrpcServerCodec server;
  HelloRequest req_msg;
  req_msg.set_msg(kMsg);
  std::vector<ChainBuffer> frames;
  std::string err;
  uint32_t next_id = 0;
  size_t wire_bytes = 0;
  for (auto _ : state) {
    RpcRequest req = MakeRequest(++next_id);
    ChainBuffer wire;
    client.EncodeRequest(&req, &req_msg, &wire);
    wire_bytes = wire.size();

    frames.clear();
    server.Split(&wire, &frames, kMaxFrame, &err);
    RpcRequest got_req;
    if (frames.size() != 1 || !server.DecodeRequest(std::move(frames[0]), &got_req, &err)) {
      state.SkipWithError("server decode failed");
      break;
    }
    HelloRequest in_msg;
    ParseBody(got_req.body, &in_msg);
    HelloReply out_msg;
    out_msg.set_msg(in_msg.msg());
    RpcResponse rsp = MakeResponse(got_req);
    ChainBuffer rsp_wire;
    server.EncodeResponse(&rsp, &out_msg, &rsp_wire);
    wire_bytes += rsp_wire.size();

    frames.clear();
    client.Split(&rsp_wire, &frames, kMaxFrame, &err);
    uint32_t id = 0;
    RpcResponse got_rsp;
    if (frames.size() != 1 || !client.PeekResponseId(frames[0], &id) || id != next_id ||
        !client.DecodeResponse(std::move(frames[0]), &got_rsp, &err)) {
      state.SkipWithError("client decode failed");
      break;
    }
    HelloReply reply;
    ParseBody(got_rsp.body, &reply);
    benchmark::DoNotOptimize(reply.msg().data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * wire_bytes));
  state.SetLabel("1 item = request + response");
}
BENCHMARK(BM_EchoRoundTrip);

// Client side, encode only: header message built and serialized, HelloRequest serialized.
void BM_EncodeRequest(benchmark::State& state) {
  TrpcClientCodec client;
  HelloRequest msg;
  msg.set_msg(kMsg);
  uint32_t next_id = 0;
  for (auto _ : state) {
    RpcRequest req = MakeRequest(++next_id);
    ChainBuffer wire;
    client.EncodeRequest(&req, &msg, &wire);
    benchmark::DoNotOptimize(wire.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeRequest);

// Server side, encode only.
void BM_EncodeResponse(benchmark::State& state) {
  TrpcServerCodec server;
  HelloReply msg;
  msg.set_msg(kMsg);
  RpcRequest req = MakeRequest(1);
  for (auto _ : state) {
    RpcResponse rsp = MakeResponse(req);
    ChainBuffer wire;
    server.EncodeResponse(&rsp, &msg, &wire);
    benchmark::DoNotOptimize(wire.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeResponse);

// Server side, split + decode only (the body stays bytes; no HelloRequest parse).
void BM_SplitDecodeRequest(benchmark::State& state) {
  TrpcServerCodec server;
  EchoFrames f = EncodeEcho();
  std::vector<ChainBuffer> frames;
  std::string err;
  for (auto _ : state) {
    ChainBuffer in = f.request.Clone();  // shares the bytes: no copy
    frames.clear();
    server.Split(&in, &frames, kMaxFrame, &err);
    RpcRequest req;
    if (!server.DecodeRequest(std::move(frames[0]), &req, &err)) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(req.body.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.request.size()));
}
BENCHMARK(BM_SplitDecodeRequest);

// Client side, split + peek the request id + decode only.
void BM_SplitDecodeResponse(benchmark::State& state) {
  TrpcClientCodec client;
  EchoFrames f = EncodeEcho();
  std::vector<ChainBuffer> frames;
  std::string err;
  for (auto _ : state) {
    ChainBuffer in = f.response.Clone();
    frames.clear();
    client.Split(&in, &frames, kMaxFrame, &err);
    uint32_t id = 0;
    RpcResponse rsp;
    if (!client.PeekResponseId(frames[0], &id) ||
        !client.DecodeResponse(std::move(frames[0]), &rsp, &err)) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(rsp.body.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * f.response.size()));
}
BENCHMARK(BM_SplitDecodeResponse);

// The four codec functions alone, on the header shape given as the argument (HeaderShape):
// what differs from the echo benchmarks above is that no Split, Peek or body parse is included.
void BM_EncodeRequestHeader(benchmark::State& state) {
  TrpcClientCodec client;
  HelloRequest msg;
  msg.set_msg(kMsg);
  for (auto _ : state) {
    RpcRequest req = MakeShapedRequest(state.range(0));
    ChainBuffer wire;
    client.EncodeRequest(&req, &msg, &wire);
    benchmark::DoNotOptimize(wire.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeRequestHeader)->Arg(kEchoHeader)->Arg(kFullHeader);

void BM_EncodeResponseHeader(benchmark::State& state) {
  TrpcServerCodec server;
  HelloReply msg;
  msg.set_msg(kMsg);
  const RpcRequest req = MakeShapedRequest(state.range(0));
  for (auto _ : state) {
    RpcResponse rsp = MakeResponse(req);
    ChainBuffer wire;
    server.EncodeResponse(&rsp, &msg, &wire);
    benchmark::DoNotOptimize(wire.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_EncodeResponseHeader)->Arg(kEchoHeader)->Arg(kFullHeader);

// Decodes `frame` into a fresh Rpc (RpcRequest / RpcResponse) per iteration with `decode`.
template <typename Rpc, typename Decode>
void DecodeEach(benchmark::State& state, const ChainBuffer& frame, Decode decode) {
  std::string err;
  for (auto _ : state) {
    Rpc rpc;
    if (!decode(frame.Clone(), &rpc, &err)) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(rpc.request_id);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_DecodeRequestHeader(benchmark::State& state) {
  RpcRequest req = MakeShapedRequest(state.range(0));
  ChainBuffer frame;
  TrpcClientCodec().EncodeRequest(&req, nullptr, &frame);
  TrpcServerCodec server;
  DecodeEach<RpcRequest>(state, frame, [&server](ChainBuffer&& f, RpcRequest* r, std::string* e) {
    return server.DecodeRequest(std::move(f), r, e);
  });
}
BENCHMARK(BM_DecodeRequestHeader)->Arg(kEchoHeader)->Arg(kFullHeader);

void BM_DecodeResponseHeader(benchmark::State& state) {
  RpcResponse rsp = MakeResponse(MakeShapedRequest(state.range(0)));
  ChainBuffer frame;
  TrpcServerCodec().EncodeResponse(&rsp, nullptr, &frame);
  TrpcClientCodec client;
  DecodeEach<RpcResponse>(state, frame, [&client](ChainBuffer&& f, RpcResponse* r, std::string* e) {
    return client.DecodeResponse(std::move(f), r, e);
  });
}
BENCHMARK(BM_DecodeResponseHeader)->Arg(kEchoHeader)->Arg(kFullHeader);

// The client's per-frame dispatch step alone.
void BM_PeekResponseId(benchmark::State& state) {
  TrpcClientCodec client;
  EchoFrames f = EncodeEcho();
  for (auto _ : state) {
    uint32_t id = 0;
    client.PeekResponseId(f.response, &id);
    benchmark::DoNotOptimize(id);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_PeekResponseId);

}  // namespace
}  // namespace trpc

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  trpc::EchoFrames f = trpc::EncodeEcho();
  benchmark::AddCustomContext("echo_msg_bytes", std::to_string(sizeof(trpc::kMsg) - 1));
  benchmark::AddCustomContext("request_frame_bytes", std::to_string(f.request.size()));
  benchmark::AddCustomContext("response_frame_bytes", std::to_string(f.response.size()));
#ifdef NDEBUG
  benchmark::AddCustomContext("trpc_build", "NDEBUG");
#else
  benchmark::AddCustomContext("trpc_build", "debug (asserts on): numbers not representative");
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
