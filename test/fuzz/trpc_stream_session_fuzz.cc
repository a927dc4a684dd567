// Fuzz target: a peer's bytes, cut into frames, fed to trpc's stream sessions (the first byte
// picks which end hears them: even, the server's session, which accepts every open; odd, a client
// session that has opened streams 100-103). Our end reacts as a program would, steered by each
// frame's last byte: reads and returns credit, writes when the window allows, finishes. Nothing
// may crash or assert, a refusal always says why, and no more streams are open than the cap.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "trpc/codec/trpc/detail/frame.h"
#include "trpc/codec/trpc/detail/trpc_stream_session.h"

namespace {

constexpr uint32_t kMaxStreams = 4;
uint8_t g_steer = 0;  // the last byte of the frame being handled

template <typename Session>
void React(Session* s, uint32_t id, trpc::ChainBuffer* out) {
  std::string err;
  if (g_steer & 1) s->Consumed(id, 1 + g_steer * 97, out);
  if ((g_steer & 2) && s->CanSend(id)) {
    trpc::ChainBuffer msg;
    msg.Append(std::string(g_steer * 131, 'm'));
    if (!s->SendMessage(id, std::move(msg), out, &err) && err.empty()) std::abort();
  }
  if (g_steer & 4) s->Finish(id, (g_steer & 8) ? trpc::Status(22, "no") : trpc::kSuccStatus, out);
}

class ServerHost final : public trpc::ServerStreamHost {
 public:
  explicit ServerHost(trpc::detail::TrpcServerStreamSession* s) : s_(s) {}
  void OnStreamOpen(uint32_t id, trpc::RpcRequest&&, trpc::ChainBuffer* out) override {
    if (g_steer & 16) {
      s_->Refuse(id, trpc::Status(12, "refused"), out);
    } else {
      s_->Accept(id, out);
    }
  }
  void OnStreamMessage(uint32_t id, trpc::ChainBuffer&&) override { React(s_, id, &out); }
  void OnStreamRemoteEnd(uint32_t id, const trpc::Status&) override { React(s_, id, &out); }
  void OnStreamWritable(uint32_t id) override { React(s_, id, &out); }
  trpc::ChainBuffer out;

 private:
  trpc::detail::TrpcServerStreamSession* s_;
};

class ClientHost final : public trpc::ClientStreamHost {
 public:
  explicit ClientHost(trpc::detail::TrpcClientStreamSession* s) : s_(s) {}
  void OnStreamOpened(uint32_t id, const trpc::Status&) override { React(s_, id, &out); }
  void OnStreamMessage(uint32_t id, trpc::ChainBuffer&&) override { React(s_, id, &out); }
  void OnStreamRemoteEnd(uint32_t id, const trpc::Status&, bool) override { React(s_, id, &out); }
  void OnStreamWritable(uint32_t id) override { React(s_, id, &out); }
  trpc::ChainBuffer out;

 private:
  trpc::detail::TrpcClientStreamSession* s_;
};

}  // namespace

using trpc::ChainBuffer;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool client_side = data[0] & 1;
  ChainBuffer in;
  in.Append(data + 1, size - 1);
  std::vector<ChainBuffer> frames;
  std::string err;
  if (trpc::detail::SplitTrpcFrames(&in, &frames, 1 << 20, &err, true) != trpc::SplitResult::kOk &&
      err.empty()) {
    std::abort();
  }
  trpc::detail::TrpcServerStreamSession server(kMaxStreams, 65535);
  trpc::detail::TrpcClientStreamSession client(kMaxStreams);
  ServerHost server_host(&server);
  ClientHost client_host(&client);
  if (client_side) {
    trpc::RpcRequest head;
    head.func = "/s.S/M";
    for (int i = 0; i < 4; ++i) {
      uint32_t id = 0;
      if (!client.Open(head, 65535, &id, &client_host.out, &err)) std::abort();
    }
  }
  for (ChainBuffer& f : frames) {
    const std::string bytes = f.ToString();
    g_steer = bytes.empty() ? 0 : static_cast<uint8_t>(bytes.back());
    err.clear();
    const bool ok = client_side
                        ? client.OnFrame(std::move(f), &client_host, &client_host.out, &err)
                        : server.OnFrame(std::move(f), &server_host, &server_host.out, &err);
    if (!ok) {
      if (err.empty()) std::abort();  // every refusal says why
      break;                          // the connection closes
    }
    if (server.open_streams() > kMaxStreams || client.open_streams() > kMaxStreams) std::abort();
  }
  return 0;
}
