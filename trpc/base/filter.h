#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "trpc/base/suggest.h"

// Filters (interceptors) run user code at fixed points of a call, on both sides. The shared
// vocabulary and the one filter interface live here; trpc/server/server_filter.h and
// trpc/client/client_filter.h name it for their context (MessageServerFilter,
// MessageClientFilter). The names follow tRPC-Cpp.

namespace trpc {

/// Where a filter runs. Client points, in call order: PRE_RPC_INVOKE (the call starts),
/// PRE_SEND_MSG (just before the request is encoded: the last chance to add trans_info),
/// POST_RECV_MSG (a reply arrived and was decoded), POST_RPC_INVOKE (the call ends, with its
/// status, whatever happened). Server points: POST_RECV_MSG (the request was decoded, before it
/// is dispatched), PRE_RPC_INVOKE (just before the handler), POST_RPC_INVOKE (the handler has
/// produced its status), PRE_SEND_MSG (just before the reply is encoded).
enum class FilterPoint : int {
  CLIENT_PRE_RPC_INVOKE = 0,
  CLIENT_POST_RPC_INVOKE,
  CLIENT_PRE_SEND_MSG,
  CLIENT_POST_RECV_MSG,
  SERVER_POST_RECV_MSG,
  SERVER_PRE_SEND_MSG,
  SERVER_PRE_RPC_INVOKE,
  SERVER_POST_RPC_INVOKE,
};
inline constexpr size_t kFilterPointCount = 8;

/// A filter's verdict: go on, or stop the call (its status says why).
enum class FilterStatus { CONTINUE, REJECT };

/// True for the points of the unwinding half of a call, where filters run in reverse order, so
/// the first filter configured is the outermost layer on both the way in and the way out.
constexpr bool IsUnwindingPoint(FilterPoint p) {
  return p == FilterPoint::CLIENT_POST_RPC_INVOKE || p == FilterPoint::CLIENT_POST_RECV_MSG ||
         p == FilterPoint::SERVER_PRE_SEND_MSG || p == FilterPoint::SERVER_POST_RPC_INVOKE;
}

/// A filter of the calls whose context is `ContextPtr`: runs at the points it lists, on the thread
/// serving (server) or making or completing (client) the call. To reject a call, set a status on
/// the context (ctx->SetStatus(...)) and `status` to REJECT. A filter is shared by every call
/// that names it: operator() must be thread-safe. Users derive from its names for their side,
/// MessageServerFilter and MessageClientFilter, which say what a rejection does there.
template <typename ContextPtr>
class MessageFilter {
 public:
  virtual ~MessageFilter() = default;
  /// The name configs use (server.filter, client.filter, and the per-service lists).
  virtual std::string Name() const = 0;
  virtual std::vector<FilterPoint> GetFilterPoint() = 0;
  virtual void operator()(FilterStatus& status, FilterPoint point, const ContextPtr& context) = 0;
};

/// Per-call data of filters, kept in the call's context (ClientContext / ServerContext
/// SetFilterData, GetFilterData; tRPC-Cpp's names): a filter that starts something at one point
/// and ends it at another (a span, a timer) keeps it here. Keys are ids a filter takes once from
/// NewFilterDataId(). A handful of entries at most, so a vector, made when a filter first keeps
/// something. Not thread-safe: the context's thread contract applies.
class FilterData {
 public:
  void Set(uint32_t id, std::shared_ptr<void> value) {
    if (items_ == nullptr) items_ = std::make_unique<Items>();
    for (auto& [key, v] : *items_) {
      if (key == id) {
        v = std::move(value);
        return;
      }
    }
    items_->emplace_back(id, std::move(value));
  }
  void* Get(uint32_t id) const {
    if (items_ == nullptr) return nullptr;
    for (const auto& [key, v] : *items_) {
      if (key == id) return v.get();
    }
    return nullptr;
  }

 private:
  using Items = std::vector<std::pair<uint32_t, std::shared_ptr<void>>>;
  // One pointer in every context (contexts are allocated per call, and their size class
  // matters); the list only once a filter keeps something.
  std::unique_ptr<Items> items_;
};

/// A key for FilterData of its own (thread-safe; take it once, e.g. in the filter's constructor).
uint32_t NewFilterDataId();

namespace detail {

/// Filters registered by name (server filters and client filters each have one). Register at
/// start-up, before servers and proxies that name them start. Thread-safe.
template <typename Filter>
class FilterRegistry {
 public:
  static FilterRegistry& Instance() {
    static FilterRegistry registry;
    return registry;
  }
  /// False if a filter with the same Name() is already registered.
  bool Register(std::shared_ptr<Filter> filter) {
    std::lock_guard lock(mu_);
    std::string name = filter->Name();
    return filters_.emplace(std::move(name), std::move(filter)).second;
  }
  std::shared_ptr<Filter> Get(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = filters_.find(name);
    return it == filters_.end() ? nullptr : it->second;
  }
  /// The registered names, sorted.
  std::vector<std::string> Names() const {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    for (const auto& [name, filter] : filters_) names.push_back(name);
    return names;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Filter>> filters_;
};

/// The filters of one service or callee, indexed by point. Built once, then read-only: Run() is
/// safe from any thread. `ContextPtr` is what the filters receive (ServerContextPtr or
/// ClientContextPtr).
template <typename Filter, typename ContextPtr>
class FilterChain {
 public:
  /// Resolves `names` in the registry, in order. False (with the unknown name in `*missing`)
  /// if one is not registered.
  bool Build(const std::vector<std::string>& names, std::string* missing) {
    for (const std::string& name : names) {
      std::shared_ptr<Filter> f = FilterRegistry<Filter>::Instance().Get(name);
      if (f == nullptr) {
        *missing = name;
        return false;
      }
      for (FilterPoint p : f->GetFilterPoint()) {
        by_point_[static_cast<size_t>(p)].push_back(f.get());
      }
      owned_.push_back(std::move(f));
    }
    return true;
  }

  bool Empty() const { return owned_.empty(); }

  /// What to append to "no ... filter named 'name' is registered" (after a failed Build()):
  /// " (did you mean 'auth'? registered: auth, metrics)", or the list alone when no name is
  /// close, or " (none is registered)".
  static std::string UnknownNameHint(const std::string& name) {
    return RegisteredNamesHint(name, FilterRegistry<Filter>::Instance().Names());
  }

  /// Runs the filters registered for `point` (in reverse for unwinding points). Stops at the
  /// first REJECT and returns false with that filter's name in `*rejected_by`.
  bool Run(FilterPoint point, const ContextPtr& ctx, std::string* rejected_by) const {
    const std::vector<Filter*>& fs = by_point_[static_cast<size_t>(point)];
    if (fs.empty()) return true;
    auto run_one = [&](Filter* f) {
      FilterStatus status = FilterStatus::CONTINUE;
      (*f)(status, point, ctx);
      if (status == FilterStatus::REJECT) {
        *rejected_by = f->Name();
        return false;
      }
      return true;
    };
    if (IsUnwindingPoint(point)) {
      for (auto it = fs.rbegin(); it != fs.rend(); ++it) {
        if (!run_one(*it)) return false;
      }
    } else {
      for (Filter* f : fs) {
        if (!run_one(f)) return false;
      }
    }
    return true;
  }

 private:
  std::array<std::vector<Filter*>, kFilterPointCount> by_point_;
  std::vector<std::shared_ptr<Filter>> owned_;
};

}  // namespace detail
}  // namespace trpc
