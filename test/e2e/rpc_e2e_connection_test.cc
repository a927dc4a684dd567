// End-to-end tests of the trpc protocol over loopback (rpc_e2e_fixture.h): what a connection that
// sends bad bytes gets, and the per-connection limits (connections, idle time, pending write
// bytes, short connections). Each thread model: TRPC_E2E_THREAD_MODEL=merge (default) or fiber.

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "test/e2e/rpc_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

// 8. ------------------------------------------------------------------------------------------

// Each bad input closes its connection without a reply and counts as a protocol error; the
// server keeps serving everyone else.
TEST_F(RpcE2eTest, BadInputClosesTheConnectionAndTheServerKeepsServing) {
  StartServer();  // max_packet_size 10,000,000
  ExpectServing("before");

  // A RequestProtocol that parses, with attachment_size 1000 (field 12) in a frame with a
  // 4-byte body and no attachment.
  std::string attach_header = "\x18\x01";  // request_id 1
  attach_header += '\x3a';                 // func
  attach_header += static_cast<char>(std::string_view(kSayHelloFunc).size());
  attach_header += kSayHelloFunc;
  attach_header += "\x60\xe8\x07";  // attachment_size 1000
  const std::string body = "\x0a\x02hi";
  const std::string junk_header(8, '\x0f');  // field 1 with wire type 7: never valid protobuf

  struct Case {
    const char* name;
    std::string bytes;
  };
  const Case cases[] = {
      {"bad magic", FixedHeader(0x1234, 20, 0) + "abcd"},
      {"total < 16 + header size", FixedHeader(0x0930, 20, 100) + "abcd"},
      // Only the header is sent: the server must decide from it, not wait for 100 MB.
      {"total over max_packet_size", FixedHeader(0x0930, 100'000'000, 10)},
      {"garbage protobuf header",
       FixedHeader(0x0930,
                   static_cast<uint32_t>(kFixedHeaderSize + junk_header.size() + body.size()),
                   static_cast<uint16_t>(junk_header.size())) +
           junk_header + body},
      {"attachment larger than the frame",
       FixedHeader(0x0930,
                   static_cast<uint32_t>(kFixedHeaderSize + attach_header.size() + body.size()),
                   static_cast<uint16_t>(attach_header.size())) +
           attach_header + body},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    uint64_t errors_before = stats().protocol_errors;
    RawConnection raw(address_);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw.Send(c.bytes));
    std::string received;
    EXPECT_TRUE(raw.WaitClosed(kIoTimeoutMs, &received)) << "the server kept the connection open";
    EXPECT_TRUE(received.empty()) << "the server answered garbage with " << received.size()
                                  << " bytes";
    EXPECT_TRUE(WaitFor([&] { return stats().protocol_errors > errors_before; }))
        << "not counted as a protocol error";
    ExpectServing(c.name);
  }
}

// Good requests and then an undecodable header in one write: the connection closes at the bad
// frame, and the requests before it still run (in the fiber model they were waiting to start
// together as the read's chain when the close came). Under ASan a context left parked would
// also show up as a leak.
TEST_F(RpcE2eTest, RequestsBeforeABadFrameInTheSameReadStillRun) {
  StartServer();
  const std::string junk_header(8, '\x0f');  // never valid protobuf
  const std::string body = "\x0a\x02hi";
  std::string bytes;
  for (uint32_t id = 1; id <= 5; ++id) bytes += EncodeHello(id, "count");
  bytes += FixedHeader(0x0930,
                       static_cast<uint32_t>(kFixedHeaderSize + junk_header.size() + body.size()),
                       static_cast<uint16_t>(junk_header.size())) +
           junk_header + body;
  int before = g_count.load();
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.Send(bytes));
  std::string received;
  EXPECT_TRUE(raw.WaitClosed(kIoTimeoutMs, &received)) << "the server kept the connection open";
  EXPECT_TRUE(WaitFor([&] { return g_count.load() == before + 5; }))
      << "ran " << g_count.load() - before << " of the 5 requests before the bad frame";
  ExpectServing("after the bad frame");
}

TEST_F(RpcE2eTest, TruncatedHeaderThenCloseLeavesTheServerUnaffected) {
  StartServer();
  ExpectServing("before");
  const uint32_t connections_before = adapter().connection_count();  // the proxy's
  {
    RawConnection raw(address_);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw.Send(EncodeHello(1, "cut short").substr(0, 10)));
  }  // closed here
  ExpectServing("after");
  EXPECT_TRUE(WaitFor([&] { return adapter().connection_count() == connections_before; }))
      << "the server still holds the connection whose peer left mid-header";
  ExpectServing("still");
}

// 9. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, MaxConnNumRefusesConnectionsBeyondTheLimit) {
  StartServer([](ServiceConfig* s) { s->max_conn_num = 2; });  // the proxy stays unused here
  RawConnection first(address_);
  RawConnection second(address_);
  for (RawConnection* c : {&first, &second}) {
    ASSERT_TRUE(c->ok());
    ASSERT_TRUE(c->Send(EncodeHello(1, "in")));
    Reply r;
    ASSERT_TRUE(c->ReadReply(&r));
    EXPECT_EQ(r.body.msg(), "Hello, in");
  }

  RawConnection third(address_);  // the kernel completes the handshake; the server then closes
  ASSERT_TRUE(third.ok());
  third.Send(EncodeHello(1, "too many"));  // may already fail: the close can come first
  std::string received;
  EXPECT_TRUE(third.WaitClosed(kIoTimeoutMs, &received)) << "a third connection was kept";
  EXPECT_TRUE(received.empty());
  // Counted just after the close, so the client can see the close first.
  EXPECT_TRUE(WaitFor([&] { return stats().connections_refused >= 1; }));

  // Once a slot frees up (asynchronously), a new connection is served.
  first.Close();
  bool served = WaitFor([&] {
    RawConnection next(address_);
    Reply r;
    return next.ok() && next.Send(EncodeHello(1, "again")) && next.ReadReply(&r, 1000) &&
           r.body.msg() == "Hello, again";
  });
  EXPECT_TRUE(served) << "no new connection was served after one of the two closed";
  ASSERT_TRUE(second.Send(EncodeHello(2, "still in")));
  Reply r;
  ASSERT_TRUE(second.ReadReply(&r));
  EXPECT_EQ(r.body.msg(), "Hello, still in");
}

// 10. -----------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, IdleConnectionIsClosedAndABusyOneIsKept) {
  StartServer([](ServiceConfig* s) { s->idle_time = 200; });
  RawConnection idle(address_);
  RawConnection busy(address_);
  ASSERT_TRUE(idle.ok());
  ASSERT_TRUE(busy.ok());
  // A request every 50 ms for 600 ms: three idle periods, never idle for one.
  for (uint32_t i = 1; i <= 12; ++i) {
    ASSERT_TRUE(busy.Send(EncodeHello(i, "ping"))) << "round " << i;
    Reply r;
    ASSERT_TRUE(busy.ReadReply(&r)) << "round " << i;
    EXPECT_EQ(r.rsp.request_id, i);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string received;
  EXPECT_TRUE(idle.WaitClosed(5000, &received)) << "the idle connection was not closed";
  EXPECT_TRUE(received.empty());
  ASSERT_TRUE(busy.Send(EncodeHello(100, "still here")));
  Reply r;
  ASSERT_TRUE(busy.ReadReply(&r)) << "the busy connection was closed";
  EXPECT_EQ(r.body.msg(), "Hello, still here");
}

// 11. -----------------------------------------------------------------------------------------

// A client that sends requests for 64 KiB replies and does not read: the server must stop taking
// requests once 1 MiB of replies wait, and lose nothing when the client finally reads.
TEST_F(RpcE2eTest, SlowReaderIsHeldBackByMaxPendingWriteBytes) {
  constexpr uint64_t kLimit = 1u << 20;
  constexpr uint64_t kKernelBuffers = 32u << 20;  // generous bound on both sockets' buffers
  constexpr uint64_t kReplyBytes = 65536;
  constexpr int kMaxRequests = 5000;
  // Fiber model: requests run in fibers, so replies not yet queued are bounded separately.
  constexpr uint32_t kPendingRequests = 16;
  const uint64_t kInHandlers = FiberModel() ? kPendingRequests * kReplyBytes : 0;
  StartServer([](ServiceConfig* s) {
    s->max_pending_write_bytes = kLimit;
    s->max_pending_requests = kPendingRequests;
    s->timeout = 120'000;  // replies must be valid however long they wait
  });
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());

  // Phase 1: write without reading until the socket stays unwritable for 500 ms or the cap.
  std::string partial;  // the unsent rest of a request the kernel took only part of
  uint32_t next_id = 1;
  int complete = 0;
  int64_t unwritable_since = -1;
  for (;;) {
    if (partial.empty()) {
      if (static_cast<int>(next_id) > kMaxRequests) break;
      partial = EncodeHello(next_id++, "big:65536", 120'000);
    }
    ssize_t n = ::send(raw.fd(), partial.data(), partial.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      partial.erase(0, static_cast<size_t>(n));
      if (partial.empty()) ++complete;
      unwritable_since = -1;
      continue;
    }
    ASSERT_TRUE(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        << "send failed: " << strerror(errno);
    int64_t now = MonotonicMillis();
    if (unwritable_since < 0) unwritable_since = now;
    if (now - unwritable_since >= 500) break;
    pollfd pfd{raw.fd(), POLLOUT, 0};
    ::poll(&pfd, 1, 50);
  }
  const int expected = static_cast<int>(next_id) - 1;  // including a partly written one

  // Let the server take whatever it will, then check it stopped far short of everything sent.
  uint64_t handled = stats().requests;
  int64_t quiet_since = MonotonicMillis();
  int64_t give_up = quiet_since + kIoTimeoutMs;
  while (MonotonicMillis() - quiet_since < 300 && MonotonicMillis() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t now_handled = stats().requests;
    if (now_handled != handled) {
      handled = now_handled;
      quiet_since = MonotonicMillis();
    }
  }
  EXPECT_LE(handled * kReplyBytes, kLimit + kKernelBuffers + kInHandlers)
      << "the server ran " << handled << " requests of " << complete
      << " sent although the client read nothing";
  EXPECT_LT(handled, static_cast<uint64_t>(complete));

  // Phase 2: read everything (finishing the partial request on the way): one valid reply per
  // request, in order. Meanwhile the server may never run far ahead of what the client took.
  const uint64_t max_ahead = (kLimit + kKernelBuffers + kInHandlers) / kReplyBytes + 1;
  std::vector<bool> got(static_cast<size_t>(expected) + 1);
  uint64_t worst_ahead = 0;
  int received = 0;
  int bad = 0;
  int64_t deadline = MonotonicMillis() + 120'000;
  while (received < expected && MonotonicMillis() < deadline) {
    if (!partial.empty()) {
      ssize_t n = ::send(raw.fd(), partial.data(), partial.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) partial.erase(0, static_cast<size_t>(n));
    }
    std::string frame;
    while (raw.CutFrame(&frame)) {
      Reply r;
      bool valid = DecodeReply(frame, &r) && r.rsp.ret == 0 && r.rsp.request_id >= 1 &&
                   r.rsp.request_id <= static_cast<uint32_t>(expected) && !got[r.rsp.request_id] &&
                   // Fibers may finish out of order; the merge model replies in order.
                   (FiberModel() || r.rsp.request_id == static_cast<uint32_t>(received + 1)) &&
                   r.body.msg().size() == kReplyBytes &&
                   r.body.msg().find_first_not_of('x') == std::string::npos;
      if (valid) got[r.rsp.request_id] = true;
      if (!valid && ++bad <= 5) {
        ADD_FAILURE() << "reply " << received + 1 << " is wrong: id " << r.rsp.request_id
                      << ", ret " << r.rsp.ret << ", " << r.body.msg().size() << " bytes";
      }
      ++received;
      uint64_t ahead = stats().requests - static_cast<uint64_t>(received);
      worst_ahead = std::max(worst_ahead, ahead);
    }
    if (received >= expected) break;
    RawConnection::Result res = raw.Fill(std::min(deadline, MonotonicMillis() + 100));
    ASSERT_NE(res, RawConnection::Result::kClosed) << "closed after " << received << " replies";
  }
  EXPECT_EQ(received, expected) << "replies lost";
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(stats().requests, static_cast<uint64_t>(expected));
  EXPECT_LE(worst_ahead, max_ahead)
      << "while the client was reading, the server ran up to " << worst_ahead
      << " requests (of 64 KiB replies) ahead of it: far more than max_pending_write_bytes "
      << "allows to wait";
}

// 12. -----------------------------------------------------------------------------------------

// conn_type "short": every call opens a connection of its own and closes it when done; a one-way
// call on a short connection is still delivered (the connection closes only once it is written).
TEST_F(RpcE2eTest, ShortConnectionsOpenOneConnectionPerCall) {
  StartServer({}, [](ClientServiceConfig* c) { c->conn_type = "short"; });
  const uint64_t accepted_before = stats().connections_accepted;
  for (int i = 1; i <= 5; ++i) {
    const std::string msg = "short " + std::to_string(i);
    std::string reply;
    Status st = Hello(msg, &reply);
    ASSERT_TRUE(st.OK()) << "call " << i << ": " << st.ToString();
    EXPECT_EQ(reply, "Hello, " + msg);
    EXPECT_EQ(stats().connections_accepted, accepted_before + i)
        << "call " << i << " did not come on a connection of its own";
  }
  EXPECT_TRUE(WaitFor([&] { return adapter().connection_count() == 0; }))
      << adapter().connection_count() << " short connections were left open";

  int count_before = g_count.load();
  HelloRequest req;
  req.set_msg("count");
  Status st = proxy_->SayHello(MakeClientContext(), req);
  EXPECT_TRUE(st.OK()) << st.ToString();
  EXPECT_TRUE(WaitFor([&] { return g_count.load() == count_before + 1; }))
      << "a one-way call on a short connection never reached the handler";
  EXPECT_EQ(stats().connections_accepted, accepted_before + 6);
  EXPECT_TRUE(WaitFor([&] { return adapter().connection_count() == 0; }))
      << "the one-way call's short connection was left open";
  ExpectServing("after the one-way call");
}

}  // namespace
}  // namespace trpc::test::helloworld
