#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <thread>
#include <type_traits>

#include "test/common/wait_for.h"
#include "trpc/base/clock.h"
#include "trpc/reactor/reactor.h"

namespace trpc::testing {

/// A Reactor running on its own thread for the lifetime of this object. The test thread reaches
/// loop-thread-only objects (connections, acceptors) through Run(), which executes a function on
/// the loop and waits for its result.
class ReactorThread {
 public:
  ReactorThread() : thread_([this] { reactor_.Run(); }) {}
  ~ReactorThread() {
    reactor_.Stop();
    thread_.join();
  }
  ReactorThread(const ReactorThread&) = delete;
  ReactorThread& operator=(const ReactorThread&) = delete;

  Reactor* reactor() { return &reactor_; }

  /// Runs `fn` on the loop thread and returns what it returns. Any thread but the loop's.
  template <typename Fn>
  auto Run(Fn fn) -> std::invoke_result_t<Fn> {
    using R = std::invoke_result_t<Fn>;
    std::promise<R> done;
    auto result = done.get_future();
    reactor_.Post([&] {
      if constexpr (std::is_void_v<R>) {
        fn();
        done.set_value();
      } else {
        done.set_value(fn());
      }
    });
    return result.get();
  }

 private:
  Reactor reactor_;
  std::thread thread_;
};

}  // namespace trpc::testing
