#include "trpc/codec/detail/protocol_options.h"

#include <fmt/format.h>

#include <charconv>

namespace trpc {

bool ApplyProtocolOptions(
    std::string_view protocol, const std::map<std::string, std::string>& options,
    const std::vector<IntegerOption>& integers, const std::vector<std::string>& other_names,
    const std::function<bool(const std::string&, const std::string&, std::string*)>& other,
    std::string* key, std::string* err) {
  for (const auto& [name, value] : options) {
    *key = name;
    err->clear();
    if (other && other(name, value, err)) continue;
    if (!err->empty()) return false;
    const IntegerOption* f = nullptr;
    for (const auto& cand : integers) {
      if (name == cand.name) f = &cand;
    }
    if (f == nullptr) {
      std::string known;
      for (const auto& cand : integers) known += std::string(known.empty() ? "" : ", ") + cand.name;
      for (const auto& n : other_names) known += ", " + n;
      *err = fmt::format("unknown {} option (known: {})", protocol, known);
      return false;
    }
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < f->lo || v > f->hi) {
      *err = fmt::format("expected an integer in [{}, {}], got '{}'", f->lo, f->hi, value);
      return false;
    }
    f->set(v);
  }
  return true;
}

}  // namespace trpc
