// StreamCore, the meeting point of a stream's loop thread and its user's thread, stressed (run
// under TSan): two ends joined on one reactor as a connection and a peer's session would join
// them (the writer's messages go to the reader's inbox, the reader's consumption returns the
// writer's window). Plain threads read and write with the blocking forms, or a chain of futures
// writes with the non-blocking one; the order, the count and the flow-control bound are
// checked, and a lost connection in the middle wakes both sides.

#include "trpc/transport/detail/stream_core.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test/common/wait_for.h"
#include "test/transport/loopback.h"
#include "test/transport/reactor_thread.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {
namespace {

constexpr uint32_t kId = 100;
constexpr int64_t kWindow = 65535;
constexpr size_t kMaxMessage = 20000;

// The peer's session, on the loop: A writes to B with a window; B's consumption credits A.
class Pipe {
 public:
  struct WriterLink final : StreamLink {
    Pipe* pipe;
    bool CanSend(uint32_t) override { return pipe->window > 0; }
    bool SendMessage(uint32_t, ChainBuffer&& msg, std::string*) override {
      const int64_t n = static_cast<int64_t>(msg.size());
      pipe->window -= n;
      pipe->in_flight += n;
      pipe->max_in_flight = std::max(pipe->max_in_flight, pipe->in_flight);
      pipe->b->OnMessage(std::move(msg));
      return true;
    }
    void Consumed(uint32_t, size_t) override {}
    void Finish(StreamCore*, const Status& status) override {
      pipe->b->OnRemoteEnd(status.OK() ? kSuccStatus : status);  // half-close, or a reset
    }
    void WatchBacklog(StreamCore*) override {}
  };
  struct ReaderLink final : StreamLink {
    Pipe* pipe;
    bool CanSend(uint32_t) override { return false; }
    bool SendMessage(uint32_t, ChainBuffer&&, std::string*) override { return false; }
    void Consumed(uint32_t, size_t n) override {
      pipe->in_flight -= static_cast<int64_t>(n);
      const bool was_blocked = pipe->window <= 0;
      pipe->window += static_cast<int64_t>(n);
      if (was_blocked && pipe->window > 0) pipe->a->OnWritable();
    }
    void Finish(StreamCore*, const Status&) override {}
    void WatchBacklog(StreamCore*) override {}
  };

  Pipe(const ConnectionPtr& conn) {
    a = std::make_shared<StreamCore>(conn, kId, 0, 0, 1 << 30, kWindow);
    b = std::make_shared<StreamCore>(conn, kId, 0, 0, 1 << 30, kWindow);
    writer_link.pipe = this;
    reader_link.pipe = this;
    a->Attach(&writer_link, true, true);
    b->Attach(&reader_link, true, true);
  }

  std::shared_ptr<StreamCore> a, b;
  WriterLink writer_link;
  ReaderLink reader_link;
  // Loop thread only.
  int64_t window = kWindow;
  int64_t in_flight = 0;  // delivered to B, not yet reported consumed
  int64_t max_in_flight = 0;
};

ChainBuffer Message(uint64_t seq, size_t size) {
  std::string s(std::max<size_t>(size, sizeof(seq)), static_cast<char>('a' + seq % 26));
  std::memcpy(s.data(), &seq, sizeof(seq));
  ChainBuffer b;
  b.Append(s);
  return b;
}

uint64_t SeqOf(const ChainBuffer& b) {
  std::string s = b.ToString();
  uint64_t seq = 0;
  if (s.size() >= sizeof(seq)) std::memcpy(&seq, s.data(), sizeof(seq));
  return seq;
}

// The connection only lends the streams its reactor: it never reads here.
class NoFrames final : public FrameCodec {
 public:
  SplitResult Split(ChainBuffer*, std::vector<ChainBuffer>*, size_t, std::string*) override {
    return SplitResult::kOk;
  }
};

class StreamCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pair_ = trpc::testing::MakeTcpPair();
    ASSERT_GE(pair_.server_fd, 0);
    conn_ = loop_.Run([&] {
      return std::make_shared<Connection>(loop_.reactor(), pair_.server_fd, pair_.client_addr,
                                          &codec_, nullptr, ConnectionOptions{});
    });
    pipe_ = loop_.Run([&] { return std::make_shared<Pipe>(conn_); });
  }
  void TearDown() override {
    loop_.Run([&] {
      pipe_.reset();
      conn_.reset();
    });
    ::close(pair_.client_fd);
  }

  // Reads until the end; checks the order. Returns the count read, or -1 on a gap.
  int64_t ReadAll(StreamCore* b, Status* end) {
    int64_t n = 0;
    for (;;) {
      ChainBuffer msg;
      Status st = b->Read(&msg, 20'000);
      if (!st.OK()) {
        *end = st;
        return n;
      }
      if (SeqOf(msg) != static_cast<uint64_t>(n)) return -1;
      ++n;
    }
  }

  NoFrames codec_;
  trpc::testing::ReactorThread loop_;
  trpc::testing::TcpPair pair_;
  ConnectionPtr conn_;
  std::shared_ptr<Pipe> pipe_;
};

TEST_F(StreamCoreTest, BlockingWriterAndReaderThreadsKeepOrderAndTheWindow) {
  constexpr int kMessages = 20000;
  std::thread writer([&] {
    std::mt19937 rng(1);
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_TRUE(pipe_->a->Write(Message(i, 1 + rng() % kMaxMessage)).OK());
    }
    pipe_->a->Finish(kSuccStatus);
  });
  Status end;
  int64_t read = ReadAll(pipe_->b.get(), &end);
  writer.join();
  EXPECT_EQ(read, kMessages);
  EXPECT_EQ(end.GetFrameworkRetCode(), kStreamServerReadEnd) << end.ToString();
  const int64_t max_in_flight = loop_.Run([&] { return pipe_->max_in_flight; });
  EXPECT_LE(max_in_flight, kWindow + static_cast<int64_t>(kMaxMessage) + 8);
}

// The non-blocking writer: each write continues from the last one's future, on the loop.
TEST_F(StreamCoreTest, AsyncWriterChainAndBlockingReader) {
  constexpr int kMessages = 5000;
  std::atomic<int> written{0};
  std::function<void(int)> next = [&](int i) {
    if (i == kMessages) {
      pipe_->a->Finish(kSuccStatus);
      return;
    }
    pipe_->a->AsyncWrite(Message(i, 1 + (i * 7919) % kMaxMessage)).Then([&, i](Future<>&& f) {
      ASSERT_FALSE(f.IsFailed());
      written.fetch_add(1);
      // A hop through the loop's queue keeps the chain from recursing while writes complete
      // at once.
      loop_.reactor()->Post([&, i] { next(i + 1); });
    });
  };
  loop_.reactor()->Post([&] { next(0); });
  Status end;
  EXPECT_EQ(ReadAll(pipe_->b.get(), &end), kMessages);
  EXPECT_EQ(written.load(), kMessages);
  const int64_t max_in_flight = loop_.Run([&] { return pipe_->max_in_flight; });
  EXPECT_LE(max_in_flight, kWindow + static_cast<int64_t>(kMaxMessage) + 8);
}

// A lost connection while both sides wait: the writer blocked on the window (the reader does
// not read) and an async reader both end with the network code.
TEST_F(StreamCoreTest, DetachWakesABlockedWriterAndAPendingReader) {
  std::atomic<bool> writer_done{false};
  Status writer_end;
  std::thread writer([&] {
    for (int i = 0;; ++i) {
      Status st = pipe_->a->Write(Message(i, kMaxMessage));
      if (!st.OK()) {
        writer_end = st;
        break;
      }
    }
    writer_done = true;
  });
  // It blocks once the window and the writer's own allowance are used.
  ASSERT_TRUE(
      trpc::testing::WaitFor([&] { return loop_.Run([&] { return pipe_->window <= 0; }); }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(writer_done.load());
  // An async read on a third stream end that nothing writes to.
  auto idle =
      loop_.Run([&] { return std::make_shared<StreamCore>(conn_, 7, 0, 0, 1 << 20, kWindow); });
  Future<ChainBuffer> pending = idle->AsyncRead();
  EXPECT_FALSE(pending.IsResolved());
  Status gone(kStreamServerNetworkErr, "the connection closed");
  loop_.Run([&] {
    pipe_->a->Detach(gone);
    idle->Detach(gone);
  });
  writer.join();
  EXPECT_EQ(writer_end.GetFrameworkRetCode(), kStreamServerNetworkErr);
  ASSERT_TRUE(pending.IsFailed());
  EXPECT_EQ(pending.GetException().GetFrameworkRetCode(), kStreamServerNetworkErr);
  loop_.Run([&] { idle.reset(); });
}

// LastReadCompressed follows each message taken: a message the protocol marked as having come
// compressed (gRPC's flag), the plain one after it, and every message of a stream with a content
// encoding (trpc compresses a whole stream).
struct ArrivedCompressed final : MessageMeta {
  ArrivedCompressed() { arrived_compressed = true; }
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<ArrivedCompressed>(*this);
  }
};

TEST_F(StreamCoreTest, LastReadCompressedFollowsEachMessage) {
  auto plain =
      loop_.Run([&] { return std::make_shared<StreamCore>(conn_, 7, 0, 0, 1 << 20, kWindow); });
  auto gzip =
      loop_.Run([&] { return std::make_shared<StreamCore>(conn_, 9, 0, 1, 1 << 20, kWindow); });
  loop_.Run([&] {
    ChainBuffer flagged = Message(0, 16);
    flagged.SetMeta(std::make_unique<ArrivedCompressed>());
    plain->OnMessage(std::move(flagged));
    plain->OnMessage(Message(1, 16));
    gzip->OnMessage(Message(0, 16));
  });
  EXPECT_FALSE(plain->LastReadCompressed());  // nothing read yet
  ChainBuffer msg;
  ASSERT_TRUE(plain->Read(&msg, 1000).OK());
  EXPECT_TRUE(plain->LastReadCompressed());
  Future<ChainBuffer> next = plain->AsyncRead(1000);
  ASSERT_TRUE(trpc::testing::WaitFor([&] { return next.IsResolved(); }, 1000));
  ASSERT_TRUE(next.IsReady());
  EXPECT_FALSE(plain->LastReadCompressed());
  ASSERT_TRUE(gzip->Read(&msg, 1000).OK());
  EXPECT_TRUE(gzip->LastReadCompressed());
  loop_.Run([&] {
    plain.reset();
    gzip.reset();
  });
}

// Unread messages count in their connection's held bytes (and so against the process's buffer
// bound) from their arrival until they are read, or the stream ends, or its last handle goes.
TEST_F(StreamCoreTest, UnreadMessagesCountInTheConnectionsHeldBytes) {
  ASSERT_EQ(loop_.Run([&] { return conn_->stream_held_bytes(); }), 0u);
  auto read_then_detach =
      loop_.Run([&] { return std::make_shared<StreamCore>(conn_, 7, 0, 0, 1 << 20, kWindow); });
  auto dropped =
      loop_.Run([&] { return std::make_shared<StreamCore>(conn_, 9, 0, 0, 1 << 20, kWindow); });
  loop_.Run([&] {
    read_then_detach->Attach(&pipe_->reader_link, true, true);
    dropped->Attach(&pipe_->reader_link, true, true);
    for (int i = 0; i < 3; ++i) read_then_detach->OnMessage(Message(i, 1000));
    dropped->OnMessage(Message(0, 500));
  });
  EXPECT_EQ(loop_.Run([&] { return conn_->stream_held_bytes(); }), 3500u);
  ChainBuffer msg;
  ASSERT_TRUE(read_then_detach->Read(&msg, 1000).OK());
  EXPECT_EQ(loop_.Run([&] { return conn_->stream_held_bytes(); }), 2500u);
  loop_.Run([&] {
    read_then_detach->Detach(Status(kStreamServerNetworkErr, "gone"));
    dropped.reset();  // its last handle: what it held goes with it
  });
  EXPECT_EQ(loop_.Run([&] { return conn_->stream_held_bytes(); }), 0u);
  // A protocol that counts unread bytes itself (gRPC's HTTP/2 session): not counted twice.
  auto grpc_like =
      loop_.Run([&] { return std::make_shared<StreamCore>(conn_, 11, 0, 0, 1 << 20, kWindow); });
  loop_.Run([&] {
    grpc_like->Attach(&pipe_->reader_link, true, false);
    grpc_like->OnMessage(Message(0, 800));
  });
  EXPECT_EQ(loop_.Run([&] { return conn_->stream_held_bytes(); }), 0u);
  loop_.Run([&] {
    read_then_detach.reset();
    grpc_like.reset();
  });
}

// A timed async read: it fails with the read timeout when nothing comes, the stream goes on;
// one served in time is not failed later by its timer; many timed reads racing their messages
// (the writer on another thread) each resolve exactly once, in order.
TEST_F(StreamCoreTest, AsyncReadTimesOutOrIsServedOnce) {
  Future<ChainBuffer> nothing = pipe_->b->AsyncRead(30);
  ASSERT_TRUE(trpc::testing::WaitFor([&] { return nothing.IsResolved(); }, 5000));
  ASSERT_TRUE(nothing.IsFailed());
  EXPECT_EQ(nothing.GetException().GetFrameworkRetCode(), kStreamServerReadTimeoutErr);

  Future<ChainBuffer> served = pipe_->b->AsyncRead(50);
  ASSERT_TRUE(pipe_->a->Write(Message(1, 100)).OK());
  ASSERT_TRUE(trpc::testing::WaitFor([&] { return served.IsResolved(); }, 5000));
  ASSERT_FALSE(served.IsFailed());
  EXPECT_EQ(SeqOf(served.GetValue()), 1u);
  // The next read waits past the first one's timeout: that timer is gone.
  Future<ChainBuffer> next = pipe_->b->AsyncRead();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(next.IsResolved());
  ASSERT_TRUE(pipe_->a->Write(Message(2, 100)).OK());
  ASSERT_TRUE(trpc::testing::WaitFor([&] { return next.IsResolved(); }, 5000));
  ASSERT_FALSE(next.IsFailed());
  EXPECT_EQ(SeqOf(next.GetValue()), 2u);

  // Racing: a writer thread sends 2000 messages at its own pace; the reader reads each with a
  // 1 ms timeout, retrying after a timeout. Every message arrives once, in order.
  std::thread writer([&] {
    for (uint64_t i = 3; i < 2003; ++i) {
      ASSERT_TRUE(pipe_->a->Write(Message(i, 64)).OK());
      if (i % 5 == 0) std::this_thread::sleep_for(std::chrono::microseconds(1500));
    }
  });
  uint64_t want = 3;
  int timeouts = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (want < 2003 && std::chrono::steady_clock::now() < give_up) {
    Future<ChainBuffer> r = BlockingGet(pipe_->b->AsyncRead(1));
    if (r.IsFailed()) {
      ASSERT_EQ(r.GetException().GetFrameworkRetCode(), kStreamServerReadTimeoutErr);
      ++timeouts;
      continue;
    }
    ASSERT_EQ(SeqOf(r.GetValue()), want);
    ++want;
  }
  writer.join();
  EXPECT_EQ(want, 2003u);
  std::printf("timed reads: %d timeouts among 2000 messages\n", timeouts);
}

}  // namespace
}  // namespace trpc::detail
