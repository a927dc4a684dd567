// The trpc stream state machine: order, flow control and closing, one end at a time, then two
// ends that follow the rules driven at random against each other.

#include "trpc/codec/trpc/detail/stream_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <string>

namespace trpc::detail {
namespace {

using Role = TrpcStreamState::Role;
using ::testing::HasSubstr;

// A client whose stream is open: its INIT sent with `ours`, the server's received with `theirs`.
TrpcStreamState OpenClient(uint32_t ours, uint32_t theirs) {
  TrpcStreamState s(Role::kClient);
  std::string err;
  EXPECT_TRUE(s.OnSendInit(ours, &err)) << err;
  EXPECT_TRUE(s.OnRecvInit(theirs, 0, &err)) << err;
  return s;
}

TEST(TrpcStreamStateTest, ClientSendsOnlyOnceTheServerAnswered) {
  TrpcStreamState s(Role::kClient);
  std::string err;
  EXPECT_FALSE(s.OnRecvInit(65535, 0, &err));
  EXPECT_THAT(err, HasSubstr("before ours"));
  ASSERT_TRUE(s.OnSendInit(65535, &err));
  EXPECT_FALSE(s.CanSend());
  EXPECT_FALSE(s.OnSendData(10, &err));
  EXPECT_THAT(err, HasSubstr("before the stream is open"));
  ASSERT_TRUE(s.OnRecvInit(65535, 0, &err));
  EXPECT_TRUE(s.CanSend());
  EXPECT_TRUE(s.flow_control());
  EXPECT_EQ(s.send_window(), 65535);
}

TEST(TrpcStreamStateTest, ServerRefusesFramesBeforeInit) {
  std::string err;
  for (int frame = 0; frame < 3; ++frame) {
    TrpcStreamState s(Role::kServer);
    bool ok = frame == 0   ? s.OnRecvData(5, &err)
              : frame == 1 ? s.OnRecvFeedback(100, &err)
                           : s.OnRecvClose(false, &err);
    EXPECT_FALSE(ok) << frame;
    EXPECT_THAT(err, HasSubstr("before INIT"));
  }
  TrpcStreamState s(Role::kServer);
  EXPECT_FALSE(s.OnSendInit(65535, &err));  // a server answers, it does not open
  ASSERT_TRUE(s.OnRecvInit(65535, 0, &err));
  EXPECT_FALSE(s.OnRecvInit(65535, 0, &err));
  EXPECT_THAT(err, HasSubstr("second INIT"));
}

// The writer may go below zero by one message, then waits for FEEDBACK.
TEST(TrpcStreamStateTest, WriterBlocksAtZeroAfterOneMessageTooMany) {
  TrpcStreamState s = OpenClient(65535, 65535);
  std::string err;
  ASSERT_TRUE(s.OnSendData(40000, &err));
  ASSERT_TRUE(s.CanSend());
  ASSERT_TRUE(s.OnSendData(40000, &err));  // 25535 left: allowed, goes to -14465
  EXPECT_EQ(s.send_window(), -14465);
  EXPECT_FALSE(s.CanSend());
  EXPECT_FALSE(s.OnSendData(1, &err));
  EXPECT_THAT(err, HasSubstr("no window left"));
  ASSERT_TRUE(s.OnRecvFeedback(14465, &err));
  EXPECT_FALSE(s.CanSend());  // exactly 0: still blocked
  ASSERT_TRUE(s.OnRecvFeedback(1, &err));
  EXPECT_TRUE(s.CanSend());
}

// Windows below 65535 are raised to it; a 0 on either side turns flow control off.
TEST(TrpcStreamStateTest, SmallWindowsAreRaisedAndZeroTurnsFlowControlOff) {
  TrpcStreamState s = OpenClient(1000, 1);
  EXPECT_TRUE(s.flow_control());
  EXPECT_EQ(s.send_window(), 65535);
  for (uint32_t ours : {0u, 65535u}) {
    TrpcStreamState off = OpenClient(ours, ours == 0 ? 65535 : 0);
    EXPECT_FALSE(off.flow_control());
    std::string err;
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(off.OnSendData(1 << 20, &err)) << err;
    EXPECT_TRUE(off.CanSend());
    EXPECT_EQ(off.OnConsumed(1 << 30), 0u);  // no FEEDBACK without flow control
  }
}

// The reader credits once more than a quarter of its window is consumed, and a sender that
// ignores its window is caught.
TEST(TrpcStreamStateTest, ReaderCreditsAfterAQuarterAndCatchesOverruns) {
  TrpcStreamState s(Role::kServer);
  std::string err;
  ASSERT_TRUE(s.OnRecvInit(65535, 0, &err));
  ASSERT_TRUE(s.OnSendInit(65535, &err));
  ASSERT_TRUE(s.OnRecvData(60000, &err));
  ASSERT_TRUE(s.OnRecvData(10000, &err));  // the one message that may overshoot
  EXPECT_FALSE(s.OnRecvData(1, &err));
  EXPECT_THAT(err, HasSubstr("flow control"));

  TrpcStreamState r(Role::kServer);
  ASSERT_TRUE(r.OnRecvInit(65535, 0, &err));
  ASSERT_TRUE(r.OnSendInit(65535, &err));
  ASSERT_TRUE(r.OnRecvData(65535, &err));
  EXPECT_EQ(r.OnConsumed(16383), 0u);  // exactly a quarter (65535 / 4): not yet
  EXPECT_EQ(r.OnConsumed(1), 16384u);
  ASSERT_TRUE(r.OnRecvData(16384, &err));  // the credit, used
  EXPECT_FALSE(r.OnRecvData(1, &err));
}

TEST(TrpcStreamStateTest, FeedbackMayNotOverflowTheWindow) {
  TrpcStreamState s = OpenClient(65535, 65535);
  std::string err;
  EXPECT_FALSE(s.OnRecvFeedback(0, &err));
  EXPECT_THAT(err, HasSubstr("zero"));
  EXPECT_FALSE(s.OnRecvFeedback(INT32_MAX, &err));
  EXPECT_THAT(err, HasSubstr("2^31 - 1"));
  EXPECT_TRUE(s.OnRecvFeedback(INT32_MAX - 65535, &err)) << err;
}

TEST(TrpcStreamStateTest, HalfClosesThenEnds) {
  TrpcStreamState s = OpenClient(65535, 65535);
  std::string err;
  ASSERT_TRUE(s.OnSendClose(false, &err));  // the client's half-close
  EXPECT_FALSE(s.CanSend());
  EXPECT_FALSE(s.OnSendData(1, &err));
  EXPECT_FALSE(s.OnSendClose(false, &err));
  EXPECT_THAT(err, HasSubstr("twice"));
  ASSERT_TRUE(s.OnRecvData(100, &err));  // replies still come
  EXPECT_FALSE(s.finished());
  ASSERT_TRUE(s.OnRecvClose(false, &err));
  EXPECT_TRUE(s.finished());
  EXPECT_FALSE(s.was_reset());
  EXPECT_FALSE(s.OnRecvData(1, &err));
  EXPECT_THAT(err, HasSubstr("after the peer's CLOSE"));
}

TEST(TrpcStreamStateTest, AResetEndsBothDirections) {
  TrpcStreamState s = OpenClient(65535, 65535);
  std::string err;
  ASSERT_TRUE(s.OnRecvClose(/*reset=*/true, &err));
  EXPECT_TRUE(s.finished());
  EXPECT_TRUE(s.was_reset());
  EXPECT_FALSE(s.CanSend());

  TrpcStreamState t = OpenClient(65535, 65535);
  ASSERT_TRUE(t.OnSendClose(/*reset=*/true, &err));
  EXPECT_TRUE(t.finished());

  // A server that answers INIT with an error ends the stream.
  TrpcStreamState refused(Role::kClient);
  ASSERT_TRUE(refused.OnSendInit(65535, &err));
  ASSERT_TRUE(refused.OnRecvInit(65535, /*ret=*/22, &err));
  EXPECT_TRUE(refused.finished());
  EXPECT_FALSE(refused.CanSend());
}

// Two ends that follow the rules, with frames in flight both ways, never see a violation, and
// the bytes a reader holds unconsumed never exceed its window plus one message.
TEST(TrpcStreamStateTest, TwoEndsFollowingTheRulesNeverFault) {
  std::mt19937 rng(12345);
  for (int run = 0; run < 50; ++run) {
    const uint32_t wc = std::uniform_int_distribution<uint32_t>(0, 200000)(rng);
    const uint32_t ws = std::uniform_int_distribution<uint32_t>(0, 200000)(rng);
    TrpcStreamState client(Role::kClient), server(Role::kServer);
    struct Frame {
      int kind;  // 0 INIT, 1 DATA, 2 FEEDBACK
      uint32_t n;
    };
    std::deque<Frame> to_server, to_client;
    std::string err;
    ASSERT_TRUE(client.OnSendInit(wc, &err));
    to_server.push_back({0, wc});
    size_t held_by_server = 0, held_by_client = 0;
    const uint32_t max_msg = 30000;
    const uint32_t server_window = ws == 0 ? 0 : std::max(ws, 65535u);
    const uint32_t client_window = wc == 0 ? 0 : std::max(wc, 65535u);
    for (int step = 0; step < 2000; ++step) {
      switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
        case 0:  // the client writes if it may
          if (client.CanSend()) {
            uint32_t n = std::uniform_int_distribution<uint32_t>(1, max_msg)(rng);
            ASSERT_TRUE(client.OnSendData(n, &err)) << err;
            to_server.push_back({1, n});
          }
          break;
        case 1:  // the server writes if it may
          if (server.CanSend()) {
            uint32_t n = std::uniform_int_distribution<uint32_t>(1, max_msg)(rng);
            ASSERT_TRUE(server.OnSendData(n, &err)) << err;
            to_client.push_back({1, n});
          }
          break;
        case 2:  // a frame reaches the server
          if (!to_server.empty()) {
            Frame f = to_server.front();
            to_server.pop_front();
            if (f.kind == 0) {
              ASSERT_TRUE(server.OnRecvInit(f.n, 0, &err)) << err;
              ASSERT_TRUE(server.OnSendInit(ws, &err)) << err;
              to_client.push_back({0, ws});
            } else if (f.kind == 1) {
              ASSERT_TRUE(server.OnRecvData(f.n, &err)) << err << " (step " << step << ")";
              held_by_server += f.n;
            } else {
              ASSERT_TRUE(server.OnRecvFeedback(f.n, &err)) << err;
            }
          }
          break;
        case 3:  // a frame reaches the client
          if (!to_client.empty()) {
            Frame f = to_client.front();
            to_client.pop_front();
            if (f.kind == 0) {
              ASSERT_TRUE(client.OnRecvInit(f.n, 0, &err)) << err;
            } else if (f.kind == 1) {
              ASSERT_TRUE(client.OnRecvData(f.n, &err)) << err << " (step " << step << ")";
              held_by_client += f.n;
            } else {
              ASSERT_TRUE(client.OnRecvFeedback(f.n, &err)) << err;
            }
          }
          break;
        case 4:  // the server's reader consumes some
          if (held_by_server > 0) {
            size_t n = std::uniform_int_distribution<size_t>(1, held_by_server)(rng);
            held_by_server -= n;
            if (uint32_t inc = server.OnConsumed(n); inc != 0) to_client.push_back({2, inc});
          }
          break;
        case 5:  // the client's reader consumes some
          if (held_by_client > 0) {
            size_t n = std::uniform_int_distribution<size_t>(1, held_by_client)(rng);
            held_by_client -= n;
            if (uint32_t inc = client.OnConsumed(n); inc != 0) to_server.push_back({2, inc});
          }
          break;
      }
      if (server.flow_control()) {
        ASSERT_LE(held_by_server, server_window + max_msg);
      }
      if (client.flow_control()) {
        ASSERT_LE(held_by_client, client_window + max_msg);
      }
    }
  }
}

}  // namespace
}  // namespace trpc::detail
