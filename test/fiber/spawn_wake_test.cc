// When a fiber queued on a worker wakes a parked sibling (SchedulingGroup::PushOnWorker):
// a fiber queued from the worker's own IO poll into an empty deque is run by that worker, and
// the sibling sleeps on; a second fiber queued behind it wakes the sibling, which runs one of
// the two while the worker is busy with the other. Driven through a fake WorkerIo whose
// "input" is injected by the test, as a reactor's would be read.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "test/fiber/fiber_test_util.h"
#include "trpc/base/clock.h"
#include "trpc/fiber/detail/scheduler.h"

namespace trpc::fiber {
namespace {

using testing::PollFor;

// A worker's IO: Inject(n) makes the next Poll() or Wait() queue n fibers running MakeTask(),
// from the worker's scheduler context, as a reactor dispatching requests it read would.
class FakeIo : public WorkerIo {
 public:
  FakeIo(Scheduler** sched, size_t index, std::function<std::function<void()>()> make_task)
      : sched_(sched), index_(index), make_task_(std::move(make_task)) {}

  void Inject(int n) {
    {
      std::lock_guard lock(mu_);
      pending_ += n;
    }
    cv_.notify_all();
  }
  std::thread::id thread() const { return thread_.load(); }
  int polls() const { return polls_.load(); }

  void OnStart() override { thread_ = std::this_thread::get_id(); }
  void Poll() override {
    polls_.fetch_add(1);
    SpawnPending();
  }
  void Wait(int64_t deadline_ns, const std::atomic<uint32_t>* epoch, uint32_t token) override {
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return pending_ > 0 || woken_ || epoch->load() != token; };
      if (deadline_ns < 0) {
        cv_.wait(lock, ready);
      } else {
        int64_t left = deadline_ns - MonotonicNanos();
        if (left > 0) cv_.wait_for(lock, std::chrono::nanoseconds(left), ready);
      }
      woken_ = false;
    }
    SpawnPending();
  }
  void Wake() override {
    {
      std::lock_guard lock(mu_);
      woken_ = true;
    }
    cv_.notify_all();
  }

 private:
  void SpawnPending() {
    int n;
    {
      std::lock_guard lock(mu_);
      n = pending_;
      pending_ = 0;
    }
    for (int i = 0; i < n; ++i) (*sched_)->SpawnOn(index_, make_task_());
  }

  Scheduler** sched_;
  size_t index_;
  std::function<std::function<void()>()> make_task_;
  std::mutex mu_;
  std::condition_variable cv_;
  int pending_ = 0;
  bool woken_ = false;
  std::atomic<std::thread::id> thread_{};
  std::atomic<int> polls_{0};
};

class SpawnWakeTest : public ::testing::Test {
 protected:
  void Start(std::function<std::function<void()>()> make_task) {
    SchedulerOptions o;
    o.name = "wake";
    o.concurrency = 2;
    o.fiber_stack_size = 64 * 1024;
    o.worker_io_factory = [this, make_task](size_t i) -> std::unique_ptr<WorkerIo> {
      auto io = std::make_unique<FakeIo>(&raw_, i, make_task);
      ios_[i] = io.get();
      return io;
    };
    sched_ = std::make_unique<Scheduler>(o);
    raw_ = sched_.get();
    std::string err;
    ASSERT_TRUE(sched_->Start(&err)) << err;
    ASSERT_TRUE(PollFor([&] {
      return ios_[0]->thread() != std::thread::id() && ios_[1]->thread() != std::thread::id();
    }));
  }
  // Both workers asleep in their Wait() (each parks once at start-up, nothing to do).
  void WaitUntilParked(uint64_t at_least) {
    ASSERT_TRUE(PollFor([&] { return sched_->Stats().parks >= at_least; }));
  }
  void TearDown() override {
    if (sched_) sched_->Stop();
  }

  std::unique_ptr<Scheduler> sched_;
  Scheduler* raw_ = nullptr;
  FakeIo* ios_[2] = {nullptr, nullptr};
};

TEST_F(SpawnWakeTest, OneFiberFromTheIoPollRunsOnItsWorkerAndTheSiblingSleepsOn) {
  std::atomic<int> ran{0};
  std::atomic<int> ran_on_sibling{0};
  Start([&]() -> std::function<void()> {
    return [&] {
      if (std::this_thread::get_id() == ios_[0]->thread()) ran_on_sibling.fetch_add(1);
      ran.fetch_add(1);
    };
  });
  WaitUntilParked(2);
  constexpr int kRounds = 200;
  uint64_t parks_before = sched_->Stats().parks;
  uint64_t wakeups_before = sched_->Stats().wakeups;
  int polls_before = ios_[1]->polls();
  for (int i = 0; i < kRounds; ++i) {
    uint64_t parks = sched_->Stats().parks;
    // Worker 1's input: a wake-up would go to worker 0, the lowest parked one.
    ios_[1]->Inject(1);
    ASSERT_TRUE(PollFor([&] { return ran.load() == i + 1; })) << "round " << i;
    // Worker 1 is asleep again before the next request "arrives".
    ASSERT_TRUE(PollFor([&] { return sched_->Stats().parks > parks; })) << "round " << i;
  }
  EXPECT_EQ(ran_on_sibling.load(), 0);
  // One park per round, worker 1's. Waking worker 0 for every fiber made it two per round
  // (worker 0 woke, found nothing or stole the fiber, spun and parked again).
  uint64_t parks = sched_->Stats().parks - parks_before;
  EXPECT_GE(parks, static_cast<uint64_t>(kRounds));
  EXPECT_LE(parks, static_cast<uint64_t>(kRounds + kRounds / 10));
  EXPECT_LE(sched_->Stats().wakeups - wakeups_before, static_cast<uint64_t>(kRounds / 10));
  // With its sibling asleep an idle worker will not spin, so it parks at once: its IO wait
  // takes what is ready. A non-blocking poll before it was a second epoll call per request.
  EXPECT_LE(ios_[1]->polls() - polls_before, kRounds / 10);
}

// A worker whose spins keep finding nothing spins on ever fewer of its idle turns: here its
// sibling is busy with one long fiber (so spinning is allowed) and its own input comes one
// fiber at a time, so no spin can find work. Each spin that misses lasts the full spin time,
// so spinning on every idle turn would add up to at least kRounds * 20 us.
TEST_F(SpawnWakeTest, SpinsThatKeepMissingBackOff) {
  std::atomic<bool> busy_started{false};
  std::atomic<bool> stop_busy{false};
  std::atomic<int> ran{0};
  std::atomic<int> spawned{0};
  Start([&]() -> std::function<void()> {
    if (spawned.fetch_add(1) == 0) {
      return [&] {  // the first one: keeps worker 0 busy (bounded)
        busy_started = true;
        int64_t until = MonotonicNanos() + 20'000'000'000;
        while (!stop_busy.load() && MonotonicNanos() < until) {
        }
      };
    }
    return [&] { ran.fetch_add(1); };
  });
  WaitUntilParked(2);
  ios_[0]->Inject(1);
  ASSERT_TRUE(PollFor([&] { return busy_started.load(); }));
  constexpr int kRounds = 1000;
  uint64_t spin_before = sched_->Stats().spin_ns;
  for (int i = 0; i < kRounds; ++i) {
    uint64_t parks = sched_->Stats().parks;
    ios_[1]->Inject(1);
    ASSERT_TRUE(PollFor([&] { return ran.load() == i + 1; })) << "round " << i;
    ASSERT_TRUE(PollFor([&] { return sched_->Stats().parks > parks; })) << "round " << i;
  }
  uint64_t spun = sched_->Stats().spin_ns - spin_before;
  stop_busy = true;
  EXPECT_GT(spun, 0u) << "the first idle turns spin";
  // Backing off to one turn in 64, about 25 spins: well under a tenth of always spinning
  // (the bound leaves room for a spinner preempted on a loaded machine).
  EXPECT_LT(spun, static_cast<uint64_t>(kRounds) * 20'000 / 4);
}

class SpawnWakeBothWorkersTest : public SpawnWakeTest, public ::testing::WithParamInterface<int> {};

// On either worker: the waker must pick the sibling, not the worker itself, whose "parked" bit
// is still set while its Wait() handles the input.
TEST_P(SpawnWakeBothWorkersTest, ASecondFiberQueuedBehindTheFirstWakesTheSibling) {
  // Of two fibers queued in one poll, whichever runs first waits (bounded) for the other to
  // start: that needs the other worker, which sleeps unless the second push woke it.
  std::atomic<int> started{0};
  std::atomic<bool> timed_out{false};
  std::atomic<int> done{0};
  std::thread::id threads[2];
  Start([&]() -> std::function<void()> {
    return [&] {
      int me = started.fetch_add(1);
      threads[me] = std::this_thread::get_id();
      if (me == 0) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 2) {
          if (std::chrono::steady_clock::now() > deadline) {
            timed_out = true;
            break;
          }
        }
      }
      done.fetch_add(1);
    };
  });
  WaitUntilParked(2);
  ios_[GetParam()]->Inject(2);
  ASSERT_TRUE(PollFor([&] { return done.load() == 2; }));
  EXPECT_FALSE(timed_out.load()) << "the second fiber waited for the first: no sibling came";
  EXPECT_NE(threads[0], threads[1]);
}

INSTANTIATE_TEST_SUITE_P(Workers, SpawnWakeBothWorkersTest, ::testing::Values(0, 1));

}  // namespace
}  // namespace trpc::fiber
