// FiberThreadModel: Dispatch, and how a chain of requests (the tasks submitted in one reactor
// iteration, e.g. one read's pipelined batch) is run:
// in one fiber while nothing blocks, handed to a new fiber when a request parks, spread over
// idle workers, each request with fresh fiber-locals.
#include "trpc/runtime/detail/fiber_thread_model.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/fiber/fiber.h"
#include "trpc/fiber/fiber_local.h"
#include "trpc/fiber/latch.h"

namespace trpc {
namespace {

FiberThreadModelConfig Workers(uint32_t n) {
  FiberThreadModelConfig c;
  c.instance_name = "test";
  c.concurrency_hint = n;
  return c;
}

// What each task of a test chain records about where and when it ran.
struct TaskRun {
  int index = 0;
  uint64_t fiber_id = 0;
  std::thread::id thread;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int local_seen = 0;  // the FiberLocal's value when the task started
};

struct Recorder {
  std::mutex mu;
  std::vector<TaskRun> runs;  // in completion order
  std::atomic<int> left{0};
  std::promise<void> all_done;
};

// A task of a test chain: records its run into `rec`, after `body`.
struct TestTask final : Task {
  int index = 0;
  Recorder* rec = nullptr;
  std::function<void()> body;
  void Run() override;
};

fiber::FiberLocal<int>& Local() {
  static fiber::FiberLocal<int> local;
  return local;
}

void TestTask::Run() {
  TestTask* t = this;
  TaskRun r;
  r.index = t->index;
  r.fiber_id = fiber::this_fiber::GetId();
  r.thread = std::this_thread::get_id();
  r.start_ns = MonotonicNanos();
  r.local_seen = *Local();
  *Local() = t->index + 1;  // a later task of the same fiber must not see this
  if (t->body) t->body();
  r.end_ns = MonotonicNanos();
  Recorder* rec = t->rec;
  {
    std::lock_guard lock(rec->mu);
    rec->runs.push_back(r);
  }
  if (rec->left.fetch_sub(1) == 1) rec->all_done.set_value();
}

// n tasks, submitted in order by SubmitChain(); body(i) may be empty.
std::vector<std::unique_ptr<TestTask>> MakeChain(int n, Recorder* rec,
                                                 const std::function<void(int)>& body = {}) {
  std::vector<std::unique_ptr<TestTask>> tasks;
  rec->left = n;
  for (int i = 0; i < n; ++i) {
    auto t = std::make_unique<TestTask>();
    t->index = i;
    t->rec = rec;
    if (body) t->body = [body, i] { body(i); };
    tasks.push_back(std::move(t));
  }
  return tasks;
}

// Submits `tasks` from the loop of reactor `index`, in one iteration, as a connection's reader
// would: they form one chain.
void SubmitChain(FiberThreadModel& m, size_t index,
                 const std::vector<std::unique_ptr<TestTask>>& tasks) {
  Reactor* r = m.GetReactor(index);
  r->RunInLoop([&m, r, &tasks] {
    for (const auto& t : tasks) m.Submit(r, t.get());
  });
}

bool WaitDone(Recorder* rec) {
  return rec->all_done.get_future().wait_for(std::chrono::seconds(20)) == std::future_status::ready;
}

// From outside the scheduler a dispatch goes to the owner's group (here: the only one), where
// any worker may run it; always in a fiber.
TEST(FiberThreadModelTest, DispatchRunsInAFiberOfTheModel) {
  FiberThreadModel m(Workers(2));
  std::string err;
  ASSERT_TRUE(m.Start(&err)) << err;
  EXPECT_EQ(m.Type(), "fiber");
  EXPECT_FALSE(m.HandlesInline());
  for (size_t i = 0; i < 2; ++i) {
    std::promise<int> worker;
    m.Dispatch(m.GetReactor(i), [&] {
      EXPECT_TRUE(fiber::IsFiberContext());
      worker.set_value(m.scheduler()->CurrentWorkerIndex());
    });
    EXPECT_GE(worker.get_future().get(), 0);
  }
  m.Stop();
}

// Nothing blocks and there is no other worker: the whole chain runs in one fiber, in order,
// and every task starts with fresh fiber-locals.
TEST(FiberThreadModelTest, ChainRunsInOneFiberInOrderWithFreshLocals) {
  FiberThreadModel m(Workers(1));
  std::string err;
  ASSERT_TRUE(m.Start(&err)) << err;
  Recorder rec;
  auto tasks = MakeChain(16, &rec);
  SubmitChain(m, 0, tasks);
  ASSERT_TRUE(WaitDone(&rec));
  ASSERT_EQ(rec.runs.size(), 16u);
  std::set<uint64_t> fibers;
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(rec.runs[i].index, i);
    EXPECT_EQ(rec.runs[i].local_seen, 0) << "task " << i << " saw an earlier task's local";
    fibers.insert(rec.runs[i].fiber_id);
  }
  EXPECT_EQ(fibers.size(), 1u);
  EXPECT_EQ(m.scheduler()->Stats().fibers_started, 1u);
  m.Stop();
}

// A task that parks hands the rest of the chain to a new fiber at once: the ones behind it
// run (and finish) while it sleeps, and a second sleeper behind it sleeps at the same time.
TEST(FiberThreadModelTest, ParkingTaskHandsTheRestToANewFiber) {
  FiberThreadModel m(Workers(1));
  std::string err;
  ASSERT_TRUE(m.Start(&err)) << err;
  Recorder rec;
  auto tasks = MakeChain(6, &rec, [](int i) {
    if (i == 0 || i == 3) fiber::this_fiber::SleepFor(std::chrono::milliseconds(500));
  });
  int64_t begin = MonotonicNanos();
  SubmitChain(m, 0, tasks);
  ASSERT_TRUE(WaitDone(&rec));
  int64_t took_ms = (MonotonicNanos() - begin) / 1'000'000;
  ASSERT_EQ(rec.runs.size(), 6u);
  // Completion order: 1, 2, 4, 5 (no sleep) before the two sleepers.
  std::vector<int> order;
  for (const TaskRun& r : rec.runs) order.push_back(r.index);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 4, 5, 0, 3}));
  // The sleeps overlapped: one sleep's time, not two. The margin, most of a sleep, is for slow
  // sanitizer runs and for a loaded machine that does not run the worker for a while.
  EXPECT_LT(took_ms, 900);
  std::set<uint64_t> fibers;
  for (const TaskRun& r : rec.runs) fibers.insert(r.fiber_id);
  EXPECT_EQ(fibers.size(), 3u);  // 0 | 1 2 3 | 4 5
  for (const TaskRun& r : rec.runs) EXPECT_EQ(r.local_seen, 0);
  m.Stop();
}

// A yield hands the rest over too: the tasks behind it do not wait for the yielder's turn.
TEST(FiberThreadModelTest, YieldingTaskHandsTheRestOver) {
  FiberThreadModel m(Workers(1));
  std::string err;
  ASSERT_TRUE(m.Start(&err)) << err;
  Recorder rec;
  auto tasks = MakeChain(3, &rec, [](int i) {
    if (i == 0) fiber::this_fiber::Yield();
  });
  SubmitChain(m, 0, tasks);
  ASSERT_TRUE(WaitDone(&rec));
  ASSERT_EQ(rec.runs.size(), 3u);
  EXPECT_NE(rec.runs[0].fiber_id, rec.runs[2].fiber_id);
  std::set<uint64_t> fibers;
  for (const TaskRun& r : rec.runs) fibers.insert(r.fiber_id);
  EXPECT_EQ(fibers.size(), 2u);
  m.Stop();
}

// What a chain of `n` tasks (each running `body`) submitted on worker 0 of a 2-worker model,
// whose workers have both parked, did: the threads and fibers that ran it, and the wake-ups of
// parked workers it took.
struct ChainOnParkedWorkers {
  bool done = false;
  std::set<std::thread::id> threads;
  std::set<uint64_t> fibers;
  uint64_t wakeups = 0;
};

ChainOnParkedWorkers RunOnParkedWorkers(int n, const std::function<void(int)>& body = {}) {
  ChainOnParkedWorkers out;
  FiberThreadModel m(Workers(2));
  std::string err;
  if (!m.Start(&err)) return out;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // both workers park
  ThreadModel::FiberStats before;
  m.GetFiberStats(&before);
  Recorder rec;
  auto tasks = MakeChain(n, &rec, body);
  SubmitChain(m, 0, tasks);
  out.done = WaitDone(&rec);
  ThreadModel::FiberStats after;
  m.GetFiberStats(&after);
  out.wakeups = after.wakeups - before.wakeups;
  for (const TaskRun& r : rec.runs) {
    out.threads.insert(r.thread);
    out.fibers.insert(r.fiber_id);
  }
  m.Stop();
  return out;
}

// Busy-waits `us` microseconds: a task's CPU time.
void SpinFor(int64_t us) {
  int64_t until = MonotonicNanos() + us * 1000;
  while (MonotonicNanos() < until) {
  }
}

// With a sibling idle, the chain spreads: CPU-bound tasks end up on both workers instead of
// queueing behind each other on the first. (A chain long enough that the sibling gets its part
// even when a loaded machine does not run it for a while.)
TEST(FiberThreadModelTest, IdleSiblingTakesPartOfTheChain) {
  ChainOnParkedWorkers r = RunOnParkedWorkers(50, [](int) { SpinFor(5000); });
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.threads.size(), 2u);
}

// A few short tasks are not worth a wake-up: with the sibling parked (not spinning), a chain
// of four quick tasks runs in its one fiber on the reading worker, and nobody is woken. (A
// split would wake the sibling and hand each of its replies back across threads.)
//
// The hand-off is steered by the tasks' measured wall time, so a worker preempted in the middle
// of a timed task (a loaded 2-CPU CI machine) sees a slow task and rightly splits. Noise can only
// cause a split, never prevent one: of a few tries, one must stay whole.
TEST(FiberThreadModelTest, AFewShortTasksDoNotWakeAParkedSibling) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "TSan slows a task past what is worth a wake-up";
#endif
  constexpr int kTries = 8;
  int whole = 0;
  for (int i = 0; i < kTries && whole == 0; ++i) {
    ChainOnParkedWorkers r = RunOnParkedWorkers(4);
    ASSERT_TRUE(r.done);
    if (r.threads.size() == 1 && r.fibers.size() == 1 && r.wakeups == 0) ++whole;
  }
  EXPECT_EQ(whole, 1) << "every one of " << kTries << " chains of four quick tasks was split";
}

// A long run of short tasks (a busy connection's pipeline) is worth it: the chain hands its
// second half to a new fiber, which the parked sibling is woken to steal. (100 ms in all, for a
// loaded machine, as above.)
TEST(FiberThreadModelTest, ALongRunOfShortTasksIsShared) {
  ChainOnParkedWorkers r = RunOnParkedWorkers(2000, [](int) { SpinFor(50); });
  ASSERT_TRUE(r.done);
  EXPECT_EQ(r.threads.size(), 2u);
  EXPECT_GT(r.wakeups, 0u);
}

// The same chains, many at once from both reactors, some tasks parking: every task runs
// exactly once (a stress test for the hand-off; run it under the sanitizers).
TEST(FiberThreadModelTest, ManyChainsEveryTaskRunsOnce) {
  FiberThreadModel m(Workers(2));
  std::string err;
  ASSERT_TRUE(m.Start(&err)) << err;
  constexpr int kChains = 400;
  constexpr int kLen = 9;
  std::vector<std::atomic<int>> ran(kChains * kLen);
  std::vector<std::vector<std::unique_ptr<TestTask>>> chains(kChains);
  Recorder rec;
  rec.left = kChains * kLen;
  for (int c = 0; c < kChains; ++c) {
    for (int i = 0; i < kLen; ++i) {
      auto t = std::make_unique<TestTask>();
      t->index = c * kLen + i;
      t->rec = &rec;
      int slot = t->index;
      t->body = [&ran, slot, i] {
        ran[slot].fetch_add(1);
        if (i % 4 == 1) fiber::this_fiber::SleepFor(std::chrono::microseconds(50));
        if (i % 4 == 2) fiber::this_fiber::Yield();
      };
      chains[c].push_back(std::move(t));
    }
  }
  // Submitted from each worker's own loop, as a connection's reader would.
  for (int c = 0; c < kChains; ++c) SubmitChain(m, c % 2, chains[c]);
  ASSERT_TRUE(WaitDone(&rec));
  for (int i = 0; i < kChains * kLen; ++i) ASSERT_EQ(ran[i].load(), 1) << "task " << i;
  for (const TaskRun& r : rec.runs) ASSERT_EQ(r.local_seen, 0);
  m.Stop();
}

}  // namespace
}  // namespace trpc
