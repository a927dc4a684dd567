// gRPC streams between our client and our server, many at once on shared connections: echoes
// across the flow-control windows, server streams larger than the client's window, and cancels
// while messages are in flight. Run in both thread models, and under TSan (the fiber model):
// the stream state machines (StreamCore, the HTTP/2 sessions' streaming calls) on every thread
// they cross.

#include "test/e2e/grpc_e2e_fixture.h"

namespace trpc::test::grpc_e2e {
namespace {

using Bidi = stream::ClientReaderWriter<HelloRequest, HelloReply>;

// Opens the Greeter's `method` on `proxy`.
stream::ClientStream Open(GreeterServiceProxy* proxy, const std::string& method, Status* st) {
  ClientContextPtr ctx = MakeClientContext();
  ctx->SetFuncName("/trpc.test.helloworld.Greeter/" + method);
  stream::ClientStream s;
  *st = proxy->OpenStream(ctx, &s);
  return s;
}

TEST_F(GrpcE2eTest, ManyStreamsEchoAcrossTheWindows) {
  auto proxy = Proxy(addr_);
  constexpr int kThreads = 6;
  constexpr int kStreamsPerThread = 3;
  constexpr int kMessages = 60;
  std::atomic<int> echoed{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int k = 0; k < kStreamsPerThread; ++k) {
        Status st;
        Bidi s(Open(proxy.get(), "BidiStream", &st));
        if (!st.OK()) {
          failed.fetch_add(1);
          continue;
        }
        for (int i = 0; i < kMessages; ++i) {
          HelloRequest req;
          // Up to 100 KB: some messages span several DATA frames and the stream window.
          req.set_msg(std::string(static_cast<size_t>((t * 7919 + i * 104729) % 100'000), 'a' + t));
          HelloReply rsp;
          if (!s.Write(req).OK() || !s.Read(&rsp).OK() || rsp.msg() != req.msg()) {
            failed.fetch_add(1);
            break;
          }
          echoed.fetch_add(1);
        }
        s.WritesDone();
        if (!s.Finish().OK()) failed.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(echoed.load(), kThreads * kStreamsPerThread * kMessages);
}

TEST_F(GrpcE2eTest, ServerStreamsLargerThanTheClientsWindow) {
  // 300 replies of 64 KB (about 19 MB) to a client announcing a 1 MiB window: the server is held
  // by the window and every reply arrives, in order, on two streams at once.
  auto proxy = Proxy(addr_, 5000,
                     {{"initial_window_size", "1048576"}, {"connection_window_size", "1048576"}});
  std::vector<std::thread> readers;
  std::atomic<int> ok{0};
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      Status st;
      stream::ClientReaderWriter<HelloRequest, HelloReply> s(
          Open(proxy.get(), "ServerStream", &st));
      ASSERT_TRUE(st.OK()) << st.ToString();
      HelloRequest req;
      req.set_msg("300:65536");
      ASSERT_TRUE(s.Write(req).OK());
      s.WritesDone();
      for (int i = 0; i < 300; ++i) {
        HelloReply rsp;
        st = s.Read(&rsp);
        ASSERT_TRUE(st.OK()) << i << ": " << st.ToString();
        ASSERT_EQ(rsp.msg().substr(0, rsp.msg().find(':')), std::to_string(i));
      }
      HelloReply rsp;
      EXPECT_TRUE(s.Read(&rsp).StreamEof());
      EXPECT_TRUE(s.Finish().OK());
      ok.fetch_add(1);
    });
  }
  for (auto& th : readers) th.join();
  EXPECT_EQ(ok.load(), 2);
}

TEST_F(GrpcE2eTest, CancelsWhileMessagesAreInFlight) {
  auto proxy = Proxy(addr_);
  std::vector<std::thread> threads;
  std::atomic<int> cancelled{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 10; ++k) {
        Status st;
        Bidi s(Open(proxy.get(), "BidiStream", &st));
        if (!st.OK()) continue;
        HelloRequest req;
        req.set_msg(std::string(30'000, 'c'));
        for (int i = 0; i < 5; ++i) s.Write(req);  // echoes on their way back
        HelloReply rsp;
        s.Read(&rsp);
        s.Cancel();
        if (s.Finish().GetFrameworkRetCode() == kClientCanceledErr) cancelled.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(cancelled.load(), 40);
  // The connection is fine afterwards.
  HelloReply rsp;
  EXPECT_TRUE(Say(proxy.get(), "after", &rsp).OK());
  Status st;
  Bidi s(Open(proxy.get(), "BidiStream", &st));
  ASSERT_TRUE(st.OK());
  HelloRequest req;
  req.set_msg("still here");
  ASSERT_TRUE(s.Write(req).OK());
  ASSERT_TRUE(s.Read(&rsp).OK());
  EXPECT_EQ(rsp.msg(), "still here");
  s.WritesDone();
  EXPECT_TRUE(s.Finish().OK());
}

// One stream of 300,000 messages (30,000 under the sanitizers, which are slower), written ahead
// of the reads so that many are waiting at once: the server's echo loop (DoWhile) runs every
// round without growing its stack, in either model. Its recursive form (each round's
// continuation returning the next round's future) crashed here at 300,000 in both models.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kVeryLong = 30'000;
#else
constexpr int kVeryLong = 300'000;
#endif
TEST_F(GrpcE2eTest, AVeryLongStreamRunsInConstantStack) {
  auto proxy = Proxy(addr_);
  Status st;
  Bidi s(Open(proxy.get(), "BidiStream", &st));
  ASSERT_TRUE(st.OK()) << st.ToString();
  constexpr int kMessages = kVeryLong;
  std::thread writer([&] {
    HelloRequest req;
    for (int i = 0; i < kMessages; ++i) {
      req.set_msg(std::to_string(i));
      if (!s.Write(req).OK()) return;
    }
    s.WritesDone();
  });
  int got = 0;
  for (; got < kMessages; ++got) {
    HelloReply rsp;
    st = s.Read(&rsp);
    if (!st.OK()) break;
    ASSERT_EQ(rsp.msg(), std::to_string(got));
  }
  writer.join();
  EXPECT_EQ(got, kMessages) << st.ToString();
  HelloReply rsp;
  EXPECT_TRUE(s.Read(&rsp).StreamEof());
  EXPECT_TRUE(s.Finish().OK());
}

}  // namespace
}  // namespace trpc::test::grpc_e2e
