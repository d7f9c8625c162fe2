// Where a buffer lives, asked of the CUDA driver (libcuda.so.1, dlopen'd: Debian's Open MPI is
// not CUDA-aware and the component must load on machines without a driver).  Only threads with
// a current CUDA context are asked about (others pass host memory: a CUDA application makes its
// device current before it communicates, as NCCL requires).  Tests inject their own detector.
#pragma once

namespace cohort::ompi {

enum class MemoryType { kHost, kDevice, kManaged };

const char *memory_type_name(MemoryType type);

class MemoryTypeDetector {
 public:
  virtual ~MemoryTypeDetector() = default;
  virtual MemoryType of(const void *buffer) = 0;
  // True when the calling thread has a current CUDA context (the application uses a GPU).
  virtual bool thread_uses_gpu() = 0;
};

// The detector in use: the CUDA driver's when libcuda.so.1 loads and has a device, otherwise
// one that calls everything host memory.
MemoryTypeDetector &memory_type_detector();

// Replaces the detector (tests); nullptr restores the default.  Not thread-safe.
void set_memory_type_detector(MemoryTypeDetector *detector);

}  // namespace cohort::ompi
