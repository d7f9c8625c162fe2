// Staging memory and copies between memory kinds, for callers that move buffers between the
// host and the device (cohort.h: cohort_host_alloc, cohort_host_free, cohort_device_alloc,
// cohort_device_free, cohort_memcpy).  The driver is the
// one cuda_driver.cc loads; without it every buffer is host memory and these are malloc, free
// and memcpy.
#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

#include "core/cuda_driver.h"
#include "core/status.h"

namespace cohort {
namespace {

using CuResult = int;
constexpr CuResult kCudaSuccess = 0;
constexpr unsigned kHostAllocPortable = 1;  // CU_MEMHOSTALLOC_PORTABLE
using CuMemHostAlloc = CuResult (*)(void **, size_t, unsigned);
using CuMemFreeHost = CuResult (*)(void *);
using CuMemcpy = CuResult (*)(uintptr_t, uintptr_t, size_t);  // unified addressing
using CuMemAlloc = CuResult (*)(uintptr_t *, size_t);
using CuMemFree = CuResult (*)(uintptr_t);
constexpr CuResult kCudaOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY

struct DriverCopies {
  CuMemHostAlloc host_alloc = nullptr;
  CuMemFreeHost free_host = nullptr;
  CuMemcpy memcpy = nullptr;
  CuMemAlloc alloc = nullptr;
  CuMemFree free = nullptr;
};

const DriverCopies &driver() {
  static const DriverCopies d = [] {
    DriverCopies out;
    void *lib = driver_library();
    if (lib == nullptr) return out;
    out.host_alloc = reinterpret_cast<CuMemHostAlloc>(dlsym(lib, "cuMemHostAlloc"));
    out.free_host = reinterpret_cast<CuMemFreeHost>(dlsym(lib, "cuMemFreeHost"));
    out.memcpy = reinterpret_cast<CuMemcpy>(dlsym(lib, "cuMemcpy"));
    out.alloc = reinterpret_cast<CuMemAlloc>(dlsym(lib, "cuMemAlloc_v2"));
    out.free = reinterpret_cast<CuMemFree>(dlsym(lib, "cuMemFree_v2"));
    return out;
  }();
  return d;
}

// The page-locked allocations made here: cohort_host_free must know which free to call, and
// the thread that frees may have no context to ask the driver on.
struct Pinned {
  std::mutex mutex;
  std::unordered_set<void *> live;
};
Pinned &pinned() {
  static Pinned *p = new Pinned;  // never destroyed: frees may come from exit handlers
  return *p;
}

bool pinned_allocation(size_t bytes, void **ptr) {
  const DriverCopies &d = driver();
  if (d.host_alloc == nullptr || d.free_host == nullptr) return false;
  if (!memory_kind_detector().thread_has_context()) return false;
  if (d.host_alloc(ptr, bytes, kHostAllocPortable) != kCudaSuccess) return false;
  std::lock_guard<std::mutex> lock(pinned().mutex);
  pinned().live.insert(*ptr);
  return true;
}

bool needs_driver(const void *buffer) {
  const cohort_memory_kind_t kind = memory_kind_detector().kind_of(buffer);
  return kind == COHORT_MEMORY_CUDA_DEVICE || kind == COHORT_MEMORY_CUDA_MANAGED;
}

}  // namespace
}  // namespace cohort

using namespace cohort;

extern "C" {

cohort_status_t cohort_host_alloc(size_t bytes, void **ptr) {
  if (ptr == nullptr)
    return fail(COHORT_ERR_INVALID_ARG, "cohort_host_alloc: ptr (output) is NULL");
  *ptr = nullptr;
  if (bytes == 0) return COHORT_SUCCESS;
  if (pinned_allocation(bytes, ptr)) return COHORT_SUCCESS;
  *ptr = std::malloc(bytes);
  if (*ptr == nullptr) {
    return failf(COHORT_ERR_NO_MEMORY, "cohort_host_alloc: %zu bytes of host memory", bytes);
  }
  return COHORT_SUCCESS;
}

cohort_status_t cohort_host_free(void *ptr) {
  if (ptr == nullptr) return COHORT_SUCCESS;
  bool was_pinned = false;
  {
    std::lock_guard<std::mutex> lock(pinned().mutex);
    was_pinned = pinned().live.erase(ptr) > 0;
  }
  if (!was_pinned) {
    std::free(ptr);
  } else if (driver().free_host(ptr) != kCudaSuccess) {
    return fail(COHORT_ERR_CUDA, "cohort_host_free: cuMemFreeHost failed");
  }
  return COHORT_SUCCESS;
}

cohort_status_t cohort_memcpy(void *dst, const void *src, size_t bytes) {
  if (bytes == 0) return COHORT_SUCCESS;
  if (dst == nullptr || src == nullptr) {
    return failf(COHORT_ERR_INVALID_ARG, "cohort_memcpy: %s is NULL (%zu bytes)",
                 dst == nullptr ? "dst" : "src", bytes);
  }
  if (!needs_driver(dst) && !needs_driver(src)) {
    std::memcpy(dst, src, bytes);
    return COHORT_SUCCESS;
  }
  if (driver().memcpy == nullptr) {
    return fail(COHORT_ERR_CUDA, "cohort_memcpy: the CUDA driver (libcuda.so.1) has no cuMemcpy");
  }
  if (driver().memcpy(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes) !=
      kCudaSuccess) {
    return failf(COHORT_ERR_CUDA, "cohort_memcpy: cuMemcpy of %zu bytes failed (dst %p, src %p)",
                 bytes, dst, src);
  }
  return COHORT_SUCCESS;
}

cohort_status_t cohort_device_alloc(size_t bytes, void **ptr) {
  if (ptr == nullptr)
    return fail(COHORT_ERR_INVALID_ARG, "cohort_device_alloc: ptr (output) is NULL");
  *ptr = nullptr;
  if (bytes == 0) return COHORT_SUCCESS;
  const DriverCopies &d = driver();
  if (d.alloc == nullptr || d.free == nullptr) {
    return fail(COHORT_ERR_CUDA,
                "cohort_device_alloc: no CUDA driver (libcuda.so.1) to allocate with");
  }
  if (!memory_kind_detector().thread_has_context()) {
    return failf(COHORT_ERR_CUDA,
                 "cohort_device_alloc: %zu bytes asked on a thread with no current CUDA context "
                 "(make the device current first)",
                 bytes);
  }
  uintptr_t device = 0;
  const CuResult r = d.alloc(&device, bytes);
  if (r != kCudaSuccess) {
    return failf(r == kCudaOutOfMemory ? COHORT_ERR_NO_MEMORY : COHORT_ERR_CUDA,
                 "cohort_device_alloc: cuMemAlloc of %zu bytes failed (CUresult %d)", bytes, r);
  }
  *ptr = reinterpret_cast<void *>(device);
  return COHORT_SUCCESS;
}

cohort_status_t cohort_device_free(void *ptr) {
  if (ptr == nullptr) return COHORT_SUCCESS;
  if (driver().free == nullptr || driver().free(reinterpret_cast<uintptr_t>(ptr)) != kCudaSuccess) {
    return failf(COHORT_ERR_CUDA, "cohort_device_free: cuMemFree of %p failed", ptr);
  }
  return COHORT_SUCCESS;
}

}  // extern "C"
