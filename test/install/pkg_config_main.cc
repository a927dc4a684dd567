// Built with nothing but `pkg-config --cflags --libs trpc`: links (the protocol plug-in inside
// --whole-archive, so it registers itself) and runs. Exit status 0 when the trpc codec is there.

#include <cstdio>

#include "trpc/codec/detail/codec.h"
#include "trpc/future/future.h"

int main() {
  if (trpc::CodecRegistry::Instance().GetServer("trpc") == nullptr ||
      trpc::CodecRegistry::Instance().GetClient("trpc") == nullptr) {
    std::fprintf(stderr, "pkg_config_main: the trpc codec is not registered\n");
    return 1;
  }
  trpc::Future<int> f = trpc::MakeReadyFuture(42);  // something of the libraries' templates
  if (f.GetValue() != 42) return 1;
  std::printf("pkg_config_main: linked with pkg-config, the trpc codec registered itself\n");
  return 0;
}
