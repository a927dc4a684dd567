#include "trpc/fiber/detail/stack_overflow.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "trpc/fiber/detail/fiber_entity.h"

namespace trpc::fiber::detail {

namespace {

struct sigaction g_prev_segv;
std::once_flag g_segv_once;

void WriteStderr(const char* s) {
  size_t n = strlen(s);
  while (n > 0) {
    ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Formats `v` in decimal into buf (async-signal-safe).
char* FormatU64(uint64_t v, char* buf_end) {
  char* p = buf_end;
  *--p = '\0';
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  return p;
}

void OnSegv(int sig, siginfo_t* info, void* uctx) {
  FiberEntity* f = CurrentFiber();
  if (f != nullptr && f->stack.base != nullptr && f->stack.GuardContains(info->si_addr)) {
    char id[24];
    char size[24];
    WriteStderr("trpc fiber: stack overflow in fiber #");
    WriteStderr(FormatU64(f->id, id + sizeof(id)));
    WriteStderr(" (its stack is ");
    WriteStderr(FormatU64(f->stack.size, size + sizeof(size)));
    WriteStderr(
        " bytes; the fault hit the guard page below it). Raise fiber_stack_size or "
        "move large buffers off the stack. Aborting.\n");
    ::signal(SIGABRT, SIG_DFL);
    ::abort();
  }
  // Not ours: hand over to whoever was installed before, or die the default way.
  if (g_prev_segv.sa_flags & SA_SIGINFO) {
    if (g_prev_segv.sa_sigaction != nullptr) {
      g_prev_segv.sa_sigaction(sig, info, uctx);
      return;
    }
  } else if (g_prev_segv.sa_handler != SIG_DFL && g_prev_segv.sa_handler != SIG_IGN) {
    g_prev_segv.sa_handler(sig);
    return;
  }
  ::signal(SIGSEGV, SIG_DFL);  // returning re-runs the faulting instruction: a normal crash
}

}  // namespace

void InstallStackOverflowReporter() {
  std::call_once(g_segv_once, [] {
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = OnSegv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_prev_segv);
  });
}

AltSignalStack::~AltSignalStack() {
  // Only if the thread never got to Remove(); then no thread uses it.
  if (stack_ != nullptr) ::munmap(stack_, size_);
}

void AltSignalStack::Install() {
  // The overflow report runs on its own stack: the fiber's stack is the thing that is full.
  size_t size = SIGSTKSZ * 4;
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = p;
  ss.ss_size = size;
  if (sigaltstack(&ss, &prev_) != 0) {
    ::munmap(p, size);
    return;
  }
  stack_ = p;
  size_ = size;
}

void AltSignalStack::Remove() {
  // Put back the stack that was there before ours, on this thread, before it exits. ASan
  // unmaps whatever alternate stack a thread has when it exits: with ours left installed, it
  // unmapped our stack and ~AltSignalStack() unmapped the same range again, by then possibly
  // reused by another mapping (seen once as a SEGV inside ASan's own stack depot, in
  // forward_e2e_test).
  if (stack_ == nullptr) return;
  stack_t prev = prev_;
  prev.ss_flags = (prev.ss_flags & SS_DISABLE) != 0 ? SS_DISABLE : 0;
  if (sigaltstack(&prev, nullptr) == 0) ::munmap(stack_, size_);
  // (If it could not be put back, ours stays installed and is left mapped: whoever unmaps a
  // thread's stack at its exit owns it now.)
  stack_ = nullptr;
}

}  // namespace trpc::fiber::detail
