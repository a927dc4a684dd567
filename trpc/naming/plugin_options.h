#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

/// A naming plug-in's settings (`plugins.selector.<name>`, `plugins.registry.<name>`). Part of the
/// framework's YAML configuration (trpc/config/config.h loads it; docs/config.md lists every key
/// with its default, unit and valid range). Default-constructed structs hold the documented
/// defaults.

namespace trpc {

/// One naming plug-in's settings (`plugins.selector.<name>`, `plugins.registry.<name>`): scalar
/// values by key as written, checked by the plug-in when it starts (docs/naming.md).
struct PluginOptions {
  std::map<std::string, std::string> values;
  std::map<std::string, std::string> origin;  // key -> "file:line" of its value
  std::string section_origin;                 // "file:line" of the section ("" = not in a file)

  /// "file:line: " of `key`'s value (or of the section), for error messages.
  std::string At(const std::string& key) const {
    auto it = origin.find(key);
    if (it != origin.end()) return it->second + ": ";
    return section_origin.empty() ? "" : section_origin + ": ";
  }
  bool operator==(const PluginOptions&) const = default;
};

}  // namespace trpc
