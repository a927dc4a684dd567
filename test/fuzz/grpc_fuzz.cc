// Fuzz target: arbitrary bytes from a peer, fed to the gRPC codec's HTTP/2 session (nghttp2
// below, our gRPC layer above) the way a connection feeds them (in pieces), on the server side
// and, after a request went out, on the client side. Requests that come out are decoded and
// answered (OK and error replies, through the session's encoder), so the reply path runs on
// whatever state the input left; streaming calls (the paths the server knows as streaming) are
// served too: accepted or refused, messages echoed and consumed, ends answered. It must only ever
// produce frames, replies or a clean error: never a crash, an assert or a sanitizer report.

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

// Serves streaming calls as a server would: every other open accepted, each message echoed and
// consumed, the client's end answered, every third stream finished early with an error.
class StreamHost final : public trpc::ServerStreamHost {
 public:
  explicit StreamHost(trpc::ServerStreamSession* session) : session_(session) {}
  void OnStreamOpen(uint32_t id, trpc::RpcRequest&& head, trpc::ChainBuffer* out) override {
    (void)head;
    if (++opens_ % 2 == 0) {
      session_->Refuse(id, trpc::Status(22, "refused"), out);
    } else {
      session_->Accept(id, out);
    }
  }
  void OnStreamMessage(uint32_t id, trpc::ChainBuffer&& msg) override {
    trpc::ChainBuffer out;
    const size_t n = msg.size();
    std::string err;
    if (session_->CanSend(id)) session_->SendMessage(id, std::move(msg), &out, &err);
    session_->Consumed(id, n, &out);
    if (++messages_ % 3 == 0) session_->Finish(id, trpc::Status(0, 5, "no"), &out);
  }
  void OnStreamRemoteEnd(uint32_t id, const trpc::Status& status) override {
    trpc::ChainBuffer out;
    if (status.OK()) session_->Finish(id, trpc::kSuccStatus, &out);
  }
  void OnStreamWritable(uint32_t id) override { (void)id; }

 private:
  trpc::ServerStreamSession* session_;
  int opens_ = 0;
  int messages_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The server knows RequestHeaders()-style paths as streaming methods (the corpus's requests
  // use them), so its streams run both ways: unary calls and streaming calls.
  static std::shared_ptr<trpc::ServerCodec> with_streams =
      trpc::grpc::GrpcServerCodec().WithStreamMethods(
          {"/trpc.test.helloworld.Greeter/SayHello", "/pkg.Svc/Method", "/a"}, nullptr);
  static trpc::grpc::GrpcServerCodec& server =
      static_cast<trpc::grpc::GrpcServerCodec&>(*with_streams);
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
    std::unique_ptr<trpc::ServerStreamSession> streams = server.NewStreamSession(100, 65535);
    StreamHost host(streams.get());
    trpc::ChainBuffer in;
    std::string err;
    bool failed = false;
    int answered = 0;
    for (size_t off = 0; off < size && !failed; off += chunk) {
      in.Append(data + off, std::min(chunk, size - off));
      std::vector<trpc::ChainBuffer> frames;
      failed = server.SplitWithState(&in, &frames, 1 << 20, &err, state.get()) ==
               trpc::SplitResult::kError;
      for (auto& f : frames) {
        if (f.meta() != nullptr && f.meta()->stream_event) {  // (IsStreamFrame: transport's)
          trpc::ChainBuffer out;
          if (!streams->OnFrame(std::move(f), &host, &out, &err)) __builtin_trap();
          continue;
        }
        Answer(server, state.get(), std::move(f), ++answered % 2 == 1);
      }
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
