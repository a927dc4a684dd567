#include "trpc/runtime/detail/merge_thread_model.h"

#include <fmt/format.h>
#include <pthread.h>

#include <latch>
#include <utility>

namespace trpc {

MergeThreadModel::MergeThreadModel(std::string instance_name, size_t io_thread_num)
    : name_(std::move(instance_name)) {
  for (size_t i = 0; i < std::max<size_t>(io_thread_num, 1); ++i) {
    reactors_.push_back(std::make_unique<Reactor>());
    reactors_.back()->set_owner(this, static_cast<int>(i));
  }
  deferred_.resize(reactors_.size());
}

void MergeThreadModel::SubmitAfterReads(Reactor* reactor, Task* task) {
  int index = IndexOf(reactor);
  if (index < 0 || !reactor->InLoopThread()) {
    task->Run();  // not from one of our loops (outside the contract): nothing to wait for
    return;
  }
  Deferred& d = deferred_[static_cast<size_t>(index)];
  if (d.tasks.Append(task)) reactor->AtIterationEnd(&MergeThreadModel::RunDeferred, &d);
}

void MergeThreadModel::RunDeferred(void* arg) {
  Task* t = static_cast<Deferred*>(arg)->tasks.TakeAll();
  while (t != nullptr) {
    Task* next = TaskChain::Detach(t);
    t->Run();  // may destroy *t
    t = next;
  }
}

MergeThreadModel::~MergeThreadModel() { Stop(); }

bool MergeThreadModel::Start(std::string*) {
  if (started_) return true;
  started_ = true;
  std::latch running(static_cast<std::ptrdiff_t>(reactors_.size()));
  for (size_t i = 0; i < reactors_.size(); ++i) {
    threads_.emplace_back([this, i, &running] {
      pthread_setname_np(pthread_self(), fmt::format("trpc_merge_{}", i).c_str());
      Reactor* r = reactors_[i].get();
      r->Post([&running] { running.count_down(); });
      r->Run();
    });
  }
  running.wait();
  return true;
}

void MergeThreadModel::Stop() {
  if (!started_) return;
  started_ = false;
  for (auto& r : reactors_) r->Stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

int MergeThreadModel::IndexOf(const Reactor* reactor) const {
  return reactor == nullptr ? -1 : reactor->IndexIn(this);
}

Reactor* MergeThreadModel::NextReactor() {
  return reactors_[next_.fetch_add(1, std::memory_order_relaxed) % reactors_.size()].get();
}

void MergeThreadModel::Dispatch(Reactor* owner, std::function<void()> task) {
  owner->RunInLoop(std::move(task));
}

}  // namespace trpc
