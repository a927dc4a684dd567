// client.max_buffered_bytes end to end: a hostile server that answers every call with a
// response frame that never ends (a header announcing 8 MiB, then as many bytes as the socket
// takes) cannot make the client hold more than its bound, however many connections it feeds;
// a call on a connection paused for the bound fails at once with 124.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "test/common/loopback_listener.h"
#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"
#include "trpc/transport/buffer_budget.h"

namespace trpc::test::fault {
namespace {

// A server on loopback that answers whatever it reads with the start of a trpc response frame
// of `kFrameBytes` and then feeds body bytes while the socket takes them, never finishing it.
class EndlessResponder {
 public:
  static constexpr uint32_t kFrameBytes = 8u << 20;

  EndlessResponder() {
    uint16_t port = 0;
    listen_fd_ = trpc::testing::ListenOnLoopback(&port, 1024);
    if (listen_fd_ < 0 || fcntl(listen_fd_, F_SETFL, O_NONBLOCK) != 0) return;
    addr_ = fmt::format("127.0.0.1:{}", port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~EndlessResponder() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const Peer& p : peers_) close(p.fd);
    close(listen_fd_);
  }
  const std::string& addr() const { return addr_; }
  uint64_t bytes_sent() const { return sent_.load(); }

 private:
  struct Peer {
    int fd;
    bool started = false;
    uint64_t sent = 0;
  };
  void Loop() {
    std::vector<char> zeros(64 << 10, 0);
    // 16-byte trpc header: magic, data frame, stream frame, total length, pb header length,
    // stream id, reserved. The pb header length (1000) makes it a response frame to wait for.
    unsigned char head[16] = {0x09, 0x30, 0, 0};
    uint32_t total = htonl(kFrameBytes);
    std::memcpy(head + 4, &total, 4);
    head[8] = 0x03;
    head[9] = 0xe8;
    int64_t until = MonotonicNanos() + 60 * kNanosPerSecond;  // bounded whatever the test does
    while (!stop_ && MonotonicNanos() < until) {
      for (int fd;
           (fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
        peers_.push_back(Peer{fd});
      }
      bool progress = false;
      for (Peer& p : peers_) {
        char buf[4096];
        ssize_t got = recv(p.fd, buf, sizeof(buf), 0);
        if (got > 0 && !p.started) {
          p.started = true;
          if (send(p.fd, head, sizeof(head), MSG_NOSIGNAL) == sizeof(head)) p.sent = sizeof(head);
        }
        while (p.started && p.sent + zeros.size() < kFrameBytes) {
          ssize_t n = send(p.fd, zeros.data(), zeros.size(), MSG_NOSIGNAL);
          if (n <= 0) break;
          p.sent += static_cast<uint64_t>(n);
          sent_ += static_cast<uint64_t>(n);
          progress = true;
        }
      }
      if (!progress) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  int listen_fd_ = -1;
  std::string addr_;
  std::vector<Peer> peers_;  // the loop's thread only
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> sent_{0};
  std::thread thread_;
};

class ClientBuffersTest : public FaultTest {
 protected:
  static constexpr uint64_t kLimit = 4u << 20;
  static void SetUpTestSuite() {
    StartClient("  max_buffered_bytes: 4194304\n  buffered_bytes_timeout: 60000\n");
  }
};

TEST_F(ClientBuffersTest, AnEndlessResponseOnManyConnectionsStaysWithinTheBound) {
  constexpr int kConns = 200;  // 200 x 8 MiB would be 1.6 GiB
  EndlessResponder server;
  ASSERT_FALSE(server.addr().empty());
  std::vector<std::shared_ptr<GreeterServiceProxy>> proxies;
  std::vector<Future<HelloReply>> calls;
  for (int i = 0; i < kConns; ++i) {
    ClientServiceConfig c;
    c.target = server.addr();
    c.timeout = 20000;
    std::string err;
    proxies.push_back(
        GetTrpcClient()->GetProxy<GreeterServiceProxy>(fmt::format("endless_{}", i), c, &err));
    ASSERT_NE(proxies.back(), nullptr) << err;
    HelloRequest req;
    req.set_msg("x");
    calls.push_back(proxies.back()->AsyncSayHello(MakeClientContext(), req));
  }
  // Let the server feed what the client takes, until it takes nothing more.
  const BufferBudget& budget = GetTrpcClient()->buffer_budget();
  uint64_t last = 0;
  int64_t most = 0;
  for (int quiet = 0, rounds = 0; quiet < 10 && rounds < 500; ++rounds) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t now = server.bytes_sent();
    quiet = now == last ? quiet + 1 : 0;
    last = now;
    most = std::max(most, budget.total());
  }
  std::printf(
      "%d connections: the server sent %.1f MiB, the client holds %.2f MiB (most seen "
      "%.2f MiB) against a bound of %.0f MiB; %lu paused\n",
      kConns, static_cast<double>(last) / (1 << 20),
      static_cast<double>(budget.total()) / (1 << 20), static_cast<double>(most) / (1 << 20),
      static_cast<double>(kLimit) / (1 << 20), static_cast<unsigned long>(budget.paused_total()));
  // The bound, plus what a connection reads in the event that takes it over its allowance and
  // what the per-reactor batching lags (BufferBudget::batch()).
  EXPECT_LT(most, static_cast<int64_t>(kLimit + kLimit / 8 + (1u << 20)));
  EXPECT_GT(budget.paused_total(), 0u);

  // A call on a paused connection fails at once, saying why.
  int refused = 0;
  for (auto& p : proxies) {
    HelloRequest req;
    req.set_msg("y");
    auto ctx = MakeClientContext();
    ctx->SetTimeout(5000);
    HelloReply rsp;
    int64_t start = MonotonicNanos();
    Status s = p->SayHello(ctx, req, &rsp);
    if (s.GetFrameworkRetCode() == kClientOverloadErr) {
      ++refused;
      EXPECT_NE(s.ErrorMessage().find("client.max_buffered_bytes"), std::string::npos)
          << s.ToString();
      EXPECT_LT(MonotonicNanos() - start, kNanosPerSecond);
    }
    if (refused >= 3) break;
  }
  EXPECT_GE(refused, 1);
  for (auto& p : proxies) p->Stop();
}

}  // namespace
}  // namespace trpc::test::fault
