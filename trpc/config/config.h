#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

/// The framework's YAML configuration as typed structs: this umbrella header holds the whole
/// (`Config`) and the loader; each layer's part sits beside that layer (client_config.h,
/// server_config.h, thread_model_config.h, plugin_options.h). Key names follow tRPC-Cpp where it
/// has them; docs/config.md lists every key with its default, unit and valid range. Durations are
/// in milliseconds. Default-constructed structs hold the documented defaults, so `Config{}` equals
/// the result of loading an empty file.

#include "trpc/base/logging.h"
#include "trpc/client/client_config.h"
#include "trpc/naming/plugin_options.h"
#include "trpc/runtime/thread_model_config.h"
#include "trpc/server/server_config.h"
#include "trpc/tracing/tracing_config.h"

namespace trpc {

struct LogConfig {
  std::string level = "info";  // trace|debug|info|warn|error|fatal|off.
  /// `plugins.log.default[0]` (tRPC-Cpp's layout): where lines go. Its min_level, when set,
  /// takes the place of `level`.
  log::Output output;
  bool has_default = false;  // the section is there

  bool operator==(const LogConfig&) const = default;
};

struct PluginsConfig {
  LogConfig log;
  tracing::TracingConfig tracing;                 // `plugins.tracing`
  std::map<std::string, PluginOptions> selector;  // `plugins.selector.<name>`
  std::map<std::string, PluginOptions> registry;  // `plugins.registry.<name>`

  bool operator==(const PluginsConfig&) const = default;
};

struct Config {
  GlobalConfig global;
  ServerConfig server;
  ClientConfig client;
  PluginsConfig plugins;
  std::string path;  // The file it was loaded from (or the name given for a string).

  bool operator==(const Config&) const = default;
};

/// Loads and validates the YAML file at `path`. On any problem (unreadable file, YAML syntax,
/// unknown or duplicate key, wrong type, value out of range, inconsistent settings) returns false,
/// leaves `*out` unchanged and sets `*error` to "FILE:LINE: what is wrong" (LINE 1-based), or to
/// "FILE: cannot open: <reason>". Safe to call from any thread.
bool LoadConfig(const std::string& path, Config* out, std::string* error);

/// As LoadConfig, from text in memory; `name_for_errors` takes the place of FILE.
bool LoadConfigFromString(std::string_view yaml, std::string_view name_for_errors, Config* out,
                          std::string* error);

}  // namespace trpc
