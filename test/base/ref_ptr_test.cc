// RefCounted / RefPtr: ownership (adopt, copy, move, release) and the last drop deleting exactly
// once, also when the references are dropped on many threads at once (run under TSan too: the
// writes made through every reference must happen before the destructor).
#include "trpc/base/ref_ptr.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace trpc {
namespace {

std::atomic<int> g_destroyed{0};

class Counted final : public RefCounted<Counted> {
 public:
  explicit Counted(int v) : value(v) {}
  int value;
  std::atomic<int> touched{0};
  int plain_writes[8] = {};  // written through different references, read by the destructor

 private:
  friend class RefCounted<Counted>;
  ~Counted() {
    int sum = 0;
    for (int w : plain_writes) sum += w;
    last_sum = sum;
    g_destroyed.fetch_add(1);
  }

 public:
  static inline int last_sum = 0;
};

TEST(RefPtrTest, AdoptCopyMoveAndRelease) {
  g_destroyed = 0;
  {
    RefPtr<Counted> a = MakeRef<Counted>(7);
    EXPECT_EQ(a->UseCount(), 1u);
    RefPtr<Counted> b = a;
    EXPECT_EQ(a->UseCount(), 2u);
    RefPtr<Counted> c = std::move(b);
    EXPECT_FALSE(b);
    EXPECT_EQ(a->UseCount(), 2u);
    Counted* raw = c.release();  // the reference leaves the pointer, not the object
    EXPECT_FALSE(c);
    EXPECT_EQ(a->UseCount(), 2u);
    RefPtr<Counted> back(raw, kAdoptRef);
    EXPECT_EQ(a->UseCount(), 2u);
    RefPtr<Counted> extra(raw);  // a new reference
    EXPECT_EQ(a->UseCount(), 3u);
    EXPECT_EQ((*extra).value, 7);
    EXPECT_TRUE(extra == a);
    EXPECT_FALSE(extra == nullptr);
  }
  EXPECT_EQ(g_destroyed.load(), 1);
}

TEST(RefPtrTest, ResetAndAssignDropTheOldReference) {
  g_destroyed = 0;
  RefPtr<Counted> a = MakeRef<Counted>(1);
  a = MakeRef<Counted>(2);
  EXPECT_EQ(g_destroyed.load(), 1);
  EXPECT_EQ(a->value, 2);
  a.reset();
  EXPECT_EQ(g_destroyed.load(), 2);
  EXPECT_TRUE(a == nullptr);
}

// Many threads each copy and drop references; each also writes a plain field through its copy
// before dropping it. Exactly one drop deletes, and the destructor sees every write.
TEST(RefPtrTest, ConcurrentDropsDeleteOnceAfterEveryWrite) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    g_destroyed = 0;
    RefPtr<Counted> obj = MakeRef<Counted>(round);
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([copy = obj, t, &go]() mutable {
        while (!go.load(std::memory_order_acquire)) {
        }
        RefPtr<Counted> again = copy;
        again->plain_writes[t] = t + 1;
        again->touched.fetch_add(1, std::memory_order_relaxed);
      });
    }
    obj.reset();  // the threads' copies keep it alive
    go.store(true, std::memory_order_release);
    for (auto& th : threads) th.join();
    ASSERT_EQ(g_destroyed.load(), 1) << "round " << round;
    ASSERT_EQ(Counted::last_sum, kThreads * (kThreads + 1) / 2) << "round " << round;
  }
}

// A class with a static FreeLastRef decides what its last drop does (ServerContext hands a
// context to its loop thread to free); only the last drop calls it.
class FreedByHook final : public RefCounted<FreedByHook> {
 public:
  static inline int hook_calls = 0;

 private:
  friend class RefCounted<FreedByHook>;
  ~FreedByHook() = default;
  static void FreeLastRef(const FreedByHook* p) {
    ++hook_calls;
    delete p;
  }
};

TEST(RefPtrTest, TheLastDropCallsTheClassesFreeLastRef) {
  FreedByHook::hook_calls = 0;
  auto p = MakeRef<FreedByHook>();
  RefPtr<FreedByHook> copy = p;
  p.reset();
  EXPECT_EQ(FreedByHook::hook_calls, 0);
  copy.reset();
  EXPECT_EQ(FreedByHook::hook_calls, 1);
}

}  // namespace
}  // namespace trpc
