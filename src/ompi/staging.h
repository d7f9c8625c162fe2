// Staging: a call whose buffers cannot be served where they are runs on copies of them.  Device
// buffers go to page-locked host memory for a call that runs on the host (or whose side is
// packed on the host, packing.h); host buffers go to device memory for a call the other ranks
// run on the GPU.  Each region to move (call.h) is copied before the call, and the regions the
// call writes are copied back after it; buffers already where the call runs are used as they
// are.  Blocks come from a pool per communicator and kind and go back to it, so a loop of staged
// calls allocates nothing after its first.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "call.h"
#include "cohort.h"

namespace cohort::ompi {

// Where a side of a call must be for the path that runs it: host memory (pageable, pinned or
// managed: the CPU reads it) or GPU device memory.
enum class Target { kHost, kDevice };

// Whether memory at `ptr` must move to be at `target`: device memory for the host, anything but
// device memory for the GPU (its kernels take cudaMalloc'd memory only).
bool moves_to(const void *ptr, Target target);

// Page-locked host blocks (cohort_host_alloc; pageable ones when the driver has no page-locked
// memory left, which cudaMemcpy serves too, only slower) or device blocks (cohort_device_alloc),
// kept for reuse.  Thread-safe: nonblocking calls give their blocks back from Open MPI's progress
// loop.
class StagingPool {
 public:
  enum class Memory { kHost, kDevice };
  struct Block {
    char *data = nullptr;
    size_t capacity = 0;
    bool pageable = false;  // malloc'd: page-locked memory could not be had
  };
  explicit StagingPool(Memory memory = Memory::kHost) : memory_(memory) {}
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;
  ~StagingPool();

  // A block of at least `bytes` (data nullptr: out of memory).
  Block take(size_t bytes);
  void give_back(const Block &block);
  size_t held_bytes() const;  // in blocks not in use
  Memory memory() const { return memory_; }
  // A block of 16 bytes that no call writes, one per side: what a call on the GPU is given for
  // a host pointer through which it moves nothing (nullptr: out of memory).
  char *stand_in(int side);

 private:
  void release(const Block &block);
  Memory memory_;
  mutable std::mutex mutex_;
  std::vector<Block> free_;
  char *stand_ins_[2] = {nullptr, nullptr};
};

// A block taken from a pool for one call, given back when it goes.
class PooledBlock {
 public:
  PooledBlock() = default;
  PooledBlock(StagingPool &pool, size_t bytes) : pool_(&pool), block_(pool.take(bytes)) {}
  PooledBlock(PooledBlock &&other) noexcept { *this = std::move(other); }
  PooledBlock &operator=(PooledBlock &&other) noexcept;
  PooledBlock(const PooledBlock &) = delete;
  PooledBlock &operator=(const PooledBlock &) = delete;
  ~PooledBlock();
  char *data() const { return block_.data; }

 private:
  StagingPool *pool_ = nullptr;
  StagingPool::Block block_;
};

// The pools of a communicator: page-locked host blocks and device blocks.
struct StagingPools {
  StagingPool host{StagingPool::Memory::kHost};
  StagingPool device{StagingPool::Memory::kDevice};
  StagingPool &at(Target target) { return target == Target::kHost ? host : device; }
};

// What staging cost a collective on a communicator, for its report: bytes copied either way
// and the time the copies took.  Added to when a call's staging ends (nonblocking calls end
// in Open MPI's progress loop).
struct StagingCost {
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> nanoseconds{0};
};

// Gives the sides a call uses but moves nothing through (a count of 0 on this rank: no region
// in `buffers`) a stand-in where their pointer is not at their side's target, so that the path
// running the call sees one kind of memory and treats the call as every other rank's.  Sides
// the call does not use are left as they are, unread.  False when a device stand-in cannot be
// had (out of memory).
bool hide_empty_sides(const Call &call, const CallBuffers &buffers, const Target targets[2],
                      StagingPools &pools, coll_cohort_args_t *args);

// The copies of one call's buffers.
class Staging {
 public:
  Staging(StagingPools &pools, StagingCost &cost) : pools_(pools), cost_(cost) {}
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  ~Staging();

  // Takes a copy of each buffer that is not at its side's target (targets[0] for the send side,
  // targets[1] for the receive side) and fills it (cohort_memcpy); `args` then points at the
  // copies.  A failure (out of memory, a failed copy) returns its status; usable() then says
  // whether `args` still describes buffers of the right sizes (only their contents are wrong),
  // with which the rank can still take part in the call.
  cohort_status_t stage(const Call &call, const CallBuffers &buffers, const Target targets[2],
                        coll_cohort_args_t *args);
  bool usable() const { return usable_; }
  // Copies every written copy back to its buffer.
  cohort_status_t unstage();
  size_t bytes() const;                  // staged in all
  size_t bytes_to(Target target) const;  // staged to one memory

 private:
  struct Copy {
    Side side;
    Target target;
    const char *from;  // the region's first byte in the caller's buffer
    PooledBlock copy;  // its copy, at the target
    size_t bytes;
    bool written;
  };
  cohort_status_t copy_bytes(void *dst, const void *src, size_t bytes);

  StagingPools &pools_;
  StagingCost &cost_;
  uint64_t bytes_copied_ = 0, copy_ns_ = 0;
  bool usable_ = true;
  std::vector<Copy> copies_;
};

}  // namespace cohort::ompi
