// fault_server itself: it serves in the model asked for, does what each msg says, and stops
// cleanly on SIGTERM. The fault tests build on it.

#include <signal.h>

#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"

namespace trpc::test::fault {
namespace {

class FaultServerTest : public FaultTest {};

TEST_F(FaultServerTest, EchoesSleepsSpinsAndSendsBigReplies) {
  ChildServer server;
  std::string addr = StartFaultServer(&server);
  ASSERT_FALSE(addr.empty());
  auto proxy = Proxy(addr);
  HelloReply rsp;
  ASSERT_TRUE(Call(proxy.get(), "hello", &rsp).OK());
  EXPECT_EQ(rsp.msg(), "hello");
  int64_t start = MonotonicNanos();
  ASSERT_TRUE(Call(proxy.get(), "sleep:50000", &rsp).OK());
  EXPECT_GE(MonotonicNanos() - start, 50 * kNanosPerMilli);
  ASSERT_TRUE(Call(proxy.get(), "spin:1000", &rsp).OK());
  EXPECT_EQ(rsp.msg(), "spin:1000");
  ASSERT_TRUE(Call(proxy.get(), "big:100000", &rsp).OK());
  EXPECT_EQ(rsp.msg(), std::string(100000, 'x'));
  server.Signal(SIGTERM);
  int status = 0;
  ASSERT_TRUE(server.WaitExit(10'000, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace trpc::test::fault
