// End-to-end tests of the admin service (admin_e2e_fixture.h): a CPU profile through
// /cmds/profile (read with google-pprof when installed), and a stop that cuts one short.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>

#if __has_include(<gperftools/profiler.h>)
constexpr bool kHaveProfiler = true;
#else
constexpr bool kHaveProfiler = false;
#endif

#if defined(__SANITIZE_THREAD__)
// gperftools' profiler is not built with TSan: its SIGPROF handler fills the sample buffer on
// whichever thread the signal lands, under a spin lock TSan cannot see, and ProfilerStop then
// write(2)s that buffer from the profile thread. TSan checks the write's source bytes against
// the handler's stores and reports a race that the library's own lock prevents (CI, fiber
// model). Ignore what the library's calls touch; our own code stays fully checked.
extern "C" const char* __tsan_default_suppressions() {
  return "called_from_lib:libprofiler.so\n"
         "race:libprofiler.so\n";
}
#endif

#include "test/e2e/admin_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

// The profile's bytes: gperftools' binary CPU profile starts with five native words
// {0, 3 (header words), 0 (version), sampling period in us, 0}.
void ExpectCpuProfile(const std::string& bytes) {
  ASSERT_GE(bytes.size(), 5 * sizeof(uintptr_t));
  uintptr_t w[5];
  std::memcpy(w, bytes.data(), sizeof(w));
  EXPECT_EQ(w[0], 0u);
  EXPECT_EQ(w[1], 3u);
  EXPECT_EQ(w[2], 0u);
  EXPECT_GT(w[3], 0u);
  EXPECT_EQ(w[4], 0u);
}

// The profiler writes into $TMPDIR, which SetUpTestSuite points at a directory of this test's
// own: a profile file there means a profile has begun (its slot is taken; a second request
// gets 409). Asking gperftools itself (ProfilerGetCurrentState) would read its state under a
// lock TSan cannot see.
bool ProfileFileExists() {
  for (const auto& e : std::filesystem::directory_iterator(std::getenv("TMPDIR"))) {
    if (e.path().filename().string().starts_with("trpc_cpu_profile_")) return true;
  }
  return false;
}

TEST_F(AdminE2eTest, CpuProfile) {
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=0").status, 400);
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=61").status, 400);
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1x").status, 400);
  if (!kHaveProfiler) {
    EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1").status, 501);
    GTEST_SKIP() << "built without gperftools' profiler";
  }

  auto profile = std::async(std::launch::async,
                            [this] { return Http(admin_, "GET", "/cmds/profile/cpu?seconds=1"); });
  ASSERT_TRUE(WaitFor(ProfileFileExists));
  // While it runs: another profile is refused, and the admin thread keeps answering.
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1").status, 409);
  EXPECT_EQ(Http(admin_, "GET", "/version").status, 200);
  // Some work for the profiler to see.
  auto proxy = NewProxy();
  int64_t until = MonotonicMillis() + 700;
  while (MonotonicMillis() < until) ASSERT_TRUE(Call(*proxy, "hi").OK());

  HttpReply r = profile.get();
  ASSERT_EQ(r.status, 200) << r.head << r.body;
  EXPECT_NE(r.head.find("Content-Type: application/octet-stream"), std::string::npos);
  ExpectCpuProfile(r.body);
  // The next profile may start once the first has answered.
  EXPECT_EQ(Http(admin_, "GET", "/cmds/profile/cpu?seconds=1").status, 200);
  // google-pprof reads the first one.
  if (!HaveTool("google-pprof"))
    TRPC_SKIP_WITHOUT_PEER("google-pprof not installed (Debian: google-perftools)");
  std::string path = TempFile("admin_e2e_cpu.prof");
  std::ofstream(path, std::ios::binary) << r.body;
  int rc = 0;
  std::string exe = "/proc/" + std::to_string(::getpid()) + "/exe";
  std::string out = RunCommand("google-pprof --text " + exe + " " + path + " 2>&1", &rc);
  EXPECT_EQ(rc, 0) << out;
  std::remove(path.c_str());
}

// A server stopping while a long profile runs does not wait for it: the profile ends early
// and its caller gets 503.
TEST_F(AdminE2eTest, StopCutsAProfileShort) {
  if (!kHaveProfiler) GTEST_SKIP() << "built without gperftools' profiler";
  auto profile = std::async(std::launch::async,
                            [this] { return Http(admin_, "GET", "/cmds/profile/cpu?seconds=60"); });
  ASSERT_TRUE(WaitFor(ProfileFileExists));
  int64_t start = MonotonicMillis();
  server_->Stop();
  EXPECT_LT(MonotonicMillis() - start, 5000);
  EXPECT_FALSE(ProfileFileExists());  // stopped, read and removed
  HttpReply r = profile.get();
  EXPECT_EQ(r.status, 503) << r.head << r.body;
}

}  // namespace
}  // namespace trpc::test::helloworld
