#include "trpc/base/filter.h"

#include <atomic>

namespace trpc {

uint32_t NewFilterDataId() {
  static std::atomic<uint32_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace trpc
