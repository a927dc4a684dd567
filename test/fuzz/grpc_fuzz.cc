// Fuzz target: arbitrary bytes from a peer, fed to the gRPC codec's HTTP/2 session (nghttp2
// below, our gRPC layer above) the way a connection feeds them (in pieces), on the server side
// and, after a request went out, on the client side. Requests that come out are decoded and
// answered (OK and error replies, through the session's encoder), so the reply path runs on
// whatever state the input left. It must only ever produce frames, replies or a clean error:
// never a crash, an assert or a sanitizer report.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trpc/codec/grpc/detail/grpc_codec.h"

namespace {

void Answer(trpc::grpc::GrpcServerCodec& codec, trpc::FrameCodecState* state,
            trpc::ChainBuffer&& frame, bool ok) {
  trpc::RpcRequest req;
  std::string err;
  if (!codec.DecodeRequestWithState(std::move(frame), state, &req, &err)) return;
  trpc::RpcResponse rsp;
  rsp.request_id = req.request_id;
  rsp.request_protocol = req.protocol.get();
  rsp.trans_info = req.trans_info;  // metadata back, "-bin" keys and all
  if (ok) {
    rsp.body = std::move(req.body);
  } else {
    rsp.ret = 22;
    rsp.error_msg = "overloaded \xff\n";
  }
  trpc::ChainBuffer record, wire;
  if (codec.EncodeResponse(&rsp, nullptr, &record)) {
    state->session()->EncodeOutput(std::move(record), &wire);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static trpc::grpc::GrpcServerCodec server;
  static trpc::grpc::GrpcClientCodec client;
  // The first byte picks the read size, so frames get split at many different offsets; the rest
  // is the peer's bytes.
  if (size == 0) return 0;
  size_t chunk = 1 + data[0] % 64;
  // Bit 6 puts the server connection over a small share of the buffer bound (new streams are
  // refused).
  const size_t allowance = (data[0] & 0x40) != 0 ? 8192 : SIZE_MAX;
  ++data;
  --size;
  // Server side: the input is what a client sent.
  {
    std::unique_ptr<trpc::FrameCodecState> state = server.NewConnectionState();
    state->session()->held_allowance = allowance;
    trpc::ChainBuffer in;
    std::string err;
    bool failed = false;
    int answered = 0;
    for (size_t off = 0; off < size && !failed; off += chunk) {
      in.Append(data + off, std::min(chunk, size - off));
      std::vector<trpc::ChainBuffer> frames;
      failed = server.SplitWithState(&in, &frames, 1 << 20, &err, state.get()) ==
               trpc::SplitResult::kError;
      for (auto& f : frames) Answer(server, state.get(), std::move(f), ++answered % 2 == 1);
      state->immediate.Clear();
      // What the session says it holds is a count of bytes held: it never goes below zero.
      if (state->session()->held_bytes > (size_t{1} << 40)) __builtin_trap();
    }
  }
  // Client side: one call in flight (stream 1), then the input is what the server sent.
  {
    std::unique_ptr<trpc::FrameCodecState> state = client.NewConnectionState();
    trpc::RpcRequest req;
    req.request_id = 7;
    req.func = "/pkg.Svc/Method";
    req.authority = "127.0.0.1:1";
    req.timeout_ms = 100;
    req.trans_info["k-bin"] = std::string("\0\1", 2);
    req.body.Append("hello");
    trpc::ChainBuffer record, wire;
    if (client.EncodeRequest(&req, nullptr, &record)) {
      state->session()->EncodeOutput(std::move(record), &wire);
    }
    trpc::ChainBuffer in;
    std::string err;
    bool failed = false;
    for (size_t off = 0; off < size && !failed; off += chunk) {
      in.Append(data + off, std::min(chunk, size - off));
      std::vector<trpc::ChainBuffer> frames;
      failed = client.SplitWithState(&in, &frames, 1 << 20, &err, state.get()) ==
               trpc::SplitResult::kError;
      for (auto& f : frames) {
        uint32_t id = 0;
        client.PeekResponseId(f, &id);
        trpc::RpcResponse rsp;
        client.DecodeResponse(std::move(f), &rsp, &err);
      }
      state->immediate.Clear();
    }
    trpc::ChainBuffer cancel;
    state->session()->CancelCall(7, &cancel);
  }
  return 0;
}
