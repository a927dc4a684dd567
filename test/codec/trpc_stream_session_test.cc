// trpc's server stream session: frames in, host events out, and the frames it writes back, with
// a recording host. Covers the open (accepted, refused, over the cap), flow control as the
// client sees it (our window, FEEDBACK due past a quarter, a writer blocked and released), the
// ends (half-close, reset either way) and the peer's errors that reset a stream or close the
// connection.

#include "trpc/codec/trpc/detail/trpc_stream_session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trpc/codec/trpc/detail/frame.h"
#include "trpc/codec/trpc/detail/stream_frame.h"

namespace trpc::detail {
namespace {

using ::testing::HasSubstr;
using Type = TrpcStreamFrameType;

struct Event {
  std::string what;  // open, msg, end, writable
  uint32_t id = 0;
  std::string detail;
};

// Records what the session reports; accepts or refuses opens as told.
class RecordingHost final : public ServerStreamHost {
 public:
  explicit RecordingHost(TrpcServerStreamSession* s) : session_(s) {}
  void OnStreamOpen(uint32_t id, RpcRequest&& head, ChainBuffer* out) override {
    events.push_back({"open", id, head.func});
    if (refuse.OK()) {
      session_->Accept(id, out);
    } else {
      session_->Refuse(id, refuse, out);
    }
  }
  void OnStreamMessage(uint32_t id, ChainBuffer&& msg) override {
    events.push_back({"msg", id, msg.ToString()});
  }
  void OnStreamRemoteEnd(uint32_t id, const Status& status) override {
    events.push_back({"end", id, status.OK() ? "ok" : status.ToString()});
  }
  void OnStreamWritable(uint32_t id) override { events.push_back({"writable", id, ""}); }

  std::vector<Event> events;
  Status refuse;

 private:
  TrpcServerStreamSession* session_;
};

// Frames of a client.
ChainBuffer Init(uint32_t id, uint32_t window, const std::string& func = "/s.S/M") {
  TrpcStreamInit init;
  init.func = func;
  init.init_window_size = window;
  ChainBuffer b;
  std::string err;
  EXPECT_TRUE(WriteTrpcStreamInit(id, init, &b, &err)) << err;
  return b;
}
ChainBuffer Data(uint32_t id, const std::string& bytes) {
  ChainBuffer b, d;
  d.Append(bytes);
  std::string err;
  EXPECT_TRUE(WriteTrpcStreamData(id, std::move(d), &b, &err)) << err;
  return b;
}
ChainBuffer Feedback(uint32_t id, uint32_t increment) {
  ChainBuffer b;
  std::string err;
  EXPECT_TRUE(WriteTrpcStreamFeedback(id, increment, &b, &err)) << err;
  return b;
}
ChainBuffer Close(uint32_t id, bool reset, int32_t ret = 0) {
  TrpcStreamClose c;
  c.close_type = reset ? 1 : 0;
  c.ret = ret;
  ChainBuffer b;
  std::string err;
  EXPECT_TRUE(WriteTrpcStreamClose(id, c, &b, &err)) << err;
  return b;
}

// The frames the session wrote, decoded.
std::vector<TrpcStreamFrame> Written(ChainBuffer* out) {
  std::vector<ChainBuffer> cut;
  std::string err;
  EXPECT_EQ(SplitTrpcFrames(out, &cut, UINT32_MAX, &err, true), SplitResult::kOk) << err;
  EXPECT_EQ(out->size(), 0u);
  std::vector<TrpcStreamFrame> frames;
  for (ChainBuffer& f : cut) {
    TrpcStreamFrame frame;
    EXPECT_TRUE(ReadTrpcStreamFrame(std::move(f), &frame, &err)) << err;
    frames.push_back(std::move(frame));
  }
  return frames;
}

class TrpcStreamSessionTest : public ::testing::Test {
 protected:
  bool Feed(ChainBuffer&& frame) {
    err_.clear();
    return session_.OnFrame(std::move(frame), &host_, &out_, &err_);
  }

  TrpcServerStreamSession session_{/*max_streams=*/2, /*window=*/65535};
  RecordingHost host_{&session_};
  ChainBuffer out_;
  std::string err_;
};

TEST_F(TrpcStreamSessionTest, AcceptedOpenAnswersWithAnEmptyResponseMetaAndOurWindow) {
  ASSERT_TRUE(Feed(Init(100, 65535, "/a.B/Chat"))) << err_;
  ASSERT_EQ(host_.events.size(), 1u);
  EXPECT_EQ(host_.events[0].what, "open");
  EXPECT_EQ(host_.events[0].detail, "/a.B/Chat");
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].type, Type::kInit);
  EXPECT_EQ(frames[0].stream_id, 100u);
  EXPECT_TRUE(frames[0].init.has_response_meta);
  EXPECT_EQ(frames[0].init.ret, 0);
  EXPECT_EQ(frames[0].init.init_window_size, 65535u);
  EXPECT_TRUE(session_.FlowControlled(100));
  EXPECT_EQ(session_.open_streams(), 1u);
}

TEST_F(TrpcStreamSessionTest, ClientWithoutWindowGetsNoneAndNoFlowControl) {
  ASSERT_TRUE(Feed(Init(100, 0)));
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].init.init_window_size, 0u);  // as tRPC-Go answers such a client
  EXPECT_FALSE(session_.FlowControlled(100));
  // Without flow control nothing blocks the writer.
  for (int i = 0; i < 10; ++i) {
    ChainBuffer m;
    m.Append(std::string(20000, 'x'));
    ASSERT_TRUE(session_.SendMessage(100, std::move(m), &out_, &err_)) << err_;
  }
}

TEST_F(TrpcStreamSessionTest, RefusedOpenCarriesTheCodeAndEndsTheStream) {
  host_.refuse = Status(kServerNoFuncErr, "no such streaming method");
  ASSERT_TRUE(Feed(Init(100, 65535)));
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].init.ret, kServerNoFuncErr);
  EXPECT_EQ(frames[0].init.error_msg, "no such streaming method");
  EXPECT_EQ(session_.open_streams(), 0u);
  // Frames the client had in flight for it are dropped, not a protocol error.
  EXPECT_TRUE(Feed(Data(100, "late")));
  EXPECT_EQ(host_.events.size(), 1u);
}

TEST_F(TrpcStreamSessionTest, OpenPastTheCapIsRefusedWith22AndTheConnectionLives) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  ASSERT_TRUE(Feed(Init(101, 65535)));
  Written(&out_);
  ASSERT_TRUE(Feed(Init(102, 65535)));
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].init.ret, kServerOverloadErr);
  EXPECT_THAT(frames[0].init.error_msg, HasSubstr("2 streams are open"));
  EXPECT_EQ(host_.events.size(), 2u);  // the host never heard of 102
}

TEST_F(TrpcStreamSessionTest, MessagesReachTheHostAndCreditReturnsPastAQuarter) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  Written(&out_);
  ASSERT_TRUE(Feed(Data(100, "hello")));
  ASSERT_EQ(host_.events.back().what, "msg");
  EXPECT_EQ(host_.events.back().detail, "hello");
  session_.Consumed(100, 16000, &out_);  // a quarter is 16383.75: not yet
  EXPECT_EQ(out_.size(), 0u);
  session_.Consumed(100, 400, &out_);
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].type, Type::kFeedback);
  EXPECT_EQ(frames[0].window_increment, 16400u);
}

TEST_F(TrpcStreamSessionTest, WriterBlocksWhenTheClientsWindowIsUsedAndFeedbackReleasesIt) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  Written(&out_);
  int sent = 0;
  while (session_.CanSend(100)) {
    ChainBuffer m;
    m.Append(std::string(30000, 'x'));
    ASSERT_TRUE(session_.SendMessage(100, std::move(m), &out_, &err_)) << err_;
    ++sent;
  }
  EXPECT_EQ(sent, 3);  // 90000 > 65535: the window went negative by less than one message
  ChainBuffer m;
  m.Append("more");
  EXPECT_FALSE(session_.SendMessage(100, std::move(m), &out_, &err_));
  ASSERT_TRUE(Feed(Feedback(100, 20000)));
  EXPECT_TRUE(host_.events.empty() || host_.events.back().what != "writable");  // still <= 0
  ASSERT_TRUE(Feed(Feedback(100, 20000)));
  ASSERT_FALSE(host_.events.empty());
  EXPECT_EQ(host_.events.back().what, "writable");
  EXPECT_TRUE(session_.CanSend(100));
}

TEST_F(TrpcStreamSessionTest, HalfCloseThenOurCloseEndsTheStream) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  ASSERT_TRUE(Feed(Close(100, false)));
  EXPECT_EQ(host_.events.back().what, "end");
  EXPECT_EQ(host_.events.back().detail, "ok");
  EXPECT_EQ(session_.open_streams(), 1u);  // our side is still open
  ChainBuffer m;
  m.Append("reply");
  ASSERT_TRUE(session_.SendMessage(100, std::move(m), &out_, &err_)) << err_;
  session_.Finish(100, Status::AppError(7, "partly"), &out_);
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 3u);
  EXPECT_EQ(frames[1].type, Type::kData);
  EXPECT_EQ(frames[2].type, Type::kClose);
  EXPECT_EQ(frames[2].close.close_type, 0);  // an application error closes
  EXPECT_EQ(frames[2].close.ret, 0);
  EXPECT_EQ(frames[2].close.func_ret, 7);
  EXPECT_EQ(frames[2].close.msg, "partly");
  EXPECT_EQ(session_.open_streams(), 0u);
}

TEST_F(TrpcStreamSessionTest, FrameworkErrorResetsWithItsCode) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  Written(&out_);
  session_.Finish(100, Status(kServerTimeoutErr, "too slow"), &out_);
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].close.close_type, 1);
  EXPECT_EQ(frames[0].close.ret, kServerTimeoutErr);
  EXPECT_EQ(session_.open_streams(), 0u);
}

TEST_F(TrpcStreamSessionTest, ClientResetEndsBothSidesWithItsCode) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  ASSERT_TRUE(Feed(Close(100, true, kClientCanceledErr)));
  EXPECT_EQ(host_.events.back().what, "end");
  EXPECT_THAT(host_.events.back().detail, HasSubstr("161"));
  EXPECT_EQ(session_.open_streams(), 0u);
  ChainBuffer m;
  m.Append("x");
  EXPECT_FALSE(session_.SendMessage(100, std::move(m), &out_, &err_));
}

TEST_F(TrpcStreamSessionTest, DataPastTheWindowResetsTheStreamOnly) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  ASSERT_TRUE(Feed(Init(101, 65535)));
  Written(&out_);
  ASSERT_TRUE(Feed(Data(100, std::string(70000, 'x'))));  // above 0 before it: allowed
  ASSERT_TRUE(Feed(Data(100, "one more")));               // the window is spent: a violation
  EXPECT_EQ(host_.events.back().what, "end");
  EXPECT_THAT(host_.events.back().detail, HasSubstr("stream reset"));
  auto frames = Written(&out_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].type, Type::kClose);
  EXPECT_EQ(frames[0].close.close_type, 1);
  EXPECT_EQ(frames[0].close.ret, kServerDecodeErr);
  EXPECT_EQ(session_.open_streams(), 1u);  // 101 goes on
  EXPECT_TRUE(Feed(Data(101, "fine")));
}

TEST_F(TrpcStreamSessionTest, FeedbackOverflowingTheWindowResetsTheStream) {
  ASSERT_TRUE(Feed(Init(100, 65535)));
  Written(&out_);
  ASSERT_TRUE(Feed(Feedback(100, 0x7fffffff)));
  EXPECT_EQ(host_.events.back().what, "end");
  EXPECT_EQ(session_.open_streams(), 0u);
}

TEST_F(TrpcStreamSessionTest, ConnectionErrorsCloseIt) {
  EXPECT_FALSE(Feed(Data(100, "before any INIT")));
  EXPECT_THAT(err_, HasSubstr("never opened"));
  ASSERT_TRUE(Feed(Init(100, 65535)));
  EXPECT_FALSE(Feed(Init(100, 65535)));
  EXPECT_THAT(err_, HasSubstr("INIT for stream 100, which is open"));
  ChainBuffer garbage = Init(101, 65535);
  std::string bytes = garbage.ToString();
  bytes[16] = static_cast<char>(0xff);  // the INIT meta no longer parses
  ChainBuffer bad;
  bad.Append(bytes);
  EXPECT_FALSE(Feed(std::move(bad)));
  EXPECT_THAT(err_, HasSubstr("INIT"));
}

// ---- The client's session, against the server's ----------------------------------------------

// Records what the client session reports.
class ClientRecorder final : public ClientStreamHost {
 public:
  void OnStreamOpened(uint32_t id, const Status& status) override {
    events.push_back({"opened", id, status.OK() ? "ok" : status.ToString()});
  }
  void OnStreamMessage(uint32_t id, ChainBuffer&& msg) override {
    events.push_back({"msg", id, msg.ToString()});
  }
  void OnStreamRemoteEnd(uint32_t id, const Status& status, bool reset) override {
    events.push_back({reset ? "reset" : "end", id, status.OK() ? "ok" : status.ToString()});
  }
  void OnStreamWritable(uint32_t id) override { events.push_back({"writable", id, ""}); }
  std::vector<Event> events;
};

// A client session and a server session joined in memory: what one writes, the other reads.
class ClientServerStreamTest : public ::testing::Test {
 protected:
  // Delivers everything queued each way until both are quiet. False on a connection error.
  bool Pump() {
    for (int round = 0; round < 100; ++round) {
      if (to_server_.size() == 0 && to_client_.size() == 0) return true;
      if (!Deliver(&to_server_, [&](ChainBuffer&& f, std::string* e) {
            return server_.OnFrame(std::move(f), &server_host_, &to_client_, e);
          })) {
        return false;
      }
      if (!Deliver(&to_client_, [&](ChainBuffer&& f, std::string* e) {
            return client_.OnFrame(std::move(f), &client_host_, &to_server_, e);
          })) {
        return false;
      }
    }
    return false;
  }
  template <typename F>
  bool Deliver(ChainBuffer* in, F&& on_frame) {
    std::vector<ChainBuffer> frames;
    if (SplitTrpcFrames(in, &frames, UINT32_MAX, &err_, true) != SplitResult::kOk) return false;
    for (ChainBuffer& f : frames) {
      if (!on_frame(std::move(f), &err_)) return false;
    }
    return true;
  }
  uint32_t Open(const std::string& func, uint32_t window = 65535) {
    RpcRequest head;
    head.func = func;
    head.callee = "s.S";
    uint32_t id = 0;
    EXPECT_TRUE(client_.Open(head, window, &id, &to_server_, &err_)) << err_;
    return id;
  }
  static ChainBuffer Bytes(const std::string& s) {
    ChainBuffer b;
    b.Append(s);
    return b;
  }

  TrpcServerStreamSession server_{10, 65535};
  RecordingHost server_host_{&server_};
  TrpcClientStreamSession client_{10};
  ClientRecorder client_host_;
  ChainBuffer to_server_, to_client_;
  std::string err_;
};

TEST_F(ClientServerStreamTest, OpenMessagesBothWaysHalfCloseAndTheServersFinalStatus) {
  const uint32_t id = Open("/s.S/Chat");
  EXPECT_EQ(id, 100u);
  EXPECT_FALSE(client_.CanSend(id));  // not before the server's INIT
  ASSERT_TRUE(Pump()) << err_;
  ASSERT_EQ(client_host_.events.size(), 1u);
  EXPECT_EQ(client_host_.events[0].what, "opened");
  EXPECT_EQ(client_host_.events[0].detail, "ok");
  EXPECT_TRUE(client_.FlowControlled(id));
  ASSERT_TRUE(client_.SendMessage(id, Bytes("ping"), &to_server_, &err_)) << err_;
  client_.Finish(id, kSuccStatus, &to_server_);  // half-close
  ASSERT_TRUE(Pump()) << err_;
  ASSERT_EQ(server_host_.events.size(), 3u);
  EXPECT_EQ(server_host_.events[1].detail, "ping");
  EXPECT_EQ(server_host_.events[2].what, "end");
  ASSERT_TRUE(server_.SendMessage(id, Bytes("pong"), &to_client_, &err_)) << err_;
  server_.Finish(id, Status::AppError(3, "partial"), &to_client_);
  ASSERT_TRUE(Pump()) << err_;
  ASSERT_EQ(client_host_.events.size(), 3u);
  EXPECT_EQ(client_host_.events[1].detail, "pong");
  EXPECT_EQ(client_host_.events[2].what, "end");  // closed, not reset: an application error
  EXPECT_THAT(client_host_.events[2].detail, HasSubstr("partial"));
  EXPECT_EQ(client_.open_streams(), 0u);
  EXPECT_EQ(server_.open_streams(), 0u);
}

TEST_F(ClientServerStreamTest, RefusedOpenReachesTheClientWithItsCode) {
  server_host_.refuse = Status(kServerNoFuncErr, "no such streaming method");
  const uint32_t id = Open("/s.S/Nope");
  ASSERT_TRUE(Pump()) << err_;
  ASSERT_EQ(client_host_.events.size(), 1u);
  EXPECT_EQ(client_host_.events[0].what, "opened");
  EXPECT_THAT(client_host_.events[0].detail, HasSubstr("12"));
  EXPECT_EQ(client_.open_streams(), 0u);
  EXPECT_FALSE(client_.CanSend(id));
}

TEST_F(ClientServerStreamTest, FlowControlHoldsTheClientUntilTheServerConsumes) {
  const uint32_t id = Open("/s.S/Up");
  ASSERT_TRUE(Pump());
  int sent = 0;
  while (client_.CanSend(id)) {
    ASSERT_TRUE(client_.SendMessage(id, Bytes(std::string(10000, 'u')), &to_server_, &err_));
    ++sent;
  }
  EXPECT_EQ(sent, 7);  // 70,000 bytes: above 0 before the seventh
  ASSERT_TRUE(Pump());
  server_.Consumed(id, 70000, &to_client_);
  ASSERT_TRUE(Pump());
  EXPECT_EQ(client_host_.events.back().what, "writable");
  EXPECT_TRUE(client_.CanSend(id));
}

TEST_F(ClientServerStreamTest, ClientCancelResetsTheServersSide) {
  const uint32_t id = Open("/s.S/Chat");
  ASSERT_TRUE(Pump());
  client_.Finish(id, Status(kClientCanceledErr, "cancelled"), &to_server_);
  ASSERT_TRUE(Pump());
  EXPECT_EQ(server_host_.events.back().what, "end");
  EXPECT_THAT(server_host_.events.back().detail, HasSubstr("161"));
  EXPECT_EQ(server_.open_streams(), 0u);
  EXPECT_EQ(client_.open_streams(), 0u);
}

TEST_F(ClientServerStreamTest, ServerResetEndsTheClientsStream) {
  const uint32_t id = Open("/s.S/Chat");
  ASSERT_TRUE(Pump());
  server_.Finish(id, Status(kServerTimeoutErr, "too slow"), &to_client_);
  ASSERT_TRUE(Pump());
  EXPECT_EQ(client_host_.events.back().what, "reset");
  EXPECT_THAT(client_host_.events.back().detail, HasSubstr("too slow"));
  EXPECT_FALSE(client_.SendMessage(id, Bytes("late"), &to_server_, &err_));
}

TEST_F(ClientServerStreamTest, FramesForStreamsWeNeverOpenedCloseTheConnection) {
  ChainBuffer f = Data(555, "stray");
  EXPECT_FALSE(client_.OnFrame(std::move(f), &client_host_, &to_server_, &err_));
  EXPECT_THAT(err_, HasSubstr("never opened"));
}

}  // namespace
}  // namespace trpc::detail
