// Out of file descriptors: fault_server runs under a low RLIMIT_NOFILE and the test opens more
// connections than it has descriptors for. While none are free the server must keep serving the
// connections it has, must not burn CPU retrying accept(), and must accept again soon after
// descriptors come back.

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "test/fault/fault_test_util.h"
#include "trpc/base/clock.h"

// The sanitizer build (ASan with UBSan, -DCMAKE_BUILD_TYPE=Asan) cannot run a process out of
// descriptors: UBSan checks an object's vptr, the first time it meets it, by probing the memory
// through a pipe it opens, and with no descriptor free the probe fails and it reports a false
// "invalid vptr" and stops the server.
#if defined(__SANITIZE_ADDRESS__)
#define TRPC_SANITIZER_NEEDS_FDS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRPC_SANITIZER_NEEDS_FDS 1
#endif
#endif

namespace trpc::test::fault {
namespace {

constexpr rlim_t kNofile = 64;

// utime + stime of `pid`, in seconds.
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // fields 3..13: state .. cmajflt
  long utime = 0, stime = 0;
  fields >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Descriptors below kNofile `pid` has open now (it may have inherited higher ones).
int OpenFds(pid_t pid) {
  DIR* dir = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    n += e->d_name[0] != '.' && std::strtoul(e->d_name, nullptr, 10) < kNofile;
  }
  closedir(dir);
  return n;
}

class EmfileTest : public FaultTest {};

TEST_F(EmfileTest, ServesEstablishedConnectionsWithoutSpinningAndAcceptsAgainWhenFdsReturn) {
#ifdef TRPC_SANITIZER_NEEDS_FDS
  GTEST_SKIP() << "the sanitizers need free descriptors of their own (see the top of the file)";
#endif
  ChildServer server;
  server.set_nofile_limit(kNofile);
  std::string admin;
  std::string addr = StartFaultServer(&server, {}, &admin);
  ASSERT_FALSE(addr.empty());
  ASSERT_FALSE(admin.empty());

  // Connections made before the descriptors run out.
  std::vector<std::shared_ptr<GreeterServiceProxy>> established;
  for (int i = 0; i < 3; ++i) {
    established.push_back(Proxy(addr));
    HelloReply rsp;
    ASSERT_TRUE(Call(established.back().get(), "before", &rsp).OK());
  }

  // More connections than the server has descriptors for; it takes them until accept() fails.
  std::vector<int> extra;
  for (rlim_t i = 0; i < 2 * kNofile; ++i) {
    int fd = RawConnect(addr);
    ASSERT_GE(fd, 0) << strerror(errno);
    extra.push_back(fd);
  }
  int64_t deadline = MonotonicNanos() + 10 * kNanosPerSecond;
  while (OpenFds(server.pid()) < static_cast<int>(kNofile) && MonotonicNanos() < deadline) {
    usleep(10'000);
  }
  ASSERT_EQ(OpenFds(server.pid()), static_cast<int>(kNofile)) << "the server never ran out";

  // Out of descriptors: the established connections are served...
  for (auto& proxy : established) {
    HelloReply rsp;
    Status st = Call(proxy.get(), "while out of fds", &rsp);
    EXPECT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(rsp.msg(), "while out of fds");
  }
  // ...and the server idles (retrying accept() at once took a whole core).
  double cpu_before = CpuSeconds(server.pid());
  int64_t start = MonotonicNanos();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  double cpu = CpuSeconds(server.pid()) - cpu_before;
  double wall = static_cast<double>(MonotonicNanos() - start) / 1e9;
  std::printf("server CPU while out of fds: %.1f%% of a core\n", 100 * cpu / wall);
  EXPECT_LT(cpu / wall, 0.10) << "server CPU while out of fds: " << cpu << " s in " << wall << " s";

  // Descriptors come back: a new connection is accepted and served within a second.
  for (int fd : extra) close(fd);
  start = MonotonicNanos();
  ClientServiceConfig c;
  c.timeout = 5000;
  auto fresh = Proxy(addr, c);
  HelloReply rsp;
  Status st = Call(fresh.get(), "after", &rsp);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(rsp.msg(), "after");
  EXPECT_LT(MonotonicNanos() - start, kNanosPerSecond) << "accepting resumed too late";

  // The pauses are counted where an operator sees them.
  std::string metrics = HttpGet(admin, "/metrics");
  const std::string sample =
      "trpc_server_accept_backoffs_total{service=\"trpc.test.helloworld.Greeter\"} ";
  size_t at = metrics.find(sample);
  ASSERT_NE(at, std::string::npos) << metrics;
  EXPECT_GT(std::strtoull(metrics.c_str() + at + sample.size(), nullptr, 10), 0u);
}

}  // namespace
}  // namespace trpc::test::fault
