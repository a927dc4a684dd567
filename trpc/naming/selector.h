#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/naming/plugin_options.h"
#include "trpc/naming/plugin_table.h"

namespace trpc {

/// One instance of a callee, as a selector reports it.
struct Endpoint {
  NetAddress addr;
  uint32_t weight = 100;                    // relative share for weighted balancers, >= 1
  std::map<std::string, std::string> meta;  // the registry's metadata, passed through

  bool operator==(const Endpoint& o) const {
    return addr.ToString() == o.addr.ToString() && weight == o.weight && meta == o.meta;
  }
};

/// What a client service asks a selector to follow.
struct SelectorTarget {
  std::string target;      // client.service[].target: meaning depends on the selector
  std::string name_space;  // client.service[].namespace
  std::string service;     // client.service[].name
  std::string origin;      // "file:line" of the entry, for errors
};

/// One subscription to a target's endpoints. Destroying it stops the updates: when the
/// destructor returns, the callback is not running and will not run again. So it must not be
/// destroyed from inside its own callback (the destructor would wait for itself).
class SelectorSubscription {
 public:
  virtual ~SelectorSubscription() = default;
};

/// Finds the endpoints of callees and follows their changes: a naming plug-in, one instance per
/// name per process (`client.service[].selector_name`; settings in `plugins.selector.<name>`).
/// Built in: "direct" (the target is a fixed list "ip:port[,ip:port...]"). The naming plug-ins
/// add "dns" and "etcd" (trpc/app/detail/naming_plugins.h).
///
/// Thread contract: Init once before any Subscribe; Subscribe and the subscriptions'
/// destructors from any thread; Stop once after every subscription is gone.
class Selector {
 public:
  /// The whole current list, each time it changes. Calls for one subscription never overlap
  /// and come in order; the list may be empty (every instance left). Runs on the plug-in's
  /// thread, or inside Subscribe for the first list: it must not block for long.
  using OnUpdate = std::function<void(std::vector<Endpoint>)>;

  virtual ~Selector() = default;
  virtual std::string_view Name() const = 0;
  /// `options` are `plugins.selector.<name>` (empty when the section is absent). False with
  /// "file:line: what is wrong" on a bad setting.
  virtual bool Init(const PluginOptions& options, std::string* err) = 0;
  /// Starts following `target`. False (with "file:line: ..." from target.origin) when the
  /// target cannot mean anything to this selector; a registry that is unreachable is not an
  /// error here (the subscription keeps trying and delivers the list when it can).
  ///
  /// `first_wait_ms`: how long Subscribe may block for the first list, so that calls made right
  /// after a proxy is created find endpoints.
  virtual std::unique_ptr<SelectorSubscription> Subscribe(const SelectorTarget& target,
                                                          uint32_t first_wait_ms,
                                                          OnUpdate on_update, std::string* err) = 0;
  virtual void Stop() {}
};

/// Selectors by name. The first Get of a name calls its maker and Init with the process's
/// `plugins.selector.<name>` (set through SetOptions; empty otherwise); later Gets return the
/// same instance. Thread-safe.
using SelectorFactory = PluginFactory<Selector>;
template <>
PluginTable<Selector>& PluginFactory<Selector>::Table();

}  // namespace trpc
