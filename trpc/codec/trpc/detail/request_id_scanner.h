#pragma once

#include <cstddef>
#include <cstdint>

#include "trpc/base/chain_buffer.h"

namespace trpc::detail {

/// Finds field 3 (`request_id`, a varint) of the protobuf header held in bytes
/// [offset, offset + length) of `buf`, without parsing the header into a message: a walk over
/// the tags that skips every other field. It stays inside that range and returns false on any
/// malformed encoding (the cases where protobuf's own parser fails: truncated or over-long
/// varints, bad wire types, field number 0, unbalanced groups, lengths past the end).
///
/// Whenever protobuf would parse the header, this finds the same request_id (the last
/// occurrence wins; absent means 0). The converse does not hold: nested messages (trans_info
/// entries) are skipped, not checked, so a full decode can still fail later.
/// Stateless; safe from any thread. The caller guarantees offset + length <= buf.size().
bool ScanTrpcRequestId(const ChainBuffer& buf, size_t offset, size_t length, uint32_t* request_id);

}  // namespace trpc::detail
