// Hostile HTTP peers (issue 24): a chunked body whose framing is nearly all of its bytes — 1-byte
// chunks that each carry a 4,000-byte chunk extension, or zero-padded chunk sizes — grows the
// de-chunked body by one byte per many wire bytes, so a bound on the body alone never stops it.
// Every wire byte of a message counts against max_packet_size, and chunk extensions have a total
// of their own (kMaxChunkExtensionBytes):
//   - server (fault_server over HTTP): the request is answered 413 and the connection closed once
//     the bytes prove it is over, while another client keeps being served;
//   - client (our HTTP client against a fake server on loopback): the call fails with 141.
// Held memory is checked two ways: sending exactly one byte past the bound and then nothing
// must be enough for the refusal (so nothing past the bound is ever needed), and with the bytes
// sent as fast as the receiver takes them the receiver's RSS stays within the bound plus a
// margin (not in sanitizer builds, whose shadow memory says nothing about the bound).

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "test/common/loopback_listener.h"
#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"

namespace trpc::test::fault {
namespace {

constexpr size_t kMaxPacket = 2u << 20;  // above the transport's 1 MiB dispatch threshold
// What may be read past the bound before the split sees it: one read (64 KiB).
constexpr size_t kReadSlack = 64u << 10;
// Bytes a receiver without the bound would have to take before these tests give up.
constexpr size_t kCap = 48u << 20;
// RSS above the baseline that the receiver may reach: the wire bytes (kMaxPacket + kReadSlack),
// the de-chunked copy (at most 1/21 of them here), block and allocator slack.
constexpr uint64_t kRssMargin = kMaxPacket + kReadSlack + (6u << 20);
#ifdef TRPC_FAULT_SANITIZED
constexpr bool kCheckRss = false;
#else
constexpr bool kCheckRss = true;
#endif

const std::string kRequestHead =
    "POST /trpc.test.helloworld.Greeter/SayHello HTTP/1.1\r\nHost: fault\r\n"
    "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
const std::string kResponseHead = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";

// 1-byte chunks repeated to about 64 KiB: with a 4,000-byte extension each (cut by the
// extensions' total), or with zero-padded sizes (21 wire bytes per body byte: cut by
// max_packet_size).
std::string HostileChunks(bool extensions) {
  const std::string chunk = extensions ? "1;" + std::string(4000, 'e') + "\r\nx\r\n"
                                       : std::string("0000000000000001\r\nx\r\n");
  std::string out;
  while (out.size() < (64u << 10)) out += chunk;
  return out;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// One side of a hostile exchange on a raw socket: sends `head`, then `piece` over and over (or
// only `total` bytes in all, then nothing), until the peer answers or closes, `kCap` bytes have
// gone, or `timeout_ms` passes. Samples `rss_pid`'s RSS as it goes.
struct Flood {
  size_t sent = 0;           // bytes sent before the peer's answer (or its close)
  std::string answer;        // what the peer sent back, up to its close
  bool peer_closed = false;  // EOF or reset seen
  uint64_t peak_rss = 0;
};

Flood SendFlood(int fd, const std::string& head, const std::string& piece, size_t total,
                int timeout_ms, pid_t rss_pid) {
  Flood f;
  SetNonBlocking(fd);
  const std::string first = head + piece;
  size_t offset = 0;  // in `first`, then in `piece`
  bool in_first = true;
  size_t next_sample = 0;
  const int64_t deadline = MonotonicNanos() + int64_t{timeout_ms} * kNanosPerMilli;
  while (MonotonicNanos() < deadline && !f.peer_closed) {
    const bool sending = f.answer.empty() && f.sent < std::min(total, kCap);
    pollfd p{fd, static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0};
    if (poll(&p, 1, 20) < 0) break;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        f.answer.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        f.peer_closed = true;
      }
      continue;
    }
    if (!sending || !(p.revents & POLLOUT)) continue;
    const std::string& src = in_first ? first : piece;
    const size_t want = std::min(src.size() - offset, std::min(total, kCap) - f.sent);
    const ssize_t n = send(fd, src.data() + offset, want, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) f.peer_closed = true;
      continue;
    }
    f.sent += static_cast<size_t>(n);
    offset += static_cast<size_t>(n);
    if (offset == src.size()) {
      offset = 0;
      in_first = false;
    }
    if (kCheckRss && f.sent >= next_sample) {
      next_sample = f.sent + (256u << 10);
      f.peak_rss = std::max(f.peak_rss, RssBytes(rss_pid));
    }
  }
  return f;
}

// ---- Server side: fault_server serving Greeter over HTTP. ----

class HostileHttpServerTest : public FaultTest {
 protected:
  void SetUp() override {
    FaultServerOptions o;
    o.service_yaml = fmt::format("      protocol: http\n      max_packet_size: {}\n", kMaxPacket);
    addr_ = StartFaultServer(&server_, o);
    ASSERT_FALSE(addr_.empty());
    ClientServiceConfig c;
    c.protocol = "http";
    c.timeout = 5000;
    proxy_ = Proxy(addr_, c);
    ASSERT_NE(proxy_, nullptr);
  }

  // Another client, on its own connection, is answered.
  void ExpectServed() {
    HelloReply rsp;
    Status s = Call(proxy_.get(), "still here", &rsp);
    EXPECT_TRUE(s.OK()) << s.ToString();
    EXPECT_EQ(rsp.msg(), "still here");
  }

  ChildServer server_;
  std::string addr_;
  std::shared_ptr<GreeterServiceProxy> proxy_;
};

// One byte past max_packet_size, then silence: the server must refuse with what it has.
TEST_F(HostileHttpServerTest, OneBytePastMaxPacketSizeIsRefused) {
  ExpectServed();
  const int fd = RawConnect(addr_);
  ASSERT_GE(fd, 0);
  Flood f = SendFlood(fd, kRequestHead, HostileChunks(false), kMaxPacket + 1, 5000, server_.pid());
  close(fd);
  EXPECT_EQ(f.sent, kMaxPacket + 1);
  EXPECT_EQ(f.answer.rfind("HTTP/1.1 413 ", 0), 0u) << f.answer.substr(0, 200);
  EXPECT_NE(f.answer.find("max_packet_size"), std::string::npos) << f.answer.substr(0, 400);
  EXPECT_TRUE(f.peer_closed);
  ExpectServed();
}

TEST_F(HostileHttpServerTest, FloodsAreCutAndHeldMemoryStaysBounded) {
  ExpectServed();
  for (const bool extensions : {true, false}) {
    SCOPED_TRACE(extensions ? "4,000-byte chunk extensions" : "zero-padded chunk sizes");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the last close settles
    const uint64_t baseline = RssBytes(server_.pid());
    const int fd = RawConnect(addr_);
    ASSERT_GE(fd, 0);
    Flood f =
        SendFlood(fd, kRequestHead, HostileChunks(extensions), SIZE_MAX, 20000, server_.pid());
    close(fd);
    EXPECT_EQ(f.answer.rfind("HTTP/1.1 413 ", 0), 0u)
        << "after " << f.sent << " bytes: " << f.answer.substr(0, 200);
    EXPECT_LT(f.sent, kCap);
    if (kCheckRss) {
      EXPECT_LE(f.peak_rss, baseline + kRssMargin)
          << "baseline " << baseline << ", peak " << f.peak_rss << ", sent " << f.sent;
    }
    std::printf(
        "server, %s: %zu bytes sent before the answer (%s); RSS baseline %.1f MiB, "
        "peak %.1f MiB\n",
        extensions ? "extensions" : "padded sizes", f.sent,
        f.answer.empty() ? "none" : f.answer.substr(0, 12).c_str(), baseline / 1048576.0,
        f.peak_rss / 1048576.0);
    ExpectServed();
  }
}

// ---- Client side: our HTTP client against a fake server that answers with a hostile body. ----

// Accepts one connection on 127.0.0.1:0, reads the request, then answers with kResponseHead and
// `piece` over and over (only `total` bytes in all with a total) until the client closes.
class FakeHttpServer {
 public:
  FakeHttpServer(std::string piece, size_t total) : piece_(std::move(piece)), total_(total) {
    uint16_t port = 0;
    listen_fd_ = trpc::testing::ListenOnLoopback(&port, 8);
    if (listen_fd_ < 0) return;
    addr_ = fmt::format("127.0.0.1:{}", port);
    thread_ = std::thread([this] { Run(); });
  }
  ~FakeHttpServer() {
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
  }
  const std::string& addr() const { return addr_; }
  // After the client's call has ended.
  const Flood& Result() {
    if (thread_.joinable()) thread_.join();
    return flood_;
  }

 private:
  void Run() {
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) return;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    // The request is a few hundred bytes: read up to its blank line (and its small body).
    std::string request;
    const int64_t deadline = MonotonicNanos() + 5 * kNanosPerSecond;
    while (request.find("\r\n\r\n") == std::string::npos && MonotonicNanos() < deadline) {
      char buf[4096];
      pollfd r{fd, POLLIN, 0};
      if (poll(&r, 1, 100) <= 0) continue;
      const ssize_t n = recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      request.append(buf, static_cast<size_t>(n));
    }
    flood_ = SendFlood(fd, kResponseHead, piece_, total_, 15000, getpid());
    close(fd);
  }

  std::string piece_;
  size_t total_;
  int listen_fd_ = -1;
  std::string addr_;
  std::thread thread_;
  Flood flood_;
};

class HostileHttpClientTest : public FaultTest {
 protected:
  static Status CallFake(const std::string& addr, uint32_t timeout_ms) {
    ClientServiceConfig c;
    c.protocol = "http";
    c.timeout = timeout_ms;
    c.max_packet_size = kMaxPacket;
    auto proxy = Proxy(addr, c);
    if (proxy == nullptr) return Status(kUnknownErr, "no proxy");
    HelloReply rsp;
    return Call(proxy.get(), "hi", &rsp);
  }
};

// One byte past max_packet_size, then silence: the call fails at once, not at its timeout.
TEST_F(HostileHttpClientTest, OneBytePastMaxPacketSizeFailsTheCall) {
  FakeHttpServer fake(HostileChunks(false), kMaxPacket + 1);
  ASSERT_FALSE(fake.addr().empty());
  const int64_t start = MonotonicNanos();
  Status s = CallFake(fake.addr(), 8000);
  const int64_t took_ms = (MonotonicNanos() - start) / kNanosPerMilli;
  EXPECT_EQ(s.GetFrameworkRetCode(), kClientNetworkErr) << s.ToString();
  EXPECT_LT(took_ms, 4000);
  EXPECT_EQ(fake.Result().sent, kMaxPacket + 1);
}

TEST_F(HostileHttpClientTest, FloodsFailTheCallAndHeldMemoryStaysBounded) {
  for (const bool extensions : {true, false}) {
    SCOPED_TRACE(extensions ? "4,000-byte chunk extensions" : "zero-padded chunk sizes");
    const uint64_t baseline = RssBytes(getpid());
    FakeHttpServer fake(HostileChunks(extensions), SIZE_MAX);
    ASSERT_FALSE(fake.addr().empty());
    Status s = CallFake(fake.addr(), 8000);
    const Flood& f = fake.Result();
    EXPECT_EQ(s.GetFrameworkRetCode(), kClientNetworkErr) << s.ToString();
    EXPECT_TRUE(f.peer_closed);
    EXPECT_LT(f.sent, kCap);
    if (kCheckRss) {
      EXPECT_LE(f.peak_rss, baseline + kRssMargin)
          << "baseline " << baseline << ", peak " << f.peak_rss << ", sent " << f.sent;
    }
    std::printf(
        "client, %s: call failed (%d) after %zu bytes; RSS baseline %.1f MiB, peak %.1f MiB\n",
        extensions ? "extensions" : "padded sizes", s.GetFrameworkRetCode(), f.sent,
        baseline / 1048576.0, f.peak_rss / 1048576.0);
  }
}

}  // namespace
}  // namespace trpc::test::fault
