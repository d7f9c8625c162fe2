#include "staging.h"

#include <algorithm>
#include <chrono>

namespace cohort::ompi {
namespace {

bool on_device(const void *ptr) {
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  return cohort_memory_kind(ptr, &kind) == COHORT_SUCCESS && kind == COHORT_MEMORY_CUDA_DEVICE;
}

// The pointer the call is given for a buffer on `side`, moved from the device region to its
// copy (MPI_IN_PLACE and unused buffers are left alone: they have no region).
template <typename Ptr>
Ptr moved(Ptr ptr, const char *device, char *host) {
  const char *p = static_cast<const char *>(ptr);
  return static_cast<Ptr>(static_cast<void *>(host + (p - device)));
}

// Stand-ins for device pointers the call passes but moves nothing through (a count of 0 on
// this rank): whoever runs the staged call sees host memory only, and two distinct ones never
// look like an in-place call.
char g_no_bytes[2][16];

// A device pointer of the call that staging did not move: a side with nothing in it.
template <typename Ptr>
void replace_empty(Ptr *ptr, char *stand_in) {
  if (*ptr == nullptr || *ptr == MPI_IN_PLACE || !on_device(*ptr)) return;
  *ptr = static_cast<Ptr>(static_cast<void *>(stand_in));
}

}  // namespace

void hide_empty_device_sides(const CallBuffers &buffers, coll_cohort_args_t *args) {
  // A side with a region was asked about already (and staged if on the device): only the
  // empty ones cost a driver query here.
  bool has[2] = {false, false};
  for (const BufferUse &b : buffers) has[b.side == Side::kSend ? 0 : 1] = true;
  if (!has[0]) replace_empty(&args->sbuf, g_no_bytes[0]);
  if (!has[1]) replace_empty(&args->rbuf, g_no_bytes[1]);
}

StagingPool::~StagingPool() {
  for (const Block &b : free_) cohort_host_free(b.data);
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
  if (cohort_host_alloc(bytes, &data) != COHORT_SUCCESS) return nullptr;
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
  for (const Copy &c : copies_) pool_.give_back(c.host, c.capacity);
  cost_.bytes += bytes_copied_;
  cost_.nanoseconds += copy_ns_;
}

cohort_status_t Staging::copy(void *dst, const void *src, size_t bytes) {
  const auto start = std::chrono::steady_clock::now();
  const cohort_status_t s = cohort_memcpy(dst, src, bytes);
  copy_ns_ +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  bytes_copied_ += bytes;
  return s;
}

cohort_status_t Staging::stage(const Call &call, const CallBuffers &buffers,
                               coll_cohort_args_t *args) {
  *args = call.args;
  for (const BufferUse &b : buffers) {
    if (!on_device(b.region.begin)) continue;
    Copy c{b.side, b.region.begin, nullptr, b.region.bytes, 0, b.written};
    c.host = pool_.take(c.bytes, &c.capacity);
    if (c.host == nullptr) return COHORT_ERR_NO_MEMORY;
    copies_.push_back(c);
    const cohort_status_t s = copy(c.host, c.device, c.bytes);
    if (s != COHORT_SUCCESS) return s;
    if (b.side == Side::kSend) {
      args->sbuf = moved(args->sbuf, c.device, c.host);
    } else {
      args->rbuf = moved(args->rbuf, c.device, c.host);
    }
  }
  hide_empty_device_sides(buffers, args);
  return COHORT_SUCCESS;
}

cohort_status_t Staging::unstage() {
  for (const Copy &c : copies_) {
    if (!c.written) continue;
    const cohort_status_t s = copy(const_cast<char *>(c.device), c.host, c.bytes);
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
