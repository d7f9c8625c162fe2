// cache_sync.h: the registration cache's sync, one rank's side.
#include "tl_gpu/cache_sync.h"

#include <algorithm>
#include <cstring>

#include "core/log.h"
#include "kernels/device_team.h"

namespace cohort::tl_gpu {
namespace {

// One rank's part of a sync (trivially copyable: it travels as bytes).
struct Block {
  int32_t adds;
  int32_t evicts;
  int32_t evict[CacheSync::kEvicts];
  RegistrationRecord add[CacheSync::kAdds];
};

// A rank's block out of the exchange's bytes.
Block block_of(const void *p) {
  Block block;
  std::memcpy(&block, p, sizeof(block));
  return block;
}

}  // namespace

void CacheSync::configure(size_t capacity, int device, int me, int local_size) {
  const size_t room = kernels::kMaxRegistrations / (2 * static_cast<size_t>(local_size));
  device_ = device;
  me_ = me;
  cache_ = RegCache(std::min(capacity, room), [device](const void *ptr, Allocation *out) {
    return Registrations::probe(ptr, device, out);
  });
}

bool CacheSync::note(Registrations *registered, const void *ptr, size_t bytes) {
  int slot = -1, stale = -1;
  const RegCache::Use use = cache_.note(ptr, bytes, &slot, &stale);
  if (stale >= 0) registered->hide(stale);
  return use == RegCache::Use::kRegistered;
}

bool CacheSync::wanted(Registrations *registered) {
  if (cache_.capacity() == 0) return false;
  for (int slot : cache_.sweep()) registered->hide(slot);
  return cache_.sync_wanted();
}

size_t CacheSync::block_bytes() { return sizeof(Block); }

void CacheSync::prepare(void *out) {
  Block block;
  std::memset(&block, 0, sizeof(block));
  RegCache::Plan plan = cache_.plan(kAdds, kEvicts);
  mine_.clear();
  for (const Allocation &a : plan.add) {
    RegistrationRecord &record = block.add[block.adds];
    Registrations::prepare(reinterpret_cast<void *>(a.base), a.size, device_, &record);
    if (record.status != COHORT_SUCCESS) {
      COHORT_LOG_INFO(COLL, "registration cache: %s; that allocation stays unregistered",
                      record.why);
      cache_.refused(a);
      continue;
    }
    mine_.push_back(a);
    ++block.adds;
  }
  for (int slot : plan.evict) block.evict[block.evicts++] = slot;
  std::memcpy(out, &block, sizeof(block));
}

bool CacheSync::evicts(const std::vector<const void *> &blocks) {
  return std::any_of(blocks.begin(), blocks.end(),
                     [](const void *b) { return block_of(b).evicts > 0; });
}

void CacheSync::apply(Registrations *registered, const std::vector<const void *> &blocks,
                      const std::function<std::string(int)> &describe, uint32_t *failed) {
  *failed = 0;
  applied_.clear();
  for (int q = 0; q < static_cast<int>(blocks.size()); ++q) {
    const Block b = block_of(blocks[q]);
    for (int e = 0; e < std::clamp(b.evicts, 0, kEvicts); ++e) {
      if (registered->owner(b.evict[e]) != q) {
        COHORT_LOG_WARN(COLL, "registration cache: %s evicts slot %d, which is not its own",
                        describe(q).c_str(), b.evict[e]);
        continue;
      }
      registered->remove(b.evict[e]);
    }
  }
  for (int q = 0; q < static_cast<int>(blocks.size()); ++q) {
    const Block b = block_of(blocks[q]);
    for (int i = 0; i < std::clamp(b.adds, 0, kAdds); ++i) {
      void *own = q == me_ ? reinterpret_cast<void *>(mine_[i].base) : nullptr;
      int slot = -1;
      Status s = registered->add_owned(b.add[i], q, me_, own, describe(q), &slot);
      if (is_error(s)) {
        COHORT_LOG_INFO(COLL, "registration cache: %s", last_error().c_str());
        *failed |= 1u << (q * kAdds + i);
      }
      applied_.push_back(Applied{q, i, registered->slot_used(slot) ? slot : -1});
    }
  }
}

void CacheSync::settle(Registrations *registered, uint32_t failed) {
  for (const Applied &a : applied_) {
    const bool ok = (failed & (1u << (a.owner * kAdds + a.index))) == 0 && a.slot >= 0;
    if (!ok && a.slot >= 0) registered->remove(a.slot);
    if (a.owner != me_) continue;
    if (ok) {
      cache_.registered(mine_[a.index], a.slot);
    } else {
      cache_.refused(mine_[a.index]);
    }
  }
  applied_.clear();
  mine_.clear();
}

}  // namespace cohort::tl_gpu
