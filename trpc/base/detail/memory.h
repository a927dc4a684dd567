#pragma once

#include <cstdint>

/// Process memory: how much this process may use, and handing cached free memory back to the
/// system after a burst.

namespace trpc {

/// Bytes of memory this process may use: physical memory, or the cgroup's limit (v2
/// memory.max, v1 memory.limit_in_bytes) when that is lower. 0 if neither can be read.
uint64_t UsableMemoryBytes();

/// Frees what the calling thread keeps cached: its pool of free ChainBuffer blocks and, with
/// tcmalloc, its thread cache (returned to tcmalloc's central lists). Call it on each thread
/// that allocated the memory, then ReleaseFreeMemory() once.
void ReleaseThreadCaches();

/// Returns the allocator's free memory to the system: tcmalloc's ReleaseFreeMemory when the
/// process runs on tcmalloc (looked up at run time, so a build without it works), else glibc's
/// malloc_trim. Any thread; costs a walk of the free lists, so rate-limit it.
void ReleaseFreeMemory();

}  // namespace trpc
