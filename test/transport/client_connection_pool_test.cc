// Client connections for protocols that answer in order (FrameCodec::FifoResponses): matching
// by position, timed-out calls with and without live calls behind them, and the keep-alive pool
// (connection cap, pipelining depth, calls waiting for room and timing out there, a server that
// closes mid-stream failing only the calls it carried, Close()).
#include "trpc/transport/client_connection_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "test/transport/length_prefix_codec.h"
#include "test/transport/reactor_thread.h"
#include "trpc/base/clock.h"
#include "trpc/transport/acceptor.h"

namespace trpc::testing {
namespace {

constexpr int64_t kFarMs = 30'000;

// LengthPrefixCodec frames without ids on the wire: responses answer in order.
class FifoCodec final : public FrameCodec {
 public:
  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override {
    return inner_.Split(in, out, max_frame_size, err);
  }
  bool FifoResponses() const override { return true; }

 private:
  LengthPrefixCodec inner_;
};

ChainBuffer Frame(std::string_view payload) {
  ChainBuffer b;
  b.Append(LengthPrefixCodec::Frame(payload));
  return b;
}

std::string Payload(const std::string& frame) {
  return frame.size() < LengthPrefixCodec::kPrefixSize ? ""
                                                        : frame.substr(LengthPrefixCodec::kPrefixSize);
}

// A server that answers each connection's requests in order, as HTTP/1.1 does. The payload
// selects the behaviour: "delay:N" answers N ms later (and holds up the answers behind it),
// "close" closes the connection at once, "last" answers and then closes after the answer (later
// requests are not answered);
// anything else is echoed at once. Counts connections and the most requests seen waiting for
// their answer on one connection (pipelining depth). Loop thread only, through its ReactorThread.
class FifoServer : public Connection::Handler {
 public:
  explicit FifoServer(ReactorThread* loop) : loop_(loop) {}

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
      for (auto& [raw, c] : conns) c.conn->Close("server stopping");
    });
  }
  const NetAddress& address() const { return acceptor_->address(); }
  int accepted() { return loop_->Run([&] { return accepted_; }); }
  size_t max_waiting() { return loop_->Run([&] { return max_waiting_; }); }

  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    PerConn& pc = conns_.at(conn);
    if (pc.close_after != 0) return;  // after "last": not answered
    std::string payload = Payload(frame.ToString());
    if (payload == "close") {
      conn->Close("asked to close");
      return;
    }
    pc.answers.emplace_back();
    max_waiting_ = std::max(max_waiting_, pc.answers.size());
    std::optional<std::string>& slot = pc.answers.back();
    if (payload.starts_with("delay:")) {
      int ms = 0;
      std::from_chars(payload.data() + 6, payload.data() + payload.size(), ms);
      std::weak_ptr<Connection> weak = conn->shared_from_this();
      Reactor* r = loop_->reactor();
      size_t index = pc.answered + pc.answers.size() - 1;
      r->AddTimer(r->LoopTimeNs() + ms * kNanosPerMilli, [this, weak, index, payload] {
        auto c = weak.lock();
        if (!c || c->closed()) return;
        PerConn& p = conns_.at(c.get());
        p.answers[index - p.answered] = payload;
        Flush(c.get());
      });
      return;
    }
    slot = payload;
    if (payload == "last") pc.close_after = pc.answered + pc.answers.size();
    Flush(conn);
  }
  void OnClose(Connection* conn, const std::string&) override { conns_.erase(conn); }

 private:
  struct PerConn {
    ConnectionPtr conn;
    std::deque<std::optional<std::string>> answers;  // in request order; empty = not ready
    size_t answered = 0;
    size_t close_after = 0;  // close once this many are answered (0 = never)
  };

  void Flush(Connection* conn) {
    PerConn& pc = conns_.at(conn);
    while (!pc.answers.empty() && pc.answers.front().has_value()) {
      conn->Send(Frame(*pc.answers.front()));
      pc.answers.pop_front();
      ++pc.answered;
      if (pc.close_after != 0 && pc.answered == pc.close_after) {
        conn->CloseAfterFlush("last answer sent");
        return;
      }
    }
  }
  void OnAccept(int fd, const NetAddress& peer) {
    ConnectionOptions options;
    options.idle_timeout_ms = 0;
    auto conn = std::make_shared<Connection>(loop_->reactor(), fd, peer, &codec_, this, options);
    conns_[conn.get()].conn = conn;
    ++accepted_;
    conn->Start();
  }

  ReactorThread* loop_;
  FifoCodec codec_;
  std::unique_ptr<Acceptor> acceptor_;
  std::unordered_map<Connection*, PerConn> conns_;
  int accepted_ = 0;
  size_t max_waiting_ = 0;
};

struct Outcome {
  int calls = 0;
  int32_t ret = -1;
  std::string payload;
  int64_t at_ms = 0;
};

class FifoTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.Start()); }
  void TearDown() override {
    loop_.Run([&] {
      if (conn_) conn_->Close("test over");
      conn_.reset();
      pool_.reset();
    });
    server_.Stop();
  }

  ClientConnection::Done Record(int key) {
    return [this, key](Status st, ChainBuffer&& frame) {
      std::lock_guard lock(mu_);
      Outcome& o = outcomes_[key];
      ++o.calls;
      o.ret = st.GetFrameworkRetCode();
      o.payload = Payload(frame.ToString());
      o.at_ms = MonotonicMillis();
      ++completed_;
    };
  }
  // A call on the single connection (conn_) or on the pool (pool_), from the loop thread.
  void ConnCall(int key, std::string_view payload, int64_t timeout_ms) {
    conn_->Call(static_cast<uint32_t>(key), Frame(payload),
                MonotonicNanos() + timeout_ms * kNanosPerMilli, Record(key));
  }
  void PoolCall(int key, std::string_view payload, int64_t timeout_ms) {
    pool_->Call(static_cast<uint32_t>(key), Frame(payload),
                MonotonicNanos() + timeout_ms * kNanosPerMilli, Record(key));
  }
  void MakePool(size_t max_connections, uint32_t depth) {
    loop_.Run([&] {
      ClientConnectionPool::Options o;
      o.max_connections = max_connections;
      o.max_outstanding = depth;
      o.connection.idle_timeout_ms = 0;
      pool_ = std::make_unique<ClientConnectionPool>(loop_.reactor(), server_.address(), &codec_,
                                                     o);
    });
  }
  Outcome Get(int key) {
    std::lock_guard lock(mu_);
    return outcomes_[key];
  }
  int Completed() {
    std::lock_guard lock(mu_);
    return completed_;
  }

  ReactorThread server_loop_;
  FifoServer server_{&server_loop_};
  ReactorThread loop_;
  FifoCodec codec_;
  ClientConnectionPtr conn_;
  std::unique_ptr<ClientConnectionPool> pool_;
  std::mutex mu_;
  std::map<int, Outcome> outcomes_;
  int completed_ = 0;
};

TEST_F(FifoTest, ResponsesAnswerTheOldestCall) {
  loop_.Run([&] {
    conn_ = std::make_shared<ClientConnection>(loop_.reactor(), server_.address(), &codec_,
                                               ConnectionOptions{});
    std::string err;
    ASSERT_TRUE(conn_->Connect(&err)) << err;
    EXPECT_TRUE(conn_->fifo());
    for (int i = 1; i <= 200; ++i) ConnCall(i, "call " + std::to_string(i), kFarMs);
    EXPECT_EQ(conn_->outstanding(), 200u);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 200; }));
  for (int i = 1; i <= 200; ++i) {
    EXPECT_EQ(Get(i).calls, 1);
    EXPECT_EQ(Get(i).ret, 0);
    EXPECT_EQ(Get(i).payload, "call " + std::to_string(i));
  }
  EXPECT_EQ(loop_.Run([&] { return conn_->outstanding(); }), 0u);
}

// The slow first answer times its call out; the call behind it still gets its own answer (not
// the late one), and the connection stays.
TEST_F(FifoTest, TimedOutCallBeforeALiveOneKeepsItsPlace) {
  loop_.Run([&] {
    conn_ = std::make_shared<ClientConnection>(loop_.reactor(), server_.address(), &codec_,
                                               ConnectionOptions{});
    std::string err;
    ASSERT_TRUE(conn_->Connect(&err)) << err;
    ConnCall(1, "delay:200", 50);
    ConnCall(2, "second", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 2; }));
  EXPECT_EQ(Get(1).ret, kClientInvokeTimeoutErr);
  EXPECT_EQ(Get(2).ret, 0);
  EXPECT_EQ(Get(2).payload, "second");
  EXPECT_GE(Get(2).at_ms - Get(1).at_ms, 100);  // it waited for the slow answer
  EXPECT_TRUE(loop_.Run([&] { return conn_->usable() && conn_->outstanding() == 0; }));
}

// With nothing behind it, a timed-out call's connection is closed rather than kept waiting.
TEST_F(FifoTest, TimedOutCallAloneClosesTheConnection) {
  loop_.Run([&] {
    conn_ = std::make_shared<ClientConnection>(loop_.reactor(), server_.address(), &codec_,
                                               ConnectionOptions{});
    std::string err;
    ASSERT_TRUE(conn_->Connect(&err)) << err;
    ConnCall(1, "delay:5000", 50);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 1; }));
  EXPECT_EQ(Get(1).ret, kClientInvokeTimeoutErr);
  EXPECT_TRUE(WaitFor([&] { return loop_.Run([&] { return !conn_->usable(); }); }));
}

TEST_F(FifoTest, PoolOpensUpToItsCapAndQueuesTheRest) {
  MakePool(/*max_connections=*/3, /*depth=*/1);
  loop_.Run([&] {
    for (int i = 1; i <= 30; ++i) PoolCall(i, i % 2 ? "delay:10" : "n" + std::to_string(i), kFarMs);
    EXPECT_EQ(pool_->connection_count(), 3u);
    EXPECT_EQ(pool_->waiting(), 27u);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 30; }));
  for (int i = 1; i <= 30; ++i) {
    EXPECT_EQ(Get(i).ret, 0) << i;
    EXPECT_EQ(Get(i).payload, i % 2 ? "delay:10" : "n" + std::to_string(i)) << i;
  }
  EXPECT_EQ(server_.accepted(), 3);
  EXPECT_EQ(server_.max_waiting(), 1u);  // no pipelining
  // Kept alive: more calls reuse the connections.
  loop_.Run([&] {
    for (int i = 31; i <= 40; ++i) PoolCall(i, "again", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 40; }));
  EXPECT_EQ(server_.accepted(), 3);
}

TEST_F(FifoTest, PoolPipelinesUpToItsDepth) {
  MakePool(/*max_connections=*/2, /*depth=*/4);
  loop_.Run([&] {
    for (int i = 1; i <= 40; ++i) PoolCall(i, "delay:5", kFarMs);
    EXPECT_EQ(pool_->connection_count(), 2u);
    EXPECT_EQ(pool_->waiting(), 32u);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 40; }));
  for (int i = 1; i <= 40; ++i) EXPECT_EQ(Get(i).ret, 0) << i;
  EXPECT_EQ(server_.accepted(), 2);
  EXPECT_EQ(server_.max_waiting(), 4u);
}

TEST_F(FifoTest, CallWaitingForRoomTimesOut) {
  MakePool(1, 1);
  int64_t start = MonotonicMillis();
  loop_.Run([&] {
    PoolCall(1, "delay:300", kFarMs);
    PoolCall(2, "behind", 50);
    PoolCall(3, "behind too", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 3; }));
  EXPECT_EQ(Get(2).ret, kClientInvokeTimeoutErr);
  EXPECT_GE(Get(2).at_ms - start, 50);
  EXPECT_LT(Get(2).at_ms - start, 250);  // while the first call still held the connection
  EXPECT_EQ(Get(1).ret, 0);
  EXPECT_EQ(Get(3).ret, 0);
  EXPECT_EQ(Get(3).payload, "behind too");
  EXPECT_EQ(server_.accepted(), 1);
}

// The server drops a connection in the middle of a pipeline: the calls it carried fail with 141,
// the calls on the other connection and the ones still waiting are unaffected.
TEST_F(FifoTest, ServerCloseFailsOnlyTheCallsItCarried) {
  MakePool(2, 3);
  loop_.Run([&] {
    // Connection A gets 1-3, B gets 4-6 (a new connection before pipelining), then A 7...
    PoolCall(1, "delay:50", kFarMs);
    PoolCall(2, "delay:50", kFarMs);
    PoolCall(3, "delay:100", kFarMs);
    PoolCall(4, "close", kFarMs);
    PoolCall(5, "delay:20", kFarMs);
    PoolCall(6, "x", kFarMs);
    PoolCall(7, "waits", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 7; }));
  // Which connection took which call depends on Pick(); check by outcome: exactly the calls
  // pipelined with "close" failed.
  std::vector<int> failed, ok;
  for (int i = 1; i <= 7; ++i) (Get(i).ret == 0 ? ok : failed).push_back(i);
  for (int i : failed) EXPECT_EQ(Get(i).ret, kClientNetworkErr) << i;
  EXPECT_NE(std::find(failed.begin(), failed.end(), 4), failed.end());
  EXPECT_LE(failed.size(), 3u);
  EXPECT_NE(std::find(ok.begin(), ok.end(), 7), ok.end());
  for (int i : ok) EXPECT_EQ(Get(i).calls, 1);
  // The pool made a new connection for what came after.
  loop_.Run([&] { PoolCall(8, "after", kFarMs); });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 8; }));
  EXPECT_EQ(Get(8).ret, 0);
}

// A server that answers and then closes (as after "Connection: close"): the answered call is
// fine, the one pipelined behind it fails with 141, and the pool replaces the connection.
TEST_F(FifoTest, GracefulCloseAfterAnAnswer) {
  MakePool(1, 2);
  loop_.Run([&] {
    PoolCall(1, "last", kFarMs);
    PoolCall(2, "too late", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 2; }));
  EXPECT_EQ(Get(1).ret, 0);
  EXPECT_EQ(Get(1).payload, "last");
  EXPECT_EQ(Get(2).ret, kClientNetworkErr);
  loop_.Run([&] { PoolCall(3, "new connection", kFarMs); });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 3; }));
  EXPECT_EQ(Get(3).ret, 0);
  EXPECT_EQ(server_.accepted(), 2);
}

TEST_F(FifoTest, CloseFailsWaitingAndCarriedCalls) {
  MakePool(1, 1);
  loop_.Run([&] { PoolCall(1, "delay:5000", kFarMs); });
  // Connected (141, not 111): the request has reached the server.
  ASSERT_TRUE(WaitFor([&] { return server_.max_waiting() == 1; }));
  loop_.Run([&] {
    PoolCall(2, "waiting", kFarMs);
    pool_->Close("test closes");
    PoolCall(3, "after close", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 3; }));
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(Get(i).ret, kClientNetworkErr) << i;
    EXPECT_EQ(Get(i).calls, 1) << i;
  }
}

TEST_F(FifoTest, ConnectFailureFailsTheCallsWith111) {
  // A bound port that does not listen refuses connections.
  NetAddress refused;
  {
    Acceptor probe(loop_.reactor(), [](int, const NetAddress&) {});
    NetAddress any;
    std::string err;
    ASSERT_TRUE(NetAddress::Parse("127.0.0.1:0", &any));
    ASSERT_TRUE(probe.Listen(any, &err)) << err;
    refused = probe.address();
  }  // closed: nothing listens there now
  loop_.Run([&] {
    ClientConnectionPool::Options o;
    o.max_connections = 2;
    pool_ = std::make_unique<ClientConnectionPool>(loop_.reactor(), refused, &codec_, o);
    for (int i = 1; i <= 4; ++i) PoolCall(i, "x", kFarMs);
  });
  ASSERT_TRUE(WaitFor([&] { return Completed() == 4; }));
  for (int i = 1; i <= 4; ++i) EXPECT_EQ(Get(i).ret, kClientConnectErr) << i;
  EXPECT_EQ(loop_.Run([&] { return pool_->connection_count(); }), 0u);
}

}  // namespace
}  // namespace trpc::testing
