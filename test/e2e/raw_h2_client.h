#pragma once

// A raw HTTP/2 client for tests: frames and HPACK written by hand, so it can misbehave (floods,
// bombs, broken flow control) where a real client library would refuse to.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/net_address.h"

namespace trpc::test::raw_h2 {

inline constexpr uint8_t kData = 0, kHeaders = 1, kPriority = 2, kRstStream = 3, kSettings = 4,
                         kPing = 6, kGoaway = 7, kWindowUpdate = 8;
inline constexpr uint8_t kEndStream = 1, kEndHeaders = 4, kPadded = 8;

inline std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, std::string_view payload) {
  std::string f;
  auto n = static_cast<uint32_t>(payload.size());
  f += static_cast<char>(n >> 16);
  f += static_cast<char>(n >> 8);
  f += static_cast<char>(n);
  f += static_cast<char>(type);
  f += static_cast<char>(flags);
  f += static_cast<char>((stream >> 24) & 0x7f);
  f += static_cast<char>(stream >> 16);
  f += static_cast<char>(stream >> 8);
  f += static_cast<char>(stream);
  f.append(payload);
  return f;
}

// An HPACK integer with an N-bit prefix whose other bits are `first`.
inline void HpackInt(std::string* out, uint8_t first, int bits, size_t v) {
  const size_t max = (1u << bits) - 1;
  if (v < max) {
    *out += static_cast<char>(first | v);
    return;
  }
  *out += static_cast<char>(first | max);
  v -= max;
  while (v >= 128) {
    *out += static_cast<char>((v & 127) | 128);
    v >>= 7;
  }
  *out += static_cast<char>(v);
}

inline void HpackString(std::string* out, std::string_view s) {
  HpackInt(out, 0, 7, s.size());
  out->append(s);
}

// A literal field without indexing, new name.
inline void Literal(std::string* out, std::string_view name, std::string_view value) {
  *out += '\0';
  HpackString(out, name);
  HpackString(out, value);
}

// A gRPC request's header block for SayHello (static-table :method POST, :scheme http).
inline std::string RequestHeaders(
    std::string_view path = "/trpc.test.helloworld.Greeter/SayHello") {
  std::string h;
  h += static_cast<char>(0x83);  // :method: POST
  h += static_cast<char>(0x86);  // :scheme: http
  h += '\x04';                   // :path, literal without indexing, static name 4
  HpackString(&h, path);
  h += '\x01';  // :authority, static name 1
  HpackString(&h, "localhost");
  Literal(&h, "content-type", "application/grpc");
  Literal(&h, "te", "trailers");
  return h;
}

inline const std::string kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

struct RawFrame {
  uint8_t type;
  uint8_t flags;
  uint32_t stream;
  std::string payload;
  uint32_t ErrorCode() const {  // RST_STREAM's, or GOAWAY's
    size_t at = type == kGoaway ? 4 : 0;
    if (payload.size() < at + 4) return 0;
    auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(payload[i])); };
    return (b(at) << 24) | (b(at + 1) << 16) | (b(at + 2) << 8) | b(at + 3);
  }
};

class RawH2 {
 public:
  explicit RawH2(const NetAddress& addr) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(addr.port());
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    Send(kPreface + Frame(kSettings, 0, 0, ""));
  }
  ~RawH2() { close(fd_); }

  // Writes everything (or until the peer closes).
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Reads frames until `until(frame)` is true, EOF, or `ms`; the frames read. `eof` tells
  // whether the server closed.
  std::vector<RawFrame> ReadUntil(int ms, const std::function<bool(const RawFrame&)>& until) {
    std::vector<RawFrame> got;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      while (buf_.size() >= 9) {
        auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(buf_[i])); };
        uint32_t len = (b(0) << 16) | (b(1) << 8) | b(2);
        if (buf_.size() < 9 + len) break;
        RawFrame f{static_cast<uint8_t>(buf_[3]), static_cast<uint8_t>(buf_[4]),
                   ((b(5) & 0x7f) << 24) | (b(6) << 16) | (b(7) << 8) | b(8), buf_.substr(9, len)};
        buf_.erase(0, 9 + len);
        got.push_back(f);
        if (until && until(f)) return got;
      }
      int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                      deadline - std::chrono::steady_clock::now())
                                      .count());
      if (left <= 0) return got;
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, left) <= 0) continue;
      char tmp[65536];
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n <= 0) {
        eof = true;
        return got;
      }
      buf_.append(tmp, static_cast<size_t>(n));
    }
  }

  bool eof = false;

 private:
  int fd_ = -1;
  std::string buf_;
};

inline bool HasGoaway(const std::vector<RawFrame>& frames, uint32_t* code) {
  for (const auto& f : frames) {
    if (f.type == kGoaway) {
      *code = f.ErrorCode();
      return true;
    }
  }
  return false;
}

}  // namespace trpc::test::raw_h2
