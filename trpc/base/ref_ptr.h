#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace trpc {

struct AdoptRef {};
/// Tag: RefPtr(p, kAdoptRef) takes over a reference the caller already holds (no increment).
inline constexpr AdoptRef kAdoptRef{};

/// An intrusive reference count: derive `class T : public RefCounted<T>`. A new object starts
/// with one reference, which the first RefPtr adopts (MakeRef()).
///
/// Memory ordering: taking a reference is relaxed (the taker already holds one, so the object
/// cannot go away meanwhile). Dropping one is acquire-release: every write made through any
/// reference happens before the destructor, which runs after the drop that reaches zero.
template <typename T>
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;

  void AddRef() const { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release() const {
    // acq_rel rather than release plus an acquire fence on the last drop: the same code on x86
    // (one locked instruction), and ThreadSanitizer models it (it does not model fences).
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // A class may decide where it is freed (a static FreeLastRef(const T*), e.g. on the
      // thread that owns lists it is linked in); by default it is deleted here.
      if constexpr (requires(const T* p) { T::FreeLastRef(p); }) {
        T::FreeLastRef(static_cast<const T*>(this));
      } else {
        delete static_cast<const T*>(this);
      }
    }
  }
  /// The current count; for tests and assertions only (another thread may change it).
  uint32_t UseCount() const { return refs_.load(std::memory_order_relaxed); }

 protected:
  ~RefCounted() = default;

 private:
  mutable std::atomic<uint32_t> refs_{1};
};

/// A smart pointer over a RefCounted object: the shape of std::shared_ptr where handlers use it
/// (copy, move, ->, *, get(), bool, comparison with nullptr), one word wide.
template <typename T>
class RefPtr {
 public:
  RefPtr() = default;
  RefPtr(std::nullptr_t) {}  // NOLINT: implicit, as shared_ptr's
  /// Takes a new reference to `p`.
  explicit RefPtr(T* p) : p_(p) {
    if (p_ != nullptr) p_->AddRef();
  }
  /// Adopts a reference the caller holds.
  RefPtr(T* p, AdoptRef) : p_(p) {}
  RefPtr(const RefPtr& o) : p_(o.p_) {
    if (p_ != nullptr) p_->AddRef();
  }
  RefPtr(RefPtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  ~RefPtr() {
    if (p_ != nullptr) p_->Release();
  }
  RefPtr& operator=(RefPtr o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  /// Gives up the reference without dropping it; the caller owns it now (adopt it back with
  /// RefPtr(p, kAdoptRef)).
  [[nodiscard]] T* release() { return std::exchange(p_, nullptr); }
  void reset() { RefPtr().swap(*this); }
  void swap(RefPtr& o) noexcept { std::swap(p_, o.p_); }

  friend bool operator==(const RefPtr& a, const RefPtr& b) { return a.p_ == b.p_; }
  friend bool operator==(const RefPtr& a, std::nullptr_t) { return a.p_ == nullptr; }

 private:
  T* p_ = nullptr;
};

/// Allocates a T and adopts its first reference.
template <typename T, typename... Args>
RefPtr<T> MakeRef(Args&&... args) {
  return RefPtr<T>(new T(std::forward<Args>(args)...), kAdoptRef);
}

}  // namespace trpc
