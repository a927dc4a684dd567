// naming_client --config FILE [--count N] [--interval-ms MS] [--expect-instances K]
//               [--hash-keys KEY,KEY,...] [--hash-repeat R]
//
// Finds trpc.test.helloworld.Greeter through the selector of its `client.service[]` entry (etcd
// in client.yaml, docs/naming.md), calls SayHello N times (MS apart) and prints how many calls
// each instance answered. With --hash-keys it then calls R times per key through the entry
// `greeter_by_key` (load_balance_name: consistent_hash) with ClientContext::SetHashKey(key), and
// checks that every call of a key went to the same instance. Exits non-zero if a call failed,
// if a key moved, or if the number of instances that answered is not K (when given).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/run_in_trpc_runtime.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"

namespace {

using trpc::test::helloworld::GreeterServiceProxy;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

constexpr char kByWeight[] = "trpc.test.helloworld.Greeter";
constexpr char kByKey[] = "greeter_by_key";

struct Options {
  int count = 30;
  int interval_ms = 0;
  int expect_instances = 0;  // 0 = do not check
  std::vector<std::string> hash_keys;
  int hash_repeat = 5;
};

// "Hello, <msg> from <instance> (weight <w>)" -> "<instance> (weight <w>)".
std::string InstanceOf(const std::string& reply) {
  static constexpr std::string_view kFrom = " from ";
  size_t at = reply.rfind(kFrom);
  return at == std::string::npos ? "?" : reply.substr(at + kFrom.size());
}

std::shared_ptr<GreeterServiceProxy> MakeProxy(const std::string& name) {
  std::string err;
  auto proxy = trpc::GetTrpcClient()->GetProxy<GreeterServiceProxy>(name, &err);
  if (!proxy) std::fprintf(stderr, "proxy %s: %s\n", name.c_str(), err.c_str());
  return proxy;
}

// One SayHello; the instance that answered in *instance. False (and prints why) on failure.
bool Call(GreeterServiceProxy& proxy, const std::string& msg, const std::string* hash_key,
          std::string* instance) {
  auto ctx = trpc::MakeClientContext();
  if (hash_key != nullptr) ctx->SetHashKey(*hash_key);
  HelloRequest req;
  req.set_msg(msg);
  HelloReply rsp;
  trpc::Status st = proxy.SayHello(ctx, req, &rsp);
  if (!st.OK()) {
    std::fprintf(stderr, "call '%s' failed: %s\n", msg.c_str(), st.ToString().c_str());
    return false;
  }
  *instance = InstanceOf(rsp.msg());
  return true;
}

// The weighted spread: N calls through the weighted_round_robin entry.
int SpreadByWeight(const Options& opt) {
  auto proxy = MakeProxy(kByWeight);
  if (!proxy) return 1;
  std::map<std::string, int> answered;
  int failures = 0;
  for (int i = 0; i < opt.count; ++i) {
    std::string instance;
    if (Call(*proxy, "call " + std::to_string(i), nullptr, &instance)) {
      ++answered[instance];
    } else {
      ++failures;
    }
    if (opt.interval_ms > 0) {
      trpc::fiber::this_fiber::SleepFor(std::chrono::milliseconds(opt.interval_ms));
    }
  }
  std::printf("%d calls through %s (weighted_round_robin): %d failed\n", opt.count, kByWeight,
              failures);
  for (const auto& [instance, n] : answered) {
    std::printf("  %-32s %4d calls  %s\n", instance.c_str(), n,
                std::string(static_cast<size_t>(n * 40 / opt.count), '#').c_str());
  }
  if (opt.expect_instances > 0 && static_cast<int>(answered.size()) != opt.expect_instances) {
    std::fprintf(stderr, "expected %d instances to answer, %zu did\n", opt.expect_instances,
                 answered.size());
    return 1;
  }
  return failures == 0 ? 0 : 1;
}

// The consistent-hash demo: every call of one key goes to one instance.
int SameKeySameInstance(const Options& opt) {
  auto proxy = MakeProxy(kByKey);
  if (!proxy) return 1;
  std::printf("%d calls per key through %s (consistent_hash, SetHashKey):\n", opt.hash_repeat,
              kByKey);
  int rc = 0;
  for (const auto& key : opt.hash_keys) {
    std::set<std::string> instances;
    int ok = 0;
    for (int i = 0; i < opt.hash_repeat; ++i) {
      std::string instance;
      if (Call(*proxy, key, &key, &instance)) {
        instances.insert(instance);
        ++ok;
      }
    }
    if (ok != opt.hash_repeat || instances.size() != 1) {
      std::printf("  key %-10s -> %zu instances, %d/%d calls ok  MOVED OR FAILED\n", key.c_str(),
                  instances.size(), ok, opt.hash_repeat);
      rc = 1;
    } else {
      std::printf("  key %-10s -> %s every time\n", key.c_str(), instances.begin()->c_str());
    }
  }
  return rc;
}

std::vector<std::string> SplitCommas(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  Options opt;
  bool usage_error = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--config" && has_value) {
      config_path = argv[++i];
    } else if (arg == "--count" && has_value) {
      opt.count = std::atoi(argv[++i]);
    } else if (arg == "--interval-ms" && has_value) {
      opt.interval_ms = std::atoi(argv[++i]);
    } else if (arg == "--expect-instances" && has_value) {
      opt.expect_instances = std::atoi(argv[++i]);
    } else if (arg == "--hash-keys" && has_value) {
      opt.hash_keys = SplitCommas(argv[++i]);
    } else if (arg == "--hash-repeat" && has_value) {
      opt.hash_repeat = std::atoi(argv[++i]);
    } else {
      usage_error = true;
    }
  }
  if (usage_error || config_path.empty() || opt.count < 1 || opt.interval_ms < 0 ||
      opt.hash_repeat < 1) {
    std::fprintf(stderr,
                 "usage: %s --config FILE [--count N] [--interval-ms MS] [--expect-instances K]"
                 " [--hash-keys KEY,KEY,...] [--hash-repeat R]\n",
                 argv[0]);
    return 2;
  }
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfig(config_path, &config, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return trpc::RunInTrpcRuntime(config, [&] {
    int rc = SpreadByWeight(opt);
    if (!opt.hash_keys.empty() && SameKeySameInstance(opt) != 0) rc = 1;
    return rc;
  });
}
