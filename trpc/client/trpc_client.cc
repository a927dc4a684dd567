#include "trpc/client/trpc_client.h"

#include <atomic>

namespace trpc {

namespace {
std::mutex g_client_mu;
std::shared_ptr<TrpcClient> g_client;      // owner, under g_client_mu
std::atomic<TrpcClient*> g_client_raw{nullptr};  // lock-free reads
}  // namespace

TrpcClient* GetTrpcClient() { return g_client_raw.load(std::memory_order_acquire); }

std::shared_ptr<TrpcClient> SetTrpcClient(std::shared_ptr<TrpcClient> client) {
  std::lock_guard lock(g_client_mu);
  g_client_raw.store(client.get(), std::memory_order_release);
  std::swap(g_client, client);
  return client;
}

}  // namespace trpc
