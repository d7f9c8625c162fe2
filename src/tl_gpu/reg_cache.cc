// reg_cache.h: one rank's bookkeeping of its automatically registered allocations.
#include "tl_gpu/reg_cache.h"

#include <algorithm>

namespace cohort::tl_gpu {
namespace {

bool covers(const Allocation &a, uintptr_t p, size_t bytes) {
  return p >= a.base && p - a.base < a.size && bytes <= a.size - (p - a.base);
}

}  // namespace

RegCache::Use RegCache::note(const void *ptr, size_t bytes, int *slot, int *stale) {
  *slot = -1;
  *stale = -1;
  if (capacity_ == 0) return Use::kNever;
  Allocation now;
  const Probe probe = probe_(ptr, &now);
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const Allocation &a = it->allocation;
    if (p < a.base || p - a.base >= a.size) continue;
    if (probe != Probe::kUnknown && now.id == a.id) {
      if (!covers(a, p, bytes)) return Use::kNever;  // runs past its allocation
      it->last_use = ++clock_;
      *slot = it->slot;
      return Use::kRegistered;
    }
    // Its allocation is gone: freed, maybe allocated again at this address.
    *stale = it->slot;
    evict_.push_back(it->slot);
    entries_.erase(it);
    break;
  }
  if (probe != Probe::kShareable || was_refused(now.id) || !covers(now, p, bytes)) {
    return Use::kNever;
  }
  if (std::find(seen_.begin(), seen_.end(), now.id) == seen_.end()) {
    if (seen_.size() == kMostSeen) seen_.erase(seen_.begin());
    seen_.push_back(now.id);
    return Use::kSeen;
  }
  queue(now);
  return Use::kQueued;
}

std::vector<int> RegCache::sweep() {
  std::vector<int> stale;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (alive(it->allocation)) {
      ++it;
      continue;
    }
    stale.push_back(it->slot);
    evict_.push_back(it->slot);
    it = entries_.erase(it);
  }
  return stale;
}

bool RegCache::alive(const Allocation &a) const {
  Allocation now;
  return probe_(reinterpret_cast<const void *>(a.base), &now) != Probe::kUnknown &&
         now.id == a.id && now.base == a.base;
}

RegCache::Plan RegCache::plan(size_t max_add, size_t max_evict) {
  Plan out;
  sweep();
  // The queued allocations still alive and not registered meanwhile, oldest first.
  std::vector<Allocation> keep;
  for (const Allocation &a : queued_) {
    const bool cached = std::any_of(entries_.begin(), entries_.end(),
                                    [&](const Entry &e) { return e.allocation.id == a.id; });
    if (cached || !alive(a)) continue;
    (out.add.size() < max_add ? out.add : keep).push_back(a);
  }
  queued_ = std::move(keep);
  // Room for the additions: the least recently used entries go, within `max_evict`.
  auto by_age = [](const Entry &x, const Entry &y) { return x.last_use < y.last_use; };
  while (entries_.size() + out.add.size() > capacity_ && !entries_.empty() &&
         evict_.size() < max_evict) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(), by_age);
    evict_.push_back(oldest->slot);
    entries_.erase(oldest);
  }
  while (entries_.size() + out.add.size() > capacity_ && !out.add.empty()) {
    queued_.insert(queued_.begin(), out.add.back());
    out.add.pop_back();
  }
  const size_t n = std::min(max_evict, evict_.size());
  out.evict.assign(evict_.begin(), evict_.begin() + static_cast<ptrdiff_t>(n));
  evict_.erase(evict_.begin(), evict_.begin() + static_cast<ptrdiff_t>(n));
  return out;
}

void RegCache::registered(const Allocation &allocation, int slot) {
  entries_.push_back(Entry{allocation, slot, ++clock_});
}

void RegCache::refused(const Allocation &allocation) {
  if (refused_.size() == kMostRefused) refused_.erase(refused_.begin());
  refused_.push_back(allocation.id);
}

std::vector<int> RegCache::slots() const {
  std::vector<int> out;
  for (const Entry &e : entries_) out.push_back(e.slot);
  return out;
}

bool RegCache::was_refused(uint64_t id) const {
  return std::find(refused_.begin(), refused_.end(), id) != refused_.end();
}

void RegCache::queue(const Allocation &allocation) {
  for (const Allocation &a : queued_) {
    if (a.id == allocation.id) return;
  }
  if (queued_.size() == kMostQueued) queued_.erase(queued_.begin());
  queued_.push_back(allocation);
}

}  // namespace cohort::tl_gpu
