#pragma once

#include <cstdint>
#include <string>

#include <google/protobuf/compiler/code_generator.h>

namespace trpc::tools {

/// The generator behind protoc-gen-trpc. For every foo.proto it writes foo.trpc.pb.h and
/// foo.trpc.pb.cc next to protoc's foo.pb.h/.cc: per service a server base with synchronous
/// handlers, an asynchronous (Future-returning) server base and a client proxy (see
/// docs/codegen.md). Both files are always written, even for a file without services, so build
/// rules can name their outputs up front.
///
/// Streaming methods and names that would clash in the generated C++ are refused with an error
/// naming the file, service and method; protoc then fails with that message.
///
/// Stateless: protoc may call Generate() for several files in turn.
class TrpcGenerator final : public google::protobuf::compiler::CodeGenerator {
 public:
  bool Generate(const google::protobuf::FileDescriptor* file, const std::string& parameter,
                google::protobuf::compiler::GeneratorContext* context,
                std::string* error) const override;

  // Proto3 `optional` fields only matter to protoc's own generator; without this flag protoc
  // refuses such files for every plug-in.
  uint64_t GetSupportedFeatures() const override { return FEATURE_PROTO3_OPTIONAL; }
};

}  // namespace trpc::tools
