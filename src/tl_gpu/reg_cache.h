// The registration cache: the users' device buffers that a library calling Cohort on their
// behalf (the Open MPI component) passes again and again, registered with the team without a
// call from the user, so that repeated calls on them take the zero-copy algorithms.
//
// This class is the bookkeeping alone, one rank's side, no CUDA: which allocations this rank's
// calls used, which of them are registered (and in which slot), which to register or evict
// at the team's next sync (GpuTransport::cache_*, CollFront::sync_cache), least recently used
// first out.  It is keyed by allocation, not by pointer: any offset in an allocation hits its
// entry, and an allocation is known by the driver's buffer id as well as its address, so memory
// freed and allocated again at the same address never hits the old entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace cohort::tl_gpu {

// One CUDA allocation as the driver sees it.
struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;
  uint64_t id = 0;  // CU_POINTER_ATTRIBUTE_BUFFER_ID: never reused within a process
};

// What the driver says of a pointer (registrations.cc asks it; tests pass their own).
enum class Probe {
  kShareable,    // device memory of the team's GPU that CUDA IPC can share
  kUnshareable,  // device memory that CUDA IPC cannot share (a cudaMallocAsync pool, cuMem)
  kUnknown,      // not device memory of the team's GPU
};
using AllocationProbe = std::function<Probe(const void *ptr, Allocation *out)>;

class RegCache {
 public:
  // At most `capacity` allocations registered at once (0: the cache is off).
  RegCache(size_t capacity, AllocationProbe probe)
      : capacity_(capacity), probe_(std::move(probe)) {}

  enum class Use {
    kRegistered,  // its allocation is registered, in `slot`
    kQueued,      // not yet: registered at the next sync
    kSeen,        // its allocation's first use: queued if a later call uses it again (memory
                  // allocated for one call and freed, as a staging copy, is never registered)
    kNever,       // not cacheable (off, unknown or unshareable memory, refused before)
  };
  // A call's use of [ptr, ptr + bytes).  An entry whose allocation is gone (freed, or freed and
  // allocated again at its address) leaves the cache here; *stale is its slot then (-1: none),
  // which the caller must stop using at once, and which the next sync evicts on every rank.
  Use note(const void *ptr, size_t bytes, int *slot, int *stale);

  // Drops the entries whose allocation is gone (a few driver queries each), even if no call
  // uses them again, so that the peers let go of freed memory: their slots, which the caller
  // must stop using at once, and which the next sync evicts.
  std::vector<int> sweep();
  // Whether this rank has something for the next sync: allocations to register, slots to evict.
  bool sync_wanted() const { return !queued_.empty() || !evict_.empty(); }

  // What this rank brings to a sync: at most `max_add` queued allocations still alive, and at
  // most `max_evict` slots to evict (stale entries first, then the least recently used ones that
  // the additions push past the capacity).  The evicted entries have left the cache on return;
  // the additions are the caller's until registered() or refused().
  struct Plan {
    std::vector<Allocation> add;
    std::vector<int> evict;
  };
  Plan plan(size_t max_add, size_t max_evict);
  void registered(const Allocation &allocation, int slot);
  void refused(const Allocation &allocation);  // never queued again

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  // Every slot of this rank's entries (a team going away, tests).
  std::vector<int> slots() const;

 private:
  struct Entry {
    Allocation allocation;
    int slot = -1;
    uint64_t last_use = 0;
  };
  static constexpr size_t kMostQueued = 8;  // a loop over many buffers keeps the newest
  static constexpr size_t kMostRefused = 64;
  static constexpr size_t kMostSeen = 16;

  bool alive(const Allocation &a) const;  // the same allocation is still at its address
  bool was_refused(uint64_t id) const;
  void queue(const Allocation &allocation);

  size_t capacity_;
  AllocationProbe probe_;
  uint64_t clock_ = 0;
  std::vector<Entry> entries_;
  std::vector<Allocation> queued_;
  std::vector<int> evict_;
  std::vector<uint64_t> refused_;  // buffer ids, oldest first
  std::vector<uint64_t> seen_;     // buffer ids used once, oldest first
};

}  // namespace cohort::tl_gpu
