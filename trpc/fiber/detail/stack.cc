#include "trpc/fiber/detail/stack.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "trpc/base/logging.h"

namespace trpc::fiber::detail {

namespace {
size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
}  // namespace

StackPool::StackPool(size_t stack_size, size_t max_pooled, size_t max_mapped)
    : stack_size_((stack_size + PageSize() - 1) / PageSize() * PageSize()),
      max_pooled_(max_pooled),
      max_mapped_(max_mapped) {}

StackPool::~StackPool() {
  for (const Stack& s : free_) UnmapCounted(s);
}

Stack StackPool::Map(size_t size) {
  size_t guard = PageSize();
  // MAP_NORESERVE: a 128 KiB stack usually touches a page or two; do not charge the rest.
  void* p = ::mmap(nullptr, size + guard, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "fiber stack mmap of {} bytes failed: {}",
                      size + guard, strerror(errno));
    return Stack{};
  }
  if (::mprotect(p, guard, PROT_NONE) != 0) {
    ::munmap(p, size + guard);
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "fiber stack guard mprotect failed: {}",
                      strerror(errno));
    return Stack{};
  }
  return Stack{static_cast<char*>(p), guard, size};
}

void StackPool::Unmap(const Stack& s) { ::munmap(s.base, s.guard + s.size); }

void StackPool::UnmapCounted(const Stack& s) {
  Unmap(s);
  mapped_.fetch_sub(1, std::memory_order_relaxed);
}

Stack StackPool::Allocate() {
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      Stack s = free_.back();
      free_.pop_back();
      if (wanted()) wanted_.store(false, std::memory_order_relaxed);
      return s;
    }
  }
  if (mapped_.fetch_add(1, std::memory_order_relaxed) >= max_mapped_ && max_mapped_ != 0) {
    mapped_.fetch_sub(1, std::memory_order_relaxed);
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                      "fiber stacks: all {} the memory mappings allow are in use; a new fiber "
                      "waits for one (raise vm.max_map_count, or lower server.max_parked_requests)",
                      max_mapped_);
    return Stack{};
  }
  Stack s = Map(stack_size_);
  if (s.base == nullptr) mapped_.fetch_sub(1, std::memory_order_relaxed);
  return s;
}

void StackPool::Free(Stack s) {
  {
    std::lock_guard lock(mu_);
    if (free_.size() < max_pooled_) {
      free_.push_back(s);
      return;
    }
  }
  UnmapCounted(s);
}

size_t StackPool::TakeBatch(std::vector<Stack>* out, size_t n) {
  std::lock_guard lock(mu_);
  size_t k = std::min(n, free_.size());
  if (k != 0 && wanted()) wanted_.store(false, std::memory_order_relaxed);
  out->insert(out->end(), free_.end() - static_cast<ptrdiff_t>(k), free_.end());
  free_.resize(free_.size() - k);
  return k;
}

void StackPool::GiveBatch(std::vector<Stack>* in) {
  std::vector<Stack> unmap;
  {
    std::lock_guard lock(mu_);
    for (const Stack& s : *in) {
      if (free_.size() < max_pooled_) {
        free_.push_back(s);
      } else {
        unmap.push_back(s);
      }
    }
  }
  in->clear();
  for (const Stack& s : unmap) UnmapCounted(s);
}

size_t StacksLeftByMapCount() {
  FILE* f = ::fopen("/proc/sys/vm/max_map_count", "r");
  if (f == nullptr) return 0;
  unsigned long long limit = 0;
  int got = ::fscanf(f, "%llu", &limit);
  ::fclose(f);
  if (got != 1 || limit == 0) return 0;
  f = ::fopen("/proc/self/maps", "r");
  if (f == nullptr) return 0;
  size_t in_use = 0;
  for (int c; (c = ::fgetc(f)) != EOF;) in_use += c == '\n';
  ::fclose(f);
  size_t headroom = std::max<size_t>(4096, limit / 16);
  if (limit <= in_use + headroom) return 1;
  return (limit - in_use - headroom) / 2;
}

}  // namespace trpc::fiber::detail
