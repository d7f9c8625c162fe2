// The registration cache's side of the device transport: one rank's RegCache (reg_cache.h)
// and the team's sync, which registers every rank's queued allocations and evicts what ranks
// asked to evict, alike on every rank (GpuTransport::cache_*, CollFront::sync_cache).
//
// A cached allocation is a registration of its owner's allocation alone
// (Registrations::add_owned): one slot of the device table, the same on every rank, whose
// column of the owner every peer maps.  A kernel reads a peer's buffer only through the slot
// that peer published for the call (ZeroCopyDesc), so a rank that found its allocation gone
// stops publishing its slot at once, before the sync closes the peers' mappings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "tl_gpu/reg_cache.h"
#include "tl_gpu/registrations.h"

namespace cohort::tl_gpu {

class CacheSync {
 public:
  // At most `capacity` allocations of this rank (bounded so that every local rank's fit in
  // the table beside cohort_mem_register's); `me` of `local_size` local ranks, on `device`.
  void configure(size_t capacity, int device, int me, int local_size);

  bool note(Registrations *registered, const void *ptr, size_t bytes);
  bool wanted(Registrations *registered);

  static size_t block_bytes();
  void prepare(void *block);
  // Whether some rank's block (by local rank) evicts a slot: its kernels must have ended first.
  static bool evicts(const std::vector<const void *> &blocks);
  // Applies every local rank's block in rank order; a bit of *failed per addition not mapped
  // here (local rank q's i-th: bit q * kAdds + i).  `describe` names a local rank.
  void apply(Registrations *registered, const std::vector<const void *> &blocks,
             const std::function<std::string(int)> &describe, uint32_t *failed);
  // Every rank's bits ORed: those additions are taken back everywhere.
  void settle(Registrations *registered, uint32_t failed);

  static constexpr int kAdds = 2;    // allocations a rank registers per sync
  static constexpr int kEvicts = 8;  // slots a rank evicts per sync

 private:
  struct Applied {
    int owner;
    int index;
    int slot;  // -1: none was free
  };

  RegCache cache_{0, nullptr};
  int device_ = -1;
  int me_ = 0;
  std::vector<Allocation> mine_;  // this sync's additions of this rank
  std::vector<Applied> applied_;
};

}  // namespace cohort::tl_gpu
