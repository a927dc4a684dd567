#include "trpc/admin/detail/process_metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>

namespace trpc::admin {

bool ParseProcStat(std::string_view stat, long ticks_per_second, long page_size,
                   ProcessMetrics* out) {
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0 || page_size <= 0) return false;
  std::string_view rest = stat.substr(close + 1);
  // Fields after the name, from field 3 (state): field N is token N - 3.
  constexpr int kUtime = 14 - 3, kStime = 15 - 3, kRss = 24 - 3;
  uint64_t utime = 0, stime = 0;
  int64_t rss = 0;
  int token = -1;
  size_t i = 0;
  while (token < kRss) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    if (i >= rest.size()) return false;
    size_t end = rest.find(' ', i);
    if (end == std::string_view::npos) end = rest.size();
    ++token;
    std::string_view field = rest.substr(i, end - i);
    auto parse = [&](auto* v) {
      auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), *v);
      return ec == std::errc() && p == field.data() + field.size();
    };
    if ((token == kUtime && !parse(&utime)) || (token == kStime && !parse(&stime)) ||
        (token == kRss && !parse(&rss))) {
      return false;
    }
    i = end;
  }
  out->cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
  out->resident_memory_bytes = rss > 0 ? static_cast<uint64_t>(rss) * page_size : 0;
  return true;
}

bool ReadProcessMetrics(ProcessMetrics* out) {
  int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];  // 52 numeric fields and a 16-byte name: well under this
  ssize_t n = ::read(fd, buf, sizeof(buf));
  ::close(fd);
  if (n <= 0) return false;
  return ParseProcStat(std::string_view(buf, static_cast<size_t>(n)), ::sysconf(_SC_CLK_TCK),
                       ::sysconf(_SC_PAGESIZE), out);
}

}  // namespace trpc::admin
