#include "trpc/transport/connection.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
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

// Records what the connection hands up. Callbacks run on the loop thread; the test thread reads
// through the locked accessors.
class RecordingHandler : public Connection::Handler {
 public:
  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    std::string f = frame.ToString();
    if (echo_) conn->Send(Buffer(f));
    current_.push_back(std::move(f));
    std::lock_guard lock(mu_);
    ++frame_count_;
  }
  // A batch is the frames between two OnBatchEnd calls.
  void OnBatchEnd(Connection* conn) override {
    size_t pending_after_echo = echo_ ? conn->pending_write_bytes() : 0;
    std::lock_guard lock(mu_);
    batches_.push_back(std::move(current_));
    current_.clear();
    pending_after_echo_.push_back(pending_after_echo);
  }
  void OnClose(Connection*, const std::string& reason) override {
    std::lock_guard lock(mu_);
    close_reasons_.push_back(reason);
  }

  void set_echo(bool on) { echo_ = on; }
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

 private:
  std::atomic<bool> echo_{false};
  std::mutex mu_;
  size_t frame_count_ = 0;
  std::vector<std::string> current_;  // loop thread only
  std::vector<std::vector<std::string>> batches_;
  std::vector<size_t> pending_after_echo_;
  std::vector<std::string> close_reasons_;
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

}  // namespace
}  // namespace trpc::testing
