#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

namespace trpc::fiber::detail {

/// A fiber stack: [base, base + guard) is a PROT_NONE guard page below the usable range
/// [base + guard, base + guard + size); the stack grows down towards the guard.
struct Stack {
  char* base = nullptr;
  size_t guard = 0;
  size_t size = 0;  // usable bytes
  char* bottom() const { return base + guard; }
  char* top() const { return base + guard + size; }
  bool GuardContains(const void* addr) const {
    auto* a = static_cast<const char*>(addr);
    return a >= base && a < base + guard;
  }
};

/// The shared pool behind the per-worker stack caches. Stacks are mmap'ed lazily and kept for
/// reuse (up to `max_pooled`); the lock is taken only when a worker's own cache runs dry or
/// overflows, a batch at a time.
class StackPool {
 public:
  /// `stack_size` is rounded up to whole pages.
  StackPool(size_t stack_size, size_t max_pooled);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  size_t stack_size() const { return stack_size_; }
  /// A stack, or one with base == nullptr if memory is exhausted.
  Stack Allocate();
  /// Takes `stack` back (keeps it, or unmaps it if the pool is full).
  void Free(Stack stack);
  /// Moves up to `n` pooled stacks into `out`; returns how many.
  size_t TakeBatch(std::vector<Stack>* out, size_t n);
  /// Gives back the stacks in `in` (and clears it).
  void GiveBatch(std::vector<Stack>* in);

  static Stack Map(size_t size);
  static void Unmap(const Stack& s);

 private:
  const size_t stack_size_;
  const size_t max_pooled_;
  std::mutex mu_;
  std::vector<Stack> free_;  // guarded by mu_
};

/// A worker's own cache of stacks: no lock on the hot path. Not thread-safe; one per worker.
class StackCache {
 public:
  static constexpr size_t kCapacity = 64;
  explicit StackCache(StackPool* pool) : pool_(pool) { cache_.reserve(kCapacity); }
  ~StackCache() { pool_->GiveBatch(&cache_); }
  StackCache(const StackCache&) = delete;
  StackCache& operator=(const StackCache&) = delete;

  Stack Get() {
    if (cache_.empty() && pool_->TakeBatch(&cache_, kCapacity / 2) == 0) {
      return pool_->Allocate();
    }
    Stack s = cache_.back();
    cache_.pop_back();
    return s;
  }
  void Put(Stack s) {
    if (cache_.size() == kCapacity) {
      // Keep half: a worker that both spawns and finishes fibers stays off the lock.
      std::vector<Stack> spill(cache_.begin() + kCapacity / 2, cache_.end());
      cache_.resize(kCapacity / 2);
      pool_->GiveBatch(&spill);
    }
    cache_.push_back(s);
  }

 private:
  StackPool* pool_;
  std::vector<Stack> cache_;
};

}  // namespace trpc::fiber::detail
