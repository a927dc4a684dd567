#pragma once

// A blocking trpc client on a raw socket, for fault tests that need control over what goes on
// the wire and when: many requests in one write, requests never followed by reads, a frame cut
// short. Requests are encoded and replies split and decoded by the framework's own trpc codec.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.pb.h"
#include "trpc/base/chain_buffer.h"
#include "trpc/base/net_address.h"
#include "trpc/codec/detail/codec.h"

namespace trpc::test::fault {

struct RawReply {
  int32_t ret = 0;
  std::string msg;  // HelloReply.msg when ret is 0, else the error message
  std::chrono::steady_clock::time_point at;
};

class RawTrpcClient {
 public:
  // Connects to "ip:port"; connected() says whether it worked.
  explicit RawTrpcClient(const std::string& addr) {
    NetAddress a;
    std::vector<NetAddress> list;
    std::string bad;
    if (!NetAddress::ParseList(addr, &list, &bad) || list.empty()) return;
    a = list[0];
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(a.port());
    inet_pton(AF_INET, a.ip().c_str(), &sa.sin_addr);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
      close(fd_);
      fd_ = -1;
    }
    codec_ = CodecRegistry::Instance().GetClient("trpc");
  }
  ~RawTrpcClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool connected() const { return fd_ >= 0 && codec_ != nullptr; }
  int fd() const { return fd_; }

  // The bytes of SayHello(msg) with `request_id` and `timeout_ms`.
  std::string Encode(uint32_t request_id, const std::string& msg, uint32_t timeout_ms = 10000) {
    RpcRequest r;
    r.request_id = request_id;
    r.timeout_ms = timeout_ms;
    r.callee = "trpc.test.helloworld.Greeter";
    r.func = "/trpc.test.helloworld.Greeter/SayHello";
    helloworld::HelloRequest req;
    req.set_msg(msg);
    ChainBuffer out;
    codec_->EncodeRequest(&r, &req, &out);
    return out.ToString();
  }

  // Writes all of `bytes` (blocking). False if the connection failed.
  bool Write(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads replies until `n` have come, the peer closes, or `timeout_ms` passes; adds them to
  // `*replies` by request id. Returns false if the connection closed or failed.
  bool Read(size_t n, int timeout_ms, std::map<uint32_t, RawReply>* replies) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (replies->size() < n) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      deadline - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) return true;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[65536];
      ssize_t got = recv(fd_, buf, sizeof(buf), 0);
      if (got <= 0) return false;
      in_.Append(buf, static_cast<size_t>(got));
      std::vector<ChainBuffer> frames;
      std::string err;
      if (codec_->Split(&in_, &frames, 64 << 20, &err) != SplitResult::kOk) return false;
      auto now = std::chrono::steady_clock::now();
      for (ChainBuffer& f : frames) {
        RpcResponse rsp;
        if (!codec_->DecodeResponse(std::move(f), &rsp, &err)) return false;
        RawReply& r = (*replies)[rsp.request_id];
        r.ret = rsp.ret;
        r.at = now;
        if (rsp.ret == 0) {
          helloworld::HelloReply reply;
          std::string body = rsp.body.ToString();
          reply.ParseFromString(body);
          r.msg = reply.msg();
        } else {
          r.msg = rsp.error_msg;
        }
      }
    }
    return true;
  }

  // True if the server closed the connection within `timeout_ms` (bytes read meanwhile are
  // dropped).
  bool ClosedWithin(int timeout_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      char buf[4096];
      ssize_t got = recv(fd_, buf, sizeof(buf), 0);
      if (got <= 0) return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
  std::shared_ptr<ClientCodec> codec_;
  ChainBuffer in_;
};

}  // namespace trpc::test::fault
