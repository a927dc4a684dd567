#pragma once

#include <cstddef>

#include <boost/context/detail/fcontext.hpp>

// Sanitizer detection for gcc (__SANITIZE_*) and clang (__has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define TRPC_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRPC_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TRPC_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TRPC_FIBER_TSAN 1
#endif
#endif

#ifdef TRPC_FIBER_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef TRPC_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace trpc::fiber::detail {

namespace ctx = boost::context::detail;

/// One execution context (a fiber's, or a worker thread's own scheduling context) as the
/// sanitizers need to know it: the stack it runs on and TSan's fiber handle.
struct SanitizerContext {
  const void* stack_bottom = nullptr;  // lowest address; unknown (null) for a thread's stack
  size_t stack_size = 0;
  void* tsan_fiber = nullptr;
};

/// Tells ASan/TSan that the running context is about to switch to `to`. `fake_stack` keeps
/// ASan's fake-stack handle of the context being left; pass nullptr when that context will
/// never run again (a finished fiber), so ASan frees its fake frames.
inline void BeforeSwitch(const SanitizerContext& to, void** fake_stack) {
#ifdef TRPC_FIBER_ASAN
  __sanitizer_start_switch_fiber(fake_stack, to.stack_bottom, to.stack_size);
#else
  (void)fake_stack;
#endif
#ifdef TRPC_FIBER_TSAN
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  (void)to;
}

/// Tells ASan the switch has landed. `from`, when given, learns the stack of the context that
/// was left (how a thread's own stack bounds become known).
inline void AfterSwitch(void* fake_stack, SanitizerContext* from) {
#ifdef TRPC_FIBER_ASAN
  const void* bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fake_stack, &bottom, &size);
  if (from != nullptr && from->stack_bottom == nullptr) {
    from->stack_bottom = bottom;
    from->stack_size = size;
  }
#else
  (void)fake_stack;
  (void)from;
#endif
}

}  // namespace trpc::fiber::detail
