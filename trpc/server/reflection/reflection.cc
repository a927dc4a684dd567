#include "trpc/server/reflection/reflection.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/future/loop.h"
#include "trpc/server/detail/proto_alias.h"
#include "trpc/server/reflection/reflection.pb.h"
#include "trpc/server/server_stream.h"

namespace trpc::reflection {

namespace {

namespace pb = google::protobuf;
using trpc::grpc_reflection::ServerReflectionRequest;
using trpc::grpc_reflection::ServerReflectionResponse;

constexpr int kGrpcNotFound = 5;
constexpr int kGrpcInvalidArgument = 3;

// A file of ours that clients must see under a standard name (detail/proto_alias.h).
struct Renamed {
  const pb::FileDescriptor* ours;
  std::string ours_package;
  std::string name;     // the standard file name
  std::string package;  // the standard package
};

// The aliases registered (health's, when a gRPC service has it) and reflection's own, in both
// versions.
std::vector<Renamed> BuiltinFiles() {
  const pb::FileDescriptor* refl = ServerReflectionRequest::descriptor()->file();
  trpc::detail::RegisterProtoAlias(
      {refl, "grpc/reflection/v1/reflection.proto", "grpc.reflection.v1"});
  trpc::detail::RegisterProtoAlias(
      {refl, "grpc/reflection/v1alpha/reflection.proto", "grpc.reflection.v1alpha"});
  std::vector<Renamed> out;
  for (const trpc::detail::ProtoAlias& a : trpc::detail::ProtoAliases()) {
    out.push_back({a.file, a.file->package(), a.name, a.package});
  }
  return out;
}

void RenameType(std::string* type_name, const std::string& from, const std::string& to) {
  const std::string prefix = "." + from + ".";
  if (type_name->compare(0, prefix.size(), prefix) == 0) {
    *type_name = "." + to + "." + type_name->substr(prefix.size());
  }
}

void RenameMessage(pb::DescriptorProto* m, const std::string& from, const std::string& to) {
  for (auto& f : *m->mutable_field()) {
    if (f.has_type_name()) RenameType(f.mutable_type_name(), from, to);
  }
  for (auto& nested : *m->mutable_nested_type()) RenameMessage(&nested, from, to);
}

std::string Serialized(const Renamed& r) {
  pb::FileDescriptorProto fdp;
  r.ours->CopyTo(&fdp);
  fdp.set_name(r.name);
  fdp.set_package(r.package);
  for (auto& m : *fdp.mutable_message_type()) RenameMessage(&m, r.ours_package, r.package);
  for (auto& s : *fdp.mutable_service()) {
    for (auto& method : *s.mutable_method()) {
      RenameType(method.mutable_input_type(), r.ours_package, r.package);
      RenameType(method.mutable_output_type(), r.ours_package, r.package);
    }
  }
  return fdp.SerializeAsString();
}

// What one port's reflection knows: the services it serves and the built-in files.
struct Index {
  std::vector<std::string> services;  // sorted
  std::vector<Renamed> builtins;
};

// One reflection stream: answers each request in turn, and sends each file once.
class Session {
 public:
  explicit Session(std::shared_ptr<const Index> index) : index_(std::move(index)) {}

  ServerReflectionResponse Answer(const ServerReflectionRequest& req) {
    ServerReflectionResponse rsp;
    rsp.set_valid_host(req.host());
    *rsp.mutable_original_request() = req;
    const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
    switch (req.message_request_case()) {
      case ServerReflectionRequest::kListServices:
        for (const std::string& name : index_->services) {
          rsp.mutable_list_services_response()->add_service()->set_name(name);
        }
        break;
      case ServerReflectionRequest::kFileByFilename: {
        const std::string& name = req.file_by_filename();
        if (const Renamed* b = BuiltinByFile(name)) {
          AddBuiltin(*b, &rsp);
        } else if (const pb::FileDescriptor* f = pool->FindFileByName(name)) {
          AddFile(f, &rsp);
        } else {
          Error(kGrpcNotFound, "no file named " + name, &rsp);
        }
        break;
      }
      case ServerReflectionRequest::kFileContainingSymbol: {
        const std::string& symbol = req.file_containing_symbol();
        if (const Renamed* b = BuiltinBySymbol(symbol)) {
          AddBuiltin(*b, &rsp);
        } else if (const pb::FileDescriptor* f = pool->FindFileContainingSymbol(symbol)) {
          AddFile(f, &rsp);
        } else {
          Error(kGrpcNotFound, "no symbol named " + symbol, &rsp);
        }
        break;
      }
      case ServerReflectionRequest::kFileContainingExtension: {
        const auto& ext = req.file_containing_extension();
        const pb::Descriptor* type = pool->FindMessageTypeByName(ext.containing_type());
        const pb::FieldDescriptor* field =
            type != nullptr ? pool->FindExtensionByNumber(type, ext.extension_number()) : nullptr;
        if (field != nullptr) {
          AddFile(field->file(), &rsp);
        } else {
          Error(kGrpcNotFound,
                "no extension " + std::to_string(ext.extension_number()) + " of " +
                    ext.containing_type(),
                &rsp);
        }
        break;
      }
      case ServerReflectionRequest::kAllExtensionNumbersOfType: {
        const std::string& name = req.all_extension_numbers_of_type();
        const pb::Descriptor* type = pool->FindMessageTypeByName(name);
        if (type == nullptr) {
          Error(kGrpcNotFound, "no message type named " + name, &rsp);
          break;
        }
        std::vector<const pb::FieldDescriptor*> exts;
        pool->FindAllExtensions(type, &exts);
        auto* out = rsp.mutable_all_extension_numbers_response();
        out->set_base_type_name(name);
        for (const pb::FieldDescriptor* f : exts) out->add_extension_number(f->number());
        break;
      }
      default:
        Error(kGrpcInvalidArgument, "the request asks for nothing this server knows", &rsp);
        break;
    }
    return rsp;
  }

 private:
  const Renamed* BuiltinByFile(const std::string& name) const {
    for (const Renamed& b : index_->builtins) {
      if (b.name == name) return &b;
    }
    return nullptr;
  }
  // A standard name of a built-in ("grpc.health.v1.Health", "grpc.health.v1.Health.Check",
  // "grpc.reflection.v1alpha.ServerReflectionRequest", ...) that our file defines under its own.
  const Renamed* BuiltinBySymbol(const std::string& symbol) const {
    for (const Renamed& b : index_->builtins) {
      const std::string prefix = b.package + ".";
      if (symbol.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string ours = b.ours_package + "." + symbol.substr(prefix.size());
      if (b.ours->pool()->FindFileContainingSymbol(ours) == b.ours) return &b;
    }
    return nullptr;
  }

  void AddBuiltin(const Renamed& b, ServerReflectionResponse* rsp) {
    sent_.insert(b.name);
    rsp->mutable_file_descriptor_response()->add_file_descriptor_proto(Serialized(b));
  }

  // `f` (always: it was asked for), then every file it imports, transitively, that this stream
  // has not sent yet: what a client needs to build it, without resending what it has.
  void AddFile(const pb::FileDescriptor* f, ServerReflectionResponse* rsp) {
    auto* out = rsp->mutable_file_descriptor_response();
    std::vector<const pb::FileDescriptor*> todo{f};
    std::set<const pb::FileDescriptor*> seen{f};
    for (size_t i = 0; i < todo.size(); ++i) {
      const pb::FileDescriptor* cur = todo[i];
      const bool fresh = sent_.insert(cur->name()).second;
      if (i == 0 || fresh) {
        pb::FileDescriptorProto fdp;
        cur->CopyTo(&fdp);
        out->add_file_descriptor_proto(fdp.SerializeAsString());
      }
      for (int d = 0; d < cur->dependency_count(); ++d) {
        if (seen.insert(cur->dependency(d)).second) todo.push_back(cur->dependency(d));
      }
    }
  }

  static void Error(int code, std::string msg, ServerReflectionResponse* rsp) {
    rsp->mutable_error_response()->set_error_code(code);
    rsp->mutable_error_response()->set_error_message(std::move(msg));
  }

  std::shared_ptr<const Index> index_;
  std::set<std::string> sent_;  // file names sent on this stream
};

// "/pkg.Service/Method" -> "pkg.Service" ("" when it is not of that form).
std::string ServiceOf(const std::string& method) {
  if (method.size() < 2 || method[0] != '/') return "";
  const size_t slash = method.find('/', 1);
  return slash == std::string::npos ? "" : method.substr(1, slash - 1);
}

}  // namespace

bool ReflectionEnabled(const ServerConfig& server, const ServiceConfig& service) {
  if (service.protocol != "grpc" && service.protocol != "trpc") return false;
  return service.reflection.value_or(server.admin_enabled());
}

void EnableReflection(Server* server) {
  for (const ServiceConfig& sc : server->config().service) {
    if (!ReflectionEnabled(server->config(), sc)) continue;
    ServicePtr svc = server->GetService(sc.name);
    if (svc == nullptr || svc->FindMethod(kReflectionV1Method) != nullptr) continue;
    auto index = std::make_shared<Index>();
    index->builtins = BuiltinFiles();
    const std::string v1 = ServiceOf(kReflectionV1Method);
    const std::string v1alpha = ServiceOf(kReflectionV1AlphaMethod);
    std::set<std::string> names{v1, v1alpha};
    svc->ForEachMethod([&](const std::string& method, const RpcMethodHandler*) {
      std::string name = ServiceOf(method);
      if (!name.empty()) names.insert(std::move(name));
    });
    index->services.assign(names.begin(), names.end());
    // Both versions: one handler, as the messages are the same.
    for (const char* method : {kReflectionV1Method, kReflectionV1AlphaMethod}) {
      svc->AddAsyncBidiStreamMethod<ServerReflectionRequest, ServerReflectionResponse>(
          method, [index](const ServerContextPtr&,
                          const stream::AsyncStreamReaderWriter<ServerReflectionRequest,
                                                                ServerReflectionResponse>& rw) {
            auto session = std::make_shared<Session>(index);
            return DoWhile([rw, session] {
              return rw.Read().Then([rw, session](std::optional<ServerReflectionRequest>&& req) {
                if (!req) return MakeReadyFuture<bool>(false);  // the client's last
                return rw.Write(session->Answer(*req)).Then([] { return true; });
              });
            });
          });
    }
  }
}

}  // namespace trpc::reflection
