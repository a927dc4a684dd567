#include "trpc/client/detail/endpoint_set.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "trpc/base/logging.h"
#include "trpc/runtime/detail/thread_model.h"

namespace trpc::detail {

namespace {
// Alternatives asked of the picker before falling back to an ejected or already tried endpoint.
constexpr uint32_t kMaxPickAlternatives = 16;

bool Contains(const std::vector<BackendPtr>* tried, const Backend* b) {
  return tried != nullptr &&
         std::any_of(tried->begin(), tried->end(), [b](const auto& t) { return t.get() == b; });
}
}  // namespace

BackendPtr ChooseBackend(const BackendSet& set, const ClientContext& ctx,
                         const std::vector<BackendPtr>* tried, int64_t now) {
  PickInput in;
  in.hash_key = ctx.GetHashKey();
  in.has_hash_key = ctx.HasHashKey();
  const size_t n = set.backends.size();
  const uint32_t limit = static_cast<uint32_t>(std::min<size_t>(n + 1, kMaxPickAlternatives));
  size_t first = n;
  size_t untried = n;  // the first choice not tried yet, ejected or not
  for (in.attempt = 0; in.attempt < limit; ++in.attempt) {
    size_t i = set.picker->Pick(in);
    const Backend* b = set.backends[i].get();
    if (first == n) first = in.first_index = i;
    if (Contains(tried, b)) continue;
    if (untried == n) untried = i;
    if (b->Ejected(now)) continue;
    return set.backends[i];
  }
  // The picker's alternatives are all ejected or tried (p2c may offer the same pair each
  // time): look at every endpoint once, for one that is neither. Rare, so linear.
  if (tried != nullptr || untried != n) {
    for (size_t i = 0; i < n; ++i) {
      const Backend* b = set.backends[i].get();
      if (!Contains(tried, b) && !b->Ejected(now)) return set.backends[i];
    }
    if (tried != nullptr && untried == n) {
      for (size_t i = 0; i < n; ++i) {
        if (!Contains(tried, set.backends[i].get())) {
          untried = i;
          break;
        }
      }
    }
  }
  // Every endpoint is ejected or tried: an ejected endpoint beats failing the call.
  return set.backends[untried != n ? untried : first];
}

EndpointSet::EndpointSet(ThreadModel* model, std::string client_name, PickerMaker make_picker,
                         uint32_t conns_per_backend)
    : model_(model),
      client_name_(std::move(client_name)),
      make_picker_(std::move(make_picker)),
      conns_per_backend_(conns_per_backend),
      set_(std::make_shared<const BackendSet>()),
      copies_(model != nullptr ? model->ReactorCount() : 0) {}

void EndpointSet::Store(std::shared_ptr<const BackendSet> next) {
  {
    std::lock_guard lock(read_mu_);
    set_.swap(next);
  }
  // `next` (the old set) is released here, outside the lock.
}

void EndpointSet::Update(const std::vector<Endpoint>& list) {
  std::lock_guard lock(update_mu_);
  if (stopped_.load(std::memory_order_relaxed)) return;
  std::shared_ptr<const BackendSet> old = Latest();
  std::unordered_map<std::string, BackendPtr> by_name;
  for (const auto& b : old->backends) by_name.emplace(b->name, b);
  auto next = std::make_shared<BackendSet>();
  std::unordered_set<std::string> seen;
  size_t added = 0;
  for (const Endpoint& e : list) {
    std::string name = e.addr.ToString();
    if (!seen.insert(name).second) continue;  // listed twice
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      it->second->weight = std::max<uint32_t>(1, e.weight);
      next->backends.push_back(it->second);
      continue;
    }
    auto b = std::make_shared<Backend>(e, model_, conns_per_backend_);
    b->weight = std::max<uint32_t>(1, e.weight);
    all_backends_.push_back(b);
    next->backends.push_back(std::move(b));
    ++added;
  }
  if (!next->backends.empty()) {
    std::vector<BalancerEndpoint> eps;
    eps.reserve(next->backends.size());
    for (const auto& b : next->backends) eps.push_back({b->addr, b->name, b->weight, &b->stats});
    next->picker = make_picker_(eps);
    next->track_stats = next->picker->UsesEndpointStats();
  }
  size_t removed = old->backends.size() + added - next->backends.size();
  TRPC_LOG_INFO("client {}: {} endpoint(s) ({} new, {} gone)", client_name_, next->backends.size(),
                added, removed);
  std::shared_ptr<const BackendSet> published = next;
  Store(std::move(next));
  for (size_t i = 0; i < copies_.size(); ++i) {
    // Stop's DropCopyOnLoop tasks are posted after these, once no update can come.
    model_->GetReactor(i)->RunInLoop([this, i, published] {
      if (!stopped_.load(std::memory_order_acquire)) copies_[i].set = published;
    });
  }
  std::erase_if(all_backends_, [](const std::weak_ptr<Backend>& w) { return w.expired(); });
}

const BackendSet* EndpointSet::Current(std::shared_ptr<const BackendSet>* hold) const {
  if (Reactor* r = Reactor::Current(); r != nullptr && !copies_.empty()) {
    int i = model_->IndexOf(r);
    if (i >= 0) {
      if (const BackendSet* s = copies_[static_cast<size_t>(i)].set.get()) return s;
    }
  }
  *hold = Latest();
  return hold->get();
}

std::vector<BackendPtr> EndpointSet::Stop() {
  std::lock_guard lock(update_mu_);
  stopped_.store(true, std::memory_order_release);
  std::vector<BackendPtr> alive;
  for (const auto& w : all_backends_) {
    if (auto b = w.lock()) alive.push_back(std::move(b));
  }
  return alive;
}

}  // namespace trpc::detail
