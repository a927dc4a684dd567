#pragma once

#include <memory>
#include <string>

#include "trpc/client/client_config.h"
#include "trpc/codec/detail/codec.h"

namespace trpc {

/// `codec` set up with the client service's `protocol_options` (non-empty), or null with `*err`
/// ("file:line: client service 'name': protocol_options.key: why", the line of the bad key).
std::shared_ptr<ClientCodec> ClientCodecWithOptions(const std::shared_ptr<ClientCodec>& codec,
                                                    const ClientServiceConfig& config,
                                                    std::string* err);

}  // namespace trpc
