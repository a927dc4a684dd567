#pragma once

#include <atomic>
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
/// overflows, a batch at a time. At most `max_mapped` stacks exist at once (mapped, pooled or in
/// use): each takes two of the process's memory mappings, and a process past
/// vm.max_map_count fails every mmap, not just ours.
class StackPool {
 public:
  /// `stack_size` is rounded up to whole pages; `max_mapped` 0 = no limit of our own.
  StackPool(size_t stack_size, size_t max_pooled, size_t max_mapped = 0);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  size_t stack_size() const { return stack_size_; }
  /// A stack, or one with base == nullptr when `max_mapped` stacks exist or mmap fails.
  Stack Allocate();
  /// Takes `stack` back (keeps it, or unmaps it if the pool is full).
  void Free(Stack stack);
  /// Moves up to `n` pooled stacks into `out`; returns how many.
  size_t TakeBatch(std::vector<Stack>* out, size_t n);
  /// Gives back the stacks in `in` (and clears it).
  void GiveBatch(std::vector<Stack>* in);

  /// Stacks mapped now (pooled, cached by workers or in use).
  size_t mapped() const { return mapped_.load(std::memory_order_relaxed); }
  /// Set when an allocation failed at `max_mapped`, until one succeeds from the pool again:
  /// stacks must not sit unused in workers' caches meanwhile (StackCache gives them back).
  /// Returns true for the call that set it.
  bool MarkWanted() { return !wanted_.exchange(true, std::memory_order_relaxed); }
  bool wanted() const { return wanted_.load(std::memory_order_relaxed); }
  size_t max_mapped() const { return max_mapped_; }

  static Stack Map(size_t size);
  static void Unmap(const Stack& s);

 private:
  void UnmapCounted(const Stack& s);

  const size_t stack_size_;
  const size_t max_pooled_;
  const size_t max_mapped_;
  // Changed only on a real mmap/munmap (never on the reuse path); a reservation is taken before
  // mapping, so concurrent allocations cannot overshoot `max_mapped_`.
  std::atomic<size_t> mapped_{0};
  // A hint (relaxed): a stale read only delays a give-back to the next Put or park.
  std::atomic<bool> wanted_{false};
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
    // Short of stacks, take one at a time: a batch would strand the rest here.
    if (cache_.empty() && pool_->TakeBatch(&cache_, pool_->wanted() ? 1 : kCapacity / 2) == 0) {
      return pool_->Allocate();
    }
    Stack s = cache_.back();
    cache_.pop_back();
    return s;
  }
  void Put(Stack s) {
    if (pool_->wanted()) [[unlikely]] {
      // Another worker waits for a stack: this one goes where it can get it.
      cache_.push_back(s);
      Flush();
      return;
    }
    if (cache_.size() == kCapacity) {
      // Keep half: a worker that both spawns and finishes fibers stays off the lock.
      std::vector<Stack> spill(cache_.begin() + kCapacity / 2, cache_.end());
      cache_.resize(kCapacity / 2);
      pool_->GiveBatch(&spill);
    }
    cache_.push_back(s);
  }
  /// Gives every cached stack back to the pool (a worker about to park while stacks are
  /// wanted).
  void Flush() {
    if (!cache_.empty()) pool_->GiveBatch(&cache_);
  }

 private:
  StackPool* pool_;
  std::vector<Stack> cache_;
};

/// How many fiber stacks this process can still map: half of the memory mappings that
/// vm.max_map_count leaves after those in use now (/proc/self/maps) and a headroom for
/// everything else (max(4096, a sixteenth of the limit): allocator arenas, thread stacks,
/// libraries loaded later). 0 when /proc cannot be read (then there is no limit of our own).
size_t StacksLeftByMapCount();

}  // namespace trpc::fiber::detail
