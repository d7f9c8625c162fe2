// The GPUs this process sees through the CUDA runtime: their ordinals, compute capabilities,
// UUIDs and which pairs lack peer access.  Built without CUDA, or run where CUDA has no
// driver or device, it finds none; that is no error (cohort_info runs on login nodes).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cohort::topo {

struct CudaGpu {
  std::string bus_id;  // normalized
  int cuda_device = -1;
  int sm = 0;          // compute capability x 10
  std::string uuid;    // 32 lower-case hex digits
  int numa_node = -1;  // from sysfs, for a GPU that hwloc's PCI tree lacks
};

struct CudaGpus {
  std::vector<CudaGpu> gpus;  // in ordinal order
  // Bus-id pairs (lower first) where either direction lacks peer access.
  std::vector<std::pair<std::string, std::string>> no_p2p;
  std::string none_why;  // why there are none ("no CUDA in this build"); empty otherwise
};

CudaGpus detect_cuda_gpus();

// 16 UUID bytes as 32 lower-case hex digits, the model's form.
std::string uuid_hex(const uint8_t bytes[16]);

}  // namespace cohort::topo
