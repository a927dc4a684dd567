#include "benchmark/trpc_bench/cpu_time.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace trpc::bench {

int64_t SelfCpuMicros() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto micros = [](const timeval& tv) { return int64_t{tv.tv_sec} * 1'000'000 + tv.tv_usec; };
  return micros(ru.ru_utime) + micros(ru.ru_stime);
}

int64_t ProcessCpuMicros(int pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return -1;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces or ')': skip to the last.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return -1;
  unsigned long utime = 0;
  unsigned long stime = 0;
  // After ")": state (field 3) ... utime is field 14, stime field 15, in clock ticks.
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) !=
      2) {
    return -1;
  }
  return static_cast<int64_t>(utime + stime) * 1'000'000 / sysconf(_SC_CLK_TCK);
}

}  // namespace trpc::bench
