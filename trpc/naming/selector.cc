#include "trpc/naming/selector.h"

namespace trpc {

namespace {

// "direct": the target is the fixed list itself; one update, at once, never another.
class DirectSelector final : public Selector {
 public:
  std::string_view Name() const override { return "direct"; }
  bool Init(const PluginOptions& options, std::string* err) override {
    if (!options.values.empty()) {
      *err = options.At(options.values.begin()->first) +
             "plugins.selector.direct: takes no settings, got '" + options.values.begin()->first +
             "'";
      return false;
    }
    return true;
  }
  std::unique_ptr<SelectorSubscription> Subscribe(const SelectorTarget& target, uint32_t,
                                                  OnUpdate on_update, std::string* err) override {
    std::vector<NetAddress> addrs;
    std::string bad;
    std::string where = target.origin.empty() ? "" : target.origin + ": ";
    if (!NetAddress::ParseList(target.target, &addrs, &bad)) {
      *err = where + "client " + target.service + ": bad target '" + bad +
             "' (the direct selector takes ip:port[,ip:port...])";
      return nullptr;
    }
    if (addrs.empty()) {
      *err = where + "client " + target.service + ": no target";
      return nullptr;
    }
    std::vector<Endpoint> list;
    for (const NetAddress& a : addrs) list.push_back(Endpoint{a, 100, {}});
    on_update(std::move(list));
    return std::make_unique<SelectorSubscription>();
  }
};

}  // namespace

template <>
PluginTable<Selector>& PluginFactory<Selector>::Table() {
  static auto* table = [] {
    auto* t = new PluginTable<Selector>("selector");
    t->Register("direct", [] { return std::make_unique<DirectSelector>(); });
    return t;
  }();
  return *table;
}

}  // namespace trpc
