#include "staging.h"

#include <algorithm>
#include <chrono>
#include <type_traits>

namespace cohort::ompi {
namespace {

bool on_device(const void *ptr) {
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  return cohort_memory_kind(ptr, &kind) == COHORT_SUCCESS && kind == COHORT_MEMORY_CUDA_DEVICE;
}

// The pointer the call is given for a buffer on `side`, moved from the region to its copy
// (MPI_IN_PLACE and unused buffers are left alone: they have no region).
template <typename Ptr>
Ptr moved(Ptr ptr, const char *from, char *copy) {
  const char *p = static_cast<const char *>(ptr);
  return static_cast<Ptr>(static_cast<void *>(copy + (p - from)));
}

// Stand-ins for device pointers the call passes but moves nothing through (a count of 0 on
// this rank): whoever runs the staged call sees host memory only, and two distinct ones never
// look like an in-place call.
char g_no_bytes[2][16];

// Gives the call's sides that move nothing (a count of 0 on this rank: no region in
// `buffers`) a stand-in where `elsewhere` says their pointer is not in the memory the call runs
// on.  A side with a region was asked about already (and staged): only the empty ones cost a
// driver query here.  False when `stand_in` has none to give (out of memory).
template <typename Elsewhere, typename StandIn>
bool hide_empty_sides(const CallBuffers &buffers, coll_cohort_args_t *args, Elsewhere elsewhere,
                      StandIn stand_in) {
  bool has[2] = {false, false};
  for (const BufferUse &b : buffers) has[b.side == Side::kSend ? 0 : 1] = true;
  auto hide = [&](auto *ptr, int side) {
    if (has[side] || *ptr == nullptr || *ptr == MPI_IN_PLACE || !elsewhere(*ptr)) return true;
    char *replacement = stand_in(side);
    if (replacement == nullptr) return false;
    *ptr = static_cast<std::remove_pointer_t<decltype(ptr)>>(static_cast<void *>(replacement));
    return true;
  };
  return hide(&args->sbuf, 0) && hide(&args->rbuf, 1);
}

}  // namespace

void hide_empty_device_sides(const CallBuffers &buffers, coll_cohort_args_t *args) {
  hide_empty_sides(buffers, args, on_device, [](int side) { return g_no_bytes[side]; });
}

namespace {
cohort_status_t allocate(StagingPool::Memory memory, size_t bytes, void **data) {
  return memory == StagingPool::Memory::kDevice ? cohort_device_alloc(bytes, data)
                                                : cohort_host_alloc(bytes, data);
}
void release(StagingPool::Memory memory, void *data) {
  if (memory == StagingPool::Memory::kDevice) {
    cohort_device_free(data);
  } else {
    cohort_host_free(data);
  }
}
}  // namespace

StagingPool::~StagingPool() {
  for (const Block &b : free_) release(memory_, b.data);
  for (char *s : stand_ins_) release(memory_, s);
}

char *StagingPool::stand_in(int side) {
  std::lock_guard<std::mutex> lock(mutex_);
  void *data = nullptr;
  if (stand_ins_[side] == nullptr && allocate(memory_, 16, &data) == COHORT_SUCCESS) {
    stand_ins_[side] = static_cast<char *>(data);
  }
  return stand_ins_[side];
}

char *StagingPool::take(size_t bytes, size_t *capacity) {
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
      *capacity = b.capacity;
      return b.data;
    }
  }
  void *data = nullptr;
  if (allocate(memory_, bytes, &data) != COHORT_SUCCESS) return nullptr;
  *capacity = bytes;
  return static_cast<char *>(data);
}

void StagingPool::give_back(char *block, size_t capacity) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back({block, capacity});
}

size_t StagingPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t total = 0;
  for (const Block &b : free_) total += b.capacity;
  return total;
}

Staging::~Staging() {
  for (const Copy &c : copies_) pool_.give_back(c.copy, c.capacity);
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

// Device memory moves to a host pool; host memory (pageable or pinned: the GPU path takes
// device memory only) to a device pool.  Managed memory stays: both sides can touch it.
bool Staging::moves(const void *region) const {
  if (pool_.memory() == StagingPool::Memory::kHost) return on_device(region);
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  if (cohort_memory_kind(region, &kind) != COHORT_SUCCESS) kind = COHORT_MEMORY_HOST;
  return kind == COHORT_MEMORY_HOST || kind == COHORT_MEMORY_CUDA_HOST;
}

cohort_status_t Staging::stage(const Call &call, const CallBuffers &buffers,
                               coll_cohort_args_t *args) {
  *args = call.args;
  for (const BufferUse &b : buffers) {
    if (!moves(b.region.begin)) continue;
    Copy c{b.side, b.region.begin, nullptr, b.region.bytes, 0, b.written};
    c.copy = pool_.take(c.bytes, &c.capacity);
    if (c.copy == nullptr) return COHORT_ERR_NO_MEMORY;
    copies_.push_back(c);
    const cohort_status_t s = copy_bytes(c.copy, c.from, c.bytes);
    if (s != COHORT_SUCCESS) return s;
    if (b.side == Side::kSend) {
      args->sbuf = moved(args->sbuf, c.from, c.copy);
    } else {
      args->rbuf = moved(args->rbuf, c.from, c.copy);
    }
  }
  if (pool_.memory() == StagingPool::Memory::kHost) {
    hide_empty_device_sides(buffers, args);
  } else if (!hide_empty_sides(
                 buffers, args, [this](const void *p) { return moves(p); },
                 [this](int side) { return pool_.stand_in(side); })) {
    return COHORT_ERR_NO_MEMORY;  // host pointers of empty sides need device stand-ins
  }
  return COHORT_SUCCESS;
}

cohort_status_t Staging::unstage() {
  for (const Copy &c : copies_) {
    if (!c.written) continue;
    const cohort_status_t s = copy_bytes(const_cast<char *>(c.from), c.copy, c.bytes);
    if (s != COHORT_SUCCESS) return s;
  }
  return COHORT_SUCCESS;
}

size_t Staging::bytes() const {
  size_t total = 0;
  for (const Copy &c : copies_) total += c.bytes;
  return total;
}

}  // namespace cohort::ompi
