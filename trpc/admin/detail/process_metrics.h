#pragma once

#include <cstdint>
#include <string_view>

namespace trpc::admin {

/// The process-wide figures the admin service exports with the standard Prometheus names
/// (process_cpu_seconds_total, process_resident_memory_bytes).
struct ProcessMetrics {
  double cpu_seconds = 0;  // user + system time of every thread, since start
  uint64_t resident_memory_bytes = 0;
};

/// Reads /proc/self/stat. False (and `*out` untouched) if it cannot be read or parsed. Any
/// thread; one small file read.
bool ReadProcessMetrics(ProcessMetrics* out);

/// Parses the text of a /proc/PID/stat file: utime + stime (field 14 + 15, in clock ticks) and
/// rss (field 24, in pages). The command name (field 2) may hold spaces and parentheses, so
/// fields are counted from the last ')'.
bool ParseProcStat(std::string_view stat, long ticks_per_second, long page_size,
                   ProcessMetrics* out);

}  // namespace trpc::admin
