// raw_http_server (benchmark/baseline), run as the benchmarks run it and spoken to with raw bytes
// over loopback: one reply per complete request however the requests are cut into writes,
// pipelined ones included; a Content-Length body is skipped by its length, never searched;
// `Connection: close`, a chunked body or bytes that are not HTTP close the connection after the
// replies to the complete requests before them.

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/common/child_server.h"

namespace trpc::test::benchmark_servers {
namespace {

constexpr char kDefaultReply[] =
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}";

class RawHttpServerTest : public ::testing::Test {
 protected:
  void StartServer(std::vector<std::string> extra_args = {}) {
    std::vector<std::string> args{RAW_HTTP_SERVER_PATH, "--port", "0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    std::string addr = server_.Start(args);
    ASSERT_FALSE(addr.empty());
    port_ = std::stoi(addr.substr(addr.rfind(':') + 1));
  }

  int Connect() {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port_));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    timeval tv{10, 0};  // a missing reply fails the test instead of hanging it
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;  // each small write goes out at once (the byte-by-byte test)
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
  }

  static void Send(int fd, const std::string& bytes) {
    ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

  // Reads until `want` bytes arrived, or EOF, or the 10 s receive timeout.
  static std::string Read(int fd, size_t want) {
    std::string got;
    char buf[4096];
    ssize_t n;
    while (got.size() < want && (n = read(fd, buf, sizeof(buf))) > 0) got.append(buf, n);
    return got;
  }

  // True when the server closed the connection and sent nothing more.
  static bool ClosedWithNothingMore(int fd) {
    char c;
    return read(fd, &c, 1) == 0;
  }

  static std::string Times(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  }

  ChildServer server_;
  int port_ = 0;
};

const std::string kGet = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n";
// Its body holds a blank line and a whole request: a server that searched the body for request
// ends instead of skipping Content-Length bytes would answer twice.
const std::string kPost =
    "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 25\r\n\r\n"
    "a\r\n\r\nGET / HTTP/1.1\r\n\r\nzz";

TEST_F(RawHttpServerTest, AnswersOneThenSixteenPipelinedRequestsCutAtAnOddOffset) {
  StartServer();
  int fd = Connect();
  Send(fd, kGet);
  EXPECT_EQ(Read(fd, sizeof(kDefaultReply) - 1), kDefaultReply);

  std::string sixteen;
  for (int i = 0; i < 16; ++i) sixteen += i % 5 == 2 ? kPost : kGet;
  size_t cut = sixteen.size() / 2 | 1;  // odd, mid-request
  Send(fd, sixteen.substr(0, cut));
  Send(fd, sixteen.substr(cut));
  std::string replies = Read(fd, 16 * (sizeof(kDefaultReply) - 1));
  EXPECT_EQ(replies, Times(kDefaultReply, 16));

  // Still open, and nothing more was sent than one reply per request.
  Send(fd, kGet);
  EXPECT_EQ(Read(fd, sizeof(kDefaultReply) - 1), kDefaultReply);
  close(fd);
}

TEST_F(RawHttpServerTest, RequestsSentByteByByteGetOneReplyEach) {
  StartServer();
  int fd = Connect();
  std::string two = kPost + kGet;
  for (char c : two) Send(fd, std::string(1, c));
  EXPECT_EQ(Read(fd, 2 * (sizeof(kDefaultReply) - 1)), Times(kDefaultReply, 2));
  close(fd);
}

TEST_F(RawHttpServerTest, ConnectionCloseClosesAfterThatReply) {
  StartServer();
  int fd = Connect();
  // The request after the closing one is never answered.
  Send(fd, kGet + "GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n" + kGet);
  EXPECT_EQ(Read(fd, 2 * (sizeof(kDefaultReply) - 1)), Times(kDefaultReply, 2));
  EXPECT_TRUE(ClosedWithNothingMore(fd));
  close(fd);

  // HTTP/1.0 closes unless it asks to keep the connection alive.
  fd = Connect();
  Send(fd, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET / HTTP/1.0\r\n\r\n");
  EXPECT_EQ(Read(fd, 2 * (sizeof(kDefaultReply) - 1)), Times(kDefaultReply, 2));
  EXPECT_TRUE(ClosedWithNothingMore(fd));
  close(fd);

  // A client that shuts its side down after a request still gets the reply.
  fd = Connect();
  Send(fd, kGet);
  shutdown(fd, SHUT_WR);
  EXPECT_EQ(Read(fd, sizeof(kDefaultReply) - 1), kDefaultReply);
  EXPECT_TRUE(ClosedWithNothingMore(fd));
  close(fd);
}

TEST_F(RawHttpServerTest, ChunkedOrGarbageClosesAfterTheCompleteRequestsBeforeIt) {
  StartServer();
  const std::string bad[] = {
      "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
      "hello there\r\n\r\n",
      "GET / HTTP/2.0\r\n\r\n",
      "GET / HTTP/1.1\r\nno colon here\r\n\r\n",
      "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
      "GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nab",
      "GET / HTTP/1.1\r\nX: " + std::string(20 * 1024, 'a'),  // a head above 16 KiB
  };
  for (const std::string& b : bad) {
    int fd = Connect();
    Send(fd, kGet + b + kGet);
    EXPECT_EQ(Read(fd, sizeof(kDefaultReply) - 1), kDefaultReply) << b.substr(0, 40);
    EXPECT_TRUE(ClosedWithNothingMore(fd)) << b.substr(0, 40);
    close(fd);
  }
}

TEST_F(RawHttpServerTest, BodyOption) {
  StartServer({"--body", "hello, world"});
  int fd = Connect();
  Send(fd, kGet);
  std::string want =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n"
      "hello, world";
  EXPECT_EQ(Read(fd, want.size()), want);
  close(fd);
}

TEST_F(RawHttpServerTest, SeveralListenersShareThePort) {
  StartServer({"--threads", "2"});
  for (int i = 0; i < 8; ++i) {
    int fd = Connect();
    Send(fd, kGet + kGet);
    EXPECT_EQ(Read(fd, 2 * (sizeof(kDefaultReply) - 1)), Times(kDefaultReply, 2));
    close(fd);
  }
}

}  // namespace
}  // namespace trpc::test::benchmark_servers
