#pragma once

namespace trpc {

/// Forward declarations, for headers that only name the types (e.g. a generated client proxy's
/// `Future<Rsp> AsyncMethod(...)`). The definitions are in "trpc/future/future.h".
/// `Future<>` and `Promise<>` are the void forms: completion without a value.
template <typename T = void>
class Future;
template <typename T = void>
class Promise;

}  // namespace trpc
