#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "trpc/future/future.h"

namespace trpc {

/// Runs `step` again and again until its future resolves with false (then the returned future
/// resolves), or fails (then the returned future fails with its error). For loops of
/// non-blocking steps, such as reading and writing a stream's messages until its end:
///
///   return DoWhile([rw] {
///     return rw.Read().Then([rw](std::optional<Req>&& req) {
///       if (!req) return MakeReadyFuture<bool>(false);        // the peer's last message
///       return rw.Write(Reply(*req)).Then([] { return true; });
///     });
///   });
///
/// Why not recursion (a step whose continuation returns the next step's future)? Each such
/// level forwards its result to the one before, so a stream of N messages builds a chain of N
/// futures, resolved recursively when it ends: N stack frames, enough to overflow a thread's or
/// a fiber's stack on a long stream. DoWhile keeps no chain: a step that is ready at once runs
/// the next in a loop, a pending one continues from its own continuation, so the stack depth
/// stays constant however many steps run. `step` runs on whichever thread resolved the last
/// step's future (as any continuation).
inline Future<> DoWhile(std::function<Future<bool>()> step) {
  struct Loop {
    std::function<Future<bool>()> step;
    Promise<> done;
    // Runs steps while they are ready; subscribes to the first pending one.
    static void Run(const std::shared_ptr<Loop>& self) {
      for (;;) {
        Future<bool> f = self->step();
        if (f.IsReady()) {
          if (!f.GetValue()) {
            self->done.SetValue();
            return;
          }
          continue;
        }
        if (f.IsFailed()) {
          self->done.SetException(f.GetException());
          return;
        }
        std::move(f).Then([self](Future<bool>&& r) {
          if (r.IsFailed()) {
            self->done.SetException(r.GetException());
          } else if (!r.GetValue()) {
            self->done.SetValue();
          } else {
            Run(self);
          }
        });
        return;
      }
    }
  };
  auto loop = std::make_shared<Loop>();
  loop->step = std::move(step);
  Future<> out = loop->done.GetFuture();
  Loop::Run(loop);
  return out;
}

}  // namespace trpc
