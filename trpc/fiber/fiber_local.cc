#include "trpc/fiber/fiber_local.h"

#include <mutex>

#include "trpc/base/logging.h"
#include "trpc/fiber/detail/fiber_entity.h"

namespace trpc::fiber::detail {

namespace {

constexpr int kDestroyRounds = 4;

struct KeyRegistry {
  std::mutex mu;
  std::vector<size_t> free_indices;  // guarded by mu
  size_t next_index = 0;             // guarded by mu
  uint64_t next_owner = 1;           // guarded by mu
};

// Never destroyed: static FiberLocals free their keys during exit, in any order.
KeyRegistry& Registry() {
  static auto* registry = new KeyRegistry;
  return *registry;
}

void DestroyTable(void* table) { delete static_cast<LocalTable*>(table); }

}  // namespace

LocalKey AllocateLocalKey() {
  KeyRegistry& r = Registry();
  std::lock_guard lock(r.mu);
  LocalKey key;
  key.owner = r.next_owner++;
  if (!r.free_indices.empty()) {
    key.index = r.free_indices.back();
    r.free_indices.pop_back();
  } else {
    key.index = r.next_index++;
  }
  return key;
}

void FreeLocalKey(LocalKey key) {
  KeyRegistry& r = Registry();
  std::lock_guard lock(r.mu);
  r.free_indices.push_back(key.index);
}

void LocalTable::Set(LocalKey key, void* value, void (*destroy)(void*)) {
  if (key.index >= slots_.size()) slots_.resize(key.index + 1);
  Slot old = slots_[key.index];
  slots_[key.index] = Slot{key.owner, value, destroy};
  if (old.value != nullptr) old.destroy(old.value);  // left by a destroyed FiberLocal
}

void LocalTable::DestroyAll() {
  for (int round = 0; round < kDestroyRounds; ++round) {
    bool any = false;
    // By index, re-reading the vector: a destructor may grow it.
    for (size_t i = 0; i < slots_.size(); ++i) {
      Slot s = slots_[i];
      if (s.value == nullptr) continue;
      slots_[i] = Slot{};
      s.destroy(s.value);
      any = true;
    }
    if (!any) return;
  }
  size_t left = 0;
  for (const Slot& s : slots_) left += s.value != nullptr;
  if (left > 0) {
    TRPC_LOG_WARN("{} fiber-local values leaked: their destructors kept creating fiber-locals",
                  left);
  }
}

LocalTable* CurrentLocalTable() {
  FiberEntity* f = CurrentFiber();
  if (f == nullptr) {
    thread_local LocalTable thread_table;
    return &thread_table;
  }
  if (f->locals == nullptr) {
    f->locals = new LocalTable;
    f->destroy_locals = &DestroyTable;
  }
  return static_cast<LocalTable*>(f->locals);
}

}  // namespace trpc::fiber::detail
