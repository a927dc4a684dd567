#pragma once

#include <cstdint>

namespace trpc::bench {

/// CPU time (user + system) in microseconds, to compare a window's start and end.
/// Safe from any thread.

/// Of this whole process (getrusage), every thread included.
int64_t SelfCpuMicros();
/// Of process `pid`, from utime + stime in /proc/PID/stat; -1 if it cannot be read.
int64_t ProcessCpuMicros(int pid);

}  // namespace trpc::bench
