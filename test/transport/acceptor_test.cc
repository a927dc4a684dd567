// Acceptor: hands accepted connections over, and pauses with a growing back-off (instead of
// retrying at once) while accept() keeps failing. Running out of descriptors for real is
// test/fault/emfile_test.cc; here a listener shut down under the acceptor makes every accept()
// fail with EINVAL, an error that repeats as EMFILE does.

#include "trpc/transport/acceptor.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "test/transport/reactor_thread.h"
#include "trpc/transport/socket.h"

namespace trpc::testing {
namespace {

// The listening socket of this process bound to `port`, or -1.
int FindListener(uint16_t port) {
  for (int fd = 0; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t len = sizeof(listening);
    if (fcntl(fd, F_GETFD) < 0 ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || listening == 0) {
      continue;
    }
    if (socket_ops::LocalAddress(fd).port() == port) return fd;
  }
  return -1;
}

int ConnectTo(const NetAddress& addr) {
  int fd = socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, addr.sockaddr_ptr(), addr.length()) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class AcceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    acceptor_ = std::make_unique<Acceptor>(loop_.reactor(), [this](int fd, const NetAddress&) {
      accepted_.fetch_add(1);
      close(fd);
    });
    NetAddress any;
    ASSERT_TRUE(NetAddress::FromIpPort("127.0.0.1", 0, &any));
    std::string err;
    ASSERT_TRUE(acceptor_->Listen(any, &err)) << err;
    loop_.Run([&] { acceptor_->Start(); });
  }
  void TearDown() override {
    if (acceptor_) loop_.Run([&] { acceptor_->Stop(); });
    acceptor_.reset();
  }

  ReactorThread loop_;
  std::unique_ptr<Acceptor> acceptor_;
  std::atomic<int> accepted_{0};
};

TEST_F(AcceptorTest, HandsOverEveryConnection) {
  std::vector<int> peers;
  for (int i = 0; i < 3; ++i) {
    peers.push_back(ConnectTo(acceptor_->address()));
    ASSERT_GE(peers.back(), 0);
  }
  EXPECT_TRUE(WaitFor([&] { return accepted_.load() == 3; }));
  EXPECT_EQ(acceptor_->backoffs(), 0u);
  for (int fd : peers) close(fd);
}

TEST_F(AcceptorTest, ARepeatingAcceptErrorBacksOffAndStopCancelsTheRetry) {
  int listener = FindListener(acceptor_->address().port());
  ASSERT_GE(listener, 0);
  ASSERT_EQ(shutdown(listener, SHUT_RD), 0);  // from now on accept() fails with EINVAL
  loop_.Run([&] { acceptor_->HandleEvents(EPOLLIN); });
  EXPECT_EQ(acceptor_->backoffs(), 1u) << "the first failure must pause accepting at once";

  // Retries 10, 20, 40, 80, then every 100 ms: about 14 in a second. Retrying at once would be
  // millions; a back-off that does not grow, a hundred.
  std::this_thread::sleep_for(std::chrono::seconds(1));
  uint64_t backoffs = acceptor_->backoffs();
  EXPECT_GE(backoffs, 4u) << "the acceptor stopped retrying";
  EXPECT_LE(backoffs, 30u) << "the back-off does not grow";
  // The loop is free meanwhile.
  EXPECT_TRUE(loop_.Run([] { return true; }));

  // Stop with a retry pending, then destroy: the retry must never run.
  loop_.Run([&] { acceptor_->Stop(); });
  backoffs = acceptor_->backoffs();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(acceptor_->backoffs(), backoffs) << "retried after Stop()";
  acceptor_.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(loop_.Run([] { return true; }));
  EXPECT_EQ(accepted_.load(), 0);
}

}  // namespace
}  // namespace trpc::testing
