#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/suggest.h"
#include "trpc/naming/plugin_options.h"

namespace trpc {

/// A process-wide table of naming plug-ins of one kind (selectors, registries) by name: makers
/// registered at start-up, one initialized instance per name made on first use with its
/// `plugins.<kind>.<name>` settings. `T` has Name(), Init(const PluginOptions&, std::string*)
/// and Stop(). Thread-safe (one mutex; nothing here is on a call's path).
template <typename T>
class PluginTable {
 public:
  using Maker = std::function<std::unique_ptr<T>()>;

  explicit PluginTable(const char* kind) : kind_(kind) {}

  void Register(std::string name, Maker make) {
    std::lock_guard lock(mu_);
    makers_[std::move(name)] = std::move(make);
  }
  void SetOptions(std::map<std::string, PluginOptions> options) {
    std::lock_guard lock(mu_);
    options_ = std::move(options);
  }
  std::shared_ptr<T> Get(std::string_view name, std::string* err) {
    std::lock_guard lock(mu_);
    if (auto it = instances_.find(name); it != instances_.end()) return it->second;
    auto maker = makers_.find(name);
    if (maker == makers_.end()) {
      std::vector<std::string> names;
      for (const auto& [n, m] : makers_) names.push_back(n);
      *err = std::string("no ") + kind_ + " named '" + std::string(name) + "' is registered" +
             RegisteredNamesHint(name, names);
      return nullptr;
    }
    std::shared_ptr<T> made = maker->second();
    PluginOptions none;
    auto opt = options_.find(std::string(name));
    if (!made->Init(opt == options_.end() ? none : opt->second, err)) return nullptr;
    instances_.emplace(std::string(name), made);
    return made;
  }
  std::vector<std::string> Names() {
    std::lock_guard lock(mu_);
    std::vector<std::string> names;
    for (const auto& [n, m] : makers_) names.push_back(n);
    return names;
  }
  void StopAll() {
    std::map<std::string, std::shared_ptr<T>, std::less<>> instances;
    {
      std::lock_guard lock(mu_);
      instances.swap(instances_);
    }
    for (auto& [n, p] : instances) p->Stop();
  }

 private:
  const char* kind_;
  std::mutex mu_;
  std::map<std::string, Maker, std::less<>> makers_;
  std::map<std::string, PluginOptions> options_;
  std::map<std::string, std::shared_ptr<T>, std::less<>> instances_;
};

/// One plug-in kind's process-wide table, as the static functions plug-ins and the app call:
/// `SelectorFactory` is `PluginFactory<Selector>` and `RegistryFactory` is
/// `PluginFactory<Registry>`. Each kind defines Table() once, in its own .cc (with its built-in
/// plug-ins registered there), and declares that specialization next to its alias.
template <typename T>
class PluginFactory {
 public:
  using Maker = typename PluginTable<T>::Maker;
  static void Register(std::string name, Maker make) {
    Table().Register(std::move(name), std::move(make));
  }
  /// The `plugins.<kind>` section (TrpcApp sets it from the config before anything uses one).
  static void SetOptions(std::map<std::string, PluginOptions> options) {
    Table().SetOptions(std::move(options));
  }
  /// The initialized plug-in `name`; null with `*err` when unknown or its Init failed.
  static std::shared_ptr<T> Get(std::string_view name, std::string* err) {
    return Table().Get(name, err);
  }
  static std::vector<std::string> Names() { return Table().Names(); }
  /// Stops and drops every instance made so far (TrpcApp at exit; tests).
  static void StopAll() { Table().StopAll(); }

 private:
  static PluginTable<T>& Table();
};

}  // namespace trpc
