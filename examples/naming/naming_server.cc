// naming_server --config FILE [--instance LABEL]: serves trpc.test.helloworld.Greeter and, with
// `server.registry_name: etcd`, registers it in etcd while it runs (docs/naming.md). Each reply
// says which instance answered: "Hello, <msg> from <LABEL> (weight <w>)", LABEL being the
// service's ip:port from the config unless --instance gives one. SIGINT or SIGTERM stops it
// gracefully: it deregisters first, keeps serving for server.deregister_wait, then stops.

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"

namespace {

constexpr char kGreeter[] = "trpc.test.helloworld.Greeter";

class GreeterImpl final : public trpc::test::helloworld::Greeter {
 public:
  explicit GreeterImpl(std::string suffix) : suffix_(std::move(suffix)) {}

  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg() + suffix_);
    return trpc::kSuccStatus;
  }

 private:
  const std::string suffix_;  // " from <label> (weight <w>)"
};

class NamingServer final : public trpc::TrpcApp {
 public:
  explicit NamingServer(std::string label) : label_(std::move(label)) {}

 protected:
  int Initialize() override {
    const trpc::ServiceConfig* entry = nullptr;
    for (const auto& s : GetConfig().server.service) {
      if (s.name == kGreeter) entry = &s;
    }
    if (entry == nullptr) {
      std::fprintf(stderr, "%s: no server.service entry named %s\n", GetConfig().path.c_str(),
                   kGreeter);
      return 1;
    }
    std::string label = label_;
    if (label.empty()) {
      bool v6 = entry->ip.find(':') != std::string::npos;
      label = (v6 ? "[" + entry->ip + "]" : entry->ip) + ":" + std::to_string(entry->port);
    }
    std::printf("naming_server %s: weight %u, registry '%s'\n", label.c_str(), entry->weight,
                GetConfig().server.registry_name.c_str());
    std::fflush(stdout);
    auto greeter = std::make_shared<GreeterImpl>(" from " + label + " (weight " +
                                                 std::to_string(entry->weight) + ")");
    return RegisterService(kGreeter, greeter) ? 0 : 1;
  }

 private:
  const std::string label_;
};

}  // namespace

int main(int argc, char** argv) {
  // --instance is ours; everything else goes to TrpcApp::Main (--config FILE).
  std::string label;
  std::vector<char*> args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
      label = argv[++i];
    } else {
      args.push_back(argv[i]);
    }
  }
  args.push_back(nullptr);
  NamingServer app(label);
  if (int rc = app.Main(static_cast<int>(args.size()) - 1, args.data()); rc != 0) return rc;
  std::printf("naming_server ready\n");
  std::fflush(stdout);
  app.Wait();
  std::printf("naming_server stopped\n");
  return 0;
}
