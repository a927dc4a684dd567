#include "trpc/fiber/thread_bridge.h"

#include <pthread.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

namespace trpc::fiber::detail {

namespace {

// Plain threads (std primitives): these are the threads that are allowed to block.
class BlockingPool {
 public:
  void Submit(std::function<void()> fn) {
    std::unique_lock lock(mu_);
    tasks_.push_back(std::move(fn));
    if (idle_ >= tasks_.size() || threads_ >= kMaxBlockingThreads) {
      lock.unlock();
      cv_.notify_one();
      return;
    }
    ++threads_;
    lock.unlock();
    try {
      std::thread([this] { ThreadMain(); }).detach();
    } catch (const std::system_error& e) {
      lock.lock();
      --threads_;
      TRPC_LOG_EVERY_MS(log::Level::kError, 1000,
                        "cannot start a blocking-call thread ({}); {} threads run the queue",
                        e.what(), threads_);
      if (threads_ > 0) return;
      // Nobody to run it: run the queue here rather than never.
      while (!tasks_.empty()) {
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
      }
    }
  }

 private:
  void ThreadMain() {
    pthread_setname_np(pthread_self(), "trpc_blocking");
    std::unique_lock lock(mu_);
    for (;;) {
      while (tasks_.empty()) {
        ++idle_;
        bool got = cv_.wait_for(lock, std::chrono::milliseconds(kBlockingThreadIdleMs),
                                [this] { return !tasks_.empty(); });
        --idle_;
        if (!got) {
          --threads_;
          return;
        }
      }
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      task = nullptr;  // captures die before the thread counts as idle
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mu_
  size_t threads_ = 0;                       // guarded by mu_
  size_t idle_ = 0;                          // guarded by mu_
};

// Never destroyed: its detached threads may outlive static destruction.
BlockingPool& Pool() {
  static auto* pool = new BlockingPool;
  return *pool;
}

}  // namespace

void RunOnBlockingThread(std::function<void()> fn) { Pool().Submit(std::move(fn)); }

}  // namespace trpc::fiber::detail
