#include "trpc/transport/connection.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/transport/length_prefix_codec.h"
#include "test/transport/loopback.h"
#include "test/transport/reactor_thread.h"

namespace trpc::testing {
namespace {

// Position-dependent bytes, so a lost or reordered chunk shows up in a comparison.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

ChainBuffer Buffer(std::string_view s) {
  ChainBuffer b;
  b.Append(s);
  return b;
}

enum class EndOfStream { kEof, kReset, kTimeout };

// Reads from a blocking socket until EOF, an error or `timeout_ms`; what arrives first is
// appended to `*received`. Unlike WaitForPeerClose, tells an orderly close (FIN) from a reset.
EndOfStream ReadToEnd(int fd, int64_t timeout_ms, std::string* received) {
  int64_t deadline = MonotonicMillis() + timeout_ms;
  char buf[64 * 1024];
  for (;;) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return EndOfStream::kTimeout;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return EndOfStream::kTimeout;
    ssize_t got = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (got > 0) {
      received->append(buf, static_cast<size_t>(got));
    } else if (got == 0) {
      return EndOfStream::kEof;
    } else if (errno != EAGAIN && errno != EINTR) {
      return EndOfStream::kReset;
    }
  }
}

// Runs a function when the scope ends.
class Cleanup {
 public:
  explicit Cleanup(std::function<void()> fn) : fn_(std::move(fn)) {}
  ~Cleanup() { fn_(); }
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;

 private:
  std::function<void()> fn_;
};

// Bytes the kernel holds unread for `fd`.
size_t UnreadBytes(int fd) {
  int n = 0;
  return ::ioctl(fd, FIONREAD, &n) == 0 ? static_cast<size_t>(n) : 0;
}

// Records what the connection hands up. Callbacks run on the loop thread; the test thread reads
// through the locked accessors.
class RecordingHandler : public Connection::Handler {
 public:
  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    std::string f = frame.ToString();
    if (echo_) conn->Send(Buffer(f));
    bool shutdown = !shutdown_on_.empty() && f == shutdown_on_;
    current_.push_back(std::move(f));
    {
      std::lock_guard lock(mu_);
      ++frame_count_;
    }
    if (shutdown) conn->Shutdown("asked to shut down");
  }
  // A batch is the frames between two OnBatchEnd calls.
  void OnBatchEnd(Connection* conn) override {
    size_t pending_after_echo = echo_ ? conn->pending_write_bytes() : 0;
    std::lock_guard lock(mu_);
    batches_.push_back(std::move(current_));
    current_.clear();
    pending_after_echo_.push_back(pending_after_echo);
  }
  void OnClose(Connection* conn, const std::string& reason) override {
    std::lock_guard lock(mu_);
    close_reasons_.push_back(reason);
    close_causes_.push_back(conn->close_cause());
  }

  void set_echo(bool on) { echo_ = on; }
  // The frame (whole, prefix included) after whose handling the connection is shut down. Set
  // before the connection starts.
  void set_shutdown_on(std::string frame) { shutdown_on_ = std::move(frame); }
  size_t FrameCount() {
    std::lock_guard lock(mu_);
    return frame_count_;
  }
  std::vector<std::vector<std::string>> Batches() {
    std::lock_guard lock(mu_);
    return batches_;
  }
  std::vector<size_t> PendingAfterEcho() {
    std::lock_guard lock(mu_);
    return pending_after_echo_;
  }
  std::vector<std::string> CloseReasons() {
    std::lock_guard lock(mu_);
    return close_reasons_;
  }
  std::vector<CloseCause> CloseCauses() {
    std::lock_guard lock(mu_);
    return close_causes_;
  }

 private:
  std::atomic<bool> echo_{false};
  std::string shutdown_on_;
  std::mutex mu_;
  size_t frame_count_ = 0;
  std::vector<std::string> current_;  // loop thread only
  std::vector<std::vector<std::string>> batches_;
  std::vector<size_t> pending_after_echo_;
  std::vector<std::string> close_reasons_;
  std::vector<CloseCause> close_causes_;
};

class ConnectionTest : public ::testing::Test {
 protected:
  // Makes a loopback pair and wraps its server end in a Connection on the loop thread; the test
  // plays the peer on pair_.client_fd.
  void Open(const ConnectionOptions& options, bool start = true) {
    pair_ = MakeTcpPair();
    ASSERT_GE(pair_.server_fd, 0) << "cannot make a loopback TCP pair";
    conn_ = loop_.Run([&] {
      auto c = std::make_shared<Connection>(loop_.reactor(), pair_.server_fd, pair_.client_addr,
                                            &codec_, &handler_, options);
      if (start) c->Start();
      return c;
    });
  }
  void StartConnection() {
    loop_.Run([&] { conn_->Start(); });
  }
  void TearDown() override {
    if (conn_) {
      loop_.Run([&] {
        conn_->Close("test over");
        conn_.reset();
      });
    }
    if (pair_.client_fd >= 0) ::close(pair_.client_fd);
  }

  int peer() const { return pair_.client_fd; }
  uint64_t BytesIn() {
    return loop_.Run([&] { return conn_->stats().bytes_in; });
  }
  bool Closed() {
    return loop_.Run([&] { return conn_->closed(); });
  }
  size_t PendingWrite() {
    return loop_.Run([&] { return conn_->pending_write_bytes(); });
  }
  // The handler hears of a close just after the fd is closed, so the peer can see EOF first.
  std::vector<std::string> CloseReasonsOnceClosed() {
    WaitFor([&] { return !handler_.CloseReasons().empty(); });
    return handler_.CloseReasons();
  }
  // The peer sees the connection closed, no sooner than `at_least_ms` after `start_ms`, and
  // the close was a timeout's.
  void ExpectClosedByTimeout(int64_t start_ms, int64_t at_least_ms, const char* what) {
    std::string got;
    ASSERT_TRUE(WaitForPeerClose(peer(), 5000, &got)) << what << " still open after 5 s";
    EXPECT_GE(MonotonicMillis() - start_ms, at_least_ms) << what << " closed too soon";
    ASSERT_TRUE(WaitFor([&] { return !handler_.CloseCauses().empty(); }));
    EXPECT_EQ(handler_.CloseCauses(), std::vector<CloseCause>{CloseCause::kTimeout});
  }

  LengthPrefixCodec codec_;
  RecordingHandler handler_;
  ReactorThread loop_;  // after the handler: the loop stops before the handler goes away
  TcpPair pair_;
  ConnectionPtr conn_;
};

TEST_F(ConnectionTest, FramesOfOneWriteArriveInOneBatch) {
  Open(ConnectionOptions{});
  std::string wire;
  std::vector<std::string> expected;
  for (int i = 0; i < 100; ++i) {
    expected.push_back(LengthPrefixCodec::Frame("frame-" + std::to_string(i)));
    wire += expected.back();
  }
  ASSERT_TRUE(WriteAll(peer(), wire));
  ASSERT_TRUE(WaitFor([&] { return handler_.FrameCount() == expected.size(); }));
  auto batches = handler_.Batches();
  ASSERT_EQ(batches.size(), 1u) << "one write of 100 small frames must be one read batch";
  EXPECT_EQ(batches[0], expected);
}

TEST_F(ConnectionTest, FrameSplitAcrossWritesIsReassembled) {
  Open(ConnectionOptions{});
  const std::string first = LengthPrefixCodec::Frame(Pattern(1000));
  const std::string second = LengthPrefixCodec::Frame("second");

  // Half of the length prefix, then part of the payload: nothing may be handed up yet.
  ASSERT_TRUE(WriteAll(peer(), first.substr(0, 2)));
  ASSERT_TRUE(WaitFor([&] { return BytesIn() == 2; }));
  EXPECT_EQ(handler_.FrameCount(), 0u);
  ASSERT_TRUE(WriteAll(peer(), first.substr(2, 500)));
  ASSERT_TRUE(WaitFor([&] { return BytesIn() == 502; }));
  EXPECT_EQ(handler_.FrameCount(), 0u);

  // The rest of the first frame plus the start of the second, then the rest of the second.
  ASSERT_TRUE(WriteAll(peer(), first.substr(502) + second.substr(0, 3)));
  ASSERT_TRUE(WaitFor([&] { return handler_.FrameCount() == 1; }));
  ASSERT_TRUE(WriteAll(peer(), second.substr(3)));
  ASSERT_TRUE(WaitFor([&] { return handler_.FrameCount() == 2; }));

  auto batches = handler_.Batches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], std::vector<std::string>{first});
  EXPECT_EQ(batches[1], std::vector<std::string>{second});
  EXPECT_FALSE(Closed());
}

TEST_F(ConnectionTest, RepliesQueuedDuringABatchGoOutWithTheBatchFlush) {
  handler_.set_echo(true);
  Open(ConnectionOptions{});
  std::string wire = LengthPrefixCodec::Frame("a") + LengthPrefixCodec::Frame("bb") +
                     LengthPrefixCodec::Frame("ccc");
  ASSERT_TRUE(WriteAll(peer(), wire));
  std::string echoed;
  ASSERT_EQ(ReadExactly(peer(), wire.size(), 5000, &echoed), ReadStatus::kOk);
  EXPECT_EQ(echoed, wire);
  // Inside the batch every Send only queued its bytes; the batch's single flush wrote them.
  auto pending = handler_.PendingAfterEcho();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0], wire.size());
  EXPECT_EQ(PendingWrite(), 0u);
}

TEST_F(ConnectionTest, SendOutsideABatchFlushesAtOnce) {
  Open(ConnectionOptions{});
  const std::string frame = LengthPrefixCodec::Frame("pushed");
  size_t pending = loop_.Run([&] {
    conn_->Send(Buffer(frame));
    return conn_->pending_write_bytes();
  });
  EXPECT_EQ(pending, 0u) << "a small Send outside a read batch must be written immediately";
  std::string got;
  ASSERT_EQ(ReadExactly(peer(), frame.size(), 5000, &got), ReadStatus::kOk);
  EXPECT_EQ(got, frame);
}

TEST_F(ConnectionTest, LargeWriteThatHitsEagainCompletesOnEpollOut) {
  Open(ConnectionOptions{});
  constexpr size_t kSize = 24u << 20;  // far more than loopback socket buffers hold
  const std::string data = Pattern(kSize);
  size_t pending = loop_.Run([&] {
    conn_->Send(Buffer(data));
    return conn_->pending_write_bytes();
  });
  ASSERT_GT(pending, 0u) << "24 MiB cannot fit in the socket buffers: writev must hit EAGAIN";

  // Only EPOLLOUT can move the rest: nobody calls Send() or Flush() again.
  std::string got;
  got.reserve(kSize);
  ASSERT_EQ(ReadExactly(peer(), kSize, 60'000, &got), ReadStatus::kOk);
  EXPECT_TRUE(got == data) << "the bytes arrived corrupted or reordered";
  EXPECT_TRUE(WaitFor([&] { return PendingWrite() == 0; }));
  EXPECT_EQ(loop_.Run([&] { return conn_->stats().bytes_out; }), kSize);
  EXPECT_FALSE(Closed());
}

TEST_F(ConnectionTest, IdleConnectionIsClosed) {
  ConnectionOptions options;
  options.idle_timeout_ms = 100;
  int64_t start_ms = MonotonicMillis();
  Open(options);
  std::string got;
  ASSERT_TRUE(WaitForPeerClose(peer(), 5000, &got)) << "idle connection still open after 5 s";
  EXPECT_GE(MonotonicMillis() - start_ms, 100) << "closed before its idle timeout";
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"idle timeout"});
}

TEST_F(ConnectionTest, TrafficKeepsAConnectionOpenPastItsIdleTimeout) {
  handler_.set_echo(true);
  ConnectionOptions options;
  options.idle_timeout_ms = 300;
  Open(options);
  const std::string frame = LengthPrefixCodec::Frame("ping");
  // 1 s of traffic every 50 ms: more than three idle periods, never idle for one.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(WriteAll(peer(), frame)) << "round " << i;
    std::string got;
    ASSERT_EQ(ReadExactly(peer(), frame.size(), 5000, &got), ReadStatus::kOk) << "round " << i;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(Closed());
  // Once the traffic stops, the timer does close it.
  std::string got;
  EXPECT_TRUE(WaitForPeerClose(peer(), 5000, &got));
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"idle timeout"});
}

TEST_F(ConnectionTest, SilentConnectionIsClosedAtItsSilentTimeout) {
  ConnectionOptions options;
  options.silent_timeout_ms = 100;  // idle_timeout_ms stays 60 s
  int64_t start_ms = MonotonicMillis();
  Open(options);
  ExpectClosedByTimeout(start_ms, 100, "silent connection");
}

TEST_F(ConnectionTest, OneByteEndsTheSilentTimeout) {
  handler_.set_echo(true);
  ConnectionOptions options;
  options.silent_timeout_ms = 100;
  Open(options);
  const std::string frame = LengthPrefixCodec::Frame("ping");
  ASSERT_TRUE(WriteAll(peer(), frame));
  std::string got;
  ASSERT_EQ(ReadExactly(peer(), frame.size(), 5000, &got), ReadStatus::kOk);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(Closed()) << "closed as silent after it had sent a frame";
}

TEST_F(ConnectionTest, FrameLeftIncompleteClosesAfterFrameReadTimeout) {
  ConnectionOptions options;
  options.frame_read_timeout_ms = 200;
  options.linger_ms = 0;  // the close is graceful: without this it waits 2 s for the peer's FIN
  Open(options);
  const std::string frame = LengthPrefixCodec::Frame("slow");
  int64_t start_ms = MonotonicMillis();
  ASSERT_TRUE(WriteAll(peer(), frame.substr(0, 6)));
  ExpectClosedByTimeout(start_ms, 200, "partial frame");
  EXPECT_EQ(handler_.FrameCount(), 0u);
}

// The frame read timeout counts only time the connection reads: a partial frame waiting while
// reading is paused for our own backlog is not the peer's delay.
TEST_F(ConnectionTest, FrameReadTimeoutDoesNotRunWhileReadingIsPaused) {
  handler_.set_echo(true);
  ConnectionOptions options;
  options.frame_read_timeout_ms = 1000;
  options.max_pending_write_bytes = 256u << 10;
  Open(options);
  const std::string request = LengthPrefixCodec::Frame("late");
  ASSERT_TRUE(WriteAll(peer(), request.substr(0, 6)));
  ASSERT_TRUE(WaitFor([&] { return BytesIn() == 6; }));
  // The peer does not read: the big reply stays queued over the limit and reading pauses.
  constexpr size_t kBig = 8u << 20;
  const std::string big = Pattern(kBig);
  ASSERT_TRUE(loop_.Run([&] {
    conn_->Send(Buffer(big));
    return conn_->reading_paused();
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(Closed()) << "closed for a frame it did not read";
  // The peer catches up, reading resumes, and the frame completed now is answered.
  std::string got;
  ASSERT_EQ(ReadExactly(peer(), kBig, 60'000, &got), ReadStatus::kOk);
  ASSERT_TRUE(WriteAll(peer(), request.substr(6)));
  std::string reply;
  ASSERT_EQ(ReadExactly(peer(), request.size(), 5000, &reply), ReadStatus::kOk);
  EXPECT_EQ(reply, request);
  EXPECT_FALSE(Closed());
}

TEST_F(ConnectionTest, FrameAboveMaxPacketSizeClosesBeforeItsPayloadArrives) {
  ConnectionOptions options;
  options.max_packet_size = 1024;
  Open(options);
  // Exactly at the limit: accepted.
  ASSERT_TRUE(WriteAll(peer(), LengthPrefixCodec::Frame(std::string(1020, 'a'))));
  ASSERT_TRUE(WaitFor([&] { return handler_.FrameCount() == 1; }));
  // One byte over, and only its length prefix is sent: the connection must close at once.
  char prefix[4];
  PutBe32(1021, prefix);
  ASSERT_TRUE(WriteAll(peer(), std::string_view(prefix, 4)));
  std::string got;
  ASSERT_TRUE(WaitForPeerClose(peer(), 5000, &got)) << "still waiting for the oversized payload";
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(handler_.FrameCount(), 1u);
  auto reasons = CloseReasonsOnceClosed();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_TRUE(reasons[0].starts_with("protocol error")) << reasons[0];
}

TEST_F(ConnectionTest, PeerCloseIsNoticed) {
  handler_.set_echo(true);
  Open(ConnectionOptions{});
  const std::string frame = LengthPrefixCodec::Frame("bye");
  ASSERT_TRUE(WriteAll(peer(), frame));
  std::string got;
  ASSERT_EQ(ReadExactly(peer(), frame.size(), 5000, &got), ReadStatus::kOk);
  ::shutdown(peer(), SHUT_WR);
  got.clear();
  ASSERT_TRUE(WaitForPeerClose(peer(), 5000, &got));
  EXPECT_TRUE(got.empty());
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"peer closed"});
}

// The request and the FIN are both pending when the connection first looks at the socket (one
// edge-triggered event): the request must be answered and the close still noticed.
TEST_F(ConnectionTest, RequestAndFinArrivingTogetherAreBothHandled) {
  handler_.set_echo(true);
  Open(ConnectionOptions{}, /*start=*/false);
  const std::string frame = LengthPrefixCodec::Frame("last words");
  ASSERT_TRUE(WriteAll(peer(), frame));
  ASSERT_EQ(::shutdown(peer(), SHUT_WR), 0);
  StartConnection();
  std::string got;
  EXPECT_TRUE(WaitForPeerClose(peer(), 5000, &got))
      << "the connection never noticed the peer's FIN (it would linger until the idle timeout)";
  EXPECT_EQ(got, frame);
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"peer closed"});
}

TEST_F(ConnectionTest, ReadingPausesForASlowReaderAndResumesWhenItCatchesUp) {
  handler_.set_echo(true);
  ConnectionOptions options;
  options.max_pending_write_bytes = 256u << 10;
  Open(options);
  // The peer does not read: 8 MiB cannot all reach the kernel, so the queue stays over the limit.
  constexpr size_t kBig = 8u << 20;
  const std::string big = LengthPrefixCodec::Frame(Pattern(kBig - 4));
  bool paused = loop_.Run([&] {
    conn_->Send(Buffer(big));
    return conn_->reading_paused();
  });
  ASSERT_TRUE(paused) << "pending " << PendingWrite() << " bytes over a 256 KiB limit";

  // A request sent now is not read while the connection is paused.
  const std::string request = LengthPrefixCodec::Frame("after the flood");
  ASSERT_TRUE(WriteAll(peer(), request));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(handler_.FrameCount(), 0u);
  EXPECT_EQ(BytesIn(), 0u);

  // Draining the big reply resumes reading, and the waiting request is answered after it.
  std::string got;
  ASSERT_EQ(ReadExactly(peer(), big.size() + request.size(), 60'000, &got), ReadStatus::kOk);
  EXPECT_TRUE(got.substr(0, big.size()) == big);
  EXPECT_EQ(got.substr(big.size()), request);
  EXPECT_EQ(handler_.FrameCount(), 1u);
  EXPECT_FALSE(loop_.Run([&] { return conn_->reading_paused(); }));
}

// Shutdown while a reply is still queued: the reply goes out whole, then an orderly close (FIN,
// not a reset); a frame the peer sends after the Shutdown is never handed up.
TEST_F(ConnectionTest, ShutdownFlushesQueuedBytesAndHandsUpNoNewFrame) {
  Open(ConnectionOptions{});
  const std::string before = LengthPrefixCodec::Frame("before");
  ASSERT_TRUE(WriteAll(peer(), before));
  ASSERT_TRUE(WaitFor([&] { return handler_.FrameCount() == 1; }));
  const uint64_t bytes_in = BytesIn();
  ASSERT_EQ(bytes_in, before.size());

  // The peer does not read yet: 8 MiB cannot all reach the kernel, so some stays queued.
  constexpr size_t kBig = 8u << 20;
  const std::string big = Pattern(kBig);
  auto [pending, closed] = loop_.Run([&] {
    conn_->Send(Buffer(big));
    conn_->Shutdown("test shutdown");
    return std::make_pair(conn_->pending_write_bytes(), conn_->closed());
  });
  ASSERT_GT(pending, 0u) << "the kernel took all 8 MiB: nothing was left for Shutdown to flush";
  ASSERT_FALSE(closed) << "Shutdown closed with " << pending << " bytes still queued";

  // A frame sent after the Shutdown. Once it has reached the connection's socket (still unread,
  // or read and dropped), a round trip through the idle loop lets it handle the readiness event.
  const std::string after = LengthPrefixCodec::Frame("after shutdown");
  ASSERT_TRUE(WriteAll(peer(), after));
  ASSERT_TRUE(WaitFor(
      [&] { return UnreadBytes(pair_.server_fd) >= after.size() || BytesIn() > bytes_in; }));
  loop_.Run([] {});
  EXPECT_EQ(handler_.FrameCount(), 1u) << "a frame sent after Shutdown was handed up";
  EXPECT_FALSE(Closed());

  // Now the peer reads: every queued byte, then end of stream.
  std::string got;
  got.reserve(kBig);
  EndOfStream end = ReadToEnd(peer(), 60'000, &got);
  EXPECT_EQ(got.size(), kBig) << "the queued reply was cut short";
  EXPECT_TRUE(got == big) << "the queued reply arrived corrupted";
  EXPECT_EQ(end, EndOfStream::kEof)
      << (end == EndOfStream::kReset ? "the connection was reset instead of closed"
                                     : "the connection was never closed");
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"test shutdown"});
  EXPECT_EQ(handler_.FrameCount(), 1u) << "a frame sent after Shutdown was handed up";
}

// A graceful close that starts while reading is paused for a slow reader: once the backlog is
// written, the lingering connection reads again, so the peer's FIN ends it at once (not at
// linger_ms) and input the peer sent meanwhile is read and dropped, not left to cause a reset.
TEST_F(ConnectionTest, CloseAfterFlushWhilePausedLingersReadingAndEndsAtThePeersFin) {
  handler_.set_echo(true);
  ConnectionOptions options;
  options.max_pending_write_bytes = 256u << 10;
  options.linger_ms = 10'000;
  Open(options);
  constexpr size_t kBig = 8u << 20;
  const std::string big = LengthPrefixCodec::Frame(Pattern(kBig - 4));
  bool paused = loop_.Run([&] {
    conn_->Send(Buffer(big));
    conn_->CloseAfterFlush("done");
    return conn_->reading_paused();
  });
  ASSERT_TRUE(paused) << "pending " << PendingWrite() << " bytes over a 256 KiB limit";

  // Input that arrives while paused, then everything queued is read: the connection sends FIN.
  ASSERT_TRUE(WriteAll(peer(), LengthPrefixCodec::Frame("late")));
  std::string got;
  ASSERT_EQ(ReadExactly(peer(), big.size(), 60'000, &got), ReadStatus::kOk);
  EXPECT_TRUE(got == big);
  std::string rest;
  EXPECT_EQ(ReadToEnd(peer(), 5'000, &rest), EndOfStream::kEof);

  // The peer's FIN ends the lingering connection at once.
  int64_t fin_at = MonotonicMillis();
  ASSERT_EQ(::shutdown(peer(), SHUT_WR), 0);
  ASSERT_TRUE(WaitFor([&] { return Closed(); }, 5'000))
      << "the lingering connection did not read the peer's FIN";
  EXPECT_LT(MonotonicMillis() - fin_at, 2'000);
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"done"});
}

// The cause a close began with is the one the handler learns, even when a later event (here
// the peer's FIN, while the queued bytes are still being written) finishes it.
TEST_F(ConnectionTest, CloseCauseIsWhyTheCloseBegan) {
  Open(ConnectionOptions{});
  constexpr size_t kBig = 8u << 20;
  const std::string big = Pattern(kBig);
  bool closed = loop_.Run([&] {
    conn_->Send(Buffer(big));
    conn_->CloseAfterFlush("bad bytes", CloseCause::kProtocolError);
    return conn_->closed();
  });
  ASSERT_FALSE(closed) << "the kernel took all 8 MiB: nothing was left to flush";
  ASSERT_EQ(::shutdown(peer(), SHUT_WR), 0);  // the peer's FIN arrives while flushing
  std::string got;
  EXPECT_EQ(ReadToEnd(peer(), 60'000, &got), EndOfStream::kEof);
  EXPECT_EQ(got.size(), kBig);
  ASSERT_TRUE(WaitFor([&] { return !handler_.CloseCauses().empty(); }));
  EXPECT_EQ(handler_.CloseCauses(), std::vector<CloseCause>{CloseCause::kProtocolError});
}

// Shutdown from a handler drops the frames of its batch not yet handed over: the peer gets the
// replies made so far, then an orderly close.
TEST_F(ConnectionTest, ShutdownFromAHandlerDropsTheRestOfTheBatch) {
  handler_.set_echo(true);
  const std::string stop = LengthPrefixCodec::Frame("stop");
  handler_.set_shutdown_on(stop);
  const std::string first = LengthPrefixCodec::Frame("first");
  const std::string dropped = LengthPrefixCodec::Frame("dropped");
  Open(ConnectionOptions{}, /*start=*/false);
  // One write, read in one batch once the connection starts.
  ASSERT_TRUE(WriteAll(peer(), first + stop + dropped));
  ASSERT_TRUE(
      WaitFor([&] { return UnreadBytes(pair_.server_fd) == (first + stop + dropped).size(); }));
  StartConnection();
  std::string got;
  EndOfStream end = ReadToEnd(peer(), 10'000, &got);
  EXPECT_EQ(end, EndOfStream::kEof);
  EXPECT_EQ(got, first + stop);
  EXPECT_EQ(CloseReasonsOnceClosed(), std::vector<std::string>{"asked to shut down"});
  EXPECT_EQ(handler_.FrameCount(), 2u) << "a frame after the Shutdown was handed up";
}

// Echoes every frame and counts them; runs `on_frame` (loop thread) when frame number
// `trigger_frame` (0-based) has been handled.
class FloodHandler : public Connection::Handler {
 public:
  FloodHandler(size_t trigger_frame, std::function<void()> on_frame)
      : trigger_frame_(trigger_frame), on_frame_(std::move(on_frame)) {}
  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    conn->Send(std::move(frame));
    if (frames_.fetch_add(1, std::memory_order_relaxed) == trigger_frame_) on_frame_();
  }
  void OnClose(Connection*, const std::string&) override { closed_.store(true); }
  size_t frames() const { return frames_.load(std::memory_order_relaxed); }
  bool closed() const { return closed_.load(); }

 private:
  const size_t trigger_frame_;
  const std::function<void()> on_frame_;
  std::atomic<size_t> frames_{0};
  std::atomic<bool> closed_{false};
};

// Echoes every frame and notes how far the flood had got when each one arrived.
class NeighbourHandler : public Connection::Handler {
 public:
  explicit NeighbourHandler(const FloodHandler* flood) : flood_(flood) {}
  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    flood_frames_at_arrival_.store(flood_->frames());
    conn->Send(std::move(frame));
  }
  void OnClose(Connection*, const std::string&) override {}
  size_t flood_frames_at_arrival() const { return flood_frames_at_arrival_.load(); }

 private:
  const FloodHandler* flood_;
  std::atomic<size_t> flood_frames_at_arrival_{SIZE_MAX};
};

// A peer pours 24 MiB of small pipelined frames into one connection; a second connection on the
// same reactor sends one request while the first is being handled. The per-event read budget
// (kReadBudgetPerEvent, 4 MiB, in connection.cc) must let the loop serve the neighbour within a
// few budgets' worth of flood, and the continuation after each budget must lose, repeat or
// reorder nothing: every flood frame is echoed, in order.
TEST_F(ConnectionTest, ReadBudgetLetsANeighbourInAndLosesNoFloodFrame) {
  constexpr size_t kFrameSize = 64;
  constexpr size_t kFloodBytes = 24u << 20;
  constexpr size_t kFrames = kFloodBytes / kFrameSize;
  constexpr size_t kReadBudget = 4u << 20;
  // The neighbour writes once 2 MiB of the flood have been handled: by then the writer keeps the
  // socket full, so only the budget can make the flooded connection give up the loop.
  constexpr size_t kTrigger = (2u << 20) / kFrameSize;
  // With a working budget the neighbour's event is polled after at most the rest of the current
  // read event, one continuation, and one more event for the flood's own edge polled alongside
  // the neighbour's (plus up to 1 MiB of buffered input): four budgets is a safe bound. Without
  // a budget that yields, the neighbour waits until the flood's socket runs dry.
  constexpr size_t kMaxFramesBeforeNeighbour = 4 * kReadBudget / kFrameSize;
  static_assert(kTrigger + kMaxFramesBeforeNeighbour < kFrames);
  std::string flood;
  flood.reserve(kFloodBytes);
  for (size_t i = 0; i < kFrames; ++i) {
    flood += LengthPrefixCodec::Frame(fmt::format("{:060}", i));
  }
  ASSERT_EQ(flood.size(), kFloodBytes);
  const std::string probe = LengthPrefixCodec::Frame("neighbour");

  TcpPair flood_pair = MakeTcpPair();
  TcpPair neighbour_pair = MakeTcpPair();
  ASSERT_GE(flood_pair.server_fd, 0);
  ASSERT_GE(neighbour_pair.server_fd, 0);
  // Large socket buffers (the kernel caps them at its rmem_max/wmem_max): the writer stays well
  // ahead of the loop, so no read comes up short before the budget is spent.
  int big_buffer = 8 << 20;
  ::setsockopt(flood_pair.server_fd, SOL_SOCKET, SO_RCVBUF, &big_buffer, sizeof(big_buffer));
  ::setsockopt(flood_pair.client_fd, SOL_SOCKET, SO_SNDBUF, &big_buffer, sizeof(big_buffer));
  // The neighbour's request is written from inside the flood connection's read event, so it
  // can only be served once the loop leaves that connection.
  FloodHandler flood_handler(kTrigger, [&] { WriteAll(neighbour_pair.client_fd, probe); });
  NeighbourHandler neighbour_handler(&flood_handler);
  ConnectionPtr flood_conn;
  ConnectionPtr neighbour_conn;
  // However the test ends, the connections close on the loop before their handlers go away.
  Cleanup cleanup([&] {
    loop_.Run([&] {
      for (ConnectionPtr* c : {&flood_conn, &neighbour_conn}) {
        if (*c) (*c)->Close("test over");
        c->reset();
      }
    });
    ::close(flood_pair.client_fd);
    ::close(neighbour_pair.client_fd);
  });
  loop_.Run([&] {
    flood_conn =
        std::make_shared<Connection>(loop_.reactor(), flood_pair.server_fd, flood_pair.client_addr,
                                     &codec_, &flood_handler, ConnectionOptions{});
    neighbour_conn = std::make_shared<Connection>(loop_.reactor(), neighbour_pair.server_fd,
                                                  neighbour_pair.client_addr, &codec_,
                                                  &neighbour_handler, ConnectionOptions{});
    flood_conn->Start();
    neighbour_conn->Start();
  });

  // The echoes are read only after the neighbour's reply: until then the loop and the writer
  // have the two cores to themselves, so the writer keeps the flood's socket full. (The echoes
  // wait in the connection meanwhile: 24 MiB is below max_pending_write_bytes.)
  bool written = false;
  std::thread writer([&] { written = WriteAll(flood_pair.client_fd, flood); });
  std::string probe_reply;
  ReadStatus probe_status =
      ReadExactly(neighbour_pair.client_fd, probe.size(), 60'000, &probe_reply);
  std::string echoed;
  echoed.reserve(kFloodBytes);
  ReadStatus read_status = ReadExactly(flood_pair.client_fd, kFloodBytes, 120'000, &echoed);
  writer.join();

  EXPECT_EQ(probe_status, ReadStatus::kOk) << "the neighbour was never answered";
  EXPECT_EQ(probe_reply, probe);
  EXPECT_TRUE(written) << "the flood could not be written";
  ASSERT_EQ(read_status, ReadStatus::kOk)
      << "only " << echoed.size() << " of " << kFloodBytes << " echoed bytes arrived";
  if (echoed != flood) {
    size_t at = 0;
    while (at < flood.size() && echoed[at] == flood[at]) ++at;
    ADD_FAILURE() << "the echo differs from the flood at byte " << at << " (frame "
                  << at / kFrameSize << "): a frame was lost, repeated or reordered";
  }
  EXPECT_EQ(flood_handler.frames(), kFrames);
  size_t at_arrival = neighbour_handler.flood_frames_at_arrival();
  ASSERT_GT(at_arrival, kTrigger) << "the neighbour's request was handled before it was sent";
  EXPECT_LE(at_arrival - kTrigger, kMaxFramesBeforeNeighbour)
      << "the neighbour's request waited while " << at_arrival - kTrigger << " of the "
      << kFrames - kTrigger << " remaining flood frames (" << kFrameSize
      << " bytes each) were handled: the flooded connection kept the loop to itself";
  EXPECT_FALSE(flood_handler.closed());
  auto [bytes_in, neighbour_in] = loop_.Run([&] {
    return std::make_pair(flood_conn->stats().bytes_in, neighbour_conn->stats().bytes_in);
  });
  EXPECT_EQ(bytes_in, kFloodBytes);
  EXPECT_EQ(neighbour_in, probe.size());
}

}  // namespace
}  // namespace trpc::testing
