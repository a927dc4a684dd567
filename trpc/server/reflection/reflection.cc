#include "trpc/server/reflection/reflection.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <climits>
#include <functional>
#include <map>
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

// Every name a file defines, as reflection's file_containing_symbol takes them: messages
// (nested ones too) and their fields, enums, services and their methods, extensions.
void ForEachSymbol(const pb::Descriptor* d, const std::function<void(const std::string&)>& add) {
  add(d->full_name());
  for (int i = 0; i < d->field_count(); ++i) add(d->field(i)->full_name());
  for (int i = 0; i < d->extension_count(); ++i) add(d->extension(i)->full_name());
  for (int i = 0; i < d->enum_type_count(); ++i) add(d->enum_type(i)->full_name());
  for (int i = 0; i < d->nested_type_count(); ++i) ForEachSymbol(d->nested_type(i), add);
}
void ForEachSymbol(const pb::FileDescriptor* f,
                   const std::function<void(const std::string&)>& add) {
  for (int i = 0; i < f->message_type_count(); ++i) ForEachSymbol(f->message_type(i), add);
  for (int i = 0; i < f->enum_type_count(); ++i) add(f->enum_type(i)->full_name());
  for (int i = 0; i < f->extension_count(); ++i) add(f->extension(i)->full_name());
  for (int i = 0; i < f->service_count(); ++i) {
    add(f->service(i)->full_name());
    for (int m = 0; m < f->service(i)->method_count(); ++m) {
      add(f->service(i)->method(m)->full_name());
    }
  }
}
void ForEachExtension(const pb::Descriptor* d,
                      const std::function<void(const pb::FieldDescriptor*)>& add) {
  for (int i = 0; i < d->extension_count(); ++i) add(d->extension(i));
  for (int i = 0; i < d->nested_type_count(); ++i) ForEachExtension(d->nested_type(i), add);
}

// What one port's reflection answers from, built once when it is enabled: the services it
// serves, the files that define them and what those import, every name in them, and the
// built-in files under their standard names. Requests are answered from these maps alone: a
// peer's names never reach protobuf's generated pool, which remembers every name it failed to
// find (a client could grow it without bound), and files the port does not serve stay private.
struct Index {
  std::vector<std::string> services;  // sorted
  std::vector<Renamed> builtins;
  std::map<std::string, const pb::FileDescriptor*, std::less<>> files;    // by file name
  std::map<std::string, const pb::FileDescriptor*, std::less<>> symbols;  // by full name
  std::map<std::string, size_t, std::less<>> builtin_files;    // standard name -> builtins[i]
  std::map<std::string, size_t, std::less<>> builtin_symbols;  // standard name -> builtins[i]
  // (containing type, number) -> the extension's file.
  std::map<std::pair<std::string, int>, const pb::FileDescriptor*> extensions;

  void AddFileAndImports(const pb::FileDescriptor* f) {
    if (!files.emplace(f->name(), f).second) return;
    ForEachSymbol(f, [&](const std::string& name) { symbols.emplace(name, f); });
    auto add_ext = [&](const pb::FieldDescriptor* x) {
      extensions.emplace(std::make_pair(x->containing_type()->full_name(), x->number()), f);
    };
    for (int i = 0; i < f->extension_count(); ++i) add_ext(f->extension(i));
    for (int i = 0; i < f->message_type_count(); ++i) ForEachExtension(f->message_type(i), add_ext);
    for (int i = 0; i < f->dependency_count(); ++i) AddFileAndImports(f->dependency(i));
  }
  void AddBuiltins(std::vector<Renamed> all) {
    builtins = std::move(all);
    for (size_t i = 0; i < builtins.size(); ++i) {
      const Renamed& b = builtins[i];
      builtin_files.emplace(b.name, i);
      ForEachSymbol(b.ours, [&](const std::string& name) {
        builtin_symbols.emplace(b.package + name.substr(b.ours_package.size()), i);
      });
    }
  }
};

// One reflection stream: answers each request in turn, and sends each file once.
class Session {
 public:
  explicit Session(std::shared_ptr<const Index> index) : index_(std::move(index)) {}

  ServerReflectionResponse Answer(const ServerReflectionRequest& req) {
    ServerReflectionResponse rsp;
    rsp.set_valid_host(req.host());
    *rsp.mutable_original_request() = req;
    const Index& ix = *index_;
    switch (req.message_request_case()) {
      case ServerReflectionRequest::kListServices:
        for (const std::string& name : ix.services) {
          rsp.mutable_list_services_response()->add_service()->set_name(name);
        }
        break;
      case ServerReflectionRequest::kFileByFilename: {
        const std::string& name = req.file_by_filename();
        if (auto b = ix.builtin_files.find(name); b != ix.builtin_files.end()) {
          AddBuiltin(ix.builtins[b->second], &rsp);
        } else if (auto f = ix.files.find(name); f != ix.files.end()) {
          AddFile(f->second, &rsp);
        } else {
          Error(kGrpcNotFound, "no file named " + Shown(name), &rsp);
        }
        break;
      }
      case ServerReflectionRequest::kFileContainingSymbol: {
        const std::string& symbol = req.file_containing_symbol();
        if (auto b = ix.builtin_symbols.find(symbol); b != ix.builtin_symbols.end()) {
          AddBuiltin(ix.builtins[b->second], &rsp);
        } else if (auto f = ix.symbols.find(symbol); f != ix.symbols.end()) {
          AddFile(f->second, &rsp);
        } else {
          Error(kGrpcNotFound, "no symbol named " + Shown(symbol), &rsp);
        }
        break;
      }
      case ServerReflectionRequest::kFileContainingExtension: {
        const auto& ext = req.file_containing_extension();
        auto f = ix.extensions.find({ext.containing_type(), ext.extension_number()});
        if (f != ix.extensions.end()) {
          AddFile(f->second, &rsp);
        } else {
          Error(kGrpcNotFound,
                "no extension " + std::to_string(ext.extension_number()) + " of " +
                    Shown(ext.containing_type()),
                &rsp);
        }
        break;
      }
      case ServerReflectionRequest::kAllExtensionNumbersOfType: {
        const std::string& name = req.all_extension_numbers_of_type();
        auto f = ix.symbols.find(name);
        const pb::Descriptor* type =
            f != ix.symbols.end() ? f->second->pool()->FindMessageTypeByName(name) : nullptr;
        if (type == nullptr) {
          Error(kGrpcNotFound, "no message type named " + Shown(name), &rsp);
          break;
        }
        auto* out = rsp.mutable_all_extension_numbers_response();
        out->set_base_type_name(name);
        for (auto it = ix.extensions.lower_bound({name, INT32_MIN});
             it != ix.extensions.end() && it->first.first == name; ++it) {
          out->add_extension_number(it->first.second);
        }
        break;
      }
      default:
        Error(kGrpcInvalidArgument, "the request asks for nothing this server knows", &rsp);
        break;
    }
    return rsp;
  }

 private:
  // A peer's name in an error message: at most 200 bytes of it.
  static std::string Shown(const std::string& name) {
    return name.size() <= 200 ? name : name.substr(0, 200) + "...";
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
    index->AddBuiltins(BuiltinFiles());
    const std::string v1 = ServiceOf(kReflectionV1Method);
    const std::string v1alpha = ServiceOf(kReflectionV1AlphaMethod);
    std::set<std::string> names{v1, v1alpha};
    svc->ForEachMethod([&](const std::string& method, const RpcMethodHandler*) {
      std::string name = ServiceOf(method);
      if (!name.empty()) names.insert(std::move(name));
    });
    index->services.assign(names.begin(), names.end());
    // The files that define the services served here (their names are ours, not a peer's).
    const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
    for (const std::string& name : index->services) {
      if (index->builtin_symbols.count(name) != 0) continue;
      if (const pb::ServiceDescriptor* d = pool->FindServiceByName(name)) {
        index->AddFileAndImports(d->file());
      }
    }
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
