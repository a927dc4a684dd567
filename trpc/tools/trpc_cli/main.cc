// trpc-cli: list, describe and call the services of a gRPC or trpc server from a shell, with
// JSON in and out (docs/cli.md). Exit codes: 0 success; 1 bad usage; 2 bad input (JSON, an
// unknown service, method or symbol); 3 no descriptors (a server without reflection, and no
// --proto or --descriptor-set); 4 health: the server answered but is not SERVING; 10 + the
// gRPC status code when a call fails (24: UNAVAILABLE, an unreachable host or a TLS mismatch;
// 14: DEADLINE_EXCEEDED; 22: UNIMPLEMENTED ...).

#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/util/json_util.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fmt/format.h"
#include "trpc/app/run_in_trpc_runtime.h"
#include "trpc/client/client_context.h"
#include "trpc/client/client_stream.h"
#include "trpc/client/service_proxy.h"
#include "trpc/client/trpc_client.h"
#include "trpc/codec/grpc/detail/grpc_status.h"
#include "trpc/config/config.h"
#include "trpc/server/grpc/grpc_server.h"
#include "trpc/server/grpc/health.pb.h"
#include "trpc/tools/trpc_cli/descriptor_source.h"

namespace trpc::cli {
namespace {

namespace pb = google::protobuf;

enum Exit : int {
  kOk = 0,
  kUsage = 1,
  kBadInput = 2,
  kNoDescriptors = 3,
  kNotServing = 4,
  kRpcBase = 10,
};

constexpr char kUsageText[] =
    R"(usage: trpc-cli [options] VERB ADDRESS [ARGS]

verbs:
  list ADDRESS [SERVICE]        the services (or one service's methods)
  describe ADDRESS SYMBOL       a service, method, message or enum, as .proto text
  call ADDRESS METHOD           calls pkg.Service/Method (or pkg.Service.Method) with -d;
                                prints each reply as one line of JSON
  health ADDRESS [SERVICE]      grpc.health.v1 Check (with --watch: Watch, until it ends)

options:
  --protocol grpc|trpc|http     (default grpc); http: unary methods of the REST mapping
  --reflect ADDRESS             ask this address's reflection for the descriptors (with
                                --protocol http: a gRPC or trpc port of the same server);
                                --reflect-protocol grpc|trpc (default grpc)
  -d, --data JSON|@FILE|@-      the request; for a client or bidirectional stream, one JSON
                                object per line (default {})
  -H, --header 'KEY: VALUE'     metadata (gRPC) / trans_info (trpc); repeatable
  --timeout MS                  the whole call's deadline (default 10000; health --watch:
                                a day)
  --gzip                        compress the requests
  --tls                         TLS; --ca FILE (trusted CAs), --cert FILE --key FILE (a client
                                certificate), --sni NAME, --insecure (no certificate check)
  --proto FILE, -I DIR          descriptors from .proto files instead of reflection
  --descriptor-set FILE         descriptors from protoc --descriptor_set_out --include_imports
  --v1alpha                     ask grpc.reflection.v1alpha only (grpc++ 1.51 and older)
  --watch                       health: follow the status
exit: 0 ok, 1 usage, 2 bad input, 3 no descriptors, 4 not serving, 10 + gRPC status code)";

struct Options {
  std::string verb, address;
  std::vector<std::string> args;
  std::string protocol = "grpc";
  std::string reflect, reflect_protocol = "grpc";  // where to ask for descriptors (http)
  std::string data = "{}";
  std::vector<std::pair<std::string, std::string>> headers;
  uint32_t timeout_ms = 10000;
  bool timeout_given = false;
  bool gzip = false, tls = false, insecure = false, v1alpha = false, watch = false;
  std::string ca, cert, key, sni;
  std::vector<std::string> protos, import_dirs, descriptor_sets;
};

int Fail(int code, const std::string& msg) {
  std::fprintf(stderr, "trpc-cli: %s\n", msg.c_str());
  return code;
}

// False with *err on a bad command line.
bool Parse(int argc, char** argv, Options* o, std::string* err) {
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) {
        *err = a + " needs a value";
        return false;
      }
      *out = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--protocol") {
      if (!value(&o->protocol)) return false;
      if (o->protocol != "grpc" && o->protocol != "trpc" && o->protocol != "http") {
        *err = "--protocol: grpc, trpc or http, not '" + o->protocol + "'";
        return false;
      }
    } else if (a == "--reflect") {
      if (!value(&o->reflect)) return false;
    } else if (a == "--reflect-protocol") {
      if (!value(&o->reflect_protocol)) return false;
      if (o->reflect_protocol != "grpc" && o->reflect_protocol != "trpc") {
        *err = "--reflect-protocol: grpc or trpc, not '" + o->reflect_protocol + "'";
        return false;
      }
    } else if (a == "-d" || a == "--data") {
      if (!value(&o->data)) return false;
    } else if (a == "-H" || a == "--header") {
      if (!value(&v)) return false;
      const size_t colon = v.find(':');
      if (colon == std::string::npos || colon == 0) {
        *err = "-H: expected 'KEY: VALUE', got '" + v + "'";
        return false;
      }
      std::string val = v.substr(colon + 1);
      val.erase(0, val.find_first_not_of(' '));
      o->headers.emplace_back(v.substr(0, colon), val);
    } else if (a == "--timeout") {
      if (!value(&v)) return false;
      char* end = nullptr;
      unsigned long ms = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || ms == 0 || ms > 3'600'000) {
        *err = "--timeout: milliseconds, 1..3600000, not '" + v + "'";
        return false;
      }
      o->timeout_ms = static_cast<uint32_t>(ms);
      o->timeout_given = true;
    } else if (a == "--gzip") {
      o->gzip = true;
    } else if (a == "--tls") {
      o->tls = true;
    } else if (a == "--insecure") {
      o->insecure = o->tls = true;
    } else if (a == "--ca") {
      if (!value(&o->ca)) return false;
      o->tls = true;
    } else if (a == "--cert") {
      if (!value(&o->cert)) return false;
      o->tls = true;
    } else if (a == "--key") {
      if (!value(&o->key)) return false;
      o->tls = true;
    } else if (a == "--sni") {
      if (!value(&o->sni)) return false;
      o->tls = true;
    } else if (a == "--proto") {
      if (!value(&v)) return false;
      o->protos.push_back(v);
    } else if (a == "-I") {
      if (!value(&v)) return false;
      o->import_dirs.push_back(v);
    } else if (a == "--descriptor-set") {
      if (!value(&v)) return false;
      o->descriptor_sets.push_back(v);
    } else if (a == "--v1alpha") {
      o->v1alpha = true;
    } else if (a == "--watch") {
      o->watch = true;
    } else if (a == "-h" || a == "--help") {
      *err = "";
      return false;
    } else if (a.size() > 1 && a[0] == '-') {
      *err = "unknown option " + a;
      return false;
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() < 2) {
    *err = "a verb and an address are needed";
    return false;
  }
  o->verb = positional[0];
  o->address = positional[1];
  o->args.assign(positional.begin() + 2, positional.end());
  // health --watch follows the status for as long as it is given (a day), not 10 s.
  if (o->watch && !o->timeout_given) o->timeout_ms = 86'400'000;
  return true;
}

// The exit code of a failed call: 10 + its gRPC status code.
int RpcExit(const Status& st) {
  const int ret = st.GetFrameworkRetCode();
  if (ret >= 300 && ret < 400) {  // a stream's client-side end (trpc.proto's 3xx codes)
    return kRpcBase + (ret == 301 ? 14 : ret == 354 ? 4 : 2);  // UNAVAILABLE, DEADLINE, UNKNOWN
  }
  return kRpcBase + grpc::GrpcCodeOf(ret, st.GetFuncRetCode());
}

// Why the descriptors could not be had: the call's failure, or no reflection (`err`).
int SourceFailure(const DescriptorSource& src, const std::string& err) {
  const Status st = src.CallFailure();
  return Fail(st.OK() ? kNoDescriptors : RpcExit(st), err);
}

std::shared_ptr<ServiceProxy> MakeProxy(const Options& o, const std::string& name,
                                        const std::string& address, const std::string& protocol,
                                        std::string* err) {
  ClientServiceConfig c;
  c.target = address;
  c.protocol = protocol;
  c.timeout = o.timeout_ms;
  if (o.tls) {
    c.ssl.enable = true;
    c.ssl.ca_cert_path = o.ca;
    c.ssl.cert_path = o.cert;
    c.ssl.private_key_path = o.key;
    c.ssl.sni_name = o.sni;
    c.ssl.insecure = o.insecure;
  }
  return GetTrpcClient()->GetProxy<ServiceProxy>(name, c, err);
}

ClientContextPtr MakeContext(const Options& o, const std::string& func) {
  ClientContextPtr ctx = MakeClientContext();
  ctx->SetTimeout(o.timeout_ms);
  ctx->SetFuncName(func);
  for (const auto& [k, v] : o.headers) ctx->AddReqTransInfo(k, v);
  if (o.gzip) ctx->SetReqCompressType(1);
  return ctx;
}

// "pkg.Svc/Method", "/pkg.Svc/Method" or "pkg.Svc.Method" -> the method, or null.
const pb::MethodDescriptor* FindMethod(const pb::DescriptorPool* pool, std::string name) {
  if (!name.empty() && name[0] == '/') name.erase(0, 1);
  const size_t slash = name.find('/');
  if (slash != std::string::npos) name[slash] = '.';
  return pool->FindMethodByName(name);
}

std::string ToJson(const pb::Message& m) {
  std::string out;
  pb::util::JsonPrintOptions opts;
  (void)pb::util::MessageToJsonString(m, &out, opts);
  return out;
}

// The request text of -d: inline JSON, @FILE or @- (stdin).
bool ReadData(const std::string& data, std::string* out, std::string* err) {
  if (data.empty() || data[0] != '@') {
    *out = data;
    return true;
  }
  std::stringstream ss;
  if (data == "@-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream in(data.substr(1));
    if (!in) {
      *err = data.substr(1) + ": cannot be read";
      return false;
    }
    ss << in.rdbuf();
  }
  *out = ss.str();
  return true;
}

// Splits the request text into messages of `type`: one JSON object, or one per line.
bool ParseRequests(const std::string& text, const pb::Descriptor* type, pb::MessageFactory* factory,
                   bool many, std::vector<std::unique_ptr<pb::Message>>* out, std::string* err) {
  std::vector<std::string> docs;
  if (many) {
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.find_first_not_of(" \t\r") != std::string::npos) docs.push_back(line);
    }
  } else {
    docs.push_back(text);
  }
  for (size_t i = 0; i < docs.size(); ++i) {
    std::unique_ptr<pb::Message> m(factory->GetPrototype(type)->New());
    auto st = pb::util::JsonStringToMessage(docs[i], m.get());
    if (!st.ok()) {
      *err = fmt::format("-d{}: not a {} in JSON: {}",
                         many ? fmt::format(" (line {})", i + 1) : std::string(), type->full_name(),
                         std::string(st.message()));
      return false;
    }
    out->push_back(std::move(m));
  }
  return true;
}

int List(const Options& o, DescriptorSource* src) {
  std::string err;
  std::vector<std::string> services;
  if (!src->ListServices(&services, &err)) return SourceFailure(*src, err);
  if (o.args.empty()) {
    for (const auto& s : services) std::printf("%s\n", s.c_str());
    return kOk;
  }
  const pb::ServiceDescriptor* svc = src->pool()->FindServiceByName(o.args[0]);
  if (svc == nullptr) return Fail(kBadInput, "no service named " + o.args[0]);
  for (int i = 0; i < svc->method_count(); ++i) {
    std::printf("%s.%s\n", svc->full_name().c_str(), svc->method(i)->name().c_str());
  }
  return kOk;
}

int Describe(const Options& o, DescriptorSource* src) {
  if (o.args.empty()) return Fail(kUsage, "describe: which symbol?");
  const std::string& name = o.args[0];
  const pb::DescriptorPool* pool = src->pool();
  // The pool loads the symbol's file on the first lookup; a failed one means unknown here.
  if (const auto* d = pool->FindServiceByName(name)) {
    std::printf("%s", d->DebugString().c_str());
  } else if (const auto* m = FindMethod(pool, name)) {
    std::printf("%s", m->DebugString().c_str());
  } else if (const auto* t = pool->FindMessageTypeByName(name)) {
    std::printf("%s", t->DebugString().c_str());
  } else if (const auto* e = pool->FindEnumTypeByName(name)) {
    std::printf("%s", e->DebugString().c_str());
  } else {
    std::vector<std::string> services;
    std::string err;
    if (!src->ListServices(&services, &err)) return SourceFailure(*src, err);
    return Fail(kBadInput, "no service, method, message or enum named " + name);
  }
  return kOk;
}

int Call(const Options& o, DescriptorSource* src, const std::shared_ptr<ServiceProxy>& proxy) {
  if (o.args.empty()) return Fail(kUsage, "call: which method?");
  const pb::MethodDescriptor* method = FindMethod(src->pool(), o.args[0]);
  if (method == nullptr) {
    std::vector<std::string> services;
    std::string err;
    if (!src->ListServices(&services, &err)) return SourceFailure(*src, err);
    return Fail(kBadInput, "no method named " + o.args[0]);
  }
  const std::string func = "/" + method->service()->full_name() + "/" + std::string(method->name());
  pb::DynamicMessageFactory factory(src->pool());
  std::string text, err;
  std::vector<std::unique_ptr<pb::Message>> reqs;
  if (!ReadData(o.data, &text, &err) || !ParseRequests(text, method->input_type(), &factory,
                                                       method->client_streaming(), &reqs, &err)) {
    return Fail(kBadInput, err);
  }
  std::unique_ptr<pb::Message> rsp(factory.GetPrototype(method->output_type())->New());
  const bool streaming = method->client_streaming() || method->server_streaming();
  if (streaming && o.protocol == "http") {
    return Fail(kBadInput, func + " is a streaming method: HTTP serves unary methods only");
  }
  if (!streaming) {
    Status st = proxy->UnaryInvoke(MakeContext(o, func), *reqs[0], rsp.get());
    if (!st.OK()) return Fail(RpcExit(st), st.ToString());
    std::printf("%s\n", ToJson(*rsp).c_str());
    return kOk;
  }
  stream::ClientStream s;
  Status st = proxy->OpenStream(MakeContext(o, func), &s);
  if (!st.OK()) return Fail(RpcExit(st), st.ToString());
  // The requests go out from a thread of their own while this one reads: a server that answers
  // as it reads (an echo) would otherwise fill our window while we still write, and both ends
  // would wait on flow control until the deadline.
  std::thread writer([&s, &reqs] {
    for (const auto& req : reqs) {
      if (!s.Write(*req).OK()) break;  // the server ended the stream: Finish() says why
    }
    s.WritesDone();
  });
  for (;;) {
    rsp->Clear();
    st = s.Read(rsp.get());
    if (!st.OK()) break;
    std::printf("%s\n", ToJson(*rsp).c_str());
    std::fflush(stdout);
  }
  writer.join();
  Status end = s.Finish();
  if (!end.OK()) return Fail(RpcExit(end), end.ToString());
  return kOk;
}

const char* StatusName(int s) {
  using R = grpc_health::HealthCheckResponse;
  return R::ServingStatus_IsValid(s)
             ? R::ServingStatus_Name(static_cast<R::ServingStatus>(s)).c_str()
             : "UNKNOWN";
}

int Health(const Options& o, const std::shared_ptr<ServiceProxy>& proxy) {
  grpc_health::HealthCheckRequest req;
  if (!o.args.empty()) req.set_service(o.args[0]);
  grpc_health::HealthCheckResponse rsp;
  if (!o.watch) {
    Status st = proxy->UnaryInvoke(MakeContext(o, grpc::kHealthCheckMethod), req, &rsp);
    if (!st.OK()) return Fail(RpcExit(st), st.ToString());
    std::printf("%s\n", StatusName(rsp.status()));
    return rsp.status() == grpc_health::HealthCheckResponse::SERVING ? kOk : kNotServing;
  }
  stream::ClientStream s;
  Status st = proxy->OpenStream(MakeContext(o, grpc::kHealthWatchMethod), &s);
  if (!st.OK()) return Fail(RpcExit(st), st.ToString());
  (void)s.Write(req);
  s.WritesDone();
  while (s.Read(&rsp).OK()) {
    std::printf("%s\n", StatusName(rsp.status()));
    std::fflush(stdout);
  }
  Status end = s.Finish();
  if (!end.OK()) return Fail(RpcExit(end), end.ToString());
  return kOk;
}

int Run(const Options& o) {
  std::string err;
  std::shared_ptr<ServiceProxy> proxy = MakeProxy(o, "trpc-cli", o.address, o.protocol, &err);
  if (proxy == nullptr) return Fail(kUsage, err);
  if (o.verb == "health") return Health(o, proxy);
  std::unique_ptr<DescriptorSource> src;
  if (!o.protos.empty() || !o.descriptor_sets.empty()) {
    src = FileSource(o.descriptor_sets, o.protos, o.import_dirs, &err);
    if (src == nullptr) return Fail(kBadInput, err);
  } else if (!o.reflect.empty() || o.protocol == "http") {
    // HTTP serves no reflection: another port of the server (or another server) describes it.
    if (o.reflect.empty()) {
      return Fail(kUsage,
                  "--protocol http: give --reflect ADDRESS (a gRPC or trpc port serving "
                  "reflection), --proto or --descriptor-set");
    }
    auto reflect = MakeProxy(o, "trpc-cli-reflection", o.reflect, o.reflect_protocol, &err);
    if (reflect == nullptr) return Fail(kUsage, err);
    src = ReflectionSource(reflect, o.timeout_ms, o.v1alpha);
  } else {
    src = ReflectionSource(proxy, o.timeout_ms, o.v1alpha);
  }
  if (o.verb == "list") return List(o, src.get());
  if (o.verb == "describe") return Describe(o, src.get());
  if (o.verb == "call") return Call(o, src.get(), proxy);
  return Fail(kUsage, "unknown verb '" + o.verb + "' (list, describe, call, health)");
}

}  // namespace
}  // namespace trpc::cli

int main(int argc, char** argv) {
  trpc::cli::Options o;
  std::string err;
  if (!trpc::cli::Parse(argc, argv, &o, &err)) {
    if (!err.empty()) std::fprintf(stderr, "trpc-cli: %s\n", err.c_str());
    std::fprintf(stderr, "%s\n", trpc::cli::kUsageText);
    return err.empty() ? 0 : trpc::cli::kUsage;
  }
  trpc::Config config;
  // One merge worker for the connections; the verbs run on this thread and may block.
  if (!trpc::LoadConfigFromString(R"(global:
  threadmodel:
    default:
      - instance_name: cli
        io_handle_type: merge
        io_thread_num: 1
plugins:
  log:
    level: error
)",
                                  "trpc-cli", &config, &err)) {
    return trpc::cli::Fail(trpc::cli::kUsage, err);
  }
  return trpc::RunInTrpcRuntime(config, [&] { return trpc::cli::Run(o); });
}
