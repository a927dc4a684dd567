#pragma once

#include <string>

#include "trpc/base/net_address.h"

namespace trpc::detail {

/// Logs `message` (warning) unless a message about the same peer address (its IP; ports
/// differ per connection) was logged in the last second: a peer that reconnects in a loop gets
/// one line per second, and every other peer still gets its own, up to 50 lines a second in
/// all (a count of those left out comes with the next). Any thread.
void LogPerPeer(const NetAddress& peer, const std::string& message);

}  // namespace trpc::detail
