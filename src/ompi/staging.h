// Staging: a call whose buffers cannot be served where they are runs on copies of them.  Device
// buffers go to page-locked host memory for a call that runs on the host; host buffers go to
// device memory for a call the other ranks run on the GPU.  Each region to move (call.h) is
// copied before the call, and the regions the call writes are copied back after it; buffers
// already where the call runs are used as they are.  Blocks come from a pool per communicator
// and kind and go back to it, so a loop of staged calls allocates nothing after its first.
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

// Replaces the device pointers a call passes for sides it moves nothing through (a count of 0
// on this rank: no region in `buffers`; staging moves every other device side) by host
// stand-ins, so that the path running it sees host memory only and treats the call as every
// other rank's host call.
void hide_empty_device_sides(const CallBuffers &buffers, coll_cohort_args_t *args);

// Page-locked host blocks (cohort_host_alloc) or device blocks (cohort_device_alloc), kept for
// reuse.  Thread-safe: nonblocking calls give their blocks back from Open MPI's progress loop.
class StagingPool {
 public:
  enum class Memory { kHost, kDevice };
  explicit StagingPool(Memory memory = Memory::kHost) : memory_(memory) {}
  StagingPool(const StagingPool &) = delete;
  StagingPool &operator=(const StagingPool &) = delete;
  ~StagingPool();

  // A block of at least `bytes`, or nullptr (out of memory).
  char *take(size_t bytes, size_t *capacity);
  void give_back(char *block, size_t capacity);
  size_t held_bytes() const;  // in blocks not in use
  Memory memory() const { return memory_; }
  // A block of 16 bytes that no call writes, one per side: what a call on the GPU is given for
  // a host pointer through which it moves nothing (nullptr: out of memory).
  char *stand_in(int side);

 private:
  struct Block {
    char *data;
    size_t capacity;
  };
  Memory memory_;
  mutable std::mutex mutex_;
  std::vector<Block> free_;
  char *stand_ins_[2] = {nullptr, nullptr};
};

// What staging cost a collective on a communicator, for its report: bytes copied either way
// and the time the copies took.  Added to when a call's staging ends (nonblocking calls end
// in Open MPI's progress loop).
struct StagingCost {
  std::atomic<uint64_t> bytes{0};
  std::atomic<uint64_t> nanoseconds{0};
};

// The host copies of one call's device buffers.
class Staging {
 public:
  Staging(StagingPool &pool, StagingCost &cost) : pool_(pool), cost_(cost) {}
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  ~Staging();

  // Takes a copy of each buffer that is not in the pool's memory (device buffers for a host
  // pool, host ones for a device pool) and fills it (cohort_memcpy); `args` then points at the
  // copies.  A failure (out of memory, a failed copy) returns its status.
  cohort_status_t stage(const Call &call, const CallBuffers &buffers, coll_cohort_args_t *args);
  // Copies every written copy back to its device buffer.
  cohort_status_t unstage();
  size_t bytes() const;  // staged in all

 private:
  struct Copy {
    Side side;
    const char *from;  // the region's first byte in the caller's buffer
    char *copy;        // its copy, in the pool's memory
    size_t bytes;
    size_t capacity;
    bool written;
  };
  cohort_status_t copy_bytes(void *dst, const void *src, size_t bytes);
  bool moves(const void *region) const;  // not in the pool's memory

  StagingPool &pool_;
  StagingCost &cost_;
  uint64_t bytes_copied_ = 0, copy_ns_ = 0;
  std::vector<Copy> copies_;
};

}  // namespace cohort::ompi
