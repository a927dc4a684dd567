#pragma once

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor_database.h>

#include <memory>
#include <string>
#include <vector>

#include "trpc/base/status.h"
#include "trpc/client/service_proxy.h"

namespace trpc::cli {

/// Where trpc-cli learns a server's services and message types: the server's reflection service
/// (grpc.reflection.v1, falling back to v1alpha, over gRPC or trpc), or files given on the
/// command line (--proto, --descriptor-set). Either way, a descriptor pool that loads files as
/// they are needed.
class DescriptorSource {
 public:
  virtual ~DescriptorSource() = default;
  /// The services the source knows, sorted; false with *err when it cannot say.
  virtual bool ListServices(std::vector<std::string>* out, std::string* err) = 0;
  /// After a failure: the call's status when the server could not be asked (unreachable, a TLS
  /// mismatch, a deadline), or OK when it was asked and has no reflection or no such name.
  virtual Status CallFailure() const { return Status(); }
  const google::protobuf::DescriptorPool* pool() const { return pool_.get(); }

 protected:
  std::unique_ptr<google::protobuf::DescriptorPool> pool_;
};

/// Asks the server through `proxy` (its protocol's reflection stream). `v1alpha_only`: skip v1
/// (grpc++ 1.51 serves only v1alpha; v1 is tried first and v1alpha when v1 is unknown).
std::unique_ptr<DescriptorSource> ReflectionSource(std::shared_ptr<ServiceProxy> proxy,
                                                   uint32_t timeout_ms, bool v1alpha_only);

/// From a FileDescriptorSet file (protoc --descriptor_set_out --include_imports) or .proto files
/// parsed here (with `import_dirs` as protoc's -I). Null with *err when they cannot be read.
std::unique_ptr<DescriptorSource> FileSource(const std::vector<std::string>& descriptor_sets,
                                             const std::vector<std::string>& protos,
                                             const std::vector<std::string>& import_dirs,
                                             std::string* err);

/// Whether `st` says the server has no such method (gRPC UNIMPLEMENTED, trpc "no function").
bool IsUnknownMethod(const Status& st);

}  // namespace trpc::cli
