#include "trpc/transport/client_connection.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "test/transport/length_prefix_codec.h"
#include "test/transport/loopback.h"
#include "test/transport/reactor_thread.h"
#include "trpc/base/clock.h"
#include "trpc/transport/acceptor.h"

namespace trpc::testing {
namespace {

constexpr int64_t kFarDeadlineMs = 30'000;

ChainBuffer Buffer(std::string_view s) {
  ChainBuffer b;
  b.Append(s);
  return b;
}

// An echo server made of the transport alone: an Acceptor plus one Connection per peer, all on
// one reactor. Each frame is a LengthPrefixCodec call frame; the body selects the behaviour:
//   "drop"       no reply;
//   "delay:N"    the frame is echoed after N ms;
//   "close"      the connection is closed;
//   otherwise    the frame is echoed at once.
// Replies to one read batch are sent in reverse order, so a client that matched replies by
// position instead of by id would fail. Loop-thread only (Start/Stop go through the loop).
class EchoServer : public Connection::Handler {
 public:
  explicit EchoServer(ReactorThread* loop) : loop_(loop) {}

  bool Start() {
    acceptor_ = std::make_unique<Acceptor>(
        loop_->reactor(), [this](int fd, const NetAddress& peer) { OnAccept(fd, peer); });
    NetAddress any;
    std::string err;
    if (!NetAddress::Parse("127.0.0.1:0", &any) || !acceptor_->Listen(any, &err)) return false;
    loop_->Run([&] { acceptor_->Start(); });
    return true;
  }
  void Stop() {
    loop_->Run([&] {
      acceptor_->Stop();
      auto conns = std::move(conns_);
      conns_.clear();
      for (auto& [raw, conn] : conns) conn->Close("server stopping");
    });
  }
  const NetAddress& address() const { return acceptor_->address(); }
  size_t frames_seen() const { return frames_seen_.load(); }

  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    frames_seen_.fetch_add(1);
    std::string bytes = frame.ToString();
    std::string_view body = LengthPrefixCodec::CallBody(bytes);
    if (body == "drop") return;
    if (body == "close") {
      replies_.clear();
      conn->Close("asked to close");
      return;
    }
    if (body.starts_with("delay:")) {
      int ms = 0;
      std::from_chars(body.data() + 6, body.data() + body.size(), ms);
      std::weak_ptr<Connection> weak = conn->shared_from_this();
      Reactor* r = loop_->reactor();
      r->AddTimer(r->LoopTimeNs() + ms * kNanosPerMilli, [weak, bytes] {
        if (auto c = weak.lock()) c->Send(Buffer(bytes));
      });
      return;
    }
    replies_.push_back(std::move(frame));
  }
  // Replies of a batch go out in reverse order, so matching by id is really exercised.
  void OnBatchEnd(Connection* conn) override {
    std::reverse(replies_.begin(), replies_.end());
    for (ChainBuffer& r : replies_) conn->Send(std::move(r));
    replies_.clear();
  }
  void OnClose(Connection* conn, const std::string&) override { conns_.erase(conn); }

 private:
  void OnAccept(int fd, const NetAddress& peer) {
    ConnectionOptions options;
    options.idle_timeout_ms = 0;
    auto conn = std::make_shared<Connection>(loop_->reactor(), fd, peer, &codec_, this, options);
    conns_.emplace(conn.get(), conn);
    conn->Start();
  }

  ReactorThread* loop_;
  LengthPrefixCodec codec_;
  std::unique_ptr<Acceptor> acceptor_;
  std::unordered_map<Connection*, ConnectionPtr> conns_;
  std::atomic<size_t> frames_seen_{0};
  std::vector<ChainBuffer> replies_;  // this batch's replies; loop thread only
};

// A listening socket on 127.0.0.1 with an ephemeral port; -1 on failure. `rcvbuf` > 0 sets
// SO_RCVBUF, which the accepted sockets inherit.
int Listen(int backlog, NetAddress* addr, int rcvbuf = 0) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 ||
      (rcvbuf > 0 && ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) != 0) ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd, backlog) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *addr = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&a), len);
  return fd;
}

// Starts a non-blocking connect to `addr`; the fd, or -1 if even that failed.
int StartConnect(const NetAddress& addr) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (::connect(fd, addr.sockaddr_ptr(), addr.length()) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True if the non-blocking connect on `fd` completes successfully within `timeout_ms`.
bool ConnectCompletes(int fd, int timeout_ms) {
  pollfd pfd{fd, POLLOUT, 0};
  int64_t deadline = MonotonicMillis() + timeout_ms;
  for (;;) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return false;
    int r = ::poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    int err = 0;
    socklen_t len = sizeof(err);
    return ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
}

// Accepts one connection within `timeout_ms` (blocking fd); -1 if none came.
int AcceptOne(int listen_fd, int timeout_ms) {
  pollfd pfd{listen_fd, POLLIN, 0};
  if (::poll(&pfd, 1, timeout_ms) != 1) return -1;
  return ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
}

// Closes fds when the scope ends.
class FdCloser {
 public:
  ~FdCloser() {
    for (int fd : fds_) ::close(fd);
  }
  int Add(int fd) {
    if (fd >= 0) fds_.push_back(fd);
    return fd;
  }

 private:
  std::vector<int> fds_;
};

// What one call ended with. Written on the client loop, read by the test under the mutex.
struct Outcome {
  int calls = 0;  // how many times `done` ran: must end at exactly 1
  int32_t ret = -1;
  std::string frame;
  int64_t at_ms = 0;
};

class ClientConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()); }
  void TearDown() override {
    if (client_) {
      client_loop_.Run([&] {
        client_->Close("test over");
        client_.reset();
      });
    }
    server_.Stop();
  }

  // Connects a ClientConnection (on the client loop) to `target`.
  void Connect(const NetAddress& target) {
    bool ok = client_loop_.Run([&] {
      client_ = std::make_shared<ClientConnection>(client_loop_.reactor(), target, &codec_,
                                                   ConnectionOptions{});
      std::string err;
      bool started = client_->Connect(&err);
      EXPECT_TRUE(started) << err;
      return started;
    });
    ASSERT_TRUE(ok);
  }

  // Starts connecting a ClientConnection with `options` and `connect_timeout_ms` to `target`.
  void ConnectWith(const NetAddress& target, const ConnectionOptions& options,
                   int64_t connect_timeout_ms) {
    bool ok = client_loop_.Run([&] {
      client_ = std::make_shared<ClientConnection>(client_loop_.reactor(), target, &codec_, options,
                                                   connect_timeout_ms);
      std::string err;
      bool started = client_->Connect(&err);
      EXPECT_TRUE(started) << err;
      return started;
    });
    ASSERT_TRUE(ok);
  }

  // Issues a call with `body`; its outcome lands in outcomes_[id]. Client loop thread only.
  uint32_t IssueCall(const std::string& body, int64_t timeout_ms) {
    uint32_t id = client_->NextRequestId();
    int64_t deadline = MonotonicNanos() + timeout_ms * kNanosPerMilli;
    client_->Call(id, Buffer(LengthPrefixCodec::CallFrame(id, body)), deadline,
                  [this, id](Status st, ChainBuffer&& frame) {
                    std::lock_guard lock(mu_);
                    Outcome& o = outcomes_[id];
                    ++o.calls;
                    o.ret = st.GetFrameworkRetCode();
                    o.frame = frame.ToString();
                    o.at_ms = MonotonicMillis();
                    order_.push_back(id);
                  });
    return id;
  }
  // IssueCall from the test thread.
  uint32_t StartCall(const std::string& body, int64_t timeout_ms) {
    return client_loop_.Run([&] { return IssueCall(body, timeout_ms); });
  }
  Outcome Get(uint32_t id) {
    std::lock_guard lock(mu_);
    return outcomes_[id];
  }
  size_t Completed() {
    std::lock_guard lock(mu_);
    return order_.size();
  }
  size_t Inflight() {
    return client_loop_.Run([&] { return client_->inflight(); });
  }

  ReactorThread server_loop_;
  EchoServer server_{&server_loop_};
  ReactorThread client_loop_;
  LengthPrefixCodec codec_;
  ClientConnectionPtr client_;
  std::mutex mu_;
  std::unordered_map<uint32_t, Outcome> outcomes_;
  std::vector<uint32_t> order_;
};

TEST_F(ClientConnectionTest, ThousandInFlightCallsAreMatchedById) {
  Connect(server_.address());
  constexpr int kCalls = 1000;
  // All calls are queued in one loop task, so they are all in flight before any reply is read.
  std::vector<uint32_t> ids = client_loop_.Run([&] {
    std::vector<uint32_t> out;
    for (int i = 0; i < kCalls; ++i) {
      uint32_t id = client_->NextRequestId();
      out.push_back(id);
      client_->Call(id, Buffer(LengthPrefixCodec::CallFrame(id, "payload-" + std::to_string(i))),
                    MonotonicNanos() + kFarDeadlineMs * kNanosPerMilli,
                    [this, id](Status st, ChainBuffer&& frame) {
                      std::lock_guard lock(mu_);
                      Outcome& o = outcomes_[id];
                      ++o.calls;
                      o.ret = st.GetFrameworkRetCode();
                      o.frame = frame.ToString();
                      order_.push_back(id);
                    });
    }
    EXPECT_EQ(client_->inflight(), static_cast<size_t>(kCalls));
    return out;
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == kCalls; }, 30'000))
      << Completed() << " of " << kCalls << " calls completed";
  for (int i = 0; i < kCalls; ++i) {
    Outcome o = Get(ids[i]);
    EXPECT_EQ(o.calls, 1) << "call " << i;
    EXPECT_EQ(o.ret, 0) << "call " << i;
    EXPECT_EQ(o.frame, LengthPrefixCodec::CallFrame(ids[i], "payload-" + std::to_string(i)))
        << "call " << i << " got another call's reply";
  }
  EXPECT_EQ(Inflight(), 0u);
  std::lock_guard lock(mu_);
  EXPECT_FALSE(std::is_sorted(order_.begin(), order_.end()))
      << "the server reverses each batch, so replies must have come out of order";
}

TEST_F(ClientConnectionTest, CallTimeoutGives101) {
  Connect(server_.address());
  int64_t start_ms = MonotonicMillis();
  uint32_t id = StartCall("drop", 50);
  ASSERT_TRUE(WaitFor([&] { return Completed() == 1; }));
  Outcome o = Get(id);
  EXPECT_EQ(o.calls, 1);
  EXPECT_EQ(o.ret, kClientInvokeTimeoutErr);
  EXPECT_TRUE(o.frame.empty());
  EXPECT_GE(o.at_ms - start_ms, 50) << "the timer fired before the call's deadline";
  EXPECT_EQ(Inflight(), 0u);
  // The connection is still good for the next call.
  uint32_t next = StartCall("still here", kFarDeadlineMs);
  ASSERT_TRUE(WaitFor([&] { return Completed() == 2; }));
  EXPECT_EQ(Get(next).ret, 0);
  EXPECT_EQ(Get(next).frame, LengthPrefixCodec::CallFrame(next, "still here"));
}

TEST_F(ClientConnectionTest, ConnectionRefusedGives111ToEveryPendingCall) {
  // A port that is bound but not listening refuses connections, and nobody else can take it.
  int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  NetAddress any;
  ASSERT_TRUE(NetAddress::Parse("127.0.0.1:0", &any));
  ASSERT_EQ(::bind(holder, any.sockaddr_ptr(), any.length()), 0);
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&ss), &len), 0);
  NetAddress refused = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);

  // The calls are issued in the loop task that starts the connect, so they are pending when
  // the refusal arrives.
  std::vector<uint32_t> ids = client_loop_.Run([&] {
    std::vector<uint32_t> out;
    client_ = std::make_shared<ClientConnection>(client_loop_.reactor(), refused, &codec_,
                                                 ConnectionOptions{});
    std::string err;
    if (!client_->Connect(&err)) {
      ADD_FAILURE() << "connect failed synchronously: " << err;
      return out;
    }
    for (int i = 0; i < 3; ++i) out.push_back(IssueCall("hello", kFarDeadlineMs));
    return out;
  });
  ASSERT_EQ(ids.size(), 3u);
  ASSERT_TRUE(WaitFor([&] { return Completed() == ids.size(); }));
  for (uint32_t id : ids) {
    Outcome o = Get(id);
    EXPECT_EQ(o.calls, 1);
    EXPECT_EQ(o.ret, kClientConnectErr) << "call " << id;
  }
  EXPECT_FALSE(client_loop_.Run([&] { return client_->usable(); }));
  EXPECT_EQ(Inflight(), 0u);
  ::close(holder);
}

TEST_F(ClientConnectionTest, LateReplyAfterTimeoutIsIgnored) {
  Connect(server_.address());
  // The first reply comes at 200 ms, after its call timed out at 50 ms; the second call's reply
  // comes at 400 ms, so by the time it completes the late reply has been read (same stream).
  uint32_t late = StartCall("delay:200", 50);
  uint32_t slow = StartCall("delay:400", kFarDeadlineMs);
  ASSERT_TRUE(WaitFor([&] { return Completed() == 2; }));
  Outcome a = Get(late);
  Outcome b = Get(slow);
  EXPECT_EQ(a.calls, 1) << "the timed-out call's callback must not run again for its late reply";
  EXPECT_EQ(a.ret, kClientInvokeTimeoutErr);
  EXPECT_EQ(b.calls, 1);
  EXPECT_EQ(b.ret, 0);
  EXPECT_EQ(b.frame, LengthPrefixCodec::CallFrame(slow, "delay:400"));
  EXPECT_TRUE(client_loop_.Run([&] { return client_->usable(); }));
  EXPECT_EQ(Inflight(), 0u);
  EXPECT_EQ(server_.frames_seen(), 2u);
}

TEST_F(ClientConnectionTest, LostConnectionGives141ToPendingCalls) {
  Connect(server_.address());
  uint32_t warmup = StartCall("warm up", kFarDeadlineMs);
  ASSERT_TRUE(WaitFor([&] { return Completed() == 1; }));
  ASSERT_EQ(Get(warmup).ret, 0);

  uint32_t a = StartCall("drop", kFarDeadlineMs);
  uint32_t b = StartCall("close", kFarDeadlineMs);
  ASSERT_TRUE(WaitFor([&] { return Completed() == 3; }));
  EXPECT_EQ(Get(a).ret, kClientNetworkErr);
  EXPECT_EQ(Get(b).ret, kClientNetworkErr);
  EXPECT_EQ(Get(a).calls, 1);
  EXPECT_EQ(Get(b).calls, 1);
  EXPECT_FALSE(client_loop_.Run([&] { return client_->usable(); }));
}

// A listener with backlog 0 that never accepts, its accept queue filled by a few plain connects:
// further SYNs are dropped, so a connect neither completes nor fails. connect_timeout_ms must
// end it, failing every call waiting on it with 111 long before the calls' own deadlines.
TEST_F(ClientConnectionTest, ConnectTimeoutGives111ToEveryPendingCall) {
  FdCloser fds;
  NetAddress blackhole;
  int lfd = fds.Add(Listen(/*backlog=*/0, &blackhole));
  ASSERT_GE(lfd, 0);
  for (int i = 0; i < 4; ++i) ASSERT_GE(fds.Add(StartConnect(blackhole)), 0);
  int probe = fds.Add(StartConnect(blackhole));
  ASSERT_GE(probe, 0);
  if (ConnectCompletes(probe, 200)) {
    GTEST_SKIP() << "this kernel completed a connect to a listener whose accept queue is full; "
                    "cannot make a connect that hangs";
  }

  constexpr int64_t kConnectTimeoutMs = 200;
  constexpr int64_t kCallTimeoutMs = 5000;
  int64_t start_ms = MonotonicMillis();
  ConnectWith(blackhole, ConnectionOptions{}, kConnectTimeoutMs);
  std::vector<uint32_t> ids = client_loop_.Run([&] {
    std::vector<uint32_t> out;
    for (int i = 0; i < 3; ++i) out.push_back(IssueCall("hello", kCallTimeoutMs));
    return out;
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == ids.size(); }, 3 * kCallTimeoutMs));
  for (uint32_t id : ids) {
    Outcome o = Get(id);
    EXPECT_EQ(o.calls, 1) << "call " << id;
    EXPECT_EQ(o.ret, kClientConnectErr) << "call " << id;
    EXPECT_TRUE(o.frame.empty());
    EXPECT_GE(o.at_ms - start_ms, kConnectTimeoutMs) << "failed before the connect timeout";
    EXPECT_LT(o.at_ms - start_ms, kCallTimeoutMs / 2)
        << "the call waited for its own deadline, not the connect timeout";
  }
  EXPECT_FALSE(client_loop_.Run([&] { return client_->usable(); }))
      << "the timed-out connection is still usable";
  EXPECT_EQ(Inflight(), 0u);
  // A call on the closed connection fails at once instead of waiting.
  uint32_t late = StartCall("late", kCallTimeoutMs);
  ASSERT_TRUE(WaitFor([&] { return Completed() == ids.size() + 1; }));
  EXPECT_EQ(Get(late).ret, kClientNetworkErr);
}

// A peer that takes one call and then stops reading: once more than max_pending_write_bytes of
// requests wait in the connection, a new call is refused at once with 124. The calls accepted
// before stay pending, and each callback still runs exactly once when the connection closes.
TEST_F(ClientConnectionTest, BackloggedConnectionRefusesCallsWith124) {
  FdCloser fds;
  NetAddress addr;
  int lfd = fds.Add(Listen(/*backlog=*/4, &addr, /*rcvbuf=*/16 << 10));
  ASSERT_GE(lfd, 0);
  ConnectionOptions options;
  options.max_pending_write_bytes = 64u << 10;
  ConnectWith(addr, options, /*connect_timeout_ms=*/0);
  int peer = fds.Add(AcceptOne(lfd, 10'000));
  ASSERT_GE(peer, 0) << "the client never connected";

  // One call answered by hand, so the connection is known to be established on the client.
  uint32_t first = StartCall("first", kFarDeadlineMs);
  std::string request;
  ASSERT_EQ(
      ReadExactly(peer, LengthPrefixCodec::CallFrame(first, "first").size(), 10'000, &request),
      ReadStatus::kOk);
  ASSERT_TRUE(WriteAll(peer, request));
  ASSERT_TRUE(WaitFor([&] { return Completed() == 1; }));
  ASSERT_EQ(Get(first).ret, 0);

  // The peer reads nothing more. 16 KiB requests, one after another, until one is refused.
  constexpr int kMaxCalls = 4096;  // 64 MiB: far beyond what the socket buffers can take
  const std::string body(16u << 10, 'r');
  struct Issued {
    std::vector<uint32_t> accepted;
    uint32_t refused = 0;
    size_t pending_bytes_at_refusal = 0;
  };
  Issued issued = client_loop_.Run([&] {
    Issued out;
    for (int i = 0; i < kMaxCalls; ++i) {
      uint32_t id = IssueCall(body, kFarDeadlineMs);
      std::lock_guard lock(mu_);
      if (outcomes_.count(id) != 0) {  // completed inline: refused
        out.refused = id;
        break;
      }
      out.accepted.push_back(id);
    }
    return out;
  });
  ASSERT_NE(issued.refused, 0u) << "all " << kMaxCalls << " calls of 16 KiB were accepted by "
                                << "a peer that reads nothing";
  Outcome refused = Get(issued.refused);
  EXPECT_EQ(refused.calls, 1);
  EXPECT_EQ(refused.ret, kClientOverloadErr);
  EXPECT_TRUE(refused.frame.empty());
  // More than 64 KiB must have queued first: at least four whole requests.
  EXPECT_GE(issued.accepted.size(), 4u);
  EXPECT_EQ(Inflight(), issued.accepted.size()) << "accepted calls did not stay pending";
  EXPECT_EQ(Completed(), 2u);
  EXPECT_TRUE(client_loop_.Run([&] { return client_->usable(); }))
      << "refusing a call must not close the connection";
  // Refused again while the backlog stands.
  uint32_t again = StartCall("again", kFarDeadlineMs);
  ASSERT_TRUE(WaitFor([&] { return Completed() == 3; }));
  EXPECT_EQ(Get(again).ret, kClientOverloadErr);

  // Closing fails every accepted call once, with 141.
  client_loop_.Run([&] { client_->Close("test closes"); });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 3 + issued.accepted.size(); }));
  for (uint32_t id : issued.accepted) {
    Outcome o = Get(id);
    EXPECT_EQ(o.calls, 1) << "call " << id;
    EXPECT_EQ(o.ret, kClientNetworkErr) << "call " << id;
  }
  EXPECT_EQ(Get(issued.refused).calls, 1);
  EXPECT_EQ(Get(again).calls, 1);
  EXPECT_EQ(Inflight(), 0u);
}

}  // namespace
}  // namespace trpc::testing
