#include "trpc/reactor/reactor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trpc/base/clock.h"

namespace trpc {
namespace {

class ReactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    thread_ = std::thread([this] { reactor_.Run(); });
  }
  void TearDown() override {
    reactor_.Stop();
    thread_.join();
  }
  // Waits (bounded) until `pred` holds.
  template <typename Pred>
  bool WaitFor(Pred pred, int64_t timeout_ms = 10000) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (!pred()) {
      if (MonotonicMillis() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return true;
  }

  Reactor reactor_{1024};  // small queue: the overflow path gets exercised too
  std::thread thread_;
};

TEST_F(ReactorTest, TasksFromManyThreadsAllRunOnTheLoopThread) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50000;
  std::atomic<int> ran{0};
  std::atomic<int> off_thread{0};
  std::vector<std::thread> posters;
  for (int t = 0; t < kThreads; ++t) {
    posters.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        reactor_.Post([&] {
          if (!reactor_.InLoopThread()) off_thread.fetch_add(1);
          ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
    });
  }
  for (auto& t : posters) t.join();
  ASSERT_TRUE(WaitFor([&] { return ran.load() == kThreads * kPerThread; }));
  EXPECT_EQ(off_thread.load(), 0);
}

// A lost wake-up would leave a task posted to a sleeping loop unrun: post one at a time and wait
// for each, many times, so the loop is asleep (or about to be) at every post.
TEST_F(ReactorTest, NoLostWakeUps) {
  for (int i = 0; i < 20000; ++i) {
    std::atomic<bool> done{false};
    reactor_.Post([&] { done.store(true, std::memory_order_release); });
    ASSERT_TRUE(WaitFor([&] { return done.load(std::memory_order_acquire); }, 5000))
        << "task " << i << " never ran";
  }
}

// The counters: a post to a sleeping loop writes its eventfd once (counted); a post the loop
// runs itself (RunInLoop on the loop thread) writes nothing; CountForeignReply() counts on the
// loop thread.
TEST_F(ReactorTest, CountsItsWakeUpsAndForeignReplies) {
  Reactor::Counters before = reactor_.counters();
  constexpr int kPosts = 50;
  for (int i = 0; i < kPosts; ++i) {
    std::atomic<bool> done{false};
    // Asleep before each post: nothing else is queued and no timer is due, so the loop is
    // in (or on its way into) epoll_wait with no timeout.
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    reactor_.Post([&] {
      reactor_.CountForeignReply();
      reactor_.RunInLoop([] {});  // inline: no eventfd write
      done.store(true, std::memory_order_release);
    });
    ASSERT_TRUE(WaitFor([&] { return done.load(std::memory_order_acquire); }));
  }
  Reactor::Counters after = reactor_.counters();
  EXPECT_EQ(after.foreign_replies - before.foreign_replies, static_cast<uint64_t>(kPosts));
  // One write per post that found the loop asleep: at most one per post, and a loop that
  // slept a millisecond before each was asleep for nearly all of them.
  uint64_t wakeups = after.wakeups - before.wakeups;
  EXPECT_LE(wakeups, static_cast<uint64_t>(kPosts));
  EXPECT_GE(wakeups, static_cast<uint64_t>(kPosts / 2));
}

TEST_F(ReactorTest, TimersFireInOrderAndCancelWorks) {
  std::vector<int> order;
  std::atomic<bool> done{false};
  reactor_.Post([&] {
    int64_t now = MonotonicNanos();
    reactor_.AddTimer(now + 30 * kNanosPerMilli, [&] {
      order.push_back(3);
      done = true;
    });
    reactor_.AddTimer(now + 10 * kNanosPerMilli, [&] { order.push_back(1); });
    TimerId c = reactor_.AddTimer(now + 20 * kNanosPerMilli, [&] { order.push_back(2); });
    reactor_.CancelTimer(c);
  });
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  EXPECT_EQ(order, (std::vector<int>{1, 3}));
}

TEST_F(ReactorTest, TimerDoesNotFireEarly) {
  std::atomic<int64_t> fired_at{0};
  int64_t deadline = 0;
  reactor_.Post([&] {
    deadline = MonotonicNanos() + 5 * kNanosPerMilli;
    reactor_.AddTimer(deadline, [&] { fired_at = MonotonicNanos(); });
  });
  ASSERT_TRUE(WaitFor([&] { return fired_at.load() != 0; }));
  EXPECT_GE(fired_at.load(), deadline);
}

TEST_F(ReactorTest, RunInLoopIsInlineOnTheLoopThread) {
  std::atomic<bool> inline_ran{false};
  std::atomic<bool> done{false};
  reactor_.Post([&] {
    bool after = false;
    reactor_.RunInLoop([&] { inline_ran = !after; });
    after = true;
    done = true;
  });
  ASSERT_TRUE(WaitFor([&] { return done.load(); }));
  EXPECT_TRUE(inline_ran.load());
  EXPECT_EQ(Reactor::Current(), nullptr);  // not on a loop thread here
}

// The loop is held by its first task while the test posts, so the 1024-slot ring fills and the
// rest spills into the overflow list; the loop is released halfway, so the second half is posted
// while the loop drains ring and list. A task that went to the ring while older ones waited in
// the list would run ahead of them.
// The end-of-iteration call runs once, after the tasks of the iteration that armed it; a task
// those tasks post belongs to the next iteration. Arming it twice in one iteration runs it once.
TEST_F(ReactorTest, IterationEndRunsOnceAfterTheIterationsTasks) {
  std::vector<std::string> order;  // loop thread only until done
  std::atomic<bool> done{false};
  struct Arg {
    std::vector<std::string>* order;
    std::atomic<bool>* done;
  } arg{&order, &done};
  auto at_end = [](void* a) {
    auto* x = static_cast<Arg*>(a);
    x->order->push_back("end");
    x->done->store(true, std::memory_order_release);
  };
  reactor_.Post([&] {
    order.push_back("task 1");
    reactor_.AtIterationEnd(at_end, &arg);
    reactor_.AtIterationEnd(at_end, &arg);  // the same call again: still one
    reactor_.Post([&] { order.push_back("task 2"); });
  });
  ASSERT_TRUE(WaitFor([&] { return done.load(std::memory_order_acquire); }));
  std::atomic<bool> idle{false};
  reactor_.Post([&] { idle.store(true); });
  ASSERT_TRUE(WaitFor([&] { return idle.load(); }));
  EXPECT_EQ(order, (std::vector<std::string>{"task 1", "end", "task 2"}));
}

// Armed outside an iteration (by code running on the loop thread between iterations, as a fiber
// on a worker does), the call keeps the next wait from blocking: it runs at once, not after the
// next event or timer.
TEST(ReactorIterationEndTest, ArmedBetweenIterationsDoesNotWaitForAnEvent) {
  Reactor r;
  r.Attach();
  bool ran = false;
  r.AtIterationEnd([](void* a) { *static_cast<bool*>(a) = true; }, &ran);
  int64_t start = MonotonicMillis();
  r.RunOnce(MonotonicNanos() + 3 * kNanosPerSecond);  // would sleep 3 s with nothing to do
  EXPECT_TRUE(ran);
  EXPECT_LT(MonotonicMillis() - start, 1000);
  r.Detach();
}

// RunPending (a fiber worker about to park): what was queued runs, without a wait for events;
// with nothing queued it does nothing and says so.
TEST(ReactorIterationEndTest, RunPendingRunsQueuedWorkWithoutWaiting) {
  Reactor r;
  r.Attach();
  std::vector<std::string> order;
  r.Post([&] { order.push_back("task"); });
  r.AtIterationEnd([](void* a) { static_cast<std::vector<std::string>*>(a)->push_back("end"); },
                   &order);
  EXPECT_TRUE(r.RunPending());
  EXPECT_EQ(order, (std::vector<std::string>{"task", "end"}));
  EXPECT_FALSE(r.RunPending());
  r.Detach();
}

// Background work runs after an iteration's events and tasks, kBackgroundPerIteration per
// iteration, in order; while some waits, the loop does not sleep; at exit what is left is
// dropped, not run.
TEST(ReactorBackgroundTest, OnePerIterationAfterTheEventsAndNoSleepWhileSomeWait) {
  static_assert(Reactor::kBackgroundPerIteration == 1);
  Reactor r;
  r.Attach();
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) {
    r.PostBackground([&order, i] { order.push_back("background " + std::to_string(i)); });
  }
  r.Post([&] { order.push_back("task"); });
  int64_t start = MonotonicMillis();
  r.RunOnce(MonotonicNanos() + 3 * kNanosPerSecond);  // would sleep 3 s with nothing queued
  EXPECT_EQ(order, (std::vector<std::string>{"task", "background 0"}));
  r.RunOnce(MonotonicNanos() + 3 * kNanosPerSecond);
  EXPECT_EQ(order.back(), "background 1");
  EXPECT_LT(MonotonicMillis() - start, 1000) << "slept with background work waiting";
  // Background work that queues more: the new one waits for a later iteration.
  r.PostBackground([&] {
    order.push_back("background 3");
    r.PostBackground([&] { order.push_back("background 4"); });
  });
  r.RunOnce(MonotonicNanos() + 3 * kNanosPerSecond);
  r.RunOnce(MonotonicNanos() + 3 * kNanosPerSecond);
  EXPECT_EQ(order, (std::vector<std::string>{"task", "background 0", "background 1", "background 2",
                                             "background 3"}));
  auto held = std::make_shared<int>(0);
  r.PostBackground([&order, held] { order.push_back("never"); });
  r.Detach();  // drops what is left (background 4, and this one): destroyed, not run
  EXPECT_EQ(held.use_count(), 1);
  EXPECT_EQ(order.back(), "background 3");
  EXPECT_LT(MonotonicMillis() - start, 1000) << "slept with background work waiting";
}

TEST(ReactorOrderTest, TasksFromOneThreadRunInPostOrderThroughOverflow) {
  constexpr int kTasks = 100'000;
  Reactor reactor(1024);
  std::thread loop([&] { reactor.Run(); });
  std::atomic<bool> started{false};
  std::atomic<bool> release{false};
  std::atomic<bool> gave_up{false};
  std::vector<int> seen;  // loop thread only until `done`
  seen.reserve(kTasks);
  std::atomic<int> done{0};
  reactor.Post([&] {
    started.store(true);
    int64_t deadline = MonotonicMillis() + 30'000;
    while (!release.load()) {
      if (MonotonicMillis() > deadline) {
        gave_up.store(true);
        break;
      }
      std::this_thread::yield();
    }
  });
  int64_t deadline = MonotonicMillis() + 10'000;
  while (!started.load() && MonotonicMillis() < deadline) std::this_thread::yield();
  ASSERT_TRUE(started.load()) << "the first task never ran";
  for (int i = 0; i < kTasks; ++i) {
    if (i == kTasks / 2) release.store(true);
    reactor.Post([&, i] {
      seen.push_back(i);
      done.fetch_add(1, std::memory_order_release);
    });
  }
  deadline = MonotonicMillis() + 30'000;
  while (done.load(std::memory_order_acquire) < kTasks && MonotonicMillis() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reactor.Stop();
  loop.join();
  EXPECT_FALSE(gave_up.load()) << "the first task was never released";
  ASSERT_EQ(seen.size(), static_cast<size_t>(kTasks)) << "tasks were lost";
  for (int i = 0; i < kTasks; ++i) {
    if (seen[i] != i) {
      ADD_FAILURE() << "position " << i << " ran task " << seen[i] << " (previous "
                    << (i > 0 ? seen[i - 1] : -1) << "): posts from one thread ran out of order";
      break;
    }
  }
}

// Two posters, each tagging its tasks with its own sequence: every poster's tasks run in the
// order it posted them, however the two interleave and whichever of ring or list they land in.
TEST(ReactorOrderTest, EachPostersTasksRunInItsOrder) {
  constexpr int kPerThread = 50'000;
  Reactor reactor(1024);
  std::thread loop([&] { reactor.Run(); });
  std::atomic<bool> started{false};
  std::atomic<int> halfway{0};  // posters that have posted half of their tasks
  std::atomic<bool> gave_up{false};
  std::vector<std::pair<int, int>> seen;  // (poster, sequence); loop thread only until `done`
  seen.reserve(2 * kPerThread);
  std::atomic<int> done{0};
  reactor.Post([&] {
    started.store(true);
    int64_t deadline = MonotonicMillis() + 30'000;
    while (halfway.load() < 2) {
      if (MonotonicMillis() > deadline) {
        gave_up.store(true);
        break;
      }
      std::this_thread::yield();
    }
  });
  int64_t deadline = MonotonicMillis() + 10'000;
  while (!started.load() && MonotonicMillis() < deadline) std::this_thread::yield();
  ASSERT_TRUE(started.load()) << "the first task never ran";
  std::vector<std::thread> posters;
  for (int t = 0; t < 2; ++t) {
    posters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (i == kPerThread / 2) halfway.fetch_add(1);
        reactor.Post([&, t, i] {
          seen.emplace_back(t, i);
          done.fetch_add(1, std::memory_order_release);
        });
      }
    });
  }
  for (auto& p : posters) p.join();
  deadline = MonotonicMillis() + 30'000;
  while (done.load(std::memory_order_acquire) < 2 * kPerThread && MonotonicMillis() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reactor.Stop();
  loop.join();
  EXPECT_FALSE(gave_up.load()) << "the first task was never released";
  ASSERT_EQ(seen.size(), static_cast<size_t>(2 * kPerThread)) << "tasks were lost";
  int next[2] = {0, 0};
  for (size_t k = 0; k < seen.size(); ++k) {
    auto [t, i] = seen[k];
    if (i != next[t]) {
      ADD_FAILURE() << "poster " << t << ": task " << i << " ran when " << next[t]
                    << " was due (position " << k << ")";
      break;
    }
    ++next[t];
  }
  EXPECT_EQ(next[0], kPerThread);
  EXPECT_EQ(next[1], kPerThread);
}

TEST(ReactorStopTest, TasksPostedBeforeStopStillRun) {
  Reactor r;
  std::atomic<int> ran{0};
  std::thread t([&] { r.Run(); });
  for (int i = 0; i < 1000; ++i) r.Post([&] { ran.fetch_add(1); });
  r.Stop();
  t.join();
  EXPECT_EQ(ran.load(), 1000);
}

}  // namespace
}  // namespace trpc
