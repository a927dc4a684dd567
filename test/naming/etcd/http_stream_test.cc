// HttpStream (trpc/client/http/http_stream.h) against one-off servers on a loopback socket.

#include "trpc/client/http/http_stream.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace trpc::http {
namespace {

using Clock = std::chrono::steady_clock;

// Accepts one connection, reads the request head, then runs `script` with the socket.
class OneShotServer {
 public:
  explicit OneShotServer(std::function<void(int fd)> script) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(fd_, 4);
    thread_ = std::thread([this, script = std::move(script)] {
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::recv(c, buf, sizeof(buf), 0);
        if (n <= 0) break;
        req.append(buf, n);
      }
      request_ = req;
      script(c);
      ::close(c);
    });
  }
  ~OneShotServer() {
    ::shutdown(fd_, SHUT_RDWR);  // unblocks accept when no client came
    thread_.join();
    ::close(fd_);
  }
  NetAddress address() const {
    NetAddress a;
    NetAddress::Parse("127.0.0.1:" + std::to_string(port_), &a);
    return a;
  }
  std::string request() {
    thread_.join();
    thread_ = std::thread([] {});
    return request_;
  }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::string request_;
  std::thread thread_;
};

void SendInPieces(int fd, const std::string& s, const std::vector<size_t>& sizes) {
  size_t off = 0;
  for (size_t i = 0; off < s.size(); ++i) {
    const size_t n = std::min(sizes[i % sizes.size()], s.size() - off);
    ::send(fd, s.data() + off, n, MSG_NOSIGNAL);
    off += n;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // separate reads
  }
}

TEST(HttpStreamTest, ChunkedResponseInOddPieces) {
  const std::string response =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
      "d\r\n{\"result\":1}\n\r\n"
      "19\r\n{\"result\":2}\n{\"result\":3}\r\n"
      "0\r\n\r\n";
  OneShotServer server([&](int fd) { SendInPieces(fd, response, {1, 3, 7, 2, 11}); });
  HttpStream stream;
  HttpStreamRequest req;
  req.target = "/v3/watch";
  req.body = "{\"x\":1}";
  int status = 0;
  std::string body, err;
  size_t pieces = 0;
  const bool ok = stream.Run(
      server.address(), req,
      [&](const HttpStreamHead& h) {
        status = h.status;
        return true;
      },
      [&](std::string_view piece) {
        EXPECT_LE(piece.size(), HttpStreamOptions().max_piece_bytes);
        body.append(piece);
        ++pieces;
        return true;
      },
      &err);
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body, "{\"result\":1}\n{\"result\":2}\n{\"result\":3}");
  EXPECT_GT(pieces, 1u);  // handed out as it came, not at the end
  const std::string sent = server.request();
  EXPECT_EQ(sent.rfind("POST /v3/watch HTTP/1.1\r\n", 0), 0u) << sent;
  EXPECT_NE(sent.find("Content-Length: 7\r\n"), std::string::npos) << sent;
}

TEST(HttpStreamTest, GarbageIsAnErrorWithAReason) {
  OneShotServer server([](int fd) { SendInPieces(fd, "SSH-2.0-OpenSSH\r\n\r\n", {5}); });
  HttpStream stream;
  std::string err;
  EXPECT_FALSE(stream.Run(server.address(), {}, nullptr, nullptr, &err));
  EXPECT_NE(err.find("malformed response"), std::string::npos) << err;
}

TEST(HttpStreamTest, BadChunkIsAnError) {
  OneShotServer server([](int fd) {
    SendInPieces(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n", {4});
  });
  HttpStream stream;
  std::string body, err;
  int status = 0;
  EXPECT_FALSE(stream.Fetch(server.address(), {}, 100, &status, &body, &err));
  EXPECT_NE(err.find("malformed response"), std::string::npos) << err;
}

TEST(HttpStreamTest, CutShortIsAnError) {
  OneShotServer server(
      [](int fd) { SendInPieces(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", {100}); });
  std::string body, err;
  int status = 0;
  EXPECT_FALSE(HttpFetch(server.address(), {}, {}, 100, &status, &body, &err));
  EXPECT_NE(err.find("closed before the response was complete"), std::string::npos) << err;
}

TEST(HttpStreamTest, FetchCollectsAndBoundsTheBody) {
  const std::string response = "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nhello";
  {
    OneShotServer server([&](int fd) { SendInPieces(fd, response, {2}); });
    std::string body, err;
    int status = 0;
    ASSERT_TRUE(HttpFetch(server.address(), {}, {}, 100, &status, &body, &err)) << err;
    EXPECT_EQ(status, 404);
    EXPECT_EQ(body, "hello");
  }
  {
    OneShotServer server([&](int fd) { SendInPieces(fd, response, {100}); });
    std::string body, err;
    int status = 0;
    EXPECT_FALSE(HttpFetch(server.address(), {}, {}, 4, &status, &body, &err));
    EXPECT_EQ(err, "response body over 4 bytes");
  }
}

TEST(HttpStreamTest, HeadTooLargeIsAnError) {
  std::string response = "HTTP/1.1 200 OK\r\n";
  for (int i = 0; i < 100; ++i) response += "X-Field-" + std::to_string(i) + ": 0123456789\r\n";
  OneShotServer server([&](int fd) { SendInPieces(fd, response + "\r\n", {1000}); });
  HttpStreamOptions opts;
  opts.max_head_bytes = 512;
  HttpStream stream(opts);
  std::string err;
  EXPECT_FALSE(stream.Run(server.address(), {}, nullptr, nullptr, &err));
  EXPECT_NE(err.find("too large"), std::string::npos) << err;
}

TEST(HttpStreamTest, CancelUnblocksAPendingReadPromptly) {
  std::atomic<bool> release{false};
  OneShotServer server([&](int fd) {
    SendInPieces(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", {100});
    // Then silence, as a watch with nothing to report (bounded: 5 s).
    for (int i = 0; i < 500 && !release.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  HttpStreamOptions opts;
  opts.read_timeout_ms = 0;
  HttpStream stream(opts);
  std::atomic<bool> got_piece{false};
  std::string err;
  bool ok = true;
  std::thread reader([&] {
    ok = stream.Run(
        server.address(), {}, nullptr,
        [&](std::string_view) {
          got_piece.store(true);
          return true;
        },
        &err);
  });
  for (int i = 0; i < 500 && !got_piece.load(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(got_piece.load());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reader is in poll now
  const auto t0 = Clock::now();
  stream.Cancel();
  reader.join();
  const auto took = Clock::now() - t0;
  release.store(true);
  EXPECT_FALSE(ok);
  EXPECT_EQ(err, "cancelled");
  // At once: without the cancel the read (no read timeout) waits for the server's 3 s. The
  // bound leaves room for a loaded machine not running the reader for a while.
  EXPECT_LT(took, std::chrono::milliseconds(1000));
  // Sticky: a later call fails at once.
  EXPECT_FALSE(stream.Run(server.address(), {}, nullptr, nullptr, &err));
  EXPECT_EQ(err, "cancelled");
}

TEST(HttpStreamTest, ReadTimeout) {
  std::atomic<bool> release{false};
  OneShotServer server([&](int) {
    for (int i = 0; i < 300 && !release.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  HttpStreamOptions opts;
  opts.read_timeout_ms = 100;
  HttpStream stream(opts);
  std::string err;
  const auto t0 = Clock::now();
  EXPECT_FALSE(stream.Run(server.address(), {}, nullptr, nullptr, &err));
  EXPECT_LT(Clock::now() - t0, std::chrono::milliseconds(1000));
  release.store(true);
  EXPECT_EQ(err, "read timeout");
}

TEST(HttpStreamTest, ConnectRefused) {
  NetAddress closed;
  {
    // A port that was just free: nothing listens there.
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    NetAddress::Parse("127.0.0.1:" + std::to_string(ntohs(a.sin_port)), &closed);
    ::close(fd);
  }
  std::string body, err;
  int status = 0;
  EXPECT_FALSE(HttpFetch(closed, {}, {}, 100, &status, &body, &err));
  EXPECT_NE(err.find("connect"), std::string::npos) << err;
}

}  // namespace
}  // namespace trpc::http
