#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace trpc {

/// One integer `protocol_options` key of a protocol: its name, its allowed range, and where the
/// value goes.
struct IntegerOption {
  const char* name;
  uint64_t lo, hi;
  std::function<void(uint64_t)> set;
};

/// Applies a service's `protocol_options` to a codec's settings. Keys in `integers` must hold an
/// integer in their range; `other` (may be null) is asked first about every key and returns
/// true if it took it (false with `*err` set: a bad value). On an unknown key or a bad value
/// returns false with `*key` and `*err` ("unknown <protocol> option (known: ...)").
bool ApplyProtocolOptions(
    std::string_view protocol, const std::map<std::string, std::string>& options,
    const std::vector<IntegerOption>& integers, const std::vector<std::string>& other_names,
    const std::function<bool(const std::string&, const std::string&, std::string*)>& other,
    std::string* key, std::string* err);

}  // namespace trpc
