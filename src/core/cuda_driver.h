// The CUDA driver (libcuda.so.1), loaded at run time: a machine without a driver (or a build
// without CUDA) still runs Cohort on host memory.  Only what every process needs before it
// touches a GPU lives here: whether the calling thread has a CUDA context, and where a buffer
// lives.  Asking costs a thread-local read without a context and about 0.09 us per pointer
// with one (measured on the H200), so threads without a context are never asked about pointers.
#pragma once

#include <cstdint>

#include "cohort.h"

namespace cohort {

// Where a buffer lives: its kind and, for memory the driver knows, the CUDA ordinal (in this
// process) of the GPU it belongs to; -1 where that is not known.
struct BufferPlace {
  cohort_memory_kind_t kind = COHORT_MEMORY_HOST;
  int device = -1;
};

// Answers about the calling thread and its buffers; tests inject their own.
class MemoryKindDetector {
 public:
  virtual ~MemoryKindDetector() = default;
  virtual cohort_memory_kind_t kind_of(const void *buffer) = 0;
  // The kind and the GPU in one query (the driver's); a detector that knows kinds only says
  // device -1.
  virtual BufferPlace place_of(const void *buffer) { return {kind_of(buffer), -1}; }
  // True when the calling thread has a current CUDA context (it uses a GPU already).
  virtual bool thread_has_context() = 0;
};

// The detector in use: the driver's when libcuda.so.1 loads and has a device, else one that
// calls every buffer host memory.
MemoryKindDetector &memory_kind_detector();

// What cohort_memory_kind told this thread about `buffer` less than kRecentKindNs ago, else
// the detector's answer (place_of) now.  A caller that asks about its buffers and then starts a
// collective on them (the Open MPI component) pays one driver query per buffer, not two; an
// answer older than that is asked again, so memory freed and reused in between is seen anew.
constexpr int64_t kRecentKindNs = 100000;
BufferPlace place_of_recent(const void *buffer);
// Keeps an answer of cohort_memory_kind for place_of_recent.
void remember_place(const void *buffer, BufferPlace place);

// Replaces the detector (tests); nullptr restores the default.  Not thread-safe.
void set_memory_kind_detector(MemoryKindDetector *detector);

// libcuda.so.1, loaded once; nullptr on a machine without an NVIDIA driver.
void *driver_library();

// CUDA devices visible to this process (cuDeviceGetCount), 0 without a driver; asked once.
int cuda_device_count();

// The CUDA version the installed driver supports (cuDriverGetVersion: 12040 for 12.4), or 0
// when libcuda.so.1 is absent (no NVIDIA driver).
int cuda_driver_version();

// True for memory the CPU can read and write (every kind but CUDA device memory).
inline bool host_accessible(cohort_memory_kind_t kind) { return kind != COHORT_MEMORY_CUDA_DEVICE; }

}  // namespace cohort
