#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "trpc/runtime/detail/thread_model.h"
#include "trpc/runtime/thread_model_config.h"

namespace trpc::runtime {

/// Creates and starts every thread-model instance named in `global.threadmodel`. Call once at
/// start-up from the main thread; false (with `*err`) if an instance cannot start.
bool Start(const ThreadModelConfig& config, std::string* err);
/// Stops and destroys every instance (after servers and clients are stopped).
void Stop();
/// The instance called `name`; an empty name gives the first configured one. Null if none.
ThreadModel* GetThreadModel(std::string_view name = {});

}  // namespace trpc::runtime
