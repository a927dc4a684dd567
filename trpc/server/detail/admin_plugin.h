#pragma once

#include <functional>
#include <string>

#include "trpc/server/service.h"

namespace trpc {
class Server;
}  // namespace trpc

namespace trpc::detail {

/// The seam between the server and its admin service. The admin service (trpc/codec/http/server/admin/)
/// is built on the HTTP plug-in, which itself sits on the server layer, so the server cannot
/// name it: the admin library registers a factory from a static initializer (the `trpc` target
/// links it whole, like the protocol plug-ins) and the server calls it when the admin port is on.
struct AdminEndpoint {
  ServicePtr service;
  std::string protocol;  // the codec it speaks
  /// Called on the control thread before the admin service stops: ends work of its own that
  /// would outlive it (a CPU profile in progress). May be empty.
  std::function<void()> before_stop;
};
using AdminFactory = AdminEndpoint (*)(Server* server);

/// Any thread; the last one set wins.
void SetAdminFactory(AdminFactory factory);
/// Null when no admin library is linked.
AdminFactory GetAdminFactory();

}  // namespace trpc::detail
