#pragma once

// The trpc protocol by hand, for the rpc_e2e tests (docs/protocol.md): request frames encoded by
// the framework's own client codec, hand-made fixed headers, and a plain TCP connection that
// sends bytes a well-behaved client never would and reads whole frames with a deadline.

#include <errno.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/base/clock.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/codec/detail/compression.h"

namespace trpc::test::helloworld {

inline constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
inline constexpr char kSayHelloFunc[] = "/trpc.test.helloworld.Greeter/SayHello";

inline constexpr int64_t kIoTimeoutMs = 10'000;  // bound on any single wait for the server

inline constexpr size_t kFixedHeaderSize = 16;

inline void PutBe16(uint16_t v, char* p) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
inline void PutBe32(uint32_t v, char* p) {
  PutBe16(static_cast<uint16_t>(v >> 16), p);
  PutBe16(static_cast<uint16_t>(v), p + 2);
}
inline uint32_t GetBe32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

// A hand-made fixed header: magic, unary frame types, total size, header size, stream id 0.
inline std::string FixedHeader(uint16_t magic, uint32_t total, uint16_t header_size) {
  std::string h(kFixedHeaderSize, '\0');
  PutBe16(magic, h.data());
  PutBe32(total, h.data() + 4);
  PutBe16(header_size, h.data() + 8);
  return h;
}

inline std::shared_ptr<ClientCodec> TrpcClientCodec() {
  return CodecRegistry::Instance().GetClient("trpc");
}

// One SayHello request frame, encoded by the framework's own trpc client codec.
inline std::string EncodeHello(uint32_t request_id, const std::string& msg,
                               uint32_t timeout_ms = 5000, uint32_t call_type = kUnaryCall,
                               uint32_t content_encoding = 0) {
  RpcRequest req;
  req.call_type = call_type;
  req.content_encoding = content_encoding;
  req.request_id = request_id;
  req.timeout_ms = timeout_ms;
  req.callee = kGreeterName;
  req.func = kSayHelloFunc;
  HelloRequest body;
  body.set_msg(msg);
  ChainBuffer out;
  auto codec = TrpcClientCodec();
  if (!codec || !codec->EncodeRequest(&req, &body, &out)) {
    ADD_FAILURE() << "cannot encode a request";
    return {};
  }
  return out.ToString();
}

// A SayHello request frame whose header claims `content_encoding` and whose body is `body`, as
// it is: for bodies no encoder would make (garbage, bombs, encodings we do not speak).
inline std::string EncodeRawBodyHello(uint32_t request_id, uint32_t content_encoding,
                                      const std::string& body) {
  RpcRequest req;
  req.request_id = request_id;
  req.timeout_ms = 10'000;
  req.callee = kGreeterName;
  req.func = kSayHelloFunc;
  // Encoded plain, then the header's content_encoding is set by hand: it is the header's last
  // field before attachment_size (absent here), so it is appended as field 11, varint.
  ChainBuffer out;
  req.body.Append(body);
  if (!TrpcClientCodec()->EncodeRequest(&req, nullptr, &out)) {
    ADD_FAILURE() << "cannot encode a request";
    return {};
  }
  std::string frame = out.ToString();
  const uint16_t header_size = static_cast<uint16_t>(
      static_cast<unsigned char>(frame[8]) << 8 | static_cast<unsigned char>(frame[9]));
  std::string field;
  field.push_back(static_cast<char>(11 << 3));
  for (uint32_t v = content_encoding; ; v >>= 7) {
    if (v < 0x80) {
      field.push_back(static_cast<char>(v));
      break;
    }
    field.push_back(static_cast<char>((v & 0x7f) | 0x80));
  }
  frame.insert(kFixedHeaderSize + header_size, field);
  PutBe32(static_cast<uint32_t>(frame.size()), frame.data() + 4);
  PutBe16(static_cast<uint16_t>(header_size + field.size()), frame.data() + 8);
  return frame;
}

struct Reply {
  RpcResponse rsp;
  HelloReply body;
};

// Decodes one response frame (and its HelloReply body when ret is 0).
inline ::testing::AssertionResult DecodeReply(const std::string& frame, Reply* out) {
  ChainBuffer buf;
  buf.Append(frame);
  std::string err;
  if (!TrpcClientCodec()->DecodeResponse(std::move(buf), &out->rsp, &err)) {
    return ::testing::AssertionFailure() << "undecodable response: " << err;
  }
  if (out->rsp.ret == 0 && out->rsp.content_encoding != 0) {
    ChainBuffer plain;
    if (!detail::DecompressBody(out->rsp.content_encoding, out->rsp.body, 1 << 30, &plain, &err)) {
      return ::testing::AssertionFailure() << "response body does not decompress: " << err;
    }
    out->rsp.body = std::move(plain);
  }
  if (out->rsp.ret == 0 && out->rsp.func_ret == 0 &&
      !out->body.ParseFromString(out->rsp.body.ToString())) {
    return ::testing::AssertionFailure() << "response body is not a HelloReply";
  }
  return ::testing::AssertionSuccess();
}

// A plain TCP client of the server under test, for byte sequences the proxy would never send.
// Writes block; every read is bounded by poll() with a deadline.
class RawConnection {
 public:
  enum class Result { kFrame, kClosed, kTimeout };

  explicit RawConnection(const NetAddress& server) {
    fd_ = ::socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && ::connect(fd_, server.sockaddr_ptr(), server.length()) != 0) Close();
  }
  ~RawConnection() { Close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  /// Writes all of `bytes`. False if the server has closed the connection.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  /// Reads one whole frame (sized by its fixed header).
  Result ReadFrame(std::string* frame, int64_t timeout_ms = kIoTimeoutMs) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (!CutFrame(frame)) {
      Result r = Fill(deadline);
      if (r != Result::kFrame) return r;
    }
    return Result::kFrame;
  }

  /// Reads one frame and decodes it as a SayHello response.
  ::testing::AssertionResult ReadReply(Reply* reply, int64_t timeout_ms = kIoTimeoutMs) {
    std::string frame;
    Result r = ReadFrame(&frame, timeout_ms);
    if (r != Result::kFrame) {
      return ::testing::AssertionFailure()
             << (r == Result::kClosed ? "connection closed" : "timed out")
             << " waiting for a reply";
    }
    return DecodeReply(frame, reply);
  }

  /// Waits until the server closes the connection (EOF or reset); bytes that arrive first are
  /// appended to `*received`. False if it is still open after `timeout_ms`.
  bool WaitClosed(int64_t timeout_ms, std::string* received) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    for (;;) {
      Result r = Fill(deadline);
      if (r == Result::kClosed) break;
      if (r == Result::kTimeout) return false;
    }
    received->append(in_, pos_);
    in_.clear();
    pos_ = 0;
    return true;
  }

  /// Moves the first complete buffered frame to `*frame`; false if none is complete.
  bool CutFrame(std::string* frame) {
    size_t avail = in_.size() - pos_;
    if (avail < kFixedHeaderSize) return false;
    size_t total = GetBe32(in_.data() + pos_ + 4);
    if (total < kFixedHeaderSize || avail < total) return false;
    frame->assign(in_, pos_, total);
    pos_ += total;
    if (pos_ == in_.size()) {
      in_.clear();
      pos_ = 0;
    } else if (pos_ > (1u << 20)) {
      in_.erase(0, pos_);
      pos_ = 0;
    }
    return true;
  }

  /// Waits (until `deadline_ms`) for bytes and buffers what is available: kFrame means "got
  /// some bytes".
  Result Fill(int64_t deadline_ms) {
    for (;;) {
      int64_t left = deadline_ms - MonotonicMillis();
      if (left < 0) return Result::kTimeout;
      pollfd pfd{fd_, POLLIN, 0};
      int r = ::poll(&pfd, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return Result::kTimeout;
      char buf[256 * 1024];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return Result::kFrame;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) return Result::kClosed;
    }
  }

 private:
  int fd_ = -1;
  std::string in_;
  size_t pos_ = 0;
};

}  // namespace trpc::test::helloworld
