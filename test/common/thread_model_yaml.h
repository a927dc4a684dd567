#pragma once

// The `global.threadmodel` section a test starts its runtime (or a child server) from, in the
// thread model the test runs in. ctest runs each two-model test twice, the second time with an
// environment variable set to "fiber" (FIBER_ENV in trpc_cc_test); only this YAML differs.

#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace trpc::testing {

/// The variable the e2e tests' FIBER_ENV sets (test/e2e/CMakeLists.txt).
inline constexpr char kE2eModelVar[] = "TRPC_E2E_THREAD_MODEL";

/// True when the environment variable `var` says "fiber"; false (the merge model) when it is
/// unset or says anything else.
inline bool FiberModel(const char* var = kE2eModelVar) {
  const char* m = std::getenv(var);
  return m != nullptr && std::string_view(m) == "fiber";
}

/// One thread-model instance: its name and its worker threads (merge: io_thread_num; fiber:
/// concurrency_hint).
struct ModelInstance {
  std::string name;
  int workers = 1;
};

/// A `global:` section with the instances, all merge (`threadmodel.default[]`) or all fiber
/// (`threadmodel.fiber[]`), ready to prepend to a server or client section.
///
/// Each entry takes three lines in either model (a fiber one states the default
/// scheduling_group_size), so the line numbers that config errors name are the same in both.
inline std::string ThreadModelYaml(bool fiber, const std::vector<ModelInstance>& instances) {
  std::string out =
      fiber ? "global:\n  threadmodel:\n    fiber:\n" : "global:\n  threadmodel:\n    default:\n";
  for (const ModelInstance& m : instances) {
    out += "      - instance_name: " + m.name + "\n";
    if (fiber) {
      out += "        concurrency_hint: " + std::to_string(m.workers) + "\n";
      out += "        scheduling_group_size: 0\n";
    } else {
      out += "        io_handle_type: merge\n";
      out += "        io_thread_num: " + std::to_string(m.workers) + "\n";
    }
  }
  return out;
}

/// The same in the model TRPC_E2E_THREAD_MODEL chooses.
inline std::string ThreadModelYaml(const std::vector<ModelInstance>& instances) {
  return ThreadModelYaml(FiberModel(), instances);
}

}  // namespace trpc::testing
