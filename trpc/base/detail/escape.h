#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trpc {

/// Bytes from a peer (an etcd key or value, a header) made safe for a log line: printable
/// ASCII stays, a backslash becomes `\\`, every other byte (control bytes, DEL, non-ASCII)
/// `\xNN`; input past `max_bytes` is cut and replaced by "...(N bytes)", N the full size. A
/// logged value can then neither split its line nor reach a terminal as an escape sequence,
/// and its length stays bounded.
std::string EscapeBytes(std::string_view bytes, size_t max_bytes = 256);

}  // namespace trpc
