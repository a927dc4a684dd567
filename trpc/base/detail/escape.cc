#include "trpc/base/detail/escape.h"

#include <fmt/format.h>

#include <iterator>

namespace trpc {

std::string EscapeBytes(std::string_view bytes, size_t max_bytes) {
  const std::string_view kept = bytes.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size() + 16);
  for (char c : kept) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", u);
    }
  }
  if (kept.size() < bytes.size()) {
    fmt::format_to(std::back_inserter(out), "...({} bytes)", bytes.size());
  }
  return out;
}

}  // namespace trpc
