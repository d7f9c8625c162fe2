#include "staging.h"

#include <chrono>
#include <cstdlib>

namespace cohort::ompi {
namespace {

cohort_memory_kind_t kind_of(const void *ptr) {
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  return cohort_memory_kind(ptr, &kind) == COHORT_SUCCESS ? kind : COHORT_MEMORY_HOST;
}

// The pointer the call is given for a buffer, moved from the region to its copy (MPI_IN_PLACE
// and unused buffers are left alone: they have no region).
template <typename Ptr>
Ptr moved(Ptr ptr, const char *from, char *copy) {
  const char *p = static_cast<const char *>(ptr);
  return static_cast<Ptr>(static_cast<void *>(copy + (p - from)));
}

// Host stand-ins for device pointers the call passes but moves nothing through: whoever runs
// the call sees host memory only, and two distinct ones never look like an in-place call.
char g_no_bytes[2][16];

template <typename Ptr>
void set_pointer(Ptr *slot, char *to) {
  *slot = static_cast<Ptr>(static_cast<void *>(to));
}

}  // namespace

bool moves_to(const void *ptr, Target target) {
  const bool device = kind_of(ptr) == COHORT_MEMORY_CUDA_DEVICE;
  return target == Target::kHost ? device : !device;
}

bool hide_empty_sides(const Call &call, const CallBuffers &buffers, const Target targets[2],
                      StagingPools &pools, coll_cohort_args_t *args) {
  bool has[2] = {false, false};
  for (const BufferUse &b : buffers) has[b.side == Side::kSend ? 0 : 1] = true;
  for (int side = 0; side < 2; ++side) {
    if (has[side] || !call.uses(side == 0 ? Side::kSend : Side::kRecv)) continue;
    const void *ptr = side == 0 ? args->sbuf : args->rbuf;
    if (ptr == nullptr || ptr == MPI_IN_PLACE || !moves_to(ptr, targets[side])) continue;
    char *stand_in =
        targets[side] == Target::kHost ? g_no_bytes[side] : pools.device.stand_in(side);
    if (stand_in == nullptr) return false;
    if (side == 0) {
      set_pointer(&args->sbuf, stand_in);
    } else {
      set_pointer(&args->rbuf, stand_in);
    }
  }
  return true;
}

StagingPool::~StagingPool() {
  for (const Block &b : free_) release(b);
  for (char *s : stand_ins_) {
    if (s != nullptr) release({s, 16, false});
  }
}

void StagingPool::release(const Block &block) {
  if (block.pageable) {
    std::free(block.data);
  } else if (memory_ == Memory::kDevice) {
    cohort_device_free(block.data);
  } else {
    cohort_host_free(block.data);
  }
}

char *StagingPool::stand_in(int side) {
  std::lock_guard<std::mutex> lock(mutex_);
  void *data = nullptr;
  if (stand_ins_[side] == nullptr && memory_ == Memory::kDevice &&
      cohort_device_alloc(16, &data) == COHORT_SUCCESS) {
    stand_ins_[side] = static_cast<char *>(data);
  }
  return stand_ins_[side];
}

StagingPool::Block StagingPool::take(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest free block that is large enough.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->capacity >= bytes && (best == free_.end() || it->capacity < best->capacity))
        best = it;
    }
    if (best != free_.end()) {
      Block b = *best;
      free_.erase(best);
      return b;
    }
  }
  void *data = nullptr;
  if (memory_ == Memory::kDevice) {
    if (cohort_device_alloc(bytes, &data) != COHORT_SUCCESS) return {};
    return {static_cast<char *>(data), bytes, false};
  }
  if (cohort_host_alloc(bytes, &data) == COHORT_SUCCESS) {
    return {static_cast<char *>(data), bytes, false};
  }
  data = std::malloc(bytes > 0 ? bytes : 1);
  return {static_cast<char *>(data), data != nullptr ? bytes : 0, data != nullptr};
}

void StagingPool::give_back(const Block &block) {
  if (block.data == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(block);
}

size_t StagingPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const Block &b : free_) total += b.capacity;
  return total;
}

PooledBlock &PooledBlock::operator=(PooledBlock &&other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr) pool_->give_back(block_);
    pool_ = other.pool_;
    block_ = other.block_;
    other.pool_ = nullptr;
    other.block_ = {};
  }
  return *this;
}

PooledBlock::~PooledBlock() {
  if (pool_ != nullptr) pool_->give_back(block_);
}

Staging::~Staging() {
  cost_.bytes += bytes_copied_;
  cost_.nanoseconds += copy_ns_;
}

cohort_status_t Staging::copy_bytes(void *dst, const void *src, size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  const cohort_status_t s = cohort_memcpy(dst, src, bytes);
  copy_ns_ +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  bytes_copied_ += bytes;
  return s;
}

cohort_status_t Staging::stage(const Call &call, const CallBuffers &buffers,
                               const Target targets[2], coll_cohort_args_t *args) {
  *args = call.args;
  cohort_status_t first_error = COHORT_SUCCESS;
  for (const BufferUse &b : buffers) {
    const Target target = targets[b.side == Side::kSend ? 0 : 1];
    if (!moves_to(b.region.begin, target)) continue;
    Copy c{b.side,         target,   b.region.begin, PooledBlock(pools_.at(target), b.region.bytes),
           b.region.bytes, b.written};
    if (c.copy.data() == nullptr) {
      usable_ = false;
      return COHORT_ERR_NO_MEMORY;
    }
    // A failed copy leaves the copy's contents wrong, not its size: the call may still run.
    const cohort_status_t s = copy_bytes(c.copy.data(), c.from, c.bytes);
    if (s != COHORT_SUCCESS && first_error == COHORT_SUCCESS) first_error = s;
    if (b.side == Side::kSend) {
      args->sbuf = moved(args->sbuf, c.from, c.copy.data());
    } else {
      args->rbuf = moved(args->rbuf, c.from, c.copy.data());
    }
    copies_.push_back(std::move(c));
  }
  if (!hide_empty_sides(call, buffers, targets, pools_, args)) {
    usable_ = false;
    return COHORT_ERR_NO_MEMORY;  // a device stand-in for a host pointer of an empty side
  }
  return first_error;
}

cohort_status_t Staging::unstage() {
  for (const Copy &c : copies_) {
    if (!c.written) continue;
    const cohort_status_t s = copy_bytes(const_cast<char *>(c.from), c.copy.data(), c.bytes);
    if (s != COHORT_SUCCESS) return s;
  }
  return COHORT_SUCCESS;
}

size_t Staging::bytes() const {
  size_t total = 0;
  for (const Copy &c : copies_) total += c.bytes;
  return total;
}

size_t Staging::bytes_to(Target target) const {
  size_t total = 0;
  for (const Copy &c : copies_) total += c.target == target ? c.bytes : 0;
  return total;
}

}  // namespace cohort::ompi
