#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trpc::fiber::detail {

/// What identifies a FiberLocal: a slot index, reused after the FiberLocal is destroyed, and an
/// owner id, never reused, so a value a dead FiberLocal left in a slot is never mistaken for a
/// new one's.
struct LocalKey {
  size_t index = 0;
  uint64_t owner = 0;
};

LocalKey AllocateLocalKey();
void FreeLocalKey(LocalKey key);

/// One fiber's (or plain thread's) FiberLocal values, indexed by LocalKey::index. Not
/// synchronised: only its fiber (or thread) touches it.
class LocalTable {
 public:
  LocalTable() = default;
  ~LocalTable() { DestroyAll(); }
  LocalTable(const LocalTable&) = delete;
  LocalTable& operator=(const LocalTable&) = delete;

  /// The value stored for `key`, or null.
  void* Get(LocalKey key) const {
    if (key.index < slots_.size() && slots_[key.index].owner == key.owner) {
      return slots_[key.index].value;
    }
    return nullptr;
  }
  /// Stores `value` (freed with `destroy`) for `key`; a stale value in the slot is destroyed.
  void Set(LocalKey key, void* value, void (*destroy)(void*));
  /// Destroys every value. A destructor may touch fiber-locals again, so this repeats a few
  /// rounds, as pthread keys do (PTHREAD_DESTRUCTOR_ITERATIONS).
  void DestroyAll();

 private:
  struct Slot {
    uint64_t owner = 0;  // 0: empty
    void* value = nullptr;
    void (*destroy)(void*) = nullptr;
  };
  std::vector<Slot> slots_;
};

/// The calling fiber's table, created on first use and destroyed when the fiber finishes; on a
/// plain thread (or a worker outside any fiber), the thread's own, destroyed at thread exit.
LocalTable* CurrentLocalTable();

}  // namespace trpc::fiber::detail
