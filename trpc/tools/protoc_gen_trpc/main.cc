// protoc-gen-trpc: the protoc plug-in that writes foo.trpc.pb.h/.cc (service bases and client
// proxies) next to protoc's foo.pb.h/.cc.
//
//   protoc --plugin=protoc-gen-trpc=/path/to/protoc-gen-trpc --cpp_out=OUT --trpc_out=OUT
//          -I ROOT ROOT/foo.proto

#include <google/protobuf/compiler/plugin.h>

#include "trpc/tools/protoc_gen_trpc/trpc_generator.h"

int main(int argc, char* argv[]) {
  trpc::tools::TrpcGenerator generator;
  return google::protobuf::compiler::PluginMain(argc, argv, &generator);
}
