#include "device_check.h"

#include "core/build_info.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <vector>

#include "kernels/verify.h"

namespace cohort {
namespace {

Status cuda_fail(const char *call, cudaError_t err) {
  return failf(COHORT_ERR_CUDA, "%s: %s (%s)", call, cudaGetErrorName(err),
               cudaGetErrorString(err));
}

}  // namespace

Status device_self_check(int device, size_t elements, DeviceCheckResult *out) {
  cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) return cuda_fail("cudaSetDevice", err);
  cudaDeviceProp prop;
  if ((err = cudaGetDeviceProperties(&prop, device)) != cudaSuccess) {
    return cuda_fail("cudaGetDeviceProperties", err);
  }
  void *memory = nullptr;
  if ((err = cudaMalloc(&memory, elements * sizeof(unsigned))) != cudaSuccess) {
    return cuda_fail("cudaMalloc", err);
  }
  auto *buf = static_cast<unsigned *>(memory);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const unsigned scale = 3;
  cudaEventRecord(start);
  err = kernels::launch_iota_scaled(buf, elements, scale, nullptr);
  cudaEventRecord(stop);
  std::vector<unsigned> host(elements);
  if (err == cudaSuccess) {
    err = cudaMemcpy(host.data(), buf, elements * sizeof(unsigned), cudaMemcpyDeviceToHost);
  }
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(buf);
  if (err != cudaSuccess) return cuda_fail("iota_scaled kernel", err);
  for (size_t i = 0; i < elements; ++i) {
    unsigned expected = static_cast<unsigned>(i) * scale + 1u;
    if (host[i] != expected) {
      return failf(COHORT_ERR_CUDA, "device %d check: element %zu is %u, expected %u", device, i,
                   host[i], expected);
    }
  }
  out->device = device;
  out->name = prop.name;
  out->sm_major = prop.major;
  out->sm_minor = prop.minor;
  out->kernel_ms = ms;
  return COHORT_SUCCESS;
}

}  // namespace cohort
#endif  // COHORT_HAVE_CUDA
