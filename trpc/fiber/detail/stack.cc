#include "trpc/fiber/detail/stack.h"

#include <sys/mman.h>
#include <unistd.h>

#include "trpc/base/logging.h"

namespace trpc::fiber::detail {

namespace {
size_t PageSize() {
  static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}
}  // namespace

StackPool::StackPool(size_t stack_size, size_t max_pooled)
    : stack_size_((stack_size + PageSize() - 1) / PageSize() * PageSize()),
      max_pooled_(max_pooled) {}

StackPool::~StackPool() {
  for (const Stack& s : free_) Unmap(s);
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

Stack StackPool::Allocate() {
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      Stack s = free_.back();
      free_.pop_back();
      return s;
    }
  }
  return Map(stack_size_);
}

void StackPool::Free(Stack s) {
  {
    std::lock_guard lock(mu_);
    if (free_.size() < max_pooled_) {
      free_.push_back(s);
      return;
    }
  }
  Unmap(s);
}

size_t StackPool::TakeBatch(std::vector<Stack>* out, size_t n) {
  std::lock_guard lock(mu_);
  size_t k = std::min(n, free_.size());
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
  for (const Stack& s : unmap) Unmap(s);
}

}  // namespace trpc::fiber::detail
