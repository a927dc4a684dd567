// A stop with handlers that never return: fault_server must exit within stop_max_wait_time plus a
// small margin, answer every call still in a handler then with ret 31 ("server stopped before
// the handler finished") rather than just closing, still deliver the replies that come within
// the limit, and end at once on a second SIGTERM.

#include <signal.h>
#include <stdlib.h>

#include <cstdio>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"

namespace trpc::test::fault {
namespace {

constexpr int kLimitMs = 1000;
// How far past the limit the process may exit. Sanitizer builds run several times slower.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kExitMarginMs = 400;
#else
constexpr int kExitMarginMs = 200;
#endif
constexpr char kCutMessage[] = "server stopped before the handler finished";

struct CallResult {
  Status status;
  std::string msg;
};

class StopTest : public FaultTest {
 protected:
  StopTest() {
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer sleeps a second in the exiting process by default (atexit_sleep_ms), even
    // in _exit: the child would always look late.
    const char* opts = getenv("TSAN_OPTIONS");
    std::string tsan = opts != nullptr ? opts : "";
    if (tsan.find("atexit_sleep_ms") == std::string::npos) {
      setenv("TSAN_OPTIONS", (tsan + " atexit_sleep_ms=0").c_str(), 1);
    }
#endif
  }
  // A failed assertion leaves calls in flight: the server's end (killed if need be) ends them.
  ~StopTest() override {
    server_.Stop();
    JoinCalls();
  }

  // Proxies with a client timeout well past the stop, each on a connection of its own, made in
  // order: the server hands connections to its workers round-robin, so proxy i is on worker
  // i % workers.
  std::vector<std::shared_ptr<GreeterServiceProxy>> Connect(const std::string& addr, int n) {
    std::vector<std::shared_ptr<GreeterServiceProxy>> proxies;
    ClientServiceConfig c;
    c.timeout = 20'000;
    for (int i = 0; i < n; ++i) {
      proxies.push_back(Proxy(addr, c));
      HelloReply rsp;
      EXPECT_TRUE(Call(proxies.back().get(), "hi", &rsp).OK());
    }
    return proxies;
  }

  CallResult* CallInThread(GreeterServiceProxy* proxy, std::string msg) {
    CallResult* out = &results_.emplace_back();
    threads_.emplace_back([proxy, msg = std::move(msg), out] {
      HelloReply rsp;
      out->status = Call(proxy, msg, &rsp);
      out->msg = rsp.msg();
    });
    return out;
  }

  void JoinCalls() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  void CutAtTheLimit(const std::string& service_yaml);

  static void ExpectCut(const CallResult& r, const char* what) {
    EXPECT_EQ(r.status.GetFrameworkRetCode(), kServerSystemErr)
        << what << ": " << r.status.ToString();
    EXPECT_EQ(r.status.ErrorMessage(), kCutMessage) << what;
  }

  ChildServer server_;
  std::deque<CallResult> results_;
  std::vector<std::thread> threads_;
};

// `service_yaml`: extra keys of the service (a max_concurrency runs merge handlers after the
// pass's reads instead of inline: the stop must cut them the same way).
void StopTest::CutAtTheLimit(const std::string& service_yaml) {
  ChildServer& server = server_;
  FaultServerOptions o;
  o.workers = 3;
  o.service_yaml = service_yaml;
  o.server_yaml = fmt::format("  stop_max_wait_time: {}\n", kLimitMs);
  std::string addr = StartFaultServer(&server, o);
  ASSERT_FALSE(addr.empty());
  auto p = Connect(addr, 4);  // workers 0, 1, 2, 0
  const bool merge = o.model == "merge";
  // Merge: each hang blocks its worker (0 and 1) for good. Fiber: the hangs park their fibers
  // (the workers stay free), a third and fourth on one connection among them.
  const CallResult& hang0 = *CallInThread(p[0].get(), "hang");
  const CallResult& hang1 = *CallInThread(p[1].get(), "hang");
  // Worker 2 stays free in both models: this one ends within the limit, during the stop.
  const CallResult& slow = *CallInThread(p[2].get(), "sleep:700000");
  // The calls' threads have to run for them to be sent: the waits leave room for a loaded
  // machine that does not run a thread for a while (the slow call still ends after the signal).
  usleep(250'000);  // the hangs are in their handlers
  // Merge: behind worker 0's hang, so it never reaches a handler: no answer, only the close.
  const CallResult& extra0 = *CallInThread(p[3].get(), merge ? "hi" : "hang");
  const CallResult* extra1 = merge ? nullptr : CallInThread(p[3].get(), "hang");
  usleep(250'000);  // every call has reached its handler (or its place in a queue)
  server.Signal(SIGTERM);
  int64_t signalled = MonotonicNanos();
  int status = 0;
  ASSERT_TRUE(server.WaitExit(kLimitMs + 10'000, &status));
  int64_t exit_ms = (MonotonicNanos() - signalled) / kNanosPerMilli;
  JoinCalls();
  std::printf("%s model: exited %lld ms after SIGTERM (limit %d ms)\n", o.model.c_str(),
              static_cast<long long>(exit_ms), kLimitMs);
  EXPECT_GE(exit_ms, kLimitMs - 50) << "the stop did not wait for the handlers";
  EXPECT_LE(exit_ms, kLimitMs + kExitMarginMs) << "the process did not exit in time";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  ExpectCut(hang0, "hang on worker 0");
  ExpectCut(hang1, "hang on worker 1");
  EXPECT_TRUE(slow.status.OK()) << slow.status.ToString();
  EXPECT_EQ(slow.msg, "sleep:700000");
  if (merge) {
    EXPECT_EQ(extra0.status.GetFrameworkRetCode(), kClientNetworkErr) << extra0.status.ToString();
  } else {
    ExpectCut(extra0, "first extra hang");
    ExpectCut(*extra1, "second extra hang");
  }
}

TEST_F(StopTest, CallsStillInHandlersAreAnsweredAtTheLimitAndTheProcessExitsInTime) {
  CutAtTheLimit("");
}

TEST_F(StopTest, WithMaxConcurrencyTheSameCallsAreCut) {
  CutAtTheLimit("      max_concurrency: 100\n");
}

TEST_F(StopTest, ASecondSignalEndsTheStopAtOnce) {
  ChildServer& server = server_;
  FaultServerOptions o;
  o.workers = 2;
  o.server_yaml = "  stop_max_wait_time: 5000\n";
  std::string addr = StartFaultServer(&server, o);
  ASSERT_FALSE(addr.empty());
  auto p = Connect(addr, 1);
  const CallResult& hang = *CallInThread(p[0].get(), "hang");
  usleep(400'000);  // the hang is in its handler (room for a loaded machine)
  server.Signal(SIGTERM);
  usleep(200'000);
  int status = 0;
  ASSERT_FALSE(server.WaitExit(0, &status)) << "exited before the limit with a hang in flight";
  server.Signal(SIGTERM);
  int64_t second = MonotonicNanos();
  ASSERT_TRUE(server.WaitExit(10'000, &status));
  int64_t exit_ms = (MonotonicNanos() - second) / kNanosPerMilli;
  JoinCalls();
  EXPECT_LE(exit_ms, kExitMarginMs) << "the second signal did not end the stop at once";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM)
      << "wait status " << status;
  EXPECT_FALSE(hang.status.OK());
}

}  // namespace
}  // namespace trpc::test::fault
