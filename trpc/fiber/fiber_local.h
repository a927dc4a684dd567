#pragma once

#include <memory>

#include "trpc/fiber/detail/local_table.h"

namespace trpc::fiber {

/// Per-fiber storage: each fiber that calls get() sees its own T, default-constructed on its
/// first access and destroyed when that fiber finishes (before its joiners are woken). On a
/// plain thread — or on a worker thread outside any fiber — the value is per thread instead,
/// destroyed at thread exit. Values follow their fiber across workers.
///
/// Typically a static or a long-lived member. A FiberLocal must outlive every get() on it;
/// values it leaves in fibers still running are destroyed when those fibers finish (or when a
/// new FiberLocal reuses its slot), not when it is destroyed.
///
/// Thread contract: get() is safe from any fiber or thread and touches only the caller's own
/// storage, so no synchronisation is involved (and no ordering is implied between fibers).
template <typename T>
class FiberLocal {
 public:
  FiberLocal() : key_(detail::AllocateLocalKey()) {}
  ~FiberLocal() { detail::FreeLocalKey(key_); }
  FiberLocal(const FiberLocal&) = delete;
  FiberLocal& operator=(const FiberLocal&) = delete;

  /// The calling fiber's (or thread's) value, created on first access.
  T* get() {
    detail::LocalTable* table = detail::CurrentLocalTable();
    if (void* v = table->Get(key_)) return static_cast<T*>(v);
    return Create(table);
  }
  T* operator->() { return get(); }
  T& operator*() { return *get(); }

 private:
  T* Create(detail::LocalTable* table) {
    auto value = std::make_unique<T>();
    T* raw = value.get();
    table->Set(key_, raw, [](void* p) { delete static_cast<T*>(p); });
    value.release();
    return raw;
  }

  const detail::LocalKey key_;
};

}  // namespace trpc::fiber
