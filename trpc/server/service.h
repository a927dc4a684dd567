#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trpc/server/rpc_method_handler.h"
#include "trpc/server/server_context.h"
#include "trpc/server/stream_method_handler.h"

namespace trpc {

class ServerContext;

/// A service: a table of method handlers keyed by their wire name "/package.Service/Method".
/// Generated service classes derive from it and register their methods in the constructor.
/// Thread contract: register methods before the server starts; lookups are then safe from any
/// thread.
class Service {
 public:
  virtual ~Service() = default;

  void AddRpcServiceMethod(std::string func, std::unique_ptr<RpcMethodHandler> handler);
  /// Convenience: register a unary protobuf method from a function.
  template <typename Req, typename Rsp>
  void AddUnaryMethod(std::string func, typename UnaryRpcMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(std::move(func),
                        std::make_unique<UnaryRpcMethodHandler<Req, Rsp>>(std::move(fn)));
  }

  /// Convenience: register a unary method whose handler returns Future<Rsp>.
  template <typename Req, typename Rsp>
  void AddAsyncUnaryMethod(std::string func,
                           typename AsyncUnaryRpcMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(std::move(func),
                        std::make_unique<AsyncUnaryRpcMethodHandler<Req, Rsp>>(std::move(fn)));
  }

  /// Convenience: register a streaming method (server, client or bidirectional streaming).
  template <typename Req, typename Rsp>
  void AddServerStreamMethod(std::string func,
                             typename ServerStreamingMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(std::move(func),
                        std::make_unique<ServerStreamingMethodHandler<Req, Rsp>>(std::move(fn)));
  }
  template <typename Req, typename Rsp>
  void AddClientStreamMethod(std::string func,
                             typename ClientStreamingMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(std::move(func),
                        std::make_unique<ClientStreamingMethodHandler<Req, Rsp>>(std::move(fn)));
  }
  template <typename Req, typename Rsp>
  void AddBidiStreamMethod(std::string func,
                           typename BidiStreamingMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(std::move(func),
                        std::make_unique<BidiStreamingMethodHandler<Req, Rsp>>(std::move(fn)));
  }

  /// The same, non-blocking (they run in either model; the merged model serves only these).
  template <typename Req, typename Rsp>
  void AddAsyncServerStreamMethod(
      std::string func, typename AsyncServerStreamingMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(
        std::move(func),
        std::make_unique<AsyncServerStreamingMethodHandler<Req, Rsp>>(std::move(fn)));
  }
  template <typename Req, typename Rsp>
  void AddAsyncClientStreamMethod(
      std::string func, typename AsyncClientStreamingMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(
        std::move(func),
        std::make_unique<AsyncClientStreamingMethodHandler<Req, Rsp>>(std::move(fn)));
  }
  template <typename Req, typename Rsp>
  void AddAsyncBidiStreamMethod(std::string func,
                                typename AsyncBidiStreamingMethodHandler<Req, Rsp>::Function fn) {
    AddRpcServiceMethod(std::move(func),
                        std::make_unique<AsyncBidiStreamingMethodHandler<Req, Rsp>>(std::move(fn)));
  }

  /// The handler for `func`, or null.
  RpcMethodHandler* FindMethod(std::string_view func) const;

  /// Picks the handler for the request in `ctx`; null means "no such function" (ret 12). The
  /// default looks GetFuncName() up in the method table. Protocol-specific services (HTTP
  /// routes with path parameters and 405s) override it; they may record what they matched in
  /// the request's protocol part.
  virtual RpcMethodHandler* Route(ServerContext& ctx) const;
  /// True when Route() answers only the funcs of the method table (ForEachMethod), so that a
  /// protocol may refuse any other at once, before the request's body (gRPC answers an unknown
  /// method UNIMPLEMENTED on its headers). A Route() override that answers other funcs returns
  /// false.
  virtual bool RoutesOnlyItsMethods() const { return true; }

  using MethodVisitor = std::function<void(const std::string& name, const RpcMethodHandler*)>;
  /// Calls `fn` for every handler Route() can return as a method of this service, with the name
  /// its statistics are kept under (the server's per-method metrics): the default gives the
  /// method table in name order. A handler not listed is counted as method "unknown".
  virtual void ForEachMethod(const MethodVisitor& fn) const;

 protected:
  /// The decoded request of `ctx`, for Route() overrides (a protocol's own part included).
  static RpcRequest& Request(ServerContext& ctx);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<RpcMethodHandler>, Hash, std::equal_to<>>
      methods_;
  // The same table as a flat list while it is small (empty otherwise): a per-request lookup
  // among a few names is cheaper by comparing them than by hashing a 30-40 byte name
  // (docs/benchmark.md has the measurement).
  struct MethodEntry {
    std::string_view name;  // a key of methods_
    RpcMethodHandler* handler;
  };
  static constexpr size_t kSmallTableMax = 16;
  std::vector<MethodEntry> small_table_;
};

using ServicePtr = std::shared_ptr<Service>;

}  // namespace trpc
