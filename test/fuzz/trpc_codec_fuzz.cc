// Fuzz target: arbitrary bytes from a peer, fed to the trpc server and client codecs the way a
// connection feeds them (in pieces), must only ever produce frames or a clean error — never a
// crash, an assert or a sanitizer report.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trpc/codec/trpc/detail/trpc_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static trpc::TrpcServerCodec server;
  static trpc::TrpcClientCodec client;
  // The first byte picks the read size, so frames get split at many different offsets.
  size_t chunk = size > 0 ? 1 + data[0] % 64 : 1;
  for (int side = 0; side < 2; ++side) {
    trpc::ChainBuffer in;
    std::vector<trpc::ChainBuffer> frames;
    std::string err;
    bool failed = false;
    for (size_t off = 0; off < size && !failed; off += chunk) {
      in.Append(data + off, std::min(chunk, size - off));
      trpc::FrameCodec& codec = side == 0 ? static_cast<trpc::FrameCodec&>(server)
                                          : static_cast<trpc::FrameCodec&>(client);
      failed = codec.Split(&in, &frames, 1 << 20, &err) == trpc::SplitResult::kError;
    }
    for (auto& f : frames) {
      if (side == 0) {
        trpc::RpcRequest req;
        if (server.DecodeRequest(std::move(f), &req, &err)) {
          trpc::RpcResponse rsp;
          rsp.request_id = req.request_id;
          rsp.body = std::move(req.body);
          trpc::ChainBuffer out;
          server.EncodeResponse(&rsp, nullptr, &out);
        }
      } else {
        uint32_t id = 0;
        client.PeekResponseId(f, &id);
        trpc::RpcResponse rsp;
        client.DecodeResponse(std::move(f), &rsp, &err);
      }
    }
  }
  return 0;
}
