#pragma once

#include <signal.h>

#include <cstddef>

namespace trpc::fiber::detail {

/// Installs, once per process, the SIGSEGV handler that reports a fault on the guard page of
/// the running fiber's stack as a stack overflow (fiber id, stack size) and aborts. Any other
/// SIGSEGV goes to the handler installed before it, or kills the process the default way. The
/// report runs on the thread's alternate signal stack (AltSignalStack).
void InstallStackOverflowReporter();

/// The alternate signal stack of one thread (a worker's), for the overflow report. Install()
/// and Remove() are called on that thread, Remove() before it exits.
class AltSignalStack {
 public:
  AltSignalStack() = default;
  ~AltSignalStack();
  AltSignalStack(const AltSignalStack&) = delete;
  AltSignalStack& operator=(const AltSignalStack&) = delete;

  void Install();
  void Remove();

 private:
  void* stack_ = nullptr;
  size_t size_ = 0;
  stack_t prev_{};  // the thread's alternate stack before ours (ASan installs one)
};

}  // namespace trpc::fiber::detail
