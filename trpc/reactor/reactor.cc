#include "trpc/reactor/reactor.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc {

namespace {
thread_local Reactor* tls_current_reactor = nullptr;
constexpr int kMaxEventsPerWait = 256;
}  // namespace

// Drains the eventfd; the loop itself runs the tasks after the event batch.
class Reactor::Waker : public EventHandler {
 public:
  explicit Waker(int fd) : fd_(fd) {}
  void HandleEvents(uint32_t) override {
    uint64_t v;
    while (::read(fd_, &v, sizeof(v)) > 0) {
    }
  }

 private:
  int fd_;
};

Reactor::Reactor(size_t task_queue_capacity)
    : tasks_(task_queue_capacity), wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  TRPC_CHECK(wake_fd_ >= 0, "eventfd: {}", strerror(errno));
  waker_ = std::make_unique<Waker>(wake_fd_);
  TRPC_CHECK(poller_.Add(wake_fd_, EPOLLIN, waker_.get()) == 0, "cannot register eventfd");
}

Reactor::~Reactor() {
  poller_.Remove(wake_fd_);
  ::close(wake_fd_);
}

Reactor* Reactor::Current() { return tls_current_reactor; }

void Reactor::AssertInLoopThread() const {
  assert(InLoopThread() || loop_thread_.load() == std::thread::id());
}

void Reactor::Post(Task task) {
  if (exited_.load(std::memory_order_acquire)) {
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000,
                      "a task was posted to a reactor whose loop has exited; it will not run");
  }
  // While the overflow list holds tasks, new ones join it too: the loop runs the ring first and
  // the list only once the ring is empty, so each poster's tasks stay in order.
  if (has_overflow_.load(std::memory_order_acquire) || !tasks_.TryPush(std::move(task))) {
    std::lock_guard lock(overflow_mu_);
    overflow_.push_back(std::move(task));
    has_overflow_.store(true, std::memory_order_release);
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed) &&
      sleeping_.exchange(false, std::memory_order_relaxed)) {
    Wake();
  }
}

void Reactor::Wake() {
  wakeups_.fetch_add(1, std::memory_order_relaxed);
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  (void)n;  // EAGAIN means the counter is already non-zero: the loop will wake anyway
}

void Reactor::Stop() {
  stop_.store(true, std::memory_order_release);
  sleeping_.store(false, std::memory_order_relaxed);
  Wake();
}

TimerId Reactor::AddTimer(int64_t deadline_ns, TimerQueue::Callback cb) {
  AssertInLoopThread();
  return timers_.Add(deadline_ns, std::move(cb));
}

bool Reactor::CancelTimer(TimerId id) {
  AssertInLoopThread();
  return timers_.Cancel(id);
}

bool Reactor::RunTasks() {
  // Only the tasks queued when the pass began (and at most kMaxTasksPerPass): a task that posts
  // a task (a read continuation, a resumed connection) has it run on the next iteration, after
  // epoll and the timers have had their turn. Without this bound a read budget would be void.
  constexpr size_t kMaxTasksPerPass = 4096;
  size_t budget = std::min(tasks_.Size(), kMaxTasksPerPass);
  size_t ran = 0;
  Task task;
  while (ran < budget && tasks_.TryPop(&task)) {
    task();
    task = nullptr;
    ++ran;
  }
  // Everything in the overflow list was posted after everything its posters put in the ring
  // (Post), so it runs only once the ring is wholly empty: no element and no push in progress.
  // A push in progress can be older, in its poster's order, than a post of the same thread that
  // spilled; TryPop() reports "empty" for it, Empty() does not.
  if (tasks_.Empty() && has_overflow_.load(std::memory_order_acquire)) {
    std::vector<Task> spill;
    {
      std::lock_guard lock(overflow_mu_);
      spill.swap(overflow_);
      has_overflow_.store(false, std::memory_order_relaxed);
    }
    for (auto& t : spill) t();
    ran += spill.size();
  }
  return ran > 0;
}

void Reactor::Attach() {
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  tls_current_reactor = this;
}

void Reactor::Run() {
  loop_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  Reactor* prev = tls_current_reactor;
  tls_current_reactor = this;
  while (!stop_.load(std::memory_order_acquire)) Iterate(-1, nullptr, 0);
  DrainAndExit();
  tls_current_reactor = prev;
}

void Reactor::RunOnce(int64_t deadline_ns, const std::atomic<uint32_t>* epoch, uint32_t token) {
  Iterate(deadline_ns, epoch, token);
}

bool Reactor::RunPending() {
  if (end_fn_ == nullptr && tasks_.Empty() && background_.empty()) return false;
  loop_time_ns_ = MonotonicNanos();
  recent_ns_ = loop_time_ns_;
  RunTasks();
  RunBackground(kBackgroundPerIteration);
  RunIterationEnd();
  return true;
}

void Reactor::PostBackground(Task task) {
  AssertInLoopThread();
  background_.push_back(std::move(task));
}

bool Reactor::RunBackground(size_t max) {
  size_t ran = 0;
  while (ran < max && !background_.empty()) {
    Task t = std::move(background_.front());
    background_.pop_front();
    t();  // may post more background work: it waits for a later iteration
    ++ran;
  }
  return ran != 0;
}

void Reactor::Detach() {
  DrainAndExit();
  if (tls_current_reactor == this) tls_current_reactor = nullptr;
}

void Reactor::DrainAndExit() {
  // Drain what was posted before the loop ended so no task (and the resources it owns) is lost.
  while (RunTasks() || !tasks_.Empty()) {
    // !Empty() with nothing run: a push in progress; it completes in a moment.
  }
  // Background work is dropped, not run (what it holds is released): a handshake finished
  // now would hand a new connection's requests to a server that is stopping.
  background_.clear();
  RunIterationEnd();
  exited_.store(true, std::memory_order_release);
}

void Reactor::Notify() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed) &&
      sleeping_.exchange(false, std::memory_order_relaxed)) {
    Wake();
  }
}

void Reactor::Iterate(int64_t deadline_ns, const std::atomic<uint32_t>* epoch, uint32_t token) {
  epoll_event events[kMaxEventsPerWait];
  int64_t now = MonotonicNanos();
  int64_t next = timers_.NextDeadline();
  if (deadline_ns == 0) {
    next = now;
  } else if (deadline_ns > 0 && (next < 0 || deadline_ns < next)) {
    next = deadline_ns;
  }
  int64_t timeout = next < 0 ? -1 : std::max<int64_t>(0, next - now);

  if (timeout != 0) {
    sleeping_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // An armed end-of-iteration call (work submitted from outside an iteration, e.g. by a
    // fiber on this worker) must run now, not after the next event.
    if (end_fn_ != nullptr || !tasks_.Empty() || !background_.empty() ||
        has_overflow_.load(std::memory_order_relaxed) || stop_.load(std::memory_order_relaxed) ||
        (epoch != nullptr && epoch->load(std::memory_order_relaxed) != token)) {
      timeout = 0;
    }
  }
  int n = poller_.Wait(events, kMaxEventsPerWait, timeout);
  sleeping_.store(false, std::memory_order_relaxed);

  loop_time_ns_ = MonotonicNanos();
  recent_ns_ = loop_time_ns_;
  for (int i = 0; i < n; ++i) {
    static_cast<EventHandler*>(events[i].data.ptr)->HandleEvents(events[i].events);
  }
  timers_.RunExpired(loop_time_ns_);
  RunTasks();
  RunBackground(kBackgroundPerIteration);
  RunIterationEnd();
}

void Reactor::RunIterationEnd() {
  if (end_fn_ == nullptr) return;
  auto* fn = std::exchange(end_fn_, nullptr);
  fn(std::exchange(end_arg_, nullptr));
}

}  // namespace trpc
