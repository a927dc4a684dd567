#pragma once

// Tests that drive an outside program (a "peer": grpc++'s interop binaries, python3-grpcio,
// h2load, curl, etcd, promtool, ...) skip when it is missing, saying which, so a developer's
// machine without it still runs the rest. Under CI=true a missing peer fails the test instead:
// CI must not pass by skipping. The message starts with "peer missing:", which ctest matches
// (SKIP_REGULAR_EXPRESSION, third_party/cmake/trpc_helpers.cmake) to report the test as skipped
// rather than passed.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace trpc::testing {

/// True when the environment says CI=true (or 1).
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

}  // namespace trpc::testing

/// Ends the current test: skipped outside CI, failed under CI=true. `what` streams into the
/// message, e.g. TRPC_SKIP_WITHOUT_PEER("h2load not installed (Debian: nghttp2-client)").
#define TRPC_SKIP_WITHOUT_PEER(what)                                                           \
  do {                                                                                         \
    if (::trpc::testing::InCi()) {                                                             \
      GTEST_FAIL() << "peer missing: " << what << " (CI=true: a missing peer fails the test)"; \
    } else {                                                                                   \
      GTEST_SKIP() << "peer missing: " << what;                                                \
    }                                                                                          \
  } while (0)
