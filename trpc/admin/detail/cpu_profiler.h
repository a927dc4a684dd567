#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace trpc::admin {

/// Takes CPU profiles with gperftools' profiler (libprofiler: SIGPROF sampling of every thread
/// of the process, CPUPROFILE_FREQUENCY per second, 100 by default). A profile runs for a given
/// time on a short-lived thread of its own, so whoever starts it is not blocked for that time;
/// its result is the profile file's bytes, which `google-pprof` reads.
///
/// One profile at a time in the process (the profiler is process-wide): Start() while one runs,
/// from any CpuProfiler, reports kBusy.
///
/// Thread contract: Start() from one thread at a time (the admin thread); Stop() from any
/// thread, once — after it Start() fails. `done` runs on the profile's thread.
class CpuProfiler {
 public:
  enum class StartResult { kStarted, kBusy, kStopped, kUnavailable, kFailed };
  /// `ok` with the profile's bytes, or not ok with why (the profile failed, or Stop() cut it
  /// short).
  using Done = std::function<void(bool ok, std::string bytes_or_error)>;

  CpuProfiler() = default;
  ~CpuProfiler() { Stop(); }
  CpuProfiler(const CpuProfiler&) = delete;
  CpuProfiler& operator=(const CpuProfiler&) = delete;

  /// False when the build has no gperftools profiler (Start() then gives kUnavailable).
  static bool Available();

  /// Starts a profile of `seconds`; `done` runs once it ends. kBusy: a profile runs already;
  /// kStopped: Stop() was called; kFailed: `*err` says why. Only after kStarted is `done` called.
  StartResult Start(int seconds, Done done, std::string* err);
  /// Cuts a profile in progress short (its `done` gets not ok), waits for its thread, and
  /// refuses later profiles.
  void Stop();

 private:
  void Run(int seconds, std::string path, Done done);

  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;    // guarded by mu_: the last profile's thread
  bool stopped_ = false;  // guarded by mu_
};

}  // namespace trpc::admin
