#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>

#include "trpc/fiber/detail/scheduler.h"  // UsableCpuCount()

namespace trpc::fiber {

namespace {
// cgroup v2 "cpu.max" is "<quota> <period>" or "max <period>"; v1 has two files.
size_t CgroupCpuLimit() {
  std::ifstream v2("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long long period = 0;
  if (v2 >> quota >> period) {
    if (quota == "max" || period <= 0) return 0;
    double q = std::stod(quota);
    return static_cast<size_t>(std::ceil(q / static_cast<double>(period)));
  }
  std::ifstream q1("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  std::ifstream p1("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  long long q = 0;
  if (q1 >> q && p1 >> period && q > 0 && period > 0) {
    return static_cast<size_t>((q + period - 1) / period);
  }
  return 0;
}
}  // namespace

size_t UsableCpuCount() {
  cpu_set_t set;
  size_t n = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    n = static_cast<size_t>(CPU_COUNT(&set));
  }
  if (n == 0) n = std::max<long>(1, ::sysconf(_SC_NPROCESSORS_ONLN));
  size_t limit = CgroupCpuLimit();
  if (limit > 0 && limit < n) n = limit;
  return std::max<size_t>(n, 1);
}

}  // namespace trpc::fiber
