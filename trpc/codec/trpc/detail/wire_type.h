#pragma once

#include <cstdint>

namespace trpc::detail {

/// Protobuf wire types (the low 3 bits of a field's tag), for the hand-written scans of the
/// trpc header (header_wire.cc, request_id_scanner.cc). 6 and 7 are invalid.
enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

}  // namespace trpc::detail
