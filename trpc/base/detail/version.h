#pragma once

#include <string_view>

namespace trpc {

/// Facts about the framework build, fixed when CMake configured the build tree (the generated
/// version.cc). The admin service reports them at /version and in trpc_build_info.

/// The framework's version, the `project(trpc VERSION ...)` of the top-level CMakeLists.txt.
std::string_view Version();
/// The build mode (CMAKE_BUILD_TYPE): "Release", "Debug", "Asan", "Tsan", ...
std::string_view BuildType();
/// The git commit (short hash) the build tree was configured at; "" when unknown (no git, or not
/// a checkout). Taken at configure time: a commit made later shows only after cmake reruns.
std::string_view BuildCommit();

}  // namespace trpc
