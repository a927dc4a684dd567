#include "trpc/tools/protoc_gen_trpc/trpc_generator.h"

#include <google/protobuf/compiler/cpp/names.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/io/printer.h>
#include <google/protobuf/io/zero_copy_stream.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace trpc::tools {
namespace {

namespace pb = ::google::protobuf;
using pb::io::Printer;
using Vars = std::map<std::string, std::string>;

// Generated lines stay within the repository's column limit where the names allow it.
constexpr size_t kMaxColumns = 100;

std::string Basename(const pb::FileDescriptor* file) {
  return pb::compiler::cpp::StripProto(file->name());
}

// "a.b" -> "a::b". protoc's own C++ generator maps packages the same way (it does not rename
// C++ keywords in packages either), so our classes land in the namespace of the messages.
std::string Namespace(const pb::FileDescriptor* file) {
  std::string ns;
  for (char c : file->package()) {
    if (c == '.') {
      ns += "::";
    } else {
      ns += c;
    }
  }
  return ns;
}

// The template variables of one method: its name, wire name and fully qualified message types
// (qualified so that types imported from other packages resolve from any namespace).
Vars MethodVars(const pb::MethodDescriptor* method) {
  return {
      {"method", method->name()},
      {"proxy", method->service()->name() + "ServiceProxy"},
      {"wire", "/" + method->service()->full_name() + "/" + method->name()},
      {"req", pb::compiler::cpp::QualifiedClassName(method->input_type())},
      {"rsp", pb::compiler::cpp::QualifiedClassName(method->output_type())},
  };
}

// Prints `text` as one line at the printer's indentation. The text goes in as a variable's
// value, so '$' in it (possible in .proto comments) is not taken for a variable.
void PrintLine(Printer* p, const std::string& text) { p->Print("$text$\n", "text", text); }

// Carries a .proto element's leading comments (the ones directly above it) into the output.
template <typename Descriptor>
void PrintComments(Printer* p, const Descriptor* d) {
  pb::SourceLocation loc;
  if (!d->GetSourceLocation(&loc) || loc.leading_comments.empty()) return;
  std::string_view rest = loc.leading_comments;
  if (rest.back() == '\n') rest.remove_suffix(1);
  while (true) {
    size_t eol = rest.find('\n');
    std::string line = "//" + std::string(rest.substr(0, eol));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.pop_back();
    }
    // A trailing backslash would splice the next generated line into this comment.
    if (line.back() == '\\') line += " //";
    PrintLine(p, line);
    if (eol == std::string_view::npos) break;
    rest.remove_prefix(eol + 1);
  }
}

// Prints `head(items)tail` on one line if it fits in kMaxColumns at `indent` (the printer's
// current indentation), else one item a line, aligned after the bracket or, when even that does
// not fit, indented by 4 (the repository's clang-format style). `brackets` is "()" or "<>".
void PrintList(Printer* p, size_t indent, const std::string& head,
               const std::vector<std::string>& items, const std::string& tail,
               const char* brackets = "()") {
  const std::string open = head + brackets[0];
  const std::string close = brackets[1] + tail;
  std::string one_line = open;
  for (size_t i = 0; i < items.size(); ++i) one_line += (i > 0 ? ", " : "") + items[i];
  one_line += close;
  if (items.empty() || indent + one_line.size() <= kMaxColumns) {
    PrintLine(p, one_line);
    return;
  }
  size_t widest = 0;
  for (const std::string& item : items) widest = std::max(widest, item.size() + 1);
  widest = std::max(widest, items.back().size() + close.size());
  const bool aligned = indent + open.size() + widest <= kMaxColumns;
  const std::string pad(aligned ? open.size() : 4, ' ');
  if (!aligned) PrintLine(p, open);
  for (size_t i = 0; i < items.size(); ++i) {
    std::string line = (i == 0 && aligned) ? open : pad;
    line += items[i];
    line += i + 1 < items.size() ? "," : close;
    PrintLine(p, line);
  }
}

// ---------------------------------------------------------------------------------------------
// Checks: everything the generated C++ could not express, refused with a message that names
// the service and method (protoc puts the file name in front: "--trpc_out: foo.proto: ...").

// Option skip_streaming (--trpc_opt=skip_streaming): streaming methods are left out of the
// generated code instead of being an error (a unary-only service from a proto that also has
// streaming ones, e.g. gRPC's interop TestService). Set once per run; protoc runs a plug-in on one
// thread.
bool g_skip_streaming = false;

bool Skipped(const pb::MethodDescriptor* method) {
  return g_skip_streaming && (method->client_streaming() || method->server_streaming());
}

bool IsStreaming(const pb::MethodDescriptor* method) {
  return method->client_streaming() || method->server_streaming();
}

bool CheckMethod(const pb::MethodDescriptor* method, std::string* error) {
  if (Skipped(method)) return true;
  // The proxy's AsyncFoo for Foo would collide with an rpc called AsyncFoo.
  if (method->service()->FindMethodByName("Async" + method->name()) != nullptr) {
    *error = "service " + method->service()->name() + ", method Async" + method->name() +
             ": clashes with the asynchronous proxy method generated for " + method->name();
    return false;
  }
  return true;
}

// Whether protoc knows a message, enum, enum value or service called `full_name` (the C++
// generator puts each of them into the package's namespace under its last name component).
bool PoolHasSymbol(const pb::DescriptorPool* pool, const std::string& full_name) {
  return pool->FindMessageTypeByName(full_name) != nullptr ||
         pool->FindEnumTypeByName(full_name) != nullptr ||
         pool->FindEnumValueByName(full_name) != nullptr ||
         pool->FindServiceByName(full_name) != nullptr;
}

// The generated class names must not collide with each other nor with another symbol of the
// package that protoc knows about (a message called GreeterServiceProxy, say).
bool CheckClassNames(const pb::FileDescriptor* file, std::string* error) {
  if (file->options().cc_generic_services()) {
    *error =
        "option cc_generic_services makes protoc generate service classes with the names "
        "protoc-gen-trpc uses; remove the option";
    return false;
  }
  std::set<std::string> taken;
  for (int i = 0; i < file->service_count(); ++i) {
    const pb::ServiceDescriptor* service = file->service(i);
    for (const std::string& name :
         {service->name(), "Async" + service->name(), service->name() + "ServiceProxy"}) {
      const std::string full_name = file->package().empty() ? name : file->package() + "." + name;
      const bool clashes_with_symbol =
          name != service->name() && PoolHasSymbol(file->pool(), full_name);
      if (!taken.insert(name).second || clashes_with_symbol) {
        *error = "service " + service->name() + ": the generated class " + name +
                 " clashes with another class or symbol of package '" + file->package() + "'";
        return false;
      }
    }
  }
  return true;
}

bool Check(const pb::FileDescriptor* file, std::string* error) {
  for (int i = 0; i < file->service_count(); ++i) {
    const pb::ServiceDescriptor* service = file->service(i);
    for (int j = 0; j < service->method_count(); ++j) {
      if (!CheckMethod(service->method(j), error)) return false;
    }
  }
  return CheckClassNames(file, error);
}

// ---------------------------------------------------------------------------------------------
// The generated methods' parameter lists, shared by declarations and definitions.

// `name`, or `/*name*/` where the body ignores it (users may build with -Wunused-parameter).
std::string Param(const std::string& type, const char* name, bool unused) {
  return type + (unused ? " /*" + std::string(name) + "*/" : " " + std::string(name));
}

std::vector<std::string> SyncHandlerParams(const Vars& m, bool unused) {
  return {Param("::trpc::ServerContextPtr", "context", unused),
          Param("const " + m.at("req") + "*", "request", unused),
          Param(m.at("rsp") + "*", "response", unused)};
}

std::vector<std::string> AsyncHandlerParams(const Vars& m, bool unused) {
  return {Param("const ::trpc::ServerContextPtr&", "context", unused),
          Param("const " + m.at("req") + "*", "request", unused)};
}

// A streaming method's handler (server side): the reader and writer its kind has, blocking
// (stream::StreamReader/StreamWriter) or not (the Async ones).
std::vector<std::string> StreamHandlerParams(const pb::MethodDescriptor* method, const Vars& m,
                                             bool async, bool unused) {
  std::vector<std::string> params = {Param("const ::trpc::ServerContextPtr&", "context", unused)};
  const std::string& req = m.at("req");
  const std::string& rsp = m.at("rsp");
  const bool in = method->client_streaming(), out = method->server_streaming();
  if (!in) params.push_back(Param("const " + req + "&", "request", unused));
  if (async) {
    if (in && out) {
      params.push_back(
          Param("const ::trpc::stream::AsyncStreamReaderWriter<" + req + ", " + rsp + ">&",
                "stream", unused));
    } else if (in) {
      params.push_back(
          Param("const ::trpc::stream::AsyncStreamReader<" + req + ">&", "reader", unused));
    } else {
      params.push_back(
          Param("const ::trpc::stream::AsyncStreamWriter<" + rsp + ">&", "writer", unused));
    }
    return params;
  }
  if (in) {
    params.push_back(Param("const ::trpc::stream::StreamReader<" + req + ">&", "reader", unused));
  }
  if (out) {
    params.push_back(Param("::trpc::stream::StreamWriter<" + rsp + ">*", "writer", unused));
  } else {
    params.push_back(Param(rsp + "*", "response", unused));
  }
  return params;
}

// What a streaming handler returns: Status (blocking), Future<> or, for a client stream's one
// reply, Future<Rsp> (non-blocking).
std::string StreamHandlerResult(const pb::MethodDescriptor* method, const Vars& m, bool async) {
  if (!async) return "::trpc::Status";
  if (method->client_streaming() && !method->server_streaming()) {
    return "::trpc::Future<" + m.at("rsp") + ">";
  }
  return "::trpc::Future<>";
}

// The Service:: registration of a streaming method.
std::string StreamRegistration(const pb::MethodDescriptor* method, bool async) {
  const char* kind = method->client_streaming() && method->server_streaming() ? "Bidi"
                     : method->client_streaming()                             ? "Client"
                                                                              : "Server";
  return std::string("::trpc::Service::Add") + (async ? "Async" : "") + kind + "StreamMethod";
}

// The argument names a streaming handler's parameters have (for the registration's call).
std::string StreamArgs(const pb::MethodDescriptor* method, bool async) {
  const bool in = method->client_streaming(), out = method->server_streaming();
  std::string args = "context";
  if (!in) args += ", request";
  if (async) return args + (in && out ? ", stream" : in ? ", reader" : ", writer");
  if (in) args += ", reader";
  return args + (out ? ", writer" : ", response");
}

// A streaming method's proxy call: the typed client end of its kind.
std::vector<std::string> ProxyStreamParams(const pb::MethodDescriptor* method, const Vars& m) {
  std::vector<std::string> params = {"const ::trpc::ClientContextPtr& context"};
  const bool in = method->client_streaming(), out = method->server_streaming();
  if (!in) {
    params.push_back("const " + m.at("req") + "& request");
    params.push_back("::trpc::stream::ClientReader<" + m.at("rsp") + ">* reader");
  } else if (!out) {
    params.push_back("::trpc::stream::ClientWriter<" + m.at("req") + ", " + m.at("rsp") +
                     ">* writer");
  } else {
    params.push_back("::trpc::stream::ClientReaderWriter<" + m.at("req") + ", " + m.at("rsp") +
                     ">* stream");
  }
  return params;
}

std::vector<std::string> ProxyParams(const Vars& m, bool with_response) {
  std::vector<std::string> params = {"const ::trpc::ClientContextPtr& context",
                                     "const " + m.at("req") + "& request"};
  if (with_response) params.push_back(m.at("rsp") + "* response");
  return params;
}

// ---------------------------------------------------------------------------------------------
// Header: the class declarations.

// The service's own comments, then what the generated class is for.
void PrintClassComments(Printer* p, const pb::ServiceDescriptor* service, const char* what) {
  pb::SourceLocation loc;
  if (service->GetSourceLocation(&loc) && !loc.leading_comments.empty()) {
    PrintComments(p, service);
    p->Print("//\n");
  }
  p->Print(what);
}

void PrintServerClassDecl(Printer* p, const pb::ServiceDescriptor* service, bool async) {
  Vars vars = {{"class", (async ? "Async" : "") + service->name()},
               {"full_name", service->full_name()}};
  p->Print("\n");
  PrintClassComments(p, service,
                     async ? "// Server base with asynchronous handlers: each returns a future of "
                             "the reply,\n"
                             "// which goes out when the future resolves.\n"
                           : "// Server base with synchronous handlers.\n");
  p->Print(vars,
           "class $class$ : public ::trpc::Service {\n"
           " public:\n");
  p->Indent();
  p->Print(vars,
           "// Registers every method under its wire name \"/$full_name$/<method>\".\n"
           "$class$();\n");
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    if (Skipped(method)) continue;
    Vars m = MethodVars(method);
    p->Print("\n");
    PrintComments(p, method);
    p->Print("// Unless overridden, fails with ret 12 (kServerNoFuncErr).\n");
    if (IsStreaming(method)) {
      PrintList(p, 2, "virtual " + StreamHandlerResult(method, m, async) + " " + m["method"],
                StreamHandlerParams(method, m, async, /*unused=*/false), ";");
    } else if (async) {
      PrintList(p, 2, "virtual ::trpc::Future<" + m["rsp"] + "> " + m["method"],
                AsyncHandlerParams(m, /*unused=*/false), ";");
    } else {
      PrintList(p, 2, "virtual ::trpc::Status " + m["method"],
                SyncHandlerParams(m, /*unused=*/false), ";");
    }
  }
  p->Outdent();
  p->Print("};\n");
}

void PrintProxyClassDecl(Printer* p, const pb::ServiceDescriptor* service) {
  p->Print("\n");
  PrintClassComments(p, service,
                     "// Client proxy, a ::trpc::ServiceProxy (construct, then Init()): per\n"
                     "// method a synchronous, an asynchronous and a one-way call.\n");
  p->Print(
      "class $class$ : public ::trpc::ServiceProxy {\n"
      " public:\n",
      "class", service->name() + "ServiceProxy");
  p->Indent();
  p->Print("using ::trpc::ServiceProxy::ServiceProxy;\n");
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    if (Skipped(method)) continue;
    Vars m = MethodVars(method);
    if (IsStreaming(method)) {
      p->Print("\n");
      PrintComments(p, method);
      p->Print(
          "// A stream: opens it and waits for the server's answer (blocking, as the\n"
          "// synchronous calls).\n");
      PrintList(p, 2, "virtual ::trpc::Status " + m["method"], ProxyStreamParams(method, m), ";");
      continue;
    }
    p->Print("\n");
    PrintComments(p, method);
    p->Print("// Synchronous: waits for the reply (parks only the fiber in the fiber model).\n");
    PrintList(p, 2, "virtual ::trpc::Status " + m["method"], ProxyParams(m, true), ";");
    p->Print("// Asynchronous: the future resolves with the reply or fails with its status.\n");
    PrintList(p, 2, "virtual ::trpc::Future<" + m["rsp"] + "> Async" + m["method"],
              ProxyParams(m, false), ";");
    p->Print("// One-way: sends the request; no reply comes back.\n");
    PrintList(p, 2, "virtual ::trpc::Status " + m["method"], ProxyParams(m, false), ";");
  }
  p->Outdent();
  p->Print("};\n");
}

void PrintHeader(Printer* p, const pb::FileDescriptor* file) {
  const std::string ns = Namespace(file);
  Vars vars = {{"proto", file->name()}, {"basename", Basename(file)}, {"ns", ns}};
  p->Print(vars,
           "// Generated by protoc-gen-trpc from $proto$. Do not edit.\n"
           "#pragma once\n"
           "\n"
           "#include \"$basename$.pb.h\"\n");
  if (file->service_count() == 0) return;  // nothing of the framework needed
  p->Print(
      "#include \"trpc/client/service_proxy.h\"\n"
      "#include \"trpc/future/future.h\"\n"
      "#include \"trpc/server/service.h\"\n");
  if (!ns.empty()) p->Print(vars, "\nnamespace $ns$ {\n");
  for (int i = 0; i < file->service_count(); ++i) {
    PrintServerClassDecl(p, file->service(i), /*async=*/false);
    PrintServerClassDecl(p, file->service(i), /*async=*/true);
    PrintProxyClassDecl(p, file->service(i));
  }
  if (!ns.empty()) p->Print(vars, "\n}  // namespace $ns$\n");
}

// ---------------------------------------------------------------------------------------------
// Source: the registrations, the default handlers and the proxy calls. Calls into the base
// classes are qualified, so that an rpc named like one of their members (UnaryInvoke, say)
// cannot hide them.

void PrintServerClassDefs(Printer* p, const pb::ServiceDescriptor* service, bool async) {
  const std::string cls = (async ? "Async" : "") + service->name();
  if (service->method_count() == 0) {
    p->Print("\n$class$::$class$() {}\n", "class", cls);
    return;
  }
  p->Print("\n$class$::$class$() {\n", "class", cls);
  p->Indent();
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    if (Skipped(method)) continue;
    Vars m = MethodVars(method);
    if (IsStreaming(method)) {
      PrintList(p, 2, StreamRegistration(method, async), {m["req"], m["rsp"]}, "(", "<>");
      p->Indent();
      p->Indent();
      p->Print(m, "\"$wire$\",\n");
      PrintList(p, 6, "[this]", StreamHandlerParams(method, m, async, /*unused=*/false), " {");
      p->Print("  return $method$($args$);\n", "method", m["method"], "args",
               StreamArgs(method, async));
      p->Print("});\n");
      p->Outdent();
      p->Outdent();
      continue;
    }
    PrintList(p, 2,
              async ? "::trpc::Service::AddAsyncUnaryMethod" : "::trpc::Service::AddUnaryMethod",
              {m["req"], m["rsp"]}, "(", "<>");
    p->Indent();
    p->Indent();
    p->Print(m, "\"$wire$\",\n");
    if (async) {
      PrintList(p, 6, "[this]", AsyncHandlerParams(m, /*unused=*/false), " {");
      p->Print(m, "  return $method$(context, request);\n");
    } else {
      std::vector<std::string> params = SyncHandlerParams(m, /*unused=*/false);
      params[0] = "const ::trpc::ServerContextPtr& context";  // as the handler type takes it
      PrintList(p, 6, "[this]", params, " {");
      p->Print(m, "  return $method$(context, request, response);\n");
    }
    p->Print("});\n");
    p->Outdent();
    p->Outdent();
  }
  p->Outdent();
  p->Print("}\n");

  for (int i = 0; i < service->method_count(); ++i) {
    if (Skipped(service->method(i))) continue;
    Vars m = MethodVars(service->method(i));
    const std::vector<std::string> status = {"::trpc::kServerNoFuncErr",
                                             "\"" + m["wire"] + " is not implemented\""};
    p->Print("\n");
    const pb::MethodDescriptor* method = service->method(i);
    if (IsStreaming(method)) {
      const std::string result = StreamHandlerResult(method, m, async);
      PrintList(p, 0, result + " " + cls + "::" + m["method"],
                StreamHandlerParams(method, m, async, /*unused=*/true), " {");
      p->Indent();
      if (async) {
        const std::string value = result == "::trpc::Future<>" ? "" : m["rsp"];
        PrintList(p, 2, "return ::trpc::MakeExceptionFuture<" + value + ">(::trpc::Status", status,
                  ");");
      } else {
        PrintList(p, 2, "return ::trpc::Status", status, ";");
      }
      p->Outdent();
      p->Print("}\n");
      continue;
    }
    if (async) {
      PrintList(p, 0, "::trpc::Future<" + m["rsp"] + "> " + cls + "::" + m["method"],
                AsyncHandlerParams(m, /*unused=*/true), " {");
      p->Print(m, "  return ::trpc::MakeExceptionFuture<$rsp$>(\n");
      p->Indent();
      p->Indent();
      p->Indent();
      PrintList(p, 6, "::trpc::Status", status, ");");
      p->Outdent();
      p->Outdent();
      p->Outdent();
    } else {
      PrintList(p, 0, "::trpc::Status " + cls + "::" + m["method"],
                SyncHandlerParams(m, /*unused=*/true), " {");
      p->Indent();
      PrintList(p, 2, "return ::trpc::Status", status, ";");
      p->Outdent();
    }
    p->Print("}\n");
  }
}

void PrintProxyClassDefs(Printer* p, const pb::ServiceDescriptor* service) {
  const std::string cls = service->name() + "ServiceProxy";
  for (int i = 0; i < service->method_count(); ++i) {
    const pb::MethodDescriptor* method = service->method(i);
    if (Skipped(method)) continue;
    Vars m = MethodVars(method);
    if (IsStreaming(method)) {
      const bool in = method->client_streaming(), out = method->server_streaming();
      const char* kind = !in ? "ClientReader" : !out ? "ClientWriter" : "ClientReaderWriter";
      const char* arg = !in ? "reader" : !out ? "writer" : "stream";
      const std::string type = std::string("::trpc::stream::") + kind + "<" +
                               (!in ? m["rsp"] : m["req"] + ", " + m["rsp"]) + ">";
      p->Print("\n");
      PrintList(p, 0, "::trpc::Status " + cls + "::" + m["method"], ProxyStreamParams(method, m),
                " {");
      p->Print(m,
               "  context->SetFuncName(\"$wire$\");\n"
               "  ::trpc::stream::ClientStream opened;\n"
               "  ::trpc::Status status = ::trpc::ServiceProxy::OpenStream(context, &opened);\n"
               "  if (!status.OK()) return status;\n");
      if (!in) {
        p->Print(
            "  status = opened.Write(request);\n"
            "  if (status.OK()) status = opened.WritesDone();\n"
            "  if (!status.OK()) {\n"
            "    opened.Cancel();\n"
            "    return status;\n"
            "  }\n");
      }
      p->Print(
          "  *$arg$ = $type$(std::move(opened));\n"
          "  return status;\n"
          "}\n",
          "arg", arg, "type", type);
      continue;
    }
    p->Print("\n");
    PrintList(p, 0, "::trpc::Status " + cls + "::" + m["method"], ProxyParams(m, true), " {");
    p->Print(m,
             "  context->SetFuncName(\"$wire$\");\n"
             "  // A refusal (merge worker) names the asynchronous method to call instead.\n"
             "  return ::trpc::ServiceProxy::UnaryInvoke(context, request, response,\n"
             "                                           \"$proxy$::Async$method$\");\n"
             "}\n\n");
    PrintList(p, 0, "::trpc::Future<" + m["rsp"] + "> " + cls + "::Async" + m["method"],
              ProxyParams(m, false), " {");
    p->Print(m, "  context->SetFuncName(\"$wire$\");\n");
    p->Indent();
    PrintList(p, 2, "return ::trpc::ServiceProxy::AsyncUnaryInvoke<" + m["rsp"] + ">",
              {"context", "request"}, ";");
    p->Outdent();
    p->Print("}\n\n");
    PrintList(p, 0, "::trpc::Status " + cls + "::" + m["method"], ProxyParams(m, false), " {");
    p->Print(m,
             "  context->SetFuncName(\"$wire$\");\n"
             "  return ::trpc::ServiceProxy::OnewayInvoke(context, request);\n"
             "}\n");
  }
}

// The name protoc's C++ generator gives a file's descriptor table in its .pb.h:
// "descriptor_table_" and the file name with every byte but letters and digits as _<hex>.
std::string DescriptorTableName(const pb::FileDescriptor* file) {
  std::string out = "descriptor_table_";
  for (unsigned char c : file->name()) {
    if (std::isalnum(c)) {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "_%x", c);
      out += hex;
    }
  }
  return out;
}

void PrintSource(Printer* p, const pb::FileDescriptor* file) {
  const std::string ns = Namespace(file);
  Vars vars = {{"proto", file->name()},
               {"basename", Basename(file)},
               {"ns", ns},
               {"table", DescriptorTableName(file)}};
  p->Print(vars,
           "// Generated by protoc-gen-trpc from $proto$. Do not edit.\n"
           "#include \"$basename$.trpc.pb.h\"\n");
  if (file->service_count() == 0) return;
  p->Print("\n#include <utility>\n");
  // A .proto of services only compiles to a .pb.o that nothing refers to, which the linker
  // leaves out of a program linked from a static library: its descriptors (the services) would
  // then be missing from protobuf's generated pool, where server reflection looks them up.
  // (A lite file has no descriptors, nor the table.)
  if (file->options().optimize_for() != pb::FileOptions::LITE_RUNTIME) {
    p->Print(vars,
             "\n// Keeps $proto$'s descriptors in the program (for server reflection).\n"
             "[[gnu::used]] static const void* const trpc_keep_$table$ = &::$table$;\n");
  }
  if (!ns.empty()) p->Print(vars, "\nnamespace $ns$ {\n");
  for (int i = 0; i < file->service_count(); ++i) {
    const pb::ServiceDescriptor* service = file->service(i);
    p->Print("\n// $name$\n", "name", service->full_name());
    PrintServerClassDefs(p, service, /*async=*/false);
    PrintServerClassDefs(p, service, /*async=*/true);
    PrintProxyClassDefs(p, service);
  }
  if (!ns.empty()) p->Print(vars, "\n}  // namespace $ns$\n");
}

}  // namespace

bool TrpcGenerator::Generate(const pb::FileDescriptor* file, const std::string& parameter,
                             pb::compiler::GeneratorContext* context, std::string* error) const {
  // Options come comma-separated (protoc joins --trpc_opt values with ',').
  g_skip_streaming = false;
  for (size_t start = 0; start < parameter.size();) {
    size_t end = std::min(parameter.find(',', start), parameter.size());
    std::string option = parameter.substr(start, end - start);
    if (option.empty()) {
      // "a,,b" or a trailing comma: nothing to set.
    } else if (option == "skip_streaming") {
      g_skip_streaming = true;
    } else {
      *error = "protoc-gen-trpc: unknown option '" + option + "' (known: skip_streaming)";
      return false;
    }
    start = end + 1;
  }
  if (!Check(file, error)) return false;
  {
    std::unique_ptr<pb::io::ZeroCopyOutputStream> out(context->Open(Basename(file) + ".trpc.pb.h"));
    Printer printer(out.get(), '$');
    PrintHeader(&printer, file);
    if (printer.failed()) {
      *error = "cannot write " + Basename(file) + ".trpc.pb.h";
      return false;
    }
  }
  std::unique_ptr<pb::io::ZeroCopyOutputStream> out(context->Open(Basename(file) + ".trpc.pb.cc"));
  Printer printer(out.get(), '$');
  PrintSource(&printer, file);
  if (printer.failed()) {
    *error = "cannot write " + Basename(file) + ".trpc.pb.cc";
    return false;
  }
  return true;
}

}  // namespace trpc::tools
