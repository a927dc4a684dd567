#include "trpc/base/detail/memory.h"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "trpc/base/chain_buffer.h"

namespace trpc {

namespace {

// A cgroup limit file's value: a byte count, or 0 for "max" / unreadable.
uint64_t ReadLimitFile(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text.empty() || text[0] < '0' || text[0] > '9') return 0;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    if (v > (UINT64_MAX - 9) / 10) return 0;  // v1 says "no limit" with a huge number
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  return v;
}

// tcmalloc's C entry points (gperftools/malloc_extension_c.h), found at run time: the framework's
// libraries do not link tcmalloc (programs do, TRPC_USE_TCMALLOC), and a program built without
// it must still link and run. Null when the process does not run on tcmalloc.
using VoidFn = void (*)();
VoidFn TcmallocFn(const char* name) { return reinterpret_cast<VoidFn>(dlsym(RTLD_DEFAULT, name)); }

}  // namespace

uint64_t UsableMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGESIZE);
  uint64_t phys = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) : 0;
  uint64_t cgroup = ReadLimitFile("/sys/fs/cgroup/memory.max");
  if (cgroup == 0) cgroup = ReadLimitFile("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (cgroup != 0 && (phys == 0 || cgroup < phys)) return cgroup;
  return phys;
}

void ReleaseThreadCaches() {
  detail::ReleasePooledBlocks();
  static const VoidFn mark_idle = TcmallocFn("MallocExtension_MarkThreadIdle");
  if (mark_idle != nullptr) mark_idle();
}

void ReleaseFreeMemory() {
  static const VoidFn release = TcmallocFn("MallocExtension_ReleaseFreeMemory");
  if (release != nullptr) {
    release();
  } else {
    malloc_trim(0);
  }
}

}  // namespace trpc
