#include "trpc/future/detail/then_state.h"

#include <exception>
#include <string>

namespace trpc::future_detail {

Status CurrentExceptionStatus() {
  try {
    throw;
  } catch (const std::exception& e) {
    return Status(kUnknownErr, std::string("exception in a future continuation: ") + e.what());
  } catch (...) {
    return Status(kUnknownErr, "exception in a future continuation (not a std::exception)");
  }
}

}  // namespace trpc::future_detail
