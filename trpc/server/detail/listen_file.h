#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/base/net_address.h"

namespace trpc::detail {

/// The listen file (server.listen_file): what a server listens on, for the scripts and tests
/// that start it with port 0. One line per listener, in the order given:
///
///   trpc.test.helloworld.Greeter 127.0.0.1:41237
///   greeter_http [::1]:41241
///   admin 127.0.0.1:41239
///
/// The file appears whole or not at all (written to PATH.tmp, then renamed over PATH), so a
/// reader that finds it never sees half of it.
///
/// Thread contract: plain functions on the file system, from the server's control thread.
using Listeners = std::vector<std::pair<std::string, NetAddress>>;

/// The file's text for `listeners` (name, bound address).
std::string FormatListenFile(const Listeners& listeners);

/// Writes the file at `path` atomically. On failure leaves nothing behind (neither PATH nor
/// PATH.tmp) and sets `*err` to what failed, with the path and the system's reason.
bool WriteListenFile(const std::string& path, std::string_view text, std::string* err);

/// Removes `path` if it is there; false (with `*err`) only if it is there and cannot be removed.
bool RemoveListenFile(const std::string& path, std::string* err);

}  // namespace trpc::detail
