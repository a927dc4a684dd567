#pragma once

#include <string>
#include <vector>

namespace google::protobuf {
class FileDescriptor;
}

namespace trpc::detail {

/// A .proto file compiled into the framework under a package of its own that clients know under
/// a standard one: gRPC's health and reflection protos, which ours declare in trpc.* packages so
/// that a program may also link gRPC's own. Server reflection describes such a file under its
/// standard file name and package (the types inside renamed to match).
struct ProtoAlias {
  const google::protobuf::FileDescriptor* file;  // ours, in the generated pool
  std::string name;                              // e.g. "grpc/health/v1/health.proto"
  std::string package;                           // e.g. "grpc.health.v1"
};

/// Adds `alias` (once per standard file name). Any thread; the protocols' server APIs call it
/// when they add such a service.
void RegisterProtoAlias(ProtoAlias alias);
/// Every alias registered so far.
std::vector<ProtoAlias> ProtoAliases();

}  // namespace trpc::detail
