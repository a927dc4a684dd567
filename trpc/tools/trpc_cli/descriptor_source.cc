#include "trpc/tools/trpc_cli/descriptor_source.h"

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.pb.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "trpc/client/client_context.h"
#include "trpc/client/client_stream.h"
#include "trpc/server/reflection/reflection.h"
#include "trpc/server/reflection/reflection.pb.h"

namespace trpc::cli {

namespace {

namespace pb = google::protobuf;
using trpc::grpc_reflection::ServerReflectionRequest;
using trpc::grpc_reflection::ServerReflectionResponse;
using Stream = stream::ClientReaderWriter<ServerReflectionRequest, ServerReflectionResponse>;

// The reflection service as a descriptor database: each lookup the pool makes is one request on
// one stream, and every file an answer carries (the file and its imports) is kept, so the pool
// finds imports without asking again.
class ReflectionDatabase : public pb::DescriptorDatabase {
 public:
  ReflectionDatabase(std::shared_ptr<ServiceProxy> proxy, uint32_t timeout_ms, bool v1alpha_only)
      : proxy_(std::move(proxy)), timeout_ms_(timeout_ms), v1alpha_(v1alpha_only) {}
  ~ReflectionDatabase() override {
    if (open_) {
      stream_.WritesDone();
      (void)stream_.Finish();
    }
  }

  bool FindFileByName(const std::string& name, pb::FileDescriptorProto* out) override {
    if (cache_.FindFileByName(name, out)) return true;
    ServerReflectionRequest req;
    req.set_file_by_filename(name);
    return AskForFiles(req) && cache_.FindFileByName(name, out);
  }
  bool FindFileContainingSymbol(const std::string& symbol, pb::FileDescriptorProto* out) override {
    if (cache_.FindFileContainingSymbol(symbol, out)) return true;
    ServerReflectionRequest req;
    req.set_file_containing_symbol(symbol);
    return AskForFiles(req) && cache_.FindFileContainingSymbol(symbol, out);
  }
  bool FindFileContainingExtension(const std::string& type, int number,
                                   pb::FileDescriptorProto* out) override {
    if (cache_.FindFileContainingExtension(type, number, out)) return true;
    ServerReflectionRequest req;
    req.mutable_file_containing_extension()->set_containing_type(type);
    req.mutable_file_containing_extension()->set_extension_number(number);
    return AskForFiles(req) && cache_.FindFileContainingExtension(type, number, out);
  }

  /// One request, one answer. False with *err when the stream fails (the server's status) or the
  /// answer is an error_response.
  bool Ask(const ServerReflectionRequest& req, ServerReflectionResponse* rsp, std::string* err) {
    for (;;) {
      if (!open_ && !Open(err)) return false;
      Status st = stream_.Write(req);
      if (st.OK()) st = stream_.Read(rsp);
      if (!st.OK()) {
        // The server's status for the stream says why (a server that refuses the method may
        // end the stream before our request is written: then the write fails, not the read).
        Status end = stream_.Finish();
        if (end.OK()) {
          end =
              st.StreamEof() ? Status(kClientNetworkErr, "the reflection stream ended early") : st;
        }
        open_ = false;
        if (!v1alpha_ && IsUnknownMethod(end)) {
          v1alpha_ = true;  // a server of grpc++ 1.51 or older: v1alpha only
          continue;
        }
        last_ = end;
        *err = IsUnknownMethod(end) ? "the server serves no reflection (" + end.ToString() +
                                          "): give the files with --proto or --descriptor-set"
                                    : "reflection: " + end.ToString();
        return false;
      }
      if (rsp->has_error_response()) {
        *err = rsp->error_response().error_message();
        return false;
      }
      return true;
    }
  }
  const Status& last_status() const { return last_; }

 private:
  bool Open(std::string* err) {
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetTimeout(timeout_ms_);
    ctx->SetFuncName(v1alpha_ ? reflection::kReflectionV1AlphaMethod
                              : reflection::kReflectionV1Method);
    stream::ClientStream opened;
    Status st = proxy_->OpenStream(ctx, &opened);
    if (!st.OK()) {
      last_ = st;
      *err = "cannot open the reflection stream: " + st.ToString();
      return false;
    }
    stream_ = Stream(std::move(opened));
    open_ = true;
    return true;
  }

  bool AskForFiles(const ServerReflectionRequest& req) {
    ServerReflectionResponse rsp;
    std::string err;
    if (!Ask(req, &rsp, &err)) return false;
    for (const std::string& bytes : rsp.file_descriptor_response().file_descriptor_proto()) {
      pb::FileDescriptorProto file;
      if (!file.ParseFromString(bytes)) return false;
      pb::FileDescriptorProto known;
      if (!cache_.FindFileByName(file.name(), &known)) cache_.Add(file);
    }
    return true;
  }

  std::shared_ptr<ServiceProxy> proxy_;
  uint32_t timeout_ms_;
  bool v1alpha_;
  bool open_ = false;
  Stream stream_;
  Status last_;
  pb::SimpleDescriptorDatabase cache_;
};

class FromReflection : public DescriptorSource {
 public:
  explicit FromReflection(std::unique_ptr<ReflectionDatabase> db) : db_(std::move(db)) {
    pool_ = std::make_unique<pb::DescriptorPool>(db_.get());
  }
  Status CallFailure() const override {
    const Status& st = db_->last_status();
    return IsUnknownMethod(st) ? Status() : st;
  }
  bool ListServices(std::vector<std::string>* out, std::string* err) override {
    ServerReflectionRequest req;
    req.set_list_services("");
    ServerReflectionResponse rsp;
    if (!db_->Ask(req, &rsp, err)) return false;
    for (const auto& s : rsp.list_services_response().service()) out->push_back(s.name());
    std::sort(out->begin(), out->end());
    return true;
  }

 private:
  std::unique_ptr<ReflectionDatabase> db_;
};

// protoc-style errors from parsing --proto files.
class Collector : public pb::compiler::MultiFileErrorCollector {
 public:
  void AddError(const std::string& file, int line, int column, const std::string& msg) override {
    if (!text.empty()) text += "\n";
    text += file + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + msg;
  }
  std::string text;
};

class FromFiles : public DescriptorSource {
 public:
  bool Init(const std::vector<std::string>& sets, const std::vector<std::string>& protos,
            const std::vector<std::string>& import_dirs, std::string* err) {
    for (const std::string& path : sets) {
      std::ifstream in(path, std::ios::binary);
      pb::FileDescriptorSet set;
      if (!in || !set.ParseFromIstream(&in)) {
        *err = path + ": not a readable FileDescriptorSet (protoc --descriptor_set_out)";
        return false;
      }
      for (const auto& f : set.file()) {
        pb::FileDescriptorProto known;
        if (!db_.FindFileByName(f.name(), &known)) db_.Add(f);
        for (const auto& s : f.service()) {
          services_.insert(f.package().empty() ? s.name() : f.package() + "." + s.name());
        }
      }
    }
    pool_ = std::make_unique<pb::DescriptorPool>(&db_);
    if (!protos.empty()) {
      // Parsed .proto files: their own pool (the importer's), which falls back on nothing.
      for (const std::string& dir : import_dirs) tree_.MapPath("", dir);
      tree_.MapPath("", ".");
      importer_ = std::make_unique<pb::compiler::Importer>(&tree_, &errors_);
      for (const std::string& given : protos) {
        // A path on disk (absolute, or outside the -I folders) is read from its own folder;
        // otherwise it is a name under the -I folders, as protoc takes it.
        std::string proto = given;
        std::string shadow;
        if (::access(given.c_str(), R_OK) == 0 &&
            tree_.DiskFileToVirtualFile(given, &proto, &shadow) !=
                pb::compiler::DiskSourceTree::SUCCESS) {
          const size_t slash = given.rfind('/');
          tree_.MapPath("", slash == std::string::npos ? "." : given.substr(0, slash + 1));
          proto = slash == std::string::npos ? given : given.substr(slash + 1);
        }
        const pb::FileDescriptor* f = importer_->Import(proto);
        if (f == nullptr) {
          *err = errors_.text.empty() ? proto + ": cannot be read" : errors_.text;
          return false;
        }
        for (int i = 0; i < f->service_count(); ++i) services_.insert(f->service(i)->full_name());
        // Copy it, with its imports, into the database the pool reads.
        std::vector<const pb::FileDescriptor*> todo{f};
        for (size_t k = 0; k < todo.size(); ++k) {
          pb::FileDescriptorProto known;
          if (db_.FindFileByName(todo[k]->name(), &known)) continue;
          pb::FileDescriptorProto fdp;  // (CopyTo appends to what is there)
          todo[k]->CopyTo(&fdp);
          db_.Add(fdp);
          for (int d = 0; d < todo[k]->dependency_count(); ++d) {
            todo.push_back(todo[k]->dependency(d));
          }
        }
      }
    }
    return true;
  }
  bool ListServices(std::vector<std::string>* out, std::string*) override {
    out->assign(services_.begin(), services_.end());
    return true;
  }

 private:
  pb::SimpleDescriptorDatabase db_;
  pb::compiler::DiskSourceTree tree_;
  Collector errors_;
  std::unique_ptr<pb::compiler::Importer> importer_;
  std::set<std::string> services_;
};

}  // namespace

bool IsUnknownMethod(const Status& st) {
  return st.GetFrameworkRetCode() == kServerNoFuncErr ||
         st.GetFrameworkRetCode() == kServerNoServiceErr;
}

std::unique_ptr<DescriptorSource> ReflectionSource(std::shared_ptr<ServiceProxy> proxy,
                                                   uint32_t timeout_ms, bool v1alpha_only) {
  return std::make_unique<FromReflection>(
      std::make_unique<ReflectionDatabase>(std::move(proxy), timeout_ms, v1alpha_only));
}

std::unique_ptr<DescriptorSource> FileSource(const std::vector<std::string>& descriptor_sets,
                                             const std::vector<std::string>& protos,
                                             const std::vector<std::string>& import_dirs,
                                             std::string* err) {
  auto source = std::make_unique<FromFiles>();
  if (!source->Init(descriptor_sets, protos, import_dirs, err)) return nullptr;
  return source;
}

}  // namespace trpc::cli
