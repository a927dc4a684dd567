#include "trpc/admin/detail/cpu_profiler.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <iterator>

#if TRPC_HAVE_PROFILER
#include <gperftools/profiler.h>
#endif

namespace trpc::admin {

namespace {
// Set from a Start() until that profile's file has been read: the profiler is process-wide.
std::atomic<bool> g_profiling{false};

std::string TempProfilePath(std::string* err) {
  const char* dir = ::getenv("TMPDIR");
  std::string path =
      std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/trpc_cpu_profile_XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0) {
    *err = "cannot create a file for the profile in " + path;
    return {};
  }
  ::close(fd);
  return path;
}
}  // namespace

bool CpuProfiler::Available() { return TRPC_HAVE_PROFILER != 0; }

CpuProfiler::StartResult CpuProfiler::Start(int seconds, Done done, std::string* err) {
  if (!Available()) return StartResult::kUnavailable;
  bool idle = false;
  if (!g_profiling.compare_exchange_strong(idle, true, std::memory_order_acq_rel)) {
    return StartResult::kBusy;
  }
  auto fail = [&](StartResult r, std::string why) {
    *err = std::move(why);
    g_profiling.store(false, std::memory_order_release);
    return r;
  };
  std::thread previous;
  {
    std::lock_guard lock(mu_);
    if (stopped_) return fail(StartResult::kStopped, "the server is stopping");
    previous = std::move(thread_);
  }
  // The previous profile's thread has read its file (g_profiling was clear): at most it is
  // still handing over its result.
  if (previous.joinable()) previous.join();
  std::string why;
  std::string path = TempProfilePath(&why);
  if (path.empty()) return fail(StartResult::kFailed, why);
#if TRPC_HAVE_PROFILER
  if (ProfilerStart(path.c_str()) == 0) {
    ::unlink(path.c_str());
    return fail(StartResult::kFailed, "ProfilerStart failed (is the CPUPROFILE variable set?)");
  }
#endif
  std::lock_guard lock(mu_);
  if (stopped_) {  // Stop() came in the meantime
#if TRPC_HAVE_PROFILER
    ProfilerStop();
#endif
    ::unlink(path.c_str());
    return fail(StartResult::kStopped, "the server is stopping");
  }
  thread_ = std::thread([this, seconds, path = std::move(path), done = std::move(done)]() mutable {
    pthread_setname_np(pthread_self(), "trpc_profile");
    Run(seconds, std::move(path), std::move(done));
  });
  return StartResult::kStarted;
}

void CpuProfiler::Run(int seconds, std::string path, Done done) {
  bool cut_short;
  {
    std::unique_lock lock(mu_);
    cut_short = cv_.wait_for(lock, std::chrono::seconds(seconds), [this] { return stopped_; });
  }
#if TRPC_HAVE_PROFILER
  ProfilerStop();  // flushes and closes the file
#endif
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  ::unlink(path.c_str());
  g_profiling.store(false, std::memory_order_release);
  if (cut_short) {
    done(false, "the server is stopping");
  } else if (bytes.empty()) {
    done(false, "the profiler wrote nothing");
  } else {
    done(true, std::move(bytes));
  }
}

void CpuProfiler::Stop() {
  std::thread t;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    t = std::move(thread_);
  }
  cv_.notify_all();
  if (t.joinable()) t.join();
}

}  // namespace trpc::admin
