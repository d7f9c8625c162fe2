#include "topo/detect_cuda.h"

#include <algorithm>
#include <cstdio>

#include "core/build_info.h"
#include "core/gpu_identity.h"
#include "core/log.h"
#include "core/status.h"
#include "topo/topo.h"

#if COHORT_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cohort::topo {

std::string uuid_hex(const uint8_t bytes[16]) {
  std::string out;
  for (int i = 0; i < 16; ++i) out += strprintf("%02x", bytes[i]);
  return out;
}

#if COHORT_HAVE_CUDA

namespace {

// Bus id, UUID and NUMA node come from gpu_identity, which caches them for team creation.
bool describe_gpu(int device, CudaGpu *gpu) {
  GpuIdentity identity;
  if (is_error(query_gpu_identity(device, &identity))) {
    COHORT_LOG_WARN(TOPO, "CUDA device %d left out of the topology: %s", device,
                    last_error().c_str());
    return false;
  }
  int major = 0, minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
  gpu->bus_id = normalize_bus_id(identity.bus_id);
  gpu->cuda_device = device;
  gpu->sm = major * 10 + minor;
  gpu->uuid = uuid_hex(identity.uuid);
  gpu->numa_node = identity.numa_node;
  return !gpu->bus_id.empty();
}

bool can_access(int from, int to) {
  int can = 0;
  return cudaDeviceCanAccessPeer(&can, from, to) == cudaSuccess && can != 0;
}

void find_no_p2p(CudaGpus *out) {
  const auto &gpus = out->gpus;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      int a = gpus[i].cuda_device, b = gpus[j].cuda_device;
      if (can_access(a, b) && can_access(b, a)) continue;
      out->no_p2p.emplace_back(std::min(gpus[i].bus_id, gpus[j].bus_id),
                               std::max(gpus[i].bus_id, gpus[j].bus_id));
    }
  }
}

}  // namespace

CudaGpus detect_cuda_gpus() {
  CudaGpus out;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();  // clear the sticky "no device" error for later CUDA calls
    out.none_why = strprintf("cudaGetDeviceCount: %s",
                             err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
    return out;
  }
  for (int device = 0; device < count; ++device) {
    CudaGpu gpu;
    if (describe_gpu(device, &gpu)) out.gpus.push_back(std::move(gpu));
  }
  find_no_p2p(&out);
  return out;
}

#else  // !COHORT_HAVE_CUDA

CudaGpus detect_cuda_gpus() {
  CudaGpus out;
  out.none_why = "no CUDA in this build";
  return out;
}

#endif

}  // namespace cohort::topo
