// Fiber micro-benchmarks: the raw boost.context switch (the floor), and what the scheduler and
// the sync primitives add on top of it. Scheduler-based cases run their timing loop inside a
// fiber, on a scheduler of the stated number of workers; run pinned to one CPU for stable
// figures:
//   taskset -c 1 build/benchmark/micro/fiber_bench --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <atomic>
#include <boost/context/detail/fcontext.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trpc/fiber/condition_variable.h"
#include "trpc/fiber/detail/scheduler.h"
#include "trpc/fiber/detail/stack.h"
#include "trpc/fiber/fiber.h"
#include "trpc/fiber/mutex.h"
#include "trpc/fiber/thread_bridge.h"

namespace trpc::fiber {
namespace {

namespace ctx = boost::context::detail;

// Reports `per_iteration` events per iteration as "time per event" (seconds, SI-prefixed).
void SetTimePer(benchmark::State& state, const char* name, double per_iteration) {
  state.counters[name] =
      benchmark::Counter(static_cast<double>(state.iterations()) * per_iteration,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Starts a scheduler with `workers` workers, runs `body` in a fiber on it (the timing loop goes
// in there), then stops it. Real time: the thread that started the benchmark only waits.
template <typename Body>
void InFiber(benchmark::State& state, size_t workers, Body body) {
  SchedulerOptions o;
  o.name = "bench";
  o.concurrency = workers;
  Scheduler sched(o);
  std::string err;
  if (!sched.Start(&err)) {
    state.SkipWithError(err.c_str());
    return;
  }
  RunInFiber(&sched, [&] { body(); });
  sched.Stop();
}

// ---- The floor: two contexts ping-ponging with boost's jump_fcontext -----------------------

void PongMain(ctx::transfer_t t) {
  for (;;) t = ctx::jump_fcontext(t.fctx, nullptr);
}

void BM_RawContextSwitch(benchmark::State& state) {
  detail::Stack stack = detail::StackPool::Map(64 * 1024);
  ctx::fcontext_t other = ctx::make_fcontext(stack.top(), stack.size, PongMain);
  other = ctx::jump_fcontext(other, nullptr).fctx;  // enter once; it jumps straight back
  for (auto _ : state) {
    other = ctx::jump_fcontext(other, nullptr).fctx;  // there and back: two switches
  }
  SetTimePer(state, "per_switch", 2);
  // The other context never returns; its stack is simply dropped (it holds nothing).
  detail::StackPool::Unmap(stack);
}
BENCHMARK(BM_RawContextSwitch);

// ---- Scheduler ---------------------------------------------------------------------------------

// Fiber spawns a child, which runs, and joins it: allocation of the descriptor and join state,
// a stack from the worker's cache, and the switches parent -> scheduler -> child -> scheduler
// -> parent.
void BM_SpawnRunJoinFromFiber(benchmark::State& state) {
  InFiber(state, 1, [&] {
    for (auto _ : state) {
      Fiber f([] {});
      f.Join();
    }
  });
}
BENCHMARK(BM_SpawnRunJoinFromFiber)->UseRealTime();

// Two fibers on one worker yielding to each other. One iteration is a round trip: this fiber
// yields, the other runs and yields, this one runs again (four context switches).
void BM_YieldPingPong(benchmark::State& state) {
  InFiber(state, 1, [&] {
    std::atomic<bool> stop{false};
    Fiber other([&] {
      while (!stop.load(std::memory_order_relaxed)) this_fiber::Yield();
    });
    for (auto _ : state) this_fiber::Yield();
    stop = true;
    other.Join();
  });
}
BENCHMARK(BM_YieldPingPong)->UseRealTime();

// ---- Mutex ---------------------------------------------------------------------------------

void BM_MutexUncontended(benchmark::State& state) {
  Mutex mu;
  for (auto _ : state) {
    mu.lock();
    mu.unlock();
  }
}
BENCHMARK(BM_MutexUncontended);

void BM_MutexUncontendedInFiber(benchmark::State& state) {
  InFiber(state, 1, [&] {
    Mutex mu;
    for (auto _ : state) {
      mu.lock();
      mu.unlock();
    }
  });
}
BENCHMARK(BM_MutexUncontendedInFiber)->UseRealTime();

// Reference point: glibc's mutex, same loop.
void BM_StdMutexUncontended(benchmark::State& state) {
  std::mutex mu;
  for (auto _ : state) {
    mu.lock();
    mu.unlock();
  }
}
BENCHMARK(BM_StdMutexUncontended);

// Four fibers on range(0) workers contend for one Mutex: this fiber's lock/unlock pairs are
// timed while three others lock and unlock it in a loop. "per_lock_all" is the time per
// lock/unlock pair over all four fibers. (On one CPU the workers time-share it, so the lock is
// contended only when a holder is preempted.)
void BM_MutexContended4Fibers(benchmark::State& state) {
  constexpr int kFibers = 4;
  int64_t total = 0;
  InFiber(state, static_cast<size_t>(state.range(0)), [&] {
    Mutex mu;
    int64_t counter = 0;
    std::atomic<bool> stop{false};
    std::vector<Fiber> others;
    for (int f = 1; f < kFibers; ++f) {
      others.emplace_back(
          Scheduler::Current(),
          [&] {
            while (!stop.load(std::memory_order_relaxed)) {
              std::lock_guard lock(mu);
              ++counter;
            }
          },
          f);
    }
    for (auto _ : state) {
      std::lock_guard lock(mu);
      ++counter;
    }
    stop = true;
    for (auto& f : others) f.Join();
    total = counter;
  });
  state.counters["per_lock_all"] = benchmark::Counter(
      static_cast<double>(total), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_MutexContended4Fibers)->Arg(2)->Arg(4)->UseRealTime();

// ---- Wake-ups --------------------------------------------------------------------------------

// Two fibers alternating through a Mutex + ConditionVariable (park and wake each way); one
// iteration is a round trip. range(0) workers.
void BM_CondVarPingPong(benchmark::State& state) {
  InFiber(state, static_cast<size_t>(state.range(0)), [&] {
    Mutex mu;
    ConditionVariable cv;
    int turn = 0;
    bool stop = false;
    Fiber other(
        Scheduler::Current(),
        [&] {
          std::unique_lock lock(mu);
          for (;;) {
            cv.wait(lock, [&] { return turn == 1 || stop; });
            if (stop) return;
            turn = 0;
            cv.notify_one();
          }
        },
        state.range(0) > 1 ? 1 : 0);
    std::unique_lock lock(mu);
    for (auto _ : state) {
      turn = 1;
      cv.notify_one();
      cv.wait(lock, [&] { return turn == 0; });
    }
    stop = true;
    cv.notify_one();
    lock.unlock();
    other.Join();
  });
}
BENCHMARK(BM_CondVarPingPong)->Arg(1)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace trpc::fiber

BENCHMARK_MAIN();
