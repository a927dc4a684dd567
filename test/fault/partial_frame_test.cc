// A trpc frame begun and never finished: with `read_frame_timeout` the server closes such a
// connection soon after the frame began (not after idle_time), while its other connections, and
// frames that do complete in time, are served as usual.

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "test/codec/trpc_test_frames.h"
#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"

namespace trpc::test::fault {
namespace {

using codec_test::GoldenRequest;

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Waits up to `timeout_ms` for the server to close `fd` (EOF or reset); false if it stays open.
// Anything the server sends meanwhile is read and dropped.
bool WaitClosed(int fd, int timeout_ms) {
  int64_t deadline = MonotonicNanos() + int64_t{timeout_ms} * kNanosPerMilli;
  for (;;) {
    int64_t left_ms = (deadline - MonotonicNanos()) / kNanosPerMilli;
    if (left_ms <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left_ms)) <= 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) return true;
  }
}

// Reads one trpc frame from `fd` within `timeout_ms`; "" if none came whole.
std::string ReadFrame(int fd, int timeout_ms) {
  std::string got;
  size_t want = 16;  // the fixed header, then the size it gives
  int64_t deadline = MonotonicNanos() + int64_t{timeout_ms} * kNanosPerMilli;
  while (got.size() < want) {
    int64_t left_ms = (deadline - MonotonicNanos()) / kNanosPerMilli;
    if (left_ms <= 0) return "";
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left_ms)) <= 0) continue;
    char buf[512];
    ssize_t n = read(fd, buf, std::min(sizeof(buf), want - got.size()));
    if (n <= 0) return "";
    got.append(buf, static_cast<size_t>(n));
    if (got.size() == 16) {
      const auto* b = reinterpret_cast<const unsigned char*>(got.data());
      want = size_t{b[4]} << 24 | size_t{b[5]} << 16 | size_t{b[6]} << 8 | size_t{b[7]};
      if (want < 16) return "";
    }
  }
  return got;
}

// Each test runs its own fault_server with read_frame_timeout 300 ms and idle_time 600 s.
class PartialFrameTest : public FaultTest {
 protected:
  void SetUp() override {
    FaultServerOptions o;
    o.service_yaml = "      read_frame_timeout: 300\n      idle_time: 600000\n";
    addr = StartFaultServer(&server, o);
    ASSERT_FALSE(addr.empty());
  }

  ChildServer server;
  std::string addr;
};

TEST_F(PartialFrameTest, AFrameNeverFinishedClosesItsConnectionAfterTheTimeout) {
  auto other = Proxy(addr);
  HelloReply rsp;
  ASSERT_TRUE(Call(other.get(), "other", &rsp).OK());

  // The first bytes of a valid frame (part of its fixed header), then nothing.
  int fd = RawConnect(addr);
  ASSERT_GE(fd, 0);
  int64_t start = MonotonicNanos();
  ASSERT_TRUE(SendAll(fd, GoldenRequest().substr(0, 10)));
  // The other connection is served meanwhile.
  for (int i = 0; i < 5; ++i) {
    Status st = Call(other.get(), "other", &rsp);
    EXPECT_TRUE(st.OK()) << st.ToString();
  }
  EXPECT_TRUE(WaitClosed(fd, 10'000)) << "the partial frame kept its connection open";
  int64_t elapsed_ms = (MonotonicNanos() - start) / kNanosPerMilli;
  // Not before the timeout; and long before idle_time (600 s), with a margin for a slow machine.
  EXPECT_GE(elapsed_ms, 250);
  EXPECT_LT(elapsed_ms, 5'000);
  close(fd);
  Status st = Call(other.get(), "other", &rsp);
  EXPECT_TRUE(st.OK()) << st.ToString();
}

TEST_F(PartialFrameTest, ProgressDoesNotExtendTheTimeout) {
  // A byte every 50 ms: the connection is never idle, but the frame takes far too long.
  int fd = RawConnect(addr);
  ASSERT_GE(fd, 0);
  std::string frame = GoldenRequest();
  int64_t start = MonotonicNanos();
  bool closed = false;
  for (size_t i = 0; i + 1 < frame.size() && !closed; ++i) {
    closed = !SendAll(fd, frame.substr(i, 1)) || WaitClosed(fd, 50);
  }
  EXPECT_TRUE(closed) << "a frame trickling in kept its connection open";
  EXPECT_LT((MonotonicNanos() - start) / kNanosPerMilli, 3'000);
  close(fd);
}

TEST_F(PartialFrameTest, FramesCompletedInTimeAreAnswered) {
  int fd = RawConnect(addr);
  ASSERT_GE(fd, 0);
  std::string frame = GoldenRequest();
  // Split within the timeout: answered.
  ASSERT_TRUE(SendAll(fd, frame.substr(0, 10)));
  usleep(100'000);
  ASSERT_TRUE(SendAll(fd, frame.substr(10)));
  std::string reply = ReadFrame(fd, 10'000);
  ASSERT_FALSE(reply.empty()) << "no answer to a frame completed in time";
  EXPECT_EQ(reply.substr(0, 2), "\x09\x30");  // trpc's magic
  EXPECT_NE(reply.find("hi"), std::string::npos);
  // Past the first frame's deadline the connection is still open (the timer it left behind finds
  // no partial frame), and a whole frame is answered.
  usleep(500'000);
  ASSERT_TRUE(SendAll(fd, frame));
  EXPECT_FALSE(ReadFrame(fd, 10'000).empty()) << "the connection did not survive its timer";
  close(fd);
}

}  // namespace
}  // namespace trpc::test::fault
