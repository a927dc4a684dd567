#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace trpc {
class ThreadModel;
}  // namespace trpc

namespace trpc::detail {

/// Runs fn(i) on the loop of each reactor i of `model` in `which` and waits until they ran or
/// `deadline_ns` (MonotonicNanos(); < 0: no limit); one that has not started by then never runs
/// it, whenever its loop gets to it (what fn refers to may be gone by then). Returns which ran,
/// indexed by reactor. Control thread; fn must not block.
std::vector<bool> RunOnReactorsUntil(ThreadModel* model, const std::vector<size_t>& which,
                                     const std::function<void(size_t)>& fn, int64_t deadline_ns);

}  // namespace trpc::detail
