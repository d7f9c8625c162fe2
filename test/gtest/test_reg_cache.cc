// The registration cache's bookkeeping (tl_gpu/reg_cache.h) against a fake driver: a map of
// live allocations that a test frees and allocates again at will.
#include <gtest/gtest.h>

#include <map>

#include "tl_gpu/reg_cache.h"

namespace cohort::tl_gpu {
namespace {

class FakeDriver {
 public:
  // A live allocation at `base` of `size` bytes: a fresh buffer id, as the driver gives.
  uint64_t allocate(uintptr_t base, size_t size, bool shareable = true) {
    live_[base] = Live{Allocation{base, size, ++next_id_}, shareable};
    return next_id_;
  }
  void free(uintptr_t base) { live_.erase(base); }
  AllocationProbe probe() {
    return [this](const void *ptr, Allocation *out) {
      const auto p = reinterpret_cast<uintptr_t>(ptr);
      for (const auto &[base, live] : live_) {
        if (p >= base && p < base + live.allocation.size) {
          *out = live.allocation;
          return live.shareable ? Probe::kShareable : Probe::kUnshareable;
        }
      }
      return Probe::kUnknown;
    };
  }

 private:
  struct Live {
    Allocation allocation;
    bool shareable;
  };
  std::map<uintptr_t, Live> live_;
  uint64_t next_id_ = 100;
};

const void *at(uintptr_t p) { return reinterpret_cast<const void *>(p); }

RegCache::Use note(RegCache *cache, uintptr_t p, size_t bytes, int *slot = nullptr,
                   int *stale = nullptr) {
  int s = -1, st = -1;
  const RegCache::Use use = cache->note(at(p), bytes, &s, &st);
  if (slot != nullptr) *slot = s;
  if (stale != nullptr) *stale = st;
  return use;
}

// Two uses: the second queues the allocation.
RegCache::Use note2(RegCache *cache, uintptr_t p, size_t bytes) {
  note(cache, p, bytes);
  return note(cache, p, bytes);
}

// Registers everything the plan adds, in slots from `next_slot` on.
RegCache::Plan sync(RegCache *cache, int *next_slot, size_t max_add = 2, size_t max_evict = 8) {
  RegCache::Plan plan = cache->plan(max_add, max_evict);
  for (const Allocation &a : plan.add) cache->registered(a, (*next_slot)++);
  return plan;
}

TEST(RegCache, OffCachesNothing) {
  FakeDriver driver;
  driver.allocate(0x1000, 4096);
  RegCache cache(0, driver.probe());
  EXPECT_EQ(note(&cache, 0x1000, 64), RegCache::Use::kNever);
  EXPECT_FALSE(cache.sync_wanted());
}

TEST(RegCache, QueuedAtTheSecondUseThenRegisteredAtAnyOffsetOfTheAllocation) {
  FakeDriver driver;
  const uint64_t id = driver.allocate(0x10000, 1 << 20);
  RegCache cache(4, driver.probe());
  EXPECT_EQ(note(&cache, 0x10000 + 256, 4096), RegCache::Use::kSeen);
  EXPECT_FALSE(cache.sync_wanted());
  EXPECT_EQ(note(&cache, 0x10000 + 256, 4096), RegCache::Use::kQueued);
  EXPECT_EQ(note(&cache, 0x10000 + 512, 4096), RegCache::Use::kQueued);  // queued once
  EXPECT_TRUE(cache.sync_wanted());
  int next = 7;
  RegCache::Plan plan = sync(&cache, &next);
  ASSERT_EQ(plan.add.size(), 1u);
  EXPECT_EQ(plan.add[0].base, 0x10000u);
  EXPECT_EQ(plan.add[0].size, size_t{1} << 20);
  EXPECT_EQ(plan.add[0].id, id);
  EXPECT_TRUE(plan.evict.empty());
  EXPECT_FALSE(cache.sync_wanted());
  int slot = -1;
  EXPECT_EQ(note(&cache, 0x10000 + 4096, 8192, &slot), RegCache::Use::kRegistered);
  EXPECT_EQ(slot, 7);
  EXPECT_EQ(note(&cache, 0x10000, 1 << 20, &slot), RegCache::Use::kRegistered);
  // Past the allocation's end: not served, not queued.
  EXPECT_EQ(note(&cache, 0x10000 + 4096, 1 << 20, &slot), RegCache::Use::kNever);
  EXPECT_FALSE(cache.sync_wanted());
}

TEST(RegCache, FreedAndAllocatedAgainAtTheSameAddressIsNeverServed) {
  FakeDriver driver;
  driver.allocate(0x20000, 65536);
  RegCache cache(4, driver.probe());
  note2(&cache, 0x20000, 65536);
  int next = 0;
  sync(&cache, &next);
  ASSERT_EQ(note(&cache, 0x20000, 65536), RegCache::Use::kRegistered);
  driver.free(0x20000);
  const uint64_t fresh = driver.allocate(0x20000, 65536);
  int slot = -1, stale = -1;
  EXPECT_EQ(note(&cache, 0x20000, 65536, &slot, &stale), RegCache::Use::kSeen);
  EXPECT_EQ(slot, -1);
  EXPECT_EQ(stale, 0);               // the caller hides slot 0 at once
  EXPECT_TRUE(cache.sync_wanted());  // to evict it
  EXPECT_EQ(note(&cache, 0x20000, 65536), RegCache::Use::kQueued);  // the new one's second use
  RegCache::Plan plan = sync(&cache, &next);
  ASSERT_EQ(plan.evict.size(), 1u);
  EXPECT_EQ(plan.evict[0], 0);
  ASSERT_EQ(plan.add.size(), 1u);
  EXPECT_EQ(plan.add[0].id, fresh);
  EXPECT_EQ(note(&cache, 0x20000, 65536, &slot), RegCache::Use::kRegistered);
  EXPECT_EQ(slot, 1);
}

TEST(RegCache, SweepFindsAllocationsFreedThatNoCallUsesAgain) {
  FakeDriver driver;
  driver.allocate(0x30000, 4096);
  driver.allocate(0x40000, 4096);
  RegCache cache(4, driver.probe());
  note2(&cache, 0x30000, 4096);
  note2(&cache, 0x40000, 4096);
  int next = 0;
  sync(&cache, &next);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cache.sweep().empty());
  driver.free(0x40000);
  EXPECT_EQ(cache.sweep(), std::vector<int>{1});
  EXPECT_TRUE(cache.sync_wanted());
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(sync(&cache, &next).evict, std::vector<int>{1});
  EXPECT_FALSE(cache.sync_wanted());
}

TEST(RegCache, TheLeastRecentlyUsedGoesWhenFull) {
  FakeDriver driver;
  for (uintptr_t b : {0x100000, 0x200000, 0x300000}) driver.allocate(b, 4096);
  RegCache cache(2, driver.probe());
  int next = 0;
  note2(&cache, 0x100000, 8);
  note2(&cache, 0x200000, 8);
  sync(&cache, &next);        // slots 0 and 1
  note(&cache, 0x100000, 8);  // 0x100000 is now the more recent
  EXPECT_EQ(note2(&cache, 0x300000, 8), RegCache::Use::kQueued);
  RegCache::Plan plan = sync(&cache, &next);
  EXPECT_EQ(plan.evict, std::vector<int>{1});
  ASSERT_EQ(plan.add.size(), 1u);
  EXPECT_EQ(plan.add[0].base, 0x300000u);
  EXPECT_EQ(note(&cache, 0x100000, 8), RegCache::Use::kRegistered);
  EXPECT_EQ(note(&cache, 0x200000, 8), RegCache::Use::kQueued);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(RegCache, AdditionsBeyondTheEvictionLimitWait) {
  FakeDriver driver;
  for (uintptr_t b : {0x100000, 0x200000, 0x300000, 0x400000}) driver.allocate(b, 4096);
  RegCache cache(2, driver.probe());
  int next = 0;
  note2(&cache, 0x100000, 8);
  note2(&cache, 0x200000, 8);
  sync(&cache, &next);
  note2(&cache, 0x300000, 8);
  note2(&cache, 0x400000, 8);
  // One eviction allowed: one addition fits, the other stays queued.
  RegCache::Plan plan = sync(&cache, &next, 2, 1);
  EXPECT_EQ(plan.evict.size(), 1u);
  ASSERT_EQ(plan.add.size(), 1u);
  EXPECT_EQ(plan.add[0].base, 0x300000u);
  EXPECT_TRUE(cache.sync_wanted());
  plan = sync(&cache, &next, 2, 1);
  ASSERT_EQ(plan.add.size(), 1u);
  EXPECT_EQ(plan.add[0].base, 0x400000u);
  EXPECT_EQ(cache.size(), 2u);
}

TEST(RegCache, UnshareableRefusedAndUnknownMemoryIsNeverQueued) {
  FakeDriver driver;
  driver.allocate(0x50000, 4096, /*shareable=*/false);
  driver.allocate(0x60000, 4096);
  RegCache cache(4, driver.probe());
  EXPECT_EQ(note(&cache, 0x50000, 8), RegCache::Use::kNever);
  EXPECT_EQ(note(&cache, 0x70000, 8), RegCache::Use::kNever);  // not device memory
  EXPECT_FALSE(cache.sync_wanted());
  note2(&cache, 0x60000, 8);
  RegCache::Plan plan = cache.plan(2, 8);
  ASSERT_EQ(plan.add.size(), 1u);
  cache.refused(plan.add[0]);  // some rank could not map it
  EXPECT_EQ(note(&cache, 0x60000, 8), RegCache::Use::kNever);
  EXPECT_FALSE(cache.sync_wanted());
}

TEST(RegCache, AnAllocationUsedOnceAndFreedIsNeverQueued) {
  FakeDriver driver;
  RegCache cache(4, driver.probe());
  // A staging copy per call, freed after it, mostly at the same address: each is a new one.
  for (int call = 0; call < 40; ++call) {
    driver.allocate(0xa0000, 4096);
    EXPECT_EQ(note(&cache, 0xa0000, 4096), RegCache::Use::kSeen);
    driver.free(0xa0000);
  }
  EXPECT_FALSE(cache.sync_wanted());
}

TEST(RegCache, AQueuedAllocationFreedBeforeTheSyncIsDropped) {
  FakeDriver driver;
  driver.allocate(0x80000, 4096);
  driver.allocate(0x90000, 4096);
  RegCache cache(4, driver.probe());
  note2(&cache, 0x80000, 8);
  note2(&cache, 0x90000, 8);
  driver.free(0x80000);
  int next = 0;
  RegCache::Plan plan = sync(&cache, &next);
  ASSERT_EQ(plan.add.size(), 1u);
  EXPECT_EQ(plan.add[0].base, 0x90000u);
  EXPECT_FALSE(cache.sync_wanted());
}

}  // namespace
}  // namespace cohort::tl_gpu
