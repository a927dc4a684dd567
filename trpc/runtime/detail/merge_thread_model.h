#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "trpc/runtime/detail/thread_model.h"

namespace trpc {

/// The merged IO/handle model: N worker threads, each running one reactor. A connection lives on
/// one worker for life; that worker reads, runs handlers inline and writes the replies. Lowest
/// latency and no cross-thread traffic; a slow handler stalls its worker's other connections.
class MergeThreadModel final : public ThreadModel {
 public:
  MergeThreadModel(std::string instance_name, size_t io_thread_num);
  ~MergeThreadModel() override;

  std::string_view Type() const override { return "merge"; }
  const std::string& InstanceName() const override { return name_; }
  bool Start(std::string* err) override;
  void Stop() override;
  size_t ReactorCount() const override { return reactors_.size(); }
  Reactor* GetReactor(size_t index) override { return reactors_[index].get(); }
  int IndexOf(const Reactor* reactor) const override;
  Reactor* NextReactor() override;
  void Submit(Reactor*, Task* task) override { task->Run(); }
  void SubmitAfterReads(Reactor* reactor, Task* task) override;
  bool HandlesInline() const override { return true; }
  void Dispatch(Reactor* owner, std::function<void()> task) override;
  bool MayBlockCurrentThread() const override { return IndexOf(Reactor::Current()) < 0; }

 private:
  // The tasks SubmitAfterReads() left for the end of one reactor's current iteration; touched
  // only by its loop thread. A non-empty chain means the reactor's iteration-end call is armed.
  struct alignas(64) Deferred {
    TaskChain tasks;
  };
  static void RunDeferred(void* arg);

  std::string name_;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::vector<Deferred> deferred_;  // per reactor
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
  bool started_ = false;
};

}  // namespace trpc
