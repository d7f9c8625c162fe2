#include "core/cuda_driver.h"

#include <dlfcn.h>

#include <array>
#include <atomic>
#include <cstdint>

#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

namespace cohort {
namespace {

// The few driver API values used here (cuda.h is not needed to build this file).
using CuResult = int;
using CuPointerAttribute = int;
constexpr CuResult kCudaSuccess = 0;
constexpr CuPointerAttribute kAttrMemoryType = 2;     // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr CuPointerAttribute kAttrIsManaged = 8;      // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr CuPointerAttribute kAttrDeviceOrdinal = 9;  // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
constexpr unsigned kMemoryTypeHost = 1;               // CU_MEMORYTYPE_HOST
constexpr unsigned kMemoryTypeDevice = 2;             // CU_MEMORYTYPE_DEVICE

using CuInit = CuResult (*)(unsigned);
using CuDeviceGetCount = CuResult (*)(int *);
using CuPointerGetAttributes = CuResult (*)(unsigned, CuPointerAttribute *, void **, uintptr_t);
using CuCtxGetCurrent = CuResult (*)(void **);
using CuDriverGetVersion = CuResult (*)(int *);

class HostOnly final : public MemoryKindDetector {
 public:
  cohort_memory_kind_t kind_of(const void *) override { return COHORT_MEMORY_HOST; }
  bool thread_has_context() override { return false; }
};

class CudaDriver final : public MemoryKindDetector {
 public:
  CudaDriver(CuPointerGetAttributes get, CuCtxGetCurrent current) : get_(get), current_(current) {}

  cohort_memory_kind_t kind_of(const void *buffer) override { return place_of(buffer).kind; }

  // One query for the three attributes.  Memory the driver does not know (pageable host
  // memory) reads as type 0 with success, not as an error (cuPointerGetAttribute's error there
  // is what compute-sanitizer reports as an API error on every host-buffer call): host.
  BufferPlace place_of(const void *buffer) override {
    if (buffer == nullptr || !thread_has_context()) return {};
    unsigned type = 0, managed = 0;
    int device = -1;
    CuPointerAttribute attributes[] = {kAttrMemoryType, kAttrIsManaged, kAttrDeviceOrdinal};
    void *values[] = {&type, &managed, &device};
    if (get_(3, attributes, values, reinterpret_cast<uintptr_t>(buffer)) != kCudaSuccess) {
      return {};
    }
    if (type == kMemoryTypeHost) return {COHORT_MEMORY_CUDA_HOST, device};
    if (type != kMemoryTypeDevice) return {};
    return {managed ? COHORT_MEMORY_CUDA_MANAGED : COHORT_MEMORY_CUDA_DEVICE, device};
  }

  bool thread_has_context() override {
    void *context = nullptr;
    return current_(&context) == kCudaSuccess && context != nullptr;
  }

 private:
  CuPointerGetAttributes get_;
  CuCtxGetCurrent current_;
};

// Loads the driver once; a machine without it (or without a device) gets HostOnly.
MemoryKindDetector &default_detector() {
  static MemoryKindDetector *detector = []() -> MemoryKindDetector * {
    void *lib = driver_library();
    if (lib == nullptr) return new HostOnly;
    auto init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
    auto count = reinterpret_cast<CuDeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
    auto get = reinterpret_cast<CuPointerGetAttributes>(dlsym(lib, "cuPointerGetAttributes"));
    auto current = reinterpret_cast<CuCtxGetCurrent>(dlsym(lib, "cuCtxGetCurrent"));
    int devices = 0;
    if (init == nullptr || count == nullptr || get == nullptr || current == nullptr ||
        init(0) != kCudaSuccess || count(&devices) != kCudaSuccess || devices == 0) {
      COHORT_LOG_INFO(COLL, "CUDA driver without a usable device: every buffer is host memory");
      return new HostOnly;
    }
    return new CudaDriver(get, current);
  }();
  return *detector;
}

MemoryKindDetector *g_injected = nullptr;

// cohort_memory_kind's last answers on this thread, newest overwriting the oldest.  The
// detector's generation is part of an answer: one injected later (tests) is not bypassed.
struct RecentKind {
  const void *buffer = nullptr;
  BufferPlace place;
  int64_t asked_ns = 0;
  unsigned generation = 0;
};
std::atomic<unsigned> g_generation{1};
thread_local std::array<RecentKind, 4> t_recent{};
thread_local unsigned t_next = 0;

}  // namespace

void remember_place(const void *buffer, BufferPlace place) {
  t_recent[t_next++ % t_recent.size()] = {buffer, place, now_ns(), g_generation.load()};
}

BufferPlace place_of_recent(const void *buffer) {
  const unsigned generation = g_generation.load(std::memory_order_relaxed);
  for (const RecentKind &r : t_recent) {
    if (r.buffer == buffer && r.generation == generation && now_ns() - r.asked_ns < kRecentKindNs) {
      return r.place;
    }
  }
  return memory_kind_detector().place_of(buffer);
}

void *driver_library() {
  static void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  return lib;
}

MemoryKindDetector &memory_kind_detector() {
  return g_injected != nullptr ? *g_injected : default_detector();
}

void set_memory_kind_detector(MemoryKindDetector *detector) {
  g_injected = detector;
  ++g_generation;
}

int cuda_device_count() {
  static const int count = [] {
    void *lib = driver_library();
    if (lib == nullptr) return 0;
    auto init = reinterpret_cast<CuInit>(dlsym(lib, "cuInit"));
    auto get = reinterpret_cast<CuDeviceGetCount>(dlsym(lib, "cuDeviceGetCount"));
    int devices = 0;
    if (init == nullptr || get == nullptr || init(0) != kCudaSuccess ||
        get(&devices) != kCudaSuccess) {
      return 0;
    }
    return devices;
  }();
  return count;
}

int cuda_driver_version() {
  void *lib = driver_library();
  auto get = lib ? reinterpret_cast<CuDriverGetVersion>(dlsym(lib, "cuDriverGetVersion")) : nullptr;
  int version = 0;
  if (get == nullptr || get(&version) != kCudaSuccess) return 0;
  return version;
}

}  // namespace cohort

extern "C" {

cohort_status_t cohort_memory_kind(const void *ptr, cohort_memory_kind_t *kind) {
  if (kind == nullptr) return cohort::fail(COHORT_ERR_INVALID_ARG, "kind (output) is NULL");
  const cohort::BufferPlace place = cohort::memory_kind_detector().place_of(ptr);
  *kind = place.kind;
  if (ptr != nullptr) cohort::remember_place(ptr, place);
  return COHORT_SUCCESS;
}

const char *cohort_memory_kind_name(cohort_memory_kind_t kind) {
  switch (kind) {
    case COHORT_MEMORY_HOST: return "host";
    case COHORT_MEMORY_CUDA_HOST: return "cuda-host";
    case COHORT_MEMORY_CUDA_MANAGED: return "cuda-managed";
    case COHORT_MEMORY_CUDA_DEVICE: return "cuda-device";
    default: return "invalid";
  }
}

cohort_status_t cohort_cuda_device_count(int *count) {
  if (count == nullptr) return cohort::fail(COHORT_ERR_INVALID_ARG, "count (output) is NULL");
  *count = cohort::cuda_device_count();
  return COHORT_SUCCESS;
}

}  // extern "C"
