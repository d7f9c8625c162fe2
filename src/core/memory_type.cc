#include "core/memory_type.h"

#include "core/build_info.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cohort {

MemoryType memory_type(const void *pointer) {
#if COHORT_HAVE_CUDA
  cudaPointerAttributes attributes{};
  if (pointer == nullptr || cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();  // an unknown pointer is host memory; leave no sticky error behind
    return MemoryType::kHost;
  }
  switch (attributes.type) {
    case cudaMemoryTypeDevice: return MemoryType::kDevice;
    case cudaMemoryTypeManaged: return MemoryType::kManaged;
    default: return MemoryType::kHost;
  }
#else
  (void)pointer;
  return MemoryType::kHost;
#endif
}

}  // namespace cohort
