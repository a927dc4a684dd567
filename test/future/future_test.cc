#include "trpc/future/future.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/fiber/detail/scheduler.h"
#include "trpc/fiber/fiber.h"
#include "trpc/future/loop.h"

namespace trpc {
namespace {

using namespace std::chrono_literals;

// ---- Then: ready and pending, chains, flattening -----------------------------------------------

TEST(FutureTest, ThenOnAReadyFutureRunsAtOnce) {
  bool ran = false;
  Future<int> f = MakeReadyFuture(41).Then([&](int v) {
    ran = true;
    return v + 1;
  });
  EXPECT_TRUE(ran);
  ASSERT_TRUE(f.IsReady());
  EXPECT_FALSE(f.IsFailed());
  EXPECT_EQ(f.GetValue(), 42);
}

TEST(FutureTest, ThenChainOnAPendingFutureRunsWhenSet) {
  Promise<int> p;
  std::vector<int> steps;
  Future<size_t> f = p.GetFuture()
                         .Then([&](int v) {
                           steps.push_back(1);
                           return std::to_string(v);
                         })
                         .Then([&](const std::string& s) {
                           steps.push_back(2);
                           return s.size();
                         })
                         .Then([&](Future<size_t>&& r) {
                           steps.push_back(3);
                           return r.GetValue() * 10;
                         });
  EXPECT_TRUE(steps.empty());
  EXPECT_FALSE(f.IsResolved());
  p.SetValue(12345);
  EXPECT_EQ(steps, (std::vector<int>{1, 2, 3}));
  ASSERT_TRUE(f.IsReady());
  EXPECT_EQ(f.GetValue(), 50u);
}

TEST(FutureTest, ContinuationRunsOnTheThreadThatSetsTheValue) {
  Promise<int> p;
  std::thread::id ran_on;
  Future<> done = p.GetFuture().Then([&](int) { ran_on = std::this_thread::get_id(); });
  std::thread::id setter_id;
  std::thread setter([&] {
    setter_id = std::this_thread::get_id();
    p.SetValue(1);
  });
  setter.join();
  EXPECT_TRUE(done.IsReady());
  EXPECT_EQ(ran_on, setter_id);
}

TEST(FutureTest, ThenReturningAFutureIsFlattened) {
  Promise<int> outer;
  Promise<std::string> inner;
  Future<std::string> inner_future = inner.GetFuture();
  auto f = outer.GetFuture().Then([&](int v) {
    EXPECT_EQ(v, 7);
    return std::move(inner_future);
  });
  static_assert(std::is_same_v<decltype(f), Future<std::string>>);
  outer.SetValue(7);
  EXPECT_FALSE(f.IsResolved()) << "must wait for the returned future";
  inner.SetValue("inner");
  ASSERT_TRUE(f.IsReady());
  EXPECT_EQ(f.GetValue(), "inner");
}

TEST(FutureTest, ThenReturningAReadyOrFailedFutureIsFlattened) {
  auto ok = MakeReadyFuture(3).Then([](int v) { return MakeReadyFuture(v * 2); });
  static_assert(std::is_same_v<decltype(ok), Future<int>>);
  ASSERT_TRUE(ok.IsReady());
  EXPECT_EQ(ok.GetValue(), 6);

  auto bad = MakeReadyFuture(3).Then(
      [](int) { return MakeExceptionFuture<int>(Status(kClientNetworkErr, "down")); });
  ASSERT_TRUE(bad.IsFailed());
  EXPECT_EQ(bad.GetException().GetFrameworkRetCode(), kClientNetworkErr);
}

TEST(FutureTest, ThenReturningAnInvalidFutureFails) {
  auto f = MakeReadyFuture().Then([] { return Future<int>(); });
  ASSERT_TRUE(f.IsFailed());
  EXPECT_EQ(f.GetException().GetFrameworkRetCode(), kUnknownErr);
}

// ---- Errors ---------------------------------------------------------------------------------

TEST(FutureTest, ErrorsSkipValueContinuationsAndReachFutureContinuations) {
  Promise<int> p;
  bool value_step_ran = false;
  Future<int> f = p.GetFuture()
                      .Then([&](int v) {
                        value_step_ran = true;
                        return v;
                      })
                      .Then([&](int) { value_step_ran = true; })
                      .Then([](Future<>&& r) {
                        EXPECT_TRUE(r.IsFailed());
                        EXPECT_EQ(r.GetException().ErrorMessage(), "no route");
                        return r.GetException().GetFrameworkRetCode();
                      });
  p.SetException(Status(kClientRouterErr, "no route"));
  EXPECT_FALSE(value_step_ran);
  ASSERT_TRUE(f.IsReady());  // the last continuation recovered
  EXPECT_EQ(f.GetValue(), kClientRouterErr);
}

TEST(FutureTest, ErrorPassesThroughUnchanged) {
  auto f = MakeExceptionFuture<int>(Status(kClientNetworkErr, 7, "reset")).Then([](int v) {
    return std::to_string(v);
  });
  static_assert(std::is_same_v<decltype(f), Future<std::string>>);
  ASSERT_TRUE(f.IsFailed());
  EXPECT_FALSE(f.IsReady());
  EXPECT_EQ(f.GetException().GetFrameworkRetCode(), kClientNetworkErr);
  EXPECT_EQ(f.GetException().GetFuncRetCode(), 7);
  EXPECT_EQ(f.GetException().ErrorMessage(), "reset");
}

TEST(FutureTest, ThrowingContinuationFailsItsFuture) {
  auto f = MakeReadyFuture(1).Then([](int) -> int { throw std::runtime_error("boom"); });
  ASSERT_TRUE(f.IsFailed());
  EXPECT_EQ(f.GetException().GetFrameworkRetCode(), kUnknownErr);
  EXPECT_NE(f.GetException().ErrorMessage().find("boom"), std::string::npos);
}

TEST(FutureTest, SetExceptionWithAnOkStatusStillFails) {
  Promise<int> p;
  auto f = p.GetFuture();
  p.SetException(Status());
  ASSERT_TRUE(f.IsFailed());
  EXPECT_FALSE(f.GetException().OK());
  EXPECT_FALSE(MakeExceptionFuture<int>(Status()).GetException().OK());
}

TEST(FutureTest, BrokenPromiseFailsTheFuture) {
  Future<int> f;
  {
    Promise<int> p;
    f = p.GetFuture();
  }
  ASSERT_TRUE(f.IsFailed());
  EXPECT_EQ(f.GetException().GetFrameworkRetCode(), kUnknownErr);
  EXPECT_EQ(f.GetException().ErrorMessage(), kBrokenPromiseMessage);
}

TEST(FutureTest, BrokenPromiseRunsThePendingContinuation) {
  std::optional<Promise<std::string>> p(std::in_place);
  bool saw_error = false;
  Future<> f = p->GetFuture().Then([&](Future<std::string>&& r) { saw_error = r.IsFailed(); });
  p.reset();
  EXPECT_TRUE(saw_error);
  EXPECT_TRUE(f.IsReady());
}

TEST(FutureTest, MovedFromAndUnretrievedPromisesDoNotBreakAnything) {
  Promise<int> a;
  Future<int> f = a.GetFuture();
  Promise<int> b = std::move(a);  // `a` is now empty: destroying it must not break `f`
  EXPECT_FALSE(a.Valid());
  b.SetValue(5);
  EXPECT_EQ(f.GetValue(), 5);
  Promise<int> unused;  // never retrieved: just freed
}

TEST(FutureTest, MoveAssigningOverAPendingPromiseBreaksIt) {
  Promise<int> a;
  Future<int> fa = a.GetFuture();
  Promise<int> b;
  Future<int> fb = b.GetFuture();
  a = std::move(b);
  ASSERT_TRUE(fa.IsFailed());
  EXPECT_EQ(fa.GetException().ErrorMessage(), kBrokenPromiseMessage);
  a.SetValue(1);
  EXPECT_EQ(fb.GetValue(), 1);
}

struct ThrowsOnCopy {
  ThrowsOnCopy() = default;
  ThrowsOnCopy(const ThrowsOnCopy&) { throw std::runtime_error("no copies"); }
  ThrowsOnCopy(ThrowsOnCopy&&) = default;
};

TEST(FutureTest, AValueThatThrowsWhileStoredLeavesThePromiseUnset) {
  Promise<ThrowsOnCopy> p;
  Future<ThrowsOnCopy> f = p.GetFuture();
  ThrowsOnCopy v;
  EXPECT_THROW(p.SetValue(v), std::runtime_error);
  EXPECT_FALSE(f.IsResolved());
  p.SetValue(std::move(v));  // still settable
  EXPECT_TRUE(f.IsReady());
}

TEST(FutureTest, PromiseMayBeSetBeforeItsFutureIsTaken) {
  Promise<std::string> p;
  p.SetValue("early");
  Future<std::string> f = p.GetFuture();
  ASSERT_TRUE(f.IsReady());
  EXPECT_EQ(f.GetValue(), "early");
}

// ---- Value types ----------------------------------------------------------------------------

TEST(FutureTest, VoidFutures) {
  static_assert(std::is_same_v<decltype(MakeReadyFuture()), Future<void>>);
  static_assert(std::is_same_v<decltype(MakeReadyFuture<>()), Future<>>);
  Promise<> p;
  int ran = 0;
  Future<int> f = p.GetFuture().Then([&] { ++ran; }).Then([&] { return ++ran; });
  EXPECT_EQ(ran, 0);
  p.SetValue();
  ASSERT_TRUE(f.IsReady());
  EXPECT_EQ(f.GetValue(), 2);
  MakeReadyFuture().GetValue();  // compiles, does nothing
}

TEST(FutureTest, MoveOnlyValuesFlowThroughAChain) {
  Promise<std::unique_ptr<int>> p;
  auto f = p.GetFuture().Then([](std::unique_ptr<int> v) {
    *v += 1;
    return v;
  });
  p.SetValue(std::make_unique<int>(1));
  ASSERT_TRUE(f.IsReady());
  EXPECT_EQ(*f.GetValue(), 2);
}

TEST(FutureTest, MakeReadyFutureConstructsInPlace) {
  Future<std::string> f = MakeReadyFuture<std::string>(3, 'x');
  EXPECT_EQ(f.GetValue(), "xxx");
  Future<std::string> g = MakeReadyFuture(std::string("moved"));
  EXPECT_EQ(g.GetValue(), "moved");
}

TEST(FutureTest, ContinuationIsDestroyedRightAfterItRuns) {
  auto token = std::make_shared<int>(0);
  Promise<int> p;
  Future<int> f = p.GetFuture().Then([token](int v) { return v; });
  EXPECT_EQ(token.use_count(), 2);
  p.SetValue(1);
  EXPECT_EQ(token.use_count(), 1) << "the capture must not live as long as the result";
  EXPECT_TRUE(f.IsReady());
}

TEST(FutureTest, DroppingTheResultDoesNotCancelTheContinuation) {
  Promise<int> p;
  int ran = 0;
  {
    auto ignored = p.GetFuture().Then([&](int) { ++ran; });
  }
  p.SetValue(1);
  EXPECT_EQ(ran, 1);
}

// ---- WhenAll --------------------------------------------------------------------------------

TEST(WhenAllTest, VectorResolvesWhenAllInputsHaveWithEachResult) {
  std::vector<Promise<int>> ps(4);
  std::vector<Future<int>> fs;
  for (auto& p : ps) fs.push_back(p.GetFuture());
  auto all = WhenAll(std::move(fs));
  static_assert(std::is_same_v<decltype(all), Future<std::vector<Future<int>>>>);
  ps[2].SetValue(2);
  ps[0].SetValue(0);
  ps[3].SetException(Status(kClientNetworkErr, "three failed"));
  EXPECT_FALSE(all.IsResolved());
  ps[1].SetValue(1);
  ASSERT_TRUE(all.IsReady()) << "WhenAll itself never fails";
  std::vector<Future<int>> results = all.GetValue();
  ASSERT_EQ(results.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(results[i].IsReady());
    EXPECT_EQ(results[i].GetValue(), i);
  }
  ASSERT_TRUE(results[3].IsFailed());
  EXPECT_EQ(results[3].GetException().ErrorMessage(), "three failed");
  // A resolved input can still be chained.
  auto again = std::move(results[0]).Then([](Future<int>&& r) { return r.IsResolved(); });
  EXPECT_TRUE(again.GetValue());
}

TEST(WhenAllTest, EmptyAndAlreadyResolvedInputsResolveAtOnce) {
  auto empty = WhenAll(std::vector<Future<int>>());
  ASSERT_TRUE(empty.IsReady());
  EXPECT_TRUE(empty.GetValue().empty());

  std::vector<Future<int>> fs;
  fs.push_back(MakeReadyFuture(1));
  fs.push_back(MakeExceptionFuture<int>(Status(kClientNetworkErr, "x")));
  auto all = WhenAll(fs.begin(), fs.end());  // tRPC-Cpp's iterator form
  ASSERT_TRUE(all.IsReady());
  auto results = all.GetValue();
  EXPECT_TRUE(results[0].IsReady());
  EXPECT_TRUE(results[1].IsFailed());
}

TEST(WhenAllTest, VariadicResolvesWithATupleOfFutures) {
  Promise<int> pi;
  Promise<std::string> ps;
  Promise<> pv;
  auto all = WhenAll(pi.GetFuture(), ps.GetFuture(), pv.GetFuture());
  using Expected = Future<std::tuple<Future<int>, Future<std::string>, Future<>>>;
  static_assert(std::is_same_v<decltype(all), Expected>);
  pv.SetValue();
  ps.SetException(Status(kClientDecodeErr, "bad body"));
  EXPECT_FALSE(all.IsResolved());
  pi.SetValue(9);
  ASSERT_TRUE(all.IsReady());
  auto [fi, fs, fv] = all.GetValue();
  EXPECT_EQ(fi.GetValue(), 9);
  ASSERT_TRUE(fs.IsFailed());
  EXPECT_EQ(fs.GetException().GetFrameworkRetCode(), kClientDecodeErr);
  EXPECT_TRUE(fv.IsReady());
}

TEST(WhenAllTest, InputsResolvedConcurrentlyResolveTheResultOnce) {
  constexpr int kInputs = 8;
  for (int round = 0; round < 200; ++round) {
    std::vector<Promise<int>> ps(kInputs);
    std::vector<Future<int>> fs;
    for (auto& p : ps) fs.push_back(p.GetFuture());
    std::atomic<int> ran{0};
    auto done = WhenAll(std::move(fs)).Then([&](std::vector<Future<int>> r) {
      ran.fetch_add(1);
      int sum = 0;
      for (auto& f : r) sum += f.GetValue();
      return sum;
    });
    std::vector<std::thread> setters;
    for (int t = 0; t < 2; ++t) {
      setters.emplace_back([&, t] {
        for (int i = t; i < kInputs; i += 2) ps[i].SetValue(i);
      });
    }
    for (auto& t : setters) t.join();
    EXPECT_EQ(ran.load(), 1);
    ASSERT_TRUE(done.IsReady());
    EXPECT_EQ(done.GetValue(), kInputs * (kInputs - 1) / 2);
  }
}

// ---- Blocking getters, with fibers ----------------------------------------------------------

fiber::SchedulerOptions Options(size_t workers) {
  fiber::SchedulerOptions o;
  o.name = "future_test";
  o.concurrency = workers;
  o.fiber_stack_size = 64 * 1024;
  return o;
}

class BlockingGetTest : public ::testing::Test {
 protected:
  void Start(size_t workers) {
    sched_ = std::make_unique<fiber::Scheduler>(Options(workers));
    std::string err;
    ASSERT_TRUE(sched_->Start(&err)) << err;
  }
  void TearDown() override {
    if (sched_) sched_->Stop();
  }
  std::unique_ptr<fiber::Scheduler> sched_;
};

TEST_F(BlockingGetTest, ReadyFutureReturnsAtOnce) {
  EXPECT_EQ(BlockingGet(MakeReadyFuture(3)).GetValue(), 3);
  auto r = BlockingTryGet(MakeReadyFuture(4), 0ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->GetValue(), 4);
  EXPECT_TRUE(future::BlockingGet(MakeExceptionFuture<int>(Status(1, "x"))).IsFailed());
}

TEST_F(BlockingGetTest, PlainThreadGetsAValueSetByAFiber) {
  Start(2);
  Promise<std::string> p;
  Future<std::string> f = p.GetFuture();
  fiber::Fiber setter(sched_.get(), [&] {
    fiber::this_fiber::SleepFor(5ms);  // let the main thread block first (not required)
    p.SetValue("from a fiber");
  });
  Future<std::string> r = BlockingGet(std::move(f));
  ASSERT_TRUE(r.IsReady());
  EXPECT_EQ(r.GetValue(), "from a fiber");
  setter.Join();
}

TEST_F(BlockingGetTest, PlainThreadIsWokenByABrokenPromise) {
  Start(1);
  std::optional<Promise<int>> p(std::in_place);
  Future<int> f = p->GetFuture();
  fiber::Fiber breaker(sched_.get(), [&] {
    fiber::this_fiber::SleepFor(2ms);
    p.reset();
  });
  Future<int> r = BlockingGet(std::move(f));
  ASSERT_TRUE(r.IsFailed());
  EXPECT_EQ(r.GetException().ErrorMessage(), kBrokenPromiseMessage);
  breaker.Join();
}

// One worker: if BlockingGet blocked the worker thread instead of parking the fiber, the setter
// fiber could never run. A watchdog on the main thread turns that into a failure, not a hang.
TEST_F(BlockingGetTest, InAFiberItParksOnlyTheFiber) {
  Start(1);
  Promise<int> p;
  Future<int> f = p.GetFuture();
  std::atomic<bool> claimed{false};
  auto set_once = [&](int v) {
    if (!claimed.exchange(true)) p.SetValue(v);
  };
  std::vector<int> order;  // one worker: the fibers never run at the same time
  std::atomic<bool> getter_started{false};
  int got = 0;
  Promise<> finished;
  Future<> finished_future = finished.GetFuture();

  fiber::Fiber getter(sched_.get(), [&] {
    order.push_back(1);
    getter_started = true;
    Future<int> r = BlockingGet(std::move(f));  // parks here until the setter runs
    order.push_back(3);
    got = r.GetValue();
    finished.SetValue();
  });
  fiber::Fiber setter(sched_.get(), [&] {
    while (!getter_started) fiber::this_fiber::Yield();
    order.push_back(2);
    set_once(42);
  });
  if (!BlockingTryGet(std::move(finished_future), 20s).has_value()) {
    ADD_FAILURE() << "the getter's worker was blocked: the setter fiber never ran";
    set_once(-1);
  }
  getter.Join();
  setter.Join();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(got, 42);
}

TEST_F(BlockingGetTest, TimedGetTimesOutOnAPlainThread) {
  Promise<int> p;
  int64_t t0 = MonotonicNanos();
  auto r = BlockingTryGet(p.GetFuture(), 20ms);
  int64_t elapsed = MonotonicNanos() - t0;
  EXPECT_FALSE(r.has_value());
  EXPECT_GE(elapsed, 20 * kNanosPerMilli);
  p.SetValue(1);  // the result arrives after the getter gave up: dropped, nothing breaks
}

TEST_F(BlockingGetTest, TimedGetTimesOutInAFiberWhileOtherFibersRun) {
  Start(1);
  Promise<int> p;
  Future<int> f = p.GetFuture();
  std::atomic<bool> getter_waiting{false};
  std::atomic<bool> getter_returned{false};
  bool other_ran_during_wait = false;
  bool timed_out = false;
  int64_t elapsed = 0;
  fiber::Fiber getter(sched_.get(), [&] {
    getter_waiting = true;
    int64_t t0 = MonotonicNanos();
    auto r = BlockingTryGet(std::move(f), 30ms);
    elapsed = MonotonicNanos() - t0;
    timed_out = !r.has_value();
    getter_returned = true;
  });
  fiber::Fiber other(sched_.get(), [&] {
    while (!getter_waiting) fiber::this_fiber::Yield();
    other_ran_during_wait = !getter_returned;
  });
  getter.Join();
  other.Join();
  EXPECT_TRUE(timed_out);
  EXPECT_GE(elapsed, 30 * kNanosPerMilli);
  EXPECT_TRUE(other_ran_during_wait);
  p.SetValue(1);
}

TEST_F(BlockingGetTest, TimedGetReturnsTheValueWhenItComesInTime) {
  Start(2);
  Promise<int> p;
  Future<int> f = p.GetFuture();
  std::optional<Future<int>> in_fiber;
  // Not longer: the fiber layer cannot cancel the wait's timer, and Stop() waits for it.
  fiber::Fiber getter(sched_.get(), [&] { in_fiber = BlockingTryGet(std::move(f), 300ms); });
  fiber::Fiber setter(sched_.get(), [&] {
    fiber::this_fiber::SleepFor(2ms);
    p.SetValue(8);
  });
  getter.Join();
  setter.Join();
  ASSERT_TRUE(in_fiber.has_value());
  EXPECT_EQ(in_fiber->GetValue(), 8);

  Promise<int> q;
  std::thread t([&] {
    std::this_thread::sleep_for(2ms);
    q.SetValue(9);
  });
  auto on_thread = BlockingTryGet(q.GetFuture(), uint32_t{10'000});  // tRPC-Cpp's ms form
  t.join();
  ASSERT_TRUE(on_thread.has_value());
  EXPECT_EQ(on_thread->GetValue(), 9);
}

// Short timeouts racing with the value: the wake-up and the timeout must never both act.
TEST_F(BlockingGetTest, TimedGetsRacingWithTheValueAreSafe) {
  Start(2);
  constexpr int kRounds = 2000;
  int got = 0;
  for (int i = 0; i < kRounds; ++i) {  // plain-thread getter, fiber setter
    Promise<int> p;
    Future<int> f = p.GetFuture();
    fiber::Fiber setter(sched_.get(), [&p, i] { p.SetValue(i); });
    auto r = BlockingTryGet(std::move(f), std::chrono::microseconds(i % 50));
    if (r) {
      EXPECT_EQ(r->GetValue(), i);
      ++got;
    }
    setter.Join();
  }
  std::atomic<int> got_in_fiber{0};
  fiber::Fiber loop(sched_.get(), [&] {  // fiber getter, fiber setter
    for (int i = 0; i < kRounds; ++i) {
      Promise<int> p;
      Future<int> f = p.GetFuture();
      fiber::Fiber setter([&p, i] { p.SetValue(i); });
      auto r = BlockingTryGet(std::move(f), std::chrono::microseconds(i % 50));
      if (r) {
        EXPECT_EQ(r->GetValue(), i);
        got_in_fiber.fetch_add(1);
      }
      setter.Join();
    }
  });
  loop.Join();
  // Nothing to assert on the split between values and timeouts; ASan/the checks above catch
  // a wake-up that touches a finished wait.
  RecordProperty("values_on_thread", got);
  RecordProperty("values_in_fiber", got_in_fiber.load());
}

TEST_F(BlockingGetTest, ManyFibersParkedOnFuturesSetFromAPlainThread) {
  Start(2);
  constexpr int kFibers = 2000;
  std::vector<Promise<int>> ps(kFibers);
  std::vector<Future<int>> fs;
  for (auto& p : ps) fs.push_back(p.GetFuture());
  std::atomic<long> sum{0};
  std::vector<fiber::Fiber> getters;
  for (int i = 0; i < kFibers; ++i) {
    getters.emplace_back(sched_.get(),
                         [&, i] { sum.fetch_add(BlockingGet(std::move(fs[i])).GetValue()); });
  }
  for (int i = 0; i < kFibers; ++i) ps[i].SetValue(i);
  for (auto& g : getters) g.Join();
  EXPECT_EQ(sum.load(), static_cast<long>(kFibers) * (kFibers - 1) / 2);
}

// ---- Stress ---------------------------------------------------------------------------------

// 4 setter threads x 50k promises, while 4 other threads attach continuations to the same
// futures: attach-before-set and set-before-attach both happen, and every continuation must
// run exactly once, with its own value.
TEST(FutureStressTest, ConcurrentSetAndThenRunEveryContinuationOnce) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50'000;
  constexpr int kTotal = kThreads * kPerThread;
  std::vector<Promise<int>> promises(kTotal);
  std::vector<Future<int>> futures;
  futures.reserve(kTotal);
  for (auto& p : promises) futures.push_back(p.GetFuture());
  std::vector<std::atomic<int>> runs(kTotal);
  std::atomic<int> wrong_values{0};
  std::atomic<int> chained{0};
  std::atomic<bool> go{false};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = t * kPerThread; i < (t + 1) * kPerThread; ++i) promises[i].SetValue(i);
    });
    threads.emplace_back([&, t] {
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      for (int i = t * kPerThread; i < (t + 1) * kPerThread; ++i) {
        if (i % 2 == 0) {
          std::move(futures[i]).Then([&, i](int v) {
            runs[i].fetch_add(1, std::memory_order_relaxed);
            if (v != i) wrong_values.fetch_add(1);
          });
        } else {
          // The Future-taking form, flattened through a second future.
          std::move(futures[i])
              .Then([&, i](Future<int>&& r) {
                runs[i].fetch_add(1, std::memory_order_relaxed);
                if (r.GetValue() != i) wrong_values.fetch_add(1);
                return MakeReadyFuture(i);
              })
              .Then([&](int) { chained.fetch_add(1, std::memory_order_relaxed); });
        }
      }
    });
  }
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();

  int not_once = 0;
  for (int i = 0; i < kTotal; ++i) {
    if (runs[i].load(std::memory_order_relaxed) != 1) ++not_once;
  }
  EXPECT_EQ(not_once, 0);
  EXPECT_EQ(wrong_values.load(), 0);
  EXPECT_EQ(chained.load(), kTotal / 2);
}

// DoWhile: a loop of 300,000 steps, ready ones and pending ones resolved one at a time from the
// test's thread (as a stream's messages arrive), runs in constant stack: the recursive form
// (each step's continuation returning the next step's future) would nest 300,000 levels.
TEST(DoWhileTest, ALongLoopOfReadyAndPendingStepsRunsInConstantStack) {
  std::deque<Promise<bool>> pending;  // (stable while a step appends during SetValue)
  int steps = 0;
  Future<> done = DoWhile([&] {
    ++steps;
    if (steps % 3 != 0) return MakeReadyFuture<bool>(true);
    pending.emplace_back();
    return pending.back().GetFuture();
  });
  // Each pending step is resolved from here; its continuation runs the next steps inline.
  for (size_t i = 0; i < pending.size(); ++i) {
    pending[i].SetValue(steps < 300'000);
    if (done.IsResolved()) break;
  }
  ASSERT_TRUE(done.IsReady());
  EXPECT_GE(steps, 300'000);
}

TEST(DoWhileTest, AStepsErrorEndsTheLoopWithIt) {
  int steps = 0;
  Promise<bool> later;
  Future<> done = DoWhile([&]() -> Future<bool> {
    if (++steps == 5) return later.GetFuture();
    return MakeReadyFuture<bool>(true);
  });
  EXPECT_FALSE(done.IsResolved());
  later.SetException(Status(kUnknownErr, "the stream ended"));
  ASSERT_TRUE(done.IsFailed());
  EXPECT_EQ(done.GetException().ErrorMessage(), "the stream ended");
  EXPECT_EQ(steps, 5);
  Future<> at_once = DoWhile([] { return MakeExceptionFuture<bool>(Status(kUnknownErr, "no")); });
  ASSERT_TRUE(at_once.IsFailed());
}

// Steps resolved from another thread while the loop runs: each runs once, in order.
TEST(DoWhileTest, StepsResolvedFromAnotherThread) {
  std::atomic<int> steps{0};
  std::mutex mu;
  std::vector<Promise<bool>> queue;
  std::atomic<bool> stop{false};
  std::thread resolver([&] {
    int resolved = 0;
    while (!stop.load()) {
      std::vector<Promise<bool>> take;
      {
        std::lock_guard<std::mutex> lock(mu);
        take.swap(queue);
      }
      for (auto& p : take) p.SetValue(++resolved < 20'000);
      if (take.empty()) std::this_thread::yield();
    }
  });
  Future<> done = DoWhile([&] {
    steps.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    queue.emplace_back();
    return queue.back().GetFuture();
  });
  Future<> got = BlockingGet(std::move(done));
  stop.store(true);
  resolver.join();
  EXPECT_TRUE(got.IsReady());
  EXPECT_EQ(steps.load(), 20'000);
}

}  // namespace
}  // namespace trpc
