#include "trpc/runtime/detail/merge_thread_model.h"

#include <gtest/gtest.h>

#include <future>
#include <set>
#include <thread>

#include "trpc/runtime/detail/runtime.h"

namespace trpc {
namespace {

// Runs `fn` on `r`'s thread and returns its result.
template <typename Fn>
auto OnLoop(Reactor* r, Fn fn) {
  std::promise<decltype(fn())> p;
  auto f = p.get_future();
  r->Post([&] { p.set_value(fn()); });
  return f.get();
}

TEST(MergeThreadModelTest, EachWorkerRunsItsOwnReactor) {
  MergeThreadModel m("m", 3);
  std::string err;
  ASSERT_TRUE(m.Start(&err)) << err;
  EXPECT_EQ(m.Type(), "merge");
  EXPECT_EQ(m.ReactorCount(), 3u);
  std::set<std::thread::id> threads;
  for (size_t i = 0; i < m.ReactorCount(); ++i) {
    Reactor* r = m.GetReactor(i);
    EXPECT_EQ(m.IndexOf(r), static_cast<int>(i));
    threads.insert(OnLoop(r, [] { return std::this_thread::get_id(); }));
    EXPECT_EQ(OnLoop(r, [] { return Reactor::Current(); }), r);
    // A merge worker must not block on IO it serves itself; a plain thread may.
    EXPECT_FALSE(OnLoop(r, [&] { return m.MayBlockCurrentThread(); }));
  }
  EXPECT_EQ(threads.size(), 3u);
  EXPECT_TRUE(m.MayBlockCurrentThread());
  EXPECT_EQ(m.IndexOf(nullptr), -1);
  m.Stop();
  m.Stop();  // idempotent
}

TEST(MergeThreadModelTest, NextReactorIsRoundRobin) {
  MergeThreadModel m("m", 2);
  std::string err;
  ASSERT_TRUE(m.Start(&err));
  Reactor* a = m.NextReactor();
  Reactor* b = m.NextReactor();
  EXPECT_NE(a, b);
  EXPECT_EQ(m.NextReactor(), a);
  EXPECT_EQ(m.NextReactor(), b);
  m.Stop();
}

TEST(MergeThreadModelTest, HandlersRunInlineAndDispatchUsesTheOwner) {
  MergeThreadModel m("m", 2);
  std::string err;
  ASSERT_TRUE(m.Start(&err));
  EXPECT_TRUE(m.HandlesInline());
  Reactor* owner = m.GetReactor(1);
  std::promise<Reactor*> ran_on;
  m.Dispatch(owner, [&] { ran_on.set_value(Reactor::Current()); });
  EXPECT_EQ(ran_on.get_future().get(), owner);
  m.Stop();
}

TEST(RuntimeTest, StartsConfiguredInstancesAndFindsThemByName) {
  ThreadModelConfig cfg;
  cfg.merge = {MergeThreadModelConfig{"first", 1}, MergeThreadModelConfig{"second", 2}};
  std::string err;
  ASSERT_TRUE(runtime::Start(cfg, &err)) << err;
  ASSERT_NE(runtime::GetThreadModel(), nullptr);
  EXPECT_EQ(runtime::GetThreadModel()->InstanceName(), "first");
  ASSERT_NE(runtime::GetThreadModel("second"), nullptr);
  EXPECT_EQ(runtime::GetThreadModel("second")->ReactorCount(), 2u);
  EXPECT_EQ(runtime::GetThreadModel("nope"), nullptr);
  runtime::Stop();
  EXPECT_EQ(runtime::GetThreadModel(), nullptr);
}

}  // namespace
}  // namespace trpc
