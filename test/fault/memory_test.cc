// Memory under overload: ten clients pipeline requests for large replies and never read them.
// fault_server runs with server.max_buffered_bytes = 32 MiB: its RSS must stay under that plus
// the margin docs/architecture.md gives ("Memory"), a normal client on its own connection keeps
// being answered, the stuck connections are closed once buffered_bytes_timeout has passed, and
// after they are gone the RSS comes back to within 20% of what it was before.

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "test/codec/trpc_test_frames.h"
#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"
#include "trpc/base/net_address.h"

namespace trpc::test::fault {
namespace {

constexpr uint64_t kLimit = 32u << 20;
constexpr int64_t kOverLimitTimeoutMs = 1000;
constexpr int kClients = 10;
constexpr size_t kReplyBytes = 16384;
constexpr int kRequestsPerClient = 10000;  // 160 MiB of replies each, were they all answered
// What the server may hold above its baseline on top of the limit (docs/architecture.md,
// "Memory"): 1/8 of the limit (4 MiB), per connection one step between two reports (256 KiB)
// and one read batch's replies (merge: one; fiber: up to max_pending_requests, set to 16 here:
// 256 KiB), plus block and allocator slack. Measured: 5 to 11 MiB.
constexpr int kMaxPendingRequests = 16;
constexpr uint64_t kMargin = 16u << 20;
#ifdef TRPC_FAULT_SANITIZED
// A sanitizer's shadow memory and its quarantine of freed blocks make the RSS say nothing about
// the bound (ASan: ~400 MiB at the peak, all of it kept): only the behaviour is checked.
constexpr bool kCheckRss = false;
#else
constexpr bool kCheckRss = true;
#endif

std::string Varint(uint64_t v) {
  std::string out;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v != 0 ? b | 0x80 : b));
  } while (v != 0);
  return out;
}

// SayHello(msg: "big:<n>") as a trpc frame (request id 1: the clients never read the replies).
std::string BigRequest(size_t reply_bytes) {
  using codec_test::Hex;
  std::string header = Hex("18 01  20 e8 07") + Hex("32") + Varint(codec_test::kCallee.size()) +
                       std::string(codec_test::kCallee) + Hex("3a") +
                       Varint(codec_test::kFunc.size()) + std::string(codec_test::kFunc);
  std::string msg = "big:" + std::to_string(reply_bytes);
  std::string body = Hex("0a") + Varint(msg.size()) + msg;
  return codec_test::MakeFrame(header, body);
}

// A connected socket to "IP:PORT" (blocking connect), then non-blocking; -1 on failure.
int ConnectTo(const std::string& addr) {
  NetAddress a;
  size_t colon = addr.rfind(':');
  uint16_t port = static_cast<uint16_t>(std::stoi(addr.substr(colon + 1)));
  int fd = -1;
  if (NetAddress::FromIpPort(addr.substr(0, colon), port, &a)) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  }
  bool ok = fd >= 0 && ::connect(fd, a.sockaddr_ptr(), a.length()) == 0 &&
            ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) == 0;
  if (!ok && fd >= 0) ::close(fd);
  return ok ? fd : -1;
}

// The server has closed the connection (its FIN or reset arrived).
bool ClosedByPeer(int fd) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
  return info.tcpi_state != TCP_ESTABLISHED && info.tcpi_state != TCP_SYN_SENT;
}

// Ten connections that each send kRequestsPerClient requests as fast as the server takes them
// and read nothing.
class NonReadingClients {
 public:
  explicit NonReadingClients(const std::string& addr) {
    for (int i = 0; i < kClients; ++i) fds_.push_back(ConnectTo(addr));
    std::string one = BigRequest(kReplyBytes);
    for (int i = 0; i < kRequestsPerClient; ++i) stream_ += one;
    thread_ = std::thread([this] { Run(); });
  }
  ~NonReadingClients() { Close(); }

  bool connected() const {
    for (int fd : fds_) {
      if (fd < 0) return false;
    }
    return true;
  }
  // How many the server has closed so far.
  int ClosedByServer() const {
    int n = 0;
    for (int fd : fds_) n += fd >= 0 && ClosedByPeer(fd) ? 1 : 0;
    return n;
  }
  // The TCP states, for a failure message.
  std::string States() const {
    std::string out;
    for (int fd : fds_) {
      tcp_info info{};
      socklen_t len = sizeof(info);
      ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len);
      out += std::to_string(info.tcpi_state) + " ";
    }
    return out;
  }
  void Close() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int& fd : fds_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }

 private:
  void Run() {
    std::vector<size_t> sent(fds_.size(), 0);
    std::vector<bool> done(fds_.size(), false);
    while (!stop_) {
      bool progress = false;
      for (size_t i = 0; i < fds_.size(); ++i) {
        if (done[i] || fds_[i] < 0) continue;
        ssize_t n = ::send(fds_[i], stream_.data() + sent[i], stream_.size() - sent[i],
                           MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          sent[i] += static_cast<size_t>(n);
          done[i] = sent[i] == stream_.size();
          progress = true;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          done[i] = true;  // reset by the server
        }
      }
      if (!progress) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::vector<int> fds_;
  std::string stream_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class MemoryTest : public FaultTest {};

TEST_F(MemoryTest, BufferedBytesStayBoundedAndMemoryGoesBackAfterTheBurst) {
  ChildServer server;
  FaultServerOptions options;
  options.workers = 2;
  options.server_yaml = fmt::format("  max_buffered_bytes: {}\n  buffered_bytes_timeout: {}\n",
                                    kLimit, kOverLimitTimeoutMs);
  options.service_yaml = fmt::format("      max_pending_requests: {}\n", kMaxPendingRequests);
  std::string addr = StartFaultServer(&server, options);
  ASSERT_FALSE(addr.empty());
  auto proxy = Proxy(addr);

  // Warm up (first replies of every size, both workers), then take the baseline.
  HelloReply rsp;
  const char* warm_up[] = {"hello", "big:16384", "big:262144"};
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(Call(proxy.get(), warm_up[i % 3], &rsp).OK());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const uint64_t baseline = RssBytes(server.pid());
  ASSERT_GT(baseline, 0u);

  NonReadingClients clients(addr);
  ASSERT_TRUE(clients.connected());
  uint64_t peak = 0;
  int calls = 0, failed = 0;
  int64_t start_ms = MonotonicMillis();
  int64_t all_closed_ms = -1;
  int closed_early = 0;
  // Closing a stuck connection frees room that the others (paused under the limit's 3/4 mark)
  // take before they are stuck in turn: they are closed in waves, a timeout apart.
  while (MonotonicMillis() - start_ms < 20 * kOverLimitTimeoutMs) {
    ++calls;
    Status s = Call(proxy.get(), "hello", &rsp);
    if (!s.OK() || rsp.msg() != "hello") ++failed;
    peak = std::max(peak, RssBytes(server.pid()));
    int closed = clients.ClosedByServer();
    if (MonotonicMillis() - start_ms < kOverLimitTimeoutMs - 200) closed_early = closed;
    if (closed == kClients) {
      all_closed_ms = MonotonicMillis() - start_ms;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (kCheckRss) {
    EXPECT_LE(peak, baseline + kLimit + kMargin)
        << "baseline " << baseline << ", peak " << peak << " (limit " << kLimit << ")";
  }
  EXPECT_EQ(failed, 0) << "of " << calls << " calls by the normal client during the overload";
  EXPECT_EQ(closed_early, 0) << "connections closed before buffered_bytes_timeout";
  EXPECT_GE(all_closed_ms, 0) << clients.ClosedByServer() << " of " << kClients
                              << " stuck connections closed; TCP states " << clients.States();
  clients.Close();

  // Memory goes back: within 20% of the baseline a few seconds after the burst.
  uint64_t after = 0;
  for (int64_t until = MonotonicMillis() + 6000; kCheckRss && MonotonicMillis() < until;) {
    after = RssBytes(server.pid());
    if (after <= baseline + baseline / 5) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (kCheckRss) {
    EXPECT_LE(after, baseline + baseline / 5) << "baseline " << baseline << ", peak " << peak;
  }
  // The server still serves.
  ASSERT_TRUE(Call(proxy.get(), "hello", &rsp).OK());
  std::printf(
      "memory_test (%s): RSS baseline %.1f MiB, peak %.1f MiB, after %.1f MiB; %d calls "
      "during the overload; stuck connections closed after %lld ms\n",
      ModelUnderTest().c_str(), baseline / 1048576.0, peak / 1048576.0, after / 1048576.0, calls,
      static_cast<long long>(all_closed_ms));
}

}  // namespace
}  // namespace trpc::test::fault
