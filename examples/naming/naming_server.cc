// naming_server --config FILE [--instance LABEL]: serves trpc.test.helloworld.Greeter and, with
// `server.registry_name: etcd`, registers it in etcd while it runs (docs/naming.md). Each reply
// says which instance answered: "Hello, <msg> from <LABEL> (weight <w>)", LABEL being the
// service's bound ip:port (the kernel's pick with `port: 0`) unless --instance gives one.
// SIGINT or SIGTERM stops it gracefully: it deregisters first, keeps serving for
// server.deregister_wait, then stops.

#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"

namespace {

constexpr char kGreeter[] = "trpc.test.helloworld.Greeter";

// Handlers run on the workers while main() may still set the label: a mutex guards it.
class GreeterImpl final : public trpc::test::helloworld::Greeter {
 public:
  GreeterImpl(std::string label, uint32_t weight) : label_(std::move(label)), weight_(weight) {}

  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    std::string label;
    {
      std::lock_guard lock(mu_);
      label = label_;
    }
    rsp->set_msg("Hello, " + req->msg() + " from " + label + " (weight " + std::to_string(weight_) +
                 ")");
    return trpc::kSuccStatus;
  }

  void SetLabel(std::string label) {
    std::lock_guard lock(mu_);
    label_ = std::move(label);
  }

 private:
  std::mutex mu_;
  std::string label_;  // guarded by mu_
  const uint32_t weight_;
};

class NamingServer final : public trpc::TrpcApp {
 public:
  explicit NamingServer(std::string label) : label_(std::move(label)) {}

  // After Main(): without --instance, replies name the address the service is bound to (the
  // port the kernel picked, with `port: 0`); then says it is ready.
  void Ready() {
    std::string label = label_;
    trpc::NetAddress addr;
    if (label.empty() && GetServer()->GetAddress(kGreeter, &addr)) label = addr.ToString();
    greeter_->SetLabel(label);
    std::printf("naming_server %s: weight %u, registry '%s'\nnaming_server ready\n", label.c_str(),
                weight_, GetConfig().server.registry_name.c_str());
    std::fflush(stdout);
  }

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
    weight_ = entry->weight;
    // Until Ready(), replies name the configured address.
    bool v6 = entry->ip.find(':') != std::string::npos;
    std::string configured =
        (v6 ? "[" + entry->ip + "]" : entry->ip) + ":" + std::to_string(entry->port);
    greeter_ = std::make_shared<GreeterImpl>(label_.empty() ? configured : label_, weight_);
    return RegisterService(kGreeter, greeter_) ? 0 : 1;
  }

 private:
  const std::string label_;
  uint32_t weight_ = 0;
  std::shared_ptr<GreeterImpl> greeter_;
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
  app.Ready();
  app.Wait();
  std::printf("naming_server stopped\n");
  return 0;
}
