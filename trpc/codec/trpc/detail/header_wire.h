#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/codec/detail/codec.h"

namespace trpc::detail {

// The protobuf header of a unary trpc frame, RequestProtocol or ResponseProtocol (trpc.proto),
// written from and read into RpcRequest / RpcResponse by hand: no protobuf message is built,
// sized, serialized, parsed, copied out and destroyed per call. Stateless functions, safe from
// any thread.
//
// The contract is libprotobuf's (3.21, proto3), checked against it by
// test/codec/trpc_header_wire_test.cc:
// - Decoding accepts exactly the inputs ParseFromArray() accepts and yields the same values:
//   the last occurrence of a field wins; a uint32/int32 field takes the low 32 bits of a varint
//   of up to 10 bytes; a field with an unexpected wire type and an unknown field are skipped
//   (groups too, nested at most 100 deep, one level less inside a trans_info entry); a
//   trans_info entry lacking its key or value has an empty one, a later entry replaces an
//   earlier one with the same key, and a key that is not valid UTF-8 fails the decode (proto3
//   `string`). Everything else (truncation, over-long varints, wire types 6/7, field number 0,
//   unbalanced groups, lengths past the end) fails with a reason.
// - Encoding writes what SerializeToString() writes: fields in field-number order, those at
//   their default (0, empty) left out, each trans_info entry with its key and value even when
//   empty. Entries come in TransInfo's (sorted) order, which is also protobuf's deterministic
//   order; its default order is unspecified, so only headers with at most one entry are
//   byte-for-byte the same as protobuf's default output.
// Only RpcRequest/RpcResponse's header fields are touched: never body, attachment or protocol.

/// Encoded size of the RequestProtocol holding `req`'s header fields and `attachment_size`.
size_t EncodedHeaderSize(const RpcRequest& req, uint32_t attachment_size);
/// Writes that RequestProtocol at `p`: exactly EncodedHeaderSize() bytes. Returns the end.
char* EncodeHeader(const RpcRequest& req, uint32_t attachment_size, char* p);

/// The same for ResponseProtocol.
size_t EncodedHeaderSize(const RpcResponse& rsp, uint32_t attachment_size);
char* EncodeHeader(const RpcResponse& rsp, uint32_t attachment_size, char* p);

/// Decodes a RequestProtocol into `req`'s header fields and `*attachment_size`. Strings are
/// assigned in place, so a reused RpcRequest keeps their capacity. False, with the reason and
/// its offset in `*err`, on a malformed header; the header fields are then all at their defaults.
bool DecodeHeader(std::string_view bytes, RpcRequest* req, uint32_t* attachment_size,
                  std::string* err);

/// The same for ResponseProtocol.
bool DecodeHeader(std::string_view bytes, RpcResponse* rsp, uint32_t* attachment_size,
                  std::string* err);

}  // namespace trpc::detail
