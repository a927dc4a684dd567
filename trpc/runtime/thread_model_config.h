#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

/// The thread models (`global`). Part of the framework's YAML configuration
/// (trpc/config/config.h loads it; docs/config.md lists every key with its default, unit and
/// valid range). Default-constructed structs hold the documented defaults.

namespace trpc {

/// One merge thread-model instance (`global.threadmodel.default[]`, io_handle_type: merge): N
/// worker threads, each owning a reactor and running handlers inline.
struct MergeThreadModelConfig {
  std::string instance_name = "default_instance";
  uint32_t io_thread_num = 1;  // Worker (reactor) threads, 1..1024.

  bool operator==(const MergeThreadModelConfig&) const = default;
};

/// One fiber thread-model instance (`global.threadmodel.fiber[]`): M:N fibers on worker threads
/// grouped into scheduling groups.
struct FiberThreadModelConfig {
  std::string instance_name = "fiber_instance";
  uint32_t concurrency_hint = 0;       // Worker threads, 0..1024; 0 = CPUs usable.
  uint32_t scheduling_group_size = 0;  // Workers per group, 0..64; 0 = automatic (groups of <= 64).
  uint32_t fiber_stack_size = 131072;  // Bytes; 16 KiB..64 MiB, a multiple of 4096.
  uint32_t work_stealing_ratio = 16;   // 1..1000000: idle rounds per cross-group steal.
  uint32_t fiber_run_queue_size = 65536;  // Group run-queue slots; power of 2, 256..16 Mi.

  bool operator==(const FiberThreadModelConfig&) const = default;
};

/// `global.threadmodel`. Exactly one of the lists is non-empty after loading: a file that gives
/// neither gets one merge instance with the defaults above; giving both is an error.
struct ThreadModelConfig {
  std::vector<MergeThreadModelConfig> merge{MergeThreadModelConfig{}};  // Key: `default`.
  std::vector<FiberThreadModelConfig> fiber;

  bool operator==(const ThreadModelConfig&) const = default;
};

struct GlobalConfig {
  ThreadModelConfig threadmodel;

  bool operator==(const GlobalConfig&) const = default;
};

}  // namespace trpc
